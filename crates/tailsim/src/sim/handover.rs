//! A serial run that hands packets between the parts of a cut as a parallel run will (issue "One run on
//! every core", docs/parallel.md): the check that the order of simultaneous events does not depend on when
//! an arrival over a cut link is scheduled.
//!
//! A conservative parallel run with time windows handles, in each part, the events of [t, t + lookahead),
//! t the earliest pending event; a packet that a part starts over a link to another part reaches that part
//! only at the window's end, when the parts meet. So its arrival is scheduled there later than the serial
//! run schedules it: after events of the next window that the serial run scheduled after it. Here the one
//! queue of the serial run plays every part: an arrival over a cut link is held until the window ends, then
//! scheduled, the held ones in reverse order. If the results are those of a plain run, the tie order is one
//! a parallel run can reproduce (with insertion order for every tie, they are not). An arrival due before
//! the window ends — a lookahead longer than a cut link's delay — would reach its part in a window that part
//! may have finished: the causality check a parallel run needs, reported here as an error.

use super::{StopAt, StopReason, World};
use crate::engine::{Held, Next};
use crate::net::partition::Partition;
use crate::units::Time;

impl World {
    /// As `run` (no progress callback, no stall rule: give a stop time or an event budget), holding every
    /// arrival over a link between two parts of `cut` until the end of its window of `lookahead`. The
    /// results are those of `run`; an error if an arrival was due inside the window it was sent in.
    pub fn run_handing_over(&mut self, stop: StopAt, cut: &Partition, lookahead: Time) -> Result<StopReason, String> {
        if lookahead == Time::ZERO {
            return Err("a lookahead of 0 leaves no window: a cut link without delay cannot be cut".into());
        }
        let limit = stop.time.unwrap_or(Time::MAX);
        let budget = stop.max_events.unwrap_or(u64::MAX);
        let crossing = self.net.ports.iter().map(|p| cut.of(p.node) != cut.of(p.peer)).collect();
        self.ev.held = Some(Box::new(Held::new(crossing)));
        let reason = 'run: loop {
            // The meeting: what crossed during the window reaches its part; the next window starts at the
            // earliest pending event.
            let Some(start) = self.ev.release_held() else { break self.at_the_last_event() };
            if start > limit {
                self.now = limit;
                break StopReason::TimeLimit;
            }
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
                match self.ev.pop_by(last) {
                    Next::Due(t, e) => {
                        self.now = t;
                        self.dispatch(e);
                    }
                    Next::Later | Next::Empty => break,
                }
            }
        };
        let held = self.ev.held.take().expect("held while handing over");
        // Whatever is still held joins the queue, so the state a stopped run leaves is a plain run's.
        for &(at, p) in held.arrivals.iter().rev() {
            self.ev.schedule(at, crate::engine::Event::WireArrival(p));
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
            None => Ok(reason),
        }
    }
}
