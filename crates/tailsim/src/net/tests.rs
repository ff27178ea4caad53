//! Port rules on hand-built packet sequences: admission, ECN marking, strict priority, paused classes.

use super::packet::{Packet, PktKind};
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

fn net_full(buffer: BufferPolicy, ecn_k: u64, wire_overhead: u32, pfabric: Option<PFabricParams>) -> (Network, PortId) {
    let spec = LeafSpine {
        leaves: 1,
        spines: 1,
        hosts_per_leaf: 4,
        edge_rate: BitsPerSec::gbps(10),
        core_rate: BitsPerSec::gbps(10),
        edge_delay: Time::ZERO,
        core_delay: Time::ZERO,
        switch_delay: Time::ZERO,
    }
    .spec();
    let prm = NetParams {
        host_tx_delay: Time::ZERO,
        host_rx_delay: Time::ZERO,
        nic_limit: None,
        buffer,
        ecn_k: [ecn_k; CLASSES],
        ecn_per_port: false,
        trim: None,
        lb: LoadBalance::Ecmp,
        pfabric,
        class_reserve: None,
        wire_overhead,
        seed: 1,
    };
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
    assert_eq!(n.ports[port.idx()].stats.drops_overflow, 1);
    assert_eq!(pk.dropped, 1);
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
        let before = pk.dropped;
        n.enqueue(Time::ZERO, &mut ev, &mut pk, port, id);
        admitted += (pk.dropped == before) as u32;
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
    assert_eq!(q.pop(1 << 1, &pk), Some(mid));
    assert_eq!(q.pop(1 << 1, &pk), Some(lo));
    assert_eq!(q.pop(1 << 1, &pk), None);
    assert_eq!(q.pop(0, &pk), Some(hi));
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
    assert_eq!(pk.dropped, 0);
    assert_eq!(n.ports[port.idx()].bytes, 2000);
    // The first packet's serialization ends after 1020 B at 10 Gbps = 816 ns.
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
            let before = pk.dropped;
            n.enqueue(Time::ZERO, ev, pk, port, id);
            pk.dropped == before
        })
        .count()
}

#[test]
fn reserved_class_buffers_keep_room_for_every_class() {
    // 10 000 B per port, 2000 B reserved for each of 3 classes: 4000 B shared.
    let (mut n, port) = net(BufferPolicy::PerPort(10_000), u64::MAX);
    n.ports[port.idx()].class_reserve = Some((2000, 3));
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
    let first = q.pop(0, &pk).unwrap();
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
    assert_eq!(pk.dropped, 1);
    // The deadline buffer has its own 3000 B, even with a larger priority number than anything below.
    let dl: Vec<PktId> = [900, 800, 700].iter().map(|&r| mk(&mut pk, 3 + r as u32, 0, r)).collect();
    for &id in &dl {
        n.enqueue(Time::ZERO, &mut ev, &mut pk, port, id);
    }
    assert_eq!(pk.dropped, 1);
    assert_eq!(n.ports[port.idx()].bytes, 6000);
    let q = &mut n.ports[port.idx()].queue;
    let order: Vec<PktId> = std::iter::from_fn(|| q.pop(0, &pk)).collect();
    // Deadline buffer by rank (earliest deadline first), then the other buffer: flow 2 (rank 5), then flow 1.
    assert_eq!(order, vec![dl[2], dl[1], dl[0], urgent_lo, lo[0], lo[1]]);
}
