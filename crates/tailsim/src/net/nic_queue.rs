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
//! Queues are reused when a flow's empties, so a run allocates only while the number of flows a NIC holds at
//! once grows.

use crate::net::packet::Packet;
use crate::net::queue::CLASSES;
use crate::units::PktId;
use std::collections::{HashMap, VecDeque};
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

/// `repr(C)`: the fields a packet's push and pop read first, in the record's first lines (which the run
/// loop's prefetch loads ahead of a NIC's end of serialization; `prefetch_stage`).
#[repr(C)]
pub struct NicQueue {
    order: NicOrder,
    /// The (class, flow) key and queue of the last push: a flow's packets come to its NIC in runs (a window,
    /// the packets a pull releases), and this spares the map's lookup, a cache miss per packet at 1,024 hosts.
    last: Option<((u8, u64), u32)>,
    /// `FlowRoundRobin`: one FIFO per (class, flow) that has packets here, of (packet, size); emptied ones
    /// wait in `free`.
    queues: Vec<VecDeque<(PktId, u32)>>,
    /// Per class, the flows' queues in their turn order (the front one sends next).
    turn: [VecDeque<u32>; CLASSES],
    /// `Fifo`: every packet with its class and size (sizes kept as in `PrioFifo`).
    fifo: VecDeque<(PktId, u8, u32)>,
    keys: Vec<(u8, u64)>,
    free: Vec<u32>,
    /// Hashed with a multiply-and-shift, not SipHash: the keys are ours, and the map is looked up per packet
    /// (callgrind: SipHash was 1.6 % of all instructions in the NDP runs side by side with htsim).
    of: HashMap<(u8, u64), u32, BuildHasherDefault<FlowHasher>>,
}

impl NicQueue {
    pub fn new(order: NicOrder) -> NicQueue {
        NicQueue {
            order,
            last: None,
            fifo: VecDeque::new(),
            queues: Vec::new(),
            keys: Vec::new(),
            free: Vec::new(),
            of: HashMap::default(),
            turn: Default::default(),
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
            _ => self.of.get(&key).copied(),
        };
        let q = match known {
            Some(q) => q,
            None => {
                let q = match self.free.pop() {
                    Some(q) => {
                        self.keys[q as usize] = key;
                        q
                    }
                    None => {
                        self.queues.push(VecDeque::new());
                        self.keys.push(key);
                        self.queues.len() as u32 - 1
                    }
                };
                self.of.insert(key, q);
                self.turn[c as usize].push_back(q);
                q
            }
        };
        self.last = Some((key, q));
        self.queues[q as usize].push_back((id, p.size));
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
        for c in 0..CLASSES {
            if paused & (1 << c) != 0 {
                continue;
            }
            let Some(q) = self.turn[c].pop_front() else { continue };
            let fifo = &mut self.queues[q as usize];
            let (id, size) = fifo.pop_front().expect("a flow in its turn has a packet");
            if fifo.is_empty() {
                self.of.remove(&self.keys[q as usize]);
                self.free.push(q);
                if self.last.is_some_and(|(_, l)| l == q) {
                    self.last = None;
                }
            } else {
                self.turn[c].push_back(q);
            }
            return Some((id, c, size));
        }
        None
    }

    /// Prefetch for the next `pop`, one link of its chain per stage (a hint; results do not depend on it):
    /// stage 0, this record's first lines; 1, the turn's front entry of the class that sends next; 2, that
    /// flow's queue header; 3, the packet slot at its head. Each stage reads only what the one before loaded.
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
        let Some(c) = (0..CLASSES).find(|&c| paused & (1 << c) == 0 && !self.turn[c].is_empty()) else { return };
        let Some(q) = self.turn[c].front() else { return };
        match stage {
            1 => prefetch(q),
            2 => prefetch(self.queues.as_ptr().wrapping_add(*q as usize)),
            _ => {
                if let Some(h) = self.queues.get(*q as usize).and_then(|f| f.front()) {
                    prefetch(h);
                }
            }
        }
    }

    /// The class that would send next, if any.
    pub fn head_class(&self, paused: u8) -> Option<usize> {
        if self.order == NicOrder::Fifo {
            return self.fifo.front().map(|&(_, c, _)| c as usize).filter(|&c| paused & (1 << c) == 0);
        }
        (0..CLASSES).find(|&c| paused & (1 << c) == 0 && !self.turn[c].is_empty())
    }

    pub fn iter(&self) -> Box<dyn Iterator<Item = PktId> + '_> {
        match self.order {
            NicOrder::Fifo => Box::new(self.fifo.iter().map(|&(id, _, _)| id)),
            NicOrder::FlowRoundRobin => {
                Box::new(self.turn.iter().flatten().flat_map(|&q| self.queues[q as usize].iter().map(|x| x.0)))
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
}
