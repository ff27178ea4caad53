//! NDP (Handley et al., SIGCOMM 2017), as the Homa thesis ran it (§6.1): a receiver-pulled transport over
//! switches that trim instead of dropping.
//!
//! - A sender transmits a message's first window (RTTbytes, one BDP) at once, at line rate, and nothing more
//!   until the receiver pulls. NDP senders do not prioritise among their messages: by default the NIC serves
//!   them in turn (`host.nic_scheduler`, net/nic_queue.rs).
//! - The receiver answers every arrival of a message — a data packet with an ACK, a trimmed header with a
//!   NACK — and, while the message still needs packets from its sender, queues one PULL for it. A receiver's
//!   pulls leave one per full-packet time at its link rate, one message's at a time in turn (fair sharing,
//!   not SRPT; htsim's `FairPullQueue`), so the data they release arrive at the downlink's rate.
//! - A PULL releases one packet: a NACKed one first, else the next new one. A pull the pacer would send at
//!   once (none queued, a full-packet time since the last) rides on the ACK or NACK that prompts it, as in
//!   htsim (`transport.pull_on_ack`): a packet fewer for the network to carry, and the pull leaves when a
//!   PULL would have, with its ACK.
//! - Switches with an 8-packet data queue cut an arriving data packet that does not fit to its header and
//!   forward the header at the top priority (`Network::enqueue`, `switch.trim`): the receiver learns of the
//!   loss about one RTT after it happened and pulls the packet again.
//! - Control packets (PULL, ACK, NACK) and trimmed headers use class 0, data class `data_class`.
//! - Packets lost outright (a full header queue, a link going down) are recovered by a receiver timeout that
//!   NACKs the first missing packet and pulls once (NDP's sender RTO does the same job; off when nothing can
//!   be lost); a message whose first window was lost whole, of which the receiver knows nothing, by the
//!   sender's own timeout, which sends that window again unless something came back (an ACK, NACK or PULL).
//!   Each end's timer acts at its own host: a parallel run handles each end in its host's part
//!   (docs/parallel.md).
//!
//! One record per message holds both ends' state, as in `homa.rs`, but each end reads and writes only its
//! own half and each half has a life of its own (`split.rs`): the receiver's ends when it holds every
//! packet (`Received`), the sender's when every packet is acknowledged (`Closed`; every packet arriving
//! whole is acknowledged once). Packets reaching a closed half are dropped, as a real host drops those of a
//! connection it has closed. Docs: docs/ndp.md.

use std::collections::VecDeque;

use super::split::{Ends, Halves, Split};
use super::{packet_count, payload_of, track_slot, Ctx, FlowEvent, FlowSpec, Steer, Timer};
use crate::engine::{Slab, TimerKind};
use crate::net::packet::{Packet, PktKind};
use crate::units::{FlowSlot, NodeId, PktId, Time};

#[derive(Clone, Debug)]
pub struct NdpConfig {
    /// Payload bytes of a full data packet.
    pub payload: u32,
    /// Bytes of a data packet besides its payload (what a trimmed header keeps).
    pub header: u32,
    /// PULL, ACK and NACK size in buffers.
    pub ctrl_size: u32,
    /// Preamble and gap: wire time without buffer space (sets the pull spacing).
    pub wire_overhead: u32,
    /// The first window, sent without pulls.
    pub rtt_bytes: u64,
    /// Class of data packets (control and trimmed headers use class 0).
    pub data_class: u8,
    /// Receiver: NACK the first missing packet after this long without an arrival (None: never).
    pub timeout: Option<Time>,
    /// Receiver: the pacer serves its messages' queued pulls in turn, one each (htsim's `FairPullQueue`);
    /// false: every pull in the order it was queued (`transport.pull_order = "fifo"`).
    pub fair_pulls: bool,
    /// Receiver: a pull the pacer would send at once rides on the ACK or NACK that prompts it (htsim's
    /// `NdpPullPacer::sendPacket`) instead of leaving as a PULL packet of its own right behind it.
    pub pull_on_ack: bool,
}

/// `aux` of an ACK or NACK that carries a pull (`NdpConfig::pull_on_ack`).
const CARRIES_PULL: u32 = 1;

impl NdpConfig {
    /// Packets a message of `npkts` sends unpulled: one BDP (RTTbytes), at least one, at most all.
    fn first_window(&self, npkts: u32) -> u32 {
        (self.rtt_bytes.div_ceil(self.payload as u64) as u32).clamp(1, npkts)
    }
}

struct Msg {
    id: u64,
    src: NodeId,
    dst: NodeId,
    size: u64,
    npkts: u32,
    steer: Steer,
    // --- sender ---
    /// Next packet never sent.
    next: u32,
    /// Packets NACKed, to send before new ones.
    rtx: VecDeque<u32>,
    /// Pulls that found nothing to send (their NACK is still on its way).
    credit: u32,
    retransmits: u32,
    /// An ACK, NACK or PULL has come back: the first window was not lost whole.
    heard_back: bool,
    /// The sender's timeout (`TimerKind::Retransmit`): the first window again while nothing came back.
    snd_timer: Timer,
    /// Packets acknowledged (each once): the sender's half closes when all are.
    acked: u32,
    /// The sender's timeouts.
    snd_timeouts: u32,
    /// Which halves are open here (the sender's until every packet is acknowledged).
    ends: Ends,
    // --- receiver ---
    got: Vec<bool>,
    got_pkts: u32,
    /// Packets the sender sends unpulled.
    window: u32,
    /// Pulls queued or sent.
    pulls: u32,
    /// Pulls queued at the receiver's pacer, not yet sent (fair order: the message is in the turn while > 0).
    queued: u32,
    /// Packets the sender must send again (trimmed or missing).
    resends: u32,
    seen: bool,
    /// The receiver's timeout (`TimerKind::Resend`), armed by every arrival.
    timer: Timer,
    /// The receiver's timeouts.
    timeouts: u32,
}

impl Msg {
    /// Packets the sender still has to send, counted at the receiver: the message plus every resend.
    fn wants_pull(&self) -> bool {
        self.window + self.pulls < self.npkts + self.resends
    }
}

#[derive(Default)]
struct HostState {
    /// Receiver: pulls waiting for the pacer (message slot and generation): in fair order each message with
    /// queued pulls once, in its turn; in FIFO order every pull, oldest first.
    pulls: VecDeque<(FlowSlot, u32)>,
    /// Receiver: earliest time the next pull may leave.
    next_pull: Time,
    pull_timer: Timer,
}

/// Counters for tests and reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct NdpStats {
    /// Pulls sent, on their own or carried.
    pub pulls: u64,
    /// Of those, pulls that rode on an ACK or NACK (`NdpConfig::pull_on_ack`).
    pub pulls_carried: u64,
    pub nacks: u64,
    /// Trimmed headers that reached their receiver.
    pub headers: u64,
    pub timeouts: u64,
}

pub struct Ndp {
    cfg: NdpConfig,
    msgs: Slab<Msg>,
    gens: Vec<u32>,
    split: Split,
    hosts: Vec<HostState>,
    /// Per host: time between pulls (one full frame at the host's link rate).
    spacing: Vec<Time>,
    pub stats: NdpStats,
}

impl Ndp {
    /// `spacing[h]`: the time between host h's pulls (one full frame at its link rate).
    pub fn new(cfg: NdpConfig, spacing: Vec<Time>) -> Ndp {
        let hosts = spacing.iter().map(|_| HostState::default()).collect();
        Ndp {
            cfg,
            msgs: Slab::default(),
            gens: Vec::new(),
            split: Split::default(),
            hosts,
            spacing,
            stats: NdpStats::default(),
        }
    }

    /// Messages whose receiver still misses packets (a sender waiting for the last ACK is not counted: the
    /// message is delivered).
    pub fn active(&self) -> usize {
        self.split.receiving
    }

    /// Another part's counters, added to this one's (the merge at the end of a parallel run).
    pub fn add_part(&mut self, other: &Ndp) {
        self.split.receiving += other.split.receiving;
        let (a, b) = (&mut self.stats, &other.stats);
        a.pulls += b.pulls;
        a.pulls_carried += b.pulls_carried;
        a.nacks += b.nacks;
        a.headers += b.headers;
        a.timeouts += b.timeouts;
    }

    pub fn config(&self) -> &NdpConfig {
        &self.cfg
    }

    /// Make flow `f`'s record, its halves at this run's hosts open, without sending (`Transport::open_flow`).
    pub fn open_flow(&mut self, f: &FlowSpec) -> FlowSlot {
        let npkts = packet_count(f.size, self.cfg.payload);
        let window = self.cfg.first_window(npkts);
        let ends = self.split.open(f.src, f.dst);
        let m = Msg {
            id: f.id,
            src: f.src,
            dst: f.dst,
            size: f.size,
            npkts,
            steer: f.steer(),
            next: 0,
            rtx: VecDeque::new(),
            credit: 0,
            retransmits: 0,
            heard_back: false,
            snd_timer: Timer::default(),
            acked: 0,
            snd_timeouts: 0,
            ends,
            got: if ends.rcv { vec![false; npkts as usize] } else { Vec::new() },
            got_pkts: 0,
            window,
            pulls: 0,
            queued: 0,
            resends: 0,
            seen: false,
            timer: Timer::default(),
            timeouts: 0,
        };
        let slot = FlowSlot(self.msgs.insert(m));
        track_slot(&mut self.gens, slot);
        slot
    }

    /// Start the sender of the message in `slot`.
    pub fn begin_flow(&mut self, ctx: &mut Ctx, slot: FlowSlot) {
        let (ends, window) = {
            let m = self.msgs.get(slot.0);
            (m.ends, m.window)
        };
        if !ends.snd {
            // Another part's sender (its receiver is this part's, or not): a parallel run's halves at other
            // parts are closed there and retired at the meetings.
            return;
        }
        // Where packets can be lost, the sender's timer covers a first window lost whole (at its own NIC, or
        // on a link going down), which no receiver timer can: the receiver has not heard of the message.
        if let Some(to) = self.cfg.timeout {
            let gen = self.gens[slot.idx()];
            self.msgs.get_mut(slot.0).snd_timer.set(ctx, ctx.now + to, slot, gen, TimerKind::Retransmit);
        }
        // The first window goes to the NIC at once; the NIC sends it at line rate.
        for _ in 0..window {
            self.send_next(ctx, slot);
        }
    }

    pub fn on_packet(&mut self, ctx: &mut Ctx, host: NodeId, id: PktId) {
        let p = *ctx.pk.get(id);
        ctx.pk.consume(id);
        if self.gens.get(p.flow.idx()) != Some(&p.flow_gen) {
            return; // a late packet of a finished message
        }
        let m = self.msgs.get(p.flow.0);
        if !(if p.kind == PktKind::Data { m.ends.rcv } else { m.ends.snd }) {
            return; // a late packet for a half already closed
        }
        match p.kind {
            PktKind::Data => self.on_data(ctx, host, p),
            PktKind::Pull => self.on_pull(ctx, p.flow),
            PktKind::Nack => {
                let m = self.msgs.get_mut(p.flow.0);
                m.heard_back = true;
                m.rtx.push_back(p.seq);
                if m.credit > 0 {
                    m.credit -= 1;
                    self.send_next(ctx, p.flow);
                }
                // A carried pull after its NACK, as a PULL packet right behind it would come.
                if p.aux == CARRIES_PULL {
                    self.on_pull(ctx, p.flow);
                }
            }
            PktKind::Ack => {
                let m = self.msgs.get_mut(p.flow.0);
                m.heard_back = true;
                m.acked += 1;
                if m.acked == m.npkts {
                    // Every packet is at the receiver: the sender's half is done (if this ACK carries a pull,
                    // it came after the last one on another path, and nothing is left for the pull to release).
                    m.snd_timer.cancel();
                    m.rtx.clear();
                    let (id, retransmits, timeouts) = (m.id, m.retransmits, m.snd_timeouts);
                    ctx.report(FlowEvent::Closed { id, retransmits, timeouts });
                    self.close_half(p.flow, true);
                } else if p.aux == CARRIES_PULL {
                    self.on_pull(ctx, p.flow);
                }
            }
            other => unreachable!("{other:?} is not an NDP packet"),
        }
    }

    /// The host a message timer acts at (the handover check, sim/handover.rs; a parallel run's parts): the
    /// sender's timeout its source, the resend timer the receiver. None once its half is closed: it does
    /// nothing.
    pub fn timer_node(&self, slot: FlowSlot, gen: u32, kind: TimerKind) -> Option<NodeId> {
        if self.gens.get(slot.idx()) != Some(&gen) {
            return None; // its flow is gone: the timer does nothing
        }
        let m = self.msgs.try_get(slot.0)?;
        match kind == TimerKind::Retransmit {
            true => m.ends.snd.then_some(m.src),
            false => m.ends.rcv.then_some(m.dst),
        }
    }
    pub fn on_timer(&mut self, ctx: &mut Ctx, slot: FlowSlot, gen: u32, kind: TimerKind) {
        match kind {
            TimerKind::RxPacer => {
                let h = NodeId(slot.0);
                if self.hosts[h.idx()].pull_timer.fire(ctx, slot, gen, kind) {
                    self.pump_pulls(ctx, h);
                }
            }
            TimerKind::Resend => {
                if !self.receiving(slot, gen) {
                    return;
                }
                if self.msgs.get_mut(slot.0).timer.fire(ctx, slot, gen, kind) {
                    self.on_timeout(ctx, slot, gen);
                }
            }
            TimerKind::Retransmit => {
                if self.gens.get(slot.idx()) != Some(&gen) || !self.msgs.get(slot.0).ends.snd {
                    return;
                }
                if self.msgs.get_mut(slot.0).snd_timer.fire(ctx, slot, gen, kind) {
                    self.on_sender_timeout(ctx, slot, gen);
                }
            }
            TimerKind::DelayedAck | TimerKind::Pacer | TimerKind::PeerClosed => unreachable!("not NDP's timers"),
        }
    }

    // ------------------------------------------------------------------ sender

    /// A pull reached the sender (a PULL packet, or one an ACK or NACK carried).
    fn on_pull(&mut self, ctx: &mut Ctx, slot: FlowSlot) {
        self.msgs.get_mut(slot.0).heard_back = true;
        if !self.send_next(ctx, slot) {
            // Nothing to send yet: the NACK this pull answers took another path and is still on its way.
            // Keep the pull for it.
            self.msgs.get_mut(slot.0).credit += 1;
        }
    }

    /// Send one packet of the message: a NACKed one first, else the next new one (false if there is none).
    fn send_next(&mut self, ctx: &mut Ctx, slot: FlowSlot) -> bool {
        let full = self.cfg.payload;
        let gen = self.gens[slot.idx()];
        let m = self.msgs.get_mut(slot.0);
        let i = if let Some(i) = m.rtx.pop_front() {
            m.retransmits += 1;
            i
        } else if m.next < m.npkts {
            m.next += 1;
            m.next - 1
        } else {
            return false;
        };
        let payload = payload_of(m.size, m.npkts, i, full);
        let mut p = Packet::new(PktKind::Data, slot, gen, m.src, m.dst);
        p.payload = payload;
        p.size = payload + self.cfg.header;
        p.seq = i;
        p.aux = m.size as u32;
        p.class = self.cfg.data_class;
        p.ts = ctx.now;
        m.steer.apply(&mut p);
        let src = m.src;
        ctx.send(src, p);
        true
    }

    // ------------------------------------------------------------------ receiver

    fn ctrl(&self, kind: PktKind, slot: FlowSlot, gen: u32, seq: u32) -> Packet {
        let m = self.msgs.get(slot.0);
        let mut c = Packet::new(kind, slot, gen, m.dst, m.src);
        c.size = self.cfg.ctrl_size;
        c.class = 0;
        c.seq = seq;
        m.steer.reverse().apply(&mut c);
        c
    }

    fn on_data(&mut self, ctx: &mut Ctx, host: NodeId, p: Packet) {
        let slot = p.flow;
        let gen = p.flow_gen;
        let trimmed = p.payload == 0;
        let to = self.cfg.timeout;
        let m = self.msgs.get_mut(slot.0);
        if let Some(to) = to {
            m.timer.set(ctx, ctx.now + to, slot, gen, TimerKind::Resend);
        }
        if !m.seen {
            m.seen = true;
            if m.npkts > 1 || trimmed {
                ctx.report(FlowEvent::Heard { id: m.id, at: ctx.now });
            }
        }
        if trimmed {
            if m.got[p.seq as usize] {
                return; // a copy of a packet already here was trimmed (after a timeout's resend)
            }
            m.resends += 1;
            self.stats.headers += 1;
            self.stats.nacks += 1;
            self.answer(ctx, host, PktKind::Nack, slot, gen, p.seq);
        } else {
            if m.got[p.seq as usize] {
                return; // a duplicate (a timeout's resend crossed the original)
            }
            m.got[p.seq as usize] = true;
            m.got_pkts += 1;
            if m.got_pkts == m.npkts {
                let ack = self.ctrl(PktKind::Ack, slot, gen, p.seq);
                ctx.send(host, ack);
                let m = self.msgs.get_mut(slot.0);
                m.timer.cancel();
                m.got = Vec::new();
                ctx.report(FlowEvent::Received { id: m.id, at: ctx.now, timeouts: m.timeouts });
                self.close_half(slot, false);
                return;
            }
            self.answer(ctx, host, PktKind::Ack, slot, gen, p.seq);
        }
    }

    /// Send the ACK or NACK (`kind`) of packet `seq`, and pull once more if the sender still has packets to
    /// send: on the ACK or NACK itself if the pacer would send the pull at once (nothing queued, its spacing
    /// since the last pull passed: `pull_on_ack`), as htsim's pacer does, else as a PULL through the pacer.
    /// Carried, the pull reaches the sender a control frame's serialization sooner than a PULL right behind
    /// its ACK would, and the network carries one packet fewer.
    fn answer(&mut self, ctx: &mut Ctx, host: NodeId, kind: PktKind, slot: FlowSlot, gen: u32, seq: u32) {
        let mut c = self.ctrl(kind, slot, gen, seq);
        let carry = self.cfg.pull_on_ack && self.msgs.get(slot.0).wants_pull() && self.pacer_idle(ctx.now, host);
        if carry {
            self.msgs.get_mut(slot.0).pulls += 1;
            self.spend_pull(ctx.now, host);
            self.stats.pulls_carried += 1;
            c.aux = CARRIES_PULL;
        }
        ctx.send(host, c);
        if !carry {
            self.pull(ctx, host, slot, gen);
        }
    }

    /// Whether host `h`'s pacer would send a pull queued now at once: none waits (the pulls of messages
    /// completed since they were queued are dropped here, as `pump_pulls` would skip them) and a pull's
    /// spacing has passed since the last.
    fn pacer_idle(&mut self, now: Time, h: NodeId) -> bool {
        while let Some(&(slot, gen)) = self.hosts[h.idx()].pulls.front() {
            if self.receiving(slot, gen) {
                return false;
            }
            self.hosts[h.idx()].pulls.pop_front();
        }
        now >= self.hosts[h.idx()].next_pull
    }

    /// Host `h` sends a pull now (a PULL, or on an ACK or NACK): the next waits a spacing.
    fn spend_pull(&mut self, now: Time, h: NodeId) {
        self.hosts[h.idx()].next_pull = now + self.spacing[h.idx()];
        self.stats.pulls += 1;
    }

    /// The receiver's half of message `slot` (generation `gen`) is still open: its pulls and timers count.
    fn receiving(&self, slot: FlowSlot, gen: u32) -> bool {
        self.gens.get(slot.idx()) == Some(&gen) && self.msgs.get(slot.0).ends.rcv
    }

    /// Queue one pull for the message if its sender still has packets to send.
    fn pull(&mut self, ctx: &mut Ctx, host: NodeId, slot: FlowSlot, gen: u32) {
        let m = self.msgs.get_mut(slot.0);
        if m.wants_pull() {
            m.pulls += 1;
            m.queued += 1;
            if !self.cfg.fair_pulls || m.queued == 1 {
                self.hosts[host.idx()].pulls.push_back((slot, gen));
            }
            self.pump_pulls(ctx, host);
        }
    }

    /// Send the oldest queued pull if the pacer allows, and arm the pacer for the next.
    fn pump_pulls(&mut self, ctx: &mut Ctx, h: NodeId) {
        loop {
            let hs = &mut self.hosts[h.idx()];
            if hs.pulls.is_empty() {
                return;
            }
            if ctx.now < hs.next_pull {
                let at = hs.next_pull;
                hs.pull_timer.set(ctx, at, FlowSlot(h.0), 0, TimerKind::RxPacer);
                return;
            }
            let (slot, gen) = hs.pulls.pop_front().unwrap();
            if !self.receiving(slot, gen) {
                continue; // the message completed meanwhile: its pull is not needed
            }
            let m = self.msgs.get_mut(slot.0);
            m.queued -= 1;
            if self.cfg.fair_pulls && m.queued > 0 {
                self.hosts[h.idx()].pulls.push_back((slot, gen)); // the back of the turn
            }
            self.spend_pull(ctx.now, h);
            let pull = self.ctrl(PktKind::Pull, slot, gen, 0);
            ctx.send(h, pull);
        }
    }

    /// The sender's timeout (NDP's RTO): nothing came back, so the first window may have been lost whole
    /// (the receiver would not know of the message): send it again, unpulled. The receiver needs no count of
    /// these: they are resends and unpulled sends at once, which cancel in `wants_pull`.
    fn on_sender_timeout(&mut self, ctx: &mut Ctx, slot: FlowSlot, gen: u32) {
        let Some(to) = self.cfg.timeout else { return };
        let m = self.msgs.get_mut(slot.0);
        if m.heard_back {
            return;
        }
        m.snd_timeouts += 1;
        self.stats.timeouts += 1;
        m.snd_timer.set(ctx, ctx.now + to, slot, gen, TimerKind::Retransmit);
        let window = self.cfg.first_window(m.npkts);
        m.rtx.extend(0..window);
        for _ in 0..window {
            self.send_next(ctx, slot);
        }
    }

    /// The receiver's timeout: no arrival for `timeout` since the last (it is armed by arrivals only).
    fn on_timeout(&mut self, ctx: &mut Ctx, slot: FlowSlot, gen: u32) {
        let Some(to) = self.cfg.timeout else { return };
        let m = self.msgs.get_mut(slot.0);
        debug_assert!(m.seen, "the receiver's timer is armed by an arrival");
        m.timeouts += 1;
        self.stats.timeouts += 1;
        m.timer.set(ctx, ctx.now + to, slot, gen, TimerKind::Resend);
        let Some(first) = (0..m.npkts).find(|&i| !m.got[i as usize]) else { return };
        m.resends += 1;
        let dst = m.dst;
        self.stats.nacks += 1;
        self.answer(ctx, dst, PktKind::Nack, slot, gen, first);
    }
}

impl Halves for Ndp {
    fn split_mut(&mut self) -> &mut Split {
        &mut self.split
    }
    fn ends_mut(&mut self, slot: u32) -> &mut Ends {
        &mut self.msgs.get_mut(slot).ends
    }
    fn free(&mut self, slot: FlowSlot) {
        self.gens[slot.idx()] += 1;
        let m = self.msgs.get_mut(slot.0);
        m.got = Vec::new();
        m.rtx = VecDeque::new();
        self.msgs.remove(slot.0);
    }
}
