//! The network: hosts with NIC ports, output-queued store-and-forward switches, full-duplex links, and the
//! datapath that moves packets between them.
//!
//! A packet's life: transport → host transmit delay → NIC queue → serialization (`TxDone`) → propagation
//! (`WireArrival`) → switch ingress (routing) → forwarding delay → egress queue → … → host receive delay →
//! transport. Every step is a method below; later mechanisms hook in at the step they change (see
//! docs/architecture.md).

pub mod packet;
pub mod pfabric;
pub mod port;
pub mod queue;
pub mod regulator;
pub mod routing;
#[cfg(test)]
mod tests;
pub mod topology;

use crate::engine::{Event, EventQueue, Pipe, Rng, Slab};
use packet::{Packet, PktKind};
use pfabric::PFabricQueue;
use port::{DropReason, Port};
use queue::{PrioFifo, QueueDisc, CLASSES};
use regulator::Verdict;
use routing::RouteTable;

use crate::units::{NodeId, PktId, PortId, Time};

/// How a switch picks among equal-cost next hops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoadBalance {
    /// Per-flow: hash of the flow's 5-tuple (all packets of a flow direction take one path).
    Ecmp,
    /// Per-packet: uniformly random next hop.
    Spray,
}

/// Switch buffer management.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BufferPolicy {
    Unlimited,
    /// Each port may hold at most this many bytes.
    PerPort(u64),
    /// One pool per switch; a class queue may grow while its bytes ≤ alpha × (free pool bytes)
    /// (Choudhury–Hahne dynamic thresholds).
    Shared {
        total: u64,
        alpha: f64,
    },
}

/// The packet arena and the conservation counters: every packet created is, at any instant, consumed by an
/// endpoint, dropped, or live in the arena (queued, serializing, propagating, or in a delay line).
#[derive(Default)]
pub struct Packets {
    slab: Slab<Packet>,
    pub created: u64,
    pub consumed: u64,
    pub dropped: u64,
}

impl Packets {
    #[inline]
    pub fn alloc(&mut self, p: Packet) -> PktId {
        self.created += 1;
        PktId(self.slab.insert(p))
    }
    #[inline]
    pub fn get(&self, id: PktId) -> &Packet {
        self.slab.get(id.0)
    }
    #[inline]
    pub fn get_mut(&mut self, id: PktId) -> &mut Packet {
        self.slab.get_mut(id.0)
    }
    /// The packet reached its endpoint and was handled.
    #[inline]
    pub fn consume(&mut self, id: PktId) {
        self.consumed += 1;
        self.slab.remove(id.0);
    }
    #[inline]
    fn drop_pkt(&mut self, id: PktId) {
        self.dropped += 1;
        self.slab.remove(id.0);
    }
    pub fn live(&self) -> usize {
        self.slab.live()
    }
    /// Peak number of packets alive at once (arena size).
    pub fn peak(&self) -> usize {
        self.slab.capacity_used()
    }
}

pub struct Host {
    pub nic: PortId,
    /// Software + NIC delay before a packet joins the NIC queue.
    pub tx_delay: Time,
    /// Delay between the last bit arriving and the transport seeing the packet.
    pub rx_delay: Time,
    pub tx_pipe: Pipe,
    pub rx_pipe: Pipe,
}

pub struct Switch {
    pub name: String,
    pub ports: Vec<PortId>,
    /// Fixed forwarding latency from the end of reception to joining the egress queue.
    pub delay: Time,
    pub fwd: Pipe,
    pub routes: RouteTable,
    pub buffer: BufferPolicy,
    /// Bytes in the shared pool (all ports).
    pub used: u64,
    pub rng: Rng,
    salt: u32,
}

pub struct Network {
    pub hosts: Vec<Host>,
    pub switches: Vec<Switch>,
    pub ports: Vec<Port>,
    /// Current packet being serialized by each port.
    tx_current: Vec<Option<PktId>>,
    port_rng: Vec<Rng>,
    pub lb: LoadBalance,
    /// Packet transmissions completed over all links (the throughput metric "packet-hops").
    pub packet_hops: u64,
    /// QJUMP's per-host, per-class rate limiters in front of the NIC queues (docs/qjump.md).
    pub qjump: Option<regulator::Regulator>,
}

/// What the datapath hands back to the simulation: a packet that reached a host's transport.
pub type Delivery = Option<(NodeId, PktId)>;

impl Network {
    #[inline]
    pub fn n_hosts(&self) -> usize {
        self.hosts.len()
    }
    #[inline]
    pub fn is_host(&self, n: NodeId) -> bool {
        n.idx() < self.hosts.len()
    }
    #[inline]
    fn sw(&mut self, n: NodeId) -> &mut Switch {
        let h = self.hosts.len();
        &mut self.switches[n.idx() - h]
    }

    /// A transport hands a packet to its host.
    pub fn host_send(&mut self, now: Time, ev: &mut EventQueue, pk: &mut Packets, h: NodeId, id: PktId) {
        let host = &mut self.hosts[h.idx()];
        if host.tx_delay.0 == 0 {
            self.host_egress(now, ev, pk, h, id);
        } else if host.tx_pipe.push(now + host.tx_delay, id) {
            ev.schedule(now + host.tx_delay, Event::HostTx(h));
        }
    }

    pub fn on_host_tx(&mut self, now: Time, ev: &mut EventQueue, pk: &mut Packets, h: NodeId) {
        let host = &mut self.hosts[h.idx()];
        let (id, next) = host.tx_pipe.pop();
        if let Some(t) = next {
            ev.schedule(t, Event::HostTx(h));
        }
        self.host_egress(now, ev, pk, h, id);
    }

    /// The host's regulator (if any) passes, drops or holds a packet on its way to the NIC queue. Only data
    /// packets are regulated (docs/qjump.md: ACKs and control packets pass).
    #[inline]
    fn host_egress(&mut self, now: Time, ev: &mut EventQueue, pk: &mut Packets, h: NodeId, id: PktId) {
        let nic = self.hosts[h.idx()].nic;
        if let Some(q) = &mut self.qjump {
            let p = pk.get(id);
            if p.kind == PktKind::Data {
                let bytes = p.size as u64 + self.ports[nic.idx()].wire_overhead as u64;
                match q.offer(now, h.idx(), p.class as usize, bytes, id, p.flow.idx(), p.flow_gen) {
                    Verdict::Send => {}
                    Verdict::Drop => return drop_packet(&mut self.ports[nic.idx()], pk, id, DropReason::Policed),
                    Verdict::Held(wake) => {
                        if let Some(t) = wake {
                            ev.schedule(t, Event::HostShaper(h));
                        }
                        return;
                    }
                }
            }
        }
        self.enqueue(now, ev, pk, nic, id);
    }

    /// A host's shaper event: release every held packet that fits now, then wait for the next epoch.
    pub fn on_host_shaper(&mut self, now: Time, ev: &mut EventQueue, pk: &mut Packets, h: NodeId) {
        let nic = self.hosts[h.idx()].nic;
        let overhead = self.ports[nic.idx()].wire_overhead as u64;
        let Some(q) = &mut self.qjump else { return };
        if !q.wake_due(h.idx(), now) {
            return;
        }
        loop {
            let q = self.qjump.as_mut().expect("checked");
            let Some(id) = q.release(now, h.idx(), |i| pk.get(i).size as u64 + overhead) else { break };
            self.enqueue(now, ev, pk, nic, id);
        }
        if let Some(t) = self.qjump.as_mut().expect("checked").rearm(now, h.idx()) {
            ev.schedule(t, Event::HostShaper(h));
        }
    }

    /// Latency of a data packet reaching host `h` over `port` (QJUMP's statistics): from its send time, and
    /// the last switch's delay from the last bit in to the last bit out (the thesis's definition, §3.1).
    #[inline(never)]
    fn record_delivery(&mut self, now: Time, pk: &Packets, port: PortId, id: PktId) {
        let p = pk.get(id);
        let Some(q) = &mut self.qjump else { return };
        if p.kind != PktKind::Data {
            return;
        }
        let pt = &self.ports[port.idx()];
        let st = &mut q.stats[p.class as usize];
        st.latency.record(now.saturating_sub(p.ts));
        let h = self.hosts.len();
        if pt.node.idx() >= h {
            let arrived = p.enq_time.saturating_sub(self.switches[pt.node.idx() - h].delay);
            st.last_hop.record(now.saturating_sub(pt.delay).saturating_sub(arrived));
        }
    }

    pub fn on_host_rx(&mut self, ev: &mut EventQueue, h: NodeId) -> PktId {
        let (id, next) = self.hosts[h.idx()].rx_pipe.pop();
        if let Some(t) = next {
            ev.schedule(t, Event::HostRx(h));
        }
        id
    }

    /// Admission, ECN marking and queueing at an egress port.
    pub fn enqueue(&mut self, now: Time, ev: &mut EventQueue, pk: &mut Packets, port: PortId, id: PktId) {
        let node = self.ports[port.idx()].node;
        let (mut size, mut class, ect) = {
            let p = pk.get(id);
            (p.size as u64, p.class as usize, p.ect)
        };
        let policy = if self.is_host(node) { BufferPolicy::Unlimited } else { self.sw(node).buffer };
        let used = if self.is_host(node) { 0 } else { self.sw(node).used };
        let pt = &mut self.ports[port.idx()];
        // Bytes that leave the buffer to make room (pFabric evicts lower-priority packets).
        let mut evicted_bytes = 0u64;
        if let QueueDisc::PrioFifo(q) = &mut pt.queue {
            if let Some(lim) = pt.trim {
                if q.class_bytes(class) + size > lim && pk.get(id).payload > 0 {
                    pt.stats.trims += 1;
                    (size, class) = trim(pk.get_mut(id));
                }
            }
            let cap = match (pt.limit, policy) {
                (Some(lim), _) | (None, BufferPolicy::PerPort(lim)) => Some(lim),
                _ => None,
            };
            let admit = match (cap, policy) {
                (Some(total), _) => match pt.class_reserve {
                    Some((reserve, classes)) => q.admits_reserved(class, size, total, reserve, classes as usize),
                    None => pt.bytes + size <= total,
                },
                (None, BufferPolicy::Unlimited | BufferPolicy::PerPort(_)) => true,
                (None, BufferPolicy::Shared { total, alpha }) => {
                    used + size <= total && (q.class_bytes(class) + size) as f64 <= alpha * (total - used) as f64
                }
            };
            if !admit {
                drop_packet(pt, pk, id, DropReason::Overflow);
                return;
            }
            // ECN: mark when the class queue seen by the arriving packet already exceeds K (DCTCP's rule).
            if ect && (if pt.ecn_per_port { pt.bytes } else { q.class_bytes(class) }) > pt.ecn_k[class] {
                pk.get_mut(id).ce = true;
                pt.stats.ecn_marks += 1;
            }
            q.push(id, pk.get(id));
        } else {
            match admit_pfabric(pt, pk, id, policy) {
                Some(freed) => evicted_bytes = freed,
                None => return,
            }
        }
        pk.get_mut(id).enq_time = now;
        let nb = pt.bytes + size - evicted_bytes;
        pt.occupancy_changed(now, nb);
        let busy = pt.busy;
        if !self.is_host(node) {
            let sw = self.sw(node);
            sw.used = sw.used + size - evicted_bytes;
        }
        if !busy {
            self.start_tx(now, ev, pk, port);
        }
    }

    fn start_tx(&mut self, now: Time, ev: &mut EventQueue, pk: &mut Packets, port: PortId) {
        let pt = &mut self.ports[port.idx()];
        let Some(id) = pt.queue.pop(pt.paused, pk) else { return };
        let size = pk.get(id).size as u64;
        let nb = pt.bytes - size;
        pt.occupancy_changed(now, nb);
        pt.busy = true;
        pt.tx_start = now;
        let done = now + pt.rate.tx_time(size + pt.wire_overhead as u64);
        let node = pt.node;
        self.tx_current[port.idx()] = Some(id);
        ev.schedule(done, Event::TxDone(port));
        if !self.is_host(node) {
            self.sw(node).used -= size;
        }
    }

    pub fn on_tx_done(&mut self, now: Time, ev: &mut EventQueue, pk: &mut Packets, port: PortId) {
        let id = self.tx_current[port.idx()].take().expect("TxDone without packet");
        self.packet_hops += 1;
        let pt = &mut self.ports[port.idx()];
        pt.busy = false;
        pt.stats.busy_time += now - pt.tx_start;
        pt.stats.tx_packets += 1;
        pt.stats.tx_bytes += pk.get(id).size as u64;
        if !pt.up {
            drop_packet(pt, pk, id, DropReason::LinkDown);
        } else {
            let at = now + pt.delay;
            if pt.wire.push(at, id) {
                ev.schedule(at, Event::WireArrival(port));
            }
        }
        self.start_tx(now, ev, pk, port);
    }

    /// The head of a link's wire arrives at the far end. Returns a delivery when it reached a host transport.
    pub fn on_wire_arrival(&mut self, now: Time, ev: &mut EventQueue, pk: &mut Packets, port: PortId) -> Delivery {
        let pt = &mut self.ports[port.idx()];
        let (id, next) = pt.wire.pop();
        if let Some(t) = next {
            ev.schedule(t, Event::WireArrival(port));
        }
        if pt.corrupt_p > 0.0 && self.port_rng[port.idx()].bernoulli(pt.corrupt_p) {
            drop_packet(pt, pk, id, DropReason::Corrupt);
            return None;
        }
        let peer = pt.peer;
        if self.is_host(peer) {
            if self.qjump.is_some() {
                self.record_delivery(now, pk, port, id);
            }
            let host = &mut self.hosts[peer.idx()];
            if host.rx_delay.0 == 0 {
                return Some((peer, id));
            }
            if host.rx_pipe.push(now + host.rx_delay, id) {
                ev.schedule(now + host.rx_delay, Event::HostRx(peer));
            }
            return None;
        }
        self.switch_ingress(now, ev, pk, peer, id);
        None
    }

    fn switch_ingress(&mut self, now: Time, ev: &mut EventQueue, pk: &mut Packets, s: NodeId, id: PktId) {
        let lb = self.lb;
        let sw = self.sw(s);
        let p = pk.get_mut(id);
        p.hops = p.hops.saturating_add(1);
        let cands = sw.routes.candidates(p.dst);
        let out = match cands.len() {
            0 => unreachable!("routing tables cover every host"),
            1 => cands[0],
            n => match lb {
                Lb::Ecmp => cands[(mix32(p.hash ^ sw.salt) % n as u32) as usize],
                Lb::Spray => cands[sw.rng.below(n as u32) as usize],
            },
        };
        p.out_port = out;
        let delay = sw.delay;
        if delay.0 == 0 {
            self.enqueue(now, ev, pk, out, id);
        } else if sw.fwd.push(now + delay, id) {
            ev.schedule(now + delay, Event::SwitchForward(s));
        }
    }

    pub fn on_switch_forward(&mut self, now: Time, ev: &mut EventQueue, pk: &mut Packets, s: NodeId) {
        let (id, next) = self.sw(s).fwd.pop();
        if let Some(t) = next {
            ev.schedule(t, Event::SwitchForward(s));
        }
        let out = pk.get(id).out_port;
        self.enqueue(now, ev, pk, out, id);
    }

    /// Set a link's state in both directions (down drops what is transmitted on it; degrade sets corruption).
    pub fn set_link(&mut self, a: NodeId, b: NodeId, up: Option<bool>, corrupt: Option<f64>) -> bool {
        let mut found = false;
        for pt in self.ports.iter_mut() {
            if (pt.node == a && pt.peer == b) || (pt.node == b && pt.peer == a) {
                found = true;
                if let Some(u) = up {
                    pt.up = u;
                }
                if let Some(c) = corrupt {
                    pt.corrupt_p = c;
                }
            }
        }
        found
    }

    /// Every packet currently held by the network (queues, transmitters, wires, delay lines).
    pub fn packets_in_network(&self) -> usize {
        let mut n = self.tx_current.iter().filter(|x| x.is_some()).count();
        for p in &self.ports {
            n += p.queue.packets().count() + p.wire.len();
        }
        for h in &self.hosts {
            n += h.tx_pipe.len() + h.rx_pipe.len();
        }
        for s in &self.switches {
            n += s.fwd.len();
        }
        n + self.qjump.as_ref().map_or(0, |q| q.held_packets())
    }

    /// The canonical shortest path from `src` to `dst` as a list of ports (first candidate at every switch);
    /// used for ideal completion times. All equal-cost paths of the built-in topologies have the same rates.
    pub fn path(&self, src: NodeId, dst: NodeId) -> Vec<PortId> {
        let mut out = vec![self.hosts[src.idx()].nic];
        let mut node = self.ports[out[0].idx()].peer;
        while node != dst {
            let s = &self.switches[node.idx() - self.hosts.len()];
            let p = s.routes.candidates(dst)[0];
            out.push(p);
            node = self.ports[p.idx()].peer;
        }
        out
    }

    /// Forwarding delay of a node (0 for hosts).
    pub fn node_delay(&self, n: NodeId) -> Time {
        if self.is_host(n) {
            Time::ZERO
        } else {
            self.switches[n.idx() - self.hosts.len()].delay
        }
    }
}

use LoadBalance as Lb;

/// pFabric admission (kept out of line so the FIFO path stays small): queue `id` or drop it, drop whatever
/// it evicts, and return the evicted bytes (None when `id` itself was dropped).
#[inline(never)]
fn admit_pfabric(pt: &mut Port, pk: &mut Packets, id: PktId, policy: BufferPolicy) -> Option<u64> {
    let QueueDisc::PFabric(subs) = &mut pt.queue else { unreachable!("called for pFabric ports") };
    let limit = pt.limit.or(match policy {
        BufferPolicy::PerPort(l) => Some(l),
        _ => None,
    });
    let sub = (pk.get(id).class as usize).min(subs.len() - 1);
    let q = &mut subs[sub];
    if !q.admit(id, limit, pk) {
        drop_packet(pt, pk, id, DropReason::Overflow);
        return None;
    }
    let mut victims = std::mem::take(&mut q.evicted);
    let mut freed = 0;
    for v in victims.drain(..) {
        freed += pk.get(v).size as u64;
        drop_packet(pt, pk, v, DropReason::Overflow);
    }
    if let QueueDisc::PFabric(subs) = &mut pt.queue {
        subs[sub].evicted = victims; // keep the capacity
    }
    Some(freed)
}

/// NDP's cut payload: the packet keeps its header and jumps to class 0, where the receiver learns of the
/// loss within about one RTT instead of after a timeout. Returns the header's size and class.
#[inline(never)]
fn trim(p: &mut Packet) -> (u64, usize) {
    p.size -= p.payload;
    p.payload = 0;
    p.class = 0;
    (p.size as u64, 0)
}

/// Every drop goes through here: the port's per-reason counter and the arena's. (Drop notification to the
/// sender, FastLane-style, hooks in at this point.)
#[inline]
fn drop_packet(pt: &mut Port, pk: &mut Packets, id: PktId, why: DropReason) {
    match why {
        DropReason::Overflow => pt.stats.drops_overflow += 1,
        DropReason::LinkDown => pt.stats.drops_link_down += 1,
        DropReason::Corrupt => pt.stats.drops_corrupt += 1,
        DropReason::Policed => pt.stats.drops_policed += 1,
    }
    pk.drop_pkt(id);
}

#[inline]
fn mix32(mut x: u32) -> u32 {
    x ^= x >> 16;
    x = x.wrapping_mul(0x7feb_352d);
    x ^= x >> 15;
    x = x.wrapping_mul(0x846c_a68b);
    x ^ (x >> 16)
}

/// pFabric port queues.
#[derive(Clone, Copy, Debug)]
pub struct PFabricParams {
    /// Strict priority only: starvation prevention off (the paper's Fig. 16 ablation).
    pub strict: bool,
    /// Buffers per port served by strict priority, each with the full per-port limit (2 for pFabric-EDF).
    pub classes: u8,
}

/// Parameters of the datapath that apply to every port of a kind.
#[derive(Clone, Debug)]
pub struct NetParams {
    pub host_tx_delay: Time,
    pub host_rx_delay: Time,
    /// Byte limit of host NIC queues (None = unlimited). NICs mark ECN like switch ports.
    pub nic_limit: Option<u64>,
    pub buffer: BufferPolicy,
    pub ecn_k: [u64; CLASSES],
    /// ECN compares K with the whole port's queue (PIAS) instead of the packet's class queue (DCTCP).
    pub ecn_per_port: bool,
    /// NDP's cut payload at switch ports: a data packet that would take its class queue past this many
    /// bytes is trimmed to its header and queued in class 0 (None = drop on overflow as usual).
    pub trim: Option<u64>,
    pub lb: LoadBalance,
    /// pFabric queues on every port (NICs included) instead of priority FIFOs.
    pub pfabric: Option<PFabricParams>,
    /// Per-port FIFO buffers: (bytes, n) reserves bytes for each of the first n classes (see `Port`).
    pub class_reserve: Option<(u64, u8)>,
    /// Bytes per packet that take wire time but no buffer space (preamble, inter-frame gap).
    pub wire_overhead: u32,
    pub seed: u64,
}

impl Network {
    /// Instantiate a topology.
    pub fn build(spec: &topology::TopologySpec, prm: &NetParams) -> Result<Network, String> {
        let h = spec.hosts as usize;
        let n = h + spec.switches.len();
        let mut adj: Vec<Vec<(PortId, NodeId)>> = vec![Vec::new(); n];
        let mut ports = Vec::new();
        let mut port_rng = Vec::new();
        for l in &spec.links {
            for (a, b) in [(l.a, l.b), (l.b, l.a)] {
                if a.idx() >= n || b.idx() >= n {
                    return Err(format!("link {}–{} names a node that does not exist", a.0, b.0));
                }
                let id = PortId(ports.len() as u32);
                let is_sw = a.idx() >= h;
                ports.push(Port {
                    node: a,
                    peer: b,
                    rate: l.rate,
                    delay: l.delay,
                    up: true,
                    corrupt_p: 0.0,
                    queue: match prm.pfabric {
                        Some(pf) => QueueDisc::PFabric((0..pf.classes).map(|_| PFabricQueue::new(pf.strict)).collect()),
                        None => QueueDisc::PrioFifo(PrioFifo::default()),
                    },
                    bytes: 0,
                    limit: if is_sw { None } else { prm.nic_limit },
                    class_reserve: prm.class_reserve,
                    ecn_k: prm.ecn_k,
                    ecn_per_port: prm.ecn_per_port,
                    trim: if is_sw { prm.trim } else { None },
                    busy: false,
                    tx_start: Time::ZERO,
                    paused: 0,
                    wire: Pipe::default(),
                    wire_overhead: prm.wire_overhead,
                    stats: Default::default(),
                });
                port_rng.push(Rng::new(prm.seed, "link-corruption", id.0 as u64));
                adj[a.idx()].push((id, b));
            }
        }
        let mut hosts = Vec::with_capacity(h);
        for (i, a) in adj.iter().take(h).enumerate() {
            match a.as_slice() {
                [(p, _)] => hosts.push(Host {
                    nic: *p,
                    tx_delay: prm.host_tx_delay,
                    rx_delay: prm.host_rx_delay,
                    tx_pipe: Pipe::default(),
                    rx_pipe: Pipe::default(),
                }),
                _ => return Err(format!("host {i} must have exactly one link, has {}", a.len())),
            }
        }
        let tables = routing::build_tables(&adj, h)
            .map_err(|(s, d)| format!("host {} is unreachable from switch {}", d.0, spec.switches[s.idx() - h].name))?;
        let switches = spec
            .switches
            .iter()
            .zip(tables.into_iter().skip(h))
            .enumerate()
            .map(|(i, (s, routes))| Switch {
                name: s.name.clone(),
                ports: adj[h + i].iter().map(|x| x.0).collect(),
                delay: s.delay,
                fwd: Pipe::default(),
                routes,
                buffer: prm.buffer,
                used: 0,
                rng: Rng::new(prm.seed, "switch-spray", i as u64),
                salt: mix32(i as u32 ^ 0x5bd1_e995),
            })
            .collect();
        let np = ports.len();
        Ok(Network {
            hosts,
            switches,
            ports,
            tx_current: vec![None; np],
            port_rng,
            lb: prm.lb,
            packet_hops: 0,
            qjump: None,
        })
    }
}
