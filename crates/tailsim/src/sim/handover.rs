//! A serial run that hands packets between the parts of a cut as a parallel run will (issue "One run on
//! every core", docs/parallel.md): the checks that a parallel run's parts can reproduce the serial order.
//!
//! A conservative parallel run with time windows handles, in each part, the events of [t, t + lookahead),
//! t the earliest pending event; a packet that a part starts over a link to another part reaches that part
//! only at the window's end, when the parts meet. So its arrival is scheduled there later than the serial
//! run schedules it: after events of the next window that the serial run scheduled after it. Here the one
//! queue of the serial run plays every part: an arrival over a cut link is held until the window ends, then
//! scheduled, the held ones in reverse order. If the results are those of a plain run, the tie order is one
//! a parallel run can reproduce (with insertion order for every tie, they are not).
//!
//! Two more things a parallel run cannot do are reported. An arrival due before the window it was sent in
//! ends (a lookahead longer than a cut link's delay) would reach its part in a window that part may have
//! finished: the causality error. And an event that belongs to a node of one part but was scheduled by a
//! handler running in another (at once, not over a link) has no way across: every such *misplaced* event is
//! counted, and the first described. An event's scheduler is found from its sequence number: the numbers
//! handed out while a handler ran are that handler's part's.

use super::projection::Owner;
use super::{StopAt, StopReason, World};
use crate::engine::{Event, Held, Next, FIRST_SEQ};
use crate::net::partition::Partition;
use crate::units::{NodeId, Time};

/// What a run handing packets over found.
#[derive(Clone, Debug)]
pub struct Handover {
    pub reason: StopReason,
    pub windows: u64,
    /// Arrivals held to the end of their window.
    pub held: u64,
    /// Events scheduled by a handler in another part than their node's.
    pub misplaced: u64,
    /// The first of them, described.
    pub first_misplaced: Option<String>,
}

/// Sequence numbers from `.0` on were handed out by handlers of part `.1` (u32::MAX: no single part).
struct Schedulers(Vec<(u64, u32)>);

impl Schedulers {
    fn part_of(&self, seq: u64) -> Option<u32> {
        let i = self.0.partition_point(|&(s, _)| s <= seq);
        let part = self.0[..i].last()?.1;
        (part != u32::MAX).then_some(part)
    }
    fn from(&mut self, seq: u64, part: u32) {
        match self.0.last() {
            Some(&(_, p)) if p == part => {}
            _ => self.0.push((seq, part)),
        }
    }
}

impl World {
    /// As `run` (no progress callback, no stall rule: give a stop time or an event budget), holding every
    /// arrival over a link between two parts of `cut` until the end of its window of `lookahead`. The
    /// results are those of `run`; an error if an arrival was due inside the window it was sent in.
    pub fn run_handing_over(&mut self, stop: StopAt, cut: &Partition, lookahead: Time) -> Result<Handover, String> {
        if lookahead == Time::ZERO {
            return Err("a lookahead of 0 leaves no window: a cut link without delay cannot be cut".into());
        }
        let limit = stop.time.unwrap_or(Time::MAX);
        let budget = stop.max_events.unwrap_or(u64::MAX);
        let crossing = self.net.ports.iter().map(|p| cut.of(p.node) != cut.of(p.peer)).collect();
        self.ev.held = Some(Box::new(Held::new(crossing, cut.node_parts().to_vec())));
        let mut found =
            Handover { reason: StopReason::Finished, windows: 0, held: 0, misplaced: 0, first_misplaced: None };
        let mut schedulers = Schedulers(Vec::new());
        found.reason = 'run: loop {
            // The meeting: what crossed during the window reaches its part; the next window starts at the
            // earliest pending event.
            found.held += self.ev.release_held() as u64;
            let Some(start) = self.ev.peek_time() else { break self.at_the_last_event() };
            if start > limit {
                self.now = limit;
                break StopReason::TimeLimit;
            }
            found.windows += 1;
            let end = Time(start.0.saturating_add(lookahead.0));
            self.ev.held.as_mut().expect("held while handing over").until = end;
            let last = limit.min(Time(end.0 - 1));
            loop {
                if self.ev.processed() >= budget {
                    break 'run StopReason::EventBudget;
                }
                if self.foreground_done {
                    break 'run StopReason::Finished;
                }
                let tie = self.ev.next_tie();
                match self.ev.pop_by(last) {
                    Next::Due(t, e) => {
                        let part = match self.acting_node(e) {
                            Owner::Node(n) => Some(cut.of(n) as u32),
                            Owner::Spread | Owner::Global => None,
                        };
                        let by = tie.filter(|&s| s >= FIRST_SEQ).and_then(|s| schedulers.part_of(s));
                        if let (Some(p), Some(b)) = (part, by) {
                            if p != b {
                                found.misplaced += 1;
                                if found.first_misplaced.is_none() {
                                    found.first_misplaced = Some(self.misplaced(t, e, b));
                                }
                            }
                        }
                        schedulers.from(self.ev.next_seq(), part.unwrap_or(u32::MAX));
                        self.now = t;
                        self.dispatch(e);
                    }
                    Next::Later | Next::Empty => break,
                }
            }
        };
        // Whatever is still held joins the queue, so the state a stopped run leaves is a plain run's.
        self.ev.release_held();
        let held = self.ev.held.take().expect("held while handing over");
        if let Some((at, until)) = held.late_message {
            return Err(format!(
                "causality: a message between hosts of two parts due at {} ps, inside the window it was sent in \
                 (ending at {} ps): the lookahead is longer than the path's propagation delay",
                at.0, until.0
            ));
        }
        match held.late {
            Some((at, p, until)) => Err(format!(
                "causality: an arrival over port {} (a cut link of {} ps) due at {} ps, inside the window it \
                 was sent in (ending at {} ps): the lookahead is longer than the link's delay",
                p.0,
                self.net.ports[p.idx()].delay.0,
                at.0,
                until.0
            )),
            None => Ok(found),
        }
    }

    /// The node whose part handles `e`: as the projection has it, and a flow's timer at the host of the
    /// side that set it (the projection spreads them evenly).
    fn acting_node(&self, e: Event) -> Owner {
        match e {
            Event::Timer(slot, gen, kind) => {
                self.transport.timer_node(slot, gen, kind).map_or(Owner::Spread, Owner::Node)
            }
            _ => self.owner(e),
        }
    }

    fn misplaced(&self, t: Time, e: Event, by: u32) -> String {
        let node = match self.acting_node(e) {
            Owner::Node(n) => n,
            _ => NodeId(u32::MAX),
        };
        format!(
            "{e:?} at {} ps belongs to node {} ({}) but was scheduled by a handler in part {by}",
            t.0,
            node.0,
            self.net.node_name(node)
        )
    }
}
