//! Egress queue disciplines. A port owns one; the enum keeps the hot path free of dynamic dispatch, and a
//! new discipline (pFabric's priority dropping, PFC-aware queues) is one more variant.

use crate::net::packet::Packet;
use crate::net::pfabric::PFabricQueue;
use crate::net::Packets;
use crate::units::PktId;
use std::collections::VecDeque;

pub const CLASSES: usize = 8;

/// Eight FIFO classes served by strict priority (class 0 first). Admission (buffer limits) and ECN marking
/// are decided by the port before `push`, because they depend on switch-wide state (shared buffer).
#[derive(Default)]
pub struct PrioFifo {
    q: [VecDeque<PktId>; CLASSES],
    bytes: [u64; CLASSES],
}

impl PrioFifo {
    #[inline]
    pub fn push(&mut self, id: PktId, p: &Packet) {
        let c = p.class as usize;
        self.q[c].push_back(id);
        self.bytes[c] += p.size as u64;
    }
    /// Highest-priority packet whose class is not paused (`paused` bit c = class c held, for PFC).
    #[inline]
    pub fn pop(&mut self, paused: u8, size_of: impl Fn(PktId) -> u32) -> Option<PktId> {
        for c in 0..CLASSES {
            if paused & (1 << c) != 0 {
                continue;
            }
            if let Some(id) = self.q[c].pop_front() {
                self.bytes[c] -= size_of(id) as u64;
                return Some(id);
            }
        }
        None
    }
    #[inline]
    pub fn class_bytes(&self, c: usize) -> u64 {
        self.bytes[c]
    }
    pub fn iter(&self) -> impl Iterator<Item = PktId> + '_ {
        self.q.iter().flat_map(|q| q.iter().copied())
    }
}

/// The queue discipline of a port.
pub enum QueueDisc {
    PrioFifo(PrioFifo),
    /// pFabric: one buffer, admission and scheduling by `Packet::rank` (net/pfabric.rs).
    PFabric(PFabricQueue),
}

impl QueueDisc {
    #[inline]
    pub fn pop(&mut self, paused: u8, pk: &Packets) -> Option<PktId> {
        match self {
            QueueDisc::PrioFifo(q) => q.pop(paused, |i| pk.get(i).size),
            // pFabric has a single class; a pause of class 0 holds it.
            QueueDisc::PFabric(_) if paused & 1 != 0 => None,
            QueueDisc::PFabric(q) => q.pop(pk),
        }
    }
    pub fn packets(&self) -> Box<dyn Iterator<Item = PktId> + '_> {
        match self {
            QueueDisc::PrioFifo(q) => Box::new(q.iter()),
            QueueDisc::PFabric(q) => Box::new(q.iter()),
        }
    }
}
