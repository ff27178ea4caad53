//! A port: an egress queue, the transmitter that serializes its packets, and the directed link it drives.

use crate::engine::Pipe;
use crate::net::queue::{QueueDisc, CLASSES};
use crate::units::{BitsPerSec, NodeId, Time};

/// Why a packet was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropReason {
    /// Buffer full (per-port limit or shared-buffer threshold).
    Overflow,
    /// Transmitted onto a link that is down.
    LinkDown,
    /// Corrupted on the link (checksum failure at the receiver).
    Corrupt,
    /// Refused by the host's QJUMP regulator (counted at the host's NIC port).
    Policed,
}

impl DropReason {
    /// Every reason, in the order of the result columns.
    pub const ALL: [DropReason; 4] =
        [DropReason::Overflow, DropReason::LinkDown, DropReason::Corrupt, DropReason::Policed];
}

#[derive(Clone, Debug, Default)]
pub struct PortStats {
    pub tx_packets: u64,
    pub tx_bytes: u64,
    pub drops_overflow: u64,
    pub drops_link_down: u64,
    pub drops_corrupt: u64,
    pub drops_policed: u64,
    pub ecn_marks: u64,
    /// Data packets cut to their header (NDP).
    pub trims: u64,
    pub max_bytes: u64,
    /// Integral of queued bytes over time (byte·ps), for the time-average occupancy.
    pub area: u128,
    pub last_change: Time,
    /// Start of the occupancy measurement (end of warm-up).
    pub since: Time,
    /// Time spent serializing packets (including preamble and gap), over the whole run.
    pub busy_time: Time,
}

impl PortStats {
    /// Packets dropped at this port for `why`.
    pub fn drops(&self, why: DropReason) -> u64 {
        match why {
            DropReason::Overflow => self.drops_overflow,
            DropReason::LinkDown => self.drops_link_down,
            DropReason::Corrupt => self.drops_corrupt,
            DropReason::Policed => self.drops_policed,
        }
    }
}

pub struct Port {
    pub node: NodeId,
    pub peer: NodeId,
    pub rate: BitsPerSec,
    pub delay: Time,
    pub up: bool,
    /// Probability that a packet crossing this link is corrupted (and discarded by the receiver).
    pub corrupt_p: f64,
    pub queue: QueueDisc,
    /// Bytes queued (not counting the packet being serialized).
    pub bytes: u64,
    /// Per-port byte limit (None = unlimited or governed by the switch's shared buffer).
    pub limit: Option<u64>,
    /// With a per-port limit: `(reserve, n)` sets `reserve` bytes aside for each of classes 0..n and shares
    /// the rest first come, first served (pFabric §6's commodity priority queues: 225 KB, 15 KB per queue).
    pub class_reserve: Option<(u64, u8)>,
    /// ECN threshold K per class in bytes (u64::MAX = no marking).
    pub ecn_k: [u64; CLASSES],
    /// Compare K with the port's total queue rather than the class queue.
    pub ecn_per_port: bool,
    /// Switch ports with NDP trimming: the class-queue size beyond which data packets are cut to headers.
    pub trim: Option<u64>,
    pub busy: bool,
    /// When the packet being serialized started (valid while `busy`).
    pub tx_start: Time,
    /// Bit c set = class c paused by the peer (PFC).
    pub paused: u8,
    /// Packets propagating on the link, in order.
    pub wire: Pipe,
    /// Preamble and inter-frame gap: wire time without buffer space.
    pub wire_overhead: u32,
    pub stats: PortStats,
}

impl Port {
    /// Account for a change of queued bytes at `now` (before applying it).
    #[inline]
    pub fn occupancy_changed(&mut self, now: Time, new_bytes: u64) {
        let s = &mut self.stats;
        s.area += self.bytes as u128 * (now.0 - s.last_change.0) as u128;
        s.last_change = now;
        self.bytes = new_bytes;
        if new_bytes > s.max_bytes {
            s.max_bytes = new_bytes;
        }
    }
    /// Time-average queued bytes over [since, now].
    pub fn avg_bytes(&self, now: Time) -> f64 {
        let span = now.0.saturating_sub(self.stats.since.0);
        if span == 0 {
            return self.bytes as f64;
        }
        let area = self.stats.area + self.bytes as u128 * (now.0 - self.stats.last_change.0) as u128;
        area as f64 / span as f64
    }
    /// Total time this port's transmitter has been busy up to `now`, counting the packet in progress.
    pub fn busy_through(&self, now: Time) -> Time {
        if self.busy {
            self.stats.busy_time + (now - self.tx_start)
        } else {
            self.stats.busy_time
        }
    }
    /// Restart the occupancy statistics (max and time-average) at `now`; drop and mark counters keep counting.
    pub fn restart_occupancy(&mut self, now: Time) {
        self.stats.area = 0;
        self.stats.last_change = now;
        self.stats.since = now;
        self.stats.max_bytes = self.bytes;
    }
}
