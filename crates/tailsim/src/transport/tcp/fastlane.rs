//! The sender's reaction to FastLane's drop notices (the DeTail/FastLane thesis §6.5.4, Algorithm 1;
//! docs/fastlane.md).
//!
//! A notice about a control packet (an ACK, a probe) resends it at once: it is small, and its loss would
//! otherwise cost a timeout. A notice about data puts the segment on a list sorted by sequence number, one
//! entry per unacknowledged segment notified since the last timeout, with the number of notices for it
//! (`retx`) and whether its resend is in flight (`issent`). Resends in flight (`sim_retx`) are bounded:
//!
//! - TCP: recovery starts with α = cwnd / 2 and bound_sim = α; every notice sets bound_sim = α / max(retx),
//!   an exponential back-off as the same segments are dropped again. The list is walked in order, resending
//!   while sim_retx < bound_sim, and the lowest segment is always resent when a notice names it (cumulative
//!   ACKs need it for any progress). ACKs that cover entries free their slots; when the list is empty the
//!   sender leaves recovery with cwnd = ssthresh = α.
//! - pFabric: a notice sets bound_sim = 1 and sends a 1-byte probe if none is out; resends wait for the probe's
//!   ACK, and bound_sim doubles with every entry acknowledged (slow start).
//!
//! Not stated by the thesis, our choices: no new data is sent while the list is not empty; a timeout clears
//! the list; a notice for a segment already acknowledged or SACKed is ignored; the dropped segment leaves the
//! pipe at once (it is no longer in the network).

use super::{segment_packet, Ctx, Flow, Tcp, TcpConfig, INFLIGHT, LOST, RETX, SACKED};
use crate::engine::TimerKind;
use crate::net::packet::PktKind;
use crate::units::{FlowSlot, NodeId, PktId};

/// `aux` flag of an ACK that answers a probe.
pub(super) const PROBE_ECHO: u32 = 1 << 31;
/// `aux` bits of an ACK that carry FL-PS's out-of-order count (segments).
pub(super) const OOO_MASK: u32 = (1 << 24) - 1;

/// What a TCP sender does with a switch's drop notice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoticeReaction {
    /// Count it (notices from `switch.bounce`, which has no transport reaction).
    Count,
    /// FastLane's Algorithm 1 (TCP).
    FastLane,
    /// FastLane for pFabric: probe first, then slow-start the resends.
    FastLanePFabric,
}

#[derive(Clone, Copy, Debug)]
pub(super) struct FlEntry {
    seq: u32,
    retx: u32,
    issent: bool,
}

/// A flow's FastLane recovery state. The list keeps its capacity between recoveries.
#[derive(Debug, Default)]
pub(super) struct FlState {
    pub(super) active: bool,
    list: Vec<FlEntry>,
    alpha: f64,
    bound: f64,
    sim_retx: u32,
    probe_out: bool,
}

/// Out-of-order segments the receiver holds past its cumulative ACK (FL-PS's TCP option).
pub(super) fn ooo_count(ooo: &[(u32, u32)]) -> u32 {
    ooo.iter().map(|&(a, b)| b - a).sum::<u32>().min(OOO_MASK)
}

/// An ACK reached a sender in FastLane recovery: entries it covers leave the list (freeing their resend slots;
/// for pFabric doubling bound_sim each), a probe's ACK lets resends start, and an empty list ends recovery.
pub(super) fn on_ack(cfg: &TcpConfig, f: &mut Flow, aux: u32) {
    let (una, flags) = (f.una, &f.flags);
    let fl = &mut f.fl;
    if aux & PROBE_ECHO != 0 {
        fl.probe_out = false;
    }
    let mut freed = 0;
    fl.list.retain(|e| {
        let acked = e.seq < una || flags[e.seq as usize] & SACKED != 0;
        if acked && e.issent {
            freed += 1;
        }
        !acked
    });
    fl.sim_retx -= freed.min(fl.sim_retx);
    if cfg.notices == NoticeReaction::FastLanePFabric {
        fl.bound *= 2f64.powi(freed as i32);
    }
    if fl.list.is_empty() {
        fl.active = false;
        fl.probe_out = false;
        if cfg.notices == NoticeReaction::FastLane {
            f.cwnd = fl.alpha;
            f.ssthresh = fl.alpha.max(2.0);
        }
    }
}

/// A timeout: the list holds only what was notified since the last one.
pub(super) fn on_timeout(f: &mut Flow) {
    f.fl.active = false;
    f.fl.list.clear();
    f.fl.sim_retx = 0;
    f.fl.probe_out = false;
}

impl Tcp {
    /// A switch's notice about a packet of one of this host's flows (`PktKind::Notice`).
    pub fn on_notice(&mut self, ctx: &mut Ctx, _host: NodeId, id: PktId) {
        let p = *ctx.pk.get(id);
        ctx.pk.sink(id);
        if self.gens.get(p.flow.idx()) != Some(&p.flow_gen) {
            self.stats.stale_notices += 1;
            return;
        }
        self.stats.notices += 1;
        if self.cfg.notices == NoticeReaction::Count {
            return;
        }
        let slot = p.flow;
        match p.noticed().0 {
            PktKind::Ack => {
                // Resend the current cumulative ACK (it supersedes the lost one).
                self.stats.fl_control_resent += 1;
                let ece = self.flows.get(slot.0).ce_state;
                self.send_ack(ctx, slot, ece);
            }
            PktKind::Probe => {
                let f = self.flows.get(slot.0);
                if f.probing || f.fl.probe_out {
                    self.stats.fl_control_resent += 1;
                    self.send_probe(ctx, slot);
                }
            }
            PktKind::Data => self.fl_data_notice(ctx, slot, p.seq),
            _ => {}
        }
    }

    /// Algorithm 1 (TCP) or its pFabric form, for a notice that data segment `s` was dropped.
    fn fl_data_notice(&mut self, ctx: &mut Ctx, slot: FlowSlot, s: u32) {
        let pfabric = self.cfg.notices == NoticeReaction::FastLanePFabric;
        let f = self.flows.get_mut(slot.0);
        if s < f.una || s >= f.nxt || f.flags[s as usize] & SACKED != 0 {
            return; // already delivered (a late notice about an earlier copy)
        }
        let fl_flag = &mut f.flags[s as usize];
        if *fl_flag & INFLIGHT != 0 {
            *fl_flag &= !INFLIGHT;
            f.pipe -= 1;
        }
        if !f.fl.active {
            self.stats.fl_recoveries += 1;
            f.fl.active = true;
            f.fl.alpha = (f.cwnd / 2.0).max(1.0);
            f.fl.bound = f.fl.alpha;
            f.fl.sim_retx = 0;
        }
        let fl = &mut f.fl;
        let i = fl.list.partition_point(|e| e.seq < s);
        if i < fl.list.len() && fl.list[i].seq == s {
            let e = &mut fl.list[i];
            e.retx += 1;
            if e.issent {
                e.issent = false;
                fl.sim_retx = fl.sim_retx.saturating_sub(1);
            }
        } else {
            fl.list.insert(i, FlEntry { seq: s, retx: 1, issent: false });
        }
        if pfabric {
            fl.bound = 1.0;
            if !fl.probe_out {
                fl.probe_out = true;
                self.send_probe(ctx, slot);
            }
            return;
        }
        let max_retx = fl.list.iter().map(|e| e.retx).max().unwrap_or(1);
        fl.bound = fl.alpha / max_retx as f64;
        let first = i == 0;
        self.fl_pump(ctx, slot, first);
    }

    /// Resend list entries in sequence order while the bound allows (`force_first`: the lowest entry goes
    /// regardless, for forward progress). pFabric waits for its probe's ACK.
    pub(super) fn fl_pump(&mut self, ctx: &mut Ctx, slot: FlowSlot, force_first: bool) {
        let gen = self.gens[slot.idx()];
        let cfg = &self.cfg;
        let f = self.flows.get_mut(slot.0);
        if f.fl.probe_out {
            return;
        }
        for i in 0..f.fl.list.len() {
            let e = f.fl.list[i];
            if e.issent || !((f.fl.sim_retx as f64) < f.fl.bound || (force_first && i == 0)) {
                continue;
            }
            f.fl.list[i].issent = true;
            f.fl.sim_retx += 1;
            let s = e.seq;
            f.flags[s as usize] = (f.flags[s as usize] & !LOST) | RETX | INFLIGHT;
            f.pipe += 1;
            f.retransmits += 1;
            self.stats.fl_retransmits += 1;
            let payload = if s + 1 == f.nsegs { f.last_payload } else { cfg.mss };
            let p = segment_packet(cfg, f, PktKind::Data, slot, gen, s, payload, ctx.now);
            let mut p = p;
            p.ect = cfg.ecn || matches!(cfg.cc, super::CongestionControl::Dctcp { .. });
            let src = f.src;
            ctx.send(src, p);
        }
        if !f.rto_timer.armed() {
            let at = ctx.now + f.rto;
            f.rto_timer.set(ctx, at, slot, gen, TimerKind::Retransmit);
        }
    }

    /// A 1-byte probe for the flow's lowest unacknowledged segment.
    pub(super) fn send_probe(&mut self, ctx: &mut Ctx, slot: FlowSlot) {
        let gen = self.gens[slot.idx()];
        let f = self.flows.get(slot.0);
        let p = segment_packet(&self.cfg, f, PktKind::Probe, slot, gen, f.una, 1, ctx.now);
        self.stats.fl_probes += 1;
        let src = f.src;
        ctx.send(src, p);
    }
}
