//! The `transport.kind = "phost"` and `"ndp"` sections: the Homa thesis's receiver-driven baselines. They use
//! Homa's framing (a full 1500 B IP packet per data frame) and Homa's RTTbytes as their BDP, so that the three
//! carry the same packets on the same fabric (docs/phost.md, docs/ndp.md).

use super::build::{Ctx, R};
use super::schema::TransportCfg;
use crate::metrics::Framing;
use crate::net::Network;
use crate::transport::ndp::{Ndp, NdpConfig};
use crate::transport::phost::{Phost, PhostConfig};
use crate::transport::Transport;
use crate::units::Time;

/// Class of pHost's and NDP's data packets (control packets and trimmed headers use class 0).
const DATA_CLASS: u8 = 1;

fn rtt_bytes(c: &Ctx, t: &TransportCfg, fr: Framing, ctrl: u32, net: &Network) -> R<u64> {
    match t.rtt_bytes {
        Some(s) if s.0 == 0 => Err(c.err("transport.rtt_bytes", "must be positive")),
        Some(s) => Ok(s.0),
        None => Ok(super::homa::rtt_bytes(net, fr, ctrl)),
    }
}

/// Per host: one full data frame's time at its link rate (the token clock, the pull pacer).
fn frame_times(net: &Network, fr: Framing) -> Vec<Time> {
    wire_times(net, fr.mss + fr.header + fr.wire_overhead)
}

/// Per host: the time `bytes` take at its link rate.
fn wire_times(net: &Network, bytes: u64) -> Vec<Time> {
    net.hosts.iter().map(|h| net.ports[h.nic.idx()].rate.tx_time(bytes)).collect()
}

/// `lossless`: nothing can be lost (no buffer limits, no faults), so the receiver timeout is off by default.
pub(super) fn phost(c: &Ctx, t: &TransportCfg, fr: Framing, ctrl: u32, net: &Network, lossless: bool) -> R<Transport> {
    let rtt_bytes = rtt_bytes(c, t, fr, ctrl, net)?;
    let rate = net.ports[net.hosts[0].nic.idx()].rate;
    let frame = rate.tx_time(fr.mss + fr.header + fr.wire_overhead);
    let rtt = rate.tx_time(rtt_bytes);
    let token_expiry =
        c.positive("transport.token_expiry", t.token_expiry.map(|d| d.0))?.unwrap_or(Time(frame.0 * 3 / 2));
    let token_timeout =
        c.positive("transport.token_timeout", t.token_timeout.map(|d| d.0))?.unwrap_or(Time(3 * rtt.0) + token_expiry);
    let downgrade_for = c.positive("transport.downgrade_for", t.downgrade_for.map(|d| d.0))?.unwrap_or(Time(3 * rtt.0));
    let timeout =
        c.positive("transport.resend_timeout", t.resend_timeout.map(|d| d.0))?.or((!lossless).then_some(Time::ms(2)));
    let cfg = PhostConfig {
        payload: fr.mss as u32,
        header: fr.header as u32,
        ctrl_size: ctrl,
        wire_overhead: fr.wire_overhead as u32,
        rtt_bytes,
        token_expiry,
        token_timeout,
        downgrade_for,
        free_high: t.free_tokens_high.unwrap_or(true),
        data_class: DATA_CLASS,
        pacer: t.pacer.unwrap_or(true),
        timeout,
    };
    Ok(Transport::Phost(Phost::new(cfg, frame_times(net, fr))))
}

pub(super) fn ndp(c: &Ctx, t: &TransportCfg, fr: Framing, ctrl: u32, net: &Network, lossless: bool) -> R<Transport> {
    let cfg = NdpConfig {
        payload: fr.mss as u32,
        header: fr.header as u32,
        ctrl_size: ctrl,
        wire_overhead: fr.wire_overhead as u32,
        rtt_bytes: rtt_bytes(c, t, fr, ctrl, net)?,
        data_class: DATA_CLASS,
        timeout: c
            .positive("transport.resend_timeout", t.resend_timeout.map(|d| d.0))?
            .or((!lossless).then_some(Time::ms(1))),
        fair_pulls: match t.pull_order.as_deref().unwrap_or("fair") {
            "fair" => true,
            "fifo" => false,
            o => return Err(c.err("transport.pull_order", format!("expected \"fair\" or \"fifo\", found \"{o}\""))),
        },
        pull_on_ack: t.pull_on_ack.unwrap_or(true),
    };
    // The pacer's spacing: one full data frame by default; htsim's is (data frame + ACK) / 0.99.
    let spacing = match t.pull_spacing {
        Some(s) if s.0 == 0 => return Err(c.err("transport.pull_spacing", "must be positive")),
        Some(s) => wire_times(net, s.0),
        None => frame_times(net, fr),
    };
    Ok(Transport::Ndp(Ndp::new(cfg, spacing)))
}
