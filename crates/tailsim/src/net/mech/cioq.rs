//! Combined input/output-queued switches (the DeTail thesis §5.2.2, Fig. 5.2; `switch.architecture = "cioq"`).
//! After the forwarding engine (the switch's `delay`), a packet waits in the **ingress queue** of the port it
//! arrived by, until the crossbar moves it to the **egress queue** of its output port, which serializes it.
//!
//! - Ingress queues: per port, one FIFO per class (strict priority between classes). A queue admits a packet
//!   of class p while its **drain bytes** for p (bytes of classes 0..=p, Fig. 5.3) plus the packet fit in
//!   `ingress` bytes; without PFC a packet that does not fit is dropped there (counted at that port).
//! - Crossbar: a transfer takes the packet's wire size over `speedup` × the egress link's rate (1530 B at 4 ×
//!   1 Gbps: 3.06 µs). An ingress port sends, and an egress port receives, one packet at a time. An ingress
//!   port sends the head of its highest-priority class whose egress port is free to receive and has room for
//!   it (the egress queue's drain bytes for the packet's class, plus the packet, ≤ `egress` bytes: lower
//!   classes never keep a higher one out, docs/detail.md); a class whose head cannot go blocks the packets behind it
//!   (head-of-line blocking) but not the other classes. Idle ingress ports are served round-robin.
//! - A full egress queue therefore holds packets in ingress and never drops.
//! - With PFC ([`Pfc`]), the drain bytes are those of the **ingress queue**: charged when the packet arrives
//!   at the switch, released when the crossbar takes it, so congestion climbs back hop by hop (the thesis's
//!   back-pressure), and what an ingress queue holds is bounded by the pause threshold plus the headroom.
//!
//! Built on hooks only: `INGRESS` (PFC's charge), `ADMIT` (every packet that arrived over a link is held in
//! ingress), `DEQUEUE` at egress (room freed: the crossbar may move more), `ARRIVE` (PFC frames), and timers
//! (the end of a transfer; PFC's frames are keyed by their upstream port under `PFC_TIMERS`).
//!
//! Split between the parts of a parallel run (sim/parallel.rs): every queue, transfer and round-robin
//! position is a switch's, and every timer acts at one switch (`timer_node`).

use super::pfc::Pfc;
use super::Hooks;
use crate::net::hooks::{Admit, Arrive, Effect, HookCtx, HookSet};
use crate::net::port::{DropReason, Port};
use crate::net::queue::CLASSES;
use crate::units::{NodeId, PktId, PortId, Time};
use std::collections::VecDeque;

/// Timer keys: 1 + p the end of ingress port p's transfer, `KICK | s` a new round at switch s, `PFC_TIMERS |
/// p` a PFC frame taking effect at upstream port p.
const KICK: u32 = 1 << 31;
pub const PFC_TIMERS: u32 = 1 << 30;

#[derive(Clone, Copy, Debug)]
pub struct CioqParams {
    /// Bytes each ingress queue holds (all classes).
    pub ingress: u64,
    /// Bytes each egress queue holds; the crossbar moves nothing into a full one.
    pub egress: u64,
    /// Crossbar speed over the egress link's rate.
    pub speedup: u32,
}

/// One ingress port's queues and transfer state.
#[derive(Default)]
struct Ingress {
    fifo: [VecDeque<PktId>; CLASSES],
    /// Bytes per class.
    class_bytes: [u64; CLASSES],
    /// The packet crossing the crossbar from this port, and its egress port.
    sending: Option<(PktId, PortId)>,
}

pub struct Cioq {
    prm: CioqParams,
    /// Indexed by `PortId` (switch ports only are used).
    ingress: Vec<Ingress>,
    /// Per egress port: the bytes of the packet being moved into it (0: free to receive).
    receiving: Vec<u64>,
    /// Per switch: its ports, and the round-robin position among them.
    switches: Vec<(Vec<PortId>, usize)>,
    /// PFC on the ingress queues, if on.
    pub pfc: Option<Pfc>,
    pub stats: CioqStats,
}

#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct CioqStats {
    /// Packets moved through a crossbar.
    pub transfers: u64,
    /// Packets dropped because their ingress queue was full.
    pub ingress_drops: u64,
    /// Largest ingress queue seen, bytes.
    pub max_ingress_bytes: u64,
    /// Times a class head could not go because its egress queue was full (the head-of-line blocking the
    /// thesis's CIOQ has).
    pub blocked_by_full_egress: u64,
}

impl Cioq {
    /// `switches`: each switch's ports, in the network's order of switches; `ports`: the number of ports.
    pub fn new(prm: CioqParams, switches: Vec<Vec<PortId>>, ports: usize, pfc: Option<Pfc>) -> Cioq {
        Cioq {
            prm,
            ingress: (0..ports).map(|_| Ingress::default()).collect(),
            receiving: vec![0; ports],
            switches: switches.into_iter().map(|p| (p, 0)).collect(),
            pfc,
            stats: CioqStats::default(),
        }
    }

    /// Bytes waiting in the ingress queue of port `p`.
    pub fn ingress_bytes(&self, p: PortId) -> u64 {
        self.ingress[p.idx()].bytes()
    }

    /// Start every transfer that can start at switch `s`: idle ingress ports in round-robin order, each with
    /// its best eligible class head.
    fn kick(&mut self, c: &mut HookCtx, s: u32) {
        let n = self.switches[s as usize].0.len();
        let first = self.switches[s as usize].1;
        for k in 0..n {
            let i = self.switches[s as usize].0[(first + k) % n];
            if self.ingress[i.idx()].sending.is_some() || self.ingress[i.idx()].bytes() == 0 {
                continue;
            }
            if self.try_send(c, i) {
                self.switches[s as usize].1 = (first + k + 1) % n;
            }
        }
    }

    /// Ingress port `i` sends its highest-priority head that can go; false if none can.
    fn try_send(&mut self, c: &mut HookCtx, i: PortId) -> bool {
        for class in 0..CLASSES {
            let Some(&id) = self.ingress[i.idx()].fifo[class].front() else { continue };
            let p = c.packet(id);
            let (e, size) = (p.out_port, p.size as u64);
            if self.receiving[e.idx()] != 0 {
                continue; // the egress port is receiving from another ingress port
            }
            if c.ports[e.idx()].queue.drain_bytes(class) + size > self.prm.egress {
                self.stats.blocked_by_full_egress += 1;
                continue;
            }
            let ing = &mut self.ingress[i.idx()];
            ing.fifo[class].pop_front();
            ing.class_bytes[class] -= size;
            ing.sending = Some((id, e));
            self.receiving[e.idx()] = size;
            let pt = &c.ports[e.idx()];
            let t = Time(pt.tx_time(size + pt.wire_overhead as u64).0 / self.prm.speedup as u64);
            c.timer(c.now + t, i.0 + 1);
            // Left the ingress queue: its drain bytes fall.
            if let Some(pfc) = &mut self.pfc {
                pfc.release(c, id);
            }
            return true;
        }
        false
    }
}

impl Ingress {
    fn bytes(&self) -> u64 {
        self.class_bytes.iter().sum()
    }
}

/// The index of port `p`'s switch (switches follow the hosts among the nodes, in `switches`' order).
fn switch_of(c: &HookCtx, p: PortId) -> u32 {
    (c.ports[p.idx()].node.idx() - c.hosts) as u32
}

impl Hooks for Cioq {
    const NAME: &'static str = "cioq";
    const HOOKS: HookSet = HookSet::INGRESS.with(HookSet::ADMIT).with(HookSet::DEQUEUE).with(HookSet::ARRIVE);

    fn on_ingress(&mut self, c: &mut HookCtx, at: PortId, id: PktId, cands: &[PortId]) -> Option<PortId> {
        if let Some(pfc) = &mut self.pfc {
            pfc.on_ingress(c, at, id, cands);
        }
        None
    }

    fn on_admit(&mut self, c: &mut HookCtx, _at: PortId, id: PktId) -> Admit {
        let p = c.packet(id);
        let (i, class, size) = (p.in_port, p.class as usize, p.size as u64);
        if i == PortId::NONE {
            return Admit::Queue; // made at this switch: straight to egress
        }
        let drain: u64 = self.ingress[i.idx()].class_bytes[..=class].iter().sum();
        if drain + size > self.prm.ingress {
            self.stats.ingress_drops += 1;
            if let Some(pfc) = &mut self.pfc {
                pfc.release(c, id);
            }
            // Counted at the port it came in by; the outbox holds it until the drop is applied.
            c.effect(Effect::Drop { port: i, id, why: DropReason::Overflow });
            return Admit::Hold;
        }
        let ing = &mut self.ingress[i.idx()];
        ing.fifo[class].push_back(id);
        ing.class_bytes[class] += size;
        self.stats.max_ingress_bytes = self.stats.max_ingress_bytes.max(ing.bytes());
        if ing.sending.is_none() {
            let s = switch_of(c, i);
            self.kick(c, s);
        }
        Admit::Hold
    }

    fn on_dequeue(&mut self, c: &mut HookCtx, at: PortId, _id: PktId) {
        // Room at egress port `at`: a blocked head may go now.
        if self.receiving[at.idx()] == 0 {
            let s = switch_of(c, at);
            self.kick(c, s);
        }
    }

    fn on_arrive(&mut self, c: &mut HookCtx, at: PortId, id: PktId) -> Arrive {
        match &mut self.pfc {
            Some(pfc) => pfc.on_arrive(c, at, id),
            None => Arrive::Pass,
        }
    }

    fn on_timer(&mut self, c: &mut HookCtx, key: u32) {
        if key & KICK == 0 && key & PFC_TIMERS != 0 {
            if let Some(pfc) = &mut self.pfc {
                pfc.on_timer(c, key);
            }
            return;
        }
        if key & KICK != 0 {
            return self.kick(c, key & !KICK);
        }
        // The transfer from ingress port key − 1 is done: the packet joins its egress queue. The next
        // transfers are chosen once it is there (a zero-delay timer: the outbox applies the enqueue when
        // this hook returns, and the room checks must count the packet).
        let i = PortId(key - 1);
        let (id, e) = self.ingress[i.idx()].sending.take().expect("a transfer in progress");
        self.receiving[e.idx()] = 0;
        self.stats.transfers += 1;
        c.effect(Effect::Enqueue { port: e, id });
        c.timer(c.now, KICK | switch_of(c, i));
    }

    fn held(&self, f: &mut dyn FnMut(PktId)) {
        for ing in &self.ingress {
            ing.fifo.iter().flatten().for_each(|&id| f(id));
            if let Some((id, _)) = ing.sending {
                f(id);
            }
        }
    }

    fn parallel_refusal(&self) -> Option<&'static str> {
        None
    }

    fn timer_node(&self, ports: &[Port], key: u32) -> Option<NodeId> {
        let port = if key & KICK != 0 {
            *self.switches[(key & !KICK) as usize].0.first()?
        } else if key & PFC_TIMERS != 0 {
            PortId(key & !PFC_TIMERS)
        } else {
            PortId(key - 1)
        };
        Some(ports[port.idx()].node)
    }

    fn take_part(&mut self, other: &mut Cioq, ports: &[Port], theirs: &dyn Fn(NodeId) -> bool) {
        super::take_ports(&mut self.ingress, &mut other.ingress, ports, theirs);
        super::take_ports(&mut self.receiving, &mut other.receiving, ports, theirs);
        for (a, b) in self.switches.iter_mut().zip(&other.switches) {
            if a.0.first().is_some_and(|p| theirs(ports[p.idx()].node)) {
                a.1 = b.1;
            }
        }
        if let (Some(a), Some(b)) = (&mut self.pfc, &mut other.pfc) {
            a.take_part(b, ports, theirs);
        }
        let (a, b) = (&mut self.stats, other.stats);
        a.transfers += b.transfers;
        a.ingress_drops += b.ingress_drops;
        a.max_ingress_bytes = a.max_ingress_bytes.max(b.max_ingress_bytes);
        a.blocked_by_full_egress += b.blocked_by_full_egress;
    }

    fn summary(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self.stats).unwrap_or_default();
        if let (Some(pfc), Some(m)) = (&self.pfc, v.as_object_mut()) {
            m.insert("pfc".into(), pfc.summary());
        }
        v
    }
}
