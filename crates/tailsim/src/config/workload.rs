//! The `[[workload]]` tables: from each to a traffic generator (traffic/), with every value checked.

use super::build::{only_applicable, Ctx, R};
use super::limits;
use super::schema::WorkloadCfg;
use crate::engine::Rng;
use crate::metrics::Framing;
use crate::traffic::{Deadlines, Generator, Pattern, Sizes};
use crate::units::{BitsPerSec, NodeId, Time};
use std::sync::Arc;
use tailsim_workload::{CdfOptions, Interp, SizeCdf};

fn sizes(c: &Ctx, w: &WorkloadCfg, key: &str) -> R<Sizes> {
    if let Some(list) = &w.sizes {
        if w.cdf.is_some() || w.size.is_some() {
            return Err(c.err(&format!("{key}.sizes"), "give one of `cdf`, `size` or `sizes`"));
        }
        if list.is_empty() {
            return Err(c.err(&format!("{key}.sizes"), "an empty list: give at least one size"));
        }
        if list.iter().any(|s| s.0 == 0) {
            return Err(c.err(&format!("{key}.sizes"), "a flow must have at least 1 byte"));
        }
        return Ok(Sizes::Choice(list.iter().map(|s| s.0).collect()));
    }
    match (&w.cdf, &w.size) {
        (Some(_), Some(_)) => Err(c.err(&format!("{key}.size"), "give either `cdf` or `size`, not both")),
        (None, None) => Err(c.err(
            key,
            "missing: expected `cdf` (a distribution), `size` (a fixed flow size) or `sizes` (a list, equally likely)",
        )),
        (None, Some(s)) if s.0 == 0 => Err(c.err(&format!("{key}.size"), "a flow must have at least 1 byte")),
        (None, Some(s)) => Ok(Sizes::Fixed(s.0)),
        (Some(name), None) => {
            let interp = match w.cdf_interp.as_deref() {
                None => None,
                Some("step") => Some(Interp::Step),
                Some("linear") => Some(Interp::Linear),
                Some(o) => {
                    return Err(
                        c.err(&format!("{key}.cdf_interp"), format!("expected \"step\" or \"linear\", found \"{o}\""))
                    )
                }
            };
            let opts = CdfOptions { interp, unit_bytes: w.cdf_unit_bytes };
            let cdf = if SizeCdf::builtin_names().contains(&name.as_str())
                && interp.is_none()
                && w.cdf_unit_bytes.is_none()
            {
                SizeCdf::builtin(name)
            } else if SizeCdf::builtin_names().contains(&name.as_str()) {
                return Err(c.err(
                    &format!("{key}.cdf"),
                    "a built-in CDF has its own sampling rule; copy the file to change it",
                ));
            } else {
                let p = c.path(name);
                if !p.exists() {
                    return Err(c.err(
                        &format!("{key}.cdf"),
                        format!(
                            "\"{name}\" is neither a built-in CDF ({}) nor an existing file",
                            SizeCdf::builtin_names().join(", ")
                        ),
                    ));
                }
                SizeCdf::from_file(&p, opts)
            }
            .map_err(|e| c.err(&format!("{key}.cdf"), e.to_string()))?;
            Ok(Sizes::Cdf(Arc::new(cdf)))
        }
    }
}

/// pFabric's deadline workload keys of a Poisson generator.
fn deadlines(c: &Ctx, w: &WorkloadCfg, key: &str, seed: u64, i: usize) -> R<Option<Deadlines>> {
    let Some(mean) = w.deadline_mean else {
        for (k, set) in
            [("deadline_below", w.deadline_below.is_some()), ("deadline_min_slack", w.deadline_min_slack.is_some())]
        {
            if set {
                return Err(c.err(&format!("{key}.{k}"), "applies only with `deadline_mean`"));
            }
        }
        return Ok(None);
    };
    if mean.0 == Time::ZERO {
        return Err(c.err(&format!("{key}.deadline_mean"), "must be positive"));
    }
    let min_slack = w.deadline_min_slack.unwrap_or(1.25);
    if !(min_slack >= 1.0 && min_slack.is_finite()) {
        return Err(c.err(
            &format!("{key}.deadline_min_slack"),
            format!("must be at least 1 (a multiple of the ideal FCT), found {min_slack}"),
        ));
    }
    Ok(Some(Deadlines {
        mean: mean.0,
        below: w.deadline_below.map_or(200_000, |s| s.0),
        min_slack,
        rng: Rng::new(seed, "workload-deadlines", i as u64),
    }))
}

const KINDS: &str = "\"poisson\", \"incast\", \"permutation\", \"trace\", \"retrieval\", \"workflow\", \"background\" \
                     or \"cbr\"";

/// The keys of `kind = "retrieval"`; a workflow adds its shape's.
const REQUEST_RESPONSE_KEYS: &[&str] = &[
    "sizes",
    "cdf",
    "cdf_interp",
    "cdf_unit_bytes",
    "size",
    "rate",
    "clients",
    "servers",
    "request",
    "count",
    "start",
    "until",
];

pub(super) fn generator(
    c: &Ctx,
    w: &WorkloadCfg,
    i: usize,
    seed: u64,
    hosts: u32,
    host_rate: BitsPerSec,
    fr: Framing,
) -> R<Generator> {
    let key = format!("workload[{i}]");
    let k = |f: &str| format!("{key}.{f}");
    let kind = c.need(&w.kind, &k("kind"), KINDS)?;
    let set = [
        ("cdf", w.cdf.is_some()),
        ("cdf_interp", w.cdf_interp.is_some()),
        ("cdf_unit_bytes", w.cdf_unit_bytes.is_some()),
        ("size", w.size.is_some()),
        ("load", w.load.is_some()),
        ("pattern", w.pattern.is_some()),
        ("flows", w.flows.is_some()),
        ("start", w.start.is_some()),
        ("until", w.until.is_some()),
        ("senders", w.senders.is_some()),
        ("dst", w.dst.is_some()),
        ("interval", w.interval.is_some()),
        ("count", w.count.is_some()),
        ("path", w.path.is_some()),
        ("deadline_mean", w.deadline_mean.is_some()),
        ("deadline_below", w.deadline_below.is_some()),
        ("deadline_min_slack", w.deadline_min_slack.is_some()),
        ("sizes", w.sizes.is_some()),
        ("rate", w.rate.is_some()),
        ("clients", w.clients.is_some()),
        ("servers", w.servers.is_some()),
        ("sources", w.sources.is_some()),
        ("destinations", w.destinations.is_some()),
        ("request", w.request.is_some()),
        ("shape", w.shape.is_some()),
        ("parts", w.parts.is_some()),
        ("fanout", w.fanout.is_some()),
        ("per_source", w.per_source.is_some()),
        ("src", w.src.is_some()),
        ("shift", w.shift.is_some()),
        ("line_rate", w.line_rate.is_some()),
        ("packet_sizes", w.packet_sizes.is_some()),
        ("on", w.on.is_some()),
        ("off", w.off.is_some()),
    ];
    let workflow_keys: Vec<&str> = REQUEST_RESPONSE_KEYS.iter().copied().chain(["shape", "parts", "fanout"]).collect();
    let allowed: &[&str] = match kind.as_str() {
        "poisson" => &[
            "sizes",
            "cdf",
            "cdf_interp",
            "cdf_unit_bytes",
            "size",
            "load",
            "pattern",
            "flows",
            "start",
            "until",
            "deadline_mean",
            "deadline_below",
            "deadline_min_slack",
        ],
        "incast" => {
            &["sizes", "cdf", "cdf_interp", "cdf_unit_bytes", "size", "senders", "dst", "interval", "count", "start"]
        }
        "permutation" => &["size", "start"],
        "trace" => &["path", "start"],
        "retrieval" => REQUEST_RESPONSE_KEYS,
        "workflow" => &workflow_keys,
        "background" => {
            &["sizes", "cdf", "cdf_interp", "cdf_unit_bytes", "size", "sources", "destinations", "per_source", "start"]
        }
        "cbr" => &["src", "dst", "shift", "line_rate", "size", "packet_sizes", "on", "off", "start", "until"],
        _ => &[],
    };
    if !allowed.is_empty() {
        only_applicable(c, &key, &kind, &set, allowed)?;
    }
    let start = w.start.map_or(Time::ZERO, |d| d.0);
    // An empty workload runs and reports a table of NaN: refuse it here.
    if let Some(u) = w.until.filter(|u| u.0 <= start) {
        return Err(c.err(&k("until"), format!("{} is not after `start` ({start}): no arrival could come", u.0)));
    }
    if w.flows == Some(0) {
        return Err(c.err(&k("flows"), "must be at least 1 (an empty workload measures nothing)"));
    }
    if hosts < 2 {
        return Err(c.err(&key, "a workload needs at least two hosts"));
    }
    let check_host = |h: u32, f: &str| {
        if h >= hosts {
            Err(c.err(&k(f), format!("host {h} does not exist (the topology has {hosts})")))
        } else {
            Ok(h)
        }
    };
    match kind.as_str() {
        "poisson" => {
            let load = c.need(&w.load, &k("load"), "the offered load, a fraction of host link capacity in (0, 1)")?;
            if !(load > 0.0 && load < 1.0) {
                return Err(c.err(&k("load"), format!("must be in (0, 1), found {load}")));
            }
            if w.flows.is_none() && w.until.is_none() {
                return Err(c.err(&key, "missing: give `flows` (a number of flows) or `until` (when arrivals stop)"));
            }
            let sizes = sizes(c, w, &key)?;
            let (mean_s, mean_pkts) = sizes.means(fr.mss);
            let wire = mean_s + mean_pkts * (fr.header + fr.wire_overhead) as f64;
            let per_host_per_ps = load * host_rate.0 as f64 / (8.0 * wire) * 1e-12;
            // Flows to come: `flows`, or the arrivals until `until`, whichever is fewer.
            let by_time = w.until.map(|u| (u.0 .0 - start.0) as f64 * per_host_per_ps * hosts as f64);
            let n = match (w.flows, by_time) {
                (Some(f), Some(t)) => (f as f64).min(t),
                (Some(f), None) => f as f64,
                (None, t) => t.unwrap_or(0.0),
            };
            let n_key = if w.flows.is_some() { k("flows") } else { k("until") };
            limits::check_flows(c, (&n_key, &key), n, n * mean_pkts, Some(sizes.max_bytes()), host_rate)?;
            let pattern = match w.pattern.as_deref().unwrap_or("all-to-all") {
                "all-to-all" => Pattern::AllToAll,
                "permutation" => Pattern::Permutation(Generator::derangement(
                    hosts,
                    &mut Rng::new(seed, "workload-permutation", i as u64),
                )),
                o => {
                    return Err(
                        c.err(&k("pattern"), format!("expected \"all-to-all\" or \"permutation\", found \"{o}\""))
                    )
                }
            };
            let deadlines = deadlines(c, w, &key, seed, i)?;
            let mut gap_rng = Rng::new(seed, "workload-gaps", i as u64);
            let mean_gap_ps = 1.0 / (per_host_per_ps * hosts as f64);
            let first = start.0 as f64 + gap_rng.exp(mean_gap_ps);
            Ok(Generator::Poisson {
                hosts,
                pattern,
                sizes,
                mean_gap_ps,
                next_at: first,
                remaining: w.flows,
                until: w.until.map(|d| d.0),
                gap_rng,
                size_rng: Rng::new(seed, "workload-sizes", i as u64),
                pair_rng: Rng::new(seed, "workload-pairs", i as u64),
                deadlines,
            })
        }
        "incast" => {
            let senders = c.need(&w.senders, &k("senders"), "the number of senders")?;
            if senders == 0 || senders >= hosts {
                return Err(c.err(&k("senders"), format!("must be between 1 and {} (hosts − 1)", hosts - 1)));
            }
            let dst = w.dst.map(|d| check_host(d, "dst")).transpose()?;
            let count = w.count.unwrap_or(1);
            if count == 0 {
                return Err(c.err(&k("count"), "must be at least 1 (an empty workload measures nothing)"));
            }
            let interval = w.interval.map(|d| d.0).unwrap_or(Time::ZERO);
            if count > 1 && interval == Time::ZERO {
                return Err(c.err(&k("interval"), "missing: repeated incasts need an interval"));
            }
            let sizes = sizes(c, w, &key)?;
            let n = count as f64 * senders as f64;
            let packets = n * sizes.means(fr.mss).1;
            limits::check_flows(c, (&k("count"), &key), n, packets, Some(sizes.max_bytes()), host_rate)?;
            Ok(Generator::Incast {
                hosts,
                senders,
                dst,
                sizes,
                next_at: start,
                interval,
                remaining: count,
                rng: Rng::new(seed, "workload-incast", i as u64),
                size_rng: Rng::new(seed, "workload-sizes", i as u64),
            })
        }
        "permutation" => {
            let Sizes::Fixed(size) = sizes(c, w, &key)? else {
                return Err(c.err(&k("cdf"), "a permutation round needs a fixed `size`"));
            };
            let n = hosts as f64;
            limits::check_flows(c, (&key, &k("size")), n, n * size.div_ceil(fr.mss) as f64, Some(size), host_rate)?;
            let perm = Generator::derangement(hosts, &mut Rng::new(seed, "workload-permutation", i as u64));
            let flows = perm
                .iter()
                .enumerate()
                .map(|(s, &d)| tailsim_workload::TraceFlow {
                    id: None,
                    src: s as u32,
                    dst: d,
                    size_bytes: size,
                    start_ps: start.0,
                    route: None,
                })
                .collect();
            Ok(Generator::List { flows, pins: Vec::new(), next: 0 })
        }
        "trace" => {
            let p = c.need(&w.path, &k("path"), "a flow trace (.csv, htsim .cm or .flows)")?;
            let (mut flows, nodes) =
                tailsim_workload::read_trace_nodes(&c.path(&p)).map_err(|e| c.err(&k("path"), e.to_string()))?;
            if let Some((n, line)) = nodes.filter(|&(n, _)| n != hosts as u64) {
                return Err(c.err(
                    &k("path"),
                    format!(
                        "{p}:{line}: \"Nodes {n}\" but the topology has {hosts} hosts (a matrix for another fabric?)"
                    ),
                ));
            }
            if flows.is_empty() {
                return Err(c.err(&k("path"), format!("{p}: no flows: an empty workload measures nothing")));
            }
            let packets = flows.iter().map(|f| f.size_bytes.div_ceil(fr.mss) as f64).sum::<f64>();
            let max = flows.iter().map(|f| f.size_bytes).max();
            limits::check_flows(c, (&k("path"), &k("path")), flows.len() as f64, packets, max, host_rate)?;
            for (j, f) in flows.iter_mut().enumerate() {
                if f.src >= hosts || f.dst >= hosts {
                    return Err(c.err(
                        &k("path"),
                        format!(
                            "flow {} (entry {}) uses host {} but the topology has {hosts} hosts",
                            f.id.unwrap_or(j as u64),
                            j + 1,
                            f.src.max(f.dst)
                        ),
                    ));
                }
                f.start_ps += start.0;
            }
            flows.sort_by_key(|f| f.start_ps); // stable: file order among equal starts
            Ok(Generator::List { flows, pins: Vec::new(), next: 0 })
        }
        "retrieval" | "workflow" => {
            super::jobs::workflows(c, w, &key, &kind, i, seed, hosts, sizes(c, w, &key)?, (fr, host_rate))
        }
        "background" => super::jobs::background(c, w, &key, i, seed, hosts, sizes(c, w, &key)?),
        // Raw packets, sent by the `Cbr` mechanism (`cbr_sources`); no flows to generate.
        "cbr" => Ok(Generator::List { flows: Vec::new(), pins: Vec::new(), next: 0 }),
        o => Err(c.err(&k("kind"), format!("unknown kind \"{o}\"; expected {KINDS}"))),
    }
}

/// A `kind = "cbr"` workload: a constant-bit-rate source of raw packets (traffic/cbr.rs), or one at every
/// host (`shift`), in host order.
pub(super) fn cbr_sources(
    c: &Ctx,
    w: &WorkloadCfg,
    i: usize,
    hosts: u32,
    fr: Framing,
) -> R<Vec<crate::traffic::cbr::CbrSource>> {
    use crate::traffic::cbr::{CbrSource, Dist};
    let key = format!("workload[{i}]");
    let k = |f: &str| format!("{key}.{f}");
    let host = |v: Option<u32>, f: &str| -> R<NodeId> {
        let h = c.need(&v, &k(f), "a host number")?;
        if h >= hosts {
            return Err(c.err(&k(f), format!("host {h} does not exist (the topology has {hosts})")));
        }
        Ok(NodeId(h))
    };
    let pairs: Vec<(NodeId, NodeId)> = match w.shift {
        Some(shift) => {
            if w.src.is_some() || w.dst.is_some() {
                return Err(c.err(&k("shift"), "give `shift` (every host a source) or `src` and `dst`, not both"));
            }
            if shift % hosts == 0 {
                return Err(c.err(
                    &k("shift"),
                    format!("a shift of {shift} sends every host to itself (the topology has {hosts} hosts)"),
                ));
            }
            (0..hosts).map(|h| (NodeId(h), NodeId(((h as u64 + shift as u64) % hosts as u64) as u32))).collect()
        }
        None => {
            let (src, dst) = (host(w.src, "src")?, host(w.dst, "dst")?);
            if src == dst {
                return Err(c.err(&k("dst"), "a source cannot send to itself"));
            }
            vec![(src, dst)]
        }
    };
    let rate = c.need(&w.line_rate, &k("line_rate"), "the sending rate, e.g. \"25Gbps\"")?.0;
    if rate.0 == 0 {
        return Err(c.err(&k("line_rate"), "must be positive"));
    }
    let until = c.need(&w.until, &k("until"), "when the source stops, e.g. \"10ms\"")?.0;
    let cdf = |pts: &[(f64, f64)], f: &str, what: &str| -> R<Vec<(f64, f64)>> {
        let ok = !pts.is_empty()
            && pts.iter().all(|p| p.0 >= 0.0 && p.0.is_finite() && p.1 >= 0.0 && p.1 <= 1.0)
            && pts.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1)
            && (pts.last().unwrap().1 - 1.0).abs() < 1e-9;
        if !ok {
            return Err(c.err(
                &k(f),
                format!(
                    "expected [[{what}, cumulative probability], …] with increasing values and probabilities in \
                     [0, 1], the last 1"
                ),
            ));
        }
        Ok(pts.to_vec())
    };
    let sizes = match (&w.size, &w.packet_sizes) {
        (Some(_), Some(_)) => return Err(c.err(&k("packet_sizes"), "give `size` or `packet_sizes`, not both")),
        (Some(s), None) => Dist::Fixed(s.0 as f64),
        (None, Some(p)) => Dist::Steps(cdf(p, "packet_sizes", "bytes")?),
        (None, None) => {
            return Err(c.err(&key, "missing: give `size` (bytes per packet) or `packet_sizes` (a CDF)"));
        }
    };
    let max = match &sizes {
        Dist::Fixed(v) => *v,
        Dist::Steps(p) | Dist::Linear(p) => p.last().unwrap().0,
    };
    if !(1.0..=65535.0).contains(&max) {
        let key = if w.size.is_some() { "size" } else { "packet_sizes" };
        return Err(c.err(&k(key), format!("packet sizes must be 1 to 65535 bytes, found {max}")));
    }
    let period = |v: &Option<toml::Value>, f: &str| -> R<Option<Dist>> {
        let Some(v) = v else { return Ok(None) };
        match v {
            toml::Value::String(_) => {
                let d: super::units::Duration = v.clone().try_into().map_err(|e: toml::de::Error| {
                    c.err(&k(f), format!("{}; expected a duration or [[µs, probability], …]", e.message()))
                })?;
                if d.0 == Time::ZERO {
                    return Err(c.err(&k(f), "must be positive"));
                }
                Ok(Some(Dist::Fixed(d.0 .0 as f64)))
            }
            toml::Value::Array(_) => {
                let pts: Vec<(f64, f64)> = v.clone().try_into().map_err(|_| {
                    c.err(&k(f), "expected a duration such as \"100us\" or [[µs, cumulative probability], …]")
                })?;
                let pts = cdf(&pts, f, "µs")?;
                Ok(Some(Dist::Linear(pts.iter().map(|&(us, p)| (us * 1e6, p)).collect())))
            }
            _ => Err(c.err(&k(f), "expected a duration such as \"100us\" or [[µs, cumulative probability], …]")),
        }
    };
    let (on, off) = (period(&w.on, "on")?, period(&w.off, "off")?);
    if on.is_some() != off.is_some() {
        return Err(c.err(&key, "give both `on` and `off` (an on/off source), or neither (always on)"));
    }
    let source = |(src, dst)| CbrSource {
        src,
        dst,
        rate,
        sizes: sizes.clone(),
        on: on.clone(),
        off: off.clone(),
        start: w.start.map_or(Time::ZERO, |d| d.0),
        until,
        class: w.class.unwrap_or(0),
        wire_overhead: fr.wire_overhead as u32,
    };
    Ok(pairs.into_iter().map(source).collect())
}
