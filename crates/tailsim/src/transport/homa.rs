//! Homa (Montazeri et al., SIGCOMM 2018; Montazeri's thesis, 2019): a receiver-driven message transport.
//!
//! - A sender transmits the first RTTbytes of every message at once ("unscheduled"), each packet carrying the
//!   message length; the rest waits for GRANTs from the receiver.
//! - A receiver grants in SRPT order (fewest bytes still to receive first), to at most `overcommit` messages
//!   at once, keeping RTTbytes granted-but-not-received per message: one grant per data packet received
//!   (packet clocking).
//! - Receivers choose every priority: unscheduled packets use the top levels by the message's remaining size
//!   (cutoffs from the workload, §3.5.2 "graduated"); granted messages use the lowest scheduled levels,
//!   the shortest highest (§3.5.3); control packets use the top level.
//! - Senders send in SRPT order and, with the pacer, hand the NIC a packet only when the previous one has
//!   been serialized, so the NIC queue never delays a more urgent packet (§3.6).
//! - Losses (which the thesis's simulations never had: unlimited buffers) are recovered by RESEND after a
//!   receiver timeout; BUSY tells a receiver that the sender has the message but is sending others first.
//!
//! One record per message holds both ends' state (each end reads only its own fields); packets name the
//! message by slot and generation, so a late packet of a finished message is recognised and dropped.
//! Each end has a life of its own (`split.rs`), so a parallel run can run each in its host's part: the
//! receiver's ends when it holds every byte. Without losses (no `resend_timeout`) the sender's ends at its
//! last send (only GRANTs, which it no longer needs, can follow). With losses it must answer RESENDs until
//! the receiver has everything, which only the receiver knows: the receiver's completion reaches it as a
//! message between the hosts (`TimerKind::PeerClosed`, the path's propagation delay later), and its half
//! ends there. Docs: docs/homa.md.

use super::split::{Ends, Halves, Split};
use super::{packet_count, payload_of, track_slot, Ctx, FlowEvent, FlowSpec, Steer, Timer};
use crate::engine::{Slab, TimerKind};
use crate::net::packet::{Packet, PktKind};
use crate::units::{FlowSlot, NodeId, PktId, Time};

/// Priority classes: 0 is the highest of the 8 (Homa's P7).
pub const LEVELS: u8 = 8;

#[derive(Clone, Debug)]
pub struct HomaConfig {
    /// Payload bytes of a full data packet (1442 B: 1500 B IP packet − IP, UDP and Homa headers).
    pub payload: u32,
    /// Bytes of a data packet besides its payload, as buffers count them (Ethernet 18, IP 20, UDP 8, Homa 30).
    pub header: u32,
    /// Size of GRANT, RESEND and BUSY packets in buffers (a minimum Ethernet frame, 64 B).
    pub ctrl_size: u32,
    /// Bytes per packet that take wire time but no buffer space (preamble and gap), for the pacer.
    pub wire_overhead: u32,
    /// Bytes a message sends unscheduled, and the granted-but-not-received bytes kept per active message.
    pub rtt_bytes: u64,
    /// Unscheduled levels: `cutoffs[i]` is the largest remaining message size sent at class i; classes
    /// `cutoffs.len()..8` are the scheduled levels.
    pub cutoffs: Vec<u64>,
    /// Messages a receiver grants to at once (controlled overcommitment); at most the scheduled levels.
    pub overcommit: u8,
    /// Hand the NIC one packet at a time (off: every sendable packet goes to the NIC queue at once).
    pub pacer: bool,
    /// Grants for a message's last RTTbytes use the unscheduled cutoff level when that is higher (§4.3.3).
    pub tail_boost: bool,
    /// Receiver: RESEND after this long without a packet of an incomplete message (None: never).
    pub resend_timeout: Option<Time>,
}

impl HomaConfig {
    fn sched_levels(&self) -> u8 {
        LEVELS - self.cutoffs.len() as u8
    }
    /// The unscheduled class of a packet whose message has `remaining` bytes left from it.
    fn unsched_class(&self, remaining: u64) -> u8 {
        (self.cutoffs.partition_point(|&c| c < remaining) as u8).min(self.cutoffs.len() as u8 - 1)
    }
}

struct Msg {
    id: u64,
    src: NodeId,
    dst: NodeId,
    size: u64,
    npkts: u32,
    /// Packets sent without a grant.
    unsched: u32,
    steer: Steer,
    // --- sender ---
    /// Packets the sender may send (unscheduled + granted).
    granted: u32,
    /// Class for scheduled packets, from the latest grant.
    grant_class: u8,
    /// Next packet never sent.
    next: u32,
    /// A range the receiver asked to be resent [a, b).
    resend: (u32, u32),
    in_out: bool,
    retransmits: u32,
    /// Which halves are open here.
    ends: Ends,
    // --- receiver ---
    got: Vec<bool>,
    got_pkts: u32,
    got_bytes: u64,
    /// Packets the receiver has allowed (unscheduled + granted).
    rcv_granted: u32,
    in_inc: bool,
    seen: bool,
    resend_timer: Timer,
    timeouts: u32,
}

impl Msg {
    fn sendable(&self) -> bool {
        self.resend.0 < self.resend.1 || self.next < self.granted
    }
    /// Bytes the sender has not sent yet (its SRPT key).
    fn unsent(&self, full: u32) -> u64 {
        self.size.saturating_sub(self.next as u64 * full as u64)
    }
}

#[derive(Default)]
struct HostState {
    /// Messages with packets the sender may send now.
    out: Vec<FlowSlot>,
    /// Incoming messages that still need grants.
    inc: Vec<FlowSlot>,
    /// Pacer: when the NIC will have serialized everything handed to it.
    nic_free: Time,
    pacer_timer: Timer,
}

/// Counters for tests and reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct HomaStats {
    pub grants: u64,
    pub resends: u64,
    pub busy: u64,
    /// The most packets any receiver had granted but not received for one message, right after a grant.
    pub max_outstanding_pkts: u32,
    /// The most messages one receiver granted to in a single scheduling pass, not counting a message's
    /// final grant (after which the next message takes its place).
    pub max_granted_at_once: u32,
    /// The most incoming messages one receiver had with grants outstanding beyond their unscheduled bytes
    /// (not yet fully granted). Overcommitment raises it to k; with k = 1 a preempted message's packets
    /// still in flight can make it 2.
    pub max_active: u32,
}

/// The Homa transport: all messages' and hosts' state.
pub struct Homa {
    cfg: HomaConfig,
    msgs: Slab<Msg>,
    gens: Vec<u32>,
    hosts: Vec<HostState>,
    split: Split,
    pub stats: HomaStats,
}

impl Homa {
    pub fn new(cfg: HomaConfig, hosts: usize) -> Homa {
        assert!(!cfg.cutoffs.is_empty() && cfg.cutoffs.len() < LEVELS as usize, "1–7 unscheduled levels");
        assert!((1..=cfg.sched_levels()).contains(&cfg.overcommit), "overcommit within the scheduled levels");
        let hosts = (0..hosts).map(|_| HostState::default()).collect();
        Homa {
            cfg,
            msgs: Slab::default(),
            gens: Vec::new(),
            hosts,
            split: Split::default(),
            stats: HomaStats::default(),
        }
    }

    /// Messages not yet received.
    pub fn active(&self) -> usize {
        self.split.receiving
    }

    /// The sender's half ends at its last send (without losses; see the module's comment), else when word of
    /// the receiver's completion reaches it.
    fn ends_at_last_send(&self) -> bool {
        self.cfg.resend_timeout.is_none()
    }

    /// Another part's counters, added to this one's (the merge at the end of a parallel run): sums, and the
    /// largest of the maxima.
    pub fn add_part(&mut self, other: &Homa) {
        self.split.receiving += other.split.receiving;
        let (a, b) = (&mut self.stats, &other.stats);
        a.grants += b.grants;
        a.resends += b.resends;
        a.busy += b.busy;
        a.max_outstanding_pkts = a.max_outstanding_pkts.max(b.max_outstanding_pkts);
        a.max_granted_at_once = a.max_granted_at_once.max(b.max_granted_at_once);
        a.max_active = a.max_active.max(b.max_active);
    }

    pub fn config(&self) -> &HomaConfig {
        &self.cfg
    }

    fn rtt_pkts(&self) -> u32 {
        (self.cfg.rtt_bytes.div_ceil(self.cfg.payload as u64) as u32).max(1)
    }

    /// Make message `f`'s record, its halves at this run's hosts open, without sending
    /// (`Transport::open_flow`).
    pub fn open_flow(&mut self, f: &FlowSpec) -> FlowSlot {
        let full = self.cfg.payload as u64;
        let npkts = packet_count(f.size, self.cfg.payload);
        let unsched = (self.cfg.rtt_bytes.min(f.size).div_ceil(full) as u32).clamp(1, npkts);
        let ends = self.split.open(f.src, f.dst);
        let m = Msg {
            id: f.id,
            src: f.src,
            dst: f.dst,
            size: f.size,
            npkts,
            unsched,
            steer: f.steer(),
            granted: unsched,
            grant_class: LEVELS - 1,
            next: 0,
            resend: (0, 0),
            in_out: false,
            retransmits: 0,
            ends,
            got: if ends.rcv { vec![false; npkts as usize] } else { Vec::new() },
            got_pkts: 0,
            got_bytes: 0,
            rcv_granted: unsched,
            in_inc: false,
            seen: false,
            resend_timer: Timer::default(),
            timeouts: 0,
        };
        let slot = FlowSlot(self.msgs.insert(m));
        track_slot(&mut self.gens, slot);
        slot
    }

    /// Start the sender of the message in `slot`.
    pub fn begin_flow(&mut self, ctx: &mut Ctx, slot: FlowSlot) {
        let m = self.msgs.get(slot.0);
        if m.ends.snd {
            let src = m.src;
            self.enqueue_out(slot);
            self.pump(ctx, src);
        }
    }

    pub fn on_packet(&mut self, ctx: &mut Ctx, host: NodeId, id: PktId) {
        let p = *ctx.pk.get(id);
        ctx.pk.consume(id);
        if self.gens.get(p.flow.idx()) != Some(&p.flow_gen) {
            return; // a late packet of a finished message
        }
        let ends = self.msgs.get(p.flow.0).ends;
        if !(if matches!(p.kind, PktKind::Data | PktKind::Busy) { ends.rcv } else { ends.snd }) {
            return; // a late packet for a half already closed (a GRANT after the last send)
        }
        match p.kind {
            PktKind::Data => self.on_data(ctx, host, p),
            PktKind::Grant => {
                let m = self.msgs.get_mut(p.flow.0);
                if p.seq > m.granted {
                    m.granted = p.seq.min(m.npkts);
                }
                m.grant_class = p.aux as u8;
                self.enqueue_out(p.flow);
                self.pump(ctx, host);
            }
            PktKind::Resend => self.on_resend(ctx, host, p),
            PktKind::Busy => {
                // The sender has the message and will get to it: the receiver keeps waiting.
                if let Some(to) = self.cfg.resend_timeout {
                    let m = self.msgs.get_mut(p.flow.0);
                    m.resend_timer.set(ctx, ctx.now + to, p.flow, p.flow_gen, TimerKind::Resend);
                }
            }
            other => unreachable!("{other:?} is not a Homa packet"),
        }
    }

    /// The host a message timer acts at (the handover check, sim/handover.rs): the resend timer the
    /// receiver's, word of the receiver's completion the sender's (None once that half is closed: it does
    /// nothing).
    pub fn timer_node(&self, slot: FlowSlot, gen: u32, kind: TimerKind) -> Option<NodeId> {
        if self.gens.get(slot.idx()) != Some(&gen) {
            return None; // its flow is gone: the timer does nothing
        }
        let m = self.msgs.try_get(slot.0)?;
        if kind == TimerKind::PeerClosed {
            return m.ends.snd.then_some(m.src);
        }
        m.ends.rcv.then_some(m.dst)
    }
    pub fn on_timer(&mut self, ctx: &mut Ctx, slot: FlowSlot, gen: u32, kind: TimerKind) {
        match kind {
            TimerKind::Pacer => {
                let h = NodeId(slot.0);
                if self.hosts[h.idx()].pacer_timer.fire(ctx, slot, gen, kind) {
                    self.pump(ctx, h);
                }
            }
            TimerKind::Resend => {
                if self.gens.get(slot.idx()) != Some(&gen) || !self.msgs.get(slot.0).ends.rcv {
                    return;
                }
                let m = self.msgs.get_mut(slot.0);
                if m.resend_timer.fire(ctx, slot, gen, kind) {
                    self.on_resend_timeout(ctx, slot, gen);
                }
            }
            TimerKind::PeerClosed => {
                if self.gens.get(slot.idx()) == Some(&gen) && self.msgs.get(slot.0).ends.snd {
                    self.sender_done(ctx, slot);
                }
            }
            TimerKind::Retransmit | TimerKind::DelayedAck | TimerKind::RxPacer => unreachable!("not Homa's timers"),
        }
    }

    // ------------------------------------------------------------------ sender

    fn enqueue_out(&mut self, slot: FlowSlot) {
        let m = self.msgs.get_mut(slot.0);
        if !m.in_out && m.sendable() {
            m.in_out = true;
            let src = m.src;
            self.hosts[src.idx()].out.push(slot);
        }
    }

    /// Send from host `h` in SRPT order: with the pacer one packet whenever the NIC is idle, else all.
    fn pump(&mut self, ctx: &mut Ctx, h: NodeId) {
        let full = self.cfg.payload;
        loop {
            let hs = &mut self.hosts[h.idx()];
            if self.cfg.pacer && ctx.now < hs.nic_free {
                let at = hs.nic_free;
                hs.pacer_timer.set(ctx, at, FlowSlot(h.0), 0, TimerKind::Pacer);
                return;
            }
            // The message with the fewest unsent bytes (ties: the older message).
            let msgs = &self.msgs;
            let Some(pos) = (0..hs.out.len()).min_by_key(|&i| {
                let m = msgs.get(hs.out[i].0);
                (m.unsent(full), m.id)
            }) else {
                return;
            };
            let slot = hs.out[pos];
            let gen = self.gens[slot.idx()];
            let m = self.msgs.get_mut(slot.0);
            let i = if m.resend.0 < m.resend.1 {
                m.resend.0 += 1;
                m.retransmits += 1;
                m.resend.0 - 1
            } else {
                m.next += 1;
                m.next - 1
            };
            if !m.sendable() {
                m.in_out = false;
                self.hosts[h.idx()].out.swap_remove(pos);
            }
            let m = self.msgs.get(slot.0);
            let payload = payload_of(m.size, m.npkts, i, full);
            let remaining = m.size - i as u64 * full as u64;
            let class = if i < m.unsched { self.cfg.unsched_class(remaining) } else { m.grant_class };
            let mut p = Packet::new(PktKind::Data, slot, gen, m.src, m.dst);
            p.payload = payload;
            p.size = payload + self.cfg.header;
            p.seq = i;
            p.aux = m.size as u32;
            p.class = class;
            p.ts = ctx.now;
            m.steer.apply(&mut p);
            let done = m.next == m.npkts && m.resend.0 >= m.resend.1 && self.ends_at_last_send();
            let (id, retransmits) = (m.id, m.retransmits);
            self.send(ctx, h, p);
            if done {
                // The last packet is sent: without losses the sender has nothing more to do.
                ctx.report(FlowEvent::Closed { id, retransmits, timeouts: 0 });
                self.close_half(slot, true);
            }
            if !self.cfg.pacer {
                continue;
            }
        }
    }

    /// Hand a packet to host `h`'s NIC, accounting for its serialization in the pacer.
    fn send(&mut self, ctx: &mut Ctx, h: NodeId, p: Packet) {
        ctx.send_paced(h, p, &mut self.hosts[h.idx()].nic_free, self.cfg.wire_overhead);
    }

    fn on_resend(&mut self, ctx: &mut Ctx, host: NodeId, p: Packet) {
        let slot = p.flow;
        let full = self.cfg.payload;
        let m = self.msgs.get_mut(slot.0);
        let (a, b) = (p.seq, (p.seq + p.aux).min(m.next));
        if a < b {
            m.resend = (a, b);
        }
        self.enqueue_out(slot);
        // BUSY when other messages go first, so the receiver does not time out again meanwhile.
        let hs = &self.hosts[host.idx()];
        let mine = self.msgs.get(slot.0).unsent(full);
        if hs.out.iter().any(|&s| s != slot && self.msgs.get(s.0).unsent(full) < mine) {
            let m = self.msgs.get(slot.0);
            let busy = self.ctrl(PktKind::Busy, slot, p.flow_gen, m.src, m.dst);
            self.stats.busy += 1;
            self.send(ctx, host, busy);
        }
        self.pump(ctx, host);
    }

    fn ctrl(&self, kind: PktKind, slot: FlowSlot, gen: u32, from: NodeId, to: NodeId) -> Packet {
        let mut c = Packet::new(kind, slot, gen, from, to);
        c.size = self.cfg.ctrl_size;
        c.class = 0; // control packets travel at the highest priority
        self.msgs.get(slot.0).steer.reverse().apply(&mut c);
        c
    }

    // ------------------------------------------------------------------ receiver

    fn on_data(&mut self, ctx: &mut Ctx, host: NodeId, p: Packet) {
        let slot = p.flow;
        let gen = p.flow_gen;
        let to = self.cfg.resend_timeout;
        let at_last_send = self.ends_at_last_send();
        let m = self.msgs.get_mut(slot.0);
        if m.got[p.seq as usize] {
            return; // a duplicate (a resend that crossed the original)
        }
        m.got[p.seq as usize] = true;
        m.got_pkts += 1;
        m.got_bytes += p.payload as u64;
        if m.got_pkts == m.npkts {
            m.resend_timer.cancel();
            let (id, timeouts, src, path) = (m.id, m.timeouts, m.src, m.steer.path);
            ctx.report(FlowEvent::Received { id, at: ctx.now, timeouts });
            let in_inc = m.in_inc;
            m.in_inc = false;
            m.got = Vec::new();
            if in_inc {
                self.leave_inc(host, slot);
            }
            if !at_last_send {
                // The sender answers RESENDs until word of this reaches it.
                ctx.tell(host, src, path.reverse(), slot, gen, TimerKind::PeerClosed, id);
            }
            self.close_half(slot, false);
            self.grant(ctx, host);
            return;
        }
        if let Some(to) = to {
            m.resend_timer.set(ctx, ctx.now + to, slot, gen, TimerKind::Resend);
        }
        if !m.seen {
            m.seen = true;
            ctx.report(FlowEvent::Heard { id: m.id, at: ctx.now });
            if m.rcv_granted < m.npkts {
                m.in_inc = true;
                self.hosts[host.idx()].inc.push(slot);
            }
        }
        self.grant(ctx, host);
    }

    /// Grant to the `overcommit` incoming messages with the fewest bytes left, up to RTTbytes outstanding
    /// each; the i-th shortest of m active messages gets the i-th of the lowest m scheduled levels.
    fn grant(&mut self, ctx: &mut Ctx, host: NodeId) {
        let rtt_pkts = self.rtt_pkts();
        let full = self.cfg.payload as u64;
        let k = self.cfg.overcommit as usize;
        let inc = &mut self.hosts[host.idx()].inc;
        let msgs = &self.msgs;
        inc.sort_unstable_by_key(|s| {
            let m = msgs.get(s.0);
            (m.size - m.got_bytes, m.id)
        });
        let active = inc.len().min(k);
        let mut i = 0;
        let mut granted_now = 0;
        while i < active.min(self.hosts[host.idx()].inc.len()) {
            let slot = self.hosts[host.idx()].inc[i];
            let class = LEVELS - active as u8 + i as u8;
            let m = self.msgs.get_mut(slot.0);
            let target = (m.got_pkts + rtt_pkts).min(m.npkts);
            if target <= m.rcv_granted {
                i += 1;
                continue;
            }
            m.rcv_granted = target;
            self.stats.grants += 1;
            granted_now += (target < m.npkts) as u32;
            self.stats.max_outstanding_pkts = self.stats.max_outstanding_pkts.max(target - m.got_pkts);
            let mut prio = class;
            if self.cfg.tail_boost {
                let left = m.size.saturating_sub((target as u64 - 1) * full);
                if left < self.cfg.rtt_bytes {
                    prio = prio.min(self.cfg.unsched_class(left));
                }
            }
            let fully = target == m.npkts;
            let (src, dst, gen) = (m.src, m.dst, self.gens[slot.idx()]);
            let mut g = self.ctrl(PktKind::Grant, slot, gen, dst, src);
            g.seq = target;
            g.aux = prio as u32;
            self.send(ctx, host, g);
            let inc = &mut self.hosts[host.idx()].inc;
            if fully {
                self.msgs.get_mut(slot.0).in_inc = false;
                inc.remove(i); // keep the SRPT order for the rest
            } else {
                i += 1;
            }
        }
        self.stats.max_granted_at_once = self.stats.max_granted_at_once.max(granted_now);
        let msgs = &self.msgs;
        let active_now = self.hosts[host.idx()]
            .inc
            .iter()
            .filter(|s| {
                let m = msgs.get(s.0);
                m.rcv_granted > m.unsched && m.rcv_granted > m.got_pkts
            })
            .count() as u32;
        self.stats.max_active = self.stats.max_active.max(active_now);
    }

    fn on_resend_timeout(&mut self, ctx: &mut Ctx, slot: FlowSlot, gen: u32) {
        let Some(to) = self.cfg.resend_timeout else { return };
        let m = self.msgs.get_mut(slot.0);
        m.timeouts += 1;
        // The first packet the receiver allowed but has not got; nothing if it is waiting for its own grants.
        let first = (0..m.rcv_granted).find(|&i| !m.got[i as usize]);
        let Some(a) = first else {
            return; // the receiver is holding its own grants back: nothing is missing
        };
        m.resend_timer.set(ctx, ctx.now + to, slot, gen, TimerKind::Resend);
        let b = (a..m.rcv_granted).find(|&i| m.got[i as usize]).unwrap_or(m.rcv_granted);
        let (src, dst) = (m.src, m.dst);
        let mut r = self.ctrl(PktKind::Resend, slot, gen, dst, src);
        r.seq = a;
        r.aux = b - a;
        self.stats.resends += 1;
        self.send(ctx, dst, r);
    }

    /// Word of the receiver's completion reached the sender (with losses possible): it has nothing left
    /// worth sending.
    fn sender_done(&mut self, ctx: &mut Ctx, slot: FlowSlot) {
        let m = self.msgs.get_mut(slot.0);
        let (id, retransmits, src, in_out) = (m.id, m.retransmits, m.src, m.in_out);
        m.in_out = false;
        if in_out {
            let out = &mut self.hosts[src.idx()].out;
            if let Some(i) = out.iter().position(|&s| s == slot) {
                out.swap_remove(i);
            }
        }
        ctx.report(FlowEvent::Closed { id, retransmits, timeouts: 0 });
        self.close_half(slot, true);
    }

    /// Take a message out of its receiver's incoming list, keeping the SRPT order of the rest.
    fn leave_inc(&mut self, dst: NodeId, slot: FlowSlot) {
        let inc = &mut self.hosts[dst.idx()].inc;
        if let Some(i) = inc.iter().position(|&s| s == slot) {
            inc.remove(i);
        }
    }
}

impl Halves for Homa {
    fn split_mut(&mut self) -> &mut Split {
        &mut self.split
    }
    fn ends_mut(&mut self, slot: u32) -> &mut Ends {
        &mut self.msgs.get_mut(slot).ends
    }
    fn free(&mut self, slot: FlowSlot) {
        self.gens[slot.idx()] += 1;
        self.msgs.get_mut(slot.0).got = Vec::new();
        self.msgs.remove(slot.0);
    }
}
