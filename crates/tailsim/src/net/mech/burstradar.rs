//! BurstRadar (Joshi thesis, Ch. 3): telemetry for exactly the packets caught in a queuing microburst, taken
//! at the switch where the burst happens and exported out of band.
//!
//! Per egress queue (a port's class; the thesis's pseudo-code has one variable, per queue is our reading),
//! the Snapshot algorithm (Alg. 1) runs as each packet leaves the queue:
//!
//! ```text
//! if deqQdepth > threshold:      bytesRemaining = deqQdepth − size(pkt); mark(pkt)
//! elif bytesRemaining > 0:       bytesRemaining −= size(pkt);             mark(pkt)
//! ```
//!
//! `deqQdepth` is what the ASIC reports: the queue (this packet included) in buffer cells of `cell` bytes,
//! converted back to bytes. Rounding every packet up to whole cells overstates `bytesRemaining`, so a few
//! extra packets are marked at a burst's tail (§3.2.4; with 1-byte cells the marks are exactly the oracle's).
//!
//! A mark writes a 29-byte record (5-tuple, ingress and egress times, enqueue and dequeue depths) at the
//! ring's write pointer and clones the packet, truncated, as a courier; the courier reaches the mirror port's
//! queue `clone_delay` later and, when it leaves that queue, carries the record at the read pointer to the
//! monitoring host. A writer that laps the reader overwrites records: those are missed (§3.2.3).
//!
//! The oracle (§3.3) marks every packet that was in the queue at an instant when the queue held more than
//! the threshold in true bytes; INT processes every packet. Both are counted alongside, per port.
//!
//! The mechanism keeps its own cell and byte counts per queue from the admit, dequeue and drop hooks: an
//! arrival is counted at admission and taken back if the port drops it for overflow. That needs FIFO classes
//! and no other mechanism deciding admission (PFC, CIOQ, FastLane), which the configuration checks.

use super::Hooks;
use crate::metrics::output::Column;
use crate::net::hooks::{Admit, Effect, HookCtx, HookSet};
use crate::net::packet::PktKind;
use crate::net::port::{DropReason, Port};
use crate::net::queue::CLASSES;
use crate::units::{BitsPerSec, NodeId, PktId, PortId, Time};
use std::collections::VecDeque;

/// Bytes of a telemetry record (§3.2.3).
pub const RECORD_BYTES: u32 = 29;

#[derive(Clone, Debug)]
pub struct BurstRadarParams {
    /// Queueing delay above which a queue is in a microburst; each port converts it to bytes at its rate.
    pub threshold: Time,
    /// Buffer cell size in bytes (1: exact bytes).
    pub cell: u32,
    /// Ring buffer entries.
    pub ring: usize,
    /// From a mark until its courier joins the mirror port's queue (Fig. 3.3: 270 ns for 64 B packets).
    pub clone_delay: Time,
    /// A courier's wire size: a truncated 64 B packet plus one record.
    pub courier_bytes: u32,
    /// The switch's port towards the monitoring host, and that host.
    pub mirror: PortId,
    pub monitor: NodeId,
    /// The egress ports watched.
    pub ports: Vec<PortId>,
}

/// One telemetry record.
#[derive(Clone, Copy, Debug, Default)]
struct Record {
    port: u32,
    class: u8,
    src: u32,
    dst: u32,
    kind: u8,
    seq: u32,
    size: u32,
    enq_time: Time,
    deq_time: Time,
    enq_cells: u64,
    deq_cells: u64,
    oracle: bool,
}

/// What the monitoring host received: a record and when its courier left the switch.
struct Exported {
    rec: Record,
    at: Time,
}

#[derive(Default)]
struct Queue {
    cells: u64,
    bytes: u64,
    /// Packets in the queue, oldest first: id, cells ahead of it at enqueue, enqueue time.
    waiting: VecDeque<(PktId, u64, Time)>,
    bytes_remaining: i64,
    /// The last time the queue held more than the threshold (the oracle's instants), or never.
    last_over: Option<Time>,
}

#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct PortCounts {
    pub port: u32,
    /// Packets that left the port's queues: what INT processes.
    pub packets: u64,
    /// Marked by the Snapshot algorithm.
    pub marked: u64,
    /// In the oracle's snapshots.
    pub oracle: u64,
    /// Marked but not in the oracle (cell rounding).
    pub extra: u64,
    /// In the oracle but not marked (never, by construction; counted to prove it).
    pub unmarked_oracle: u64,
}

#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct RingCounts {
    pub entries: u64,
    pub writes: u64,
    /// Records a courier carried out.
    pub exported: u64,
    /// Records overwritten before a courier read them (missed).
    pub overwritten: u64,
    /// Couriers that found the ring empty (their record had been overwritten).
    pub empty_couriers: u64,
    /// Most unread records at once.
    pub peak: u64,
}

pub struct BurstRadar {
    prm: BurstRadarParams,
    /// Per port: threshold in bytes and the index of its first queue (usize::MAX: not watched).
    threshold: Vec<u64>,
    slot: Vec<usize>,
    queues: Vec<Queue>,
    counts: Vec<PortCounts>,
    ring: Vec<Record>,
    write: u64,
    read: u64,
    rc: RingCounts,
    /// Couriers being cloned: when they reach the mirror queue.
    cloning: VecDeque<(Time, PktId)>,
    exported: Vec<Exported>,
}

impl BurstRadar {
    /// `rates`: every port's rate in bits per second.
    pub fn new(prm: BurstRadarParams, rates: &[u64]) -> BurstRadar {
        let n = rates.len();
        let mut slot = vec![usize::MAX; n];
        let mut counts = Vec::new();
        for (k, p) in prm.ports.iter().enumerate() {
            slot[p.idx()] = k;
            counts.push(PortCounts { port: p.0, ..Default::default() });
        }
        let threshold = rates.iter().map(|&r| BitsPerSec(r).bytes_in(prm.threshold)).collect();
        let queues = (0..prm.ports.len() * CLASSES).map(|_| Queue::default()).collect();
        let ring = vec![Record::default(); prm.ring];
        let rc = RingCounts { entries: prm.ring as u64, ..Default::default() };
        BurstRadar {
            prm,
            threshold,
            slot,
            queues,
            counts,
            ring,
            write: 0,
            read: 0,
            rc,
            cloning: VecDeque::new(),
            exported: Vec::new(),
        }
    }

    fn cells(&self, size: u32) -> u64 {
        size.div_ceil(self.prm.cell) as u64
    }

    /// The queue of class `class` at the watched port in slot `k`.
    fn queue(&mut self, k: usize, class: u8) -> &mut Queue {
        &mut self.queues[k * CLASSES + (class as usize).min(CLASSES - 1)]
    }

    fn write_record(&mut self, r: Record) {
        let n = self.ring.len() as u64;
        self.ring[(self.write % n) as usize] = r;
        self.write += 1;
        self.rc.writes += 1;
        if self.write - self.read > n {
            self.rc.overwritten += 1;
            self.read = self.write - n;
        }
        self.rc.peak = self.rc.peak.max(self.write - self.read);
    }
}

impl Hooks for BurstRadar {
    const NAME: &'static str = "burstradar";
    const HOOKS: HookSet = HookSet::ADMIT.with(HookSet::DEQUEUE).with(HookSet::DROP);

    fn on_admit(&mut self, c: &mut HookCtx, at: PortId, id: PktId) -> Admit {
        let k = self.slot[at.idx()];
        if k == usize::MAX {
            return Admit::Queue;
        }
        let p = c.packet(id);
        let (size, class) = (p.size, p.class);
        let cells = self.cells(size);
        let thr = self.threshold[at.idx()];
        let q = self.queue(k, class);
        q.waiting.push_back((id, q.cells, c.now));
        q.cells += cells;
        q.bytes += size as u64;
        if q.bytes > thr {
            q.last_over = Some(c.now);
        }
        Admit::Queue
    }

    fn on_drop(&mut self, c: &mut HookCtx, at: PortId, id: PktId, why: DropReason) {
        // Only an arrival refused by the port's buffer was counted and never queued: take it back.
        let k = self.slot[at.idx()];
        if k == usize::MAX || why != DropReason::Overflow {
            return;
        }
        let p = c.packet(id);
        let (size, class) = (p.size, p.class);
        let cells = self.cells(size);
        let q = self.queue(k, class);
        if q.waiting.back().is_some_and(|w| w.0 == id) {
            q.waiting.pop_back();
            q.cells -= cells;
            q.bytes -= size as u64;
        }
    }

    fn on_dequeue(&mut self, c: &mut HookCtx, at: PortId, id: PktId) {
        if at == self.prm.mirror {
            // A courier leaves for the monitor: it carries the record at the read pointer, if any is left.
            if c.packet(id).kind == PktKind::Telemetry {
                if self.read < self.write {
                    let rec = self.ring[(self.read % self.ring.len() as u64) as usize];
                    self.read += 1;
                    self.rc.exported += 1;
                    self.exported.push(Exported { rec, at: c.now });
                } else {
                    self.rc.empty_couriers += 1;
                }
            }
            return;
        }
        let k = self.slot[at.idx()];
        if k == usize::MAX {
            return;
        }
        let p = *c.packet(id);
        let cells = self.cells(p.size);
        let thr = self.threshold[at.idx()] as i64;
        let cell = self.prm.cell as i64;
        let q = self.queue(k, p.class);
        let Some((wid, enq_cells, enq_time)) = q.waiting.pop_front() else {
            debug_assert!(false, "a packet left a watched queue it never entered");
            return;
        };
        debug_assert_eq!(wid, id, "watched queues are FIFO");
        let deq_cells = q.cells; // this packet included, as the ASIC reports it
        q.cells -= cells;
        q.bytes -= p.size as u64;
        let oracle = q.last_over.is_some_and(|t| t >= enq_time);
        let deq_bytes = deq_cells as i64 * cell;
        let marked = if deq_bytes > thr {
            q.bytes_remaining = deq_bytes - p.size as i64;
            true
        } else if q.bytes_remaining > 0 {
            q.bytes_remaining -= p.size as i64;
            true
        } else {
            false
        };
        let pc = &mut self.counts[k];
        pc.packets += 1;
        pc.oracle += oracle as u64;
        pc.marked += marked as u64;
        pc.extra += (marked && !oracle) as u64;
        pc.unmarked_oracle += (oracle && !marked) as u64;
        if !marked {
            return;
        }
        self.write_record(Record {
            port: at.0,
            class: p.class.min(CLASSES as u8 - 1),
            src: p.src.0,
            dst: p.dst.0,
            kind: p.kind.code(),
            seq: p.seq,
            size: p.size,
            enq_time,
            deq_time: c.now,
            enq_cells,
            deq_cells,
            oracle,
        });
        // clone_e2e, truncated: the courier keeps the packet's headers and carries one record.
        let cid = c.copy(id);
        let node = c.ports[at.idx()].node;
        let cp = c.pk.get_mut(cid);
        cp.kind = PktKind::Telemetry;
        cp.size = self.prm.courier_bytes;
        cp.payload = 0;
        cp.class = 0;
        cp.src = node;
        cp.dst = self.prm.monitor;
        let due = c.now + self.prm.clone_delay;
        if self.cloning.is_empty() {
            c.timer(due, 0);
        }
        self.cloning.push_back((due, cid));
    }

    fn on_timer(&mut self, c: &mut HookCtx, _key: u32) {
        while let Some(&(due, id)) = self.cloning.front() {
            if due > c.now {
                c.timer(due, 0);
                break;
            }
            self.cloning.pop_front();
            c.effect(Effect::Enqueue { port: self.prm.mirror, id });
        }
    }

    // Split between the parts of a parallel run: everything it keeps is the monitor's switch's (the
    // watched ports, the ring, the couriers being cloned), and its timer acts there.
    fn parallel_refusal(&self) -> Option<&'static str> {
        None
    }

    fn timer_node(&self, ports: &[Port], _key: u32) -> Option<NodeId> {
        Some(ports[self.prm.mirror.idx()].node)
    }

    fn take_part(&mut self, other: &mut BurstRadar, ports: &[Port], theirs: &dyn Fn(NodeId) -> bool) {
        if theirs(ports[self.prm.mirror.idx()].node) {
            std::mem::swap(self, other);
        }
    }

    fn held(&self, f: &mut dyn FnMut(PktId)) {
        self.cloning.iter().for_each(|&(_, id)| f(id));
    }

    fn summary(&self) -> serde_json::Value {
        let sum = |f: fn(&PortCounts) -> u64| self.counts.iter().map(f).sum::<u64>();
        serde_json::json!({
            "threshold_ns": self.prm.threshold.0 as f64 / 1e3,
            "cell": self.prm.cell,
            "packets": sum(|c| c.packets),
            "marked": sum(|c| c.marked),
            "oracle": sum(|c| c.oracle),
            "extra": sum(|c| c.extra),
            "unmarked_oracle": sum(|c| c.unmarked_oracle),
            "ring": self.rc,
            "ports": self.counts,
        })
    }

    fn table(&self) -> Option<(&'static str, Vec<Column>)> {
        let e = &self.exported;
        let us = |t: Time| t.0 as f64 / 1e6;
        Some((
            "telemetry",
            vec![
                Column::F64("exported_us", e.iter().map(|x| us(x.at)).collect()),
                Column::I64("port_id", e.iter().map(|x| x.rec.port as i64).collect()),
                Column::I64("class", e.iter().map(|x| x.rec.class as i64).collect()),
                Column::I64("src", e.iter().map(|x| x.rec.src as i64).collect()),
                Column::I64("dst", e.iter().map(|x| x.rec.dst as i64).collect()),
                Column::Str(
                    "kind",
                    e.iter()
                        .map(|x| PktKind::from_code(x.rec.kind).map_or("?".into(), |k| format!("{k:?}").to_lowercase()))
                        .collect(),
                ),
                Column::I64("seq", e.iter().map(|x| x.rec.seq as i64).collect()),
                Column::I64("size", e.iter().map(|x| x.rec.size as i64).collect()),
                Column::F64("enq_us", e.iter().map(|x| us(x.rec.enq_time)).collect()),
                Column::F64("deq_us", e.iter().map(|x| us(x.rec.deq_time)).collect()),
                Column::I64("enq_depth_cells", e.iter().map(|x| x.rec.enq_cells as i64).collect()),
                Column::I64("deq_depth_cells", e.iter().map(|x| x.rec.deq_cells as i64).collect()),
                Column::Bool("oracle", e.iter().map(|x| x.rec.oracle).collect()),
            ],
        ))
    }
}
