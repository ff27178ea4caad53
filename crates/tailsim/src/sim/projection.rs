//! What a run on several threads would gain, measured on the serial run (issue "One run on every core",
//! docs/parallel.md).
//!
//! A conservative parallel run with time windows (YAWNS) works like this: all parts agree on the earliest
//! pending event t, each handles its own events in [t, t + lookahead), they exchange the packets that crossed
//! between them and meet at a barrier. Such a run takes, per window, as long as its busiest part, plus the
//! barrier. So the serial run, handing out each event to the part that owns it and cutting time into the same
//! windows, measures the parallel run's critical path exactly as far as event counts go: windows, the busiest
//! part's events in each, and the packets that cross. The projection then prices them with a cost per event
//! measured on the serial run and a barrier measured on this machine (docs/parallel.md says what it leaves out).

use super::{StopAt, StopReason, World};
use crate::engine::{Event, TimerKind};
use crate::net::partition::Partition;
use crate::units::{NodeId, Time};

/// Who handles an event in a parallel run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Owner {
    /// The part of this node.
    Node(NodeId),
    /// No single node known here (workload releases, a flow's own timers, a mechanism's timers): counted as
    /// spread evenly over the parts, the best case.
    Spread,
    /// Every part must stop at it (faults, re-convergence, warm-up end, queue samples): a window of its own.
    Global,
}

/// The critical path of one cut, counted over a run.
#[derive(Clone, Debug, Default)]
pub struct Projection {
    pub parts: usize,
    pub lookahead: Option<Time>,
    /// The switch level the fabric was cut at.
    pub level: u32,
    pub cut_ports: usize,
    pub events: u64,
    /// Events owned by no single node (spread evenly).
    pub spread: u64,
    /// Events every part stops at.
    pub global: u64,
    pub windows: u64,
    /// Sum over windows of the busiest part's events (spread events counted 1/parts each).
    pub critical: f64,
    /// Packets that crossed between parts (each one message).
    pub messages: u64,
}

impl Projection {
    /// Speedup over the serial run, with `tau` seconds per event, `barrier` seconds per window and
    /// `message` seconds per crossing packet (paid by its two parts: half each, spread evenly).
    pub fn speedup(&self, tau: f64, barrier: f64, message: f64) -> f64 {
        let serial = self.events as f64 * tau;
        let parallel = (self.critical + self.global as f64) * tau
            + (self.windows + self.global) as f64 * barrier
            + self.messages as f64 / self.parts as f64 * message;
        if parallel > 0.0 {
            serial / parallel
        } else {
            1.0
        }
    }
    /// The busiest part's share of the work against an even share: 1 = perfectly balanced.
    pub fn imbalance(&self) -> f64 {
        let even = (self.events - self.global) as f64 / self.parts as f64;
        if even > 0.0 {
            self.critical / even
        } else {
            1.0
        }
    }
}

/// One cut's counters while the run goes.
struct Tally<'a> {
    cut: &'a Partition,
    /// The current window ends here (exclusive); None before the first event.
    end: Option<Time>,
    counts: Vec<u64>,
    spread: u64,
    p: Projection,
}

impl<'a> Tally<'a> {
    fn new(cut: &'a Partition) -> Tally<'a> {
        let p = Projection {
            parts: cut.parts(),
            lookahead: cut.lookahead(),
            level: cut.level(),
            cut_ports: cut.cut_ports(),
            ..Default::default()
        };
        Tally { cut, end: None, counts: vec![0; cut.parts()], spread: 0, p }
    }
    fn close(&mut self) {
        if self.end.take().is_some() {
            let busiest = self.counts.iter().copied().max().unwrap_or(0);
            self.p.critical += busiest as f64 + self.spread as f64 / self.p.parts as f64;
            self.p.windows += 1;
            self.counts.iter_mut().for_each(|c| *c = 0);
            self.spread = 0;
        }
    }
    fn count(&mut self, t: Time, owner: Owner, crossing: bool) {
        self.p.events += 1;
        if owner == Owner::Global {
            self.close();
            self.p.global += 1;
            return;
        }
        if self.end.is_none_or(|end| t >= end) {
            self.close();
            // The next window starts at the earliest pending event, which is this one.
            self.end = Some(match self.p.lookahead {
                Some(l) => Time(t.0.saturating_add(l.0.max(1))),
                None => Time::MAX,
            });
        }
        match owner {
            Owner::Node(n) => self.counts[self.cut.of(n)] += 1,
            _ => {
                self.spread += 1;
                self.p.spread += 1;
            }
        }
        if crossing {
            self.p.messages += 1;
        }
    }
}

impl World {
    /// As `run` (no stall rule: give a stop time), counting the events of every cut in `cuts` as a parallel
    /// run with that cut would handle them. The run's results are those of `run`.
    pub fn run_projected(
        &mut self,
        stop: StopAt,
        cuts: &[Partition],
        on_progress: &mut dyn FnMut(&super::Progress) -> bool,
    ) -> (StopReason, Vec<Projection>) {
        let limit = stop.time.unwrap_or(Time::MAX);
        let budget = stop.max_events.unwrap_or(u64::MAX);
        let mut tallies: Vec<Tally> = cuts.iter().map(Tally::new).collect();
        let reason = loop {
            let e = match self.next_event(limit, budget) {
                Ok(e) => e,
                Err(reason) => break reason,
            };
            let t = self.now;
            let owner = self.owner(e);
            for tl in &mut tallies {
                let crossing = match e {
                    Event::WireArrival(p) => {
                        let pt = &self.net.ports[p.idx()];
                        tl.cut.of(pt.node) != tl.cut.of(pt.peer)
                    }
                    _ => false,
                };
                tl.count(t, owner, crossing);
            }
            self.dispatch(e);
            if self.ev.processed() & 0xFFFF == 0 && !on_progress(&self.progress()) {
                break StopReason::Interrupted;
            }
        };
        let projections = tallies
            .into_iter()
            .map(|mut tl| {
                tl.close();
                tl.p
            })
            .collect();
        (reason, projections)
    }

    /// The node whose part handles `e` in a parallel run.
    pub(super) fn owner(&self, e: Event) -> Owner {
        match e {
            // A packet arrives at the far end of its link.
            Event::WireArrival(p) => Owner::Node(self.net.ports[p.idx()].peer),
            Event::TxDone(p) => Owner::Node(self.net.ports[p.idx()].node),
            Event::SwitchForward(n) | Event::HostTx(n) | Event::HostRx(n) | Event::HostShaper(n) => Owner::Node(n),
            // These two carry the host in the slot (transport/mod.rs).
            Event::Timer(slot, _, TimerKind::Pacer | TimerKind::RxPacer) => Owner::Node(NodeId(slot.0)),
            // A raw source's timer acts at its host (as a parallel run has it, sim/parallel.rs).
            Event::Mech(m, key) => match self.net.mechs[m as usize].timer_node(&self.net.ports, key) {
                Some(n) => Owner::Node(n),
                None => Owner::Spread,
            },
            Event::Timer(..) | Event::Arrival(_) | Event::Successor(..) | Event::ForegroundDone => Owner::Spread,
            Event::Fault(_) | Event::Reconverge | Event::WarmupEnd | Event::QueueSample => Owner::Global,
        }
    }
}

/// Seconds to move one packet between parts on this machine, as a parallel run would: out of the sender's
/// arena into an outbox with its arrival time, then, after the meeting, into the receiver's arena. Measured
/// over `n` packets in batches of a window's worth; a lower bound for the real thing, which also schedules the
/// arrival (as the serial run does: that part is already in the cost per event).
pub fn measure_crossing(n: u32) -> f64 {
    use crate::net::packet::{Packet, PktKind};
    use crate::net::Packets;
    use crate::units::FlowSlot;
    const BATCH: usize = 4096;
    let (mut a, mut b) = (Packets::default(), Packets::default());
    let p = Packet::new(PktKind::Data, FlowSlot(0), 0, NodeId(0), NodeId(1));
    let mut ids: Vec<_> = (0..BATCH).map(|_| a.alloc(p)).collect();
    let mut outbox: Vec<(Time, Packet)> = Vec::with_capacity(BATCH);
    let rounds = (n as usize).div_ceil(BATCH).max(1);
    let t0 = std::time::Instant::now();
    for r in 0..rounds {
        for id in ids.iter_mut() {
            outbox.push((Time(r as u64), *a.get(*id)));
            a.sink(*id);
        }
        for (slot, (t, mut p)) in ids.iter_mut().zip(outbox.drain(..)) {
            p.enq_time = t;
            *slot = b.alloc(p);
        }
        std::mem::swap(&mut a, &mut b);
    }
    let dt = t0.elapsed().as_secs_f64();
    std::hint::black_box(&a);
    dt / (rounds * BATCH) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::topology::LeafSpine;
    use crate::net::{NetParams, Network};
    use crate::units::BitsPerSec;

    /// Two leaves of two hosts: hosts 0, 1 and leaf 4 in part 0, hosts 2, 3 and leaf 5 in part 1; 10 ps
    /// links to the spine.
    fn two_parts() -> (Network, Partition) {
        let ls = LeafSpine {
            leaves: 2,
            spines: 1,
            hosts_per_leaf: 2,
            edge_rate: BitsPerSec::gbps(10),
            core_rate: BitsPerSec::gbps(10),
            edge_delay: Time(10),
            core_delay: Time(10),
            switch_delay: Time::ZERO,
        };
        let net = Network::build(&ls.spec(), &NetParams::default()).unwrap();
        let cut = Partition::new(&net, 2).unwrap();
        assert_eq!((cut.of(NodeId(1)), cut.of(NodeId(2)), cut.lookahead()), (0, 1, Some(Time(10))));
        (net, cut)
    }

    #[test]
    fn windows_start_at_the_earliest_event_and_last_one_lookahead() {
        let (_, cut) = two_parts();
        let mut t = Tally::new(&cut);
        let n = |i| Owner::Node(NodeId(i));
        // [0, 10): part 0 twice, part 1 once, one spread event (half to each); [10, 20): part 1; a global
        // event (a window of its own); [25, 35): part 0, a crossing packet.
        for (at, owner, crossing) in [
            (0, n(0), false),
            (5, n(2), false),
            (9, n(1), false),
            (9, Owner::Spread, false),
            (10, n(3), false),
            (12, Owner::Global, false),
            (25, n(0), true),
        ] {
            t.count(Time(at), owner, crossing);
        }
        t.close();
        let p = t.p;
        assert_eq!((p.events, p.windows, p.global, p.spread, p.messages), (7, 3, 1, 1, 1));
        assert_eq!(p.critical, 2.5 + 1.0 + 1.0);
        // Serial 7 events; parallel 4.5 + 1 (the global one) = 5.5 events, 4 meetings at 0.5 each.
        assert!((p.speedup(1.0, 0.0, 0.0) - 7.0 / 5.5).abs() < 1e-12);
        assert!((p.speedup(1.0, 0.5, 0.0) - 7.0 / 7.5).abs() < 1e-12);
        assert!((p.speedup(1.0, 0.0, 1.0) - 7.0 / 6.0).abs() < 1e-12);
        assert!((p.imbalance() - 4.5 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn a_counted_run_has_the_results_of_a_plain_one() {
        let toml = r#"
seed = 3
[topology]
kind = "fat-tree"
k = 4
rate = "100Gbps"
delay = "1us"
[transport]
kind = "dctcp"
[[workload]]
kind = "poisson"
cdf = "websearch"
load = 0.5
until = "500us"
"#;
        let load = || crate::load_str(toml, "t", std::path::Path::new("."), &["stop.time=\"1ms\"".into()]).unwrap();
        let mut plain = load();
        let a = plain.run(&mut |_| {}).unwrap();
        let mut counted = load();
        let cuts: Vec<_> = [1, 2, 4].iter().map(|&n| Partition::new(&counted.world.net, n).unwrap()).collect();
        let stop = counted.stop;
        let (reason, ps) = counted.world.run_projected(stop, &cuts, &mut |_| true);
        counted.world.check_conservation().unwrap();
        let b = counted.summary(reason, a.wall_seconds).unwrap();
        let json = |s: &crate::run::Summary| {
            let mut v = serde_json::to_value(s).unwrap();
            v.as_object_mut().unwrap().retain(|k, _| !k.contains("per_second") && k != "peak_memory_bytes");
            v
        };
        assert_eq!(json(&a), json(&b));
        assert!(a.events > 100_000 && a.flows_finished > 20, "{} events, {} flows", a.events, a.flows_finished);
        // One part: one window holding everything. More parts: less on the critical path, more crossing.
        assert_eq!((ps[0].windows, ps[0].critical, ps[0].messages), (1, a.events as f64, 0));
        assert!(ps.iter().all(|p| p.events == a.events && p.windows <= a.events));
        assert!(ps[1].critical < ps[0].critical && ps[2].critical < ps[1].critical);
        assert!(ps[1].messages > 0 && ps[2].messages > ps[1].messages);
        assert_eq!((ps[1].level, ps[1].lookahead), (3, Some(Time::us(1))));
    }
}
