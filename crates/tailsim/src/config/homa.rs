//! The `transport.kind = "homa"` section: defaults from the thesis, RTTbytes from the topology, priority
//! levels and cutoffs from the workload (docs/homa.md).

use super::build::{Ctx, R};
use super::schema::TransportCfg;
use crate::metrics::{ideal_fct, Framing};
use crate::net::Network;
use crate::transport::homa::{Homa, HomaConfig, LEVELS};
use crate::transport::Transport;
use crate::units::{NodeId, Time};
use tailsim_workload::SizeCdf;

/// Homa's data-packet headers as buffers count them: Ethernet 18 (header + CRC), IP 20, UDP 8, Homa 30.
pub const DEFAULT_HEADER: u32 = 76;

/// Homa's framing: data packets are full frames of `packet.mss + packet.header` bytes, `transport.header` of
/// which are headers (1518 − 76 = 1442 B of payload on `homa-144`).
pub(super) fn framing(c: &Ctx, t: &TransportCfg, fr: Framing) -> R<Framing> {
    let header = t.header.unwrap_or(DEFAULT_HEADER) as u64;
    let frame = fr.mss + fr.header;
    if header == 0 {
        // A trimmed NDP packet is its headers alone: a packet of no bytes would take no time on a link and
        // leave its queue's bytes at 0 while it waits there (net/egress.rs counts on queued packets having
        // bytes).
        return Err(c.err("transport.header", "must be at least 1 byte"));
    }
    if header >= frame {
        return Err(c.err(
            "transport.header",
            format!("{header} B of headers leave no payload in a {frame} B frame (packet.mss + packet.header)"),
        ));
    }
    Ok(Framing { mss: frame - header, header, wire_overhead: fr.wire_overhead })
}

/// RTTbytes as the thesis computes it (§3.2.1, §4.1.1): a full data packet one way and a control packet back
/// between the two hosts farthest apart in hops (host 0 and the last host), times the host link rate.
pub fn rtt_bytes(net: &Network, fr: Framing, ctrl: u32) -> u64 {
    let (a, b) = (NodeId(0), NodeId(net.n_hosts() as u32 - 1));
    let data = ideal_fct(net, a, b, fr.mss, fr);
    let back = ideal_fct(net, b, a, 1, Framing { mss: 1, header: ctrl as u64 - 1, wire_overhead: fr.wire_overhead });
    let rate = net.ports[net.hosts[0].nic.idx()].rate;
    ((data + back).0 as u128 * rate.0 as u128).div_ceil(8 * 1_000_000_000_000) as u64
}

/// `lossless`: no buffer limit anywhere and no faults, so no packet can be lost and RESEND is off by default
/// (as in the thesis's simulations): a timeout could only fire for packets starved at a low priority, and
/// resending them would add load for nothing.
pub(super) fn transport(
    c: &Ctx,
    t: &TransportCfg,
    fr: Framing,
    ctrl: u32,
    net: &Network,
    workload: Option<&SizeCdf>,
    lossless: bool,
) -> R<Transport> {
    let rtt = match t.rtt_bytes {
        Some(s) if s.0 == 0 => return Err(c.err("transport.rtt_bytes", "must be positive")),
        Some(s) => s.0,
        None => rtt_bytes(net, fr, ctrl),
    };
    // Unscheduled cutoffs: explicit, or from the workload so each level carries equal unscheduled bytes.
    let cutoffs: Vec<u64> = match (&t.unscheduled_cutoffs, t.unscheduled_levels) {
        (Some(_), Some(_)) => {
            return Err(c.err(
                "transport.unscheduled_levels",
                "give either `unscheduled_levels` or `unscheduled_cutoffs`, not both",
            ))
        }
        (Some(v), None) => {
            let mut v: Vec<u64> = v.iter().map(|s| s.0).collect();
            if v.len() >= LEVELS as usize {
                return Err(c.err(
                    "transport.unscheduled_cutoffs",
                    format!("at most 6 cutoffs (7 unscheduled levels), found {}", v.len()),
                ));
            }
            if v.windows(2).any(|w| w[0] >= w[1]) || v.first() == Some(&0) {
                return Err(c.err("transport.unscheduled_cutoffs", "cutoffs must be positive and increasing"));
            }
            v.push(u64::MAX);
            v
        }
        (None, levels) => {
            if let Some(l) = levels {
                if !(1..LEVELS).contains(&l) {
                    return Err(c.err(
                        "transport.unscheduled_levels",
                        format!("must be 1–7 (at least one level stays scheduled), found {l}"),
                    ));
                }
            }
            match workload {
                Some(cdf) => unscheduled_cutoffs(c, cdf, fr, ctrl, rtt, levels)?,
                None if levels.unwrap_or(1) == 1 => vec![u64::MAX],
                None => {
                    return Err(c.err(
                        "transport.unscheduled_levels",
                        "cutoffs for several unscheduled levels come from a Poisson workload's `cdf`; there is none (give `unscheduled_cutoffs`)",
                    ))
                }
            }
        }
    };
    let sched = LEVELS - cutoffs.len() as u8;
    let overcommit = t.overcommit.unwrap_or(sched);
    if overcommit == 0 || overcommit > sched {
        return Err(
            c.err("transport.overcommit", format!("must be 1–{sched} (the scheduled levels), found {overcommit}"))
        );
    }
    let resend_timeout = match t.resend_timeout {
        Some(d) if d.0 == Time::ZERO => return Err(c.err("transport.resend_timeout", "must be positive")),
        Some(d) => Some(d.0),
        None if lossless => None,
        None => Some(Time::ms(2)),
    };
    let cfg = HomaConfig {
        payload: fr.mss as u32,
        header: fr.header as u32,
        ctrl_size: ctrl,
        wire_overhead: fr.wire_overhead as u32,
        rtt_bytes: rtt,
        cutoffs,
        overcommit,
        pacer: t.pacer.unwrap_or(true),
        tail_boost: t.tail_boost.unwrap_or(true),
        resend_timeout,
    };
    Ok(Transport::Homa(Homa::new(cfg, net.n_hosts())))
}

/// Cutoffs for the unscheduled levels (the last is unbounded), from the workload's size distribution: the
/// thesis's split of the 8 levels by the unscheduled byte share (unless `levels` is given), and cutoffs
/// that give each unscheduled level an equal share of the unscheduled bytes on the wire (§3.5.1–3.5.2).
fn unscheduled_cutoffs(c: &Ctx, cdf: &SizeCdf, fr: Framing, ctrl: u32, rtt: u64, levels: Option<u8>) -> R<Vec<u64>> {
    use tailsim_workload::homa::{homa_level_split, homa_unscheduled_cutoffs, HomaPriorityParams};
    let mut params = HomaPriorityParams::new(rtt, LEVELS as usize);
    params.unsched_packet_bytes = fr.mss;
    params.packet_overhead_bytes = fr.header + fr.wire_overhead;
    params.min_packet_bytes = ctrl as u64 + fr.wire_overhead;
    let n = match levels {
        Some(l) => l as usize,
        None => homa_level_split(cdf.limited_mean(rtt) / cdf.mean_bytes(), LEVELS as usize).0,
    };
    let mut v = homa_unscheduled_cutoffs(cdf, &params, n).map_err(|e| c.err("transport", e.to_string()))?;
    // A size that holds more than one level's share leaves levels unused; keep the split as decided.
    v.resize(n.max(v.len()), u64::MAX);
    Ok(v)
}
