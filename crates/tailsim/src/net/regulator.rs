//! QJUMP's host regulator (UCAM-CL-TR-943 §3.2.3, §3.4; docs/qjump.md): one Leaky Token Bucket per host and
//! per priority class, between the transport (after the host's transmit delay line) and the NIC queue.
//! Packets that do not fit are dropped (policer, the thesis's choice) or held until the next epoch (shaper).

use crate::metrics::latency::LatencyHist;
use crate::net::queue::CLASSES;
use crate::units::{PktId, Time};
use std::collections::VecDeque;

/// Which admission rule a bucket applies (the thesis's text and its listings differ; docs/qjump.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// §3.2.3, Eq. 3.7 and Fig. 3.5: at offset v into the epoch a packet of b bytes goes if
    /// b ≤ B·(e − v)/e and the epoch's total stays ≤ B. Not token-bucket conformant: small packets late in
    /// an epoch plus a full one at the next epoch's start make almost 2B in a short time.
    LtbText,
    /// Listing 3.2: the leak is taken from what is left, b ≤ B − sent − B·v/e. The default: its output fits
    /// a token bucket of depth B and rate B/e, which is what the bound needs.
    LtbListing,
    /// Listing 3.1: any packet of ≤ B bytes empties the bucket for the rest of the epoch.
    ZeroOnSend,
    /// The released TC module and ns-2 code: B bytes per epoch, no leak.
    EpochBudget,
}

/// Where epochs start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Anchor {
    /// Per host and class, at the first packet after the previous epoch ended (both listings).
    Lazy,
    /// At multiples of the epoch on a global clock, the same at every host (the derivation's aligned epochs;
    /// the ns-2 code's free-running timer).
    Aligned,
}

/// What happens to a packet that does not fit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Excess {
    Police,
    Shape,
}

/// Whose packets share a bucket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Granularity {
    /// One bucket per host and class (the testbed's kernel module).
    Host,
    /// One bucket per flow, with its class's parameters (the authors' ns-2 code). Police only.
    Flow,
}

/// One class's bucket parameters: `budget` bytes per `epoch`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LevelParams {
    pub epoch: Time,
    pub budget: u64,
}

/// A Leaky Token Bucket: the current epoch's start and the bytes sent in it.
#[derive(Clone, Copy, Debug, Default)]
pub struct Bucket {
    start: Option<Time>,
    sent: u64,
}

impl Bucket {
    /// Start a new epoch if the current one is over; returns the current epoch's start.
    #[inline]
    fn roll(&mut self, a: Anchor, e: Time, now: Time) -> Time {
        let start = match (a, self.start) {
            (Anchor::Lazy, Some(s)) if now.0 < s.0 + e.0 => s,
            (Anchor::Lazy, _) => now,
            (Anchor::Aligned, _) => Time(now.0 / e.0 * e.0),
        };
        if self.start != Some(start) {
            self.start = Some(start);
            self.sent = 0;
        }
        start
    }

    /// Whether `bytes` may leave at `now`; if so, they are charged. Integer arithmetic throughout.
    #[inline]
    pub fn try_send(&mut self, v: Variant, a: Anchor, p: LevelParams, now: Time, bytes: u64) -> bool {
        let start = self.roll(a, p.epoch, now);
        let (e, b, off) = (p.epoch.0 as u128, p.budget as u128, (now.0 - start.0) as u128);
        let (size, sent) = (bytes as u128, self.sent as u128);
        let ok = match v {
            Variant::LtbText => sent + size <= b && size * e <= b * (e - off),
            // b − sent − leaked ≥ size, with leaked = b·off/e, multiplied through by e.
            Variant::LtbListing => (sent + size) * e + b * off <= b * e,
            Variant::ZeroOnSend => sent == 0 && size <= b,
            Variant::EpochBudget => sent + size <= b,
        };
        if ok {
            self.sent = if v == Variant::ZeroOnSend { p.budget } else { self.sent + bytes };
        }
        ok
    }

    /// When a packet refused at `now` can next be tried: the start of the next epoch (in every variant the
    /// room left in an epoch only shrinks with time).
    #[inline]
    pub fn next_epoch(&self, a: Anchor, e: Time, now: Time) -> Time {
        match (a, self.start) {
            (Anchor::Lazy, Some(s)) => Time(s.0 + e.0),
            (Anchor::Lazy, None) => now,
            (Anchor::Aligned, _) => Time((now.0 / e.0 + 1) * e.0),
        }
    }
}

/// The verdict on a packet offered to the regulator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Send,
    /// Policed, or larger than the budget (the regulator does not resegment, §3.4.3).
    Drop,
    /// Shaper: held; the host's shaper event must fire at this time (None: one is already due in time).
    Held(Option<Time>),
}

/// Per-class counters and latency histograms.
#[derive(Clone, Debug, Default)]
pub struct ClassStats {
    pub admitted: u64,
    pub admitted_bytes: u64,
    pub policed: u64,
    pub held: u64,
    pub max_hold: Time,
    /// Data packets of this class delivered to a host: from the transport's send time to the last bit at
    /// the destination (so a shaper's holding time is included).
    pub latency: LatencyHist,
    /// The last switch's delay as the thesis measures it (§3.1): last bit in to last bit out.
    pub last_hop: LatencyHist,
}

pub struct Regulator {
    pub variant: Variant,
    pub anchor: Anchor,
    pub excess: Excess,
    pub granularity: Granularity,
    /// Per class; None = not regulated.
    pub levels: [Option<LevelParams>; CLASSES],
    buckets: Vec<[Bucket; CLASSES]>,
    /// Per flow slot: the generation the bucket belongs to, and the bucket (grown to the largest slot seen).
    flow_buckets: Vec<(u32, Bucket)>,
    /// Shaper: packets held per host and class, with their arrival time.
    held: Vec<[VecDeque<(PktId, Time)>; CLASSES]>,
    /// The pending shaper event per host (one at a time; a later one is ignored when it fires early).
    wake: Vec<Option<Time>>,
    pub stats: [ClassStats; CLASSES],
    /// The calculator's view of the regulated classes (for the summary).
    pub bounds: Vec<crate::qjump::Level>,
    pub network_epoch: Time,
}

impl Regulator {
    pub fn new(
        hosts: usize,
        variant: Variant,
        anchor: Anchor,
        excess: Excess,
        levels: [Option<LevelParams>; CLASSES],
    ) -> Regulator {
        Regulator {
            variant,
            anchor,
            excess,
            levels,
            granularity: Granularity::Host,
            buckets: vec![[Bucket::default(); CLASSES]; hosts],
            flow_buckets: Vec::new(),
            held: (0..hosts).map(|_| Default::default()).collect(),
            wake: vec![None; hosts],
            stats: Default::default(),
            bounds: Vec::new(),
            network_epoch: Time::ZERO,
        }
    }

    /// Offer a data packet of `bytes` (as charged: size + wire overhead) in `class` from host `h`, of the
    /// flow in slot `flow` with generation `gen`.
    #[inline]
    #[allow(clippy::too_many_arguments)] // per-packet values passed in registers; a struct would be built per call
    pub fn offer(
        &mut self,
        now: Time,
        h: usize,
        class: usize,
        bytes: u64,
        id: PktId,
        flow: usize,
        gen: u32,
    ) -> Verdict {
        let Some(p) = self.levels[class] else { return Verdict::Send };
        let st = &mut self.stats[class];
        if bytes > p.budget {
            st.policed += 1;
            return Verdict::Drop;
        }
        if self.granularity == Granularity::Flow {
            if flow >= self.flow_buckets.len() {
                self.flow_buckets.resize(flow + 1, (u32::MAX, Bucket::default()));
            }
            let fb = &mut self.flow_buckets[flow];
            if fb.0 != gen {
                *fb = (gen, Bucket::default()); // a new flow in a reused slot
            }
            return if fb.1.try_send(self.variant, self.anchor, p, now, bytes) {
                st.admitted += 1;
                st.admitted_bytes += bytes;
                Verdict::Send
            } else {
                st.policed += 1;
                Verdict::Drop
            };
        }
        // A shaper keeps a class's packets in order: nothing overtakes a held packet.
        if self.held[h][class].is_empty() && self.buckets[h][class].try_send(self.variant, self.anchor, p, now, bytes) {
            st.admitted += 1;
            st.admitted_bytes += bytes;
            return Verdict::Send;
        }
        match self.excess {
            Excess::Police => {
                st.policed += 1;
                Verdict::Drop
            }
            Excess::Shape => {
                st.held += 1;
                let first = self.held[h][class].is_empty();
                self.held[h][class].push_back((id, now));
                let at = self.buckets[h][class].next_epoch(self.anchor, p.epoch, now);
                Verdict::Held(if first { self.arm(h, at) } else { None })
            }
        }
    }

    /// Request a shaper event for host `h` at `at`; returns it if it must be scheduled.
    fn arm(&mut self, h: usize, at: Time) -> Option<Time> {
        match self.wake[h] {
            Some(w) if w <= at => None,
            _ => {
                self.wake[h] = Some(at);
                Some(at)
            }
        }
    }

    /// The host's shaper event fired: false if it is stale (superseded by an earlier one).
    pub fn wake_due(&mut self, h: usize, now: Time) -> bool {
        if self.wake[h] != Some(now) {
            return false;
        }
        self.wake[h] = None;
        true
    }

    /// Release one held packet of host `h` that fits now, highest class first; `size_of` gives the charged
    /// bytes of a packet.
    pub fn release(&mut self, now: Time, h: usize, size_of: impl Fn(PktId) -> u64) -> Option<PktId> {
        for c in 0..CLASSES {
            let Some(&(id, since)) = self.held[h][c].front() else { continue };
            let p = self.levels[c].expect("only regulated classes hold packets");
            let bytes = size_of(id);
            if self.buckets[h][c].try_send(self.variant, self.anchor, p, now, bytes) {
                self.held[h][c].pop_front();
                let st = &mut self.stats[c];
                st.admitted += 1;
                st.admitted_bytes += bytes;
                st.max_hold = st.max_hold.max(now - since);
                return Some(id);
            }
        }
        None
    }

    /// After releasing: the next time host `h` must be woken, if it still holds packets (and no event is due
    /// by then).
    pub fn rearm(&mut self, now: Time, h: usize) -> Option<Time> {
        let next = (0..CLASSES)
            .filter(|&c| !self.held[h][c].is_empty())
            .map(|c| self.buckets[h][c].next_epoch(self.anchor, self.levels[c].expect("regulated").epoch, now))
            .min()?;
        self.arm(h, next)
    }

    /// A parallel run's merge: the regulators of the hosts `theirs` accepts from another part's copy, and that
    /// part's counters added (each part counted its own hosts' packets).
    pub fn take_part(&mut self, other: &mut Regulator, theirs: impl Fn(usize) -> bool) {
        for h in (0..self.buckets.len()).filter(|&h| theirs(h)) {
            std::mem::swap(&mut self.buckets[h], &mut other.buckets[h]);
            std::mem::swap(&mut self.held[h], &mut other.held[h]);
            std::mem::swap(&mut self.wake[h], &mut other.wake[h]);
        }
        for (a, b) in self.stats.iter_mut().zip(&other.stats) {
            a.admitted += b.admitted;
            a.admitted_bytes += b.admitted_bytes;
            a.policed += b.policed;
            a.held += b.held;
            a.max_hold = a.max_hold.max(b.max_hold);
            a.latency.add(&b.latency);
            a.last_hop.add(&b.last_hop);
        }
    }

    /// Packets held by every shaper (conservation).
    pub fn held_packets(&self) -> usize {
        self.held.iter().flat_map(|q| q.iter()).map(VecDeque::len).sum()
    }
}
