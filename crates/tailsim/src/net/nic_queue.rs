//! The order a host's NIC sends its queued packets in (`host.nic_scheduler`), when it is not strict priority
//! by class (`PrioFifo`'s own order, the default for most transports):
//!
//! - `Fifo`: one queue, first come first served whatever the class (the Homa thesis's §3.6 NIC; a packet of a
//!   paused class holds those behind it, as a real FIFO would).
//! - `FlowRoundRobin`: strict priority across classes, and within a class one packet from each flow in turn
//!   (htsim's `FairPriorityQueue`, which NDP's senders in htsim share their NIC through). A flow joins the
//!   back of its class's turn when its first packet arrives; htsim visits flows in id order instead, so
//!   the two agree on which flows share the NIC and how evenly, not on which goes first.
//!
//! Byte accounting per class (buffer admission, ECN) stays in `PrioFifo`; this only decides the order.
//! A flow's record is reused when its packets are all sent, so a run allocates only while the number of flows
//! a NIC holds at once grows.

use crate::engine::Ring;
use crate::net::packet::Packet;
use crate::net::queue::CLASSES;
use crate::units::PktId;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A hasher for small integer keys: each word is mixed in by a multiplication (Fibonacci hashing).
#[derive(Default)]
pub struct FlowHasher(u64);

impl Hasher for FlowHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.write_u64(i as u64);
    }
    fn write_u32(&mut self, i: u32) {
        self.write_u64(i as u64);
    }
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NicOrder {
    Fifo,
    FlowRoundRobin,
}

/// Flows of one class a NIC holds packets of before it finds a flow's queue in a map rather than by walking
/// the class's turn. A NIC mostly holds one or two flows' packets (NDP's senders send one per pull, so a flow's
/// queue empties and fills again with nearly every packet): the map's insert and remove at every such turn
/// were 2 % of all instructions side by side with htsim, more than the walk of a short turn costs.
const WALK: u32 = 16;

/// No flow (the end of a turn).
const NIL: u32 = u32::MAX;

/// A flow with packets at a NIC (`FlowRoundRobin`): the packet it sends next and its size, inline, the rest
/// behind it, and the next flow in its class's turn (a list through these records). One cache line: a pop
/// reads the NIC's record and this one (and the rest's front if there is one), where one queue of flows
/// and one per flow made it a chain of four dependent misses at 5,488 hosts.
#[repr(C, align(64))]
struct FlowQ {
    head: (PktId, u32),
    next: u32,
    flow: u64,
    more: Ring<(PktId, u32)>,
}

const _: () = assert!(std::mem::size_of::<FlowQ>() == 64);

/// The flows of the turn that starts at `first` (NIL: an empty one), front to back.
fn turn(flows: &[FlowQ], first: u32) -> Turn<'_> {
    Turn { flows, q: first }
}

struct Turn<'a> {
    flows: &'a [FlowQ],
    q: u32,
}

impl Iterator for Turn<'_> {
    type Item = u32;
    #[inline]
    fn next(&mut self) -> Option<u32> {
        let q = self.q;
        if q == NIL {
            return None;
        }
        self.q = self.flows[q as usize].next;
        Some(q)
    }
}

/// `repr(C)`: the fields a packet's push and pop read first, in the record's first lines (which the run
/// loop's prefetch loads ahead of a NIC's end of serialization; `prefetch_stage`).
#[repr(C)]
pub struct NicQueue {
    order: NicOrder,
    /// `of` holds every flow with packets here (some class's turn grew past `WALK`; until no more than
    /// `WALK / 4` flows are left); otherwise it is empty and a flow's queue is found by walking its turn.
    mapped: bool,
    /// Per class, the first and last flow of its turn (NIL: none): the front one sends next.
    front: [u32; CLASSES],
    back: [u32; CLASSES],
    /// The (class, flow) key and queue of the last push: a flow's packets come to its NIC in runs (a window,
    /// the packets a pull releases), and this spares the lookup, a cache miss per packet at 1,024 hosts.
    last: Option<((u8, u64), u32)>,
    /// Flows in each class's turn (all of them: the flows with packets here).
    turns: [u32; CLASSES],
    /// `FlowRoundRobin`: the flows' queues; those of flows that emptied wait in `free` (their `more` keeps its
    /// capacity).
    flows: Vec<FlowQ>,
    free: Vec<u32>,
    /// `Fifo`: every packet with its class and size (sizes kept as in `PrioFifo`).
    fifo: Ring<(PktId, u8, u32)>,
    /// Hashed with a multiply-and-shift, not SipHash: the keys are ours (callgrind: SipHash was 1.6 % of all
    /// instructions in the NDP runs side by side with htsim).
    of: HashMap<(u8, u64), u32, BuildHasherDefault<FlowHasher>>,
}

impl NicQueue {
    pub fn new(order: NicOrder) -> NicQueue {
        NicQueue {
            order,
            mapped: false,
            front: [NIL; CLASSES],
            back: [NIL; CLASSES],
            last: None,
            turns: [0; CLASSES],
            flows: Vec::new(),
            free: Vec::new(),
            fifo: Ring::default(),
            of: HashMap::default(),
        }
    }

    pub fn push(&mut self, id: PktId, p: &Packet) {
        let c = p.class;
        if self.order == NicOrder::Fifo {
            return self.fifo.push_back((id, c, p.size));
        }
        // A flow is its slot and the slot's generation: a slot freed and taken by another flow while the
        // first one's packets still wait here starts a queue of its own, so the order never depends on when
        // slots are reused (a parallel run reuses them later than the serial run, sim/parallel.rs).
        let key = (c, (p.flow.0 as u64) << 32 | p.flow_gen as u64);
        let known = match self.last {
            Some((k, q)) if k == key => Some(q),
            _ => self.find(key),
        };
        let q = match known {
            Some(q) => {
                self.flows[q as usize].more.push_back((id, p.size));
                q
            }
            None => self.open(key, (id, p.size)),
        };
        self.last = Some((key, q));
    }

    /// The queue of flow `key` if it has packets here.
    #[inline]
    fn find(&self, key: (u8, u64)) -> Option<u32> {
        if self.mapped {
            return self.of.get(&key).copied();
        }
        turn(&self.flows, self.front[key.0 as usize]).find(|&q| self.flows[q as usize].flow == key.1)
    }

    /// A queue for flow `key`, which has no packets here, holding `first`: at the back of its class's turn.
    fn open(&mut self, key: (u8, u64), first: (PktId, u32)) -> u32 {
        let (c, flow) = (key.0 as usize, key.1);
        let q = match self.free.pop() {
            Some(q) => {
                let f = &mut self.flows[q as usize];
                (f.head, f.next, f.flow) = (first, NIL, flow);
                q
            }
            None => {
                self.flows.push(FlowQ { head: first, next: NIL, flow, more: Ring::default() });
                self.flows.len() as u32 - 1
            }
        };
        match self.back[c] {
            NIL => self.front[c] = q,
            b => self.flows[b as usize].next = q,
        }
        self.back[c] = q;
        self.turns[c] += 1;
        if self.mapped {
            self.of.insert(key, q);
        } else if self.turns[c] > WALK {
            self.mapped = true;
            // Every flow in a turn (a free record is in none).
            for c in 0..CLASSES {
                for q in turn(&self.flows, self.front[c]) {
                    self.of.insert((c as u8, self.flows[q as usize].flow), q);
                }
            }
        }
        q
    }

    /// The next packet to send, its class and its size; `paused` bit c = class c held (PFC).
    pub fn pop(&mut self, paused: u8) -> Option<(PktId, usize, u32)> {
        if self.order == NicOrder::Fifo {
            let &(id, c, size) = self.fifo.front()?;
            if paused & (1 << c) != 0 {
                return None;
            }
            self.fifo.pop_front();
            return Some((id, c as usize, size));
        }
        let c = self.turn_class(paused)?;
        let q = self.front[c];
        let f = &mut self.flows[q as usize];
        let (id, size) = f.head;
        let next = f.next;
        if let Some(h) = f.more.pop_front() {
            // The flow goes to the back of its turn (it stays where it is if it is alone there).
            f.head = h;
            if next != NIL {
                f.next = NIL;
                self.front[c] = next;
                let b = self.back[c];
                self.flows[b as usize].next = q;
                self.back[c] = q;
            }
        } else {
            let flow = f.flow;
            self.front[c] = next;
            if next == NIL {
                self.back[c] = NIL;
            }
            self.turns[c] -= 1;
            if self.mapped {
                self.of.remove(&(c as u8, flow));
                if self.turns.iter().sum::<u32>() <= WALK / 4 {
                    self.of.clear();
                    self.mapped = false;
                }
            }
            self.free.push(q);
            if self.last.is_some_and(|(_, l)| l == q) {
                self.last = None;
            }
        }
        Some((id, c, size))
    }

    /// Prefetch for the next `pop`, one link of its chain per stage (a hint; results do not depend on it):
    /// stage 0, this record's first lines; 1, the record of the flow that sends next; 2, the front of that
    /// flow's other packets (which replaces its head), and 3, the record of its turn's last flow (which the
    /// flow goes behind). Each stage reads only what the one before loaded.
    #[inline(always)]
    pub fn prefetch_stage(&self, stage: u8, paused: u8) {
        use crate::engine::prefetch;
        if stage == 0 {
            return crate::engine::prefetch_lines((self as *const NicQueue).cast(), 2);
        }
        if self.order == NicOrder::Fifo {
            if stage == 1 {
                if let Some(h) = self.fifo.front() {
                    prefetch(h);
                }
            }
            return;
        }
        let Some(c) = self.turn_class(paused) else { return };
        let q = self.front[c] as usize;
        match stage {
            1 => prefetch(self.flows.as_ptr().wrapping_add(q)),
            2 => {
                if let Some(h) = self.flows.get(q).and_then(|f| f.more.front()) {
                    prefetch(h);
                }
            }
            _ => prefetch(self.flows.as_ptr().wrapping_add(self.back[c] as usize)),
        }
    }

    /// The class that would send next, if any.
    pub fn head_class(&self, paused: u8) -> Option<usize> {
        if self.order == NicOrder::Fifo {
            return self.fifo.front().map(|&(_, c, _)| c as usize).filter(|&c| paused & (1 << c) == 0);
        }
        self.turn_class(paused)
    }

    /// `FlowRoundRobin`: the first class that is not paused and has a flow in its turn.
    #[inline]
    fn turn_class(&self, paused: u8) -> Option<usize> {
        (0..CLASSES).find(|&c| paused & (1 << c) == 0 && self.front[c] != NIL)
    }

    pub fn iter(&self) -> Box<dyn Iterator<Item = PktId> + '_> {
        match self.order {
            NicOrder::Fifo => Box::new(self.fifo.iter().map(|&(id, _, _)| id)),
            NicOrder::FlowRoundRobin => {
                let flows = (0..CLASSES).flat_map(|c| turn(&self.flows, self.front[c]));
                Box::new(flows.flat_map(|q| {
                    let f = &self.flows[q as usize];
                    std::iter::once(f.head.0).chain(f.more.iter().map(|x| x.0))
                }))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::packet::PktKind;
    use crate::units::{FlowSlot, NodeId};

    fn pkt(flow: u32, class: u8) -> Packet {
        let mut p = Packet::new(PktKind::Data, FlowSlot(flow), 0, NodeId(0), NodeId(1));
        p.class = class;
        p.size = 1500;
        p
    }

    #[test]
    fn flows_take_turns_within_a_class_and_classes_go_by_priority() {
        let mut q = NicQueue::new(NicOrder::FlowRoundRobin);
        for (id, flow, class) in [(0, 7, 1), (1, 7, 1), (2, 7, 1), (3, 9, 1), (4, 9, 1), (5, 4, 0)] {
            q.push(PktId(id), &pkt(flow, class));
        }
        let order: Vec<u32> = std::iter::from_fn(|| q.pop(0)).map(|(id, _, _)| id.0).collect();
        assert_eq!(order, vec![5, 0, 3, 1, 4, 2]);
    }

    #[test]
    fn a_flow_whose_queue_emptied_joins_its_turn_again() {
        // The push cache must not send a returning flow's packet to the queue it had before it emptied (now
        // free, or another flow's), out of every turn.
        let mut q = NicQueue::new(NicOrder::FlowRoundRobin);
        q.push(PktId(1), &pkt(7, 1));
        assert_eq!(q.pop(0).map(|x| x.0), Some(PktId(1)));
        q.push(PktId(2), &pkt(7, 1));
        assert_eq!(q.pop(0).map(|x| x.0), Some(PktId(2)));
        q.push(PktId(3), &pkt(8, 1));
        q.push(PktId(4), &pkt(7, 1));
        let order: Vec<u32> = std::iter::from_fn(|| q.pop(0)).map(|(id, _, _)| id.0).collect();
        assert_eq!(order, vec![3, 4]);
    }

    #[test]
    fn a_slot_taken_by_another_flow_while_the_first_ones_packets_wait_is_another_flow() {
        // Slot 7's flow closes with two packets still here and its slot goes to a new flow (generation 1):
        // the new flow takes its own turn, behind flow 9, as it would have had it been given any other slot
        // (a parallel run reuses slots later than the serial run, and must send in the same order).
        let mut q = NicQueue::new(NicOrder::FlowRoundRobin);
        q.push(PktId(0), &pkt(7, 1));
        q.push(PktId(1), &pkt(7, 1));
        q.push(PktId(2), &pkt(9, 1));
        let mut p = pkt(7, 1);
        p.flow_gen = 1;
        q.push(PktId(3), &p);
        let order: Vec<u32> = std::iter::from_fn(|| q.pop(0)).map(|(id, _, _)| id.0).collect();
        assert_eq!(order, vec![0, 2, 3, 1]);
    }

    /// What the NIC's round robin must do, written plainly: per class, the flows with packets in turn order.
    type Flow = ((u8, u64), std::collections::VecDeque<u32>);

    #[derive(Default)]
    struct Reference {
        turn: [Vec<Flow>; CLASSES],
    }

    impl Reference {
        fn push(&mut self, id: u32, p: &Packet) {
            let key = (p.class, (p.flow.0 as u64) << 32 | p.flow_gen as u64);
            let turn = &mut self.turn[p.class as usize];
            match turn.iter_mut().find(|(k, _)| *k == key) {
                Some((_, q)) => q.push_back(id),
                None => turn.push((key, std::collections::VecDeque::from([id]))),
            }
        }
        fn pop(&mut self) -> Option<u32> {
            let turn = self.turn.iter_mut().find(|t| !t.is_empty())?;
            let (key, mut q) = turn.remove(0);
            let id = q.pop_front();
            if !q.is_empty() {
                turn.push((key, q));
            }
            id
        }
    }

    #[test]
    fn many_flows_and_few_send_in_the_same_order_as_the_plain_round_robin() {
        // Up to 60 flows in two classes, generations reused, the NIC filling past `WALK` flows of a class
        // (the map) and draining to a few (the walk) again and again: every pop as the reference's.
        let mut rng = crate::engine::Rng::new(7, "nic-queue-test", 0);
        let (mut q, mut r) = (NicQueue::new(NicOrder::FlowRoundRobin), Reference::default());
        let (mut id, mut mapped_pops, mut walked_pops) = (0u32, 0, 0);
        for round in 0..40 {
            let flows = if round % 2 == 0 { 60 } else { 3 };
            for _ in 0..rng.below(300) {
                let mut p = pkt(rng.below(flows), rng.below(2) as u8);
                p.flow_gen = rng.below(2);
                q.push(PktId(id), &p);
                r.push(id, &p);
                id += 1;
            }
            for _ in 0..rng.below(if round % 2 == 0 { 300 } else { 900 }) {
                let mapped = q.mapped;
                let got = q.pop(0).map(|(id, _, _)| id.0);
                assert_eq!(got, r.pop(), "round {round}");
                if got.is_some() {
                    *(if mapped { &mut mapped_pops } else { &mut walked_pops }) += 1;
                }
            }
        }
        while let Some(want) = r.pop() {
            assert_eq!(q.pop(0).map(|(id, _, _)| id.0), Some(want));
        }
        assert_eq!(q.pop(0), None);
        assert!(mapped_pops > 1000 && walked_pops > 1000, "both ways were taken: {mapped_pops} {walked_pops}");
    }
}
