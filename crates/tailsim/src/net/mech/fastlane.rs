//! FastLane's drop notifications (the DeTail/FastLane thesis, §6.5; docs/fastlane.md).
//!
//! A switch that drops a packet turns it into a 64 B notice to the packet's source: the flow, sequence number
//! and kind of the dropped packet, and its original length (`Packet::notice_about`). The notice leaves by the
//! port the packet came in through (no second route lookup, §6.5.2) and is routed normally from the next switch
//! on. Notices are never notified about: a dropped notice leaves its source to time out (§6.5.3).
//!
//! Every switch port has a notification queue of its own, outside the data buffer and served ahead of it,
//! with two caps (§6.5.3): at most `buffer` bytes of notices (3.2 KB: 2.5 % of a 128 KB port), and a token
//! bucket of `bandwidth` × the link's rate (1 %), one notice deep. The queue is work-conserving: a notice
//! also goes, without tokens, when the port has no data waiting, and data always uses what notices leave
//! idle. `strict` turns the spare-capacity rule off (the thesis's cap-sensitivity experiment, Figs 6.9–6.10).
//!
//! How the queue is served: a notice with tokens is released at once (`Effect::Express`, which the
//! transmitter serves before its data queue at the next packet boundary); without tokens it waits for a timer
//! at the time the bucket has enough. A notice on spare capacity is released when the port's data queue is
//! empty and no other notice is on its way out, at arrival or when the transmitter finishes a packet
//! (`TRANSMIT`). A notice sent on spare capacity takes no tokens: it used bandwidth data left unused.
//!
//! Which drops are notified: those the switch's data plane decides (buffer overflow, no route, a link that is
//! down, a mechanism's refusal). A corrupted packet is discarded by the receiving MAC, which cannot tell whose
//! it was: no notice. Packets dropped at a host's own NIC have no ingress port and are not notified.

use super::Hooks;
use crate::net::hooks::{Admit, Effect, HookCtx, HookSet};
use crate::net::packet::{Packet, PktKind};
use crate::net::port::{DropReason, Port};
use crate::units::{NodeId, PktId, PortId, Time};
use std::collections::VecDeque;

/// Size of a notice: a minimum Ethernet frame (14 B Ethernet + 20 B IP + 20 B TCP + FCS, padded; §6.5.3).
pub const NOTICE_BYTES: u32 = 64;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FastLaneParams {
    /// Notification bandwidth as a fraction of each link's rate (0, 1].
    pub bandwidth: f64,
    /// Notification buffer per port, bytes.
    pub buffer: u64,
    /// No sending on spare capacity: notices go only with tokens.
    pub strict: bool,
}

impl Default for FastLaneParams {
    fn default() -> Self {
        // 1 % and 2.5 % of 128 KiB (§6.5.3).
        FastLaneParams { bandwidth: 0.01, buffer: 131_072 / 40, strict: false }
    }
}

/// One port's notification queue.
#[derive(Default)]
struct NoticeQueue {
    waiting: VecDeque<PktId>,
    /// Bytes of notices waiting here or released and not yet transmitted: what the buffer cap bounds.
    bytes: u64,
    /// The notice released on spare capacity and not yet transmitted (at most one at a time).
    spare_out: Option<PktId>,
    /// The token bucket as a theoretical emission time (GCRA): a notice conforms at `t ≥ tat`, and moves
    /// `tat` on by its cost at the capped rate. With a depth of one notice this is exactly the token bucket.
    tat: Time,
    /// A timer is set for `tat` (at most one per port).
    timer: Option<Time>,
    /// Notice bytes (wire size) this port sent, and the most it ever held.
    sent_bytes: u64,
    max_bytes: u64,
}

#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct FastLaneStats {
    /// Notices made: one per dropped non-notice packet that had an ingress port and a notified reason.
    pub notices: u64,
    /// Notices dropped at a full notification queue (where they were made, or on their way).
    pub notices_dropped: u64,
    /// Dropped packets that got no notice: dropped at their own host's NIC, or corrupted on a link.
    pub not_notified: u64,
    /// Notices released with tokens, and on spare capacity.
    pub sent_with_tokens: u64,
    pub sent_spare: u64,
    /// The most notice bytes any port held (≤ the buffer cap).
    pub max_queue_bytes: u64,
    /// The most notice bytes (on the wire) any one port sent.
    pub max_port_bytes: u64,
}

pub struct FastLane {
    prm: FastLaneParams,
    /// Per port (indexed by `PortId`; only switch ports are used).
    queues: Vec<NoticeQueue>,
    stats: FastLaneStats,
}

impl FastLane {
    pub fn new(prm: FastLaneParams, ports: usize) -> FastLane {
        // The buffer cap bounds each queue: size them once, so notices never allocate.
        let most = (prm.buffer / NOTICE_BYTES as u64) as usize + 1;
        let queue = || NoticeQueue { waiting: VecDeque::with_capacity(most), ..Default::default() };
        FastLane { prm, queues: (0..ports).map(|_| queue()).collect(), stats: FastLaneStats::default() }
    }

    /// The counters, with the per-port maxima filled in.
    pub fn stats(&self) -> FastLaneStats {
        let mut s = self.stats;
        s.max_queue_bytes = self.queues.iter().map(|q| q.max_bytes).max().unwrap_or(0);
        s.max_port_bytes = self.queues.iter().map(|q| q.sent_bytes).max().unwrap_or(0);
        s
    }

    /// Notice bytes sent by `port` (wire size, for the bandwidth checks).
    pub fn sent_bytes(&self, port: PortId) -> u64 {
        self.queues[port.idx()].sent_bytes
    }

    /// Queue a notice at `port`; false (counted in `notices_dropped`) when the buffer cap refuses it, for the
    /// caller to drop.
    fn offer(&mut self, c: &mut HookCtx, port: PortId, id: PktId) -> bool {
        let size = c.packet(id).size as u64;
        let q = &mut self.queues[port.idx()];
        if q.bytes + size > self.prm.buffer {
            self.stats.notices_dropped += 1;
            return false;
        }
        q.waiting.push_back(id);
        q.bytes += size;
        q.max_bytes = q.max_bytes.max(q.bytes);
        self.serve(c, port);
        true
    }

    /// Wire time of a notice of `size` bytes at the port's capped notification rate.
    fn cost(&self, c: &HookCtx, port: PortId, size: u32) -> Time {
        let pt = &c.ports[port.idx()];
        let bits = (size as u64 + pt.wire_overhead as u64) as f64 * 8.0;
        Time((bits * 1e12 / (pt.rate.0 as f64 * self.prm.bandwidth)).ceil() as u64)
    }

    /// Release what the caps allow from `port`'s queue; set a timer for the next token otherwise.
    fn serve(&mut self, c: &mut HookCtx, port: PortId) {
        loop {
            let Some(&head) = self.queues[port.idx()].waiting.front() else { return };
            let size = c.packet(head).size;
            let q = &self.queues[port.idx()];
            if c.now >= q.tat {
                let cost = self.cost(c, port, size);
                let q = &mut self.queues[port.idx()];
                q.tat = c.now.max(q.tat) + cost;
                q.waiting.pop_front();
                self.stats.sent_with_tokens += 1;
                c.effect(Effect::Express { port, id: head });
                continue;
            }
            let idle = c.ports[port.idx()].bytes == 0;
            if !self.prm.strict && idle && q.spare_out.is_none() {
                let q = &mut self.queues[port.idx()];
                q.waiting.pop_front();
                q.spare_out = Some(head);
                self.stats.sent_spare += 1;
                c.effect(Effect::Express { port, id: head });
                // One at a time: the next goes when this one is transmitted, if the port is still idle.
                continue;
            }
            let q = &mut self.queues[port.idx()];
            if q.timer.is_none() {
                q.timer = Some(q.tat);
                let at = q.tat;
                c.timer(at, port.0);
            }
            return;
        }
    }
}

impl Hooks for FastLane {
    const NAME: &'static str = "fastlane";
    const HOOKS: HookSet = HookSet::DROP.with(HookSet::ADMIT).with(HookSet::TRANSMIT);

    /// A notice routed here from another switch joins this port's notification queue, not its data queue.
    fn on_admit(&mut self, c: &mut HookCtx, at: PortId, id: PktId) -> Admit {
        if c.packet(id).kind != PktKind::Notice {
            Admit::Queue
        } else if self.offer(c, at, id) {
            Admit::Hold
        } else {
            Admit::Drop(DropReason::Mechanism)
        }
    }

    fn on_transmit(&mut self, c: &mut HookCtx, at: PortId, id: PktId) {
        let p = c.packet(id);
        if p.kind == PktKind::Notice {
            let wire = p.size as u64 + c.ports[at.idx()].wire_overhead as u64;
            let size = p.size as u64;
            let q = &mut self.queues[at.idx()];
            q.bytes -= size;
            q.sent_bytes += wire;
            if q.spare_out == Some(id) {
                q.spare_out = None;
            }
        }
        if !self.queues[at.idx()].waiting.is_empty() {
            self.serve(c, at);
        }
    }

    fn on_drop(&mut self, c: &mut HookCtx, _at: PortId, id: PktId, why: DropReason) {
        let p = *c.packet(id);
        if p.kind == PktKind::Notice {
            return;
        }
        let notified =
            matches!(why, DropReason::Overflow | DropReason::NoRoute | DropReason::LinkDown | DropReason::Mechanism);
        if !notified || p.in_port == PortId::NONE {
            self.stats.not_notified += 1;
            return;
        }
        // The switch that dropped it (at one of its egress or ingress ports, or onto a link that is down) is the
        // one it entered last, by `in_port`.
        let notice = c.make(Packet::notice_about(&p, c.ports[p.in_port.idx()].node, NOTICE_BYTES));
        self.stats.notices += 1;
        if !self.offer(c, p.in_port, notice) {
            c.effect(Effect::Drop { port: p.in_port, id: notice, why: DropReason::Mechanism });
        }
    }

    fn on_timer(&mut self, c: &mut HookCtx, key: u32) {
        let port = PortId(key);
        self.queues[port.idx()].timer = None;
        self.serve(c, port);
    }

    // Split between the parts of a parallel run: every notification queue is a port's, every timer a
    // port's, and a notice is made at the switch that dropped its packet (a corrupted packet, dropped at
    // the link's far end, gets none).
    fn parallel_refusal(&self) -> Option<&'static str> {
        None
    }

    fn timer_node(&self, ports: &[Port], key: u32) -> Option<NodeId> {
        Some(ports[key as usize].node)
    }

    fn take_part(&mut self, other: &mut FastLane, ports: &[Port], theirs: &dyn Fn(NodeId) -> bool) {
        super::take_ports(&mut self.queues, &mut other.queues, ports, theirs);
        let (a, b) = (&mut self.stats, other.stats);
        a.notices += b.notices;
        a.notices_dropped += b.notices_dropped;
        a.not_notified += b.not_notified;
        a.sent_with_tokens += b.sent_with_tokens;
        a.sent_spare += b.sent_spare;
    }

    fn held(&self, f: &mut dyn FnMut(PktId)) {
        for q in &self.queues {
            q.waiting.iter().for_each(|&id| f(id));
        }
    }

    fn summary(&self) -> serde_json::Value {
        serde_json::to_value(self.stats()).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Event, EventQueue};
    use crate::net::mech::Mech;
    use crate::net::topology::LeafSpine;
    use crate::net::{BufferPolicy, NetParams, Network, Packets};
    use crate::units::{BitsPerSec, FlowSlot, NodeId};

    /// One leaf (node 4) with hosts 0–3 at 10 Gbps, no delays, 3000 B per port, FastLane on the leaf's ports.
    fn leaf(prm: FastLaneParams) -> Network {
        let spec = LeafSpine {
            leaves: 1,
            spines: 1,
            hosts_per_leaf: 4,
            edge_rate: BitsPerSec::gbps(10),
            core_rate: BitsPerSec::gbps(10),
            edge_delay: Time::ZERO,
            core_delay: Time::ZERO,
            switch_delay: Time::ZERO,
        }
        .spec();
        let mut n =
            Network::build(&spec, &NetParams { buffer: BufferPolicy::PerPort(3000), ..Default::default() }).unwrap();
        let ports: Vec<_> = n.switch_ports().collect();
        let count = n.ports.len();
        n.install(Mech::FastLane(FastLane::new(prm, count)), ports);
        n
    }

    fn port(n: &Network, from: u32, to: u32) -> PortId {
        PortId(n.ports.iter().position(|p| p.node.0 == from && p.peer.0 == to).unwrap() as u32)
    }

    /// Six 1500 B packets from host 1 to host 0 offered at once to the leaf's port towards host 0, recorded
    /// as having entered the leaf by its port towards host 2 (not the route back to host 1): one is sent, two
    /// fit, three are dropped. Returns (time, node, kind) of every packet delivered to a host.
    fn drop_three(prm: FastLaneParams) -> (Network, Vec<(Time, NodeId, PktKind)>) {
        let mut n = leaf(prm);
        let (mut ev, mut pk) = (EventQueue::new(), Packets::default());
        let (out, inp) = (port(&n, 4, 0), port(&n, 4, 2));
        for seq in 0..6 {
            let mut p = Packet::new(PktKind::Data, FlowSlot(0), 0, NodeId(1), NodeId(0));
            (p.size, p.seq, p.in_port) = (1500, seq, inp);
            let id = pk.alloc(p);
            n.enqueue(Time::ZERO, &mut ev, &mut pk, out, id);
        }
        let mut got = vec![];
        let mut delivered = vec![];
        n.drain(Time::ZERO, &mut ev, &mut pk, &mut delivered);
        while let Some((now, e)) = ev.pop() {
            let d = match e {
                Event::TxDone(p) => {
                    n.on_tx_done(now, &mut ev, &mut pk, p);
                    None
                }
                Event::WireArrival(p) => n.on_wire_arrival(now, &mut ev, &mut pk, p),
                Event::Mech(m, k) => {
                    n.on_mech_timer(now, &mut ev, &mut pk, m, k);
                    None
                }
                other => panic!("unexpected event {other:?}"),
            };
            n.drain(now, &mut ev, &mut pk, &mut delivered);
            for (node, id) in d.into_iter().chain(delivered.drain(..)) {
                got.push((now, node, pk.get(id).kind));
                pk.consume(id);
            }
        }
        (n, got)
    }

    fn stats(n: &Network) -> FastLaneStats {
        n.mechs.iter().find_map(|m| if let Mech::FastLane(f) = m { Some(f.stats()) } else { None }).unwrap()
    }

    fn notices(got: &[(Time, NodeId, PktKind)]) -> Vec<(Time, NodeId)> {
        got.iter().filter(|g| g.2 == PktKind::Notice).map(|g| (g.0, g.1)).collect()
    }

    const TX: Time = Time(51_200); // 64 B at 10 Gbps

    #[test]
    fn a_notice_leaves_by_the_port_its_packet_came_in_and_strict_caps_space_them_by_the_token_rate() {
        let (n, got) = drop_three(FastLaneParams { strict: true, ..Default::default() });
        // 1 % of 10 Gbps: one 64 B notice per 5.12 us. They reach host 2 (the dropped packets' ingress
        // port), not host 1 (their source, where routing would have sent them).
        let gap = Time(5_120_000);
        assert_eq!(notices(&got), vec![(TX, NodeId(2)), (gap + TX, NodeId(2)), (gap + gap + TX, NodeId(2))]);
        let s = stats(&n);
        assert_eq!((s.notices, s.sent_with_tokens, s.sent_spare, s.notices_dropped), (3, 3, 0, 0));
        assert_eq!(s.max_queue_bytes, 192, "all three count until sent: the first is released, two wait");
    }

    #[test]
    fn work_conserving_notices_use_an_idle_port_back_to_back() {
        let (n, got) = drop_three(FastLaneParams::default());
        // The first with tokens, then one at a time on spare capacity: the port towards host 2 has no data.
        assert_eq!(notices(&got), vec![(TX, NodeId(2)), (TX + TX, NodeId(2)), (TX + TX + TX, NodeId(2))]);
        let s = stats(&n);
        assert_eq!((s.sent_with_tokens, s.sent_spare), (1, 2));
    }

    #[test]
    fn notices_past_the_buffer_cap_are_dropped_and_never_notified() {
        let (n, got) = drop_three(FastLaneParams { strict: true, buffer: 128, ..Default::default() });
        // Two fit (one being sent, one waiting); the third is dropped at its port, and makes nothing.
        assert_eq!(notices(&got).len(), 2);
        let s = stats(&n);
        assert_eq!((s.notices, s.notices_dropped, s.max_queue_bytes), (3, 1, 128));
        let inp = port(&n, 4, 2);
        assert_eq!(n.ports[inp.idx()].stats.drops(DropReason::Mechanism), 1);
        assert_eq!(n.ports[port(&n, 4, 0).idx()].stats.drops(DropReason::Overflow), 3);
    }
}
