//! Stage: egress. Admission to a port's queue (the `ADMIT` hook, then the buffer policy), ECN marking, NDP
//! trimming, pFabric's admission with eviction; dequeue to the transmitter (control frames first, then the
//! queue discipline over the classes that are not paused; the `DEQUEUE` hook); pause and resume of classes.

use super::hooks::{Admit, HookSet};
use super::lazy::owes_start;
use super::packet::Packet;
use super::port::{DropReason, Port};
use super::queue::{QueueDisc, NO_REFILL};
use super::{drop_at, Network, Packets};
use crate::engine::{Event, EventQueue};
use crate::net::hooks::Outbox;
use crate::units::{PktId, PortId, Time};

/// What takes the start of a port's next serialization off the fast path: a control frame waiting, or a
/// mechanism that sees packets leave the queue (`DEQUEUE`) or takes the transmitter itself (`SERVE`).
const OFF_FAST_START: HookSet = HookSet::FRAMES.with(HookSet::DEQUEUE).with(HookSet::SERVE);

/// Switch buffer management.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BufferPolicy {
    Unlimited,
    /// Each port may hold at most this many bytes.
    PerPort(u64),
    /// One pool per switch; a class queue may grow while its bytes ≤ alpha × (free pool bytes)
    /// (Choudhury–Hahne dynamic thresholds).
    Shared {
        total: u64,
        alpha: f64,
    },
}

impl Network {
    /// A packet arrives at egress port `port`: the mechanisms' verdict first (if any), then the port's own
    /// admission. Always inlined: a hook test in front of the out-of-line admission.
    #[inline(always)]
    pub fn enqueue(&mut self, now: Time, ev: &mut EventQueue, pk: &mut Packets, port: PortId, id: PktId) {
        // The port's record once for both tests: a catch-up changes no hook of the port (a port that defers
        // has none that a mechanism sets, net/lazy.rs).
        let pt = &self.ports[port.idx()];
        let hooked = pt.hooks.has(HookSet::ADMIT);
        let key = (now, ev.current_tie());
        if owes_start(pt, port, key) {
            self.catch_up_port(ev, pk, port, key);
        }
        if hooked {
            let verdict = self.each_mech(now, ev, pk, HookSet::ADMIT, |m, c| match m.on_admit(c, port, id) {
                Admit::Queue => None,
                v => Some(v),
            });
            match verdict {
                None | Some(Admit::Queue) => {}
                Some(Admit::Accept) => return self.admit::<true>(now, ev, pk, port, id),
                Some(Admit::Hold) => return,
                Some(Admit::Drop(why)) => {
                    return drop_at(&mut self.ports[port.idx()], port, pk, &mut self.out, id, why);
                }
            }
        }
        self.admit_inline::<false>(now, ev, pk, port, id);
    }

    /// `admit_inline`, out of line: for the callers off the packet-hop's path (a mechanism's verdict or
    /// effect, a NIC's released packet), which need not grow the run loop's code.
    #[inline(never)]
    pub(super) fn admit<const LOSSLESS: bool>(
        &mut self,
        now: Time,
        ev: &mut EventQueue,
        pk: &mut Packets,
        port: PortId,
        id: PktId,
    ) {
        self.admit_inline::<LOSSLESS>(now, ev, pk, port, id)
    }

    /// Buffer admission, ECN marking and queueing at an egress port (no hooks: also how a mechanism's
    /// released or injected packet joins a queue). `LOSSLESS`: past the buffer's limit (`Admit::Accept`); a
    /// constant, so the ordinary path carries no test for it. Always inlined into `enqueue`, hence into the
    /// switch's ingress and the host's egress: out of line, the call's saving and restoring of registers,
    /// and the arguments it could not see, cost 4–6 % of all instructions (docs/performance-log.md, change 44).
    #[inline(always)]
    fn admit_inline<const LOSSLESS: bool>(
        &mut self,
        now: Time,
        ev: &mut EventQueue,
        pk: &mut Packets,
        port: PortId,
        id: PktId,
    ) {
        // The port, its switch (none at a host) and the packet, each found once: with every field reached
        // through `self` again, the port was indexed five times and the switch three on this path, each a
        // reload of the vector and a bounds test after the stores between them (docs/performance-log.md,
        // change 34).
        let hosts = self.hosts.len();
        let pt = &mut self.ports[port.idx()];
        let mut sw = pt.node.idx().checked_sub(hosts).map(|i| &mut self.switches[i]);
        let (policy, used) = sw.as_ref().map_or((BufferPolicy::Unlimited, 0), |s| (s.buffer, s.used));
        let out = &mut self.out;
        // Bytes that leave the buffer to make room (pFabric evicts lower-priority packets).
        let mut evicted_bytes = 0u64;
        let size = match &mut pt.queue {
            QueueDisc::PrioFifo(q) | QueueDisc::Ordered(q, _) => {
                let p = pk.get_mut(id);
                let (mut size, mut class) = (p.size as u64, p.class as usize);
                if let Some(lim) = pt.trim.get() {
                    if q.class_bytes(class) + size > lim && p.payload > 0 {
                        pt.stats.trims += 1;
                        (size, class) = trim(p);
                    }
                }
                let cap = port_limit(pt.limit, policy);
                let admit = LOSSLESS
                    || match (cap, policy) {
                        (Some(total), _) => match pt.class_reserve.get() {
                            Some((reserve, classes)) => {
                                q.admits_reserved(class, size, total, reserve, classes as usize)
                            }
                            None => pt.bytes + size <= total,
                        },
                        (None, BufferPolicy::Unlimited | BufferPolicy::PerPort(_)) => true,
                        (None, BufferPolicy::Shared { total, alpha }) => {
                            used + size <= total
                                && (q.class_bytes(class) + size) as f64 <= alpha * (total - used) as f64
                        }
                    };
                if !admit {
                    drop_at(pt, port, pk, out, id, DropReason::Overflow);
                    return;
                }
                // ECN: mark when the class queue seen by the arriving packet already exceeds K (DCTCP's rule).
                if p.ect && ecn_bytes(pt.ecn_mode, pt.bytes, q, class) > pt.ecn_k[class] {
                    p.ce = true;
                    pt.stats.ecn_marks += 1;
                }
                p.enq_time = now;
                // A queue's bytes are 0 only when it is empty, which the shortcut below relies on: every packet
                // has bytes (config/build.rs and config/homa.rs refuse headers, ACKs and segments of none).
                debug_assert!(size > 0, "a packet of no bytes");
                if pt.bytes == 0 && pt.paused & (1 << class) == 0 && Network::idle(pt, now) {
                    // Into an empty queue of an idle port: the transmitter takes it at once, as `pop` would
                    // (it is the only packet there and its class is not paused), without the queue's push and
                    // pop. It counts as queued for an instant (the port's peak bytes); the switch's buffer
                    // use goes up and back down by its size, which nothing reads in between.
                    pt.occupancy_changed(now, size);
                    match Network::serialize(pt, ev, port, now, id, size) {
                        true => self.packet_hops += 1,
                        false => self.tx_current[port.idx()] = Some((id, size as u32)),
                    }
                    return;
                }
                match &mut pt.queue {
                    QueueDisc::PrioFifo(q) => q.push(id, p),
                    QueueDisc::Ordered(q, nic) => {
                        q.count(p);
                        nic.push(id, p);
                    }
                    QueueDisc::PFabric(_) => unreachable!("a FIFO discipline"),
                }
                size
            }
            QueueDisc::PFabric(subs) => {
                let p = pk.get_mut(id);
                let size = p.size as u64;
                // As for the FIFOs: into an empty queue of an idle port, a packet that fits the buffer is the
                // one `pop` would take (its sub-buffer not paused), so it goes straight to the transmitter.
                let sub = (p.class as usize).min(subs.len() - 1);
                if pt.bytes == 0
                    && port_limit(pt.limit, policy).is_none_or(|l| size <= l)
                    && pt.paused & (1 << sub) == 0
                    && Network::idle(pt, now)
                {
                    p.enq_time = now;
                    pt.occupancy_changed(now, size);
                    match Network::serialize(pt, ev, port, now, id, size) {
                        true => self.packet_hops += 1,
                        false => self.tx_current[port.idx()] = Some((id, size as u32)),
                    }
                    return;
                }
                match admit_pfabric(pt, port, pk, out, id, policy) {
                    Some(freed) => evicted_bytes = freed,
                    None => return,
                }
                pk.get_mut(id).enq_time = now;
                size
            }
        };
        let nb = pt.bytes + size - evicted_bytes;
        pt.occupancy_changed(now, nb);
        if let Some(s) = sw.as_mut() {
            s.used = s.used + size - evicted_bytes;
        }
        // The transmitter (`kick`), on the port already found.
        if Network::free_to_start(pt, ev, port, now) {
            self.start_tx(now, ev, pk, port);
        }
    }

    /// Something waits at `port` (a packet queued, a frame, classes resumed): start the transmitter if it is
    /// free; if a fast-path packet is still being serialized, have it called when that ends (`busy_until`);
    /// if a `TxDone` is pending anyway, nothing to do.
    #[inline(always)]
    pub(super) fn kick(&mut self, now: Time, ev: &mut EventQueue, pk: &mut Packets, port: PortId) {
        if Network::free_to_start(&mut self.ports[port.idx()], ev, port, now) {
            self.start_tx(now, ev, pk, port);
        }
    }

    /// `kick`'s decision on the port's record: true if the transmitter can start now; false if a `TxDone` is
    /// pending or the slow path holds it (nothing to do), or if a fast-path serialization runs until
    /// `busy_until` (whose end is then awaited).
    #[inline(always)]
    fn free_to_start(pt: &mut Port, ev: &mut EventQueue, port: PortId, now: Time) -> bool {
        if pt.busy || pt.tx_pending {
            return false;
        }
        if now < pt.busy_until {
            let at = pt.busy_until;
            Network::await_tx_end(pt, ev, port, at);
            return false;
        }
        true
    }

    /// The transmitter of `pt` could start now and nothing holds it to the slow path: no serialization
    /// running or pending, and no control frame, `DEQUEUE` or `SERVE` hook.
    #[inline(always)]
    fn idle(pt: &Port, now: Time) -> bool {
        !pt.busy && !pt.tx_pending && now >= pt.busy_until && !pt.hooks.has(OFF_FAST_START)
    }

    /// Start serializing the next packet of an idle port: a control frame if one waits, else the queue's next
    /// packet of a class that is not paused.
    // Always inlined, into admission and the end of a serialization: out of line, its call saved and restored
    // registers around every packet's start (callgrind: −1.8 to −2.1 % of all instructions in line).
    #[inline(always)]
    pub(super) fn start_tx(&mut self, now: Time, ev: &mut EventQueue, pk: &mut Packets, port: PortId) {
        let pt = &mut self.ports[port.idx()];
        // One test for every reason to leave the fast path.
        if pt.hooks.has(OFF_FAST_START) {
            return self.start_tx_hooked(now, ev, pk, port);
        }
        self.start_queued(now, ev, pk, port);
    }

    #[inline(never)]
    fn start_tx_hooked(&mut self, now: Time, ev: &mut EventQueue, pk: &mut Packets, port: PortId) {
        if self.ports[port.idx()].hooks.has(HookSet::FRAMES) {
            return self.start_frame(now, ev, pk, port);
        }
        if self.ports[port.idx()].hooks.has(HookSet::SERVE) {
            if let Some(d) = self.each_mech(now, ev, pk, HookSet::SERVE, |m, c| m.on_serve(c, port)) {
                let pt = &mut self.ports[port.idx()];
                pt.busy = true;
                pt.tx_start = now;
                debug_assert!(d > Time::ZERO, "a pass must take time");
                return;
            }
            if !self.ports[port.idx()].hooks.has(HookSet::DEQUEUE) {
                self.start_queued(now, ev, pk, port);
                return;
            }
        }
        if let Some(id) = self.start_queued(now, ev, pk, port) {
            self.each_mech(now, ev, pk, HookSet::DEQUEUE, |m, c| {
                m.on_dequeue(c, port, id);
                None::<()>
            });
        }
    }

    /// Take the queue's next packet (of a class that is not paused) to the transmitter.
    ///
    /// The fast path (a link that is up, without `TRANSMIT` hooks): nothing can change the packet's fate
    /// between the start and the end of its serialization but the link going down (`Network::mark_tails`
    /// handles that), so it goes onto the wire now, arriving when its serialization ends plus the link's
    /// delay, and the transmitter's end needs an event only if a packet is already waiting for it. A
    /// packet-hop through an idle port is then one event (its arrival) instead of two. The slow path holds
    /// the packet in `tx_current` until its `TxDone` (link/on_tx_done).
    #[inline(always)]
    pub(super) fn start_queued(
        &mut self,
        now: Time,
        ev: &mut EventQueue,
        pk: &mut Packets,
        port: PortId,
    ) -> Option<PktId> {
        let pt = &mut self.ports[port.idx()];
        let (id, size, owed) = pt.queue.pop(pt.paused, self.refills.later, pk)?;
        let size = size as u64;
        let node = pt.node;
        match Network::serialize(pt, ev, port, now, id, size) {
            true => self.packet_hops += 1,
            false => self.tx_current[port.idx()] = Some((id, size as u32)),
        }
        if !self.is_host(node) {
            self.sw(node).used -= size;
        }
        if owed != NO_REFILL {
            self.owe_refill(port, owed);
        }
        Some(id)
    }

    /// `port`'s class `c` is owed its next head (`PrioFifo::pop` with `later`): noted for a later event, or
    /// refilled now if the list is full. Cold for the runs of the light chain, which never call it; where
    /// the deep chain runs it follows most pops, out of line either way.
    #[cold]
    #[inline(never)]
    fn owe_refill(&mut self, port: PortId, c: u8) {
        if !self.refills.owe(port, c) {
            Network::refill_head(&mut self.ports[port.idx()], c);
        }
    }

    /// The heads owed since the last call get their packets (`HeadRefills`): at each event, before it is
    /// handled. The order of a queue's packets never changes, only where its oldest one is kept: no result
    /// depends on when this runs.
    #[inline(always)]
    pub fn refill_heads(&mut self) {
        if !self.refills.is_empty() {
            self.refill_owed();
        }
    }

    #[inline(never)]
    fn refill_owed(&mut self) {
        let ports = &mut self.ports;
        self.refills.take(|p, c| Network::refill_head(&mut ports[p.idx()], c));
    }

    #[inline(always)]
    fn refill_head(pt: &mut Port, c: u8) {
        if let QueueDisc::PrioFifo(q) = &mut pt.queue {
            q.refill(c);
        }
    }

    /// Serialize packet `id` of `size` bytes, just taken off `pt`'s queue (its bytes still counted there),
    /// from `now`. The fast path (true: one more packet-hop) puts it on the wire at once; the slow path
    /// (false) holds it until its `TxDone`, and the caller records it as the port's `tx_current`.
    #[inline(always)]
    fn serialize(pt: &mut Port, ev: &mut EventQueue, port: PortId, now: Time, id: PktId, size: u64) -> bool {
        let nb = pt.bytes - size;
        pt.occupancy_changed(now, nb);
        let tx = pt.tx_time(size + pt.wire_overhead as u64);
        let done = now + tx;
        if pt.up && !pt.hooks.has(HookSet::TRANSMIT) {
            pt.busy_until = done;
            pt.stats.sent(size, tx);
            pt.onto_wire(ev, port, done + pt.delay, id);
            if nb > 0 {
                Network::await_tx_end(pt, ev, port, done);
            }
            true
        } else {
            pt.busy = true;
            pt.tx_start = now;
            ev.schedule(done, Event::TxDone(port));
            false
        }
    }

    /// A control frame goes out ahead of the queue; it takes wire time but was never in the buffer.
    #[inline(never)]
    fn start_frame(&mut self, now: Time, ev: &mut EventQueue, pk: &Packets, port: PortId) {
        let pt = &mut self.ports[port.idx()];
        let id = pt.ctl.pop_front().expect("flagged");
        if pt.ctl.is_empty() {
            pt.hooks = pt.hooks.without(HookSet::FRAMES);
        }
        pt.busy = true;
        pt.tx_start = now;
        let size = pk.get(id).size;
        let done = now + pt.tx_time(size as u64 + pt.wire_overhead as u64);
        self.tx_current[port.idx()] = Some((id, size));
        ev.schedule(done, Event::TxDone(port));
    }

    /// A `SERVE` hook's hold on the transmitter of `port` ends: the time counts as busy, and the port serves
    /// its queue again.
    pub(super) fn release(&mut self, now: Time, ev: &mut EventQueue, pk: &mut Packets, port: PortId) {
        let pt = &mut self.ports[port.idx()];
        debug_assert!(pt.busy && self.tx_current[port.idx()].is_none(), "release of a transmitter not held");
        pt.busy = false;
        pt.stats.busy_time += now - pt.tx_start;
        self.start_tx(now, ev, pk, port);
    }

    /// Classes paused at `port` send again; an idle transmitter restarts at once.
    pub fn resume(&mut self, now: Time, ev: &mut EventQueue, pk: &mut Packets, port: PortId, classes: u8) {
        let pt = &mut self.ports[port.idx()];
        pt.paused &= !classes;
        self.kick(now, ev, pk, port);
    }
}

/// pFabric admission (kept out of line so the FIFO path stays small): queue `id` or drop it, drop whatever
/// it evicts, and return the evicted bytes (None when `id` itself was dropped).
#[inline(never)]
fn admit_pfabric(
    pt: &mut Port,
    port: PortId,
    pk: &mut Packets,
    out: &mut Outbox,
    id: PktId,
    policy: BufferPolicy,
) -> Option<u64> {
    let limit = port_limit(pt.limit, policy);
    let QueueDisc::PFabric(subs) = &mut pt.queue else { unreachable!("called for pFabric ports") };
    let sub = (pk.get(id).class as usize).min(subs.len() - 1);
    let q = &mut subs[sub];
    if !q.admit(id, limit, pk) {
        drop_at(pt, port, pk, out, id, DropReason::Overflow);
        return None;
    }
    let mut victims = std::mem::take(&mut q.evicted);
    let mut freed = 0;
    for v in victims.drain(..) {
        freed += pk.get(v).size as u64;
        drop_at(pt, port, pk, out, v, DropReason::Overflow);
    }
    if let QueueDisc::PFabric(subs) = &mut pt.queue {
        subs[sub].evicted = victims; // keep the capacity
    }
    Some(freed)
}

/// A port's byte limit: its own (`limit`, a NIC's), else the switch's per-port one; none under a shared pool
/// (admission tests that separately) or without limits. One rule for the FIFO and pFabric queues.
#[inline(always)]
fn port_limit(limit: super::port::Threshold, policy: BufferPolicy) -> Option<u64> {
    match (limit.get(), policy) {
        (Some(lim), _) | (None, BufferPolicy::PerPort(lim)) => Some(lim),
        _ => None,
    }
}

/// The queue bytes ECN compares with the class's threshold.
#[inline(always)]
fn ecn_bytes(mode: super::port::EcnMode, port_bytes: u64, q: &super::queue::PrioFifo, class: usize) -> u64 {
    match mode {
        super::port::EcnMode::PerClass => q.class_bytes(class),
        super::port::EcnMode::PerPort => port_bytes,
        super::port::EcnMode::DrainBytes => (0..=class).map(|c| q.class_bytes(c)).sum(),
    }
}

/// NDP's cut payload: the packet keeps its header and jumps to class 0, where the receiver learns of the
/// loss within about one RTT instead of after a timeout. Returns the header's size and class.
#[inline(never)]
fn trim(p: &mut Packet) -> (u64, usize) {
    p.size -= p.payload;
    p.payload = 0;
    p.class = 0;
    (p.size as u64, 0)
}
