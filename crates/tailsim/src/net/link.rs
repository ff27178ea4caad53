//! Stage: links. The end of serialization (`TxDone`: the `TRANSMIT` hook, then onto the wire, or a drop if the
//! link is down), propagation in a FIFO whose head alone is in the event queue (`WireArrival`), corruption at
//! the far end, the `ARRIVE` hook, and entry into the next node. Link-state changes and route re-convergence.

use super::hooks::{Arrive, HookSet};
use super::port::{DropReason, Port};
use super::{drop_at, routing, Delivery, Network, Packets};
use crate::engine::{Event, EventQueue};
use crate::units::{NodeId, PktId, PortId, Time};

impl Network {
    /// The transmitter of `port` is free: the slow path's packet ends its serialization (below), or a fast-path
    /// packet, on the wire since it started, ends it (`fast_tx_done`). Then the next packet starts.
    pub fn on_tx_done(&mut self, now: Time, ev: &mut EventQueue, pk: &mut Packets, port: PortId) {
        self.tx_done(now, ev, pk, port)
    }

    /// `on_tx_done`, in line: a deferred end's catch-up (net/lazy.rs) runs it for nearly half the events of a
    /// backlogged fabric, and out of line its call saved and restored registers each time (callgrind: −2.3 %
    /// of all instructions in `htsim-p2` in line; docs/performance-log.md, change 26).
    #[inline(always)]
    pub(super) fn tx_done(&mut self, now: Time, ev: &mut EventQueue, pk: &mut Packets, port: PortId) {
        let Some((id, size)) = self.tx_current[port.idx()].take() else {
            return self.fast_tx_done(now, ev, pk, port);
        };
        self.packet_hops += 1;
        let pt = &mut self.ports[port.idx()];
        pt.busy = false;
        pt.stats.sent(size as u64, now - pt.tx_start);
        if !pt.up {
            drop_at(pt, port, pk, &mut self.out, id, DropReason::LinkDown);
        } else if !pt.hooks.has(HookSet::TRANSMIT) {
            pt.onto_wire(ev, port, now + pt.delay, id);
        } else {
            self.transmit_hooked(now, ev, pk, port, id);
        }
        self.start_tx(now, ev, pk, port);
    }

    /// The end of a fast-path serialization that something waits for (net/egress.rs, `start_queued`): the
    /// packet has been on the wire since it started; it is lost here if the link went down meanwhile and is
    /// still down, exactly as the slow path would drop it at its `TxDone`.
    #[inline(always)]
    fn fast_tx_done(&mut self, now: Time, ev: &mut EventQueue, pk: &mut Packets, port: PortId) {
        let pt = &mut self.ports[port.idx()];
        debug_assert!(pt.tx_pending && pt.busy_until == now, "a fast-path TxDone at its time");
        pt.tx_pending = false;
        if pt.hooks.has(HookSet::TAIL) {
            self.end_tail(pk, port, |pt| pt.wire.cancel_tail().expect("the packet serialized is the wire's last"));
        }
        self.start_tx(now, ev, pk, port);
    }

    /// The end of serialization of a fast-path packet whose link went down meanwhile (`HookSet::TAIL`): it is
    /// lost if the link is still down. `take` gives the packet: off the wire at the port's `TxDone`, or the one
    /// arriving over a link without delay, which comes before that `TxDone`. True if it was lost.
    #[inline(never)]
    fn end_tail(&mut self, pk: &mut Packets, port: PortId, take: impl FnOnce(&mut Port) -> PktId) -> bool {
        let pt = &mut self.ports[port.idx()];
        pt.hooks = pt.hooks.without(HookSet::TAIL);
        if pt.up {
            return false;
        }
        let id = take(pt);
        drop_at(pt, port, pk, &mut self.out, id, DropReason::LinkDown);
        true
    }

    /// The transmit hooks, then onto the wire.
    #[inline(never)]
    fn transmit_hooked(&mut self, now: Time, ev: &mut EventQueue, pk: &mut Packets, port: PortId, id: PktId) {
        self.each_mech(now, ev, pk, HookSet::TRANSMIT, |m, c| {
            m.on_transmit(c, port, id);
            None::<()>
        });
        let pt = &mut self.ports[port.idx()];
        pt.onto_wire(ev, port, now + pt.delay, id);
    }

    /// The head of a link's wire arrives at the far end. Returns a delivery when it reached a host.
    // Always inlined, into the run loop's dispatch: out of line, the call saved and restored registers at
    // every packet-hop (callgrind: −3.4 to −4.2 % of all instructions in line, and 1–4 % more packet-hops
    // per second; the end of a serialization in line too was +0.4 %).
    #[inline(always)]
    pub fn on_wire_arrival(&mut self, now: Time, ev: &mut EventQueue, pk: &mut Packets, port: PortId) -> Delivery {
        // The port's deferred start, due before its wire's next packet arrives (net/lazy.rs).
        self.catch_up(ev, pk, port, (now, ev.current_tie()));
        let pt = &mut self.ports[port.idx()];
        let (id, next) = pt.wire.pop();
        if let Some(t) = next {
            ev.schedule(t, Event::WireArrival(port));
        }
        if id == PktId::NONE {
            return None; // lost as its serialization ended (`end_tail`)
        }
        if pt.corrupt_p > 0.0 && self.port_rng[port.idx()].bernoulli(pt.corrupt_p) {
            drop_at(pt, port, pk, &mut self.out, id, DropReason::Corrupt);
            return None;
        }
        // One test for every reason to leave the fast path: arrive or ingress hooks, frames on this link, or a
        // packet whose fate its end of serialization decides.
        if pt.hooks.has(HookSet::ARRIVE.with(HookSet::LINK_LOCAL).with(HookSet::INGRESS).with(HookSet::TAIL)) {
            return self.arrive_hooked(now, ev, pk, port, id);
        }
        // The far end, from the record in hand (`enter_node` would look the port up again).
        let (peer, in_port) = (pt.peer, pt.reverse);
        self.enter_node_at(now, ev, pk, port, peer, in_port, HookSet::NONE, id)
    }

    /// Arrival over a link with arrive hooks, or one that has carried control frames: the mechanisms' verdict,
    /// then a frame that no mechanism consumed is dropped (never forwarded), and anything else enters the node.
    #[inline(never)]
    fn arrive_hooked(&mut self, now: Time, ev: &mut EventQueue, pk: &mut Packets, port: PortId, id: PktId) -> Delivery {
        let pt = &self.ports[port.idx()];
        // The packet whose end of serialization is now, on a link without delay, arrives before its `TxDone`.
        if pt.hooks.has(HookSet::TAIL) && now == pt.busy_until && pt.wire.is_empty() && self.end_tail(pk, port, |_| id)
        {
            return None;
        }
        if self.ports[port.idx()].hooks.has(HookSet::ARRIVE) {
            let verdict = self.each_mech(now, ev, pk, HookSet::ARRIVE, |m, c| match m.on_arrive(c, port, id) {
                Arrive::Pass => None,
                v => Some(v),
            });
            match verdict {
                None | Some(Arrive::Pass) => {}
                Some(Arrive::Consumed | Arrive::Held) => return None,
                Some(Arrive::Drop(why)) => {
                    drop_at(&mut self.ports[port.idx()], port, pk, &mut self.out, id, why);
                    return None;
                }
            }
        }
        if pk.get(id).kind.is_link_local() {
            drop_at(&mut self.ports[port.idx()], port, pk, &mut self.out, id, DropReason::Unclaimed);
            return None;
        }
        let hooks = self.ports[port.idx()].hooks;
        self.enter_node(now, ev, pk, port, hooks, id)
    }

    /// A packet that crossed link `port` enters the node at its far end: a host receives it, a switch routes
    /// it. (Never a link-local frame: those end at the link, `arrive_hooked`.) `hooks` are the link's flags
    /// as far as ingress hooks go (`HookSet::NONE` on the fast path, where there are none).
    #[inline(always)]
    pub(super) fn enter_node(
        &mut self,
        now: Time,
        ev: &mut EventQueue,
        pk: &mut Packets,
        port: PortId,
        hooks: HookSet,
        id: PktId,
    ) -> Delivery {
        let pt = &self.ports[port.idx()];
        let (peer, in_port) = (pt.peer, pt.reverse);
        self.enter_node_at(now, ev, pk, port, peer, in_port, hooks, id)
    }

    /// `enter_node`, with the link's far end (`peer`, and `in_port`, the port there that leads back).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)] // the stage's state, in registers
    fn enter_node_at(
        &mut self,
        now: Time,
        ev: &mut EventQueue,
        pk: &mut Packets,
        port: PortId,
        peer: NodeId,
        in_port: PortId,
        hooks: HookSet,
        id: PktId,
    ) -> Delivery {
        if self.is_host(peer) {
            return self.host_arrival(now, ev, pk, port, peer, id);
        }
        self.switch_ingress(now, ev, pk, peer, in_port, hooks, id);
        None
    }

    /// After `set_link` took links down at `now` in a run: a fast-path packet being serialized on one of them
    /// is lost if its link is still down when its serialization ends (the slow path's rule), so that moment
    /// gets an event and the port the `TAIL` mark (`fast_tx_done`, `arrive_hooked`).
    pub fn mark_tails(&mut self, now: Time, ev: &mut EventQueue) {
        for (i, pt) in self.ports.iter_mut().enumerate() {
            if !pt.up && !pt.busy && now < pt.busy_until && !pt.hooks.has(HookSet::TAIL) {
                pt.hooks = pt.hooks | HookSet::TAIL;
                if !pt.tx_pending {
                    pt.tx_pending = true;
                    ev.schedule(pt.busy_until, Event::TxDone(PortId(i as u32)));
                }
            }
        }
    }

    /// Change the link between `a` and `b` (both directions, or with `one_way` only a → b): up or down (down
    /// drops what is transmitted on it), its corruption probability, its rate (a degraded link; a packet being
    /// serialized finishes at the old rate). False if there is no such link. With re-routing on, the caller
    /// re-converges the routes after a change of up/down (`Event::Reconverge`). In a run, a link taken down is
    /// followed by `mark_tails`.
    pub fn set_link(
        &mut self,
        a: NodeId,
        b: NodeId,
        up: Option<bool>,
        corrupt: Option<f64>,
        rate: Option<crate::units::BitsPerSec>,
        one_way: bool,
    ) -> bool {
        let mut found = false;
        for pt in self.ports.iter_mut() {
            if (pt.node == a && pt.peer == b) || (!one_way && pt.node == b && pt.peer == a) {
                found = true;
                if let Some(u) = up {
                    pt.up = u;
                }
                if let Some(c) = corrupt {
                    pt.corrupt_p = c;
                }
                if let Some(r) = rate {
                    pt.set_rate(r);
                }
            }
        }
        found
    }

    /// Recompute every switch's routes over the links that are up now (shortest paths, equal-cost sets). A
    /// destination that no switch can reach any more gets no route: its packets are dropped (`NoRoute`) at the
    /// switch where they find none. Ideal completion times keep using the healthy fabric's routes.
    pub fn reconverge(&mut self) {
        let adj = self.adjacency();
        let routes = routing::build(&adj, self.hosts.len(), false).expect("lenient routing never fails");
        let old = std::mem::replace(&mut self.routes, routes);
        self.healthy.get_or_insert(old);
    }
}
