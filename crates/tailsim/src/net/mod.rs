//! The network: hosts with NIC ports, output-queued store-and-forward switches, full-duplex links, and the
//! datapath that moves packets between them.
//!
//! A packet's life, one stage per file (docs/architecture.md draws it with its hooks):
//!
//! | stage | file | steps |
//! |---|---|---|
//! | host | `host.rs` | transport → host transmit delay → regulator (QJUMP) → NIC queue; arrival → host receive delay → transport or sink |
//! | egress | `egress.rs` | admission (hook `ADMIT`), ECN, queue → dequeue (hook `DEQUEUE`) → serialization (fast path: onto the wire at once; slow path: `TxDone`) |
//! | link | `link.rs` | end of serialization (hook `TRANSMIT`) → propagation (`WireArrival`) → corruption → arrival (hook `ARRIVE`) |
//! | switch | `switch.rs` | ingress: routing, load balancing (hook `INGRESS`) → forwarding delay → egress queue |
//!
//! This file holds the network's parts, their construction, the holders of live packets (for the ledger),
//! mechanism installation and the outbox's drain; `prefetch.rs`, where the run loop's prefetch chain finds
//! a coming event's records (sim/ahead.rs). Mechanisms (`mech/`) act only through the hooks
//! (`hooks.rs`); every packet is accounted for by the ledger (`ledger.rs`).

pub mod egress;
pub mod hooks;
pub mod host;
pub mod lazy;
pub mod ledger;
pub mod link;
pub mod mech;
pub mod nic_queue;
pub mod packet;
pub mod partition;
pub mod pfabric;
pub mod pinned;
pub mod port;
mod prefetch;
pub mod queue;
pub mod regulator;
pub mod routing;
pub mod switch;
#[cfg(test)]
mod tests;
pub mod topology;

use crate::engine::{EventQueue, Pipe, Rng};
use hooks::{Effect, HookCtx, HookSet, Outbox};
use mech::Mech;
use pfabric::PFabricQueue;
use port::{DropReason, Port};
use queue::{PrioFifo, QueueDisc, CLASSES};

pub use egress::BufferPolicy;
pub use host::{Host, HostSink};
pub use ledger::Packets;
pub use switch::{LoadBalance, Switch};

use crate::units::{NodeId, PathId, PktId, PortId, Time};

pub struct Network {
    pub hosts: Vec<Host>,
    pub switches: Vec<Switch>,
    pub ports: Vec<Port>,
    /// Current packet being serialized by each port, and its size when serialization began.
    tx_current: Vec<Option<(PktId, u32)>>,
    port_rng: Vec<Rng>,
    pub lb: LoadBalance,
    /// Packet transmissions completed over all links (the throughput metric "packet-hops").
    pub packet_hops: u64,
    /// QJUMP's per-host, per-class rate limiters in front of the NIC queues (docs/qjump.md).
    pub qjump: Option<regulator::Regulator>,
    /// Installed mechanisms; a port's `hooks` say at which hook points some of them act on it.
    pub mechs: Vec<Mech>,
    /// Side effects of the current event, applied by `drain`.
    pub out: Outbox,
    /// Re-converge routes this long after a link changes state (None: routes never change).
    pub reroute: Option<Time>,
    /// Paths that flows are pinned to (`net/pinned.rs`).
    pub pins: pinned::PinnedPaths,
    /// Every switch's routes (`net/routing.rs`).
    pub routes: routing::Routes,
    /// The routes of the healthy fabric, kept once routes first re-converge (for ideal completion times).
    healthy: Option<routing::Routes>,
    /// Where a host NIC's order sits in its port's queue (`QueueDisc::nic_offset`), for the deep prefetch
    /// chain's stages of a host's NIC (`prefetch_arrival_nic`, `prefetch_host_sending`); None (no such
    /// stages) when no NIC has an order of its own: measured with NDP's round-robin NICs only
    /// (docs/performance-log.md, change 46).
    nic_offset: Option<usize>,
    /// Queue heads to refill at the next event (`queue::HeadRefills`).
    pub refills: queue::HeadRefills,
    /// What the deep prefetch chain loads of a queue: the lines that hold every class of the packets whose
    /// egress it has predicted so far (`queue::lines_through`; 1 to 3). Lines that no hop reads delay those
    /// it does (docs/performance-log.md, changes 43 and 48). Kept by the chain itself, which takes `&self`,
    /// so that no other path pays for it (an atomic only to keep `Network` `Sync`; relaxed, a plain load
    /// and store).
    queue_lines: std::sync::atomic::AtomicU8,
}

/// What the datapath hands back to the simulation: a packet that reached a host.
pub type Delivery = Option<(NodeId, PktId)>;

impl Network {
    #[inline]
    /// A node as configurations and results name it: "h3" for a host, else the switch's name.
    pub fn node_name(&self, n: NodeId) -> String {
        match n.idx().checked_sub(self.n_hosts()) {
            None => format!("h{}", n.0),
            Some(i) => self.switches[i].name.clone(),
        }
    }

    pub fn n_hosts(&self) -> usize {
        self.hosts.len()
    }
    #[inline]
    pub fn is_host(&self, n: NodeId) -> bool {
        n.idx() < self.hosts.len()
    }
    /// The index (in `switches`) of the switch called `name`.
    pub fn switch_named(&self, name: &str) -> Option<usize> {
        self.switches.iter().position(|s| s.name == name)
    }
    #[inline]
    fn sw(&mut self, n: NodeId) -> &mut Switch {
        let h = self.hosts.len();
        &mut self.switches[n.idx() - h]
    }

    /// Install a mechanism on `ports`: its hook points are set on each of them. The ingress hook of a switch
    /// port is tested where packets arrive through it, on the link in the other direction (whose flags the
    /// wire arrival has loaded already), so its bit goes on the reverse port.
    pub fn install(&mut self, m: Mech, ports: impl IntoIterator<Item = PortId>) {
        assert!(self.mechs.len() < u8::MAX as usize, "too many mechanisms");
        let hooks = m.hooks();
        for p in ports {
            let pt = &mut self.ports[p.idx()];
            pt.hooks = pt.hooks | hooks.without(HookSet::INGRESS);
            if hooks.has(HookSet::INGRESS) {
                let r = pt.reverse;
                self.ports[r.idx()].hooks = self.ports[r.idx()].hooks | HookSet::INGRESS;
            }
        }
        self.mechs.push(m);
    }

    /// Every switch's ports.
    pub fn switch_ports(&self) -> impl Iterator<Item = PortId> + '_ {
        self.switches.iter().flat_map(|s| s.ports.iter().copied())
    }

    /// Call `f` on every mechanism that implements hook `h`, with a context of its own.
    #[inline(never)]
    fn each_mech<T>(
        &mut self,
        now: Time,
        ev: &mut EventQueue,
        pk: &mut Packets,
        h: HookSet,
        mut f: impl FnMut(&mut Mech, &mut HookCtx) -> Option<T>,
    ) -> Option<T> {
        let hosts = self.hosts.len();
        for (i, m) in self.mechs.iter_mut().enumerate() {
            if !m.hooks().has(h) {
                continue;
            }
            let mut c = HookCtx {
                now,
                ev: &mut *ev,
                pk: &mut *pk,
                ports: &self.ports,
                out: &mut self.out,
                hosts,
                mech: i as u8,
            };
            if let Some(v) = f(m, &mut c) {
                return Some(v);
            }
        }
        None
    }

    /// Let every mechanism set its first timers (a traffic source's first packet), before the run starts.
    pub fn start_mechanisms(&mut self, ev: &mut EventQueue, pk: &mut Packets) {
        let hosts = self.hosts.len();
        for (i, m) in self.mechs.iter_mut().enumerate() {
            let mut c =
                HookCtx { now: Time::ZERO, ev, pk, ports: &self.ports, out: &mut self.out, hosts, mech: i as u8 };
            m.start(&mut c);
        }
    }

    /// Take from `other` (a copy of this fabric that ran another part of a parallel run, sim/parallel.rs)
    /// the state of the nodes `theirs` accepts: hosts, switches, their ports (with each port's packet in
    /// transmission and random stream), each mechanism's state at them (`Hooks::take_part`); and add its
    /// packet-hops. What other parts' copies of these hold is left behind: the merged fabric is for results,
    /// not for running on.
    pub fn take_part(&mut self, other: &mut Network, theirs: impl Fn(NodeId) -> bool) {
        let h = self.hosts.len();
        for (i, (a, b)) in self.hosts.iter_mut().zip(&mut other.hosts).enumerate() {
            if theirs(NodeId(i as u32)) {
                std::mem::swap(a, b);
            }
        }
        for (i, (a, b)) in self.switches.iter_mut().zip(&mut other.switches).enumerate() {
            if theirs(NodeId((h + i) as u32)) {
                std::mem::swap(a, b);
            }
        }
        for i in 0..self.ports.len() {
            if theirs(self.ports[i].node) {
                std::mem::swap(&mut self.ports[i], &mut other.ports[i]);
                std::mem::swap(&mut self.tx_current[i], &mut other.tx_current[i]);
                std::mem::swap(&mut self.port_rng[i], &mut other.port_rng[i]);
            }
        }
        for (a, b) in self.mechs.iter_mut().zip(&mut other.mechs) {
            a.take_part(b, &self.ports, &theirs);
        }
        if let (Some(a), Some(b)) = (&mut self.qjump, &mut other.qjump) {
            a.take_part(b, |i| theirs(NodeId(i as u32)));
        }
        self.packet_hops += other.packet_hops;
    }

    /// Packet `id` leaves over port `at` for another part of a parallel run: the word a mechanism of the
    /// port keeps about it for the far end (`Hooks::hand_out`; one mechanism per port has one, or none).
    pub fn hand_out(&mut self, at: PortId, id: PktId) -> u64 {
        if self.ports[at.idx()].hooks.is_empty() {
            return 0;
        }
        self.mechs.iter_mut().fold(0, |w, m| w | m.hand_out(at, id))
    }

    /// Packet `id` came in over port `at` from another part, with the word `hand_out` gave there.
    pub fn take_in(&mut self, at: PortId, id: PktId, word: u64) {
        if !self.ports[at.idx()].hooks.is_empty() {
            self.mechs.iter_mut().for_each(|m| m.take_in(at, id, word));
        }
    }

    /// The link between `a` and `b` changed state: every mechanism hears of it, for both directions — in a
    /// part of a parallel run, for the directions its own ports send (`mine`: what a switch of another part
    /// makes of it is that part's).
    pub fn link_changed(
        &mut self,
        now: Time,
        ev: &mut EventQueue,
        pk: &mut Packets,
        a: NodeId,
        b: NodeId,
        mine: Option<&[bool]>,
    ) {
        let hosts = self.hosts.len();
        for p in 0..self.ports.len() {
            let pt = &self.ports[p];
            if !((pt.node == a && pt.peer == b) || (pt.node == b && pt.peer == a)) || mine.is_some_and(|m| !m[p]) {
                continue;
            }
            let up = pt.up;
            for (i, m) in self.mechs.iter_mut().enumerate() {
                let mut c = HookCtx {
                    now,
                    ev: &mut *ev,
                    pk: &mut *pk,
                    ports: &self.ports,
                    out: &mut self.out,
                    hosts,
                    mech: i as u8,
                };
                m.on_link(&mut c, PortId(p as u32), up);
            }
        }
    }

    /// Tables the mechanisms keep (name, columns), for the run's results directory.
    pub fn mechanism_tables(&self) -> Vec<(&'static str, Vec<crate::metrics::output::Column>)> {
        self.mechs.iter().filter_map(|m| m.table()).collect()
    }

    /// Every mechanism's own files (packet captures), written into `dir`: (relative path, bytes).
    pub fn write_mechanism_files(&self, dir: &std::path::Path) -> std::io::Result<Vec<(String, u64)>> {
        let mut out = Vec::new();
        for m in &self.mechs {
            out.extend(m.files(dir)?);
        }
        Ok(out)
    }

    /// A mechanism's timer fired.
    pub fn on_mech_timer(&mut self, now: Time, ev: &mut EventQueue, pk: &mut Packets, mech: u8, key: u32) {
        let hosts = self.hosts.len();
        let mut c = HookCtx { now, ev, pk, ports: &self.ports, out: &mut self.out, hosts, mech };
        self.mechs[mech as usize].on_timer(&mut c, key);
    }

    /// Apply the outbox's effects in order (effects may add more). Packets that reach a host are appended to
    /// `delivered`, for the simulation to hand to the transport or a sink.
    pub fn drain(&mut self, now: Time, ev: &mut EventQueue, pk: &mut Packets, delivered: &mut Vec<(NodeId, PktId)>) {
        while let Some(e) = self.out.pop() {
            match e {
                Effect::Drop { port, id, why } => {
                    self.ports[port.idx()].stats.drops[why as usize] += 1;
                    if self.ports[port.idx()].hooks.has(HookSet::DROP) {
                        self.each_mech(now, ev, pk, HookSet::DROP, |m, c| {
                            m.on_drop(c, port, id, why);
                            None::<()>
                        });
                    }
                    pk.drop_pkt(id);
                }
                Effect::Enqueue { port, id } => self.admit::<false>(now, ev, pk, port, id),
                Effect::Forward { node, id } => {
                    if self.is_host(node) {
                        let nic = self.hosts[node.idx()].nic;
                        self.admit::<false>(now, ev, pk, nic, id);
                    } else {
                        self.switch_ingress(now, ev, pk, node, PortId::NONE, HookSet::NONE, id);
                    }
                }
                Effect::Frame { port, id } | Effect::Express { port, id } => {
                    let pt = &mut self.ports[port.idx()];
                    pt.ctl.push_back(id);
                    pt.hooks = pt.hooks | HookSet::FRAMES;
                    if matches!(e, Effect::Frame { .. }) {
                        pt.hooks = pt.hooks | HookSet::LINK_LOCAL;
                    }
                    self.kick(now, ev, pk, port);
                }
                Effect::Deliver { port, id } => {
                    let hooks = self.ports[port.idx()].hooks;
                    if let Some(d) = self.enter_node(now, ev, pk, port, hooks, id) {
                        delivered.push(d);
                    }
                }
                Effect::Pause { port, classes } => self.ports[port.idx()].paused |= classes,
                Effect::Resume { port, classes } => self.resume(now, ev, pk, port, classes),
                Effect::Kick { port } => self.kick(now, ev, pk, port),
                Effect::Release { port } => self.release(now, ev, pk, port),
            }
        }
    }

    /// Call `f` on every packet the network holds: queues, control frames, transmitters, wires, delay lines,
    /// mechanisms and the outbox. (QJUMP's held packets are counted by `regulated`.)
    pub fn for_each_held(&self, mut f: impl FnMut(PktId)) {
        self.tx_current.iter().flatten().for_each(|&(id, _)| f(id));
        for p in &self.ports {
            p.queue.packets().for_each(&mut f);
            p.ctl.iter().for_each(|&id| f(id));
            p.wire.iter().for_each(&mut f);
        }
        for h in &self.hosts {
            h.tx_pipe.iter().chain(h.rx_pipe.iter()).for_each(&mut f);
        }
        for s in &self.switches {
            s.fwd.iter().for_each(&mut f);
        }
        for m in &self.mechs {
            m.held(&mut f);
        }
        self.out.packets().for_each(f);
    }

    /// Packets held by host regulators (QJUMP's shapers; always transports' packets).
    pub fn regulated(&self) -> usize {
        self.qjump.as_ref().map_or(0, |q| q.held_packets())
    }

    /// Every packet currently held by the network.
    pub fn packets_in_network(&self) -> usize {
        let mut n = self.regulated();
        self.for_each_held(|_| n += 1);
        n
    }

    /// Each mechanism's counters, by name (summary.json's `mechanisms`).
    pub fn mechanism_summaries(&self) -> Vec<(&'static str, serde_json::Value)> {
        self.mechs.iter().map(|m| (m.name(), m.summary())).collect()
    }

    /// The canonical shortest path from `src` to `dst` as a list of ports (first candidate at every switch) on
    /// the healthy fabric; used for ideal completion times. All equal-cost paths of the built-in topologies
    /// have the same rates.
    pub fn path(&self, src: NodeId, dst: NodeId) -> Vec<PortId> {
        let mut out = vec![self.hosts[src.idx()].nic];
        let mut node = self.ports[out[0].idx()].peer;
        while node != dst {
            let p = self.healthy_routes().candidates(node.idx() - self.hosts.len(), dst)[0];
            out.push(p);
            node = self.ports[p.idx()].peer;
        }
        out
    }

    /// The propagation delay of the path from host `src` to host `dst` (`pin`, or the healthy fabric's first
    /// choices): how long a message between the two hosts takes (`Ctx::tell`). At least the lookahead of
    /// any cut that puts them in two parts, as the path crosses a link between those parts.
    pub fn propagation(&self, src: NodeId, dst: NodeId, pin: PathId) -> Time {
        Time(self.path_of(src, dst, pin).iter().map(|p| self.ports[p.idx()].delay.0).sum())
    }

    /// (port, neighbour) for every egress port of every node that is up, in port order: the graph routes are
    /// computed on.
    pub fn adjacency(&self) -> Vec<Vec<(PortId, NodeId)>> {
        let mut adj = vec![Vec::new(); self.hosts.len() + self.switches.len()];
        for (i, p) in self.ports.iter().enumerate() {
            if p.up {
                adj[p.node.idx()].push((PortId(i as u32), p.peer));
            }
        }
        adj
    }

    /// The routes of the fabric before any link changed state.
    pub fn healthy_routes(&self) -> &routing::Routes {
        self.healthy.as_ref().unwrap_or(&self.routes)
    }

    /// The crossbar speedup of a CIOQ switch (net/mech/cioq.rs), None for hosts and output-queued switches.
    pub fn crossbar_speedup(&self, n: NodeId) -> Option<u64> {
        if self.is_host(n) {
            None
        } else {
            self.switches[n.idx() - self.hosts.len()].crossbar.map(|k| k as u64)
        }
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

/// Drop a packet at `pt`: count it and free it at once, or, when the port has drop hooks, leave both to
/// `Effect::Drop` so that the hooks see the packet first. Takes the port and the outbox apart so it can be
/// called while a port is borrowed.
#[inline]
pub(crate) fn drop_at(pt: &mut Port, port: PortId, pk: &mut Packets, out: &mut Outbox, id: PktId, why: DropReason) {
    if pt.hooks.has(HookSet::DROP) {
        out.push(Effect::Drop { port, id, why });
    } else {
        pt.stats.drops[why as usize] += 1;
        pk.drop_pkt(id);
    }
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
    /// Packets a host's receive path processes at once (0 = no limit: `host_rx_delay` is a pure delay).
    pub host_rx_parallel: u32,
    /// Byte limit of host NIC queues (None = unlimited). NICs mark ECN like switch ports.
    pub nic_limit: Option<u64>,
    /// The order NICs send in when not by strict priority (net/nic_queue.rs).
    pub nic_order: Option<nic_queue::NicOrder>,
    pub buffer: BufferPolicy,
    pub ecn_k: [u64; CLASSES],
    /// ECN compares K with the whole port's queue (PIAS) instead of the packet's class queue (DCTCP).
    pub ecn_mode: crate::net::port::EcnMode,
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

impl Default for NetParams {
    /// Unlimited buffers, no ECN, no delays, ECMP, FIFO queues.
    fn default() -> NetParams {
        NetParams {
            host_tx_delay: Time::ZERO,
            host_rx_delay: Time::ZERO,
            host_rx_parallel: 0,
            nic_limit: None,
            nic_order: None,
            buffer: BufferPolicy::Unlimited,
            ecn_k: [u64::MAX; CLASSES],
            ecn_mode: crate::net::port::EcnMode::PerClass,
            trim: None,
            lb: LoadBalance::Ecmp,
            pfabric: None,
            class_reserve: None,
            wire_overhead: 0,
            seed: 1,
        }
    }
}

impl Network {
    /// Instantiate a topology.
    pub fn build(spec: &topology::TopologySpec, prm: &NetParams) -> Result<Network, String> {
        let h = spec.hosts as usize;
        let n = h + spec.switches.len();
        let mut adj: Vec<Vec<(PortId, NodeId)>> = vec![Vec::new(); n];
        // Sized once: a 6,144-host fabric has 36,864 ports, and growing by doubling would hold up to three
        // times that while copying.
        let mut ports = Vec::with_capacity(2 * spec.links.len());
        let mut port_rng = Vec::with_capacity(2 * spec.links.len());
        for l in &spec.links {
            for (dir, (a, b)) in [(l.a, l.b), (l.b, l.a)].into_iter().enumerate() {
                if a.idx() >= n || b.idx() >= n {
                    return Err(format!("link {}–{} names a node that does not exist", a.0, b.0));
                }
                let id = PortId(ports.len() as u32);
                // The two directions of a link are created one after the other.
                let reverse = if dir == 0 { PortId(id.0 + 1) } else { PortId(id.0 - 1) };
                let is_sw = a.idx() >= h;
                ports.push(Port {
                    node: a,
                    peer: b,
                    reverse,
                    hooks: HookSet::NONE,
                    rate: l.rate,
                    ps_per_byte: crate::units::PsPerByte::of(l.rate),
                    delay: l.delay,
                    up: true,
                    corrupt_p: 0.0,
                    queue: match (prm.pfabric, prm.nic_order) {
                        (Some(pf), _) => {
                            QueueDisc::PFabric((0..pf.classes).map(|_| PFabricQueue::new(pf.strict)).collect())
                        }
                        (None, Some(order)) if !is_sw => {
                            QueueDisc::Ordered(PrioFifo::default(), nic_queue::NicQueue::new(order))
                        }
                        (None, _) => QueueDisc::PrioFifo(PrioFifo::default()),
                    },
                    bytes: 0,
                    limit: port::Threshold::new(if is_sw { None } else { prm.nic_limit }),
                    class_reserve: port::ClassReserve::new(prm.class_reserve),
                    ecn_k: prm.ecn_k,
                    ecn_mode: prm.ecn_mode,
                    trim: port::Threshold::new(if is_sw { prm.trim } else { None }),
                    busy: false,
                    tx_start: Time::ZERO,
                    busy_until: Time::ZERO,
                    tx_pending: false,
                    defer: port::Defer::Never,
                    paused: 0,
                    ctl: Default::default(),
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
                    rx_servers: vec![Time::ZERO; prm.host_rx_parallel as usize],
                    rx_turn: 0,
                    tx_pipe: Pipe::default(),
                    rx_pipe: Pipe::default(),
                    sink: HostSink::default(),
                }),
                _ => return Err(format!("host {i} must have exactly one link, has {}", a.len())),
            }
        }
        let routes = routing::build(&adj, h, true).map_err(|e| match e {
            routing::RouteError::Unreachable { switch, host } => {
                format!("host {} is unreachable from switch {}", host.0, spec.switches[switch.idx() - h].name)
            }
            routing::RouteError::TooManyLeaves(n) => {
                format!("{n} switches have hosts; at most {} can", routing::MAX_LEAVES)
            }
        })?;
        let switches = spec
            .switches
            .iter()
            .enumerate()
            .map(|(i, s)| Switch::new(s, i, adj[h + i].iter().map(|x| x.0).collect(), prm))
            .collect();
        let np = ports.len();
        let ordered = ports.iter().any(|p| matches!(p.queue, QueueDisc::Ordered(..)));
        Ok(Network {
            hosts,
            switches,
            ports,
            tx_current: vec![None; np],
            port_rng,
            lb: prm.lb,
            packet_hops: 0,
            qjump: None,
            mechs: Vec::new(),
            out: Outbox::default(),
            reroute: None,
            pins: Default::default(),
            routes,
            healthy: None,
            nic_offset: ordered.then(QueueDisc::nic_offset),
            refills: queue::HeadRefills::default(),
            queue_lines: std::sync::atomic::AtomicU8::new(queue::lines_through(0)),
        })
    }
}
