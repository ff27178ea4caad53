//! LinkGuardian (Joshi thesis Ch. 5, App. A): link-local retransmission over a corrupting link, between the
//! switch that sends over it and the switch that receives.
//!
//! - **Sender** (the protected port S). Every packet leaving S gets a 3-byte header with a 16-bit sequence
//!   number and an era bit (`Seq`); a copy loops through the sender switch's recirculation port (`Recirc`).
//!   On each pass a copy at or below the receiver's latest sequence number (`latestRxSeqNo`, learnt from ACKs)
//!   is resent in `copies` copies ahead of S's queues if the receiver asked for it (`reTxReqs`), else
//!   dropped; a copy above it loops again.
//! - **Receiver** (the far end). A sequence number that skips ahead is a loss: a loss notice (first missing
//!   number, hole size, latest number) goes back at once as a control frame; the sender resends up to
//!   `max_holes` consecutive losses (§5.3.5). The cumulative ACK rides, 3 bytes, on every packet going back
//!   over the link, or in a 64-byte ACK frame when that direction is idle (§5.3.1). When S goes idle, up to
//!   `dummies` dummy frames carry the next sequence number, so a lost last packet is noticed too (§5.3.2).
//!   The switches' self-replenishing lowest-priority queues are modelled by what they put on the wire. Dummies:
//!   one in each idle slot while the P4 code's notify count lasts (`dummies`, reset by every protected
//!   packet; past it the literal queue drops them at egress). ACKs: by default a frame only when it carries
//!   news, since the literal queue's others repeat what the sender knows; `control = "literal"` sends one in
//!   every idle slot, and a test checks that the two agree.
//! - **Ordered mode** (Alg. 5, 6): the receiver forwards sequence number `ackNo` and moves on; a later one
//!   waits in its recirculation loop and is looked at again on each pass; an earlier one is a duplicate and
//!   dropped. If `ackNo` does not move for `ack_timeout` (counted in 100 ns ticks) the receiver gives that
//!   packet up. The loop's queue depth pauses S's ordinary traffic (all classes; resends and LG frames are
//!   never paused) with a pause frame at `pause` bytes and resumes it at `resume`.
//! - **Non-blocking mode** (LG-NB): every packet is forwarded as it arrives; duplicates (the extra copies of a
//!   resend) are dropped by the receiver (ours: the thesis does not say), no PFC.
//!
//! The header exists only on the link: S adds 3 bytes at admission, the receiver strips them on arrival (and
//! likewise for the ACK header going back). What each frame on the wire says is kept here, in the order the
//! link carries them (`Wire`), and read by the far end only when the frame arrives intact: a corrupted frame
//! is dropped by the datapath before any mechanism sees it, and its entry is discarded unread.
//! Docs: docs/linkguardian.md.

use super::Hooks;
use crate::net::hooks::{Admit, Arrive, Effect, HookCtx, HookSet};
use crate::net::packet::{Packet, PktKind};
use crate::net::port::{DropReason, Port};
use crate::units::{BitsPerSec, FlowSlot, NodeId, PktId, PortId, Time};
use std::collections::VecDeque;

mod recovery;
mod seq;
mod split;
use recovery::Recovery;
use seq::SeqBits;
pub use seq::{copies_for, Seq};

/// `Packet::aux` of LinkGuardian's frames.
pub const LG_FRAME: u32 = 0x4c47;
/// Bytes the LG header adds to a packet on the protected link (data: sequence number; back: ACK).
pub const HEADER: u32 = 3;
/// What a frame on the wire says (kept in the link's order; read by the far end).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Tag {
    /// Not LinkGuardian's (another mechanism's frame, a packet sent before LG saw it).
    Plain,
    /// A protected packet: its sequence number; `retx` for a resend.
    Data { seq: Seq, retx: bool },
    /// Sender → receiver: the next sequence number, not consumed (tail-loss detection).
    Dummy { next: Seq },
    /// A packet going back with the 3-byte ACK header (empty before the receiver has anything to say).
    Piggy { latest: Option<Seq> },
    /// Receiver → sender: an ACK frame.
    Ack { latest: Seq },
    /// Receiver → sender: packets `first`.. (`hole` of them) are missing.
    Notice { first: Seq, hole: u32, latest: Seq },
    /// Receiver → sender: pause (true) or resume S's ordinary traffic.
    Pfc(bool),
}

/// The frames on one direction of a link, oldest first, with what each says.
#[derive(Default)]
struct Wire {
    q: VecDeque<(PktId, Tag)>,
    /// LG frames and resends made but not transmitted yet.
    pending: Vec<(PktId, Tag)>,
}

impl Wire {
    fn take_pending(&mut self, id: PktId) -> Option<Tag> {
        let i = self.pending.iter().position(|&(p, _)| p == id)?;
        Some(self.pending.swap_remove(i).1)
    }
    /// The frame at the head of the wire arrived (or was corrupted): what it said.
    fn pop(&mut self, id: PktId) -> Tag {
        match self.q.pop_front() {
            Some((p, t)) if p == id => t,
            other => unreachable!("link-local wire out of step: {other:?} for {id:?}"),
        }
    }
}

/// What a packet in a recirculation loop is.
#[derive(Clone, Copy, Debug)]
enum Looping {
    /// A sender's copy of a protected packet of link `link`.
    Copy { link: u16, seq: Seq },
    /// A receiver's packet waiting for its turn (ordered mode); `retx` for a resend.
    Held { link: u16, seq: Seq, retx: bool },
}

/// A switch's recirculation port: a FIFO drained at `rate`, then `latency` to come back round. Packets are
/// looked at in the order they entered; a packet kept goes round again, at the back.
#[derive(Default)]
struct Recirc {
    q: VecDeque<(Time, PktId, Looping)>,
    /// When the port will have drained what it holds.
    busy_until: Time,
    /// The pending timer (at the head's return).
    armed: Option<Time>,
    bytes: u64,
    max_bytes: u64,
    max_depth: u64,
}

#[derive(Clone, Debug)]
pub struct LgLink {
    /// The protected port (the sender switch's port over the corrupting link).
    pub port: PortId,
    /// Recirculation-loop indices of the sender and receiver switches.
    pub tx_loop: usize,
    pub rx_loop: usize,
    /// Ordered mode's `ackNoTimeout`.
    pub ack_timeout: Time,
    /// Ordered mode's PFC thresholds on the receiver's loop depth, bytes.
    pub pause: u64,
    pub resume: u64,
    /// From a pause or resume frame's arrival to its effect at the sender's MAC (set from t_flight_resume).
    pub pfc_response: Time,
}

#[derive(Clone, Debug)]
pub struct LgParams {
    pub links: Vec<LgLink>,
    /// Alg. 5's reordering (false: LG-NB).
    pub ordered: bool,
    /// Alg. 6's backpressure (ordered mode; off only to show what it prevents, Fig. 5.14).
    pub backpressure: bool,
    /// Copies of each resend (Eq. 5.1).
    pub copies: u32,
    /// Most consecutive losses one notice asks for (§5.3.5: 5).
    pub max_holes: u32,
    /// Dummies sent when the protected port goes idle.
    pub dummies: u32,
    /// The receiver's ACK queue as the thesis builds it: an ACK frame in every idle slot, news or not (the
    /// default sends one only when it carries news; a test checks the two agree).
    pub literal: bool,
    /// Size of ACK, notice, dummy and pause frames.
    pub frame_bytes: u32,
    pub recirc_rate: BitsPerSec,
    pub recirc_buffer: u64,
    pub recirc_latency: Time,
    /// Granularity of the receiver's timeout countdown (100 ns: TimerTasks' packet-generator ticks).
    pub tick: Time,
    /// Switches (by loop index) hosting a recirculation loop.
    pub loops: usize,
}

/// Counters per protected link, for summary.json and the tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct LgStats {
    /// Packets the sender numbered (originals).
    pub protected: u64,
    /// Packets the receiver forwarded (each sequence number at most once).
    pub delivered: u64,
    /// Sequence numbers the receiver found missing, and resends it forwarded.
    pub missing: u64,
    pub recovered: u64,
    /// Losses a notice could not ask for (beyond `max_holes` in a row).
    pub unrequested: u64,
    /// Ordered mode: sequence numbers given up after `ack_timeout`.
    pub gave_up: u64,
    pub notices: u64,
    pub resends: u64,
    pub duplicates: u64,
    pub dummies: u64,
    pub ack_frames: u64,
    pub piggybacked: u64,
    pub pauses: u64,
    pub resumes: u64,
    /// Packets held for order (ordered mode), and copies or held packets the loop had no room for.
    pub held: u64,
    pub loop_overflow: u64,
    /// Largest queue of the sender's and the receiver's recirculation port (bytes not yet drained: what the
    /// switch's queue counters show, the thesis's TX and RX buffers, Fig. 5.17), seen at this link's events.
    pub max_tx_queue: u64,
    pub max_rx_queue: u64,
    /// Largest bytes of copies the sender held, and of packets the receiver held, whether queued for the
    /// recirculation port or on their way round.
    pub max_tx_held: u64,
    pub max_rx_held: u64,
}

/// One protected link's state at both ends (each end reads only what reached it).
#[derive(Default)]
struct Link {
    // --- sender ---
    next: Seq,
    /// The sender's copy of `latestRxSeqNo` (None until the first ACK).
    acked: Option<Seq>,
    retx: SeqBits,
    dummy_budget: u32,
    tx_bytes: u64,
    // --- receiver ---
    /// Next original sequence number expected.
    expected: Seq,
    latest: Option<Seq>,
    pending_ack: bool,
    /// Ordered: the next sequence number to forward.
    ack_no: Seq,
    /// Packets held in the receiver's loop, and their bytes.
    held: u32,
    rx_bytes: u64,
    /// Ordered: when the countdown for `ack_no` runs out.
    stall: Option<Time>,
    paused: bool,
    /// Non-blocking: numbers forwarded (for dropping the extra copies of a resend).
    seen: SeqBits,
    // --- the two directions of the link ---
    fwd: Wire,
    back: Wire,
    /// The packet going back now being serialized, and the ACK its header carries.
    stamp: Option<(PktId, Option<Seq>)>,
    stats: LgStats,
    /// Loss-to-resend delays (Fig. 5.10).
    recovery: Recovery,
}

pub struct LinkGuardian {
    prm: LgParams,
    links: Vec<Link>,
    /// Per port: the protected link it sends (`Fwd`) or sends back over (`Back`).
    role: Vec<Role>,
    loops: Vec<Recirc>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    None,
    Fwd(u16),
    Back(u16),
}

/// Timer keys: a loop's next return (its index), a link's countdown (`STALL | link`), or a pause frame taking
/// effect at a link's sender (`PFC | link << 1 | pause`).
const STALL: u32 = 1 << 31;
const PFC: u32 = 1 << 30;

impl LinkGuardian {
    pub fn new(prm: LgParams, ports: &[crate::net::port::Port]) -> LinkGuardian {
        let mut role = vec![Role::None; ports.len()];
        let links = prm
            .links
            .iter()
            .enumerate()
            .map(|(i, l)| {
                role[l.port.idx()] = Role::Fwd(i as u16);
                role[ports[l.port.idx()].reverse.idx()] = Role::Back(i as u16);
                Link::default()
            })
            .collect();
        let loops = (0..prm.loops).map(|_| Recirc::default()).collect();
        LinkGuardian { prm, links, role, loops }
    }

    /// The ports the mechanism hooks: each protected port and its reverse.
    pub fn ports(&self, ports: &[crate::net::port::Port]) -> Vec<PortId> {
        self.prm.links.iter().flat_map(|l| [l.port, ports[l.port.idx()].reverse]).collect()
    }

    // ------------------------------------------------------------------ frames

    fn frame(&mut self, c: &mut HookCtx, link: usize, back: bool, tag: Tag) {
        let l = &self.prm.links[link];
        let port = if back { c.ports[l.port.idx()].reverse } else { l.port };
        let pt = &c.ports[port.idx()];
        let mut f = Packet::new(PktKind::Frame, FlowSlot(0), 0, pt.node, pt.peer);
        f.size = self.prm.frame_bytes;
        f.aux = LG_FRAME;
        let id = c.make(f);
        let w = if back { &mut self.links[link].back } else { &mut self.links[link].fwd };
        w.pending.push((id, tag));
        c.effect(Effect::Frame { port, id });
    }

    /// A port with no frame waiting and nothing it may send queued (empty, or every class paused by Alg. 6):
    /// the literal model's lowest-priority ACK or dummy queue would be served now.
    fn idle(c: &HookCtx, port: PortId) -> bool {
        let pt = &c.ports[port.idx()];
        pt.ctl.is_empty() && (pt.bytes == 0 || pt.paused == 0xff)
    }

    // ------------------------------------------------------------------ recirculation

    /// Put a packet in loop `r`: the loop's queue with it, or without it if the loop has no room (the caller
    /// drops it).
    fn recirculate(&mut self, c: &mut HookCtx, r: usize, id: PktId, what: Looping) -> Result<u64, u64> {
        let bytes = c.packet(id).size as u64;
        let rate = self.prm.recirc_rate;
        let lp = &mut self.loops[r];
        let depth = lp.depth(c.now, rate);
        if depth + bytes > self.prm.recirc_buffer {
            return Err(depth);
        }
        let start = lp.busy_until.max(c.now);
        lp.busy_until = start + rate.tx_time(bytes);
        lp.q.push_back((lp.busy_until + self.prm.recirc_latency, id, what));
        lp.bytes += bytes;
        lp.max_bytes = lp.max_bytes.max(lp.bytes);
        lp.max_depth = lp.max_depth.max(depth + bytes);
        self.arm(c, r);
        Ok(depth + bytes)
    }

    fn arm(&mut self, c: &mut HookCtx, r: usize) {
        let lp = &mut self.loops[r];
        if let Some(&(at, _, _)) = lp.q.front() {
            if lp.armed != Some(at) {
                lp.armed = Some(at);
                c.timer(at, r as u32);
            }
        }
    }

    /// Packets whose pass is over, in order.
    fn on_loop(&mut self, c: &mut HookCtx, r: usize) {
        if self.loops[r].armed != Some(c.now) {
            return; // superseded
        }
        self.loops[r].armed = None;
        while let Some(&(at, id, what)) = self.loops[r].q.front() {
            if at > c.now {
                break;
            }
            self.loops[r].q.pop_front();
            self.loops[r].bytes -= c.packet(id).size as u64;
            match what {
                Looping::Copy { link, seq } => self.copy_pass(c, link as usize, id, seq),
                Looping::Held { link, seq, retx } => self.held_pass(c, link as usize, id, seq, retx),
            }
        }
        self.arm(c, r);
    }

    // ------------------------------------------------------------------ sender

    /// A copy's pass: resend it if asked for, drop it if delivered, else keep it looping.
    fn copy_pass(&mut self, c: &mut HookCtx, link: usize, id: PktId, seq: Seq) {
        let l = &mut self.links[link];
        let delivered = l.acked.is_some_and(|a| !seq.after(a));
        if !delivered {
            let r = self.prm.links[link].tx_loop;
            if self.recirculate(c, r, id, Looping::Copy { link: link as u16, seq }).is_err() {
                self.drop_copy(c, link, id);
            }
            return;
        }
        let bytes = c.packet(id).size as u64;
        l.tx_bytes -= bytes;
        if !l.retx.get(seq) {
            c.absorb(id);
            return;
        }
        l.retx.set(seq, false);
        let port = self.prm.links[link].port;
        for k in 0..self.prm.copies {
            let rid = if k + 1 == self.prm.copies { id } else { c.copy(id) };
            let l = &mut self.links[link];
            l.stats.resends += 1;
            l.fwd.pending.push((rid, Tag::Data { seq, retx: true }));
            c.effect(Effect::Express { port, id: rid });
        }
    }

    fn drop_copy(&mut self, c: &mut HookCtx, link: usize, id: PktId) {
        let l = &mut self.links[link];
        l.tx_bytes -= c.packet(id).size as u64;
        l.stats.loop_overflow += 1;
        c.absorb(id);
    }

    fn on_ack(&mut self, link: usize, latest: Seq) {
        let l = &mut self.links[link];
        if l.acked.is_none_or(|a| latest.after(a)) {
            l.acked = Some(latest);
        }
    }

    /// A packet left the protected port.
    fn sent(&mut self, c: &mut HookCtx, link: usize, id: PktId) {
        let l = &mut self.links[link];
        let tag = match l.fwd.take_pending(id) {
            Some(t) => t,
            None if c.packet(id).kind.is_link_local() => Tag::Plain,
            None => {
                let seq = l.next;
                l.next = seq.next();
                l.stats.protected += 1;
                l.dummy_budget = self.prm.dummies;
                let copy = c.copy(id);
                let bytes = c.packet(copy).size as u64;
                l.tx_bytes += bytes;
                l.stats.max_tx_held = l.stats.max_tx_held.max(l.tx_bytes);
                let r = self.prm.links[link].tx_loop;
                let queued = self.recirculate(c, r, copy, Looping::Copy { link: link as u16, seq });
                let (Ok(depth) | Err(depth)) = queued;
                let st = &mut self.links[link].stats;
                st.max_tx_queue = st.max_tx_queue.max(depth);
                if queued.is_err() {
                    self.drop_copy(c, link, copy);
                }
                let l = &mut self.links[link];
                // A request left over from the number's last era (its copy was lost to a full loop) is void.
                l.retx.set(seq, false);
                Tag::Data { seq, retx: false }
            }
        };
        let l = &mut self.links[link];
        l.fwd.q.push_back((id, tag));
        // Idle now: the dummy queue's turn, while its budget lasts.
        let port = self.prm.links[link].port;
        if l.dummy_budget > 0 && Self::idle(c, port) {
            l.dummy_budget -= 1;
            l.stats.dummies += 1;
            let next = l.next;
            self.frame(c, link, false, Tag::Dummy { next });
        }
    }

    // ------------------------------------------------------------------ receiver

    /// The receiver learnt that every number before `upto` was sent: ask for what is missing.
    fn gap(&mut self, c: &mut HookCtx, link: usize, upto: Seq) {
        let l = &mut self.links[link];
        if !upto.after(l.expected) {
            return;
        }
        let hole = upto.since(l.expected);
        let first = l.expected;
        // Missing numbers are not forwarded yet (this era): their resends must not look like duplicates.
        l.seen.set_run(first, hole, false);
        l.expected = upto;
        l.stats.missing += hole as u64;
        l.stats.notices += 1;
        l.recovery.missed(first, hole, c.now);
        l.stats.unrequested += hole.saturating_sub(self.prm.max_holes) as u64;
        // `latestRxSeqNo` covers what is reported missing too: the sender resends only numbers at or below it.
        let latest = upto.prev();
        if l.latest.is_none_or(|x| latest.after(x)) {
            l.latest = Some(latest);
        }
        l.pending_ack = false; // the notice carries it
        self.frame(c, link, true, Tag::Notice { first, hole: hole.min(self.prm.max_holes), latest });
    }

    fn data_arrived(&mut self, c: &mut HookCtx, link: usize, id: PktId, seq: Seq, retx: bool) -> Arrive {
        if retx {
            self.links[link].recovery.arrived(seq, c.now);
        } else {
            self.gap(c, link, seq);
            let l = &mut self.links[link];
            l.expected = seq.next();
            l.latest = Some(seq);
            l.pending_ack = true;
            let back = c.ports[self.prm.links[link].port.idx()].reverse;
            // Literal: once started, the ACK queue keeps the port busy and refills itself (on_transmit).
            if Self::idle(c, back) && !(self.prm.literal && c.ports[back.idx()].transmitting(c.now)) {
                self.send_ack(c, link);
            }
        }
        let l = &mut self.links[link];
        if !self.prm.ordered {
            if retx && l.seen.get(seq) {
                l.stats.duplicates += 1;
                c.absorb(id);
                return Arrive::Consumed;
            }
            l.seen.set(seq, true);
            l.stats.delivered += 1;
            l.stats.recovered += retx as u64;
            return Arrive::Pass;
        }
        if seq == l.ack_no {
            self.forwarded(c, link, retx);
            return Arrive::Pass;
        }
        if !seq.after(l.ack_no) {
            l.stats.duplicates += 1;
            c.absorb(id);
            return Arrive::Consumed;
        }
        // Wait for the missing ones in the receiver's loop.
        let r = self.prm.links[link].rx_loop;
        if self.recirculate(c, r, id, Looping::Held { link: link as u16, seq, retx }).is_err() {
            self.links[link].stats.loop_overflow += 1;
            return Arrive::Drop(DropReason::Mechanism);
        }
        let l = &mut self.links[link];
        l.stats.held += 1;
        l.held += 1;
        l.rx_bytes += c.packet(id).size as u64;
        l.stats.max_rx_held = l.stats.max_rx_held.max(l.rx_bytes);
        if l.stall.is_none() {
            self.start_countdown(c, link);
        }
        self.backpressure(c, link);
        Arrive::Held
    }

    /// `ack_no` goes out (ordered mode): move on, restart the countdown if others still wait.
    fn forwarded(&mut self, c: &mut HookCtx, link: usize, retx: bool) {
        let l = &mut self.links[link];
        l.ack_no = l.ack_no.next();
        l.stats.delivered += 1;
        l.stats.recovered += retx as u64;
        l.stall = None;
        if l.held > 0 {
            self.start_countdown(c, link);
        }
    }

    /// The countdown for `ack_no`: ticks of `tick`; it runs out after `ack_timeout` worth of them.
    fn start_countdown(&mut self, c: &mut HookCtx, link: usize) {
        let tick = self.prm.tick.0;
        let ticks = self.prm.links[link].ack_timeout.0.div_ceil(tick);
        let at = Time((c.now.0 / tick + ticks) * tick);
        self.links[link].stall = Some(at);
        c.timer(at, STALL | link as u32);
    }

    fn on_stall(&mut self, c: &mut HookCtx, link: usize) {
        let l = &mut self.links[link];
        if l.stall != Some(c.now) {
            return;
        }
        l.stall = None;
        if l.held == 0 {
            return;
        }
        // Give the missing packet up; the held ones go out on their next pass.
        l.ack_no = l.ack_no.next();
        l.stats.gave_up += 1;
        self.start_countdown(c, link);
    }

    /// A held packet's pass: out if its turn has come, else round again.
    fn held_pass(&mut self, c: &mut HookCtx, link: usize, id: PktId, seq: Seq, retx: bool) {
        let port = self.prm.links[link].port;
        let l = &mut self.links[link];
        if seq.after(l.ack_no) {
            let r = self.prm.links[link].rx_loop;
            if self.recirculate(c, r, id, Looping::Held { link: link as u16, seq, retx }).is_err() {
                let l = &mut self.links[link];
                l.held -= 1;
                l.rx_bytes -= c.packet(id).size as u64;
                l.stats.loop_overflow += 1;
                c.effect(Effect::Drop { port, id, why: DropReason::Mechanism });
            }
            self.backpressure(c, link);
            return;
        }
        l.held -= 1;
        l.rx_bytes -= c.packet(id).size as u64;
        if seq == l.ack_no {
            self.forwarded(c, link, retx);
            c.effect(Effect::Deliver { port, id });
        } else {
            // Below ack_no: an extra copy of a resend that was held beside the first, or a packet whose turn
            // was given up while it waited. Either way not forwarded (Alg. 5's de-duplication).
            l.stats.duplicates += 1;
            c.absorb(id);
        }
        self.backpressure(c, link);
    }

    /// Alg. 6: pause S's ordinary traffic while the receiver's loop is deep.
    fn backpressure(&mut self, c: &mut HookCtx, link: usize) {
        let p = &self.prm.links[link];
        let depth = self.loops[p.rx_loop].depth(c.now, self.prm.recirc_rate);
        let l = &mut self.links[link];
        l.stats.max_rx_queue = l.stats.max_rx_queue.max(depth);
        if !self.prm.backpressure {
            return;
        }
        if !l.paused && depth >= p.pause {
            l.paused = true;
            l.stats.pauses += 1;
            self.frame(c, link, true, Tag::Pfc(true));
        } else if l.paused && depth <= p.resume {
            l.paused = false;
            l.stats.resumes += 1;
            self.frame(c, link, true, Tag::Pfc(false));
        }
    }

    /// Alg. 6 pauses every class of the protected port (resends and LG frames are never paused).
    fn pfc_effect(&self, c: &mut HookCtx, link: usize, pause: bool) {
        let port = self.prm.links[link].port;
        c.effect(if pause { Effect::Pause { port, classes: 0xff } } else { Effect::Resume { port, classes: 0xff } });
    }

    fn send_ack(&mut self, c: &mut HookCtx, link: usize) {
        let l = &mut self.links[link];
        let Some(latest) = l.latest else { return };
        l.pending_ack = false;
        l.stats.ack_frames += 1;
        self.frame(c, link, true, Tag::Ack { latest });
    }
}

impl Recirc {
    /// Bytes queued in the port (not yet drained), from its drain schedule.
    fn depth(&self, now: Time, rate: BitsPerSec) -> u64 {
        rate.bytes_in(self.busy_until.saturating_sub(now))
    }
}

impl Hooks for LinkGuardian {
    const NAME: &'static str = "linkguardian";
    const HOOKS: HookSet =
        HookSet::ADMIT.with(HookSet::DEQUEUE).with(HookSet::TRANSMIT).with(HookSet::ARRIVE).with(HookSet::DROP);

    /// The 3-byte header: a sequence number forward, the ACK back.
    fn on_admit(&mut self, c: &mut HookCtx, at: PortId, id: PktId) -> Admit {
        if self.role[at.idx()] != Role::None {
            c.pk.get_mut(id).size += HEADER;
        }
        Admit::Queue
    }

    /// A packet going back starts serialization: its header takes the receiver's latest number now.
    fn on_dequeue(&mut self, _c: &mut HookCtx, at: PortId, id: PktId) {
        if let Role::Back(k) = self.role[at.idx()] {
            let l = &mut self.links[k as usize];
            l.stamp = Some((id, l.latest));
            l.pending_ack = false;
        }
    }

    fn on_transmit(&mut self, c: &mut HookCtx, at: PortId, id: PktId) {
        match self.role[at.idx()] {
            Role::None => {}
            Role::Fwd(k) => self.sent(c, k as usize, id),
            Role::Back(k) => {
                let link = k as usize;
                let l = &mut self.links[link];
                let tag = match l.back.take_pending(id) {
                    Some(t) => t,
                    None => match l.stamp.take() {
                        Some((s, latest)) if s == id => Tag::Piggy { latest },
                        // Not through the queue (another mechanism's frame): no LG header.
                        _ => Tag::Plain,
                    },
                };
                l.back.q.push_back((id, tag));
                if (l.pending_ack || self.prm.literal) && Self::idle(c, at) {
                    self.send_ack(c, link);
                }
            }
        }
    }

    fn on_arrive(&mut self, c: &mut HookCtx, at: PortId, id: PktId) -> Arrive {
        match self.role[at.idx()] {
            Role::None => Arrive::Pass,
            Role::Fwd(k) => {
                let link = k as usize;
                match self.links[link].fwd.pop(id) {
                    Tag::Plain => Arrive::Pass,
                    Tag::Data { seq, retx } => {
                        c.pk.get_mut(id).size -= HEADER;
                        self.data_arrived(c, link, id, seq, retx)
                    }
                    Tag::Dummy { next } => {
                        c.absorb(id);
                        self.gap(c, link, next);
                        Arrive::Consumed
                    }
                    t => unreachable!("{t:?} sent forward"),
                }
            }
            Role::Back(k) => {
                let link = k as usize;
                let tag = self.links[link].back.pop(id);
                match tag {
                    Tag::Plain => return Arrive::Pass,
                    Tag::Piggy { latest } => {
                        c.pk.get_mut(id).size -= HEADER;
                        if let Some(latest) = latest {
                            self.links[link].stats.piggybacked += 1;
                            self.on_ack(link, latest);
                        }
                        return Arrive::Pass;
                    }
                    Tag::Ack { latest } => self.on_ack(link, latest),
                    Tag::Notice { first, hole, latest } => {
                        self.links[link].retx.set_run(first, hole, true);
                        self.on_ack(link, latest);
                    }
                    Tag::Pfc(pause) => {
                        let response = self.prm.links[link].pfc_response;
                        if response == Time::ZERO {
                            self.pfc_effect(c, link, pause);
                        } else {
                            // The sender's MAC acts after its response time; one link's frames keep their
                            // order (the same response for each, ties fire in the order they were set).
                            c.timer(c.now + response, PFC | (link as u32) << 1 | pause as u32);
                        }
                    }
                    t => unreachable!("{t:?} sent back"),
                }
                c.absorb(id);
                Arrive::Consumed
            }
        }
    }

    /// A corrupted frame: its entry on the wire goes unread.
    fn on_drop(&mut self, _c: &mut HookCtx, at: PortId, id: PktId, why: DropReason) {
        if why != DropReason::Corrupt {
            return;
        }
        match self.role[at.idx()] {
            Role::None => {}
            Role::Fwd(k) => {
                self.links[k as usize].fwd.pop(id);
            }
            Role::Back(k) => {
                self.links[k as usize].back.pop(id);
            }
        }
    }

    fn on_timer(&mut self, c: &mut HookCtx, key: u32) {
        if key & STALL != 0 {
            self.on_stall(c, (key & !STALL) as usize);
        } else if key & PFC != 0 {
            self.pfc_effect(c, ((key & !PFC) >> 1) as usize, key & 1 != 0);
        } else {
            self.on_loop(c, key as usize);
        }
    }

    // Split between the parts of a parallel run: each end of a protected link keeps its own state (the
    // `Link` record holds both, each read only by its end) and its switch's recirculation loop; what a frame
    // says crosses with it (`hand_out`, `take_in`); each timer acts at one end.
    fn parallel_refusal(&self) -> Option<&'static str> {
        None
    }

    fn timer_node(&self, ports: &[Port], key: u32) -> Option<NodeId> {
        Some(self.timer_at(ports, key))
    }

    fn take_part(&mut self, other: &mut LinkGuardian, ports: &[Port], theirs: &dyn Fn(NodeId) -> bool) {
        self.take_ends(other, ports, theirs);
    }

    fn hand_out(&mut self, at: PortId, id: PktId) -> u64 {
        self.wire_of(at).map_or(0, |w| w.pop(id).pack())
    }

    fn take_in(&mut self, at: PortId, id: PktId, word: u64) {
        if let Some(w) = self.wire_of(at) {
            w.q.push_back((id, Tag::unpack(word)));
        }
    }

    fn held(&self, f: &mut dyn FnMut(PktId)) {
        // Frames and resends not yet transmitted are in a port's queue or the outbox, counted there.
        for lp in &self.loops {
            for &(_, id, _) in &lp.q {
                f(id);
            }
        }
    }

    fn summary(&self) -> serde_json::Value {
        let links: Vec<_> = self
            .links
            .iter()
            .map(|l| {
                let mut v = serde_json::to_value(l.stats).expect("counters serialize");
                v["recovery"] = l.recovery.summary();
                v
            })
            .collect();
        let loops: Vec<_> = self
            .loops
            .iter()
            .map(|r| serde_json::json!({ "max_held": r.max_bytes, "max_queue": r.max_depth }))
            .collect();
        serde_json::json!({ "links": links, "loops": loops })
    }
}
