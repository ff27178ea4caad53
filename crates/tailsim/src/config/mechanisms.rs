//! Switch mechanisms and routing changes from the configuration: each validates its own keys and installs
//! itself on the ports it covers (net/mech/). A new mechanism adds its keys to `schema.rs` and a block here.

use super::build::{Ctx, R};
use super::schema::BurstRadarCfg;
use super::schema::ExperimentConfig;
use crate::metrics::Framing;
use crate::net::mech::adaptive_lb::{AdaptiveLb, Rule};
use crate::net::mech::burstradar::{BurstRadar, BurstRadarParams, RECORD_BYTES};
use crate::net::mech::cioq::{Cioq, CioqParams};
use crate::net::mech::fastlane::{FastLane, FastLaneParams, NOTICE_BYTES};
use crate::net::mech::pfc::{Pfc, PfcParams};
use crate::net::mech::{bounce::BounceDrop, Mech};
use crate::net::queue::CLASSES;
use crate::net::Network;
use crate::units::{NodeId, Time};

pub(super) fn install(c: &Ctx, cfg: &ExperimentConfig, fr: Framing, net: &mut Network) -> R<()> {
    super::linkguardian::install(c, cfg, fr, net)?;
    super::pcap::install(c, cfg, fr, net)?;
    if let Some(d) = cfg.routing.reroute {
        if d.0 == Time::ZERO {
            return Err(c.err(
                "routing.reroute",
                "the detection delay must be positive (omit the key for routes that never change)",
            ));
        }
        net.reroute = Some(d.0);
    }
    // Before PFC: at ingress, every mechanism sees each packet (PFC accounts) and the first to choose a port
    // wins (adaptive load balancing), whatever the order; tests/pfc.rs relies on this order to check it.
    let rule = match cfg.routing.load_balance.as_deref() {
        Some("adaptive") => Some(Rule::LeastQueued),
        Some("detail") => {
            let t: Vec<u64> = cfg
                .routing
                .alb_thresholds
                .as_ref()
                .map_or(vec![16 << 10, 64 << 10], |v| v.iter().map(|s| s.0).collect());
            if t.is_empty() || t[0] == 0 || t.windows(2).any(|w| w[0] >= w[1]) {
                return Err(c.err(
                    "routing.alb_thresholds",
                    "expected positive sizes in increasing order, e.g. [\"16KiB\", \"64KiB\"]",
                ));
            }
            Some(Rule::Favoured(t))
        }
        _ => None,
    };
    if cfg.routing.alb_thresholds.is_some() && !matches!(rule, Some(Rule::Favoured(_))) {
        return Err(c.err("routing.alb_thresholds", "applies only with routing.load_balance = \"detail\""));
    }
    if let Some(rule) = rule {
        let ports: Vec<_> = net.switch_ports().collect();
        let nodes = net.hosts.len() + net.switches.len();
        net.install(Mech::AdaptiveLb(AdaptiveLb::new(cfg.seed, rule, nodes)), ports);
    }
    let pfc = match &cfg.pfc {
        None => None,
        Some(p) => {
            let pause = p.pause.map_or(8192, |s| s.0);
            let unpause = p.unpause.map_or(4557, |s| s.0);
            if pause == 0 {
                return Err(c.err("pfc.pause", "must be at least 1 byte"));
            }
            if unpause >= pause {
                return Err(c.err("pfc.unpause", format!("must be below pfc.pause ({pause} B), found {unpause} B")));
            }
            if cfg.switch.queue.as_deref() == Some("pfabric") {
                return Err(c.err("pfc", "PFC pauses priority classes of FIFO queues; pFabric queues have none"));
            }
            if net.ports.iter().any(|p| p.trim.get().is_some()) {
                // A trimmed packet changes size and class between the ingress charge and the release.
                return Err(c.err("pfc", "PFC does not combine with trimming switches (transport \"ndp\")"));
            }
            Some(PfcParams { pause, unpause, response: p.response.map_or(Time::ZERO, |d| d.0) })
        }
    };
    match cfg.switch.architecture.as_deref().unwrap_or("output-queued") {
        "output-queued" => {
            for k in ["ingress_buffer", "speedup"] {
                let set =
                    if k == "speedup" { cfg.switch.speedup.is_some() } else { cfg.switch.ingress_buffer.is_some() };
                if set {
                    return Err(c.err(&format!("switch.{k}"), "applies only with switch.architecture = \"cioq\""));
                }
            }
            if let Some(prm) = pfc {
                let ports: Vec<_> = net.switch_ports().collect();
                net.install(Mech::Pfc(Pfc::new(prm, net.ports.len())), ports);
            }
        }
        "cioq" => {
            let Some(egress) = cioq_egress(net) else {
                return Err(c.err(
                    "switch.buffer",
                    "CIOQ switches need a finite per-port buffer (the egress queues), e.g. \"128KiB\"",
                ));
            };
            if cfg.switch.queue.as_deref() == Some("pfabric") {
                return Err(c.err("switch.architecture", "CIOQ switches use FIFO classes, not pFabric queues"));
            }
            let ingress = cfg.switch.ingress_buffer.map_or(egress, |s| s.0);
            let speedup = cfg.switch.speedup.unwrap_or(4);
            if speedup == 0 {
                return Err(c.err("switch.speedup", "must be at least 1"));
            }
            if ingress < 1600 {
                return Err(c.err("switch.ingress_buffer", format!("{ingress} B cannot hold one full packet")));
            }
            if let Some(prm) = &pfc {
                let max = lossless_max_pause(net, ingress, prm.response);
                if prm.pause > max {
                    let key = if cfg.pfc.as_ref().is_some_and(|p| p.pause.is_some()) { "pfc.pause" } else { "pfc" };
                    return Err(c.err(
                        key,
                        format!(
                            "a pause threshold of {} B is above the lossless maximum of {max} B for {ingress} B ingress \
                             queues: (ingress − {CLASSES} × headroom) / {CLASSES}, with the headroom of the fastest \
                             link (docs/detail.md)",
                            prm.pause
                        ),
                    ));
                }
            }
            // The crossbar keeps every egress queue within `egress` by class (drain bytes), so the ports' own
            // admission must not apply a total limit on top.
            for s in &mut net.switches {
                s.buffer = crate::net::BufferPolicy::Unlimited;
                s.crossbar = Some(speedup);
            }
            let switches: Vec<Vec<_>> = net.switches.iter().map(|s| s.ports.clone()).collect();
            let ports: Vec<_> = net.switch_ports().collect();
            let pfc = pfc.map(|prm| Pfc::new(prm, net.ports.len()).tagged(crate::net::mech::cioq::PFC_TIMERS));
            let m = Cioq::new(CioqParams { ingress, egress, speedup }, switches, net.ports.len(), pfc);
            net.install(Mech::Cioq(m), ports);
        }
        o => return Err(c.err("switch.architecture", format!("expected \"output-queued\" or \"cioq\", found \"{o}\""))),
    }
    if cfg.switch.bounce == Some(true) {
        if cfg.fastlane.is_some() {
            return Err(c.err("switch.bounce", "FastLane makes its own notices: use [fastlane] or bounce, not both"));
        }
        let ports: Vec<_> = net.switch_ports().collect();
        net.install(Mech::BounceDrop(BounceDrop::default()), ports);
    }
    if let Some(k) = &cfg.codel {
        let target = k.target.map_or(Time::us(50), |d| d.0);
        let interval = k.interval.map_or(Time::ms(1), |d| d.0);
        if target == Time::ZERO || interval == Time::ZERO {
            let key = if target == Time::ZERO { "codel.target" } else { "codel.interval" };
            return Err(c.err(key, "must be positive"));
        }
        if cfg.switch.ecn_threshold.is_some() {
            return Err(c.err("codel", "CoDel marks by sojourn time: drop switch.ecn_threshold, or [codel]"));
        }
        let kind = cfg.transport.kind.as_deref().unwrap_or("tcp");
        if matches!(kind, "tcp" | "cubic") && cfg.transport.ecn != Some(true) {
            return Err(c.err("codel", "CoDel marks ECN-capable packets: set transport.ecn = true"));
        }
        let mtu = cfg.packet.mss.unwrap_or(1460) as u64 + cfg.packet.header.unwrap_or(40) as u64;
        let prm = crate::net::mech::codel::CodelParams { target, interval, mtu };
        let ports: Vec<_> = net.switch_ports().collect();
        let n = net.ports.len();
        net.install(Mech::Codel(crate::net::mech::codel::Codel::new(prm, n)), ports);
    }
    if let Some(f) = &cfg.fastlane {
        let prm = fastlane_params(c, cfg, f)?;
        let ports: Vec<_> = net.switch_ports().collect();
        // Notices leave through the ports' express queues: size those once too (a run allocates nothing
        // per notice; tests/no_alloc.rs).
        for p in &ports {
            net.ports[p.idx()].ctl.reserve(4);
        }
        let n = net.ports.len();
        net.install(Mech::FastLane(FastLane::new(prm, n)), ports);
    }
    // Last: its admit hook counts arrivals that the port's own buffer then decides on.
    if let Some(b) = &cfg.burstradar {
        let prm = burstradar_params(c, cfg, b, net)?;
        let ports: Vec<_> = prm.ports.iter().copied().chain([prm.mirror]).collect();
        let rates: Vec<u64> = net.ports.iter().map(|p| p.rate.0).collect();
        net.install(Mech::BurstRadar(BurstRadar::new(prm, &rates)), ports);
    }
    super::sqr::install(c, cfg, net)
}

/// BurstRadar's switch (the monitoring host's), mirror port and watched ports, and its parameters checked.
fn burstradar_params(c: &Ctx, cfg: &ExperimentConfig, b: &BurstRadarCfg, net: &Network) -> R<BurstRadarParams> {
    let hosts = net.n_hosts() as u32;
    let monitor =
        c.need(&b.monitor, "burstradar.monitor", "the monitoring host's number (its link is the mirror port)")?;
    if monitor >= hosts {
        return Err(c.err("burstradar.monitor", format!("host {monitor} does not exist (the topology has {hosts})")));
    }
    let monitor = NodeId(monitor);
    let sw = net.ports[net.hosts[monitor.idx()].nic.idx()].peer;
    if net.is_host(sw) {
        return Err(c.err("burstradar.monitor", format!("host {} is linked to a host, not to a switch", monitor.0)));
    }
    let sw_ports = &net.switches[sw.idx() - hosts as usize].ports;
    let mirror = *sw_ports.iter().find(|p| net.ports[p.idx()].peer == monitor).expect("the monitor's link");
    let ports = match &b.watch {
        None => sw_ports.iter().copied().filter(|&p| p != mirror).collect(),
        Some(list) => {
            let mut v = Vec::new();
            for (i, &h) in list.iter().enumerate() {
                let key = format!("burstradar.watch[{i}]");
                if h == monitor.0 {
                    return Err(c.err(&key, "the mirror port (the monitor's link) cannot itself be watched"));
                }
                match sw_ports.iter().find(|p| net.ports[p.idx()].peer == NodeId(h)) {
                    Some(&p) if !v.contains(&p) => v.push(p),
                    Some(_) => return Err(c.err(&key, format!("host {h} is listed twice"))),
                    None => {
                        return Err(c.err(
                            &key,
                            format!("host {h} is not linked to the monitor's switch; watched ports are that switch's"),
                        ))
                    }
                }
            }
            v
        }
    };
    if ports.is_empty() {
        return Err(c.err("burstradar.watch", "no port to watch"));
    }
    let threshold = c.need(&b.threshold, "burstradar.threshold", "a queueing delay such as \"1.25us\"")?.0;
    if threshold == Time::ZERO {
        return Err(c.err("burstradar.threshold", "must be positive (at 0 every packet is marked: that is INT)"));
    }
    let cell = b.cell.map_or(160, |s| s.0);
    if cell == 0 || cell > 65535 {
        return Err(c.err("burstradar.cell", format!("a cell size from 1 to 65535 bytes, found {cell}")));
    }
    let ring = b.ring.unwrap_or(1024);
    if ring == 0 || ring > 1 << 24 {
        return Err(c.err("burstradar.ring", format!("from 1 to 16777216 entries, found {ring}")));
    }
    let courier = b.courier.map_or(64 + RECORD_BYTES as u64, |s| s.0);
    if courier < RECORD_BYTES as u64 || courier > 65535 {
        return Err(c.err("burstradar.courier", format!("from {RECORD_BYTES} to 65535 bytes, found {courier}")));
    }
    let conflicts = [
        ("pfc", cfg.pfc.is_some()),
        ("fastlane", cfg.fastlane.is_some()),
        ("switch.architecture = \"cioq\"", cfg.switch.architecture.as_deref() == Some("cioq")),
        ("switch.queue = \"pfabric\"", cfg.switch.queue.as_deref() == Some("pfabric")),
    ];
    if let Some((what, _)) = conflicts.iter().find(|x| x.1) {
        return Err(c.err(
            "burstradar",
            format!(
                "BurstRadar watches FIFO queues of output-queued switches whose buffer alone admits; not with {what}"
            ),
        ));
    }
    Ok(BurstRadarParams {
        threshold,
        cell: cell as u32,
        ring: ring as usize,
        clone_delay: b.clone_delay.map_or(Time::ns(270), |d| d.0),
        courier_bytes: courier as u32,
        mirror,
        monitor,
        ports,
    })
}

/// FastLane's caps, checked: a bandwidth in (0, 1] of each link, a buffer of at least one notice, on lossy
/// output-queued switches.
fn fastlane_params(c: &Ctx, cfg: &ExperimentConfig, f: &super::schema::FastLaneCfg) -> R<FastLaneParams> {
    let d = FastLaneParams::default();
    let scale = f.cap_scale.unwrap_or(1.0);
    if !(scale > 0.0 && scale.is_finite()) {
        return Err(c.err("fastlane.cap_scale", format!("must be positive, found {scale}")));
    }
    let bw = f.bandwidth.unwrap_or(d.bandwidth);
    if !(bw > 0.0 && bw <= 1.0) {
        return Err(c.err("fastlane.bandwidth", format!("a fraction of the link rate in (0, 1], found {bw}")));
    }
    if bw * scale > 1.0 {
        return Err(c.err(
            "fastlane.cap_scale",
            format!("scales the bandwidth cap to {} of the link rate; it must stay in (0, 1]", bw * scale),
        ));
    }
    let buffer = (f.buffer.map_or(d.buffer, |s| s.0) as f64 * scale) as u64;
    if buffer < NOTICE_BYTES as u64 {
        let key = if f.buffer.is_some() { "fastlane.buffer" } else { "fastlane.cap_scale" };
        return Err(c.err(key, format!("a notification buffer of {buffer} B cannot hold one {NOTICE_BYTES} B notice")));
    }
    if cfg.pfc.is_some() {
        return Err(
            c.err("fastlane", "a lossless fabric (PFC) drops nothing to notify: use [pfc] or [fastlane], not both")
        );
    }
    if cfg.switch.architecture.as_deref() == Some("cioq") {
        return Err(c.err("fastlane", "FastLane is modelled on output-queued switches (switch.architecture)"));
    }
    Ok(FastLaneParams { bandwidth: bw * scale, buffer, strict: f.strict.unwrap_or(false) })
}

/// The senders' reaction to FastLane's notices: Algorithm 1 for TCP, probe-then-slow-start for pFabric.
pub(super) fn fastlane_transport(c: &Ctx, cfg: &ExperimentConfig, t: &mut crate::transport::Transport) -> R<()> {
    use crate::transport::tcp::NoticeReaction;
    if cfg.fastlane.is_none() {
        return Ok(());
    }
    let kind = cfg.transport.kind.as_deref().unwrap_or("tcp");
    let r = match kind {
        "tcp" | "cubic" => NoticeReaction::FastLane,
        "pfabric" => NoticeReaction::FastLanePFabric,
        o => {
            return Err(c.err(
                "fastlane",
                format!(
                    "FastLane's senders are TCP and pFabric (transport.kind \"tcp\", \"cubic\" or \"pfabric\"), found \"{o}\""
                ),
            ))
        }
    };
    if let crate::transport::Transport::Tcp(tcp) = t {
        tcp.set_notice_reaction(r);
    }
    Ok(())
}

/// The egress queues' size of CIOQ switches: the per-port buffer, if finite.
fn cioq_egress(net: &Network) -> Option<u64> {
    match net.switches.first()?.buffer {
        crate::net::BufferPolicy::PerPort(b) => Some(b),
        _ => None,
    }
}

/// The largest pause threshold an ingress queue of `ingress` bytes can honour without loss when all 8 classes
/// are paused at once (the DeTail thesis §5.2.3: (131072 − 8 × 4557) / 8 = 11827 B). The headroom of a class
/// is what may still arrive after its pause is generated: the frame this port is serializing (the pause
/// waits for it), the pause frame, the link's propagation both ways, the upstream port's frame in progress,
/// and the response time, all at the link's rate (a 1500 B MTU). The fastest switch link sets it.
pub fn lossless_max_pause(net: &Network, ingress: u64, response: Time) -> u64 {
    let headroom = net
        .switch_ports()
        .map(|p| {
            let pt = &net.ports[p.idx()];
            let w = pt.wire_overhead as u64;
            let t = pt.tx_time(1500 + w).0 * 2
                + pt.tx_time(crate::net::mech::pfc::FRAME_BYTES as u64 + w).0
                + 2 * pt.delay.0
                + response.0;
            pt.rate.bytes_in(Time(t))
        })
        .max()
        .unwrap_or(0);
    ingress.saturating_sub(CLASSES as u64 * headroom) / CLASSES as u64
}
