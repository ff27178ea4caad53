//! Egress queue disciplines. A port owns one; the enum keeps the hot path free of dynamic dispatch, and a
//! new discipline (pFabric's priority dropping, PFC-aware queues) is one more variant.

use crate::engine::Ring;
use crate::net::nic_queue::NicQueue;
use crate::net::packet::Packet;
use crate::net::pfabric::PFabricQueue;
use crate::net::Packets;
use crate::units::{PktId, PortId};

pub const CLASSES: usize = 8;

/// Eight FIFO classes served by strict priority (class 0 first). Admission (buffer limits) and ECN marking
/// are decided by the port before `push`, because they depend on switch-wide state (shared buffer).
///
/// A slot keeps the packet's size beside its id, so the transmitter learns how long the packet takes without
/// reading it: a packet waits in a queue long enough to leave the caches, and reading its size was a miss
/// per packet-hop at 1,024 hosts (docs/performance-log.md, change 3).
#[derive(Default)]
#[repr(C)]
pub struct PrioFifo {
    c: [ClassFifo; CLASSES],
}

/// One class: its bytes, its oldest packet in line and the others in a ring. `repr(C)`, 40 bytes, so that
/// classes 0–3 lie whole in the queue's first three lines, which `Port::prefetch_queue` loads.
///
/// Why the head in line: the transmitter takes a class's oldest packet when it starts, and at 5,488 hosts
/// that start is most often a deferred one (net/lazy.rs) that a packet arriving for the port catches up.
/// Found through the ring, the head's slot was a load that depended on the ring's header, after the
/// prefetch chain had loaded the port's lines: 12 % of all samples sat on it (docs/performance-log.md,
/// change 47). In line, it is in those lines. Where a hop waits on memory (the deep prefetch chain), the
/// next packet becomes the head one event after a pop (`refill`, `HeadRefills`), its slot prefetched by the
/// pop; elsewhere only a packet into an empty class goes there, and the ring serves the rest.
#[repr(C)]
struct ClassFifo {
    bytes: u64,
    /// The class's oldest packet and its size, or `PktId::NONE` (the class is empty, or its oldest packet is
    /// `rest`'s front: a refill owed, or none asked for).
    head: (PktId, u32),
    /// The class's other packets, in order.
    rest: Ring<(PktId, u32)>,
}

impl Default for ClassFifo {
    fn default() -> Self {
        ClassFifo { bytes: 0, head: (PktId::NONE, 0), rest: Ring::default() }
    }
}

const _: () = assert!(std::mem::size_of::<ClassFifo>() == 40);

/// The queue lines (from the queue's start, the discipline's tag first) that hold FIFO classes 0..=c, at
/// most three (classes 0–3; the prefetch chain loads no more of a queue).
pub const fn lines_through(c: u8) -> u8 {
    let lines = (8 + std::mem::size_of::<ClassFifo>() * (c as usize + 1)).div_ceil(64);
    if lines < 3 {
        lines as u8
    } else {
        3
    }
}

/// `PrioFifo::pop`'s answer when no refill is owed.
pub const NO_REFILL: u8 = u8::MAX;

impl ClassFifo {
    /// Whether the class holds no packet: its bytes are 0 only then, every packet having bytes (asserted at
    /// admission, net/egress.rs; config/build.rs and config/homa.rs refuse packets of none). The count is in
    /// the class's first 8 bytes, beside the head, where a test of the head and the ring would read two
    /// fields for the same answer.
    #[inline(always)]
    fn is_empty(&self) -> bool {
        self.bytes == 0
    }
    /// The ring's front becomes the head, if the head is empty (a refill owed, or already done by a pop).
    #[inline(always)]
    fn refill(&mut self) {
        if self.head.0 == PktId::NONE {
            if let Some(x) = self.rest.pop_front() {
                self.head = x;
            }
        }
    }
}

impl PrioFifo {
    #[inline]
    pub fn push(&mut self, id: PktId, p: &Packet) {
        let k = &mut self.c[p.class as usize];
        // Into the head only when nothing else waits: a packet behind an owed refill goes behind its front.
        if k.is_empty() {
            k.head = (id, p.size);
            k.rest.ensure_slots();
        } else {
            k.rest.push_back((id, p.size));
        }
        k.bytes += p.size as u64;
    }
    /// Count a packet held elsewhere (a NIC's own order, `QueueDisc::Ordered`): bytes only.
    #[inline]
    pub fn count(&mut self, p: &Packet) {
        self.c[p.class as usize].bytes += p.size as u64;
    }
    /// Count a packet of class `c` and `size` bytes taken from elsewhere (`count`'s reverse).
    #[inline(always)]
    fn uncount(&mut self, c: usize, size: u32) {
        self.c[c].bytes -= size as u64;
    }
    /// Highest-priority packet whose class is not paused (`paused` bit c = class c held, for PFC), its size,
    /// and the class whose head is owed a refill (`NO_REFILL` if none): with `later`, a pop that leaves the
    /// head empty and packets in the ring prefetches the ring's front, and the caller calls `refill` for the
    /// class once that load has had time to arrive (`HeadRefills`). Without, the ring serves the class until
    /// it is empty again.
    #[inline(always)]
    pub fn pop(&mut self, paused: u8, later: bool) -> Option<(PktId, u32, u8)> {
        for c in 0..CLASSES {
            let k = &mut self.c[c];
            if paused & (1 << c) != 0 || k.is_empty() {
                continue;
            }
            let x = if k.head.0 != PktId::NONE {
                std::mem::replace(&mut k.head, (PktId::NONE, 0))
            } else {
                // No head in line (a refill owed or not asked for): the ring's front.
                k.rest.pop_front().expect("a class that is not empty")
            };
            k.bytes -= x.1 as u64;
            let mut owed = NO_REFILL;
            if later {
                if let Some(next) = k.rest.front() {
                    crate::engine::prefetch(next);
                    owed = c as u8;
                }
            }
            return Some((x.0, x.1, owed));
        }
        None
    }
    /// Class `c`'s next packet becomes its head, if it is owed one (`pop` with `later`).
    #[inline(always)]
    pub fn refill(&mut self, c: u8) {
        self.c[c as usize].refill();
    }
    #[inline]
    pub fn class_bytes(&self, c: usize) -> u64 {
        self.c[c].bytes
    }
    /// Bytes of classes 0..=c.
    pub fn bytes_through(&self, c: usize) -> u64 {
        self.c[..=c.min(CLASSES - 1)].iter().map(|k| k.bytes).sum()
    }
    pub fn iter(&self) -> impl Iterator<Item = PktId> + '_ {
        self.c.iter().flat_map(|k| {
            let head = (k.head.0 != PktId::NONE).then_some(k.head.0);
            head.into_iter().chain(k.rest.iter().map(|x| x.0))
        })
    }
    /// The first class, in priority order, that is not paused and holds a packet.
    pub fn head_class(&self, paused: u8) -> Option<usize> {
        (0..CLASSES).find(|&c| paused & (1 << c) == 0 && !self.c[c].is_empty())
    }

    /// Admission to a port buffer of `total` bytes of which `reserve` bytes are set aside for each of the
    /// first `classes` classes and the rest is shared first come, first served (pFabric §6: 225 KB, 15 KB per
    /// queue). A packet goes into its class's reservation while that has room, else into the shared part.
    pub fn admits_reserved(&self, class: usize, size: u64, total: u64, reserve: u64, classes: usize) -> bool {
        let reserved = |c: usize| if c < classes { reserve } else { 0 };
        let shared_used: u64 = (0..CLASSES).map(|c| self.c[c].bytes.saturating_sub(reserved(c))).sum();
        let before = self.c[class].bytes.saturating_sub(reserved(class));
        let after = (self.c[class].bytes + size).saturating_sub(reserved(class));
        let shared_cap = total.saturating_sub(reserve * classes as u64);
        shared_used - before + after <= shared_cap
    }
}

/// The heads owed a refill (`PrioFifo::pop` with `later`): a port and a class each, refilled at the start of
/// the next event (`Network::refill_heads`), by which time the slot `pop` prefetched has had the rest of the
/// event to arrive (refilled one event later still, the run was no faster: docs/performance-log.md, change
/// 47). A fixed array: a pop that finds it full refills at once (no allocation in a run).
pub struct HeadRefills {
    /// Whether pops ask for refills (where a hop waits on memory: the deep prefetch chain's runs).
    pub later: bool,
    len: usize,
    owed: [(PortId, u8); HeadRefills::CAP],
}

impl Default for HeadRefills {
    fn default() -> Self {
        HeadRefills { later: false, len: 0, owed: [(PortId::NONE, 0); HeadRefills::CAP] }
    }
}

impl HeadRefills {
    const CAP: usize = 16;
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Note `port`'s class `c` as owed: false if the list is full (the caller refills now).
    #[inline(always)]
    pub fn owe(&mut self, port: PortId, c: u8) -> bool {
        if self.len == Self::CAP {
            return false;
        }
        self.owed[self.len] = (port, c);
        self.len += 1;
        true
    }
    /// Every owed refill, oldest first, to `f`; the list is then empty.
    #[inline(always)]
    pub fn take(&mut self, mut f: impl FnMut(PortId, u8)) {
        for &(p, c) in &self.owed[..std::mem::take(&mut self.len)] {
            f(p, c);
        }
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
    pub fn pop(&mut self, paused: u8, later: bool, pk: &Packets) -> Option<(PktId, u32, u8)> {
        match self {
            QueueDisc::PrioFifo(q) => q.pop(paused, later),
            QueueDisc::Ordered(q, n) => {
                let (id, c, size) = n.pop(paused)?;
                q.uncount(c, size);
                Some((id, size, NO_REFILL))
            }
            QueueDisc::PFabric(subs) => {
                for (c, q) in subs.iter_mut().enumerate() {
                    if paused & (1 << c) == 0 {
                        if let Some(id) = q.pop(pk) {
                            return Some((id, pk.get(id).size, NO_REFILL));
                        }
                    }
                }
                None
            }
        }
    }
    /// Prefetch for the next `pop` (a hint), stage `stage` of its chain: for a NIC's own order, stages 0–3
    /// walk `NicQueue::prefetch_stage` (stage 0 loads the NIC's record, in line after the counts). The FIFO
    /// classes' heads are in the queue's lines (`ClassFifo`), and pFabric's are found by a search that the
    /// hint would repeat: nothing more for those.
    #[inline(always)]
    pub fn prefetch_head(&self, stage: u8, paused: u8) {
        if let QueueDisc::Ordered(_, n) = self {
            n.prefetch_stage(stage, paused);
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
            QueueDisc::PrioFifo(q) | QueueDisc::Ordered(q, _) => q.bytes_through(c),
            QueueDisc::PFabric(subs) => subs.iter().take(c + 1).map(|q| q.bytes).sum(),
        }
    }
    /// The class the queue would serve next (the first non-empty class that is not paused), if any.
    pub fn head_class(&self, paused: u8) -> Option<usize> {
        match self {
            QueueDisc::Ordered(_, n) => n.head_class(paused),
            QueueDisc::PrioFifo(q) => q.head_class(paused),
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
    use crate::net::packet::PktKind;
    use crate::units::{FlowSlot, NodeId};
    use std::collections::VecDeque;

    /// The FIFO classes against one `VecDeque` each, over a long random mix of pushes, pops under random
    /// pauses and refills, in phases where pops ask for refills (done at a random later moment, or never
    /// before the class is popped again) and phases where they do not: the packets come out in the same
    /// order, with the same sizes, and the bytes, the served class and the iteration agree at every step.
    /// Whether a class's oldest packet is in line or in the ring does not change which packet a pop takes.
    #[test]
    fn in_line_heads_keep_each_class_in_order_however_late_they_are_refilled() {
        let mut q = PrioFifo::default();
        let mut model: Vec<VecDeque<(PktId, u32)>> = vec![VecDeque::new(); CLASSES];
        let mut owed: Vec<u8> = Vec::new();
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = |n: u64| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (x >> 33) % n
        };
        let (mut pops, mut late, mut fallbacks) = (0, 0, 0);
        for step in 0..200_000u32 {
            let later = (step / 5_000) % 2 == 1;
            match next(10) {
                0..=3 => {
                    // Mostly the first classes, in bursts, so that queues grow and drain.
                    let c = if next(4) == 0 { next(CLASSES as u64) } else { next(2) } as u8;
                    let mut p = Packet::new(PktKind::Data, FlowSlot(0), 0, NodeId(1), NodeId(0));
                    (p.class, p.size) = (c, 64 + next(1_500) as u32);
                    q.push(PktId(step), &p);
                    model[c as usize].push_back((PktId(step), p.size));
                }
                4..=7 => {
                    let paused = if next(4) == 0 { next(256) as u8 } else { 0 };
                    let want = (0..CLASSES).find(|&c| paused & (1 << c) == 0 && !model[c].is_empty());
                    assert_eq!(q.head_class(paused), want, "step {step}");
                    let c = want.unwrap_or(usize::MAX);
                    fallbacks += (want.is_some() && q.c[c].head.0 == PktId::NONE) as u32;
                    match q.pop(paused, later) {
                        None => assert!(want.is_none(), "step {step}: a packet left behind"),
                        Some((id, size, o)) => {
                            assert_eq!(Some((id, size)), model[c].pop_front(), "step {step}");
                            pops += 1;
                            if o != NO_REFILL {
                                assert!(later && o as usize == c && !model[c].is_empty(), "step {step}");
                                owed.push(o);
                                late += 1;
                            } else {
                                // Nothing owed: the ring is empty, or pops do not ask for refills.
                                assert!(!later || q.c[c].rest.is_empty(), "step {step}");
                            }
                        }
                    }
                }
                _ => {
                    // Some owed refills are done, oldest first; the others wait (or meet a pop first).
                    let n = next(owed.len() as u64 + 1) as usize;
                    for c in owed.drain(..n) {
                        q.refill(c);
                    }
                }
            }
            for (c, m) in model.iter().enumerate() {
                assert_eq!(q.class_bytes(c), m.iter().map(|p| p.1 as u64).sum::<u64>(), "step {step}");
            }
            let all: Vec<PktId> = model.iter().flatten().map(|p| p.0).collect();
            if step % 97 == 0 {
                assert_eq!(q.iter().collect::<Vec<_>>(), all, "step {step}");
            }
        }
        // The mix reached every path: pops that refilled later, and pops that found a refill still owed.
        assert!(pops > 50_000 && late > 5_000 && fallbacks > 1_000, "{pops} pops, {late} late, {fallbacks}");
    }

    /// `lines_through(c)` lines from a queue's start hold classes 0..=c whole (at most three lines, classes
    /// 0–3), and no fewer lines do: measured on the layout itself, not on the sizes the function assumes.
    #[test]
    fn the_lines_a_prefetch_loads_hold_the_classes_it_is_asked_for() {
        let q = QueueDisc::PrioFifo(PrioFifo::default());
        let QueueDisc::PrioFifo(f) = &q else { unreachable!() };
        let base = &q as *const QueueDisc as usize;
        let end = |c: usize| &f.c[c] as *const ClassFifo as usize - base + std::mem::size_of::<ClassFifo>();
        for c in 0..CLASSES {
            let lines = lines_through(c as u8) as usize;
            let need = (0..=c).map(end).max().unwrap().div_ceil(64);
            assert_eq!(lines, need.min(3), "class {c}: classes 0..={c} end at byte {}", end(c));
        }
        assert_eq!((lines_through(0), lines_through(1), lines_through(3)), (1, 2, 3));
    }

    /// The list of owed refills: in order, emptied by `take`, and a pop that finds it full is told to refill
    /// at once rather than the list growing (no allocation in a run).
    #[test]
    fn owed_refills_come_back_in_order_and_a_full_list_refuses() {
        let mut r = HeadRefills::default();
        assert!(r.is_empty());
        for i in 0..HeadRefills::CAP as u32 {
            assert!(r.owe(PortId(i), (i % 8) as u8));
        }
        assert!(!r.owe(PortId(99), 0));
        let mut got = Vec::new();
        r.take(|p, c| got.push((p, c)));
        assert_eq!(got, (0..HeadRefills::CAP as u32).map(|i| (PortId(i), (i % 8) as u8)).collect::<Vec<_>>());
        assert!(r.is_empty() && r.owe(PortId(7), 3));
    }

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
