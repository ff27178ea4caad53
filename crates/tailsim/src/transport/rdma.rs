//! RDMA WRITE over a RoCEv2 reliable connection (RC), as a NIC runs it: go-back-N with no tolerance for
//! reordering and a fixed retransmission timeout. The LinkGuardian experiments (Joshi thesis §5.2.3, §5.4)
//! compare it with DCTCP because one lost packet costs it so much more.
//!
//! - **Requester (sender).** The NIC cuts the message into packets of the path MTU (`packet.mss`, 1024 B by
//!   default) and sends them at line rate: it fetches the next packet when its link has serialized what it
//!   was handed, and shares the link round-robin between the host's connections (one packet each in turn).
//!   No congestion control: DCQCN is not modelled (the thesis's experiments have no cross traffic).
//! - **Responder (receiver).** It accepts only the packet sequence number (PSN) it expects. In order: the data
//!   is placed and acknowledged (every `ack_every`-th packet and always the message's last). Ahead of the
//!   expected PSN (a packet was lost): one NAK (sequence error) naming the expected PSN, then silence until
//!   that PSN arrives, as the InfiniBand specification (§9.7.5.2) has it; the packets ahead are discarded.
//!   Behind it (a duplicate after a resend): acknowledged again, never placed twice.
//! - **Go-back-N.** A NAK for PSN k acknowledges everything before k and rewinds the send point to k: the
//!   requester sends k, k+1, … again, including packets that had arrived. A timeout (`transport.rto`, fixed,
//!   restarted by every ACK that advances; 1 ms by default, the thesis's CX6-DX) rewinds to the oldest
//!   unacknowledged packet — the only recovery for a lost last packet or a lost NAK.
//! - Not modelled: the retry counter that puts a connection in error after 7 timeouts (a run retries forever),
//!   PSN wrap (24 bits; no message here has 16 M packets), RETH's 16 B on a WRITE's first packet, DCQCN/CNPs.
//!
//! The flow completes (`Received`) when the responder holds the last byte; the sender reports `Closed` when it
//! is acknowledged. ACKs and NAKs travel in the data's class. One record per connection holds both ends' state,
//! as in `ndp.rs`; each end reads only what the packets tell it, and each has a life of its own
//! (transport/split.rs): the requester's ends with the last ACK, the responder's when word of that reaches it
//! (`TimerKind::PeerClosed`, the path's propagation delay later), so that it answers duplicates meanwhile.
//! Docs: docs/transport-rdma.md.

use std::collections::VecDeque;

use super::split::{Ends, Halves, Split};
use super::{packet_count, payload_of, track_slot, Ctx, FlowEvent, FlowSpec, Steer, Timer};
use crate::engine::{Slab, TimerKind};
use crate::net::packet::{Packet, PktKind};
use crate::units::{FlowSlot, NodeId, PktId, Time};

#[derive(Clone, Debug)]
pub struct RdmaConfig {
    /// Payload bytes of a full packet (the path MTU).
    pub payload: u32,
    /// Bytes of a data packet besides its payload (IP, UDP, BTH, ICRC: 44).
    pub header: u32,
    /// ACK and NAK size (IP, UDP, BTH, AETH, ICRC: 48).
    pub ack_size: u32,
    /// Preamble and gap: wire time without buffer space (the NIC's pacing counts it).
    pub wire_overhead: u32,
    /// The requester's fixed retransmission timeout.
    pub rto: Time,
    /// The responder acknowledges every n-th in-order packet (and always a message's last).
    pub ack_every: u32,
    /// Class of every packet of a connection, unless the workload chooses one.
    pub class: u8,
}

struct Qp {
    id: u64,
    src: NodeId,
    dst: NodeId,
    size: u64,
    npkts: u32,
    steer: Steer,
    class: u8,
    /// Which halves are open (transport/split.rs).
    ends: Ends,
    // --- requester ---
    /// Oldest PSN not acknowledged.
    una: u32,
    /// Next PSN to send (rewound by a NAK or a timeout).
    next: u32,
    /// Highest PSN ever sent + 1 (a packet below it that is sent again is a retransmission).
    high: u32,
    /// In the host's round-robin list.
    queued: bool,
    timer: Timer,
    retransmits: u32,
    timeouts: u32,
    // --- responder ---
    /// The PSN expected next: every packet below it has been placed.
    epsn: u32,
    /// A NAK for `epsn` has been sent; the responder stays silent about later packets until `epsn` arrives.
    nak_sent: bool,
    /// In-order packets since the last ACK.
    unacked: u32,
}

impl Qp {
    fn has_more(&self) -> bool {
        self.next < self.npkts
    }
}

#[derive(Default)]
struct HostNic {
    /// Connections with packets to send, in round-robin order (slot and generation).
    ready: VecDeque<(FlowSlot, u32)>,
    /// When the link will have serialized everything this transport handed it.
    free: Time,
    timer: Timer,
}

/// Counters for tests and reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct RdmaStats {
    /// Data packets sent again (go-back-N resends whatever follows the hole, received or not).
    pub retransmits: u64,
    pub naks: u64,
    pub timeouts: u64,
    /// Packets the responder discarded: ahead of the expected PSN, or duplicates.
    pub out_of_order: u64,
    pub duplicates: u64,
}

pub struct Rdma {
    cfg: RdmaConfig,
    qps: Slab<Qp>,
    gens: Vec<u32>,
    nics: Vec<HostNic>,
    /// Which hosts' halves this run runs, and the halves closed since a parallel run's last meeting.
    split: Split,
    pub stats: RdmaStats,
}

impl Rdma {
    pub fn new(cfg: RdmaConfig, hosts: usize) -> Rdma {
        Rdma {
            cfg,
            qps: Slab::default(),
            gens: Vec::new(),
            nics: (0..hosts).map(|_| HostNic::default()).collect(),
            split: Split::default(),
            stats: RdmaStats::default(),
        }
    }

    pub fn active(&self) -> usize {
        self.qps.live()
    }

    /// Another part's counters, added to this one's (the merge at the end of a parallel run).
    pub fn add_part(&mut self, other: &Rdma) {
        self.split.receiving += other.split.receiving;
        let (a, b) = (&mut self.stats, &other.stats);
        a.retransmits += b.retransmits;
        a.naks += b.naks;
        a.timeouts += b.timeouts;
        a.out_of_order += b.out_of_order;
        a.duplicates += b.duplicates;
    }

    /// Make flow `f`'s queue pair, its halves at this run's hosts open, without sending
    /// (`Transport::open_flow`).
    pub fn open_flow(&mut self, f: &FlowSpec) -> FlowSlot {
        let qp = Qp {
            id: f.id,
            src: f.src,
            dst: f.dst,
            size: f.size,
            npkts: packet_count(f.size, self.cfg.payload),
            steer: f.steer(),
            class: f.class.unwrap_or(self.cfg.class),
            ends: self.split.open(f.src, f.dst),
            una: 0,
            next: 0,
            high: 0,
            queued: false,
            timer: Timer::default(),
            retransmits: 0,
            timeouts: 0,
            epsn: 0,
            nak_sent: false,
            unacked: 0,
        };
        let slot = FlowSlot(self.qps.insert(qp));
        track_slot(&mut self.gens, slot);
        slot
    }

    /// Start the requester of the queue pair in `slot`.
    pub fn begin_flow(&mut self, ctx: &mut Ctx, slot: FlowSlot) {
        let gen = self.gens[slot.idx()];
        if self.qps.get(slot.0).ends.snd {
            self.make_ready(ctx, slot, gen);
        }
    }

    pub fn on_packet(&mut self, ctx: &mut Ctx, host: NodeId, id: PktId) {
        let p = *ctx.pk.get(id);
        ctx.pk.consume(id);
        if self.gens.get(p.flow.idx()) != Some(&p.flow_gen) {
            return; // a late packet of a finished connection
        }
        let ends = self.qps.get(p.flow.0).ends;
        if !(if p.kind == PktKind::Data { ends.rcv } else { ends.snd }) {
            return; // a late packet for a half that has closed
        }
        match p.kind {
            PktKind::Data => self.on_data(ctx, host, p),
            PktKind::Ack => self.on_ack(ctx, p.flow, p.seq),
            PktKind::Nack => {
                self.on_ack(ctx, p.flow, p.seq);
                let gen = p.flow_gen;
                let q = self.qps.get_mut(p.flow.0);
                // Go back to the PSN the responder expects, unless a rewind already went there or further.
                if p.seq < q.next && p.seq >= q.una {
                    q.next = p.seq;
                    self.make_ready(ctx, p.flow, gen);
                }
            }
            other => unreachable!("{other:?} is not an RDMA packet"),
        }
    }

    /// The host a queue pair's timer acts at (the handover check, sim/handover.rs): the retransmission timer
    /// the requester's, word of its close the responder's.
    pub fn timer_node(&self, slot: FlowSlot, gen: u32, kind: TimerKind) -> Option<NodeId> {
        if self.gens.get(slot.idx()) != Some(&gen) {
            return None; // its flow is gone: the timer does nothing
        }
        let q = self.qps.try_get(slot.0)?;
        Some(if kind == TimerKind::PeerClosed { q.dst } else { q.src })
    }
    pub fn on_timer(&mut self, ctx: &mut Ctx, slot: FlowSlot, gen: u32, kind: TimerKind) {
        match kind {
            TimerKind::Pacer => {
                let h = NodeId(slot.0);
                if self.nics[h.idx()].timer.fire(ctx, slot, gen, kind) {
                    self.pump(ctx, h);
                }
            }
            TimerKind::Retransmit => {
                if self.gens.get(slot.idx()) != Some(&gen) || !self.qps.get_mut(slot.0).timer.fire(ctx, slot, gen, kind)
                {
                    return;
                }
                let rto = self.cfg.rto;
                let q = self.qps.get_mut(slot.0);
                q.timeouts += 1;
                self.stats.timeouts += 1;
                q.next = q.una;
                q.timer.set(ctx, ctx.now + rto, slot, gen, TimerKind::Retransmit);
                self.make_ready(ctx, slot, gen);
            }
            TimerKind::PeerClosed => {
                if self.gens.get(slot.idx()) == Some(&gen) {
                    self.close_half(slot, false);
                }
            }
            TimerKind::DelayedAck | TimerKind::Resend | TimerKind::RxPacer => unreachable!("not RDMA's timers"),
        }
    }

    // ------------------------------------------------------------------ requester

    /// Put a connection with packets to send in its host's round-robin list, and start the NIC if idle.
    fn make_ready(&mut self, ctx: &mut Ctx, slot: FlowSlot, gen: u32) {
        let q = self.qps.get_mut(slot.0);
        if q.queued || !q.has_more() {
            return;
        }
        q.queued = true;
        let h = q.src;
        self.nics[h.idx()].ready.push_back((slot, gen));
        self.pump(ctx, h);
    }

    /// Send from host `h` while its link is free: one packet of the next connection in turn.
    fn pump(&mut self, ctx: &mut Ctx, h: NodeId) {
        loop {
            let nic = &mut self.nics[h.idx()];
            if ctx.now < nic.free {
                let at = nic.free;
                nic.timer.set(ctx, at, FlowSlot(h.0), 0, TimerKind::Pacer);
                return;
            }
            let Some((slot, gen)) = nic.ready.pop_front() else { return };
            if self.gens[slot.idx()] != gen {
                continue; // completed meanwhile
            }
            let rto = self.cfg.rto;
            let q = self.qps.get_mut(slot.0);
            if !q.has_more() {
                q.queued = false; // acknowledged past its send point while it waited
                continue;
            }
            let psn = q.next;
            q.next += 1;
            if psn < q.high {
                q.retransmits += 1;
                self.stats.retransmits += 1;
            }
            q.high = q.high.max(q.next);
            if !q.timer.armed() {
                q.timer.set(ctx, ctx.now + rto, slot, gen, TimerKind::Retransmit);
            }
            if q.has_more() {
                self.nics[h.idx()].ready.push_back((slot, gen));
            } else {
                q.queued = false;
            }
            let q = self.qps.get(slot.0);
            let payload = payload_of(q.size, q.npkts, psn, self.cfg.payload);
            let mut p = Packet::new(PktKind::Data, slot, gen, q.src, q.dst);
            p.payload = payload;
            p.size = payload + self.cfg.header;
            p.seq = psn;
            p.class = q.class;
            p.ts = ctx.now;
            q.steer.apply(&mut p);
            self.send(ctx, h, p);
        }
    }

    /// Hand a packet to host `h`'s NIC, accounting for its serialization in the NIC's pacing.
    fn send(&mut self, ctx: &mut Ctx, h: NodeId, p: Packet) {
        ctx.send_paced(h, p, &mut self.nics[h.idx()].free, self.cfg.wire_overhead);
    }

    /// A cumulative acknowledgement: every PSN below `upto` arrived.
    fn on_ack(&mut self, ctx: &mut Ctx, slot: FlowSlot, upto: u32) {
        let gen = self.gens[slot.idx()];
        let rto = self.cfg.rto;
        let q = self.qps.get_mut(slot.0);
        if upto <= q.una {
            return;
        }
        q.una = upto;
        q.next = q.next.max(upto);
        if q.una < q.npkts {
            q.timer.set(ctx, ctx.now + rto, slot, gen, TimerKind::Retransmit);
            return;
        }
        q.timer.cancel();
        // The responder acknowledges the last PSN only once it holds it: the requester is done. The responder
        // answers duplicates until word of this reaches it.
        ctx.report(FlowEvent::Closed { id: q.id, retransmits: q.retransmits, timeouts: q.timeouts });
        ctx.tell(q.src, q.dst, q.steer.path, slot, gen, TimerKind::PeerClosed, q.id);
        self.close_half(slot, true);
    }

    // ------------------------------------------------------------------ responder

    fn reply(&mut self, ctx: &mut Ctx, host: NodeId, slot: FlowSlot, gen: u32, kind: PktKind, seq: u32) {
        let q = self.qps.get(slot.0);
        let mut c = Packet::new(kind, slot, gen, q.dst, q.src);
        c.size = self.cfg.ack_size;
        c.class = q.class;
        c.seq = seq;
        q.steer.reverse().apply(&mut c);
        self.send(ctx, host, c);
    }

    fn on_data(&mut self, ctx: &mut Ctx, host: NodeId, p: Packet) {
        let (slot, gen) = (p.flow, p.flow_gen);
        let every = self.cfg.ack_every;
        let q = self.qps.get_mut(slot.0);
        if p.seq > q.epsn {
            self.stats.out_of_order += 1;
            if !q.nak_sent {
                q.nak_sent = true;
                self.stats.naks += 1;
                let e = q.epsn;
                self.reply(ctx, host, slot, gen, PktKind::Nack, e);
            }
            return;
        }
        if p.seq < q.epsn {
            // A duplicate: the requester went back further than it needed to. Acknowledge it again.
            self.stats.duplicates += 1;
            let e = q.epsn;
            self.reply(ctx, host, slot, gen, PktKind::Ack, e);
            return;
        }
        q.epsn += 1;
        q.nak_sent = false;
        q.unacked += 1;
        if q.epsn == 1 && q.npkts > 1 {
            ctx.report(FlowEvent::Heard { id: q.id, at: ctx.now });
        }
        let last = q.epsn == q.npkts;
        if last {
            ctx.report(FlowEvent::Received { id: q.id, at: ctx.now, timeouts: 0 });
        }
        if last || q.unacked >= every {
            q.unacked = 0;
            let e = q.epsn;
            self.reply(ctx, host, slot, gen, PktKind::Ack, e);
        }
    }
}

impl Halves for Rdma {
    fn split_mut(&mut self) -> &mut Split {
        &mut self.split
    }
    fn ends_mut(&mut self, slot: u32) -> &mut Ends {
        &mut self.qps.get_mut(slot).ends
    }
    fn free(&mut self, slot: FlowSlot) {
        self.gens[slot.idx()] += 1;
        self.qps.remove(slot.0);
    }
}
