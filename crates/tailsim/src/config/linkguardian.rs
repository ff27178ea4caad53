//! The `[linkguardian]` section: LinkGuardian on the listed link directions (net/mech/linkguardian.rs), its
//! parameters checked, with the thesis's per-rate defaults (docs/linkguardian.md).

use super::build::{Ctx, R};
use super::schema::{ExperimentConfig, LinkGuardianCfg};
use crate::metrics::Framing;
use crate::net::mech::linkguardian::{copies_for, LgLink, LgParams, LinkGuardian, HEADER};
use crate::net::mech::Mech;
use crate::net::Network;
use crate::units::{BitsPerSec, NodeId, Time};

/// Installed first, so that its admit hook (the 3-byte header) sees every packet before another
/// mechanism's verdict ends the chain.
pub(super) fn install(c: &Ctx, cfg: &ExperimentConfig, fr: Framing, net: &mut Network) -> R<()> {
    let Some(g) = &cfg.linkguardian else { return Ok(()) };
    let prm = params(c, cfg, g, fr, net)?;
    let m = LinkGuardian::new(prm, &net.ports);
    let ports = m.ports(&net.ports);
    net.install(Mech::LinkGuardian(m), ports);
    Ok(())
}

/// Per link rate: ackNoTimeout (§5.4.1; 10G from the public P4 code), the resume threshold and
/// t_flight_resume (§5.3.3.1, Fig. 5.11).
fn rate_defaults(r: BitsPerSec) -> (Option<Time>, Option<u64>, Option<Time>) {
    match r.0 {
        100_000_000_000 => (Some(Time::us(7)), Some(37_000), Some(Time::ns(1_600))),
        25_000_000_000 => (Some(Time::ns(7_500)), Some(40_000), Some(Time::ns(1_900))),
        10_000_000_000 => (Some(Time::ns(13_500)), None, None),
        _ => (None, None, None),
    }
}

fn params(c: &Ctx, cfg: &ExperimentConfig, g: &LinkGuardianCfg, fr: Framing, net: &Network) -> R<LgParams> {
    let ordered = match g.mode.as_deref().unwrap_or("ordered") {
        "ordered" => true,
        "nb" => false,
        o => return Err(c.err("linkguardian.mode", format!("expected \"ordered\" or \"nb\", found \"{o}\""))),
    };
    for (what, bad) in [
        ("pfc", cfg.pfc.is_some()),
        ("sqr", cfg.sqr.is_some()),
        ("fastlane", cfg.fastlane.is_some()),
        ("switch.architecture = \"cioq\"", cfg.switch.architecture.as_deref() == Some("cioq")),
        ("switch.queue = \"pfabric\"", cfg.switch.queue.as_deref() == Some("pfabric")),
    ] {
        if bad {
            return Err(c.err(
                "linkguardian",
                format!("LinkGuardian runs on output-queued FIFO switches with its own backpressure; not with {what}"),
            ));
        }
    }
    let backpressure = g.backpressure.unwrap_or(ordered);
    if backpressure && !ordered {
        return Err(c.err("linkguardian.backpressure", "LG-NB (mode = \"nb\") has no reorder buffer to protect"));
    }
    let target = g.target.unwrap_or(1e-8);
    if !(target > 0.0 && target < 1.0) {
        return Err(c.err("linkguardian.target", format!("an effective loss rate in (0, 1), found {target}")));
    }
    let copies = match (g.copies, g.loss_rate) {
        (Some(0), _) => return Err(c.err("linkguardian.copies", "at least 1")),
        (Some(_), Some(_)) => {
            return Err(c.err("linkguardian.copies", "give either `copies` or `loss_rate` (which sets them), not both"))
        }
        (Some(k), None) => k,
        (None, Some(p)) if !(p > 0.0 && p < 1.0) => {
            return Err(c.err("linkguardian.loss_rate", format!("a probability in (0, 1), found {p}")))
        }
        (None, Some(p)) if p <= target => {
            return Err(c.err(
                "linkguardian.loss_rate",
                format!("{p} is already at or below the target {target}: LinkGuardian would not be enabled"),
            ))
        }
        (None, Some(p)) => copies_for(p, target),
        (None, None) => {
            return Err(c.err(
                "linkguardian",
                "missing: `loss_rate` (the link's measured loss, which sets the resend copies) or `copies`",
            ))
        }
    };
    let max_holes = g.max_holes.unwrap_or(5);
    if max_holes == 0 {
        return Err(c.err("linkguardian.max_holes", "at least 1"));
    }
    let dummies = g.dummies.unwrap_or(copies + 1);
    let literal = match g.control.as_deref() {
        None | Some("lazy") => false,
        Some("literal") if cfg.stop.time.is_none() => {
            return Err(c.err(
                "linkguardian.control",
                "\"literal\" sends ACK frames in every idle slot for ever: it needs [stop] time",
            ))
        }
        Some("literal") => true,
        Some(o) => return Err(c.err("linkguardian.control", format!("\"lazy\" or \"literal\", found \"{o}\""))),
    };
    let recirc_rate = g.recirc_rate.map_or(BitsPerSec::gbps(100), |r| r.0);
    if recirc_rate.0 == 0 {
        return Err(c.err("linkguardian.recirc_rate", "must be positive"));
    }
    let recirc_buffer = g.recirc_buffer.map_or(200_000, |s| s.0);
    let recirc_latency = g.recirc_latency.map_or(Time::us(1), |d| d.0);
    let tick = c.positive("linkguardian.tick", g.tick.map(|d| d.0))?.unwrap_or(Time::ns(100));
    let frame_bytes = g.frame.map_or(64, |s| s.0);
    if frame_bytes == 0 || frame_bytes > 1_000_000 {
        return Err(c.err("linkguardian.frame", format!("a frame size in bytes, found {frame_bytes}")));
    }
    // The largest data packet.
    let mtu = fr.mss + fr.header;
    let ack_timeout = c.positive("linkguardian.ack_timeout", g.ack_timeout.map(|d| d.0))?;
    let mut loops: Vec<usize> = Vec::new();
    let mut loop_of = |s: usize| match loops.iter().position(|&x| x == s) {
        Some(i) => i,
        None => {
            loops.push(s);
            loops.len() - 1
        }
    };
    let mut links = Vec::new();
    for (i, [a, b]) in g.links.iter().enumerate() {
        let key = format!("linkguardian.links[{i}]");
        let (Some(sa), Some(sb)) = (net.switch_named(a), net.switch_named(b)) else {
            return Err(c.err(&key, format!("both ends must be switches; found [\"{a}\", \"{b}\"]")));
        };
        let peer = NodeId((net.n_hosts() + sb) as u32);
        let Some(port) = net.switches[sa].ports.iter().copied().find(|p| net.ports[p.idx()].peer == peer) else {
            return Err(c.err(&key, format!("no link from \"{a}\" to \"{b}\"")));
        };
        if links.iter().any(|l: &LgLink| l.port == port) {
            return Err(c.err(&key, format!("\"{a}\" → \"{b}\" is listed twice")));
        }
        let rate = net.ports[port.idx()].rate;
        let (t0, r0, f0) = rate_defaults(rate);
        let ack_timeout = match (ack_timeout, t0) {
            (Some(d), _) => d,
            (None, Some(t)) => t,
            (None, None) if !ordered => Time::us(7),
            (None, None) => {
                return Err(c.err(
                    "linkguardian.ack_timeout",
                    format!("missing: the thesis gives ackNoTimeout for 10, 25 and 100 Gbps links, not {rate}"),
                ))
            }
        };
        let resume = match (g.resume, r0) {
            (Some(s), _) => s.0,
            (None, Some(r)) => r,
            (None, None) if !ordered => 0,
            (None, None) => {
                return Err(c.err(
                    "linkguardian.resume",
                    format!("missing: the thesis gives resume thresholds for 25 and 100 Gbps links, not {rate}"),
                ))
            }
        };
        let pause = g.pause.map_or(resume + 2 * mtu, |s| s.0);
        if ordered && resume >= pause {
            return Err(c.err("linkguardian.resume", format!("must be below pause ({pause} B), found {resume} B")));
        }
        if ordered && recirc_buffer < pause {
            return Err(c.err(
                "linkguardian.recirc_buffer",
                format!("{recirc_buffer} B is below the pause threshold ({pause} B): the loop would overflow first"),
            ));
        }
        // t_flight_resume: from the receiver sending a resume to the first packet of the resumed queue reaching
        // it. What the wire does not take of it (the frame and a full packet each way and back) is the sender's
        // response time.
        let flight = match (g.t_flight_resume, f0) {
            (Some(d), _) => d.0,
            (None, Some(t)) => t,
            (None, None) if !backpressure => Time::ZERO,
            (None, None) => {
                return Err(c.err(
                    "linkguardian.t_flight_resume",
                    format!("missing: the thesis gives it for 25 and 100 Gbps links (1.9 and 1.6 us), not {rate}"),
                ))
            }
        };
        let pt = &net.ports[port.idx()];
        let wire = Time(2 * pt.delay.0)
            + rate.tx_time(frame_bytes + pt.wire_overhead as u64)
            + rate.tx_time(mtu + HEADER as u64 + pt.wire_overhead as u64);
        let pfc_response = flight.saturating_sub(wire);
        links.push(LgLink {
            port,
            tx_loop: loop_of(sa),
            rx_loop: loop_of(sb),
            ack_timeout,
            pause,
            resume,
            pfc_response,
        });
    }
    if links.is_empty() {
        return Err(c.err("linkguardian.links", "no link to protect"));
    }
    Ok(LgParams {
        loops: loops.len(),
        links,
        ordered,
        backpressure,
        copies,
        max_holes,
        dummies,
        literal,
        frame_bytes: frame_bytes as u32,
        recirc_rate,
        recirc_buffer,
        recirc_latency,
        tick,
    })
}
