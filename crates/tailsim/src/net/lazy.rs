//! Stage: deferred ends of serialization. When a fast-path port starts a packet and its queue still holds
//! more (net/egress.rs, `start_queued`), or a packet joins the queue of a port that is serializing, the
//! transmitter's next start is due when that serialization ends. In a run without mechanisms that moment
//! gets no event (in a parallel run's part, on the links inside the part: sim/parallel.rs): whatever
//! touches the port next first starts what should have started by then (`catch_up`): a packet joining its
//! queue, or its wire's next arrival. The packet being serialized is on
//! that wire until its serialization ends plus the link's delay, so one of the wire's arrivals always comes
//! after the deferred start (links without delay never defer): the chain of a backlogged port's packets goes
//! on without its ends of serialization ever being events.
//!
//! Why it is exact: an end of serialization's tie does not depend on when it was scheduled
//! (`engine::start_tie`), so a deferred one knows its place among the events of its instant, catching up runs
//! it (and whatever it starts) as the event would have run before everything that can see it, and it can
//! become an event again at any moment (`settle_starts`, at the end of a run). What can see it: the port's
//! queue, counters and wire (its admissions and its wire's arrivals, which catch up first); the switch's
//! shared buffer (ports of switches that share one never defer); mechanisms (a run with any never defers);
//! a host's downlink busy time (Homa's wasted bandwidth, which catches up first); and what reads the whole
//! fabric (queue samples, the end of the warm-up, a fault, the statistics at the last flow's arrival, the end
//! of the run: `catch_up_all`). A link going down needs nothing more: the catch-up runs the end of
//! serialization (and its `TAIL` check) the event would have. The only difference a run shows is in an
//! event budget (`stop.max_events`): a caught-up start counts as an event when it is caught up. Test:
//! tests/golden.rs, `deferring_ends_of_serialization_changes_no_result` (every golden scenario and six more,
//! each with 7-33 % of its events deferred, against the same run with `World::defer_starts` off).
//!
//! Why: in a backlogged port every packet-hop had two events, its end of serialization and its arrival; now
//! it has one (docs/performance-log.md, change 25).

use super::egress::BufferPolicy;
use super::port::{Defer, Port};
use super::{Network, Packets};
use crate::engine::{start_tie, Event, EventQueue};
use crate::units::{PortId, Time};

/// The key of the event being handled, or an instant's end (`Time`, `u64::MAX`): what a deferred start must
/// come before to be due.
pub type Key = (Time, u64);

impl Network {
    /// Let the ports that can defer their ends of serialization do so (on), or stop them (off; `settle_starts`
    /// first). A port can when the network has no mechanisms, its link has a delay, and its node does not
    /// share a buffer among its ports.
    pub fn defer_starts(&mut self, on: bool) {
        self.defer_starts_where(|_| on);
    }

    /// `defer_starts`, for the ports `mine` accepts only (a part of a parallel run: the links inside it, not
    /// those whose far end another part handles).
    pub fn defer_starts_where(&mut self, mine: impl Fn(&Port) -> bool) {
        let mechanisms = !self.mechs.is_empty();
        for i in 0..self.ports.len() {
            let node = self.ports[i].node;
            let shared = !self.is_host(node) && matches!(self.sw(node).buffer, BufferPolicy::Shared { .. });
            let pt = &mut self.ports[i];
            let can = !mechanisms && pt.delay > Time::ZERO && !shared && mine(pt);
            pt.defer = if can { Defer::May } else { Defer::Never };
        }
    }

    /// Something waits for the transmitter of `port`, free at `at` (`busy_until`): schedule its `TxDone`, or,
    /// where the port may, defer it.
    #[inline(always)]
    pub(super) fn await_tx_end(pt: &mut Port, ev: &mut EventQueue, port: PortId, at: Time) {
        pt.tx_pending = true;
        if pt.defer == Defer::May && pt.hooks.is_empty() {
            pt.defer = Defer::Deferred;
        } else {
            ev.schedule(at, Event::TxDone(port));
        }
    }

    /// Start at `port` whatever should have started before `key` (the event being handled).
    #[inline(always)]
    pub fn catch_up(&mut self, ev: &mut EventQueue, pk: &mut Packets, port: PortId, key: Key) {
        if owes_start(&self.ports[port.idx()], port, key) {
            self.catch_up_port(ev, pk, port, key);
        }
    }

    #[inline(never)]
    pub(super) fn catch_up_port(&mut self, ev: &mut EventQueue, pk: &mut Packets, port: PortId, key: Key) {
        loop {
            let pt = &mut self.ports[port.idx()];
            pt.defer = Defer::May;
            let at = pt.busy_until;
            ev.count_deferred();
            // A deferred end is a fast-path one (nothing in `tx_current`) at a port that had no hooks when it
            // deferred (`await_tx_end`). With none now either, what `tx_done` would do is start the next
            // packet: straight there, without its tests and its lookups of the port again (callgrind: −0.8 to
            // −1.9 % of all instructions, docs/performance-log.md, change 34). A link that went down since
            // (`HookSet::TAIL`) takes the whole way.
            debug_assert!(self.tx_current[port.idx()].is_none() && pt.tx_pending);
            if pt.hooks.is_empty() {
                pt.tx_pending = false;
                self.start_queued(at, ev, pk, port);
            } else {
                self.tx_done(at, ev, pk, port);
            }
            if !owes_start(&self.ports[port.idx()], port, key) {
                return;
            }
        }
    }

    /// Every port catches up to `key`: before what reads the whole fabric (queue samples, the end of the
    /// warm-up, a fault).
    pub fn catch_up_all(&mut self, ev: &mut EventQueue, pk: &mut Packets, key: Key) {
        for i in 0..self.ports.len() {
            self.catch_up(ev, pk, PortId(i as u32), key);
        }
    }

    /// The end of a run (`World::run`): every port catches up to `key`, and the ends of serialization still
    /// deferred become events, exactly in their places (their ties do not depend on when they are scheduled),
    /// for whatever runs next. No port defers any more.
    pub fn settle_starts(&mut self, ev: &mut EventQueue, pk: &mut Packets, key: Key) {
        self.catch_up_all(ev, pk, key);
        for (i, pt) in self.ports.iter_mut().enumerate() {
            if pt.defer == Defer::Deferred {
                ev.schedule(pt.busy_until, Event::TxDone(PortId(i as u32)));
            }
            pt.defer = Defer::Never;
        }
    }
}

/// `pt` (port `port`) has deferred a start that comes before `key`: what must be caught up first.
#[inline(always)]
pub(super) fn owes_start(pt: &Port, port: PortId, key: Key) -> bool {
    pt.defer == Defer::Deferred
        && (pt.busy_until < key.0 || (pt.busy_until == key.0 && start_tie(pt.busy_until, port) < key.1))
}
