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
//!   ACK, and bound_sim grows by one for every resend acknowledged: it doubles each round, as slow start
//!   ("increases exponentially with every successful retransmission, in effect simulating slow start").
//!
//! Not stated by the thesis, our choices: no new data is sent while the list is not empty; a timeout clears
//! the list; a notice for a segment already acknowledged or SACKed is ignored; the dropped segment leaves the
//! pipe at once (it is no longer in the network).

use super::{data_packet, segment_packet, Ctx, Flow, Tcp, TcpConfig, INFLIGHT, LOST, RETX, SACKED};
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

impl FlState {
    /// Algorithm 1's bookkeeping for a notice that segment `s` was dropped, for a sender whose window is
    /// `cwnd`: enter recovery if needed (α = cwnd / 2), add or update the entry, and set bound_sim. Returns
    /// whether this notice started a recovery.
    pub(super) fn notice(&mut self, s: u32, cwnd: f64, pfabric: bool) -> bool {
        let started = !self.active;
        if started {
            self.active = true;
            self.alpha = (cwnd / 2.0).max(1.0);
            self.bound = self.alpha;
            self.sim_retx = 0;
        }
        let i = self.list.partition_point(|e| e.seq < s);
        if i < self.list.len() && self.list[i].seq == s {
            let e = &mut self.list[i];
            e.retx += 1;
            if e.issent {
                // Its resend was dropped too: no longer in flight.
                e.issent = false;
                self.sim_retx = self.sim_retx.saturating_sub(1);
            }
        } else {
            self.list.insert(i, FlEntry { seq: s, retx: 1, issent: false });
        }
        self.bound =
            if pfabric { 1.0 } else { self.alpha / self.list.iter().map(|e| e.retx).max().unwrap_or(1) as f64 };
        started
    }

    /// The next segment to resend, in sequence order, while sim_retx < bound_sim (`force_first`: the lowest
    /// entry goes regardless, Algorithm 1's forward-progress rule). Marks it sent.
    pub(super) fn next_resend(&mut self, force_first: bool) -> Option<u32> {
        if self.probe_out {
            return None;
        }
        let (sim, bound) = (self.sim_retx, self.bound);
        let i = self
            .list
            .iter()
            .enumerate()
            .position(|(i, e)| !e.issent && ((sim as f64) < bound || (force_first && i == 0)))?;
        self.list[i].issent = true;
        self.sim_retx += 1;
        Some(self.list[i].seq)
    }

    /// An ACK covers every segment below `una` and those `sacked` says: their entries leave the list, freeing
    /// their resend slots (pFabric: bound_sim grows by one for each, slow start). Returns α when the list empties (recovery ends).
    pub(super) fn acked(&mut self, una: u32, sacked: impl Fn(u32) -> bool, pfabric: bool) -> Option<f64> {
        let mut freed = 0;
        self.list.retain(|e| {
            let acked = e.seq < una || sacked(e.seq);
            if acked && e.issent {
                freed += 1;
            }
            !acked
        });
        self.sim_retx -= freed.min(self.sim_retx);
        if pfabric {
            // Slow start: one more per acknowledged resend, so the bound doubles every round (1, 2, 4, …).
            self.bound += freed as f64;
        }
        if !self.list.is_empty() {
            return None;
        }
        self.active = false;
        self.probe_out = false;
        Some(self.alpha)
    }

    /// A timeout: the list holds only what was notified since the last one.
    pub(super) fn clear(&mut self) {
        self.active = false;
        self.list.clear();
        self.sim_retx = 0;
        self.probe_out = false;
    }
}

/// Out-of-order segments the receiver holds past its cumulative ACK (FL-PS's TCP option).
pub(super) fn ooo_count(ooo: &[(u32, u32)]) -> u32 {
    ooo.iter().map(|&(a, b)| b - a).sum::<u32>().min(OOO_MASK)
}

/// An ACK reached a sender in FastLane recovery: entries it covers leave the list (freeing their resend slots;
/// for pFabric doubling bound_sim each), a probe's ACK lets resends start, and an empty list ends recovery.
pub(super) fn on_ack(cfg: &TcpConfig, f: &mut Flow, aux: u32) {
    if aux & PROBE_ECHO != 0 {
        f.fl.probe_out = false;
    }
    let (una, flags) = (f.una, &f.flags);
    let pfabric = cfg.notices == NoticeReaction::FastLanePFabric;
    if let Some(alpha) = f.fl.acked(una, |s| flags[s as usize] & SACKED != 0, pfabric) {
        if !pfabric {
            f.cwnd = alpha;
            f.ssthresh = alpha.max(2.0);
        }
    }
}

impl Tcp {
    /// A switch's notice about a packet of one of this host's flows (`PktKind::Notice`).
    pub fn on_notice(&mut self, ctx: &mut Ctx, _host: NodeId, id: PktId) {
        let p = *ctx.pk.get(id);
        ctx.pk.sink(id);
        // About a closed half (the notice of an ACK concerns the receiver, of data or a probe the sender).
        let open = self.gens.get(p.flow.idx()) == Some(&p.flow_gen) && {
            let ends = self.flows.get(p.flow.0).ends;
            if p.noticed().0 == PktKind::Ack {
                ends.rcv
            } else {
                ends.snd
            }
        };
        if !open {
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
        if f.fl.notice(s, f.cwnd, pfabric) {
            self.stats.fl_recoveries += 1;
        }
        if pfabric {
            if !f.fl.probe_out {
                f.fl.probe_out = true;
                self.send_probe(ctx, slot);
            }
            return;
        }
        let first = f.fl.list.first().is_some_and(|e| e.seq == s);
        self.fl_pump(ctx, slot, first);
    }

    /// Resend list entries in sequence order while the bound allows (`force_first`: the lowest entry goes
    /// regardless, for forward progress). pFabric waits for its probe's ACK.
    pub(super) fn fl_pump(&mut self, ctx: &mut Ctx, slot: FlowSlot, force_first: bool) {
        let gen = self.gens[slot.idx()];
        let cfg = &self.cfg;
        let f = self.flows.get_mut(slot.0);
        let mut force = force_first;
        while let Some(s) = f.fl.next_resend(force) {
            force = false;
            f.flags[s as usize] = (f.flags[s as usize] & !LOST) | RETX | INFLIGHT;
            f.pipe += 1;
            f.retransmits += 1;
            self.stats.fl_retransmits += 1;
            let p = data_packet(cfg, f, slot, gen, s, ctx.now);
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

#[cfg(test)]
mod tests {
    use super::FlState;

    fn drain(fl: &mut FlState, force_first: bool) -> Vec<u32> {
        let mut out = vec![];
        let mut force = force_first;
        while let Some(s) = fl.next_resend(force) {
            out.push(s);
            force = false;
        }
        out
    }

    #[test]
    fn algorithm_1_bounds_resends_by_alpha_over_the_most_notices_of_one_segment() {
        let mut fl = FlState::default();
        // cwnd 8: α = 4, bound_sim = 4. Notices for 5, 7, 9, 11, 13: the first four go, the fifth waits.
        assert!(fl.notice(5, 8.0, false));
        for s in [7, 9, 11, 13] {
            assert!(!fl.notice(s, 8.0, false));
        }
        assert_eq!(drain(&mut fl, false), vec![5, 7, 9, 11]);
        assert_eq!(fl.sim_retx, 4);
        // 7's resend is dropped too: retx(7) = 2, bound_sim = 4 / 2 = 2, and 7 is no longer in flight (3 < 2 is
        // false: nothing goes).
        fl.notice(7, 8.0, false);
        assert_eq!((fl.bound, fl.sim_retx), (2.0, 3));
        assert_eq!(drain(&mut fl, false), Vec::<u32>::new());
        // ACKs for 5 and 9 (SACKed) free two slots: 1 < 2 lets one more go, in sequence order: 7.
        assert_eq!(fl.acked(6, |s| s == 9, false), None);
        assert_eq!(fl.sim_retx, 1);
        assert_eq!(drain(&mut fl, false), vec![7]);
        assert_eq!(drain(&mut fl, false), Vec::<u32>::new());
        // Everything acknowledged: recovery ends and returns α for the new window.
        assert_eq!(fl.acked(14, |_| false, false), Some(4.0));
        assert!(!fl.active && fl.list.is_empty() && fl.sim_retx == 0);
    }

    #[test]
    fn the_lowest_segment_is_resent_whenever_it_is_notified_even_past_the_bound() {
        let mut fl = FlState::default();
        fl.notice(10, 2.0, false); // α = 1
        assert_eq!(drain(&mut fl, true), vec![10]);
        fl.notice(12, 2.0, false);
        assert_eq!(drain(&mut fl, false), Vec::<u32>::new(), "sim_retx 1 = bound 1");
        // A notice for 3 (lower than every entry): it goes although sim_retx = bound_sim.
        fl.notice(3, 2.0, false);
        assert_eq!(drain(&mut fl, true), vec![3]);
        assert_eq!(fl.sim_retx, 2);
        // Without the rule it would have waited.
        let mut g = FlState::default();
        g.notice(10, 2.0, false);
        drain(&mut g, true);
        g.notice(3, 2.0, false);
        assert_eq!(drain(&mut g, false), Vec::<u32>::new());
    }

    #[test]
    fn pfabric_resends_one_then_doubles_per_acknowledged_resend_and_restarts_at_one() {
        let mut fl = FlState::default();
        for s in 0..8 {
            fl.notice(s, 40.0, true);
        }
        fl.probe_out = true;
        assert_eq!(drain(&mut fl, false), Vec::<u32>::new(), "nothing before the probe's ACK");
        fl.probe_out = false;
        assert_eq!(drain(&mut fl, false), vec![0]);
        fl.acked(1, |_| false, true);
        assert_eq!(drain(&mut fl, false), vec![1, 2]);
        fl.acked(3, |_| false, true);
        assert_eq!(drain(&mut fl, false), vec![3, 4, 5, 6]);
        // A notice (5's resend was dropped) sets bound_sim back to 1: 3 in flight, nothing more goes.
        fl.notice(5, 40.0, true);
        assert_eq!((fl.bound, fl.sim_retx), (1.0, 3));
        assert_eq!(drain(&mut fl, false), Vec::<u32>::new());
    }

    #[test]
    fn a_timeout_clears_the_list() {
        let mut fl = FlState::default();
        fl.notice(4, 10.0, false);
        drain(&mut fl, false);
        fl.clear();
        assert!(!fl.active && fl.list.is_empty() && fl.sim_retx == 0);
        // The next notice starts a new recovery with the window of that time.
        assert!(fl.notice(4, 6.0, false));
        assert_eq!(fl.bound, 3.0);
    }
}
