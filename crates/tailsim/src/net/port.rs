//! A port: an egress queue, the transmitter that serializes its packets, and the directed link it drives.

use crate::engine::Pipe;
use crate::net::hooks::HookSet;
use crate::net::queue::{QueueDisc, CLASSES};
use crate::units::{BitsPerSec, NodeId, PktId, PortId, PsPerByte, Time};
use std::collections::VecDeque;

macro_rules! drop_reasons {
    ($($(#[$m:meta])* $v:ident => $name:literal,)*) => {
        /// Why a packet was dropped. The result columns (`drops_<name>`), summary keys (`dropped_<name>`), the
        /// CLI's summary line and the ledger iterate over `ALL`: a new reason is one line here.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum DropReason {
            $($(#[$m])* $v,)*
        }

        impl DropReason {
            /// Every reason, in the order of the result columns.
            pub const ALL: [DropReason; DropReason::COUNT] = [$(DropReason::$v,)*];
            /// The name in summary keys (`dropped_<name>`).
            pub fn name(self) -> &'static str {
                match self { $(DropReason::$v => $name,)* }
            }
            /// The column of the ports table.
            pub fn column(self) -> &'static str {
                match self { $(DropReason::$v => concat!("drops_", $name),)* }
            }
        }
    };
}

drop_reasons! {
    /// Buffer full (per-port limit or shared-buffer threshold).
    Overflow => "overflow",
    /// Transmitted onto a link that is down.
    LinkDown => "link_down",
    /// Corrupted on the link (checksum failure at the receiver).
    Corrupt => "corrupt",
    /// Refused by the host's QJUMP regulator (counted at the host's NIC port).
    Policed => "policed",
    /// No route to the destination (every path to it is down and routes re-converged); counted at the
    /// switch's ingress port.
    NoRoute => "no_route",
    /// A link-local frame that no mechanism at the far end consumed (never forwarded).
    Unclaimed => "unclaimed",
    /// Refused by a mechanism's admission or arrival verdict.
    Mechanism => "mechanism",
}

impl DropReason {
    pub const COUNT: usize = 7;
}

/// `repr(C)`: what a packet-hop updates (occupancy, busy time, transmit counters) in the first 64 bytes.
#[derive(Clone, Debug, Default)]
#[repr(C)]
pub struct PortStats {
    /// Integral of queued bytes over time (byte·ps), for the time-average occupancy.
    pub area: u128,
    pub last_change: Time,
    pub max_bytes: u64,
    /// Time spent serializing packets (including preamble and gap), over the whole run.
    pub busy_time: Time,
    pub tx_packets: u64,
    pub tx_bytes: u64,
    /// Start of the occupancy measurement (end of warm-up).
    pub since: Time,
    /// Drops at this port, by `DropReason as usize`.
    pub drops: [u64; DropReason::COUNT],
    pub ecn_marks: u64,
    /// Data packets cut to their header (NDP).
    pub trims: u64,
}

impl PortStats {
    /// A packet of `size` bytes serialized, the transmitter busy for `busy`.
    #[inline(always)]
    pub fn sent(&mut self, size: u64, busy: Time) {
        self.busy_time += busy;
        self.tx_packets += 1;
        self.tx_bytes += size;
    }
    /// Packets dropped at this port for `why`.
    #[inline]
    pub fn drops(&self, why: DropReason) -> u64 {
        self.drops[why as usize]
    }
    /// Packets dropped at this port for any reason.
    pub fn all_drops(&self) -> u64 {
        self.drops.iter().sum()
    }
}

/// A port's deferral of its ends of serialization (net/lazy.rs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Defer {
    /// Every end of serialization something waits for is an event.
    Never,
    /// The port may defer one; none is.
    May,
    /// The pending end of serialization at `busy_until` has no event: whatever touches the port first
    /// starts what should have started by then.
    Deferred,
}

/// A byte threshold of a port, or none: an `Option<u64>` in 8 bytes (u64::MAX = none, which admits and trims
/// nothing, as no threshold does), so that both thresholds fit the transmitter's line of the record with the
/// other fields admission reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Threshold(u64);

impl Threshold {
    #[inline(always)]
    pub fn new(bytes: Option<u64>) -> Threshold {
        Threshold(bytes.unwrap_or(u64::MAX))
    }
    #[inline(always)]
    pub fn get(self) -> Option<u64> {
        (self.0 != u64::MAX).then_some(self.0)
    }
}

/// Per-class reservations of a per-port limit, or none: `(reserve, n)` sets `reserve` bytes aside for each
/// of classes 0..n and shares the rest first come, first served (pFabric §6's commodity priority queues:
/// 225 KB, 15 KB per queue). Packed in 8 bytes (n in the low byte, 0 = none; the reserve above it, below
/// `ClassReserve::MAX`) so that it sits in the transmitter's line of the record: every admission under a
/// limit tests it, and in the cold part that test was 5 % of all samples at 5,488 hosts
/// (docs/performance-log.md, change 43).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClassReserve(u64);

impl ClassReserve {
    pub const NONE: ClassReserve = ClassReserve(0);
    /// The largest reserve a class can have (2^56 − 1 bytes; config/build.rs refuses more).
    pub const MAX: u64 = (1 << 56) - 1;
    /// `(reserve, n)`, n in 1..=8 and reserve at most `MAX`; none for `None`.
    pub fn new(r: Option<(u64, u8)>) -> ClassReserve {
        match r {
            None => ClassReserve::NONE,
            Some((bytes, n)) => {
                assert!(bytes <= Self::MAX && (1..=CLASSES as u8).contains(&n), "a class reserve out of range");
                ClassReserve(bytes << 8 | n as u64)
            }
        }
    }
    /// `(reserve, n)`, if any.
    #[inline(always)]
    pub fn get(self) -> Option<(u64, u8)> {
        (self.0 as u8 != 0).then_some((self.0 >> 8, self.0 as u8))
    }
}

/// What ECN compares a class's threshold K with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EcnMode {
    /// The bytes of the packet's class at the port (DCTCP's rule per class).
    PerClass,
    /// The port's bytes (PIAS).
    PerPort,
    /// The drain bytes of the packet's class: bytes of classes 0..=c (DeTail §5.2.3).
    DrainBytes,
}

/// A port's record, laid out by use (`repr(C)`, one record per 64-byte line boundary): what the arrival of
/// the link's packets at the far end reads in the first line, what admission and the transmitter read in the
/// second, the counters a packet-hop updates in the third, the queue after. The run loop prefetches them for
/// the coming events (engine/prefetch.rs): a wire arrival loads the first line alone unless the port deferred
/// its end of serialization, which the arrival catches up; the egress port of a hop loads all three and its
/// queue's lines. With the compiler's own order the flags and the corruption probability sat in the record's
/// last two lines, the wire in the second, and the arrival through a port touched four lines of it
/// (docs/performance-log.md, changes 9 and 49).
#[repr(C, align(64))]
pub struct Port {
    // Line 0: what the arrival through the link reads (and every other event on the port too).
    /// Packets propagating on the link, in order.
    pub wire: Pipe,
    /// The hook points at which mechanisms see this port's packets (empty by default; `net/hooks.rs`).
    pub hooks: HookSet,
    pub up: bool,
    /// The transmitter is held by the slow path: a packet in `Network::tx_current` whose end of
    /// serialization (`TxDone`) decides its fate, or a `SERVE` hook's pass. See `busy_until` for the fast path.
    pub busy: bool,
    /// A `TxDone` event is pending for this port (fast path: at `busy_until`), or deferred (`defer`).
    pub tx_pending: bool,
    /// Whether this port may leave its end of serialization without an event in this run, and whether it
    /// has (net/lazy.rs).
    pub defer: Defer,
    /// Bit c set = class c paused by the peer (PFC).
    pub paused: u8,
    /// Compare K with the port's total queue rather than the class queue.
    pub ecn_mode: EcnMode,
    pub peer: NodeId,
    /// The port of the same link in the other direction (the peer's port towards `node`).
    pub reverse: PortId,
    /// Probability that a packet crossing this link is corrupted (and discarded by the receiver).
    pub corrupt_p: f64,
    // Line 1: what admission and the transmitter read.
    pub node: NodeId,
    /// Preamble and inter-frame gap: wire time without buffer space.
    pub wire_overhead: u32,
    /// Per-class reservations of the per-port limit, tested by every admission under a limit.
    pub class_reserve: ClassReserve,
    pub delay: Time,
    /// Bytes queued (not counting the packet being serialized).
    pub bytes: u64,
    /// The fast path (net/egress.rs, `start_queued`): the transmitter's last packet went onto the wire when
    /// its serialization started, and the transmitter is free again at this time. No event marks that moment
    /// unless something waits for it (`tx_pending`).
    pub busy_until: Time,
    /// Switch ports with NDP trimming: the class-queue size beyond which data packets are cut to headers.
    pub trim: Threshold,
    /// Per-port byte limit (none = unlimited or governed by the switch's shared buffer).
    pub limit: Threshold,
    /// `rate`'s picoseconds a byte, if whole (`tx_time`); changed with it (`set_rate`).
    pub(super) ps_per_byte: PsPerByte,
    // Line 2: the counters a packet-hop updates (`PortStats`' first line); then the colder state.
    pub stats: PortStats,
    /// When the packet being serialized started (valid while `busy`).
    pub tx_start: Time,
    /// The link's rate: changed only with `set_rate`, which keeps `ps_per_byte` with it. Read on the fast
    /// path only where `ps_per_byte` is not whole (`tx_time`).
    pub rate: BitsPerSec,
    /// Link-local control frames and express packets waiting to be sent: served before the queue, never paused,
    /// outside the buffer (`Effect::Frame`, `Effect::Express`).
    pub ctl: VecDeque<PktId>,
    /// ECN threshold K per class in bytes (u64::MAX = no marking).
    pub ecn_k: [u64; CLASSES],
    pub queue: QueueDisc,
}

impl Port {
    /// The time `bytes` (wire overhead included) take to serialize onto this port's link.
    #[inline(always)]
    pub fn tx_time(&self, bytes: u64) -> Time {
        self.rate.tx_time_at(self.ps_per_byte, bytes)
    }
    /// The link's rate changes (a fault).
    pub fn set_rate(&mut self, rate: BitsPerSec) {
        self.rate = rate;
        self.ps_per_byte = PsPerByte::of(rate);
    }
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
    /// Total time this port's transmitter has been busy up to `now`, counting the packet in progress (the
    /// fast path adds a packet's whole serialization when it starts: the part after `now` is taken off).
    pub fn busy_through(&self, now: Time) -> Time {
        if self.busy {
            self.stats.busy_time + (now - self.tx_start)
        } else {
            Time(self.stats.busy_time.0 - self.busy_until.0.saturating_sub(now.0))
        }
    }
    /// Put packet `id` on this port's wire (port `port`), due at the far end at `at`; the wire's head is the
    /// only one of its packets with an arrival event.
    #[inline(always)]
    pub fn onto_wire(&mut self, ev: &mut crate::engine::EventQueue, port: PortId, at: Time, id: PktId) {
        if self.wire.push(at, id) {
            ev.schedule_arrival(at, port);
        }
    }
    /// Start loading the record's first three lines (engine/prefetch.rs): what a packet-hop reads and
    /// updates (the layout above).
    #[inline(always)]
    pub fn prefetch(&self) {
        crate::engine::prefetch_lines((self as *const Port).cast(), 3);
    }
    /// Start loading the record's first line: what the arrival of the link's head packet reads when the port
    /// has no deferred end of serialization to catch up.
    #[inline(always)]
    pub fn prefetch_arrival(&self) {
        crate::engine::prefetch((self as *const Port).cast::<u8>());
    }
    /// Start loading the record's second and third lines (the transmitter's fields and the counters), for an
    /// arrival that catches up the port's deferred end of serialization (after `prefetch_arrival`).
    #[inline(always)]
    pub fn prefetch_transmitter(&self) {
        crate::engine::prefetch_lines((self as *const Port).cast::<u8>().wrapping_add(64), 2);
    }
    /// Start loading the queue's state that admission and the transmitter read: its first `lines` lines (at
    /// most three: classes 0–3 whole, each its bytes, its oldest packet and its ring's header;
    /// `queue::lines_through` says how many hold the classes in use). Addresses only: nothing of the record
    /// is read, so this does not wait for it.
    #[inline(always)]
    pub fn prefetch_queue(&self, lines: usize) {
        crate::engine::prefetch_lines((&self.queue as *const QueueDisc).cast(), lines);
    }
    /// What admission reads of the queue: `prefetch_queue`'s lines and, for an ECN-capable packet, the
    /// thresholds. A line loaded that the hop does not read delays those it does: at 5,488 hosts the
    /// thresholds' line, loaded for every NDP hop, cost about 6 % of the packet-hops per second
    /// (docs/performance-log.md, change 43). Addresses only, as `prefetch_queue`: a hint that read the queue's
    /// discipline to find a class's ring would wait for the line it asks for.
    #[inline(always)]
    pub fn prefetch_admission(&self, ecn: bool, lines: usize) {
        if ecn {
            crate::engine::prefetch(self.ecn_k.as_ptr());
        }
        self.prefetch_queue(lines);
    }
    /// The transmitter is serializing a packet (or held by a `SERVE` hook) at `now`.
    #[inline(always)]
    pub fn transmitting(&self, now: Time) -> bool {
        self.busy || now < self.busy_until
    }
    /// Restart the occupancy statistics (max and time-average) at `now`; drop and mark counters keep counting.
    pub fn restart_occupancy(&mut self, now: Time) {
        self.stats.area = 0;
        self.stats.last_change = now;
        self.stats.since = now;
        self.stats.max_bytes = self.bytes;
    }
}

// The layout the comments above describe: an arrival's fields in line 0, the transmitter's in line 1, the
// counters in line 2.
const _: () = {
    use std::mem::offset_of;
    assert!(offset_of!(Port, wire) == 0 && offset_of!(Port, corrupt_p) + 8 <= 64);
    assert!(offset_of!(Port, hooks) < 64 && offset_of!(Port, defer) < 64 && offset_of!(Port, reverse) + 4 <= 64);
    assert!(offset_of!(Port, node) >= 64 && offset_of!(Port, ps_per_byte) + 8 <= 128);
    assert!(offset_of!(Port, stats) == 128 && offset_of!(PortStats, since) + 8 <= 64);
    // The queue starts a line, so that `prefetch_queue`'s lines hold its classes 0–3 whole (each with its
    // head in line, net/queue.rs; `queue::lines_through`).
    assert!(offset_of!(Port, queue) % 64 == 0);
    // The size config/limits.rs counts (`PORT_BYTES`, with the queues' rings and the wire's).
    assert!(std::mem::size_of::<Port>() == 960);
};
