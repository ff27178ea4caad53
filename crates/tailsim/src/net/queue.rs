//! Egress queue disciplines. A port owns one; the enum keeps the hot path free of dynamic dispatch, and a
//! new discipline (pFabric's priority dropping, PFC-aware queues) is one more variant.

use crate::engine::Ring;
use crate::net::nic_queue::NicQueue;
use crate::net::packet::Packet;
use crate::net::pfabric::PFabricQueue;
use crate::net::Packets;
use crate::units::PktId;

pub const CLASSES: usize = 8;

/// Eight FIFO classes served by strict priority (class 0 first). Admission (buffer limits) and ECN marking
/// are decided by the port before `push`, because they depend on switch-wide state (shared buffer).
///
/// A slot keeps the packet's size beside its id, so the transmitter learns how long the packet takes without
/// reading it: a packet waits in a queue long enough to leave the caches, and reading its size was a miss
/// per packet-hop at 1,024 hosts (docs/performance-log.md, change 3).
///
/// `repr(C)`, the byte counts first: admission reads a class's bytes and its ring's header, and in this
/// order those of classes 0–4 lie in the port record's lines that `Port::prefetch_queue` loads.
#[derive(Default)]
#[repr(C)]
pub struct PrioFifo {
    bytes: [u64; CLASSES],
    q: [Ring<(PktId, u32)>; CLASSES],
}

impl PrioFifo {
    #[inline]
    pub fn push(&mut self, id: PktId, p: &Packet) {
        let c = p.class as usize;
        self.q[c].push_back((id, p.size));
        self.bytes[c] += p.size as u64;
    }
    /// Count a packet held elsewhere (a NIC's own order, `QueueDisc::Ordered`): bytes only.
    #[inline]
    pub fn count(&mut self, p: &Packet) {
        self.bytes[p.class as usize] += p.size as u64;
    }
    /// Highest-priority packet whose class is not paused (`paused` bit c = class c held, for PFC), and its
    /// size.
    #[inline(always)]
    pub fn pop(&mut self, paused: u8) -> Option<(PktId, u32)> {
        for c in 0..CLASSES {
            if paused & (1 << c) != 0 {
                continue;
            }
            if let Some((id, size)) = self.q[c].pop_front() {
                self.bytes[c] -= size as u64;
                return Some((id, size));
            }
        }
        None
    }
    #[inline]
    pub fn class_bytes(&self, c: usize) -> u64 {
        self.bytes[c]
    }
    pub fn iter(&self) -> impl Iterator<Item = PktId> + '_ {
        self.q.iter().flat_map(|q| q.iter().map(|x| x.0))
    }

    /// Admission to a port buffer of `total` bytes of which `reserve` bytes are set aside for each of the
    /// first `classes` classes and the rest is shared first come, first served (pFabric §6: 225 KB, 15 KB per
    /// queue). A packet goes into its class's reservation while that has room, else into the shared part.
    pub fn admits_reserved(&self, class: usize, size: u64, total: u64, reserve: u64, classes: usize) -> bool {
        let reserved = |c: usize| if c < classes { reserve } else { 0 };
        let shared_used: u64 = (0..CLASSES).map(|c| self.bytes[c].saturating_sub(reserved(c))).sum();
        let before = self.bytes[class].saturating_sub(reserved(class));
        let after = (self.bytes[class] + size).saturating_sub(reserved(class));
        let shared_cap = total.saturating_sub(reserve * classes as u64);
        shared_used - before + after <= shared_cap
    }
}

/// The queue discipline of a port.
// The FIFO variant is the hot one and stays inline (a Box would add a pointer chase per packet); ports are
// few, so the size of the rarer pFabric variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[repr(u8)]
pub enum QueueDisc {
    PrioFifo(PrioFifo),
    /// A host NIC that sends in another order than strict priority (`host.nic_scheduler`, net/nic_queue.rs):
    /// the packets wait in the `NicQueue`, their bytes per class are counted in the `PrioFifo` (whose class
    /// queues stay empty), so admission and ECN are the same code as a switch port's. A variant of its own
    /// keeps switch ports' queues as they were (one test of the variant, already made, and no more). The
    /// counts first, where the `PrioFifo` variant has its queue (`Port::prefetch_queue`'s lines), and the NIC's
    /// record in line after them, not behind a `Box`: its address is the port's, so a push or a pop no longer
    /// waits for a pointer before it can load the record (docs/performance-log.md, change 45; every port's
    /// record grows from 704 to 896 bytes for it, 6 MB more in the 6,144-host fabric).
    Ordered(PrioFifo, NicQueue),
    /// pFabric: admission and scheduling by `Packet::rank` (net/pfabric.rs), in one buffer or — pFabric-EDF —
    /// several served by strict priority, each with its own buffer limit. Class c goes into buffer
    /// min(c, n − 1).
    PFabric(Vec<PFabricQueue>),
}

impl QueueDisc {
    /// The next packet to send and its size (`paused` bit c = class c held).
    // Always inlined into the transmitter's start (callgrind: out of line it costs 2 % of all instructions).
    #[inline(always)]
    pub fn pop(&mut self, paused: u8, pk: &Packets) -> Option<(PktId, u32)> {
        match self {
            QueueDisc::PrioFifo(q) => q.pop(paused),
            QueueDisc::Ordered(q, n) => {
                let (id, c, size) = n.pop(paused)?;
                q.bytes[c] -= size as u64;
                Some((id, size))
            }
            QueueDisc::PFabric(subs) => {
                for (c, q) in subs.iter_mut().enumerate() {
                    if paused & (1 << c) == 0 {
                        if let Some(id) = q.pop(pk) {
                            return Some((id, pk.get(id).size));
                        }
                    }
                }
                None
            }
        }
    }
    /// Prefetch for the next `pop` (a hint), stage `stage` of its chain: for the FIFO classes, stage 0 loads
    /// the slot at the head of the class that `pop` would serve; for a NIC's own order, stages 0–3 walk
    /// `NicQueue::prefetch_stage` (stage 0 loads the NIC's record, in line after the counts).
    /// pFabric's heads are found by a search that the hint would repeat: none.
    #[inline(always)]
    pub fn prefetch_head(&self, stage: u8, paused: u8) {
        match self {
            QueueDisc::PrioFifo(q) if stage == 0 => {
                let head = (0..CLASSES).filter(|&c| paused & (1 << c) == 0).find_map(|c| q.q[c].front());
                if let Some(h) = head {
                    crate::engine::prefetch(h);
                }
            }
            QueueDisc::Ordered(_, n) => n.prefetch_stage(stage, paused),
            _ => {}
        }
    }
    /// Where a NIC's order starts in an `Ordered` queue, in bytes from the queue's start: a prefetch can
    /// load it before the queue's first line (which says the variant) is in.
    pub fn nic_offset() -> usize {
        static OFFSET: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
        *OFFSET.get_or_init(|| {
            let q =
                QueueDisc::Ordered(PrioFifo::default(), NicQueue::new(crate::net::nic_queue::NicOrder::FlowRoundRobin));
            match &q {
                QueueDisc::Ordered(_, n) => (n as *const NicQueue as usize) - (&q as *const QueueDisc as usize),
                _ => unreachable!("made Ordered"),
            }
        })
    }
    /// DeTail's drain bytes for class `c` (thesis Fig. 5.3): bytes queued that a packet of class c would wait
    /// behind, i.e. of classes 0..=c (pFabric queues: those of the sub-buffers served first, and its own).
    pub fn drain_bytes(&self, c: usize) -> u64 {
        match self {
            QueueDisc::PrioFifo(q) | QueueDisc::Ordered(q, _) => q.bytes[..=c.min(CLASSES - 1)].iter().sum(),
            QueueDisc::PFabric(subs) => subs.iter().take(c + 1).map(|q| q.bytes).sum(),
        }
    }
    /// The class the queue would serve next (the first non-empty class that is not paused), if any.
    pub fn head_class(&self, paused: u8) -> Option<usize> {
        match self {
            QueueDisc::Ordered(_, n) => n.head_class(paused),
            QueueDisc::PrioFifo(q) => (0..CLASSES).find(|&c| paused & (1 << c) == 0 && !q.q[c].is_empty()),
            QueueDisc::PFabric(subs) => {
                subs.iter().enumerate().find(|(c, q)| paused & (1 << c) == 0 && q.bytes > 0).map(|(c, _)| c)
            }
        }
    }
    pub fn packets(&self) -> Box<dyn Iterator<Item = PktId> + '_> {
        match self {
            QueueDisc::PrioFifo(q) => Box::new(q.iter()),
            QueueDisc::Ordered(_, n) => n.iter(),
            QueueDisc::PFabric(subs) => Box::new(subs.iter().flat_map(|q| q.iter())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::nic_queue::NicOrder;

    #[test]
    fn a_nics_order_is_found_at_the_same_offset_in_every_ordered_queue() {
        // A prefetch computes the record's address from the queue's (`nic_offset`): it must be where the
        // record is in any queue, whatever its order and wherever the queue lies, and inside the queue.
        let qs: Vec<QueueDisc> = [NicOrder::Fifo, NicOrder::FlowRoundRobin, NicOrder::FlowRoundRobin]
            .into_iter()
            .map(|o| QueueDisc::Ordered(PrioFifo::default(), NicQueue::new(o)))
            .collect();
        let off = QueueDisc::nic_offset();
        assert!(off + std::mem::size_of::<NicQueue>() <= std::mem::size_of::<QueueDisc>());
        for q in &qs {
            let QueueDisc::Ordered(_, n) = q else { unreachable!() };
            assert_eq!(n as *const NicQueue as usize, q as *const QueueDisc as usize + off);
        }
    }
}
