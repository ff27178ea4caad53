//! The `[qjump]` section: the calculator's inputs, with defaults from the topology and framing, and the
//! regulator built from them (docs/qjump.md).

use super::build::{Ctx, R};
use super::schema::QjumpCfg;
use crate::metrics::Framing;
use crate::net::queue::CLASSES;
use crate::net::regulator::{Anchor, Excess, Granularity, LevelParams, Regulator, Variant};
use crate::net::Network;
use crate::qjump::{levels, Budget, QjumpParams};
use crate::units::Time;

fn choice<T: Copy>(c: &Ctx, v: &Option<String>, key: &str, default: &str, opts: &[(&str, T)]) -> R<T> {
    let s = v.as_deref().unwrap_or(default);
    match opts.iter().find(|(n, _)| *n == s) {
        Some((_, t)) => Ok(*t),
        None => {
            let names: Vec<String> = opts.iter().map(|(n, _)| format!("\"{n}\"")).collect();
            Err(c.err(key, format!("expected {}, found \"{s}\"", names.join(", "))))
        }
    }
}

/// The calculator's parameters for this network.
pub(super) fn params(c: &Ctx, q: &QjumpCfg, net: &Network, fr: Framing) -> R<(QjumpParams, usize)> {
    let fv = c.need(
        &q.f,
        "qjump.f",
        "a list of 1–8 throughput factors, class 0 (highest priority) first, e.g. [1, 2, 3, 5, 10, 20, 100, 144]",
    )?;
    if fv.is_empty() || fv.len() > CLASSES {
        return Err(c.err("qjump.f", format!("expected 1–8 throughput factors (one per class), found {}", fv.len())));
    }
    if let Some(x) = fv.iter().find(|x| !(x.is_finite() && **x > 0.0)) {
        return Err(c.err("qjump.f", format!("every throughput factor must be a positive number, found {x}")));
    }
    let mut f = [1.0; CLASSES];
    f[..fv.len()].copy_from_slice(&fv);
    let hosts = q.hosts.unwrap_or(net.n_hosts() as u64);
    if hosts == 0 {
        return Err(c.err("qjump.hosts", "must be at least 1"));
    }
    let max_packet = q.max_packet.map_or(fr.mss + fr.header + fr.wire_overhead, |s| s.0);
    if max_packet == 0 {
        return Err(c.err("qjump.max_packet", "must be at least 1 byte"));
    }
    let edge_rate = match q.edge_rate {
        Some(r) => r.0,
        None => net.hosts.iter().map(|h| net.ports[h.nic.idx()].rate).min().expect("at least one host"),
    };
    let switch_delay =
        q.switch_delay.map_or_else(|| net.switches.iter().map(|s| s.delay).max().unwrap_or(Time::ZERO), |d| d.0);
    let epoch_factor = q.epoch_factor.unwrap_or(1);
    if epoch_factor == 0 {
        return Err(c.err("qjump.epoch_factor", "must be at least 1"));
    }
    if q.epoch.is_some() && q.epoch_factor.is_some() {
        return Err(c.err("qjump.epoch_factor", "give either `epoch` or `epoch_factor`, not both"));
    }
    let epoch = match q.epoch {
        Some(d) if d.0 == Time::ZERO => return Err(c.err("qjump.epoch", "must be positive")),
        d => d.map(|d| d.0),
    };
    let budget = choice(
        c,
        &q.budget,
        "qjump.budget",
        "per-level-epoch",
        &[("per-level-epoch", Budget::PerLevelEpoch), ("common-epoch", Budget::CommonEpoch)],
    )?;
    Ok((QjumpParams { hosts, edge_rate, max_packet, switch_delay, epoch_factor, epoch, f, budget }, fv.len()))
}

/// A packet larger than its class's budget is always dropped (the regulator does not resegment, §3.4.3), so
/// a P below the data packet size suits classes that carry only small packets (the bound experiment).
pub(super) fn regulator(c: &Ctx, q: &QjumpCfg, net: &Network, fr: Framing) -> R<Regulator> {
    let (p, n) = params(c, q, net, fr)?;
    let variant = choice(
        c,
        &q.variant,
        "qjump.variant",
        "ltb-listing",
        &[
            ("ltb-text", Variant::LtbText),
            ("ltb-listing", Variant::LtbListing),
            ("zero-on-send", Variant::ZeroOnSend),
            ("epoch-budget", Variant::EpochBudget),
        ],
    )?;
    let anchor = choice(c, &q.anchor, "qjump.anchor", "lazy", &[("lazy", Anchor::Lazy), ("aligned", Anchor::Aligned)])?;
    let excess =
        choice(c, &q.excess, "qjump.excess", "police", &[("police", Excess::Police), ("shape", Excess::Shape)])?;
    let granularity =
        choice(c, &q.per, "qjump.per", "host", &[("host", Granularity::Host), ("flow", Granularity::Flow)])?;
    if granularity == Granularity::Flow && excess == Excess::Shape {
        return Err(c.err(
            "qjump.per",
            "a bucket per flow is a policer only (the ns-2 code's); use excess = \"police\" or per = \"host\"",
        ));
    }
    let lv = levels(&p);
    if let Some(l) = lv[..n].iter().find(|l| l.budget == 0) {
        return Err(c.err("qjump.f", format!("class {} (f = {}) gets no bytes per epoch", l.class, l.f)));
    }
    let params = std::array::from_fn(|i| (i < n).then(|| LevelParams { epoch: lv[i].epoch, budget: lv[i].budget }));
    let mut r = Regulator::new(net.n_hosts(), variant, anchor, excess, params);
    r.granularity = granularity;
    r.bounds = lv[..n].to_vec();
    r.network_epoch = crate::qjump::network_epoch(&p);
    Ok(r)
}
