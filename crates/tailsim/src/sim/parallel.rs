//! One run on several threads (issue "One run on every core", docs/parallel.md, step 2): every part of a cut
//! of the fabric runs in a whole world of its own, handling only its own nodes' events, and the parts meet
//! once per time window.
//!
//! A window is [t, t + lookahead), t the earliest pending event of all parts and the lookahead the smallest
//! delay of a link between two parts (net/partition.rs): nothing a part does in a window reaches another
//! part before the window ends. A packet a part starts over a link to another part waits on the sending
//! port's wire (its arrival is held, engine/queue.rs); at the window's end the part takes it out of its
//! arena into an outbox, and after the meeting the receiving part puts it into its arena and onto its copy
//! of that wire, which schedules the arrival as the serial run does. Simultaneous arrivals are ordered by
//! their port and time (step 1), every other event by insertion order within its part, which a part's
//! handlers reproduce; so the results are the serial run's, byte for byte, for every cut and thread count
//! (tests/parallel.rs).
//!
//! A thread runs one part or several (`--parts`): a group of parts offers its earliest at the meeting and
//! then handles each part's window in turn, which keeps a window's work in one part's memory at a time.
//!
//! The meeting is one `MinBarrier` round: each part posts its outboxes, then offers the earlier of its next
//! event and its earliest outgoing arrival; the minimum is the next window's start (every pending event of
//! the next window is in some part's queue or outbox). Outboxes alternate between two sets of mailboxes, so
//! a part posting the next window's packets never mixes them with those a slower part is still taking in.
//!
//! Flows (every transport's): every part handles a workload's arrivals (`every_part`) and records every
//! flow; each end runs in its host's part; what one end tells the other without a packet (a close, a
//! completion) is a message between hosts handed over with the packets; the records a flow's halves free
//! are retired at the meetings, the same in every part, so a flow has one slot everywhere
//! (transport/split.rs); the parts' flow records are merged by id at the end (docs/parallel.md, "Flows").
//! A retrieval's flows are all made at its workflow's arrival, in every part, and started by their senders'
//! parts (sim/chain.rs); a workflow's record and its retrievals' are its client's part's. Word that a
//! background flow or a piece of foreground work is done is a broadcast (`EventQueue::schedule_broadcast`),
//! handed to every part at the meeting: each makes the next background flow, and counts the foreground down
//! to the run's end, at the same event.
//!
//! Switch mechanisms split by node (`Hooks::parallel_refusal`, `timer_node`, `take_part`, net/mech/mod.rs):
//! each part calls their hooks at its own ports; what one keeps about a packet for the far end crosses with
//! it (`hand_out`). Queue samples: each part samples its own ports and samples on; the merge keeps the
//! serial run's ticks (`settle_samples`).
//!
//! What a part's world cannot do yet is refused before anything runs (`World::parallel_refusal`): events of
//! the whole fabric other than those every part handles (the end of warm-up, arrivals, faults,
//! re-convergence, queue samples, word of finished flows), a switch mechanism that does not split (none
//! today), an event budget. At the end the parts' nodes are gathered into the first part's world
//! (`Network::take_part`), whose results are then those of the serial run; it cannot run on.

use super::{Progress, StopAt, StopReason, World};
use crate::engine::{Event, Held, Message, MinBarrier, Next, EVERY_PART};
use crate::metrics::records::FlowRecords;
use crate::net::packet::Packet;
use crate::net::partition::Partition;
use crate::net::port::DropReason;
use crate::net::Network;
use crate::transport::Transport;
use crate::units::{NodeId, PktId, PortId, Time};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// What a parallel run did.
#[derive(Clone, Debug)]
pub struct Parallel {
    pub reason: StopReason,
    pub parts: usize,
    /// The smallest delay of a link between two parts: every window's length.
    pub lookahead: Time,
    pub windows: u64,
    /// Packets handed from one part to another.
    pub handed_over: u64,
    /// Events each part handled.
    pub events: Vec<u64>,
}

/// A packet on its way to another part: the port whose wire it crosses, when it arrives, the packet (None:
/// the place of one lost as its serialization ended, whose arrival the serial run handles as an event that
/// finds nothing: `end_tail`, net/link.rs), and what a mechanism of the port keeps about it for the far
/// end (`Hooks::hand_out`: LinkGuardian's word of what the frame says).
type Crossing = (PortId, Time, Option<Packet>, u64);

/// What a part hands to another at a meeting: the packets crossing links, the messages between hosts
/// (`EventQueue::schedule_message`: a flow's close or completion told to its other end).
#[derive(Default)]
struct Mail {
    packets: Vec<Crossing>,
    messages: Vec<Message>,
}

/// The node whose part handles `e`; None for an event of the whole fabric (or a flow's timer that will do
/// nothing: its half is closed).
fn owner(net: &Network, transport: &Transport, e: Event) -> Option<NodeId> {
    match e {
        Event::WireArrival(p) => Some(net.ports[p.idx()].peer),
        Event::TxDone(p) => Some(net.ports[p.idx()].node),
        Event::SwitchForward(n) | Event::HostTx(n) | Event::HostRx(n) | Event::HostShaper(n) => Some(n),
        Event::Timer(slot, gen, kind) => transport.timer_node(slot, gen, kind),
        Event::Mech(m, key) => net.mechs[m as usize].timer_node(&net.ports, key),
        _ => None,
    }
}

/// An event of the whole fabric that every part handles for its own nodes, at its place in the serial order
/// (every part schedules its copy from the same handlers, so it keeps its place among the part's own events):
/// the end of warm-up restarts each part's ports' and receivers' statistics; a workload's arrival records
/// its flows in every part (the generator draws the same numbers everywhere) and starts each end in its
/// host's part (docs/parallel.md, steps 3 and 4); a fault changes every part's copy of the link (each part
/// acts on its own ports: a port being serialized when its link goes down is its node's), and the
/// re-convergence that follows recomputes every part's routes alike.
/// So are the broadcasts about finished flows (`EventQueue::schedule_broadcast`): a background source's next
/// flow is made in every part, and every part counts the foreground work done.
fn every_part(e: Event) -> bool {
    matches!(
        e,
        Event::WarmupEnd
            | Event::Arrival(_)
            | Event::Fault(_)
            | Event::Reconverge
            | Event::Successor(..)
            | Event::ForegroundDone
    )
}

/// What a pending event of the whole fabric is, for the refusal.
fn whole_fabric(e: Event) -> &'static str {
    match e {
        Event::Timer(..) => "a transport's timers",
        Event::Mech(..) => "a mechanism's timers",
        _ => "an event of the whole fabric",
    }
}

impl World {
    /// Why this run cannot be split between parts yet (None: it can). Checked before anything runs; the
    /// events pending at the start are checked when the parts are made (`run_parallel`).
    pub fn parallel_refusal(&self, stop: &StopAt) -> Option<String> {
        if stop.max_events.is_some() {
            return Some("an event budget (stop.max_events) depends on how events are shared between parts".into());
        }
        if let Some((m, why)) = self.net.mechs.iter().find_map(|m| Some((m, m.parallel_refusal()?))) {
            return Some(format!("mechanism \"{}\" {why}", m.name()));
        }
        None
    }

    /// Run this world and `others` (the same experiment, built as many more times) as the parts of `cut`, on
    /// `threads` threads (at most one per part): the parts in contiguous groups, a group's parts one after
    /// another on its thread, window by window (one thread: all in turn; as many threads as parts: a thread
    /// each). The results are the serial run's for every grouping. More parts than threads make each
    /// window's work touch one part's memory at a time, which is faster on a fabric whose packets outgrow the
    /// last-level cache (docs/parallel.md, "More parts than threads"). This world becomes the merged one:
    /// its results are the serial run's. `on_progress` is called from this thread about every 2^16 of the
    /// first part's events, with every part's events counted; false interrupts the run at the next meeting.
    pub fn run_parallel(
        &mut self,
        mut others: Vec<World>,
        cut: &Partition,
        stop: StopAt,
        threads: usize,
        on_progress: &mut dyn FnMut(&Progress) -> bool,
    ) -> Result<Parallel, String> {
        if let Some(why) = self.parallel_refusal(&stop) {
            return Err(why);
        }
        let n = others.len() + 1;
        if cut.parts() != n {
            return Err(format!("{n} worlds for a cut in {} parts", cut.parts()));
        }
        cut.refuse_zero_lookahead(&self.net)?;
        let lookahead = match cut.lookahead() {
            Some(l) => l,
            None => Time::MAX, // one part, or parts no link joins: one window
        };
        let flows = self.makes_flows();
        if let Some(p) =
            self.net.ports.iter().find(|p| flows && self.net.is_host(p.node) && cut.of(p.node) != cut.of(p.peer))
        {
            return Err(format!(
                "{n} parts separate host {} from its switch: a receiver's accounting reads its downlink, so a run of \
                 flows is cut at most between switches ({n} parts are more than this fabric has ToRs)",
                self.net.node_name(p.node)
            ));
        }
        let mut parts = Vec::with_capacity(n);
        parts.push(Part::new(self, 0, cut)?);
        for (i, w) in others.iter_mut().enumerate() {
            parts.push(Part::new(w, i + 1, cut)?);
        }
        let limit = stop.time.unwrap_or(Time::MAX);
        let groups = threads.clamp(1, n);
        let meet = Meeting::new(n, groups);
        let reason = std::thread::scope(|s| {
            let mut rest = groups_of(&mut parts, groups).into_iter().enumerate();
            let (_, first) = rest.next().expect("a group");
            for (g, group) in rest {
                let meet = &meet;
                s.spawn(move || meet.run_guarded(g, group, lookahead, limit, &mut |_| true));
            }
            meet.run_guarded(0, first, lookahead, limit, on_progress)
        });
        if let Some(e) = meet.error.lock().unwrap_or_else(|e| e.into_inner()).take() {
            return Err(e);
        }
        for p in &parts {
            p.w.check_conservation().map_err(|e| format!("packet conservation violated in part {}: {e}", p.id))?;
        }
        let mut reason = reason;
        let samples = parts[0].w.sample_every.map(|dt| settle_samples(&mut parts, dt, &mut reason, limit));
        let shared: Vec<u64> = parts.iter().map(|p| p.shared + p.ticks).collect();
        let ticks_first = parts[0].ticks;
        let mut done = Parallel {
            reason,
            parts: n,
            lookahead,
            windows: parts[0].windows,
            handed_over: parts.iter().map(|p| p.handed).sum(),
            events: parts.iter().map(|p| p.w.ev.processed()).collect(),
        };
        drop(parts);
        // A link's corruption is drawn where its packets arrive (net/link.rs), from the sending port's stream
        // (each part has a copy of every stream, and every arrival over a link is in its far end's part, so
        // the draws are the serial run's), and counted on the sending port: for a link between two parts, on
        // the receiving part's copy of that port, added to the merged one here.
        let corrupt = DropReason::Corrupt as usize;
        let corrupted: Vec<(usize, u64)> = (0..self.net.ports.len())
            .filter_map(|i| {
                let p = &self.net.ports[i];
                let far = cut.of(p.peer);
                if far == cut.of(p.node) {
                    return None;
                }
                let w = if far == 0 { &*self } else { &others[far - 1] };
                let n = w.net.ports[i].stats.drops[corrupt];
                (n > 0).then_some((i, n))
            })
            .collect();
        // Every part counted the foreground generators still releasing flows; the flows themselves each in
        // their receiver's part.
        let generators_open = self.generators.iter().filter(|g| g.is_foreground() && g.next_time().is_some()).count();
        for (i, w) in others.iter_mut().enumerate() {
            let theirs = |node: NodeId| cut.of(node) == i + 1;
            self.net.take_part(&mut w.net, theirs);
            self.inbound.take_part(&mut w.inbound, theirs);
            self.pk.add_counts(&w.pk);
            self.ev.add_processed(w.ev.processed() - shared[i + 1]);
            self.now = self.now.max(w.now);
            self.transport.add_part(&w.transport);
            self.flows_finished += w.flows_finished;
            // A workflow runs at its client: its record and its retrievals' are its client's part's.
            for (k, wf) in w.jobs.workflows.iter().enumerate().filter(|(_, wf)| theirs(wf.client)) {
                let qs = wf.first as usize..(wf.first + wf.parts) as usize;
                self.jobs.retrievals[qs.clone()].clone_from_slice(&w.jobs.retrievals[qs]);
                self.jobs.workflows[k] = wf.clone();
            }
            // With background traffic every part counted all the foreground work (its completions are
            // broadcast); without, each its own.
            if !self.has_background {
                self.foreground_open += w.foreground_open - generators_open as u64;
            }
            if let (Some(a), Some(b)) = (&mut self.inbound_at_last_arrival, &w.inbound_at_last_arrival) {
                a.add(b);
            }
            if let (Some(a), Some(b)) = (&mut self.occupancy_at_last_arrival, &w.occupancy_at_last_arrival) {
                for (k, p) in self.net.ports.iter().enumerate() {
                    if theirs(p.node) {
                        a[k] = b[k];
                    }
                }
            }
        }
        for (i, n) in corrupted {
            self.net.ports[i].stats.drops[corrupt] += n;
        }
        if let Some((last, ticks)) = samples {
            // Each part sampled its own ports: in the serial run's order, tick by tick, port by port.
            for w in others.iter_mut() {
                self.queue_samples.append(&mut w.queue_samples);
            }
            self.queue_samples.sort_unstable_by_key(|&(t, port, _)| (t, port));
            // The serial run handled each kept tick once; the parts, each their own (some past the last).
            self.ev.set_processed(self.ev.processed() - ticks_first + ticks);
            if done.reason != StopReason::Interrupted {
                self.now = last; // the serial run's last event: that tick (or the limit)
            }
        }
        self.own_ports = None;
        if flows {
            let mut stores = vec![&self.records];
            stores.extend(others.iter().map(|w| &w.records));
            self.records =
                FlowRecords::merged(&stores).map_err(|e| format!("cannot merge the parts' flow records: {e}"))?;
        }
        self.ev.held = None;
        self.local = None;
        if done.reason == StopReason::Finished && !self.foreground_done {
            done.reason = self.at_the_last_event();
        }
        Ok(done)
    }
}

/// Queue samples of a parallel run, made the serial run's: returns the last tick kept and the number of
/// ticks. The serial run samples at 0, dt, 2·dt, … and stops after the first tick that finds nothing else
/// pending: the tick after the last one that some other event followed. Each part's order is the serial
/// order restricted to its own events and its copies of the ticks, so the last tick one of its events
/// followed is the serial run's, for those events (`Part::followed`); the latest over the parts is the serial
/// run's. Parts sample on at every tick they reach, so the samples past the last tick go; a part that
/// stopped short of it had nothing else pending, so its ports were already as they stay, and it fills in
/// the missing ticks with them. A next tick past the time limit ends the serial run at the limit (it is
/// pending), so it is then a stop at the time limit, with every tick up to the limit.
fn settle_samples(parts: &mut [Part], dt: Time, reason: &mut StopReason, limit: Time) -> (Time, u64) {
    let last = match *reason {
        StopReason::TimeLimit => limit,
        // Interrupted: the ticks every part reached.
        StopReason::Interrupted => parts.iter().map(|p| p.last_tick.unwrap_or(Time::ZERO)).min().unwrap_or(Time::ZERO),
        _ => match parts.iter().filter_map(|p| p.followed).max() {
            Some(t) if t + dt > limit => {
                *reason = StopReason::TimeLimit;
                for p in parts.iter_mut() {
                    p.w.now = limit;
                }
                limit
            }
            Some(t) => t + dt,
            None => Time::ZERO,
        },
    };
    for p in parts.iter_mut() {
        let mut t = p.last_tick.map_or(Time::ZERO, |t| t + dt);
        while t <= last {
            debug_assert!(p.w.ev.len() <= 1, "a part short of the last tick has nothing but its next sample pending");
            p.w.sample_at(t);
            t += dt;
        }
        p.w.queue_samples.retain(|s| s.0 <= last);
    }
    (last, last.0 / dt.0 + 1)
}

/// What the parts share: the barrier, the mailboxes, the first error, every part's event count (progress).
struct Meeting {
    n: usize,
    barrier: MinBarrier,
    /// `mail[(round % 2) · n² + to · n + from]`.
    mail: Vec<Mutex<Mail>>,
    /// `retired[(round % 2) · n + from]`: the flows one of whose halves part `from` closed in its last
    /// window (every part reads every part's).
    retired: Vec<Mutex<Vec<u32>>>,
    error: Mutex<Option<String>>,
    events: Vec<AtomicU64>,
    /// Every part's finished flows (each counts those of its own receivers), for progress.
    finished: Vec<AtomicU64>,
}

/// Offers at a meeting: a part's next event at time t offers t + 1; STOP ends the run (interrupted or failed).
const STOP: u64 = 0;
const NOTHING: u64 = u64::MAX;

impl Meeting {
    /// A meeting of `n` parts on `groups` threads.
    fn new(n: usize, groups: usize) -> Meeting {
        Meeting {
            n,
            barrier: MinBarrier::new(groups),
            mail: (0..2 * n * n).map(|_| Mutex::new(Mail::default())).collect(),
            retired: (0..2 * n).map(|_| Mutex::new(Vec::new())).collect(),
            error: Mutex::new(None),
            events: (0..n).map(|_| AtomicU64::new(0)).collect(),
            finished: (0..n).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    fn mailbox(&self, round: u64, to: usize, from: usize) -> &Mutex<Mail> {
        &self.mail[(round % 2) as usize * self.n * self.n + to * self.n + from]
    }

    fn retired(&self, round: u64, from: usize) -> &Mutex<Vec<u32>> {
        &self.retired[(round % 2) as usize * self.n + from]
    }

    /// Record the run's first error (a poisoned lock is fine: the error is what is wanted).
    fn fail(&self, e: String) {
        self.error.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(e);
    }

    fn failed(&self) -> bool {
        self.error.lock().unwrap_or_else(|e| e.into_inner()).is_some()
    }

    /// The run's progress as of the last meeting: the first part's clock and flows started (every part
    /// records every flow), every part's events and finished flows summed, and the flows started and not
    /// finished as the active ones (a part's own count would be its hosts' share, or count a flow between
    /// two parts twice).
    fn progress(&self, first: &World) -> Progress {
        let mut p = first.progress();
        p.events = self.events.iter().map(|e| e.load(Ordering::Relaxed)).sum();
        p.flows_finished = self.finished.iter().map(|e| e.load(Ordering::Relaxed)).sum();
        p.active_flows = p.flows_started.saturating_sub(p.flows_finished) as usize;
        p
    }

    /// `run_group`, but a group that panics (a bug) does not leave the others waiting at the meeting for ever:
    /// it records the failure, offers STOP once more (all leave at that meeting), and the run returns the
    /// error.
    fn run_guarded(
        &self,
        g: usize,
        parts: &mut [Part],
        lookahead: Time,
        limit: Time,
        on_progress: &mut dyn FnMut(&Progress) -> bool,
    ) -> StopReason {
        let current = std::cell::Cell::new(0);
        let run = std::panic::AssertUnwindSafe(|| self.run_group(g, parts, &current, lookahead, limit, on_progress));
        match std::panic::catch_unwind(run) {
            Ok(reason) => reason,
            Err(e) => {
                let why =
                    e.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| e.downcast_ref::<String>().cloned());
                self.fail(format!("part {} failed: {}", current.get(), why.unwrap_or_else(|| "a panic".into())));
                self.barrier.wait_min(g, STOP);
                StopReason::Interrupted
            }
        }
    }

    /// The whole run of group `g`'s parts on its thread: at each meeting the group offers its parts'
    /// earliest, then each part in turn takes in what was handed to it and handles its window. Every part
    /// ends at the same meeting (the verdict is the meeting's minimum, the same for all).
    fn run_group(
        &self,
        g: usize,
        parts: &mut [Part],
        current: &std::cell::Cell<usize>,
        lookahead: Time,
        limit: Time,
        on_progress: &mut dyn FnMut(&Progress) -> bool,
    ) -> StopReason {
        let mut round = 0;
        let mut asked = false;
        loop {
            let offer = parts
                .iter_mut()
                .map(|p| {
                    current.set(p.id);
                    p.offer(self, round, asked)
                })
                .min()
                .expect("a part");
            let min = self.barrier.wait_min(g, offer);
            // Each part takes in and runs its window in turn: a window posts nothing until the next meeting,
            // so the order of a group's parts does not matter.
            let mut ended = None;
            for p in parts.iter_mut() {
                current.set(p.id);
                if let Err(reason) = p.step(self, round, min, lookahead, limit) {
                    ended = Some(reason);
                }
            }
            if let Some(reason) = ended {
                return reason;
            }
            if g == 0 && parts[0].progress_due() {
                asked = !on_progress(&self.progress(parts[0].w));
            }
            round += 1;
        }
    }
}

/// `parts` in `groups` contiguous groups whose sizes differ by at most one (the larger first).
fn groups_of<'p, 'w>(parts: &'p mut [Part<'w>], groups: usize) -> Vec<&'p mut [Part<'w>]> {
    let (size, extra) = (parts.len() / groups, parts.len() % groups);
    let mut rest = parts;
    (0..groups)
        .map(|g| {
            let (group, tail) = std::mem::take(&mut rest).split_at_mut(size + (g < extra) as usize);
            rest = tail;
            group
        })
        .collect()
}

/// One part of a parallel run.
struct Part<'a> {
    w: &'a mut World,
    id: usize,
    /// This part's ports whose far end is in another part, with that part.
    exits: Vec<(PortId, usize)>,
    /// Node n is this part's (a debug build checks every event it handles).
    mine: Vec<bool>,
    /// Per receiving part: the packets and messages handed over at the end of the last window.
    outbox: Vec<Mail>,
    windows: u64,
    handed: u64,
    /// Events of the whole fabric this part handled (every part does: the merged run counts them once),
    /// but queue samples.
    shared: u64,
    /// Queue samples: the ticks this part handled, the last of them, and the last one that another of its
    /// events followed (`settle_samples`).
    ticks: u64,
    last_tick: Option<Time>,
    followed: Option<Time>,
    /// The first part's event count at the last progress call, in units of 2^16.
    polled: u64,
}

impl<'a> Part<'a> {
    /// Part `id` of `cut`, in world `w` (built whole): the other parts' pending events go, the arrivals over
    /// links to other parts will be held.
    fn new(w: &'a mut World, id: usize, cut: &Partition) -> Result<Part<'a>, String> {
        let mine = |n: NodeId| cut.of(n) == id;
        let mut whole = None;
        let (net, transport) = (&w.net, &w.transport);
        w.ev.retain(|e| match owner(net, transport, e) {
            Some(n) => mine(n),
            None if every_part(e) || e == Event::QueueSample => true,
            None => {
                whole.get_or_insert(e);
                false
            }
        });
        if let Some(e) = whole {
            return Err(format!("{} cannot yet run in parallel: it acts on the whole fabric at once", whole_fabric(e)));
        }
        let exits: Vec<(PortId, usize)> = (0..w.net.ports.len())
            .map(|i| PortId(i as u32))
            .filter(|&p| {
                let pt = &w.net.ports[p.idx()];
                mine(pt.node) && !mine(pt.peer)
            })
            .map(|p| (p, cut.of(w.net.ports[p.idx()].peer)))
            .collect();
        let mut crossing = vec![false; w.net.ports.len()];
        for &(p, _) in &exits {
            crossing[p.idx()] = true;
        }
        w.ev.held = Some(Box::new(Held::new(crossing, cut.node_parts().to_vec())));
        w.own_ports = Some(w.net.ports.iter().map(|p| mine(p.node)).collect());
        // The links inside the part may defer their ends of serialization (net/lazy.rs): their wires'
        // arrivals, which catch them up, are this part's. Not a link to another part, whose arrivals are the
        // other part's and whose wire is read at every window's end.
        let defer = w.defer_starts;
        w.net.defer_starts_where(|pt| defer && mine(pt.node) && mine(pt.peer));
        let hosts: Vec<bool> = (0..w.net.n_hosts()).map(|h| mine(NodeId(h as u32))).collect();
        w.transport.set_local(hosts.clone());
        w.local = Some(hosts);
        let mine = cut.node_parts().iter().map(|&p| p as usize == id).collect();
        Ok(Part {
            w,
            id,
            exits,
            mine,
            outbox: (0..cut.parts()).map(|_| Mail::default()).collect(),
            windows: 0,
            handed: 0,
            shared: 0,
            polled: 0,
            ticks: 0,
            last_tick: None,
            followed: None,
        })
    }

    /// Post the outboxes for the meeting of `round`; returns this part's offer: its next event or outgoing
    /// arrival, whichever is earlier.
    fn post(&mut self, meet: &Meeting, round: u64) -> u64 {
        let mut earliest = self.w.ev.peek_time().map_or(NOTHING, |t| t.0 + 1);
        // A sampling part always holds its next sample (it samples on, `World::sample_queues`); alone, it
        // keeps no run going, as in the serial run.
        if self.w.sample_every.is_some() && self.w.ev.len() == 1 {
            earliest = NOTHING;
        }
        // A packet kept on an exit wire while it is serialized (`window`) is handed over at the end of the
        // window its serialization ends in, so no window may start after that end (a fast-path packet's end
        // of serialization need not be an event).
        for &(p, _) in &self.exits {
            let port = &self.w.net.ports[p.idx()];
            if let Some((at, _)) = port.wire.head() {
                earliest = earliest.min(at.0 - port.delay.0 + 1);
            }
        }
        for (to, out) in self.outbox.iter_mut().enumerate() {
            let packets = out.packets.iter().map(|c| c.1 .0 + 1);
            if let Some(first) = packets.chain(out.messages.iter().map(|m| m.at.0 + 1)).min() {
                earliest = earliest.min(first);
                let mut mail = meet.mailbox(round, to, self.id).lock().unwrap_or_else(|e| e.into_inner());
                mail.packets.append(&mut out.packets);
                mail.messages.append(&mut out.messages);
            }
        }
        *meet.retired(round, self.id).lock().unwrap_or_else(|e| e.into_inner()) = self.w.transport.take_retiring();
        meet.events[self.id].store(self.w.ev.processed(), Ordering::Relaxed);
        meet.finished[self.id].store(self.w.flows_finished, Ordering::Relaxed);
        earliest
    }

    /// Post the outboxes and say what this part offers at the meeting of `round`: STOP if the run was asked
    /// to stop or a part failed.
    fn offer(&mut self, meet: &Meeting, round: u64, asked: bool) -> u64 {
        let offer = self.post(meet, round);
        if asked || meet.failed() {
            STOP
        } else if self.w.foreground_done {
            // The foreground's end: every part handled its broadcast in this window and offers nothing.
            NOTHING
        } else {
            offer
        }
    }

    /// After the meeting of `round` agreed on `min`: take in what the others handed over, then handle the
    /// next window, or end this part's run (the reason, as the serial run would give it).
    fn step(&mut self, meet: &Meeting, round: u64, min: u64, lookahead: Time, limit: Time) -> Result<(), StopReason> {
        self.take_in(meet, round);
        let start = Part::verdict(min, limit).map_err(|reason| self.end(reason, limit))?;
        self.window(meet, start, lookahead, limit);
        Ok(())
    }

    /// After the meeting of `round`: what the other parts handed over goes onto this part's copies of their
    /// wires (the wire schedules its head's arrival, as in the serial run).
    fn take_in(&mut self, meet: &Meeting, round: u64) {
        for from in 0..meet.n {
            let mut mail = meet.mailbox(round, self.id, from).lock().unwrap_or_else(|e| e.into_inner());
            for (p, at, pkt, word) in mail.packets.drain(..) {
                let id = pkt.map_or(PktId::NONE, |pkt| self.w.pk.take_in(pkt));
                if id != PktId::NONE {
                    self.w.net.take_in(p, id, word);
                }
                self.w.net.ports[p.idx()].onto_wire(&mut self.w.ev, p, at, id);
            }
            // A message's tie is its own (a flow's id), so when it is scheduled does not matter.
            for m in mail.messages.drain(..) {
                self.w.ev.schedule_handed(m);
            }
        }
        // Every part frees the same flows' records in the same order, so a flow has one slot everywhere.
        for from in 0..meet.n {
            self.w.transport.retire(&meet.retired(round, from).lock().unwrap_or_else(|e| e.into_inner()));
        }
    }

    /// The next window's start from the meeting's minimum, or why the run ends.
    fn verdict(min: u64, limit: Time) -> Result<Time, StopReason> {
        match min {
            STOP => Err(StopReason::Interrupted),
            NOTHING => Err(StopReason::Finished),
            t if Time(t - 1) > limit => Err(StopReason::TimeLimit),
            t => Ok(Time(t - 1)),
        }
    }

    /// This part's state at the end of the run, as the serial run's would say it.
    fn end(&mut self, reason: StopReason, limit: Time) -> StopReason {
        let reason = match reason {
            StopReason::TimeLimit => {
                self.w.now = limit;
                reason
            }
            // Whether every flow finished is known once the parts are merged (`run_parallel`).
            r => r,
        };
        // The part's deferred ends of serialization, as `World::run` settles a serial run's.
        self.w.settle_starts(&reason);
        reason
    }

    /// Handle this part's events of [start, start + lookahead) up to `limit`, then take what crossed to other
    /// parts out of the arena.
    fn window(&mut self, meet: &Meeting, start: Time, lookahead: Time, limit: Time) {
        let end = Time(start.0.saturating_add(lookahead.0));
        self.windows += 1;
        self.w.ev.held.as_mut().expect("held in a part").until = end;
        self.w.judge_prefetch();
        let last = limit.min(Time(end.0 - 1));
        while let Next::Due(t, e) = self.w.ev.pop_by(last) {
            debug_assert!(
                owner(&self.w.net, &self.w.transport, e)
                    .map_or(every_part(e) || matches!(e, Event::Timer(..) | Event::QueueSample), |n| self.mine
                        [n.idx()]),
                "{e:?} at {t:?} is not part {}'s",
                self.id
            );
            if e == Event::QueueSample {
                self.ticks += 1;
                self.last_tick = Some(t);
            } else {
                self.followed = self.followed.max(self.last_tick);
                self.shared += every_part(e) as u64;
            }
            self.w.now = t;
            self.w.prefetch_ahead();
            self.w.dispatch(e);
            if self.w.foreground_done {
                break; // the serial run stops at this very event, in every part alike
            }
        }
        self.w.ev.forget_held();
        for &(p, to) in &self.exits {
            let delay = self.w.net.ports[p.idx()].delay;
            while let Some((at, _)) = self.w.net.ports[p.idx()].wire.head() {
                if at.0 - delay.0 >= end.0 {
                    // Still being serialized (a fast-path packet is on the wire from its first bit): it stays
                    // until its serialization ends, when a link going down meanwhile can still take it back
                    // (`HookSet::TAIL`, net/link.rs). It arrives a delay after that end, after this window.
                    break;
                }
                let (id, _) = self.w.net.ports[p.idx()].wire.pop();
                if at < end {
                    meet.fail(format!(
                        "causality: a packet over port {} (a link between parts of {} ps) is due at {} ps, inside \
                         the window it was sent in (ending at {} ps): the lookahead is longer than the link's delay",
                        p.0, delay.0, at.0, end.0
                    ));
                }
                let word = if id != PktId::NONE { self.w.net.hand_out(p, id) } else { 0 };
                let pkt = (id != PktId::NONE).then(|| self.w.pk.hand_out(id));
                self.handed += pkt.is_some() as u64;
                self.outbox[to].packets.push((p, at, pkt, word));
            }
        }
        let messages: Vec<Message> = self.w.ev.take_messages().collect(); // (no allocation when empty)
        for m in messages {
            if m.at < end {
                meet.fail(format!(
                    "causality: a message between hosts of two parts is due at {} ps, inside the window it was sent \
                     in (ending at {} ps): the lookahead is longer than the path's propagation delay",
                    m.at.0, end.0
                ));
            }
            if m.to == EVERY_PART {
                // A broadcast: here now (its tie is its own, so when it is scheduled does not matter), and to
                // every other part at the meeting.
                self.w.ev.schedule_handed(m);
                for (to, out) in self.outbox.iter_mut().enumerate().filter(|&(to, _)| to != self.id) {
                    out.messages.push(Message { to: to as u32, ..m });
                }
            } else {
                self.outbox[m.to as usize].messages.push(m);
            }
        }
    }

    /// Whether the first part's events passed another 2^16 since the last progress call.
    fn progress_due(&mut self) -> bool {
        let k = self.w.ev.processed() >> 16;
        let due = k != self.polled;
        self.polled = k;
        due
    }
}
