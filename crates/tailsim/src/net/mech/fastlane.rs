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
use crate::net::port::DropReason;
use crate::units::{PktId, PortId, Time};
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
        FastLane { prm, queues: (0..ports).map(|_| NoticeQueue::default()).collect(), stats: FastLaneStats::default() }
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

    /// Queue a notice at `port`, or drop it when the buffer cap is reached. True if queued.
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
            return Admit::Queue;
        }
        let size = c.packet(id).size as u64;
        if self.queues[at.idx()].bytes + size > self.prm.buffer {
            self.stats.notices_dropped += 1;
            return Admit::Drop(DropReason::Mechanism);
        }
        self.offer(c, at, id);
        Admit::Hold
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

    fn held(&self, f: &mut dyn FnMut(PktId)) {
        for q in &self.queues {
            q.waiting.iter().for_each(|&id| f(id));
        }
    }

    fn summary(&self) -> serde_json::Value {
        serde_json::to_value(self.stats()).unwrap_or_default()
    }
}
