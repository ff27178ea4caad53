//! Transports. Each is a variant of [`Transport`] that owns its per-flow (and, for receiver-driven
//! protocols, per-host) state, and reacts to three things: a flow starting, a packet reaching one of its
//! hosts, and one of its timers firing. It acts through [`Ctx`]: send a packet, set a timer, report progress.

pub mod homa;
pub mod ndp;
pub mod phost;
pub mod rdma;
pub mod split;
pub mod tcp;

use crate::engine::{Event, EventQueue, TimerKind};
use crate::net::packet::Packet;
use crate::net::{Network, Packets};
use crate::units::{FlowSlot, NodeId, PathId, PktId, Time};
use split::Halves;

/// A flow handed to a transport by the workload (`Transport::open_flow`; its absolute deadline, if any, comes
/// when it starts: `begin_flow`).
#[derive(Clone, Copy, Debug)]
pub struct FlowSpec {
    pub id: u64,
    pub src: NodeId,
    pub dst: NodeId,
    pub size: u64,
    /// A class chosen by the workload for all the flow's packets (overrides the transport's class policy).
    pub class: Option<u8>,
    /// The path its trace pins it to (`net/pinned.rs`), else NONE.
    pub path: PathId,
}

impl FlowSpec {
    /// How the flow's data packets find their path: its ECMP hash and its pinned path, if any.
    pub fn steer(&self) -> Steer {
        Steer { hash: flow_hash(self.id, self.src, self.dst), path: self.path }
    }
}

/// What a flow's packets carry to choose their path: the ECMP hash and the pinned path (NONE: the switches
/// choose). One per direction: `reverse` gives the way back, for ACKs, grants and pulls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Steer {
    pub hash: u32,
    pub path: PathId,
}

impl Steer {
    /// The reverse direction: another hash (the reverse 5-tuple hashes differently), the pinned path backwards.
    #[inline]
    pub fn reverse(self) -> Steer {
        Steer { hash: self.hash.rotate_left(16) ^ 0x5555, path: self.path.reverse() }
    }
    #[inline]
    pub fn apply(self, p: &mut Packet) {
        p.hash = self.hash;
        p.path = self.path;
    }
}

/// ECMP hash of a stream of packets numbered `id` between `src` and `dst` (a flow, a raw source).
#[inline]
pub fn flow_hash(id: u64, src: NodeId, dst: NodeId) -> u32 {
    (id as u32).wrapping_mul(0x9E37_79B1) ^ (src.0 << 16) ^ dst.0
}

/// Packets of a message of `size` bytes with `full` payload bytes per packet (an empty message is one packet).
#[inline]
pub fn packet_count(size: u64, full: u32) -> u32 {
    size.div_ceil(full as u64).max(1) as u32
}

/// Payload of packet `i` of a `size`-byte message in `npkts` packets: full ones, then the remainder.
#[inline]
pub fn payload_of(size: u64, npkts: u32, i: u32, full: u32) -> u32 {
    if i + 1 < npkts {
        full
    } else {
        (size - (npkts as u64 - 1) * full as u64) as u32
    }
}

/// Record a slot's generation counter the first time the slab hands the slot out.
#[inline]
pub fn track_slot(gens: &mut Vec<u32>, slot: FlowSlot) {
    if slot.idx() >= gens.len() {
        gens.push(0);
    }
}

/// What a transport reports about a flow.
#[derive(Clone, Copy, Debug)]
pub enum FlowEvent {
    /// The receiver has learned of an incomplete flow (its first data packet arrived and more are due).
    /// Reported at most once per flow; the receiver-side bandwidth accounting counts from here.
    Heard { id: u64, at: Time },
    /// The receiver holds every byte: the flow's completion time, and the receiver's timeouts (if it has
    /// any of its own: NDP's).
    Received { id: u64, at: Time, timeouts: u32 },
    /// The sender has every byte acknowledged and dropped its state: its retransmissions and timeouts (with
    /// the receiver's, for the transports whose receiver ends with the sender).
    Closed { id: u64, retransmits: u32, timeouts: u32 },
}

/// The transport's window onto the simulation.
pub struct Ctx<'a> {
    pub now: Time,
    pub ev: &'a mut EventQueue,
    pub pk: &'a mut Packets,
    pub net: &'a mut Network,
    pub events: &'a mut Vec<FlowEvent>,
}

impl Ctx<'_> {
    #[inline]
    pub fn send(&mut self, host: NodeId, p: Packet) {
        let id = self.pk.alloc(p);
        self.net.host_send(self.now, self.ev, self.pk, host, id);
    }
    /// Hand `p` to host `h`'s NIC, which is busy until `*free`, and move `*free` past its serialization (with
    /// `wire_overhead` bytes of preamble and gap): the pacing of transports that feed their NIC one packet at
    /// a time (Homa's pacer, pHost, RDMA), which send again at `*free`.
    #[inline]
    pub fn send_paced(&mut self, h: NodeId, p: Packet, free: &mut Time, wire_overhead: u32) {
        let rate = self.net.ports[self.net.hosts[h.idx()].nic.idx()].rate;
        *free = (*free).max(self.now) + rate.tx_time((p.size + wire_overhead) as u64);
        self.send(h, p);
    }
    /// Word from one end of a flow to the other that is not a packet (a close): `kind` fires at host
    /// `to` for flow (`slot`, `gen`) after the propagation delay of the path from host `from` (`pin`, else
    /// the healthy fabric's), its tie the flow's `id` (`EventQueue::schedule_message`).
    #[allow(clippy::too_many_arguments)]
    pub fn tell(&mut self, from: NodeId, to: NodeId, pin: PathId, slot: FlowSlot, gen: u32, kind: TimerKind, id: u64) {
        let at = self.now + self.net.propagation(from, to, pin);
        self.ev.schedule_message(at, from, to, Event::Timer(slot, gen, kind), id);
    }
    #[inline]
    pub fn report(&mut self, e: FlowEvent) {
        self.events.push(e);
    }
}

/// A lazily-cancelled timer: at most one event pending; moving the deadline later costs nothing, and a
/// stale event is recognised on arrival. This keeps the event queue from filling with dead RTO events.
#[derive(Clone, Copy, Debug, Default)]
pub struct Timer {
    deadline: Option<Time>,
    pending: Option<Time>,
}

impl Timer {
    pub fn set(&mut self, ctx: &mut Ctx, at: Time, slot: FlowSlot, gen: u32, kind: TimerKind) {
        self.deadline = Some(at);
        if self.pending.is_none_or(|p| p > at) {
            self.pending = Some(at);
            ctx.ev.schedule(at, Event::Timer(slot, gen, kind));
        }
    }
    pub fn cancel(&mut self) {
        self.deadline = None;
    }
    pub fn armed(&self) -> bool {
        self.deadline.is_some()
    }
    /// Called when an event for this timer fires; true when the timer really expired now.
    pub fn fire(&mut self, ctx: &mut Ctx, slot: FlowSlot, gen: u32, kind: TimerKind) -> bool {
        if self.pending != Some(ctx.now) {
            return false; // superseded by an earlier event
        }
        self.pending = None;
        match self.deadline {
            Some(d) if d <= ctx.now => {
                self.deadline = None;
                true
            }
            Some(d) => {
                self.pending = Some(d);
                ctx.ev.schedule(d, Event::Timer(slot, gen, kind));
                false
            }
            None => false,
        }
    }
}

/// Every transport tailsim runs.
pub enum Transport {
    Tcp(tcp::Tcp),
    Homa(homa::Homa),
    Phost(phost::Phost),
    Ndp(ndp::Ndp),
    Rdma(rdma::Rdma),
}

impl Transport {
    /// The transport's own results tables (TCP's `cwnd` trace and `rx_gaps`), those asked for.
    pub fn tables(&self) -> Vec<(&'static str, Vec<crate::metrics::output::Column>)> {
        match self {
            Transport::Tcp(t) => t.trace.table().into_iter().chain(t.rx_gaps.table()).collect(),
            _ => Vec::new(),
        }
    }

    /// Make flow `f`'s record, with the halves at this run's hosts open, without sending anything: a flow that
    /// another flow's end will start (`begin_flow`), such as a retrieval's response. It takes its slot now, in
    /// the order its cause made it, so that in a parallel run it has the same slot in every part (the packets
    /// that cross between parts name their flow by slot), though only its sender's part starts it.
    pub fn open_flow(&mut self, f: &FlowSpec) -> FlowSlot {
        match self {
            Transport::Tcp(t) => t.open_flow(f),
            Transport::Homa(t) => t.open_flow(f),
            Transport::Phost(t) => t.open_flow(f),
            Transport::Ndp(t) => t.open_flow(f),
            Transport::Rdma(t) => t.open_flow(f),
        }
    }

    /// Start the sender of the flow in `slot` (made by `open_flow`), with its absolute deadline if it has one
    /// (known only now: a deadline counts from the start). Nothing if its sender is another part's.
    pub fn begin_flow(&mut self, ctx: &mut Ctx, slot: FlowSlot, deadline: Option<Time>) {
        match self {
            Transport::Tcp(t) => t.begin_flow(ctx, slot, deadline),
            Transport::Homa(t) => t.begin_flow(ctx, slot),
            Transport::Phost(t) => t.begin_flow(ctx, slot),
            Transport::Ndp(t) => t.begin_flow(ctx, slot),
            Transport::Rdma(t) => t.begin_flow(ctx, slot),
        }
    }
    pub fn on_packet(&mut self, ctx: &mut Ctx, host: NodeId, id: PktId) {
        match self {
            Transport::Tcp(t) => t.on_packet(ctx, host, id),
            Transport::Homa(t) => t.on_packet(ctx, host, id),
            Transport::Phost(t) => t.on_packet(ctx, host, id),
            Transport::Ndp(t) => t.on_packet(ctx, host, id),
            Transport::Rdma(t) => t.on_packet(ctx, host, id),
        }
    }
    /// A switch's notice about one of this host's packets (`PktKind::Notice`). TCP counts it; the others
    /// leave it to the host's sink.
    pub fn on_notice(&mut self, ctx: &mut Ctx, host: NodeId, id: PktId) {
        match self {
            Transport::Tcp(t) => t.on_notice(ctx, host, id),
            Transport::Homa(_) | Transport::Phost(_) | Transport::Ndp(_) | Transport::Rdma(_) => ctx.pk.sink(id),
        }
    }
    pub fn on_timer(&mut self, ctx: &mut Ctx, slot: FlowSlot, gen: u32, kind: TimerKind) {
        match self {
            Transport::Tcp(t) => t.on_timer(ctx, slot, gen, kind),
            Transport::Homa(t) => t.on_timer(ctx, slot, gen, kind),
            Transport::Phost(t) => t.on_timer(ctx, slot, gen, kind),
            Transport::Ndp(t) => t.on_timer(ctx, slot, gen, kind),
            Transport::Rdma(t) => t.on_timer(ctx, slot, gen, kind),
        }
    }
    /// The host a transport timer acts at (None: its flow is gone, so it does nothing): a pacer's is in its
    /// slot, a flow's depends on the side that set it (the handover check, sim/handover.rs).
    pub fn timer_node(&self, slot: FlowSlot, gen: u32, kind: TimerKind) -> Option<NodeId> {
        if matches!(kind, TimerKind::Pacer | TimerKind::RxPacer) {
            return Some(NodeId(slot.0));
        }
        match self {
            Transport::Tcp(t) => t.timer_node(slot, gen, kind),
            Transport::Homa(t) => t.timer_node(slot, gen, kind),
            Transport::Phost(t) => t.timer_node(slot, gen, kind),
            Transport::Ndp(t) => t.timer_node(slot, gen, kind),
            Transport::Rdma(t) => t.timer_node(slot, gen, kind),
        }
    }
    /// Run only the flows' ends at the hosts `mine` accepts (a part of a parallel run).
    pub fn set_local(&mut self, mine: Vec<bool>) {
        self.split().set_local(mine);
    }

    /// Every transport's flows' ends live apart (`split.rs`).
    fn split(&mut self) -> &mut split::Split {
        match self {
            Transport::Ndp(t) => t.split_mut(),
            Transport::Homa(t) => t.split_mut(),
            Transport::Tcp(t) => t.split_mut(),
            Transport::Rdma(t) => t.split_mut(),
            Transport::Phost(t) => t.split_mut(),
        }
    }

    /// The flows one of whose halves closed in this part since the last meeting of a parallel run.
    pub fn take_retiring(&mut self) -> Vec<u32> {
        self.split().take_retiring()
    }

    /// At a meeting of a parallel run: every part's closed halves, in part order (the same in every part).
    pub fn retire(&mut self, slots: &[u32]) {
        match self {
            Transport::Ndp(t) => t.retire(slots),
            Transport::Homa(t) => t.retire(slots),
            Transport::Tcp(t) => t.retire(slots),
            Transport::Rdma(t) => t.retire(slots),
            Transport::Phost(t) => t.retire(slots),
        }
    }

    /// Another part's counters added to this one's (the merge at the end of a parallel run).
    pub fn add_part(&mut self, other: &Transport) {
        match (self, other) {
            (Transport::Ndp(a), Transport::Ndp(b)) => a.add_part(b),
            (Transport::Homa(a), Transport::Homa(b)) => a.add_part(b),
            (Transport::Tcp(a), Transport::Tcp(b)) => a.add_part(b),
            (Transport::Rdma(a), Transport::Rdma(b)) => a.add_part(b),
            (Transport::Phost(a), Transport::Phost(b)) => a.add_part(b),
            _ => {}
        }
    }

    /// Flows with live state.
    pub fn active_flows(&self) -> usize {
        match self {
            Transport::Tcp(t) => t.active(),
            Transport::Homa(t) => t.active(),
            Transport::Phost(t) => t.active(),
            Transport::Ndp(t) => t.active(),
            Transport::Rdma(t) => t.active(),
        }
    }
}
