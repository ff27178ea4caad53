//! Priority flow control (IEEE 802.1Qbb as DeTail uses it, thesis §5.2.3): per ingress port and class, a
//! switch counts the bytes that arrived through that port and have not left the switch yet. When the
//! **drain bytes** of class p (the bytes of classes 0..=p, i.e. of equal or higher priority, Fig. 5.3) pass
//! the pause threshold, it sends a 64-byte pause frame for p back out of that port; when they fall to the
//! unpause threshold, an unpause frame. Frames go ahead of the queue, are never paused themselves, and are
//! consumed at the far end of the link, where the upstream port stops (or resumes) starting packets of that
//! class `response` after the frame arrived. DeTail uses the frames on/off (no pause quanta).
//!
//! Built only on hooks: `INGRESS` charges, `ADMIT` accepts past the egress buffer's limit (a lossless switch
//! never drops at egress: what it holds is bounded by the ingress accounting), `DEQUEUE` releases (the packet
//! still carries its ingress port), `DROP` releases a packet dropped before it left (a mechanism's verdict),
//! `ARRIVE` consumes the frames, and a timer applies them after the response time (`Effect::Pause` /
//! `Effect::Resume`). It works on output-queued switches, with accounting by ingress port as RoCE fabrics are
//! usually modelled.

use super::Hooks;
use crate::net::hooks::{Admit, Arrive, Effect, HookCtx, HookSet};
use crate::net::packet::{Packet, PktKind};
use crate::net::port::{DropReason, Port};
use crate::net::queue::CLASSES;
use crate::units::{FlowSlot, NodeId, PktId, PortId, Time};
use std::collections::VecDeque;

/// `Packet::aux` of a PFC frame (the mechanism's frame type).
pub const PFC_FRAME: u32 = 0x8808;
/// Size of a PFC frame on the wire.
pub const FRAME_BYTES: u32 = 64;

#[derive(Clone, Copy, Debug)]
pub struct PfcParams {
    /// Drain bytes of a class above which it is paused.
    pub pause: u64,
    /// Drain bytes at or below which it is resumed (< `pause`).
    pub unpause: u64,
    /// From a frame's arrival upstream to its effect.
    pub response: Time,
}

pub struct Pfc {
    prm: PfcParams,
    /// Per port (indexed by `PortId`; only switch ports are used): bytes per class that arrived through it and
    /// are still in the switch.
    ingress: Vec<[u64; CLASSES]>,
    /// Per port: classes for which a pause was sent and no unpause since (bit c = class c).
    paused_sent: Vec<u8>,
    /// Frames that arrived and take effect after the response time, in order: (upstream port, classes, pause).
    pending: VecDeque<(PortId, u8, bool)>,
    /// Added to the upstream port's number to make a frame's timer key (0 standalone; another mechanism that
    /// holds PFC and has timers of its own sets a bit its keys do not use, `Pfc::tagged`).
    tag: u32,
    pub stats: PfcStats,
}

#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct PfcStats {
    pub pause_frames: u64,
    pub unpause_frames: u64,
    /// Largest drain-byte count seen at any ingress port and class (the headroom actually used).
    pub max_drain_bytes: u64,
}

impl Pfc {
    pub fn new(prm: PfcParams, ports: usize) -> Pfc {
        Pfc {
            prm,
            ingress: vec![[0; CLASSES]; ports],
            paused_sent: vec![0; ports],
            pending: VecDeque::new(),
            tag: 0,
            stats: PfcStats::default(),
        }
    }
    /// The same with its timers' keys `tag | port` (`tag` a bit above every port number).
    pub fn tagged(mut self, tag: u32) -> Pfc {
        self.tag = tag;
        self
    }
    /// Drain bytes of class `c` at ingress port `p`: bytes of classes 0..=c.
    pub fn drain_bytes(&self, p: PortId, c: usize) -> u64 {
        self.ingress[p.idx()][..=c].iter().sum()
    }
    /// Bytes per class charged to ingress port `p`.
    pub fn ingress_bytes(&self, p: PortId) -> [u64; CLASSES] {
        self.ingress[p.idx()]
    }

    /// Send pause or unpause frames for every class whose state changed at ingress port `p`.
    fn update(&mut self, c: &mut HookCtx, p: PortId) {
        let (mut pause, mut resume) = (0u8, 0u8);
        let sent = self.paused_sent[p.idx()];
        let mut drain = 0;
        for class in 0..CLASSES {
            drain += self.ingress[p.idx()][class];
            let bit = 1u8 << class;
            if sent & bit == 0 && drain > self.prm.pause {
                pause |= bit;
            } else if sent & bit != 0 && drain <= self.prm.unpause {
                resume |= bit;
            }
            self.stats.max_drain_bytes = self.stats.max_drain_bytes.max(drain);
        }
        if pause != 0 {
            self.send(c, p, pause, true);
            self.stats.pause_frames += 1;
        }
        if resume != 0 {
            self.send(c, p, resume, false);
            self.stats.unpause_frames += 1;
        }
        self.paused_sent[p.idx()] = (sent | pause) & !resume;
    }

    fn send(&mut self, c: &mut HookCtx, p: PortId, classes: u8, pause: bool) {
        let node = c.ports[p.idx()].node;
        let peer = c.ports[p.idx()].peer;
        let mut f = Packet::new(PktKind::Frame, FlowSlot(0), 0, node, peer);
        f.size = FRAME_BYTES;
        f.aux = PFC_FRAME;
        f.seq = classes as u32 | if pause { 1 << 8 } else { 0 };
        let id = c.make(f);
        c.effect(Effect::Frame { port: p, id });
    }

    pub(super) fn release(&mut self, c: &mut HookCtx, id: PktId) {
        let p = *c.packet(id);
        if p.in_port == PortId::NONE || p.kind.is_link_local() {
            return;
        }
        let b = &mut self.ingress[p.in_port.idx()][p.class as usize];
        *b -= p.size as u64;
        self.update(c, p.in_port);
    }
}

impl Hooks for Pfc {
    const NAME: &'static str = "pfc";
    const HOOKS: HookSet =
        HookSet::INGRESS.with(HookSet::ADMIT).with(HookSet::DEQUEUE).with(HookSet::DROP).with(HookSet::ARRIVE);

    /// Lossless: a switch never drops at egress; what it holds is bounded by the ingress accounting (pause
    /// threshold plus headroom per ingress port and class), as in lossless switches with ingress admission.
    fn on_admit(&mut self, _c: &mut HookCtx, _at: PortId, _id: PktId) -> Admit {
        Admit::Accept
    }

    fn on_ingress(&mut self, c: &mut HookCtx, at: PortId, id: PktId, _cands: &[PortId]) -> Option<PortId> {
        let p = c.packet(id);
        self.ingress[at.idx()][p.class as usize] += p.size as u64;
        self.update(c, at);
        None
    }

    fn on_dequeue(&mut self, c: &mut HookCtx, _at: PortId, id: PktId) {
        self.release(c, id);
    }

    fn on_drop(&mut self, c: &mut HookCtx, _at: PortId, id: PktId, why: DropReason) {
        // Dropped before it left the switch that charged it (after the dequeue it was released already).
        if matches!(why, DropReason::Overflow | DropReason::Mechanism) {
            self.release(c, id);
        }
    }

    fn on_arrive(&mut self, c: &mut HookCtx, at: PortId, id: PktId) -> Arrive {
        let f = c.packet(id);
        if f.kind != PktKind::Frame || f.aux != PFC_FRAME {
            return Arrive::Pass;
        }
        let (classes, pause) = ((f.seq & 0xff) as u8, f.seq & (1 << 8) != 0);
        c.absorb(id);
        // The frame crossed link `at`; the sender it pauses is the far end's port back over that link.
        let upstream = c.ports[at.idx()].reverse;
        self.pending.push_back((upstream, classes, pause));
        c.timer(c.now + self.prm.response, self.tag | upstream.0);
        Arrive::Consumed
    }

    fn on_timer(&mut self, c: &mut HookCtx, key: u32) {
        // Every frame has the same response time, so timers fire in arrival order (in a part of a parallel
        // run too: it holds only the frames that arrived at its own nodes, and their timers).
        let (port, classes, pause) = self.pending.pop_front().expect("one pending frame per timer");
        debug_assert_eq!(self.tag | port.0, key, "PFC timers fire in the order their frames arrived");
        c.effect(if pause { Effect::Pause { port, classes } } else { Effect::Resume { port, classes } });
    }

    // Split between the parts of a parallel run: the accounting is per ingress port, so at its switch; a
    // frame is made at the switch that pauses, crosses its link as packets do, and takes effect at the
    // upstream port, where it arrived (the timer's key).
    fn parallel_refusal(&self) -> Option<&'static str> {
        None
    }

    fn timer_node(&self, ports: &[Port], key: u32) -> Option<NodeId> {
        Some(ports[(key & !self.tag) as usize].node)
    }

    fn take_part(&mut self, other: &mut Pfc, ports: &[Port], theirs: &dyn Fn(NodeId) -> bool) {
        super::take_ports(&mut self.ingress, &mut other.ingress, ports, theirs);
        super::take_ports(&mut self.paused_sent, &mut other.paused_sent, ports, theirs);
        self.pending.extend(other.pending.drain(..).filter(|&(p, ..)| theirs(ports[p.idx()].node)));
        let (a, b) = (&mut self.stats, other.stats);
        a.pause_frames += b.pause_frames;
        a.unpause_frames += b.unpause_frames;
        a.max_drain_bytes = a.max_drain_bytes.max(b.max_drain_bytes);
    }

    fn summary(&self) -> serde_json::Value {
        serde_json::to_value(self.stats).unwrap_or_default()
    }
}
