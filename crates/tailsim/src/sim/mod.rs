//! The simulation: one `World` holding the network, the transport, the traffic generators and the records,
//! and the event loop that drives them.

mod ahead;
mod chain;
mod handover;
mod parallel;
mod projection;

pub use handover::Handover;
pub use parallel::Parallel;
pub use projection::{measure_crossing, Projection};

use crate::engine::{Event, EventQueue, Next, Word};
use crate::metrics::inbound::{Inbound, InboundSums};
use crate::metrics::records::FlowRecords;
use crate::metrics::{ideal_fct_on, FlowRecord, Framing};
use crate::net::ledger::LedgerError;
use crate::net::packet::PktKind;
use crate::net::{Network, Packets};
use crate::traffic::jobs::{Jobs, Role};
use crate::traffic::{Generator, NewFlow};
use crate::transport::{Ctx, FlowEvent, FlowSpec, Transport};
use crate::units::{NodeId, PktId, Time};

/// A scheduled change of a link's state.
#[derive(Clone, Debug)]
pub struct Fault {
    pub at: Time,
    pub a: NodeId,
    pub b: NodeId,
    pub up: Option<bool>,
    pub corrupt: Option<f64>,
    pub rate: Option<crate::units::BitsPerSec>,
    /// Corruption and rate change only in the direction a → b.
    pub one_way: bool,
}

/// Why a run ended. Spelled by [`StopReason::name`] everywhere: summary.json, the CLI's table, Python.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// No events left and every flow finished (or, with background traffic, every foreground flow).
    Finished,
    TimeLimit,
    EventBudget,
    /// The progress callback asked to stop (e.g. Ctrl-C).
    Interrupted,
    /// Nothing could make progress: for `STALL` of simulated time no packet reached its destination and no
    /// flow started or finished, yet events went on (timers retransmitting into a link that is down for good,
    /// say). Only without `stop.time`: such a run would otherwise never end.
    Stalled,
    /// No events left while flows are unfinished: nothing can ever move them again (a packet lost where no
    /// timer recovers it, a flow waiting for one that never starts). With or without `stop.time`.
    Exhausted,
}

impl StopReason {
    pub fn name(self) -> &'static str {
        match self {
            StopReason::Finished => "finished",
            StopReason::TimeLimit => "time-limit",
            StopReason::EventBudget => "event-budget",
            StopReason::Interrupted => "interrupted",
            StopReason::Stalled => "stalled",
            StopReason::Exhausted => "exhausted",
        }
    }
}

impl serde::Serialize for StopReason {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// How long a run without `stop.time` may go without any delivery, flow start or flow end before it is
/// stopped as stalled: far longer than any retransmission timeout or gap of a datacenter workload.
pub const STALL: Time = Time(600_000_000_000_000);

#[derive(Clone, Copy, Debug, Default)]
pub struct StopAt {
    pub time: Option<Time>,
    pub max_events: Option<u64>,
}

/// A snapshot for progress display.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    pub now: Time,
    pub events: u64,
    pub flows_started: u64,
    pub flows_finished: u64,
    pub active_flows: usize,
}

pub struct World {
    pub now: Time,
    pub ev: EventQueue,
    pub pk: Packets,
    pub net: Network,
    pub transport: Transport,
    pub generators: Vec<Generator>,
    pub faults: Vec<Fault>,
    pub framing: Framing,
    /// Every flow's record: open ones in memory, final ones on their way to disk (metrics/records.rs).
    pub records: FlowRecords,
    pub flows_finished: u64,
    /// Retrievals and workflows (request–response workloads).
    pub jobs: Jobs,
    /// Foreground work not yet done: open-loop flows and workflows in progress, plus foreground generators
    /// with arrivals to come. With background generators, the run ends when this reaches zero.
    foreground_open: u64,
    has_background: bool,
    /// The least delay of word that every part of a parallel run handles (a finished background flow, a piece
    /// of foreground work done: `EventQueue::schedule_broadcast`): the fabric's longest link delay, which no
    /// cut's lookahead exceeds, so the serial run and every cut agree.
    word_floor: Time,
    /// Set when only background traffic is left: `run` returns `Finished`.
    foreground_done: bool,
    /// The transport's slots of the dormant flows this run will start (`record_dormant`), by flow id.
    dormant: std::collections::BTreeMap<u64, crate::units::FlowSlot>,
    /// Receivers' wasted downlink time (Homa thesis Ch. 5).
    pub inbound: Inbound,
    /// Receiver statistics taken when the last Poisson generator released its last flow: the open-loop
    /// period, where the offered load applies (the drain after it would dilute utilization and waste). As
    /// sums over this run's receivers (a parallel run's parts add theirs).
    pub inbound_at_last_arrival: Option<InboundSums>,
    /// Every port's (time-average, maximum) queued bytes from the end of warm-up to the last arrival, for
    /// the same reason: the end-of-run drain, when queues empty, would dilute the mean under load.
    pub occupancy_at_last_arrival: Option<Vec<(f64, u64)>>,
    generators_left: usize,
    /// Let ports defer their ends of serialization in `run` (net/lazy.rs; on by default). Results do not
    /// depend on it: tests turn it off to check that.
    pub defer_starts: bool,
    /// The packets in flight and the ports no longer fit in the last-level cache: prefetch the whole chain
    /// of a packet-hop (`prefetch_ahead`). Re-judged at every progress poll; results do not depend on it.
    deep_prefetch: bool,
    /// The working set beyond which `deep_prefetch` is set: the last-level cache's size, at most 32 MiB
    /// (`engine::deep_prefetch_from`).
    deep_from: usize,
    /// Per generator: the class its flows' packets use, if the workload sets one.
    pub flow_class: Vec<Option<u8>>,
    /// Queue-occupancy samples (time, port, bytes) every `sample_every`, if set.
    pub queue_samples: Vec<(Time, u32, u64)>,
    sample_every: Option<Time>,
    /// In a part of a parallel run, the ports that are this part's (their node's): the ones it samples and
    /// whose mechanisms hear of a link's change (None: the serial run, every port).
    own_ports: Option<Vec<bool>>,
    flow_events: Vec<FlowEvent>,
    new_flows: Vec<NewFlow>,
    /// Packets the outbox's effects brought to a host, to hand on after the drain.
    delivered: Vec<(NodeId, PktId)>,
    /// In a part of a parallel run, the hosts that are this part's (None: the serial run, every host): flows
    /// are recorded everywhere, each end reported by its host's part (sim/parallel.rs).
    local: Option<Vec<bool>>,
}

impl World {
    pub fn new(
        mut net: Network,
        transport: Transport,
        generators: Vec<Generator>,
        faults: Vec<Fault>,
        framing: Framing,
        warmup: Time,
        sample_every: Option<Time>,
    ) -> World {
        let mut ev = EventQueue::new();
        if sample_every.is_some() {
            ev.schedule(Time::ZERO, Event::QueueSample);
        }
        if warmup > Time::ZERO {
            ev.schedule(warmup, Event::WarmupEnd);
        }
        for (i, g) in generators.iter().enumerate() {
            if let Some(t) = g.next_time() {
                ev.schedule(t, Event::Arrival(i as u32));
            }
        }
        for (i, f) in faults.iter().enumerate() {
            ev.schedule(f.at, Event::Fault(i as u32));
        }
        let mut pk = Packets::default();
        net.start_mechanisms(&mut ev, &mut pk);
        let inbound = Inbound::new(&net);
        let foreground_open = generators.iter().filter(|g| g.is_foreground() && g.next_time().is_some()).count() as u64;
        let has_background = generators.iter().any(|g| !g.is_foreground());
        // No lookahead of any cut exceeds the longest link's delay (docs/parallel.md, "Flows that start flows").
        let word_floor = net.ports.iter().map(|p| p.delay).max().unwrap_or(Time::ZERO);
        // Only rate-driven (Poisson flows and workflows) generators define an open-loop period; traces and
        // incasts are measured over the whole run.
        let generators_left = generators
            .iter()
            .filter(|g| matches!(g, Generator::Poisson { .. } | Generator::Jobs(_)) && g.next_time().is_some())
            .count();
        World {
            inbound,
            inbound_at_last_arrival: None,
            occupancy_at_last_arrival: None,
            generators_left,
            defer_starts: true,
            now: Time::ZERO,
            ev,
            pk,
            net,
            transport,
            generators,
            faults,
            framing,
            records: FlowRecords::default(),
            flows_finished: 0,
            jobs: Jobs::default(),
            foreground_open,
            has_background,
            word_floor,
            foreground_done: false,
            dormant: Default::default(),
            deep_prefetch: false,
            deep_from: crate::engine::deep_prefetch_from(),
            flow_class: Vec::new(),
            queue_samples: Vec::new(),
            sample_every,
            own_ports: None,
            flow_events: Vec::new(),
            new_flows: Vec::new(),
            delivered: Vec::new(),
            local: None,
        }
    }

    fn is_local(&self, h: NodeId) -> bool {
        self.local.as_ref().is_none_or(|m| m[h.idx()])
    }

    /// Whether a workload still has flows to release (what a parallel run must split by flow).
    pub fn makes_flows(&self) -> bool {
        self.generators.iter().any(|g| g.next_time().is_some())
    }

    pub fn progress(&self) -> Progress {
        Progress {
            now: self.now,
            events: self.ev.processed(),
            flows_started: self.records.started() as u64,
            flows_finished: self.flows_finished,
            active_flows: self.transport.active_flows(),
        }
    }

    /// Run until a stop condition; `on_progress` is called about every 2^16 events and returns false to
    /// interrupt the run.
    pub fn run(&mut self, stop: StopAt, on_progress: &mut dyn FnMut(&Progress) -> bool) -> StopReason {
        // Ports defer their ends of serialization in a serial run (net/lazy.rs); a parallel run's part sets
        // its inner links itself (sim/parallel.rs), a run handing packets over (whose cut links' arrivals are
        // held) never defers.
        self.net.defer_starts(self.defer_starts && self.ev.held.is_none() && self.own_ports.is_none());
        let reason = self.run_events(stop, on_progress);
        self.settle_starts(&reason);
        reason
    }

    /// A run (or a parallel run's part) stopped for `reason`: what its last event saw, or at a time limit
    /// the whole of its last instant, catches up; the ends of serialization still deferred become events
    /// (net/lazy.rs).
    pub(super) fn settle_starts(&mut self, reason: &StopReason) {
        let tie = if matches!(reason, StopReason::TimeLimit) { u64::MAX } else { self.ev.current_tie() };
        self.net.settle_starts(&mut self.ev, &mut self.pk, (self.now, tie));
    }

    #[inline(always)]
    fn run_events(&mut self, stop: StopAt, on_progress: &mut dyn FnMut(&Progress) -> bool) -> StopReason {
        let limit = stop.time.unwrap_or(Time::MAX);
        let budget = stop.max_events.unwrap_or(u64::MAX);
        // Progress as of the last poll, and when it last changed (stall detection, polled like the callback).
        let mut mark = (self.progress_signature(), self.now);
        // The next multiple of 2^16 events: a deferred start caught up counts as an event within another's
        // handling, so the count can step over a multiple.
        let mut poll = (self.ev.processed() | 0xFFFF) + 1;
        loop {
            // Not through `next_event`, which `run_projected` uses: the same code, but written out here it saves
            // 0.6 % of htsim-p2's instructions (callgrind 3.472 → 3.453 G: the compiler lays the loop out better).
            if self.ev.processed() >= budget {
                return StopReason::EventBudget;
            }
            if self.foreground_done {
                return StopReason::Finished;
            }
            let (t, e) = match self.ev.pop_by(limit) {
                Next::Due(t, e) => (t, e),
                Next::Empty => break,
                Next::Later => {
                    self.now = limit;
                    return StopReason::TimeLimit;
                }
            };
            self.now = t;
            self.prefetch_ahead();
            self.dispatch(e);
            if self.ev.processed() >= poll {
                poll = (self.ev.processed() | 0xFFFF) + 1;
                self.judge_prefetch();
                if !on_progress(&self.progress()) {
                    return StopReason::Interrupted;
                }
                if stop.time.is_none() {
                    let sig = self.progress_signature();
                    if sig != mark.0 {
                        mark = (sig, self.now);
                    } else if self.now.0 - mark.1 .0 > STALL.0 {
                        return StopReason::Stalled;
                    }
                }
            }
        }
        self.at_the_last_event()
    }

    /// The next event, with the clock moved to it; or why the run ends before it (as `run`'s loop decides).
    #[inline(always)]
    fn next_event(&mut self, limit: Time, budget: u64) -> Result<Event, StopReason> {
        if self.ev.processed() >= budget {
            return Err(StopReason::EventBudget);
        }
        if self.foreground_done {
            return Err(StopReason::Finished);
        }
        match self.ev.pop_by(limit) {
            Next::Due(t, e) => {
                self.now = t;
                Ok(e)
            }
            Next::Empty => Err(self.at_the_last_event()),
            Next::Later => {
                self.now = limit;
                Err(StopReason::TimeLimit)
            }
        }
    }

    /// Why a run whose event queue is empty ended: every flow done, or some stuck for good.
    #[cold]
    #[inline(never)]
    fn at_the_last_event(&self) -> StopReason {
        if self.foreground_open > 0 || self.transport.active_flows() > 0 {
            StopReason::Exhausted
        } else {
            StopReason::Finished
        }
    }

    /// Prefetch the whole chain of a packet-hop once the working set exceeds `bytes` (0: from the first
    /// event) instead of `engine::deep_prefetch_from()`. For tests and measurements: results never depend on
    /// it (tests/golden.rs runs every golden scenario and each switch mechanism with it at 0).
    pub fn set_deep_prefetch_from(&mut self, bytes: usize) {
        self.deep_from = bytes;
        self.judge_prefetch();
    }

    /// Whether the working set is past `deep_from` (every fabric has ports, so 0 means always).
    fn judge_prefetch(&mut self) {
        self.deep_prefetch = self.working_set() > self.deep_from;
        // Where a hop waits on memory, a queue's next head is loaded one event ahead (net/queue.rs,
        // `HeadRefills`); the light chain's pops ask for no refills, so none is left owed.
        self.net.refills.later = self.deep_prefetch;
        if !self.deep_prefetch {
            self.net.refill_heads();
        }
    }

    /// Bytes of the records a packet-hop touches: the packets in flight and the ports.
    fn working_set(&self) -> usize {
        self.pk.live() * std::mem::size_of::<crate::net::packet::Packet>()
            + self.net.ports.len() * std::mem::size_of::<crate::net::port::Port>()
    }

    /// What changes whenever a run makes progress: packets delivered, flows started and finished.
    fn progress_signature(&self) -> (u64, usize, u64) {
        let delivered = self.pk.ended.iter().map(|o| o[crate::net::ledger::Fate::Delivered as usize]).sum();
        (delivered, self.records.len(), self.flows_finished)
    }

    // Always inlined: with a second caller (`run_projected`) the compiler kept it out of line, and the run
    // loop paid +5 % instructions (callgrind, htsim-p2).
    #[inline(always)]
    fn dispatch(&mut self, e: Event) {
        let now = self.now;
        let mut delivered = None;
        match e {
            Event::TxDone(p) => self.net.on_tx_done(now, &mut self.ev, &mut self.pk, p),
            Event::WireArrival(p) => delivered = self.net.on_wire_arrival(now, &mut self.ev, &mut self.pk, p),
            Event::SwitchForward(s) => self.net.on_switch_forward(now, &mut self.ev, &mut self.pk, s),
            Event::HostTx(h) => self.net.on_host_tx(now, &mut self.ev, &mut self.pk, h),
            Event::HostShaper(h) => self.net.on_host_shaper(now, &mut self.ev, &mut self.pk, h),
            Event::HostRx(h) => delivered = Some((h, self.net.on_host_rx(&mut self.ev, h))),
            Event::Timer(slot, gen, kind) => {
                self.with_transport(|tr, ctx| tr.on_timer(ctx, slot, gen, kind));
            }
            Event::Arrival(i) => self.on_arrival(i as usize),
            Event::Fault(i) => {
                self.catch_up_all();
                let f = self.faults[i as usize].clone();
                self.net.set_link(f.a, f.b, f.up, f.corrupt, f.rate, f.one_way);
                if f.up == Some(false) {
                    self.net.mark_tails(now, &mut self.ev);
                }
                if f.up.is_some() && !self.net.mechs.is_empty() {
                    self.net.link_changed(now, &mut self.ev, &mut self.pk, f.a, f.b, self.own_ports.as_deref());
                }
                if let (Some(d), Some(_)) = (self.net.reroute, f.up) {
                    self.ev.schedule(now + d, Event::Reconverge);
                }
            }
            Event::Reconverge => self.net.reconverge(),
            Event::Mech(m, key) => self.net.on_mech_timer(now, &mut self.ev, &mut self.pk, m, key),
            Event::WarmupEnd => {
                self.catch_up_all();
                self.net.ports.iter_mut().for_each(|p| p.restart_occupancy(now));
                self.inbound.restart(&self.net, now);
            }
            Event::QueueSample => {
                self.catch_up_all();
                self.sample_queues();
            }
            Event::Successor(g, src) => self.on_successor(g, src),
            Event::ForegroundDone => self.foreground_finished(),
        }
        if let Some((h, id)) = delivered {
            self.deliver(h, id);
        }
        if !self.net.out.is_empty() {
            self.drain();
        }
        if !self.flow_events.is_empty() {
            self.apply_flow_events();
        }
    }

    /// A packet reached host `h`: a transport's packet goes to the transport; a network packet to the
    /// transport's notice handler (notices) or the host's sink (telemetry).
    #[inline(always)]
    fn deliver(&mut self, h: NodeId, id: PktId) {
        if !self.pk.get(id).kind.is_network() {
            self.with_transport(|tr, ctx| tr.on_packet(ctx, h, id));
        } else {
            self.deliver_network(h, id);
        }
    }

    #[inline(never)]
    fn deliver_network(&mut self, h: NodeId, id: PktId) {
        if self.pk.get(id).kind == PktKind::Notice {
            self.net.hosts[h.idx()].sink.notices += 1;
            self.with_transport(|tr, ctx| tr.on_notice(ctx, h, id));
        } else {
            let p = self.pk.get(id);
            let sink = &mut self.net.hosts[h.idx()].sink;
            if p.kind == PktKind::Raw {
                sink.raw += 1;
                sink.raw_bytes += p.size as u64;
            } else {
                sink.telemetry += 1;
            }
            self.pk.sink(id);
        }
    }

    /// Apply the side effects of this event (and of the deliveries they cause) until none is left.
    #[inline(never)]
    fn drain(&mut self) {
        loop {
            let mut delivered = std::mem::take(&mut self.delivered);
            self.net.drain(self.now, &mut self.ev, &mut self.pk, &mut delivered);
            for (h, id) in delivered.drain(..) {
                self.deliver(h, id);
            }
            self.delivered = delivered; // keep the capacity
            if self.net.out.is_empty() {
                break;
            }
        }
    }

    /// pFabric's Ideal instead of a packet-level run: release the same arrivals the generators would (up to
    /// `stop.time`), then give every flow its greedy-SRPT completion time on one big switch. Each flow's FCT
    /// is its fluid SRPT time plus its fixed latency on the empty fabric (ideal FCT − serialization at line
    /// rate), so an uncontended flow gets exactly its ideal FCT (slowdown 1).
    pub fn run_flow_level(&mut self, stop: StopAt) -> StopReason {
        let limit = stop.time.unwrap_or(Time::MAX);
        while let Some((t, e)) = self.ev.pop() {
            if t > limit {
                break;
            }
            self.now = t;
            if let Event::Arrival(i) = e {
                self.release_flows(i as usize);
            }
        }
        let fr = self.framing;
        // Every flow is open (nothing has closed): the fluid model needs them all at once.
        let (ids, flows): (Vec<(u64, Time)>, Vec<crate::ideal::IdealFlow>) = self
            .records
            .open_flows()
            .map(|r| {
                let pkts = r.size.div_ceil(fr.mss).max(1);
                let wire = r.size + pkts * (fr.header + fr.wire_overhead);
                let rate = self.net.ports[self.net.hosts[r.src.idx()].nic.idx()].rate;
                (
                    (r.id, r.ideal),
                    crate::ideal::IdealFlow { src: r.src.0, dst: r.dst.0, arrival: r.start, work: rate.tx_time(wire) },
                )
            })
            .unzip();
        let fluid = crate::ideal::srpt_greedy(&flows, self.net.n_hosts());
        for (((id, ideal), f), d) in ids.into_iter().zip(&flows).zip(fluid) {
            let end = f.arrival + d + ideal.saturating_sub(f.work);
            self.records.received(id, end, 0);
            self.records.closed(id, 0, 0);
            self.now = self.now.max(end);
        }
        self.flows_finished = self.records.len() as u64;
        StopReason::Finished
    }

    /// Record every port's queue and schedule the next sample while anything else is still pending (so
    /// sampling alone never keeps a finished simulation running). A part of a parallel run records its own
    /// ports and samples on: whether anything is pending anywhere is known only at the meetings, and the
    /// merge keeps the serial run's samples (sim/parallel.rs, `settle_samples`).
    fn sample_queues(&mut self) {
        self.sample_at(self.now);
        if let Some(dt) = self.sample_every {
            if !self.ev.is_empty() || self.own_ports.is_some() {
                self.ev.schedule(self.now + dt, Event::QueueSample);
            }
        }
    }

    /// Record the queues of the ports this world samples, as at `now`.
    fn sample_at(&mut self, now: Time) {
        for (i, p) in self.net.ports.iter().enumerate() {
            if self.own_ports.as_ref().is_none_or(|m| m[i]) {
                self.queue_samples.push((now, i as u32, p.bytes));
            }
        }
    }

    /// Lend the transport a context made of the world's other fields.
    fn with_transport(&mut self, f: impl FnOnce(&mut Transport, &mut Ctx)) {
        let World { now, ev, pk, net, transport, flow_events, .. } = self;
        let mut ctx = Ctx { now: *now, ev, pk, net, events: flow_events };
        f(transport, &mut ctx);
    }

    /// Release generator `i`'s flows due now: record them (with their ideal FCT) and schedule the
    /// generator's next arrival. Returns the new records' indices.
    fn release_flows(&mut self, i: usize) -> std::ops::Range<usize> {
        self.new_flows.clear();
        let role = match &self.generators[i] {
            Generator::Background(_) => Role::Background(i as u32),
            _ => Role::Flow,
        };
        self.generators[i].release(&mut self.new_flows);
        self.advance(i);
        let first = self.records.len();
        let new = std::mem::take(&mut self.new_flows);
        for nf in &new {
            self.record(nf, role);
        }
        self.new_flows = new; // keep the capacity
        first..self.records.len()
    }

    /// Schedule generator `i`'s next arrival, or note that it has none left.
    fn advance(&mut self, i: usize) {
        let g = &self.generators[i];
        if let Some(t) = g.next_time() {
            self.ev.schedule(t.max(self.now), Event::Arrival(i as u32));
            return;
        }
        let rate_driven = matches!(g, Generator::Poisson { .. } | Generator::Jobs(_));
        if g.is_foreground() {
            self.foreground_finished();
        }
        if rate_driven {
            self.generators_left -= 1;
            if self.generators_left == 0 {
                self.catch_up_all();
                let sums = self.inbound.sums(&self.net, self.now, |h| self.is_local(NodeId(h as u32)));
                self.inbound_at_last_arrival = sums;
                let now = self.now;
                self.occupancy_at_last_arrival =
                    Some(self.net.ports.iter().map(|p| (p.avg_bytes(now), p.stats.max_bytes)).collect());
            }
        }
    }

    /// One piece of foreground work is done; with only background traffic left, the run is over.
    fn foreground_finished(&mut self) {
        self.foreground_open -= 1;
        if self.foreground_open == 0 && self.has_background {
            self.foreground_done = true;
        }
    }

    /// Whether this run counts foreground work that ends at host `h` (a flow at its receiver, a workflow at
    /// its client): in a parallel run, the part of `h`, or with background traffic every part
    /// (`foreground_work_done`).
    fn counts_foreground_at(&self, h: NodeId) -> bool {
        self.has_background || self.is_local(h)
    }

    /// A foreground flow or workflow is done here, now (`flow` is the id of the flow that completed it). With
    /// background traffic, which runs until the foreground is done, every part of a parallel run must count
    /// it at the same point of the serial order: so it counts when word of it, a broadcast, arrives
    /// `word_floor` later, and the run ends (with the serial run too) that long after the last piece.
    fn foreground_work_done(&mut self, flow: u64) {
        if self.has_background {
            let at = self.now + self.word_floor;
            self.ev.schedule_broadcast(at, Event::ForegroundDone, flow, Word::ForegroundDone);
        } else {
            self.foreground_finished();
        }
    }

    /// Record a flow starting now; returns its index.
    fn record(&mut self, nf: &NewFlow, role: Role) -> usize {
        let (rec, receives, sends) = self.new_record(nf, role);
        let id = rec.id;
        self.records.push_part(rec, receives, sends);
        if role == Role::Flow && self.counts_foreground_at(nf.dst) {
            self.foreground_open += 1;
        }
        id as usize
    }

    /// Record a flow that another flow's end will start (`begin`): a retrieval's response, a workflow's later
    /// request. It is made now, by the event that makes its cause, so that it takes its id and its slot in
    /// the transport in an order every part of a parallel run sees whole (docs/parallel.md, "Flows that start
    /// flows"); its sender's part alone starts it. Returns its index.
    fn record_dormant(&mut self, nf: &NewFlow, role: Role, class: Option<u8>) -> usize {
        let (rec, receives, sends) = self.new_record(nf, role);
        let slot = self.transport.open_flow(&spec_of(&rec, class));
        let id = rec.id;
        self.records.push_dormant(rec, receives, sends);
        if sends {
            self.dormant.insert(id, slot);
        } else if self.local.is_some() {
            self.records.settle(id);
        }
        id as usize
    }

    /// Start dormant flow `k` now (at its sender's host: only its sender's part of a parallel run does).
    fn begin(&mut self, k: usize) {
        let slot = self.dormant.remove(&(k as u64)).expect("a dormant flow whose sender is this run's");
        let now = self.now;
        self.records.begin(k as u64, now);
        let deadline = self.records.open(k as u64).and_then(|r| r.deadline).map(|d| now + d);
        self.with_transport(|tr, ctx| tr.begin_flow(ctx, slot, deadline));
    }

    /// A new flow's record (with the next id), and whether this run receives and sends it.
    fn new_record(&self, nf: &NewFlow, role: Role) -> (FlowRecord, bool, bool) {
        let id = self.records.len() as u64;
        let ideal = ideal_fct_on(&self.net, nf.src, nf.dst, nf.path, nf.size, self.framing);
        // pFabric §5.4.2: a deadline is at least `min_slack` × the lowest possible FCT.
        let deadline = nf.deadline.map(|d| d.draw.max(Time((ideal.0 as f64 * d.min_slack).ceil() as u64)));
        let (receives, sends) = (self.is_local(nf.dst), self.is_local(nf.src));
        let rec = FlowRecord {
            id,
            src: nf.src,
            dst: nf.dst,
            size: nf.size,
            start: self.now,
            end: None,
            ideal,
            deadline,
            retransmits: 0,
            timeouts: 0,
            role,
            path: nf.path,
        };
        (rec, receives, sends)
    }

    /// The class workload `i` sets for its flows' packets, if any.
    fn class_of(&self, i: usize) -> Option<u8> {
        self.flow_class.get(i).copied().flatten()
    }

    /// Hand recorded flow `k` to the transport, in the class its workload sets (if any).
    fn start(&mut self, k: usize, class: Option<u8>) {
        let r = self.records.open(k as u64).expect("a flow that starts is open");
        let (spec, deadline) = (spec_of(r, class), r.deadline.map(|d| r.start + d));
        let slot = self.transport.open_flow(&spec);
        self.with_transport(|tr, ctx| tr.begin_flow(ctx, slot, deadline));
        if self.local.is_some() {
            self.records.settle(k as u64);
        }
    }

    fn on_arrival(&mut self, i: usize) {
        if let Generator::Jobs(_) = self.generators[i] {
            return self.on_workflow_arrival(i);
        }
        let class = self.class_of(i);
        for k in self.release_flows(i) {
            self.start(k, class);
        }
    }

    /// Every port starts what its deferred end of serialization should have by now (net/lazy.rs): before
    /// what reads the whole fabric's queues or counters.
    fn catch_up_all(&mut self) {
        let key = (self.now, self.ev.current_tie());
        self.net.catch_up_all(&mut self.ev, &mut self.pk, key);
    }

    /// Host `h`'s downlink catches up, before the wasted-bandwidth accounting reads its busy time.
    fn catch_up_downlink(&mut self, h: NodeId) {
        if let Some(p) = self.inbound.downlink(h) {
            let key = (self.now, self.ev.current_tie());
            self.net.catch_up(&mut self.ev, &mut self.pk, p, key);
        }
    }

    fn apply_flow_events(&mut self) {
        // Finishing a flow may start others (a response, the next retrieval, a background flow), whose
        // events are handled in the same pass.
        while !self.flow_events.is_empty() {
            let mut events = std::mem::take(&mut self.flow_events);
            for e in events.drain(..) {
                match e {
                    FlowEvent::Heard { id, at } => {
                        if let Some(dst) = self.records.open(id).map(|r| r.dst) {
                            self.catch_up_downlink(dst);
                            self.inbound.heard(&self.net, id, dst, at);
                        }
                    }
                    FlowEvent::Received { id, at, timeouts } => {
                        if let Some(r) = self.records.received(id, at, timeouts) {
                            self.flows_finished += 1;
                            self.catch_up_downlink(r.dst);
                            self.inbound.received(&self.net, id, r.dst, at);
                            self.flow_done(&r);
                        }
                    }
                    FlowEvent::Closed { id, retransmits, timeouts } => {
                        self.records.closed(id, retransmits, timeouts);
                    }
                }
            }
            if self.flow_events.is_empty() {
                self.flow_events = events; // keep the capacity
            }
        }
    }

    /// Conservation, by the ledger's categories (net/ledger.rs), checked after every run.
    pub fn check_conservation(&self) -> Result<(), LedgerError> {
        crate::net::ledger::check(&self.pk, &self.net)
    }
}

/// What the transport is told of recorded flow `r`, sent in `class` (if its workload sets one).
fn spec_of(r: &FlowRecord, class: Option<u8>) -> FlowSpec {
    FlowSpec { id: r.id, src: r.src, dst: r.dst, size: r.size, class, path: r.path }
}
