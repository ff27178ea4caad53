//! Port rules on hand-built packet sequences: admission, ECN marking, strict priority, paused classes; and the
//! hooks, the outbox and the ledger, driven by a scripted test-only mechanism (`Probe`).

use super::ledger::{Fate, Origin};
use super::packet::{Packet, PktKind};
use super::queue::NO_REFILL;
use super::topology::LeafSpine;
use super::*;
use crate::units::{BitsPerSec, FlowSlot};

/// One leaf with 4 hosts; returns the network and the leaf's port towards host 0.
fn net(buffer: BufferPolicy, ecn_k: u64) -> (Network, PortId) {
    net_with_overhead(buffer, ecn_k, 0)
}

fn net_with_overhead(buffer: BufferPolicy, ecn_k: u64, wire_overhead: u32) -> (Network, PortId) {
    net_full(buffer, ecn_k, wire_overhead, None)
}

/// A leaf-spine fabric at 10 Gbps with no delays.
fn leaf_spine(leaves: u32, spines: u32, hosts_per_leaf: u32) -> super::topology::TopologySpec {
    LeafSpine {
        leaves,
        spines,
        hosts_per_leaf,
        edge_rate: BitsPerSec::gbps(10),
        core_rate: BitsPerSec::gbps(10),
        edge_delay: Time::ZERO,
        core_delay: Time::ZERO,
        switch_delay: Time::ZERO,
    }
    .spec()
}

fn net_full(buffer: BufferPolicy, ecn_k: u64, wire_overhead: u32, pfabric: Option<PFabricParams>) -> (Network, PortId) {
    let spec = leaf_spine(1, 1, 4);
    let prm = NetParams { buffer, ecn_k: [ecn_k; CLASSES], pfabric, wire_overhead, ..Default::default() };

    let n = Network::build(&spec, &prm).unwrap();
    let p = PortId(n.ports.iter().position(|p| p.node.0 == 4 && p.peer.0 == 0).unwrap() as u32);
    (n, p)
}

fn pkt(pk: &mut Packets, size: u32, class: u8) -> PktId {
    let mut p = Packet::new(PktKind::Data, FlowSlot(0), 0, NodeId(1), NodeId(0));
    p.size = size;
    p.class = class;
    p.ect = true;
    pk.alloc(p)
}

#[test]
fn per_port_limit_drops_the_packet_that_does_not_fit() {
    let (mut n, port) = net(BufferPolicy::PerPort(3000), u64::MAX);
    let (mut ev, mut pk) = (EventQueue::new(), Packets::default());
    // The first packet starts transmitting at once and leaves the buffer; then 2 fit exactly, the 4th not.
    for _ in 0..4 {
        let id = pkt(&mut pk, 1500, 0);
        n.enqueue(Time::ZERO, &mut ev, &mut pk, port, id);
    }
    assert_eq!(n.ports[port.idx()].bytes, 3000);
    assert_eq!(n.ports[port.idx()].stats.drops(DropReason::Overflow), 1);
    assert_eq!(pk.dropped(), 1);
}

#[test]
fn shared_buffer_dynamic_threshold() {
    // Pool 10 000 B, alpha 1: a queue may hold at most as much as is still free, so one congested port
    // settles at half the pool.
    let (mut n, port) = net(BufferPolicy::Shared { total: 10_000, alpha: 1.0 }, u64::MAX);
    let (mut ev, mut pk) = (EventQueue::new(), Packets::default());
    let mut admitted = 0;
    for _ in 0..20 {
        let id = pkt(&mut pk, 1000, 0);
        let before = pk.dropped();
        n.enqueue(Time::ZERO, &mut ev, &mut pk, port, id);
        admitted += (pk.dropped() == before) as u32;
    }
    // The packet in service has left the pool. A packet is admitted while q + 1000 ≤ 10 000 − q for the
    // queue q it finds, i.e. q ≤ 4500: the queue grows to 5000 B (1 in service + 5 queued).
    assert_eq!(n.ports[port.idx()].bytes, 5000);
    assert_eq!(admitted, 6);
    assert_eq!(n.switches[0].used, 5000);
}

#[test]
fn ecn_marks_when_the_queue_seen_on_arrival_exceeds_k() {
    let (mut n, port) = net(BufferPolicy::Unlimited, 3000);
    let (mut ev, mut pk) = (EventQueue::new(), Packets::default());
    let ids: Vec<PktId> = (0..6).map(|_| pkt(&mut pk, 1000, 0)).collect();
    for &id in &ids {
        n.enqueue(Time::ZERO, &mut ev, &mut pk, port, id);
    }
    // Queue seen by packets 1..5 (packet 0 went straight to the wire): 0, 1000, 2000, 3000, 4000 → only the
    // last exceeds K = 3000.
    let marks: Vec<bool> = ids.iter().map(|&i| pk.get(i).ce).collect();
    assert_eq!(marks, vec![false, false, false, false, false, true]);
    assert_eq!(n.ports[port.idx()].stats.ecn_marks, 1);
}

#[test]
fn strict_priority_and_paused_classes() {
    let (mut n, port) = net(BufferPolicy::Unlimited, u64::MAX);
    let (mut ev, mut pk) = (EventQueue::new(), Packets::default());
    let first = pkt(&mut pk, 100, 7);
    n.enqueue(Time::ZERO, &mut ev, &mut pk, port, first); // occupies the transmitter
    let lo = pkt(&mut pk, 100, 5);
    let hi = pkt(&mut pk, 100, 1);
    let mid = pkt(&mut pk, 100, 3);
    for id in [lo, hi, mid] {
        n.enqueue(Time::ZERO, &mut ev, &mut pk, port, id);
    }
    let q = &mut n.ports[port.idx()].queue;
    // Class 1 paused (PFC): class 3 goes first, then 5, and class 1 waits.
    let id = |x: Option<(PktId, u32, u8)>| x.map(|(id, _, _)| id);
    assert_eq!(id(q.pop(1 << 1, false, &pk)), Some(mid));
    assert_eq!(id(q.pop(1 << 1, false, &pk)), Some(lo));
    assert_eq!(q.pop(1 << 1, false, &pk), None);
    assert_eq!(q.pop(0, false, &pk), Some((hi, 100, NO_REFILL)));
}

#[test]
fn wire_overhead_takes_wire_time_but_no_buffer() {
    // 2000 B of buffer: two 1000 B packets fit although each takes 1020 B of wire time.
    let (mut n, port) = net_with_overhead(BufferPolicy::PerPort(2000), u64::MAX, 20);
    let (mut ev, mut pk) = (EventQueue::new(), Packets::default());
    for _ in 0..3 {
        let id = pkt(&mut pk, 1000, 0);
        n.enqueue(Time::ZERO, &mut ev, &mut pk, port, id);
    }
    assert_eq!(pk.dropped(), 0);
    assert_eq!(n.ports[port.idx()].bytes, 2000);
    // The first packet's serialization ends after 1020 B at 10 Gbps = 816 ns: it reaches the far end of the
    // zero-delay link then, and the transmitter is free for the next one.
    assert_eq!(n.ports[port.idx()].busy_until, Time::ns(816));
    assert_eq!(ev.pop(), Some((Time::ns(816), Event::WireArrival(port))));
    assert_eq!(ev.pop(), Some((Time::ns(816), Event::TxDone(port))));
}

/// Offer `n` packets of `size` bytes in `class` to `port`; returns how many were admitted.
fn offer(
    n: &mut Network,
    ev: &mut EventQueue,
    pk: &mut Packets,
    port: PortId,
    count: usize,
    size: u32,
    class: u8,
) -> usize {
    (0..count)
        .filter(|_| {
            let id = pkt(pk, size, class);
            let before = pk.dropped();
            n.enqueue(Time::ZERO, ev, pk, port, id);
            pk.dropped() == before
        })
        .count()
}

#[test]
fn a_class_reserve_keeps_its_bytes_and_classes_in_eight_bytes() {
    use port::ClassReserve;
    assert_eq!(ClassReserve::new(None).get(), None);
    assert_eq!(ClassReserve::new(Some((0, 1))).get(), Some((0, 1)), "a reserve of no bytes is still one");
    assert_eq!(ClassReserve::new(Some((15_000, 8))).get(), Some((15_000, 8)));
    assert_eq!(ClassReserve::new(Some((ClassReserve::MAX, 8))).get(), Some((ClassReserve::MAX, 8)));
}

#[test]
fn reserved_class_buffers_keep_room_for_every_class() {
    // 10 000 B per port, 2000 B reserved for each of 3 classes: 4000 B shared.
    let (mut n, port) = net(BufferPolicy::PerPort(10_000), u64::MAX);
    n.ports[port.idx()].class_reserve = port::ClassReserve::new(Some((2000, 3)));
    let (mut ev, mut pk) = (EventQueue::new(), Packets::default());
    // Class 2 floods: 1 packet on the wire, then its 2000 B reservation plus the 4000 B shared part.
    assert_eq!(offer(&mut n, &mut ev, &mut pk, port, 10, 1000, 2), 7);
    assert_eq!(n.ports[port.idx()].bytes, 6000);
    // Class 0 still gets its own reservation, and no more (the shared part is used up).
    assert_eq!(offer(&mut n, &mut ev, &mut pk, port, 5, 1000, 0), 2);
    // Class 7 has no reservation and the shared part is full.
    assert_eq!(offer(&mut n, &mut ev, &mut pk, port, 1, 1000, 7), 0);
    // Draining class 0 (strict priority) frees only its reservation: class 2 still cannot grow.
    let q = &mut n.ports[port.idx()].queue;
    let (first, size, _) = q.pop(0, false, &pk).unwrap();
    assert_eq!(size, pk.get(first).size, "the slot keeps the size");
    assert_eq!(pk.get(first).class, 0);
    n.ports[port.idx()].bytes -= 1000;
    assert_eq!(offer(&mut n, &mut ev, &mut pk, port, 1, 1000, 2), 0);
    assert_eq!(offer(&mut n, &mut ev, &mut pk, port, 1, 1000, 0), 1);
}

#[test]
fn two_class_pfabric_ports_serve_the_deadline_buffer_first_each_with_its_own_limit() {
    let pf = Some(PFabricParams { strict: false, classes: 2 });
    let (mut n, port) = net_full(BufferPolicy::PerPort(3000), u64::MAX, 0, pf);
    let (mut ev, mut pk) = (EventQueue::new(), Packets::default());
    let mk = |pk: &mut Packets, flow: u32, class: u8, rank: u64| {
        let mut p = Packet::new(PktKind::Data, FlowSlot(flow), 0, NodeId(1), NodeId(0));
        p.size = 1000;
        p.class = class;
        p.rank = rank;
        pk.alloc(p)
    };
    let busy = mk(&mut pk, 9, 1, 0);
    n.enqueue(Time::ZERO, &mut ev, &mut pk, port, busy); // on the wire
                                                         // Non-deadline buffer: 3 packets fill it; a fourth more urgent one evicts the least urgent.
    let lo: Vec<PktId> = [50, 60, 70].iter().map(|&r| mk(&mut pk, 1, 1, r)).collect();
    for &id in &lo {
        n.enqueue(Time::ZERO, &mut ev, &mut pk, port, id);
    }
    let urgent_lo = mk(&mut pk, 2, 1, 5);
    n.enqueue(Time::ZERO, &mut ev, &mut pk, port, urgent_lo);
    assert_eq!(pk.dropped(), 1);
    // The deadline buffer has its own 3000 B, even with a larger priority number than anything below.
    let dl: Vec<PktId> = [900, 800, 700].iter().map(|&r| mk(&mut pk, 3 + r as u32, 0, r)).collect();
    for &id in &dl {
        n.enqueue(Time::ZERO, &mut ev, &mut pk, port, id);
    }
    assert_eq!(pk.dropped(), 1);
    assert_eq!(n.ports[port.idx()].bytes, 6000);
    let q = &mut n.ports[port.idx()].queue;
    let order: Vec<PktId> = std::iter::from_fn(|| q.pop(0, false, &pk).map(|x| x.0)).collect();
    // Deadline buffer by rank (earliest deadline first), then the other buffer: flow 2 (rank 5), then flow 1.
    assert_eq!(order, vec![dl[2], dl[1], dl[0], urgent_lo, lo[0], lo[1]]);
}

// ---- Hooks, outbox and ledger, with a scripted mechanism -------------------------------------------------

use super::hooks::{Admit, Arrive, Effect, HookCtx, HookSet};
use super::ledger::{check, LedgerError};
use super::mech::{Hooks, Mech};
use crate::engine::Event;

/// A test-only mechanism whose behaviour the test scripts.
#[derive(Default)]
pub struct Probe {
    /// Hold this many packets at admission, release them all at `release_at` (timer key 0).
    hold: usize,
    release_at: Time,
    held: Vec<(PortId, PktId)>,
    /// Copy every packet transmitted; keep the copy until the original arrives, then absorb it.
    copy: bool,
    /// ... but forget the copy (a bug the ledger must catch).
    leak: bool,
    copies: std::collections::VecDeque<PktId>,
    /// Consume link-local frames at arrival.
    consume_frames: bool,
    frames_seen: u64,
    dequeued: u64,
    drops_seen: u64,
}

impl Hooks for Probe {
    const NAME: &'static str = "probe";
    const HOOKS: HookSet =
        HookSet::ADMIT.with(HookSet::DEQUEUE).with(HookSet::TRANSMIT).with(HookSet::ARRIVE).with(HookSet::DROP);
    fn on_admit(&mut self, c: &mut HookCtx, at: PortId, id: PktId) -> Admit {
        if self.held.len() < self.hold {
            if self.held.is_empty() {
                c.timer(self.release_at, 0);
            }
            self.held.push((at, id));
            return Admit::Hold;
        }
        Admit::Queue
    }
    fn on_timer(&mut self, c: &mut HookCtx, key: u32) {
        assert_eq!(key, 0);
        for (port, id) in self.held.drain(..) {
            c.effect(Effect::Enqueue { port, id });
        }
        self.hold = 0;
    }
    fn on_dequeue(&mut self, _c: &mut HookCtx, _at: PortId, _id: PktId) {
        self.dequeued += 1;
    }
    fn on_transmit(&mut self, c: &mut HookCtx, _at: PortId, id: PktId) {
        if self.copy && c.packet(id).kind == PktKind::Data {
            let copy = c.copy(id);
            if !self.leak {
                self.copies.push_back(copy);
            }
        }
    }
    fn on_arrive(&mut self, c: &mut HookCtx, _at: PortId, id: PktId) -> Arrive {
        if c.packet(id).kind == PktKind::Frame {
            self.frames_seen += 1;
            if self.consume_frames {
                c.absorb(id);
                return Arrive::Consumed;
            }
        } else if let Some(copy) = self.copies.pop_front() {
            c.absorb(copy); // the original made it: its copy is no longer needed
        }
        Arrive::Pass
    }
    fn on_drop(&mut self, _c: &mut HookCtx, _at: PortId, _id: PktId, _why: DropReason) {
        self.drops_seen += 1;
    }
    fn held(&self, f: &mut dyn FnMut(PktId)) {
        self.held.iter().for_each(|&(_, id)| f(id));
        self.copies.iter().for_each(|&id| f(id));
    }
}

fn probe(n: &Network) -> &Probe {
    n.mechs.iter().find_map(|m| if let Mech::Probe(p) = m { Some(p) } else { None }).unwrap()
}

/// Run the network's events until `until` (packets reaching a host are consumed there), draining the outbox
/// after each, as the simulation does. Returns the packets delivered to hosts.
fn run_net(n: &mut Network, ev: &mut EventQueue, pk: &mut Packets, until: Time) -> Vec<PktId> {
    run_net_timed(n, ev, pk, until).into_iter().map(|(_, id)| id).collect()
}

/// As `run_net`, with when each packet reached its host.
fn run_net_timed(n: &mut Network, ev: &mut EventQueue, pk: &mut Packets, until: Time) -> Vec<(Time, PktId)> {
    let mut got = vec![];
    let mut delivered = vec![];
    while ev.peek_time().is_some_and(|t| t <= until) {
        let (now, e) = ev.pop().unwrap();
        let d = match e {
            Event::TxDone(p) => {
                n.on_tx_done(now, ev, pk, p);
                None
            }
            Event::WireArrival(p) => n.on_wire_arrival(now, ev, pk, p),
            Event::SwitchForward(s) => {
                n.on_switch_forward(now, ev, pk, s);
                None
            }
            Event::Mech(m, k) => {
                n.on_mech_timer(now, ev, pk, m, k);
                None
            }
            other => panic!("unexpected event {other:?}"),
        };
        n.drain(now, ev, pk, &mut delivered);
        for (_, id) in d.into_iter().chain(delivered.drain(..)) {
            got.push((now, id));
            pk.consume(id);
        }
    }
    got
}

/// The leaf's port towards the spine, in the `net` fabric.
fn uplink(n: &Network) -> PortId {
    PortId(n.ports.iter().position(|p| p.node.0 == 4 && p.peer.0 == 5).unwrap() as u32)
}

#[test]
fn ports_know_their_reverse() {
    let (n, _) = net(BufferPolicy::Unlimited, u64::MAX);
    for (i, p) in n.ports.iter().enumerate() {
        let r = &n.ports[p.reverse.idx()];
        assert_eq!((r.node, r.peer, r.reverse), (p.peer, p.node, PortId(i as u32)));
    }
}

#[test]
fn a_paused_class_sends_nothing_until_resumed_then_the_transmitter_restarts_by_itself() {
    let (mut n, port) = net(BufferPolicy::Unlimited, u64::MAX);
    let (mut ev, mut pk) = (EventQueue::new(), Packets::default());
    let mut sink = vec![];
    n.out.push(Effect::Pause { port, classes: 1 << 2 });
    n.drain(Time::ZERO, &mut ev, &mut pk, &mut sink);
    let paused: Vec<PktId> = (0..3).map(|_| pkt(&mut pk, 1500, 2)).collect();
    for &id in &paused {
        n.enqueue(Time::ZERO, &mut ev, &mut pk, port, id);
    }
    let other = pkt(&mut pk, 1500, 5);
    n.enqueue(Time::ZERO, &mut ev, &mut pk, port, other);
    let got = run_net(&mut n, &mut ev, &mut pk, Time::ms(1));
    assert_eq!(got, vec![other], "only the class that is not paused may leave");
    assert!(!n.ports[port.idx()].transmitting(Time::ms(1)) && ev.is_empty(), "nothing to do while paused");
    assert_eq!(n.ports[port.idx()].bytes, 4500);
    // Resume: no event is pending, yet the transmitter starts at once.
    n.out.push(Effect::Resume { port, classes: 1 << 2 });
    n.drain(Time::ms(1), &mut ev, &mut pk, &mut sink);
    assert!(n.ports[port.idx()].transmitting(Time::ms(1)), "resume restarts an idle transmitter");
    let got = run_net(&mut n, &mut ev, &mut pk, Time::ms(2));
    assert_eq!(got, paused);
    check(&pk, &n).unwrap();
}

#[test]
fn a_link_local_frame_is_consumed_by_the_peer_mechanism_and_never_forwarded() {
    for consume in [true, false] {
        let (mut n, _) = net(BufferPolicy::Unlimited, u64::MAX);
        let up = uplink(&n);
        n.install(Mech::Probe(Probe { consume_frames: consume, ..Default::default() }), [up]);
        let (mut ev, mut pk) = (EventQueue::new(), Packets::default());
        // A frame addressed to host 0 (were it routed, the spine would send it back down to it).
        let mut f = Packet::new(PktKind::Frame, FlowSlot(0), 0, NodeId(4), NodeId(0));
        f.size = 64;
        let id = pk.make(f);
        n.out.push(Effect::Frame { port: up, id });
        let mut sink = vec![];
        n.drain(Time::ZERO, &mut ev, &mut pk, &mut sink);
        let got = run_net(&mut n, &mut ev, &mut pk, Time::ms(1));
        assert!(got.is_empty());
        assert_eq!(probe(&n).frames_seen, 1);
        assert_eq!(n.ports[up.idx()].stats.tx_packets, 1);
        let spine_tx: u64 = n.ports.iter().filter(|p| p.node.0 == 5).map(|p| p.stats.tx_packets).sum();
        assert_eq!(spine_tx, 0, "a link-local frame was forwarded (consume = {consume})");
        let unclaimed = n.ports[up.idx()].stats.drops(DropReason::Unclaimed);
        assert_eq!((pk.ended_as(Fate::Absorbed), unclaimed), if consume { (1, 0) } else { (0, 1) });
        check(&pk, &n).unwrap();
    }
}

#[test]
fn control_frames_go_ahead_of_the_queue_and_of_a_pause() {
    let (mut n, port) = net(BufferPolicy::Unlimited, u64::MAX);
    let (mut ev, mut pk) = (EventQueue::new(), Packets::default());
    n.ports[port.idx()].paused = 0xff;
    for _ in 0..2 {
        let id = pkt(&mut pk, 1500, 0);
        n.enqueue(Time::ZERO, &mut ev, &mut pk, port, id);
    }
    let id = pk.make(Packet::new(PktKind::Frame, FlowSlot(0), 0, NodeId(4), NodeId(0)));
    n.out.push(Effect::Frame { port, id });
    n.drain(Time::ZERO, &mut ev, &mut pk, &mut vec![]);
    run_net(&mut n, &mut ev, &mut pk, Time::ms(1));
    assert_eq!(n.ports[port.idx()].stats.tx_packets, 1, "the frame, and nothing paused");
    assert_eq!(n.ports[port.idx()].stats.drops(DropReason::Unclaimed), 1, "no mechanism at the host NIC");
    check(&pk, &n).unwrap();
}

#[test]
fn a_held_packet_is_neither_dropped_nor_counted_twice() {
    let (mut n, port) = net(BufferPolicy::PerPort(3000), u64::MAX);
    n.install(Mech::Probe(Probe { hold: 2, release_at: Time::us(50), ..Default::default() }), [port]);
    let (mut ev, mut pk) = (EventQueue::new(), Packets::default());
    let ids: Vec<PktId> = (0..4).map(|_| pkt(&mut pk, 1500, 0)).collect();
    for &id in &ids {
        n.enqueue(Time::ZERO, &mut ev, &mut pk, port, id);
    }
    // Two held, one transmitting, one queued: every one counted exactly once.
    assert_eq!(n.packets_in_network(), 4);
    check(&pk, &n).unwrap();
    let got = run_net(&mut n, &mut ev, &mut pk, Time::us(40));
    assert_eq!(got, ids[2..].to_vec());
    check(&pk, &n).unwrap();
    let got = run_net(&mut n, &mut ev, &mut pk, Time::ms(1));
    assert_eq!(got, ids[..2].to_vec(), "released in order after the hold");
    assert_eq!((pk.dropped(), pk.ended_as(Fate::Delivered)), (0, 4));
    assert_eq!(probe(&n).dequeued, 4);
    check(&pk, &n).unwrap();
}

#[test]
fn copies_are_counted_and_a_leaked_copy_fails_the_ledger_by_name() {
    for leak in [false, true] {
        let (mut n, port) = net(BufferPolicy::Unlimited, u64::MAX);
        n.install(Mech::Probe(Probe { copy: true, leak, ..Default::default() }), [port]);
        let (mut ev, mut pk) = (EventQueue::new(), Packets::default());
        for _ in 0..3 {
            let id = pkt(&mut pk, 1500, 0);
            n.enqueue(Time::ZERO, &mut ev, &mut pk, port, id);
        }
        run_net(&mut n, &mut ev, &mut pk, Time::ms(1));
        assert_eq!(pk.made[Origin::Copy as usize], 3);
        match (leak, check(&pk, &n)) {
            (false, r) => {
                r.unwrap();
                assert_eq!(pk.ended_as(Fate::Absorbed), 3);
            }
            (true, Err(e @ LedgerError::Unbalanced { category: "copies", live: 3, held: 0, .. })) => {
                assert!(e.to_string().contains("copies") && e.to_string().contains("leaked"), "{e}");
            }
            (true, r) => panic!("a leaked copy must fail the ledger, got {r:?}"),
        }
    }
}

#[test]
fn drop_hooks_see_the_packet_before_it_is_freed() {
    let (mut n, port) = net(BufferPolicy::PerPort(1500), u64::MAX);
    n.install(Mech::Probe(Probe::default()), [port]);
    let (mut ev, mut pk) = (EventQueue::new(), Packets::default());
    for _ in 0..4 {
        let id = pkt(&mut pk, 1500, 0);
        n.enqueue(Time::ZERO, &mut ev, &mut pk, port, id);
    }
    // Two overflowed; their packets wait in the outbox for the hook, held there and not yet counted.
    assert_eq!((pk.dropped(), n.out.pending_drops(), n.ports[port.idx()].stats.all_drops()), (0, 2, 0));
    check(&pk, &n).unwrap();
    n.drain(Time::ZERO, &mut ev, &mut pk, &mut vec![]);
    assert_eq!((pk.dropped(), probe(&n).drops_seen), (2, 2));
    assert_eq!(n.ports[port.idx()].stats.drops(DropReason::Overflow), 2);
    check(&pk, &n).unwrap();
}

#[test]
fn pfc_drain_bytes_are_cumulative_over_higher_priorities() {
    use super::mech::pfc::{Pfc, PfcParams};
    // Host 0's port at the leaf is paused, so packets from the spine pile up in the leaf, charged to its
    // ingress port from the spine: 6 x 1500 B of class 1, then 1500 B of class 6. Class 6's own bytes are far
    // below the threshold, but its drain bytes include class 1's, so the spine must stop sending class 6 too.
    let (mut n, port) = net(BufferPolicy::Unlimited, u64::MAX);
    let prm = PfcParams { pause: 8192, unpause: 4557, response: Time::ZERO };
    let ports: Vec<PortId> = n.switch_ports().collect();
    n.install(Mech::Pfc(Pfc::new(prm, n.ports.len())), ports);
    n.ports[port.idx()].paused = 0xff;
    let spine_down = PortId(n.ports.iter().position(|p| p.node.0 == 5 && p.peer.0 == 4).unwrap() as u32);
    let (mut ev, mut pk) = (EventQueue::new(), Packets::default());
    for class in [1, 1, 1, 1, 1, 1, 6] {
        let id = pkt(&mut pk, 1500, class);
        n.enqueue(Time::ZERO, &mut ev, &mut pk, spine_down, id);
    }
    run_net(&mut n, &mut ev, &mut pk, Time::ms(1));
    let paused = n.ports[spine_down.idx()].paused;
    assert_eq!(paused, 0b1111_1110, "classes 1-7 paused at the spine, class 0 not: {paused:08b}");
    check(&pk, &n).unwrap();
}

/// Two leaves of two hosts and three spines, 10 Gbps: leaf0 (node 4) has three equal-cost uplinks to leaf1's
/// hosts. The uplinks are paused, so what is enqueued on them stays. Returns the network and the uplinks.
fn three_uplinks() -> (Network, Vec<PortId>) {
    let mut n = Network::build(&leaf_spine(2, 3, 2), &NetParams::default()).unwrap();
    let ups: Vec<PortId> = (0..n.ports.len() as u32)
        .map(PortId)
        .filter(|p| n.ports[p.idx()].node.0 == 4 && n.ports[p.idx()].peer.0 >= 6)
        .collect();
    for p in &ups {
        n.ports[p.idx()].paused = 0xff;
    }
    (n, ups)
}

/// Queue `kb` KB of class `class` at `port`.
fn fill(n: &mut Network, pk: &mut Packets, ev: &mut EventQueue, port: PortId, kb: u32, class: u8) {
    for _ in 0..kb {
        let id = pkt(pk, 1000, class);
        n.enqueue(Time::ZERO, ev, pk, port, id);
    }
}

/// How often DeTail's rule picks each uplink for `draws` packets of `class` (to host 2, on leaf1).
fn favoured_choices(
    n: &Network,
    pk: &mut Packets,
    ev: &mut EventQueue,
    ups: &[PortId],
    class: u8,
    draws: u32,
) -> Vec<u32> {
    use super::mech::adaptive_lb::{AdaptiveLb, Rule};
    use super::mech::Hooks;
    let mut alb = AdaptiveLb::new(1, Rule::Favoured(vec![16 << 10, 64 << 10]), n.hosts.len() + n.switches.len());
    let mut p = Packet::new(PktKind::Data, FlowSlot(0), 0, NodeId(0), NodeId(2));
    p.size = 1500;
    p.class = class;
    let id = pk.alloc(p);
    let mut out = super::hooks::Outbox::default();
    let mut counts = vec![0; ups.len()];
    for _ in 0..draws {
        let mut c =
            HookCtx { now: Time::ZERO, ev: &mut *ev, pk: &mut *pk, ports: &n.ports, out: &mut out, hosts: 4, mech: 0 };
        let chosen = alb.on_ingress(&mut c, PortId(0), id, ups).unwrap();
        counts[ups.iter().position(|&u| u == chosen).expect("a shortest-path port")] += 1;
    }
    counts
}

#[test]
fn detail_alb_always_takes_the_lone_port_under_the_first_threshold() {
    let (mut n, ups) = three_uplinks();
    let (mut ev, mut pk) = (EventQueue::new(), Packets::default());
    fill(&mut n, &mut pk, &mut ev, ups[0], 20, 1);
    fill(&mut n, &mut pk, &mut ev, ups[1], 10, 1);
    fill(&mut n, &mut pk, &mut ev, ups[2], 70, 1);
    assert_eq!(favoured_choices(&n, &mut pk, &mut ev, &ups, 1, 1000), vec![0, 1000, 0]);
    // Drain bytes count only classes of equal or higher priority: 40 KB of class 6 on the first uplink do not
    // hold back a class-0 packet, for which every uplink is empty.
    let (mut n, ups) = three_uplinks();
    fill(&mut n, &mut pk, &mut ev, ups[0], 40, 6);
    fill(&mut n, &mut pk, &mut ev, ups[1], 17, 0);
    fill(&mut n, &mut pk, &mut ev, ups[2], 17, 0);
    assert_eq!(favoured_choices(&n, &mut pk, &mut ev, &ups, 0, 1000), vec![1000, 0, 0]);
}

#[test]
fn detail_alb_is_uniform_within_a_favoured_set() {
    // Chi-squared with a fixed seed: under 64 KB, uplinks 0 and 1 equally (1 degree of freedom: < 10.83 at
    // p = 0.001); uplink 2 (70 KB) never. Then all three over 64 KB: uniform over three (< 13.82, 2 dof).
    let chi2 = |c: &[u32]| {
        let e = c.iter().sum::<u32>() as f64 / c.len() as f64;
        c.iter().map(|&o| (o as f64 - e).powi(2) / e).sum::<f64>()
    };
    let (mut n, ups) = three_uplinks();
    let (mut ev, mut pk) = (EventQueue::new(), Packets::default());
    fill(&mut n, &mut pk, &mut ev, ups[0], 20, 2);
    fill(&mut n, &mut pk, &mut ev, ups[1], 30, 2);
    fill(&mut n, &mut pk, &mut ev, ups[2], 70, 2);
    let c = favoured_choices(&n, &mut pk, &mut ev, &ups, 2, 10_000);
    assert_eq!(c[2], 0, "{c:?}");
    assert!(chi2(&c[..2]) < 10.83, "{c:?}");
    let (mut n, ups) = three_uplinks();
    for &u in &ups {
        fill(&mut n, &mut pk, &mut ev, u, 70, 0);
    }
    let c = favoured_choices(&n, &mut pk, &mut ev, &ups, 0, 30_000);
    assert!(chi2(&c) < 13.82, "{c:?}");
}

mod transmitter;

#[test]
fn the_prefetcher_reads_ahead_over_a_frame_addressed_to_a_switch_without_harm() {
    // A PFC pause from the leaf to the spine is addressed to the spine, which no route leads to: the deep
    // prefetch stages (route entry, predicted egress) must pass over it, as the arrival does.
    let (mut n, _) = net(BufferPolicy::Unlimited, u64::MAX);
    let up = uplink(&n);
    let (mut ev, mut pk) = (EventQueue::new(), Packets::default());
    let mut f = Packet::new(PktKind::Frame, FlowSlot(0), 0, NodeId(4), NodeId(5));
    f.size = 64;
    let id = pk.make(f);
    n.ports[up.idx()].onto_wire(&mut ev, up, Time::ns(100), id);
    n.prefetch_port(up, true);
    n.prefetch_arrival_port(up);
    n.prefetch_wire_next(up);
    n.prefetch_wire_packet(up, &pk);
    n.prefetch_route(up, &pk);
    n.prefetch_egress(up, &pk);
    // A port that deferred its end of serialization: the arrival's stages walk its queue too.
    n.ports[up.idx()].defer = super::port::Defer::Deferred;
    assert!(n.deferred(up) && !n.deferred(PortId(u32::MAX)));
    n.prefetch_catch_up(up);
    for stage in 0..4 {
        n.prefetch_queue_head(up, stage);
    }
}
