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

pub struct NicQueue {
    order: NicOrder,
    /// `Fifo`: every packet with its class and size (sizes kept as in `PrioFifo`).
    fifo: VecDeque<(PktId, u8, u32)>,
    /// `FlowRoundRobin`: one FIFO per (class, flow) that has packets here, of (packet, size); emptied ones
    /// wait in `free`.
    queues: Vec<VecDeque<(PktId, u32)>>,
    keys: Vec<(u8, u32)>,
    free: Vec<u32>,
    /// Hashed with a multiply-and-shift, not SipHash: the keys are ours, and the map is looked up per packet
    /// (callgrind: SipHash was 1.6 % of all instructions in the NDP runs side by side with htsim).
    of: HashMap<(u8, u32), u32, BuildHasherDefault<FlowHasher>>,
    /// Per class, the flows' queues in their turn order (the front one sends next).
    turn: [VecDeque<u32>; CLASSES],
}

impl NicQueue {
    pub fn new(order: NicOrder) -> NicQueue {
        NicQueue {
            order,
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
        let key = (c, p.flow.0);
        let q = match self.of.get(&key) {
            Some(&q) => q,
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
            } else {
                self.turn[c].push_back(q);
            }
            return Some((id, c, size));
        }
        None
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
