//! Hooks: the fixed points of the datapath where a switch mechanism (`net/mech/`) acts, and the outbox through
//! which every side effect of a stage or a mechanism passes.
//!
//! | hook | stage (file) | when | a mechanism may |
//! |---|---|---|---|
//! | `INGRESS` | switch (`switch.rs`) | a packet arrived at a switch; installed on the switch's ingress port, tested on the link that arrives there | choose the output port among the equal-cost ones, account ingress bytes |
//! | `ADMIT` | egress (`egress.rs`) | before buffer admission at an egress port | queue, accept past the buffer limit (lossless), drop (with a reason), or hold the packet upstream |
//! | `DEQUEUE` | egress (`egress.rs`) | a packet leaves its queue for the transmitter | read telemetry (queue depth, sojourn), count drained bytes |
//! | `TRANSMIT` | link (`link.rs`) | the last bit left; before the packet enters the wire | copy it |
//! | `ARRIVE` | link (`link.rs`) | the last bit reached the far end (after corruption); keyed by the link's port | pass it on, consume a link-local frame, hold it (reordering), drop it |
//! | `DROP` | any | a packet was dropped, before it is freed | make a notification from it |
//! | `SERVE` | egress (`egress.rs`) | an idle transmitter is about to take its queue's next packet | take the transmitter for a while instead, with no packet on the wire (a pass of a packet through the egress pipeline: SQR's caching queues) |
//!
//! Link-state changes (`[[fault]]`) reach every mechanism through `Hooks::on_link`, whatever its hook set.
//!
//! A port carries a [`HookSet`]: the hook points at which some mechanism wants to see its packets. It is empty
//! by default, so an unused hook costs one well-predicted branch on a byte of the port that is in cache anyway.
//!
//! Hooks never touch a port or a queue directly. They read the ports, and ask for changes through the
//! [`Outbox`]: `Network::drain` applies them once the stage that called the hook has returned, so a hook never
//! re-enters `enqueue` while a port is borrowed, and the order of effects is the order they were asked for.

use crate::engine::{Event, EventQueue};
use crate::net::ledger::Packets;
use crate::net::packet::Packet;
use crate::net::port::{DropReason, Port};
use crate::units::{NodeId, PktId, PortId, Time};
use std::collections::VecDeque;

/// The hook points some mechanism uses at a port (a bit set).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HookSet(u16);

impl HookSet {
    pub const NONE: HookSet = HookSet(0);
    pub const INGRESS: HookSet = HookSet(1);
    pub const ADMIT: HookSet = HookSet(1 << 1);
    pub const DEQUEUE: HookSet = HookSet(1 << 2);
    pub const TRANSMIT: HookSet = HookSet(1 << 3);
    pub const ARRIVE: HookSet = HookSet(1 << 4);
    pub const DROP: HookSet = HookSet(1 << 5);
    /// Not a hook: control frames wait at this port (`Port::ctl`). Kept in the same byte so that the transmitter
    /// tests frames and the dequeue hook with one load.
    pub const FRAMES: HookSet = HookSet(1 << 6);
    /// Not a hook: this port has sent control frames at some time, so arrivals over its link must be checked
    /// for frames that no mechanism consumed (sticky; a link that never carried one skips the check).
    pub const LINK_LOCAL: HookSet = HookSet(1 << 7);
    pub const SERVE: HookSet = HookSet(1 << 8);
    /// Not a hook: the link went down while this port serialized a fast-path packet (net/egress.rs,
    /// `start_queued`), which is lost if the link is still down when its serialization ends: at the port's
    /// `TxDone`, or at its arrival if the link has no delay and that comes first (net/link.rs, `end_tail`).
    pub const TAIL: HookSet = HookSet(1 << 9);

    #[inline(always)]
    pub fn has(self, h: HookSet) -> bool {
        self.0 & h.0 != 0
    }
    pub const fn with(self, h: HookSet) -> HookSet {
        HookSet(self.0 | h.0)
    }
    pub const fn without(self, h: HookSet) -> HookSet {
        HookSet(self.0 & !h.0)
    }
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}

impl std::ops::BitOr for HookSet {
    type Output = HookSet;
    fn bitor(self, o: HookSet) -> HookSet {
        self.with(o)
    }
}

/// The admit hook's verdict on a packet about to join an egress queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admit {
    /// Go on to the port's own buffer admission (which may still drop it for overflow).
    Queue,
    /// Queue it past the buffer's limit: a lossless class whose bytes are bounded upstream (PFC's ingress
    /// accounting), as lossless switches never drop it at egress.
    Accept,
    /// Drop it, counted at this port for this reason.
    Drop(DropReason),
    /// The mechanism keeps it (an ingress queue, a lossless buffer upstream). It reports the packet in
    /// `held`, and later releases it with [`Effect::Enqueue`] (or drops it).
    Hold,
}

/// The arrive hook's verdict on a packet that reached the far end of a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrive {
    /// Deliver it to the node (a host's transport or sink, a switch's ingress).
    Pass,
    /// The mechanism consumed it (a link-local frame it read): `HookCtx::absorb` was called.
    Consumed,
    /// The mechanism keeps it (a reorder buffer) and releases it later with [`Effect::Deliver`].
    Held,
    /// Drop it, counted at the link's port.
    Drop(DropReason),
}

/// A side effect, applied by `Network::drain` in the order asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Drop a packet: counted at `port` for `why`, seen by the port's drop hooks, then freed. The datapath
    /// uses it for drops at ports with drop hooks; a mechanism for a packet it held and gives up.
    Drop { port: PortId, id: PktId, why: DropReason },
    /// Join the egress queue of `port`: buffer admission applies, the admit hook does not (a mechanism
    /// releasing what it held, or injecting a packet it made or copied at a known port).
    Enqueue { port: PortId, id: PktId },
    /// Enter node `node` as if it had just arrived there: a switch routes it by destination (ingress hooks
    /// included), a host sends it from its NIC.
    Forward { node: NodeId, id: PktId },
    /// Send a link-local control frame out of `port`: ahead of every queued packet, never paused, never
    /// routed. The peer's arrive hook must consume it; unclaimed, it is dropped (`DropReason::Unclaimed`).
    Frame { port: PortId, id: PktId },
    /// Send a packet out of `port` ahead of every queued packet, never paused, outside the port's buffer, but
    /// otherwise an ordinary packet that the far end routes on: a mechanism serving a priority queue of its
    /// own (FastLane's notices, released by its rate and buffer caps).
    Express { port: PortId, id: PktId },
    /// Hand a packet that arrived over `port` (and was held by its arrive hook) on to the node it reached.
    Deliver { port: PortId, id: PktId },
    /// Stop sending the classes in the bit set from `port` (bit c = class c), e.g. a PFC pause took effect.
    Pause { port: PortId, classes: u8 },
    /// Send them again; an idle transmitter restarts by itself.
    Resume { port: PortId, classes: u8 },
    /// A mechanism has work for the transmitter of `port` (a packet in a queue of its own that the `SERVE`
    /// hook hands out): start it if it is idle.
    Kick { port: PortId },
    /// The transmitter of `port`, taken by a `SERVE` hook, is free again (its time counts as busy).
    Release { port: PortId },
}

/// Side effects waiting to be applied. It grows to its working size once and never allocates after that.
#[derive(Default)]
pub struct Outbox {
    q: VecDeque<Effect>,
}

impl Outbox {
    #[inline]
    pub fn push(&mut self, e: Effect) {
        self.q.push_back(e);
    }
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }
    #[inline]
    pub fn pop(&mut self) -> Option<Effect> {
        self.q.pop_front()
    }
    pub fn len(&self) -> usize {
        self.q.len()
    }
    /// Drops not applied yet (their packets are still held by the outbox, and not counted by a port).
    pub fn pending_drops(&self) -> usize {
        self.q.iter().filter(|e| matches!(e, Effect::Drop { .. })).count()
    }
    /// Packets that effects still hold (not yet queued, delivered or freed), for the ledger.
    pub fn packets(&self) -> impl Iterator<Item = PktId> + '_ {
        self.q.iter().filter_map(|e| match *e {
            Effect::Drop { id, .. }
            | Effect::Enqueue { id, .. }
            | Effect::Forward { id, .. }
            | Effect::Frame { id, .. }
            | Effect::Express { id, .. }
            | Effect::Deliver { id, .. } => Some(id),
            Effect::Pause { .. } | Effect::Resume { .. } | Effect::Kick { .. } | Effect::Release { .. } => None,
        })
    }
}

/// What a mechanism sees and may do at a hook: read the ports, make, copy, consume packets, set timers, and
/// ask for effects.
pub struct HookCtx<'a> {
    pub now: Time,
    pub ev: &'a mut EventQueue,
    pub pk: &'a mut Packets,
    pub ports: &'a [Port],
    pub out: &'a mut Outbox,
    /// Hosts are nodes 0..hosts; switches follow.
    pub hosts: usize,
    /// This mechanism's index, for its timers.
    pub mech: u8,
}

impl HookCtx<'_> {
    #[inline]
    pub fn packet(&self, id: PktId) -> &Packet {
        self.pk.get(id)
    }
    /// A packet made by a switch (a notification, a courier, a control frame), counted as such by the ledger.
    pub fn make(&mut self, p: Packet) -> PktId {
        self.pk.make(p)
    }
    /// A copy of a packet (a cached or retransmittable copy, a mirrored packet), counted as a copy.
    pub fn copy(&mut self, id: PktId) -> PktId {
        self.pk.copy(id)
    }
    /// The mechanism consumed a packet (a frame it read, a copy it no longer needs).
    pub fn absorb(&mut self, id: PktId) {
        self.pk.absorb(id)
    }
    /// Call this mechanism's `on_timer(key)` at `at`.
    pub fn timer(&mut self, at: Time, key: u32) {
        self.ev.schedule(at, Event::Mech(self.mech, key));
    }
    #[inline]
    pub fn effect(&mut self, e: Effect) {
        self.out.push(e);
    }
    /// Is `n` a host?
    pub fn is_host(&self, n: NodeId) -> bool {
        n.idx() < self.hosts
    }
}
