//! Receiver downlink accounting: how much of each receiver's downlink time went unused while the receiver
//! had work it knew of.
//!
//! The Homa thesis (Ch. 5, "wasted bandwidth") counts a receiver's downlink as wasted when it is idle while the
//! receiver has incomplete incoming messages; the total over receivers is divided by the receivers' total
//! simulated time. A receiver "has" a message from the moment its first data packet arrives
//! (`FlowEvent::Heard`) until it holds every byte (`FlowEvent::Received`): a receiver cannot schedule what
//! it has not heard of. A receiver with such messages whose downlink is busy is not wasting anything, even
//! if the packets are control packets or belong to other flows.
//!
//! Cost: O(1) per heard or completed flow, plus one bit per flow; nothing per packet (the downlink's busy
//! time is a running sum kept by the port).

use crate::net::Network;
use crate::units::{NodeId, PortId, Time};
use serde::Serialize;

#[derive(Clone, Copy, Debug, Default)]
struct Receiver {
    /// Incomplete flows the receiver has heard of.
    pending: u32,
    /// Start of the current interval with `pending > 0`, and the downlink's busy time then.
    since: Time,
    busy_at_since: Time,
    /// Idle downlink time with `pending > 0`, over closed intervals since the measurement began.
    wasted: Time,
    /// The downlink's busy time when the measurement began.
    busy_at_start: Time,
}

/// Per-receiver wasted-downlink accounting.
pub struct Inbound {
    /// The switch port that feeds each host (its downlink); None for a host without one.
    downlink: Vec<Option<PortId>>,
    rx: Vec<Receiver>,
    /// Flows counted in `pending` (bit per flow id), so a completion is only counted for a heard flow.
    heard: Vec<u64>,
    /// Start of the measurement (0, or the end of warm-up).
    since: Time,
}

/// What summary.json reports.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct InboundStats {
    /// Fraction of the receivers' total time (hosts × measured time) during which a receiver's downlink was
    /// idle while the receiver had incomplete incoming flows it knew of (Homa thesis Ch. 5).
    pub wasted_bandwidth: f64,
    /// Fraction of the receivers' total time during which their downlinks were transmitting.
    pub downlink_utilization: f64,
}

impl Inbound {
    pub fn new(net: &Network) -> Inbound {
        let n = net.n_hosts();
        let mut downlink = vec![None; n];
        for (i, p) in net.ports.iter().enumerate() {
            if net.is_host(p.peer) && !net.is_host(p.node) {
                downlink[p.peer.idx()] = Some(PortId(i as u32));
            }
        }
        Inbound { downlink, rx: vec![Receiver::default(); n], heard: Vec::new(), since: Time::ZERO }
    }

    /// The switch port that feeds host `h`, if any.
    pub fn downlink(&self, h: NodeId) -> Option<PortId> {
        self.downlink[h.idx()]
    }

    fn busy(&self, net: &Network, h: usize, now: Time) -> Time {
        self.downlink[h].map_or(Time::ZERO, |p| net.ports[p.idx()].busy_through(now))
    }

    /// Wasted time of the interval [since, now] of a receiver with `pending > 0`.
    fn open_waste(&self, net: &Network, h: usize, now: Time) -> Time {
        let r = &self.rx[h];
        let busy = self.busy(net, h, now) - r.busy_at_since;
        Time((now - r.since).0.saturating_sub(busy.0))
    }

    /// The word and bit of flow `id` in `heard`.
    fn slot(id: u64) -> (usize, u64) {
        ((id / 64) as usize, 1u64 << (id % 64))
    }

    pub fn heard(&mut self, net: &Network, id: u64, dst: NodeId, now: Time) {
        let (word, bit) = Self::slot(id);
        if word >= self.heard.len() {
            self.heard.resize(word + 1, 0);
        }
        if self.heard[word] & bit != 0 {
            return;
        }
        self.heard[word] |= bit;
        let h = dst.idx();
        if self.rx[h].pending == 0 {
            let b = self.busy(net, h, now);
            let r = &mut self.rx[h];
            r.since = now;
            r.busy_at_since = b;
        }
        self.rx[h].pending += 1;
    }

    pub fn received(&mut self, net: &Network, id: u64, dst: NodeId, now: Time) {
        let (word, bit) = Self::slot(id);
        if self.heard.get(word).is_none_or(|w| w & bit == 0) {
            return; // never heard of while incomplete (e.g. a one-packet flow)
        }
        self.heard[word] &= !bit;
        let h = dst.idx();
        if self.rx[h].pending == 1 {
            let w = self.open_waste(net, h, now);
            self.rx[h].wasted += w;
        }
        self.rx[h].pending -= 1;
    }

    /// Start measuring at `now` (end of warm-up): intervals already open count from here.
    /// Take from `other` (another part's copy, sim/parallel.rs) the receivers `theirs` accepts. A host's
    /// downlink is its switch's port, in the host's part (a cut never separates a host from its switch).
    pub fn take_part(&mut self, other: &mut Inbound, theirs: impl Fn(NodeId) -> bool) {
        for (h, (a, b)) in self.rx.iter_mut().zip(&mut other.rx).enumerate() {
            if theirs(NodeId(h as u32)) {
                std::mem::swap(a, b);
            }
        }
    }

    pub fn restart(&mut self, net: &Network, now: Time) {
        self.since = now;
        for h in 0..self.rx.len() {
            let b = self.busy(net, h, now);
            let r = &mut self.rx[h];
            r.wasted = Time::ZERO;
            r.busy_at_start = b;
            if r.pending > 0 {
                r.since = now;
                r.busy_at_since = b;
            }
        }
    }

    /// Wasted downlink time of receiver `h` from the start of the measurement to `now`.
    pub fn wasted(&self, net: &Network, h: NodeId, now: Time) -> Time {
        let r = &self.rx[h.idx()];
        if r.pending > 0 {
            r.wasted + self.open_waste(net, h.idx(), now)
        } else {
            r.wasted
        }
    }

    pub fn stats(&self, net: &Network, now: Time) -> Option<InboundStats> {
        self.sums(net, now, |_| true).map(|s| s.stats())
    }

    /// The wasted and busy downlink time of the receivers `mine` accepts (a parallel run's part: its own
    /// hosts, whose downlinks are its own), to be added to the other parts' before `stats`.
    pub fn sums(&self, net: &Network, now: Time, mine: impl Fn(usize) -> bool) -> Option<InboundSums> {
        let span = now.0.saturating_sub(self.since.0);
        let hosts = self.rx.len();
        if span == 0 || hosts == 0 {
            return None;
        }
        let wasted: u64 = (0..hosts).filter(|&h| mine(h)).map(|h| self.wasted(net, NodeId(h as u32), now).0).sum();
        let busy: u64 =
            (0..hosts).filter(|&h| mine(h)).map(|h| (self.busy(net, h, now) - self.rx[h].busy_at_start).0).sum();
        Some(InboundSums { wasted, busy, span, hosts: hosts as u64 })
    }
}

/// Receivers' wasted and busy downlink time (ps) over a span of `span` ps of `hosts` receivers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InboundSums {
    pub wasted: u64,
    pub busy: u64,
    pub span: u64,
    pub hosts: u64,
}

impl InboundSums {
    pub fn stats(&self) -> InboundStats {
        let total = self.span as f64 * self.hosts as f64;
        InboundStats { wasted_bandwidth: self.wasted as f64 / total, downlink_utilization: self.busy as f64 / total }
    }

    /// Another part's sums over the same span, added.
    pub fn add(&mut self, other: &InboundSums) {
        debug_assert_eq!((self.span, self.hosts), (other.span, other.hosts));
        self.wasted += other.wasted;
        self.busy += other.busy;
    }
}
