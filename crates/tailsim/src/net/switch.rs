//! Stage: switches. Ingress: routing by destination over the equal-cost next hops, the switch's load
//! balancing (per-flow hash or per-packet spray), the `INGRESS` hook (which may choose another of those
//! ports); then the fixed forwarding delay (a FIFO whose head alone is in the event queue) to the egress
//! queue.

use super::hooks::HookSet;
use super::port::DropReason;
use super::{drop_at, BufferPolicy, NetParams, Network, Packets};
use crate::engine::{Event, EventQueue, Pipe, Rng};
use crate::net::topology::SwitchSpec;
use crate::units::{NodeId, PathId, PktId, PortId, Time};

/// How a switch picks among equal-cost next hops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoadBalance {
    /// Per-flow: hash of the flow's 5-tuple (all packets of a flow direction take one path).
    Ecmp,
    /// Per-packet: uniformly random next hop.
    Spray,
    /// Per-flow, always the first equal-cost next hop (`routing.hash = "first"`): ns-3's global routing
    /// without `RandomEcmpRouting` ("always select the first route consistently"). Next hops are listed in
    /// the switch's port order, so in a leaf-spine every flow crosses spine0.
    First,
}

pub struct Switch {
    pub name: String,
    pub ports: Vec<PortId>,
    /// Fixed forwarding latency from the end of reception to joining the egress queue.
    pub delay: Time,
    pub fwd: Pipe,
    pub buffer: BufferPolicy,
    /// CIOQ switches: the crossbar's speedup (net/mech/cioq.rs); None for output-queued switches.
    pub crossbar: Option<u32>,
    /// Bytes in the shared pool (all ports).
    pub used: u64,
    pub rng: Rng,
    salt: u32,
}

impl Switch {
    pub(super) fn new(s: &SwitchSpec, i: usize, ports: Vec<PortId>, prm: &NetParams) -> Switch {
        Switch {
            name: s.name.clone(),
            ports,
            delay: s.delay,
            fwd: Pipe::default(),
            buffer: prm.buffer,
            crossbar: None,
            used: 0,
            rng: Rng::new(prm.seed, "switch-spray", i as u64),
            salt: mix32(i as u32 ^ 0x5bd1_e995),
        }
    }
    /// Which of the next hops `cands` a packet of flow hash `hash` would take if it arrived now (None without
    /// routes), for prefetching its egress port ahead of the arrival and for `flow_choice`: the spray's draw
    /// is made on a copy of the switch's stream, so nothing changes; a guess that proves wrong (another packet
    /// draws first, a mechanism or a pinned path chooses) costs a wasted prefetch, never a result.
    #[inline(always)]
    pub(super) fn predicted_egress(&self, lb: LoadBalance, cands: &[PortId], hash: u32) -> Option<PortId> {
        match cands.len() {
            0 => None,
            1 => Some(cands[0]),
            n => Some(cands[pick(lb, n, hash, self.salt, |n| self.rng.peek_below(n))]),
        }
    }
    /// The next hop that per-flow load balancing `lb` chooses among `cands` for a flow of hash `hash` (None
    /// without routes, or if `lb` chooses per packet).
    pub fn flow_choice(&self, lb: LoadBalance, cands: &[PortId], hash: u32) -> Option<PortId> {
        match lb {
            LoadBalance::Spray => None,
            _ => self.predicted_egress(lb, cands, hash),
        }
    }
}

impl Network {
    /// A packet enters switch `s` through `in_port` (its port towards the previous hop; `PortId::NONE` for a
    /// packet a mechanism made here): choose its output port and send it through the forwarding delay.
    // Inlined into the wire arrival, as it was before the stages had files of their own (callgrind: the call
    // cost 2 % of all instructions on fattree128-perm-100g).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)] // the stage's state, in registers
    pub(super) fn switch_ingress(
        &mut self,
        now: Time,
        ev: &mut EventQueue,
        pk: &mut Packets,
        s: NodeId,
        in_port: PortId,
        link_hooks: HookSet,
        id: PktId,
    ) {
        let lb = self.lb;
        let hosts = self.hosts.len();
        let sw = &mut self.switches[s.idx() - hosts];
        let delay = sw.delay;
        let p = pk.get_mut(id);
        p.hops = p.hops.saturating_add(1);
        p.in_port = in_port;
        let cands = self.routes.candidates(s.idx() - hosts, p.dst);
        let pinned = if p.path == PathId::NONE { None } else { self.pins.port_at(p.path, s) };
        let mut out = match (pinned, cands.len()) {
            (Some(o), _) => o,
            (None, 0) => return self.no_route(s, in_port, pk, id),
            (None, 1) => cands[0],
            (None, n) => cands[pick(lb, n, p.hash, sw.salt, |n| sw.rng.below(n))],
        };
        p.out_port = out;
        if link_hooks.has(HookSet::INGRESS) {
            out = self.ingress_hooks(now, ev, pk, s, in_port, id, out);
            pk.get_mut(id).out_port = out;
        }
        if delay.0 == 0 {
            self.enqueue(now, ev, pk, out, id);
        } else if self.switches[s.idx() - hosts].fwd.push(now + delay, id) {
            ev.schedule(now + delay, Event::SwitchForward(s));
        }
    }

    /// The mechanisms' choice of output port, if one makes it.
    #[inline(never)]
    #[allow(clippy::too_many_arguments)] // the stage's state, passed on from the hot path
    fn ingress_hooks(
        &mut self,
        now: Time,
        ev: &mut EventQueue,
        pk: &mut Packets,
        s: NodeId,
        in_port: PortId,
        id: PktId,
        chosen: PortId,
    ) -> PortId {
        let hosts = self.hosts.len();
        let dst = pk.get(id).dst;
        let Network { routes, mechs, ports, out, .. } = self;
        let cands = routes.candidates(s.idx() - hosts, dst);
        // Every mechanism sees the packet (some only account for it); the first that chooses a port wins.
        let mut choice = None;
        for (i, m) in mechs.iter_mut().enumerate() {
            if m.hooks().has(HookSet::INGRESS) {
                let mut c = super::hooks::HookCtx {
                    now,
                    ev: &mut *ev,
                    pk: &mut *pk,
                    ports,
                    out: &mut *out,
                    hosts,
                    mech: i as u8,
                };
                let p = m.on_ingress(&mut c, in_port, id, cands);
                choice = choice.or(p);
            }
        }
        choice.unwrap_or(chosen)
    }

    /// No route to the packet's destination (every path to it is down): drop it at its ingress port (a packet
    /// made at this switch, at the switch's first port).
    #[inline(never)]
    fn no_route(&mut self, s: NodeId, in_port: PortId, pk: &mut Packets, id: PktId) {
        let at = if in_port == PortId::NONE { self.switches[s.idx() - self.hosts.len()].ports[0] } else { in_port };
        drop_at(&mut self.ports[at.idx()], at, pk, &mut self.out, id, DropReason::NoRoute);
    }

    pub fn on_switch_forward(&mut self, now: Time, ev: &mut EventQueue, pk: &mut Packets, s: NodeId) {
        let (id, next) = self.sw(s).fwd.pop();
        if let Some(t) = next {
            ev.schedule(t, Event::SwitchForward(s));
        }
        let out = pk.get(id).out_port;
        self.enqueue(now, ev, pk, out, id);
    }
}

/// Load balancing `lb`'s choice among `n` > 1 equal-cost next hops, for a packet of flow hash `hash` at a
/// switch of salt `salt`; `draw(n)` is the spray's uniform draw in [0, n).
#[inline(always)]
fn pick(lb: LoadBalance, n: usize, hash: u32, salt: u32, draw: impl FnOnce(u32) -> u32) -> usize {
    match lb {
        LoadBalance::Ecmp => ecmp_index(hash, salt, n),
        LoadBalance::Spray => draw(n as u32) as usize,
        LoadBalance::First => 0,
    }
}

/// ECMP: which of `n` equal-cost next hops a switch salted `salt` gives a flow of hash `hash`.
#[inline(always)]
fn ecmp_index(hash: u32, salt: u32, n: usize) -> usize {
    (mix32(hash ^ salt) % n as u32) as usize
}

#[inline]
fn mix32(mut x: u32) -> u32 {
    x ^= x >> 16;
    x = x.wrapping_mul(0x7feb_352d);
    x ^= x >> 15;
    x = x.wrapping_mul(0x846c_a68b);
    x ^ (x >> 16)
}
