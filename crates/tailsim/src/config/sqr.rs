//! The `[sqr]` section: SQR's caching and the recovery scheme it protects (net/mech/sqr/), checked and
//! installed on the SQR switches' ports. Defaults are the thesis's testbed (docs/sqr.md).

use super::build::{node_named, Ctx, R};
use super::schema::{ExperimentConfig, SqrCfg};
use crate::net::mech::sqr::{Cache, Recovery, Sqr, SqrParams, Turns};
use crate::net::mech::Mech;
use crate::net::{BufferPolicy, Network};
use crate::units::{PortId, Time};

pub(super) fn install(c: &Ctx, cfg: &ExperimentConfig, net: &mut Network) -> R<()> {
    let Some(q) = &cfg.sqr else { return Ok(()) };
    let prm = params(c, cfg, q, net)?;
    let ports: Vec<PortId> = prm.switches.iter().flatten().copied().collect();
    let m = Sqr::new(prm, &net.ports, net.n_hosts());
    net.install(Mech::Sqr(m), ports);
    Ok(())
}

fn params(c: &Ctx, cfg: &ExperimentConfig, q: &SqrCfg, net: &Network) -> R<SqrParams> {
    let recovery = match q.recovery.as_deref().unwrap_or("sharebackup") {
        "sharebackup" => Recovery::ShareBackup,
        "lrr" => Recovery::Lrr,
        o => return Err(c.err("sqr.recovery", format!("expected \"sharebackup\" or \"lrr\", found \"{o}\""))),
    };
    let delta = c.positive("sqr.delta", q.delta.map(|d| d.0))?.unwrap_or(Time::us(30));
    let detect = c.positive("sqr.detect", q.detect.map(|d| d.0))?.unwrap_or(Time::us(30));
    let window = c.positive("sqr.window", q.window.map(|d| d.0))?.unwrap_or(Time::us(150));
    let raise = match (q.raise, recovery) {
        (Some(d), _) => d.0,
        (None, Recovery::ShareBackup) => Time::us(730),
        (None, Recovery::Lrr) => Time::ZERO,
    };
    let clone_delay = q.clone_delay.map_or(Time::ns(270), |d| d.0);
    let pass_cost = q.pass_cost.unwrap_or(0.075);
    if !(pass_cost > 0.0 && pass_cost <= 1.0) {
        return Err(c.err("sqr.pass_cost", format!("a fraction of a serialization time in (0, 1], found {pass_cost}")));
    }
    let turns = match q.turns.as_deref().unwrap_or("packet") {
        "time" => Turns::Time,
        "packet" => Turns::Packet,
        o => return Err(c.err("sqr.turns", format!("expected \"time\" or \"packet\", found \"{o}\""))),
    };
    let cache = match q.cache.as_deref().unwrap_or("ring") {
        "ring" => Cache::Ring { pass_cost, clone_delay, turns },
        "ideal" => Cache::Ideal,
        "off" => Cache::Off,
        o => return Err(c.err("sqr.cache", format!("expected \"ring\", \"ideal\" or \"off\", found \"{o}\""))),
    };
    if !matches!(cache, Cache::Ring { .. }) {
        for (k, set) in [
            ("pass_cost", q.pass_cost.is_some()),
            ("clone_delay", q.clone_delay.is_some()),
            ("turns", q.turns.is_some()),
            ("cache_ports", q.cache_ports.is_some()),
        ] {
            if set {
                return Err(c.err(&format!("sqr.{k}"), "applies only with sqr.cache = \"ring\""));
            }
        }
    }
    let mut classes = 0u8;
    for (i, &k) in q.classes.as_deref().unwrap_or(&[0, 1, 2, 3, 4, 5, 6, 7]).iter().enumerate() {
        if k >= 8 {
            return Err(c.err(&format!("sqr.classes[{i}]"), format!("a class from 0 to 7, found {k}")));
        }
        classes |= 1 << k;
    }
    if classes == 0 {
        return Err(c.err("sqr.classes", "no class to protect"));
    }
    let backstop = q.backstop.unwrap_or(0.9);
    if !(backstop > 0.0 && backstop <= 1.0) {
        return Err(c.err("sqr.backstop", format!("a fraction of the switch buffer in (0, 1], found {backstop}")));
    }
    let timestamp_bits = q.timestamp_bits.unwrap_or(32);
    if !(8..=64).contains(&timestamp_bits) {
        return Err(c.err("sqr.timestamp_bits", format!("from 8 to 64 bits, found {timestamp_bits}")));
    }
    let longest = delta + raise;
    if timestamp_bits < 64 && Time::ns(1u64 << timestamp_bits) <= longest {
        return Err(c.err(
            "sqr.timestamp_bits",
            format!(
                "{timestamp_bits}-bit nanosecond timestamps wrap every {}; δ (with the raise on failure) is {longest}, \
                 so a copy would never look old enough",
                Time::ns(1u64 << timestamp_bits)
            ),
        ));
    }
    for (what, bad) in [
        ("pfc", cfg.pfc.is_some()),
        ("switch.architecture = \"cioq\"", cfg.switch.architecture.as_deref() == Some("cioq")),
        ("switch.queue = \"pfabric\"", cfg.switch.queue.as_deref() == Some("pfabric")),
        ("routing.reroute", cfg.routing.reroute.is_some()),
    ] {
        if bad {
            return Err(c.err(
                "sqr",
                format!("SQR runs on output-queued FIFO switches with its own recovery; not with {what}"),
            ));
        }
    }
    let hosts = net.n_hosts();
    let switches: Vec<usize> = match &q.switches {
        None => (0..net.switches.len()).collect(),
        Some(list) => {
            let mut v = Vec::new();
            for (i, name) in list.iter().enumerate() {
                match net.switch_named(name) {
                    Some(s) if !v.contains(&s) => v.push(s),
                    Some(_) => return Err(c.err(&format!("sqr.switches[{i}]"), format!("\"{name}\" is listed twice"))),
                    None => return Err(c.err(&format!("sqr.switches[{i}]"), format!("no switch named \"{name}\""))),
                }
            }
            v
        }
    };
    // An entry's switch (one of the SQR switches), and its port towards a neighbour.
    let sqr_switch = |key: &str, sw: &str| -> R<usize> {
        let Some(s) = net.switch_named(sw) else { return Err(c.err(key, format!("no switch named \"{sw}\""))) };
        if !switches.contains(&s) {
            return Err(c.err(key, format!("\"{sw}\" is not one of sqr.switches")));
        }
        Ok(s)
    };
    let port_to = |key: &str, s: usize, name: &str| -> R<PortId> {
        node_named(net.switches.iter().map(|s| s.name.as_str()), hosts as u32, name)
            .and_then(|node| net.switches[s].ports.iter().copied().find(|p| net.ports[p.idx()].peer == node))
            .ok_or_else(|| c.err(key, format!("\"{}\" has no link to \"{name}\"", net.switches[s].name)))
    };
    let mut backups = Vec::new();
    for (i, [sw, primary, backup]) in q.backups.iter().flatten().enumerate() {
        let key = format!("sqr.backups[{i}]");
        if recovery != Recovery::Lrr {
            return Err(c.err(&key, "backup ports are LRR's: set sqr.recovery = \"lrr\" (SB' keeps the same port)"));
        }
        let s = sqr_switch(&key, sw)?;
        let mut ends = [PortId::NONE; 2];
        for (j, name) in [primary, backup].into_iter().enumerate() {
            let p = port_to(&key, s, name)?;
            if net.is_host(net.ports[p.idx()].peer) {
                return Err(c.err(
                    &key,
                    format!("\"{name}\" is a host: a host-facing port has no alternative path, SQR cannot protect it"),
                ));
            }
            ends[j] = p;
        }
        if ends[0] == ends[1] {
            return Err(c.err(&key, format!("the backup of \"{sw}\" → \"{primary}\" is the primary port itself")));
        }
        if backups.iter().any(|&(a, _)| a == ends[0]) {
            return Err(c.err(&key, format!("\"{sw}\" → \"{primary}\" has a backup already")));
        }
        backups.push((ends[0], ends[1]));
    }
    let mut cache_ports = Vec::new();
    for (i, [sw, name]) in q.cache_ports.iter().flatten().enumerate() {
        let key = format!("sqr.cache_ports[{i}]");
        let p = port_to(&key, sqr_switch(&key, sw)?, name)?;
        if cache_ports.contains(&p) {
            return Err(c.err(&key, format!("\"{sw}\" → \"{name}\" is listed twice")));
        }
        cache_ports.push(p);
    }
    let buffer = switches
        .iter()
        .map(|&s| match net.switches[s].buffer {
            BufferPolicy::Shared { total, .. } => Some(total),
            BufferPolicy::PerPort(b) => Some(b * net.switches[s].ports.len() as u64),
            BufferPolicy::Unlimited => None,
        })
        .collect();
    Ok(SqrParams {
        delta,
        raise,
        detect,
        recovery,
        cache,
        window,
        classes,
        backstop,
        buffer,
        timestamp_bits,
        switches: switches.iter().map(|&s| net.switches[s].ports.clone()).collect(),
        backups,
        cache_ports,
    })
}
