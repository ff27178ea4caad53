//! From a parsed config to a ready-to-run `Experiment`: defaults, validation of every value that the schema
//! cannot check by type, and construction of the network, transport and generators.

use super::schema::*;
use super::{ConfigError, KeyPath, Source};
use crate::metrics::Framing;
use crate::net::nic_queue::NicOrder;
use crate::net::port::{ClassReserve, EcnMode};
use crate::net::queue::CLASSES;
use crate::net::topology::{fat_tree_counts, FatTree, LeafSpine, LinkSpec, SwitchSpec, Tier, TopologySpec};
use crate::net::{BufferPolicy, LoadBalance, NetParams, Network, PFabricParams};
use crate::sim::{Fault, StopAt, World};
use crate::traffic::{Generator, Sizes};
use crate::units::{BitsPerSec, NodeId, Time};
use std::path::Path;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputFormat {
    Parquet,
    Csv,
}

/// A built experiment: the world ready to run, plus how to stop and what to write.
pub struct Experiment {
    pub name: String,
    pub seed: u64,
    pub world: World,
    pub stop: StopAt,
    pub out_dir: Option<String>,
    pub format: OutputFormat,
    pub buckets: Vec<u64>,
    pub warmup: Time,
    /// pFabric's flow-level SRPT Ideal instead of a packet-level run (`transport.kind = "ideal"`).
    pub flow_level: bool,
    /// The fully resolved configuration (preset and overrides applied), echoed into summary.json.
    pub resolved: toml::Table,
    /// Every file the configuration references (CDFs, traces, topology and htsim files), in the order read:
    /// their contents are part of the run's id.
    pub inputs: Vec<std::path::PathBuf>,
    /// What will go wrong though the configuration is valid (e.g. a host cut off for good with no
    /// `stop.time`): `check` and `run` print them.
    pub warnings: Vec<String>,
}

pub(super) type R<T> = Result<T, ConfigError>;

pub(super) struct Ctx<'a> {
    src: &'a Source,
    /// The files referenced so far (see `Experiment::inputs`).
    inputs: std::cell::RefCell<Vec<std::path::PathBuf>>,
    /// The run has a stop condition (`stop.time` or `stop.max_events`): a workload too large to finish is
    /// then cut, not refused.
    pub(super) stopped: bool,
    /// The flow-level Ideal (`transport.kind = "ideal"`), which holds every flow in memory at once.
    pub(super) flow_level: bool,
}

impl Ctx<'_> {
    pub(super) fn err(&self, key: &str, msg: impl Into<String>) -> ConfigError {
        self.src.error(&KeyPath::parse(key), msg)
    }
    /// An optional duration that must not be zero when given.
    pub(super) fn positive(&self, key: &str, d: Option<Time>) -> R<Option<Time>> {
        match d {
            Some(Time::ZERO) => Err(self.err(key, "must be positive")),
            d => Ok(d),
        }
    }
    pub(super) fn need<T: Clone>(&self, v: &Option<T>, key: &str, what: &str) -> R<T> {
        v.clone().ok_or_else(|| self.err(key, format!("missing: expected {what}")))
    }
    /// A referenced file's path (relative ones from the experiment file's directory), recorded as an input.
    pub(super) fn path(&self, p: &str) -> std::path::PathBuf {
        let p = Path::new(p);
        let p = if p.is_absolute() { p.to_path_buf() } else { self.src.base_dir.join(p) };
        self.inputs.borrow_mut().push(p.clone());
        p
    }
}

/// Reject keys that are set but mean nothing for the chosen kind (a typo across kinds must not pass).
pub(super) fn only_applicable(c: &Ctx, table: &str, kind: &str, set: &[(&str, bool)], allowed: &[&str]) -> R<()> {
    match set.iter().find(|(k, present)| *present && !allowed.contains(k)) {
        Some((k, _)) => Err(c.err(
            &format!("{table}.{k}"),
            format!("does not apply to kind \"{kind}\" (its keys: {})", allowed.join(", ")),
        )),
        None => Ok(()),
    }
}

fn topology(c: &Ctx, t: &TopologyCfg, switch_delay: Option<Time>) -> R<TopologySpec> {
    let kind = c.need(&t.kind, "topology.kind", "\"leaf-spine\", \"fat-tree\", \"htsim\" or \"file\" (or a preset)")?;
    let set = [
        ("leaves", t.leaves.is_some()),
        ("spines", t.spines.is_some()),
        ("hosts_per_leaf", t.hosts_per_leaf.is_some()),
        ("edge_rate", t.edge_rate.is_some()),
        ("core_rate", t.core_rate.is_some()),
        ("edge_delay", t.edge_delay.is_some()),
        ("core_delay", t.core_delay.is_some()),
        ("k", t.k.is_some()),
        ("rate", t.rate.is_some()),
        ("delay", t.delay.is_some()),
        ("path", t.path.is_some()),
        ("pods", t.pods.is_some()),
        ("tors_per_pod", t.tors_per_pod.is_some()),
        ("hosts_per_tor", t.hosts_per_tor.is_some()),
        ("aggs_per_pod", t.aggs_per_pod.is_some()),
        ("cores", t.cores.is_some()),
        ("agg_rate", t.agg_rate.is_some()),
    ];
    let allowed: &[&str] = match kind.as_str() {
        "leaf-spine" => &["leaves", "spines", "hosts_per_leaf", "edge_rate", "core_rate", "edge_delay", "core_delay"],
        "fat-tree" => &[
            "k",
            "rate",
            "delay",
            "pods",
            "tors_per_pod",
            "hosts_per_tor",
            "aggs_per_pod",
            "cores",
            "edge_rate",
            "agg_rate",
            "core_rate",
        ],
        "htsim" | "file" => &["path"],
        "star" => &["host_rates", "delay"],
        _ => &[],
    };
    if !allowed.is_empty() {
        only_applicable(c, "topology", &kind, &set, allowed)?;
    }
    if t.host_rates.is_some() && kind != "star" {
        return Err(c.err("topology.host_rates", format!("does not apply to kind \"{kind}\" (only to \"star\")")));
    }
    let sd = switch_delay.unwrap_or(Time::ZERO);
    let positive = |v: u32, key: &str| if v == 0 { Err(c.err(key, "must be at least 1")) } else { Ok(v) };
    let fits = |key: &str, (hosts, switches, links): (u64, u64, u64)| {
        super::limits::check_fabric(c, key, super::limits::Footprint { hosts, switches, links })
    };
    match kind.as_str() {
        "leaf-spine" => Ok({
            if let (Some(l), Some(s), Some(h)) = (t.leaves, t.spines, t.hosts_per_leaf) {
                let (l, s, h) = (l as u64, s as u64, h as u64);
                fits("topology", (l * h, l + s, l * h + l * s))?;
            }
            LeafSpine {
            leaves: positive(c.need(&t.leaves, "topology.leaves", "a number of leaf switches")?, "topology.leaves")?,
            spines: positive(c.need(&t.spines, "topology.spines", "a number of spine switches")?, "topology.spines")?,
            hosts_per_leaf: positive(
                c.need(&t.hosts_per_leaf, "topology.hosts_per_leaf", "hosts under each leaf")?,
                "topology.hosts_per_leaf",
            )?,
            edge_rate: c.need(&t.edge_rate, "topology.edge_rate", "the host link rate, e.g. \"10Gbps\"")?.0,
            core_rate: c.need(&t.core_rate, "topology.core_rate", "the leaf–spine link rate, e.g. \"40Gbps\"")?.0,
            edge_delay: t.edge_delay.map_or(Time::ZERO, |d| d.0),
            core_delay: t.core_delay.map_or(Time::ZERO, |d| d.0),
            switch_delay: sd,
        }
        .spec()
        }),
        "fat-tree" => {
            let rate = t.rate.map(|r| r.0);
            let tier_rate = |v: Option<super::units::Rate>, key: &str| {
                v.map(|r| r.0)
                    .or(rate)
                    .ok_or_else(|| c.err(key, "missing: expected a rate, or `topology.rate` for every tier"))
            };
            let delay = t.delay.map_or(Time::ZERO, |d| d.0);
            let shape = [t.pods, t.tors_per_pod, t.hosts_per_tor, t.aggs_per_pod, t.cores];
            let mut ft = match (t.k, shape.iter().any(Option::is_some)) {
                (Some(_), true) => return Err(c.err(
                    "topology.k",
                    "give either `k` or the shape (pods, tors_per_pod, hosts_per_tor, aggs_per_pod, cores), not both",
                )),
                (Some(k), false) => {
                    if k < 2 || k % 2 == 1 {
                        return Err(c.err("topology.k", format!("must be an even number ≥ 2, found {k}")));
                    }
                    let r = c.need(&rate, "topology.rate", "the link rate, e.g. \"100Gbps\"")?;
                    let k64 = k as u64;
                    fits("topology.k", fat_tree_counts([k64, k64 / 2, k64 / 2, k64 / 2, k64 * k64 / 4]))?;
                    FatTree::k_ary(k, r, delay, sd)
                }
                (None, _) => {
                    let n = |v: Option<u32>, key: &str, what: &str| positive(c.need(&v, key, what)?, key);
                    let mut ft = FatTree::k_ary(2, BitsPerSec(1), delay, sd);
                    ft.pods = n(t.pods, "topology.pods", "a number of pods (or `k`)")?;
                    ft.edges_per_pod = n(t.tors_per_pod, "topology.tors_per_pod", "ToR switches per pod")?;
                    ft.hosts_per_edge = n(t.hosts_per_tor, "topology.hosts_per_tor", "hosts under each ToR")?;
                    ft.aggs_per_pod = n(t.aggs_per_pod, "topology.aggs_per_pod", "aggregation switches per pod")?;
                    ft.cores = n(t.cores, "topology.cores", "a number of core switches")?;
                    ft
                }
            };
            ft.tiers[0].down_rate = tier_rate(t.edge_rate, "topology.edge_rate")?;
            ft.tiers[1].down_rate = tier_rate(t.agg_rate, "topology.agg_rate")?;
            ft.tiers[2].down_rate = tier_rate(t.core_rate, "topology.core_rate")?;
            fits("topology", ft.counts())?;
            ft.spec().map_err(|m| c.err("topology", m))
        }
        "htsim" => {
            let p = c.need(&t.path, "topology.path", "the path of an htsim .topo file")?;
            let text = std::fs::read_to_string(c.path(&p))
                .map_err(|e| c.err("topology.path", format!("cannot read {p}: {e}")))?;
            let topo = tailsim_workload::parse_topo(&text, &p).map_err(|e| c.err("topology.path", e.to_string()))?;
            let shape = topo.fat_tree_shape().map_err(|e| c.err("topology.path", e.to_string()))?;
            let shape_of = [shape.pods, shape.hosts_per_edge, shape.edges_per_pod, shape.aggs_per_pod, shape.cores];
            fits("topology.path", fat_tree_counts(shape_of.map(u64::from)))?;
            let tier = |i: usize| {
                let t = &topo.tier[i];
                Tier {
                    down_rate: BitsPerSec((t.downlink_gbps * 1e9).round() as u64),
                    down_delay: Time::ns(t.downlink_latency_ns),
                    switch_delay: switch_delay.unwrap_or(Time::ns(t.switch_latency_ns)),
                }
            };
            FatTree {
                pods: shape.pods,
                hosts_per_edge: shape.hosts_per_edge,
                edges_per_pod: shape.edges_per_pod,
                aggs_per_pod: shape.aggs_per_pod,
                cores: shape.cores,
                tiers: [tier(0), tier(1), tier(2)],
            }
            .spec()
            .map_err(|m| c.err("topology.path", m))
        }
        "star" => {
            let rates = c.need(&t.host_rates, "topology.host_rates", "a list of host link rates (2 or more)")?;
            if rates.len() < 2 {
                return Err(c.err("topology.host_rates", "a star needs at least two hosts"));
            }
            let mut spec = TopologySpec { hosts: rates.len() as u32, ..Default::default() };
            spec.switches.push(SwitchSpec { name: "sw".into(), delay: sd });
            let sw = crate::units::NodeId(spec.hosts);
            let delay = t.delay.map_or(Time::ZERO, |d| d.0);
            for (h, r) in rates.iter().enumerate() {
                if r.0 .0 == 0 {
                    return Err(c.err(&format!("topology.host_rates[{h}]"), "must be positive"));
                }
                spec.links.push(LinkSpec { a: crate::units::NodeId(h as u32), b: sw, rate: r.0, delay });
            }
            Ok(spec)
        }
        "file" => {
            let p = c.need(&t.path, "topology.path", "the path of a topology file")?;
            topology_file(&c.path(&p), sd).map_err(|m| c.err("topology.path", m))
        }
        "inline" => {
            let hosts = c.need(&t.hosts, "topology.hosts", "the number of hosts")?;
            let links = c.need(&t.link, "topology.link", "the links ([[topology.link]] a, b, rate)")?;
            topology_links(hosts, t.switch.as_deref().unwrap_or(&[]), &links, sd).map_err(|m| c.err("topology", m))
        }
        other => Err(c.err(
            "topology.kind",
            format!(
                "unknown kind \"{other}\"; expected \"leaf-spine\", \"fat-tree\", \"star\", \"htsim\", \"file\" or \"inline\""
            ),
        )),
    }
}

/// `tailsim check` on a topology file on its own: its (hosts, switches, links), or what is wrong with it
/// (named by the file, and the line for TOML errors).
pub fn check_topology_file(path: &Path) -> Result<(u32, usize, usize), String> {
    let spec = topology_file(path, Time::ZERO)?;
    Ok((spec.hosts, spec.switches.len(), spec.links.len()))
}

/// A topology file (TOML): `hosts = N`, `[[switch]] name, delay`, `[[link]] a, b, rate, delay`; link ends are
/// host numbers ("h3" or "3") or switch names.
fn topology_file(path: &Path, default_delay: Time) -> Result<TopologySpec, String> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct File {
        hosts: u32,
        #[serde(default)]
        switch: Vec<TopoSwitch>,
        link: Vec<TopoLink>,
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let f: File = toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    topology_links(f.hosts, &f.switch, &f.link, default_delay).map_err(|m| format!("{}: {m}", path.display()))
}

/// A topology given link by link (a file's or an inline one's entries).
fn topology_links(
    hosts: u32,
    sws: &[TopoSwitch],
    links: &[TopoLink],
    default_delay: Time,
) -> Result<TopologySpec, String> {
    if hosts < 2 {
        return Err(format!("`hosts` must be at least 2, found {hosts}"));
    }
    let mut spec = TopologySpec { hosts, ..Default::default() };
    for (i, s) in sws.iter().enumerate() {
        if sws[..i].iter().any(|o| o.name == s.name) {
            return Err(format!("two switches are named \"{}\"", s.name));
        }
        spec.switches.push(SwitchSpec { name: s.name.clone(), delay: s.delay.map_or(default_delay, |d| d.0) });
    }
    for l in links {
        let a = node_by_name(&spec, &l.a).ok_or_else(|| format!("link end \"{}\" is not a host or switch", l.a))?;
        let b = node_by_name(&spec, &l.b).ok_or_else(|| format!("link end \"{}\" is not a host or switch", l.b))?;
        if a == b {
            return Err(format!("link from \"{}\" to itself", l.a));
        }
        let (a, b) = (a.min(b), a.max(b));
        spec.links.push(LinkSpec { a, b, rate: l.rate.0, delay: l.delay.map_or(Time::ZERO, |d| d.0) });
    }
    // One fabric however its links are listed, and whichever end comes first: links in the order of their
    // ends (parallel links in the order given), so a file, a networkx graph and a links table number their
    // ports alike, and ports' numbers order simultaneous arrivals (engine/queue.rs, `arrival_tie`).
    spec.links.sort_by_key(|l| (l.a, l.b));
    Ok(spec)
}

/// The number of classes (from class 0) the transport's data packets can use, for default reservations.
fn classes_in_use(t: &TransportCfg) -> u8 {
    let base = t.class.unwrap_or(0).saturating_add(1);
    match &t.class_thresholds {
        Some(ClassThresholds::Sizes(v)) => v.len().min(255) as u8 + 1,
        Some(ClassThresholds::Rule(_)) => t.classes.unwrap_or(1),
        None if t.priority.as_deref() == Some("deadline") => base + 1,
        None => base,
    }
}

/// `topology.remove_links`: take the named links out of the fabric (the DeTail thesis §5.4.4 removes one
/// aggregation–core link); every host must still reach every other.
fn remove_links(c: &Ctx, t: &TopologyCfg, spec: &mut TopologySpec) -> R<()> {
    let Some(list) = &t.remove_links else { return Ok(()) };
    for (i, [x, y]) in list.iter().enumerate() {
        let key = format!("topology.remove_links[{i}]");
        let end = |s: &str| {
            node_by_name(spec, s).ok_or_else(|| c.err(&key, format!("\"{s}\" is not a host number or switch name")))
        };
        let (a, b) = (end(x)?, end(y)?);
        let Some(k) = spec.links.iter().position(|l| (l.a == a && l.b == b) || (l.a == b && l.b == a)) else {
            return Err(c.err(&key, format!("no link between \"{x}\" and \"{y}\"")));
        };
        spec.links.remove(k);
    }
    // Every host must still reach host 0 (a breadth-first search over what is left).
    let n = spec.hosts as usize + spec.switches.len();
    let mut adj = vec![Vec::new(); n];
    for l in &spec.links {
        adj[l.a.idx()].push(l.b.idx());
        adj[l.b.idx()].push(l.a.idx());
    }
    let mut seen = vec![false; n];
    let mut stack = vec![0usize];
    seen[0] = true;
    while let Some(v) = stack.pop() {
        for &w in &adj[v] {
            if !seen[w] {
                seen[w] = true;
                stack.push(w);
            }
        }
    }
    if let Some(h) = (0..spec.hosts as usize).find(|&h| !seen[h]) {
        return Err(c.err(
            "topology.remove_links",
            format!("removing these links cuts host {h} off from host 0; a fabric must stay connected"),
        ));
    }
    Ok(())
}

/// A switch by its exact name, else a host by number ("3" or "h3").
fn node_by_name(spec: &TopologySpec, name: &str) -> Option<NodeId> {
    node_named(spec.switches.iter().map(|s| s.name.as_str()), spec.hosts, name)
}

/// The node a name stands for: a switch's exact name wins, else a host ("h3" or "3"). Switches are numbered
/// after the `hosts` hosts, in the order of `switches`.
pub(super) fn node_named<'a>(mut switches: impl Iterator<Item = &'a str>, hosts: u32, name: &str) -> Option<NodeId> {
    if let Some(i) = switches.position(|s| s == name) {
        return Some(NodeId(hosts + i as u32));
    }
    let num = name.strip_prefix('h').unwrap_or(name);
    num.parse::<u32>().ok().filter(|&h| h < hosts).map(NodeId)
}

/// PIAS's default ECN threshold (DCTCP's K in the pFabric simulator PIAS was built on: 15 packets).
const PIAS_ECN_K: u64 = 22_500;

/// The TCP transport, for an output only TCP-family transports give (`key`; the flow-level Ideal has no
/// packets), else the error naming the key.
fn tcp_output<'a>(
    c: &Ctx,
    t: &'a mut crate::transport::Transport,
    kind: &str,
    key: &str,
    what: &str,
) -> R<&'a mut crate::transport::tcp::Tcp> {
    match t {
        crate::transport::Transport::Tcp(t) if kind != "ideal" => Ok(t),
        _ => Err(c.err(key, format!("{what}; transport.kind is \"{kind}\""))),
    }
}

pub fn build(src: &Source, cfg: ExperimentConfig, resolved: toml::Table) -> R<Experiment> {
    let stopped = cfg.stop.time.is_some() || cfg.stop.max_events.is_some();
    let flow_level = cfg.transport.kind.as_deref() == Some("ideal");
    let c = Ctx { src, inputs: Default::default(), stopped, flow_level };
    let sw = &cfg.switch;
    let mut spec = topology(&c, &cfg.topology, sw.delay.map(|d| d.0))?;
    remove_links(&c, &cfg.topology, &mut spec)?;
    // Packet framing. TCP: 1460 B segments in 1500 B IP packets, 40 B ACKs. RoCEv2: a 1024 B path MTU with
    // IP, UDP, BTH and ICRC around it (44 B), ACKs with an AETH (48 B).
    let kind = cfg.transport.kind.as_deref().unwrap_or("tcp");
    let rdma = kind == "rdma";
    let p = &cfg.packet;
    let fr = Framing {
        mss: p.mss.unwrap_or(if rdma { 1024 } else { 1460 }) as u64,
        header: p.header.unwrap_or(if rdma { 44 } else { 40 }) as u64,
        wire_overhead: p.wire_overhead.unwrap_or(0) as u64,
    };
    if fr.mss == 0 {
        return Err(c.err("packet.mss", "must be at least 1 byte"));
    }
    // Receiver-driven transports frame their packets alike (Homa's headers, full 1500 B IP packets).
    let receiver_driven = matches!(kind, "homa" | "phost" | "ndp");
    super::transport::only_kind_keys(&c, &cfg.transport)?;
    let fr = if receiver_driven { super::homa::framing(&c, &cfg.transport, fr)? } else { fr };
    let ack = p.ack.unwrap_or(if rdma { 48 } else { 40 });
    if ack == 0 {
        return Err(c.err("packet.ack", "must be at least 1 byte"));
    }
    // Switch buffers.
    let per_port = sw.buffer.map(|b| b.0).unwrap_or(Some(225_000));
    let buffer = match sw.buffer_mode.as_deref().unwrap_or("per-port") {
        "per-port" => per_port.map_or(BufferPolicy::Unlimited, BufferPolicy::PerPort),
        "shared" => {
            let total = c.need(&sw.shared_buffer, "switch.shared_buffer", "the shared pool size per switch")?.0;
            let alpha = sw.alpha.unwrap_or(1.0);
            if alpha.is_nan() || alpha <= 0.0 {
                return Err(c.err("switch.alpha", format!("must be positive, found {alpha}")));
            }
            BufferPolicy::Shared { total, alpha }
        }
        o => return Err(c.err("switch.buffer_mode", format!("expected \"per-port\" or \"shared\", found \"{o}\""))),
    };
    if let Some(b) = per_port {
        if b < fr.mss + fr.header {
            return Err(c.err("switch.buffer", format!("{b} B cannot hold one full packet ({} B)", fr.mss + fr.header)));
        }
    }
    let pias = kind == "pias";
    let ecn_k = match &sw.ecn_threshold {
        // PIAS marks with DCTCP's K; its simulator was built on pFabric's, whose DCTCP used 22.5 KB.
        None if pias => [PIAS_ECN_K; CLASSES],
        None => [u64::MAX; CLASSES],
        Some(EcnThreshold::All(k)) => [k.0; CLASSES],
        Some(EcnThreshold::PerClass(v)) if v.len() == CLASSES => std::array::from_fn(|i| v[i].0),
        Some(EcnThreshold::PerClass(v)) => {
            return Err(c.err(
                "switch.ecn_threshold",
                format!("expected one size or a list of 8 (one per class), found {} values", v.len()),
            ))
        }
    };
    // Thresholds the queue can never reach mark nothing: DCTCP would silently run as plain TCP. One class's
    // threshold above the buffer is how a class is left unmarked (DeTail marks only its low-priority
    // classes), so it is an error only when no class can be marked at all.
    let room = match buffer {
        BufferPolicy::PerPort(b) => Some((b, "switch.buffer")),
        BufferPolicy::Shared { total, .. } => Some((total, "switch.shared_buffer")),
        BufferPolicy::Unlimited => None,
    };
    if let (Some((room, by)), Some(&k)) = (room, ecn_k.iter().filter(|&&k| k != u64::MAX).min()) {
        if k > room {
            return Err(c.err(
                "switch.ecn_threshold",
                format!(
                    "{k} B can never be reached: a queue holds at most {room} B ({by}), so nothing would be marked"
                ),
            ));
        }
    }
    let ecn_mode = match sw.ecn_mode.as_deref().unwrap_or(if pias { "per-port" } else { "per-class" }) {
        "per-class" => EcnMode::PerClass,
        "per-port" => EcnMode::PerPort,
        "drain-bytes" => EcnMode::DrainBytes,
        o => {
            return Err(c.err(
                "switch.ecn_mode",
                format!("expected \"per-class\", \"per-port\" or \"drain-bytes\", found \"{o}\""),
            ))
        }
    };
    // NDP's switches: 8 full data packets per queue, then trimming.
    let trim = match (sw.trim, kind == "ndp") {
        (Some(t), true) if t.0 < fr.mss + fr.header => {
            return Err(
                c.err("switch.trim", format!("{} B cannot hold one full data packet ({} B)", t.0, fr.mss + fr.header))
            )
        }
        (Some(t), true) => Some(t.0),
        (None, true) => Some(8 * (fr.mss + fr.header)),
        (Some(_), false) => {
            return Err(c.err(
                "switch.trim",
                format!(
                "applies to transport \"ndp\" only (found \"{kind}\"): other transports cannot read trimmed packets"
            ),
            ))
        }
        (None, false) => None,
    };
    let pfabric_queue = match sw.queue.as_deref().unwrap_or("fifo") {
        "fifo" => None,
        "pfabric" => {
            if matches!(buffer, BufferPolicy::Shared { .. }) {
                return Err(c.err("switch.queue", "pFabric queues need per-port buffers (buffer_mode = \"per-port\")"));
            }
            if sw.ecn_threshold.is_some() {
                return Err(c.err("switch.ecn_threshold", "pFabric queues do not mark ECN"));
            }
            let classes = sw.pfabric_queues.unwrap_or(1);
            if !(1..=CLASSES as u8).contains(&classes) {
                return Err(c.err("switch.pfabric_queues", format!("must be 1–8, found {classes}")));
            }
            Some(PFabricParams { strict: !sw.starvation_prevention.unwrap_or(true), classes })
        }
        o => return Err(c.err("switch.queue", format!("expected \"fifo\" or \"pfabric\", found \"{o}\""))),
    };
    if pfabric_queue.is_none() {
        for (k, set) in [
            ("starvation_prevention", sw.starvation_prevention.is_some()),
            ("pfabric_queues", sw.pfabric_queues.is_some()),
        ] {
            if set {
                return Err(c.err(&format!("switch.{k}"), "applies only to queue = \"pfabric\""));
            }
        }
    }
    // Per-class reservations in per-port buffers, NICs included (pFabric §6).
    let class_reserve = match (sw.class_reserve, buffer) {
        (None, _) => {
            if sw.reserved_classes.is_some() {
                return Err(c.err("switch.reserved_classes", "applies only with `class_reserve`"));
            }
            None
        }
        (Some(_), _) if pfabric_queue.is_some() => {
            return Err(c.err("switch.class_reserve", "applies only to queue = \"fifo\""))
        }
        (Some(r), BufferPolicy::PerPort(total)) => {
            let classes = sw.reserved_classes.unwrap_or_else(|| classes_in_use(&cfg.transport));
            if !(1..=CLASSES as u8).contains(&classes) {
                return Err(c.err("switch.reserved_classes", format!("must be 1–8, found {classes}")));
            }
            if r.0 > ClassReserve::MAX {
                return Err(c.err("switch.class_reserve", format!("must be at most {} B", ClassReserve::MAX)));
            }
            if r.0.saturating_mul(classes as u64) > total {
                return Err(c.err(
                    "switch.class_reserve",
                    format!("{classes} × {} B reserved exceeds the {total} B port buffer", r.0),
                ));
            }
            Some((r.0, classes))
        }
        (Some(_), _) => return Err(c.err("switch.class_reserve", "needs a per-port `buffer` of finite size")),
    };
    // NDP sprays every packet (its paper's design); the others hash flows unless told otherwise.
    let lb = match cfg.routing.load_balance.as_deref().unwrap_or(if kind == "ndp" { "spray" } else { "ecmp" }) {
        "ecmp" => match cfg.routing.hash.as_deref().unwrap_or("tailsim") {
            "tailsim" => LoadBalance::Ecmp,
            "first" => LoadBalance::First,
            o => return Err(c.err("routing.hash", format!("expected \"tailsim\" or \"first\", found \"{o}\""))),
        },
        "spray" | "adaptive" | "detail" if cfg.routing.hash.is_some() => {
            return Err(
                c.err("routing.hash", "chooses among ECMP's next hops: it needs routing.load_balance = \"ecmp\"")
            )
        }
        "spray" => LoadBalance::Spray,
        // The mechanism overrides the hash's choice at every switch with more than one next hop.
        "adaptive" | "detail" => LoadBalance::Ecmp,
        o => {
            return Err(c.err(
                "routing.load_balance",
                format!("expected \"ecmp\", \"spray\", \"adaptive\" or \"detail\", found \"{o}\""),
            ))
        }
    };
    let h = &cfg.host;
    // A NIC queue is a port like any other (as in ns-2): by default it has the per-port `switch.buffer`,
    // also when the switches use a shared pool.
    let nic_limit = h.nic_buffer.map_or(per_port, |b| b.0);
    if let Some(b) = nic_limit {
        if b < fr.mss + fr.header {
            let key = if h.nic_buffer.is_some() { "host.nic_buffer" } else { "switch.buffer" };
            return Err(c.err(key, format!("{b} B cannot hold one full packet ({} B)", fr.mss + fr.header)));
        }
        if let Some((r, k)) = class_reserve.filter(|&(r, k)| r.saturating_mul(k as u64) > b) {
            return Err(c.err(
                "host.nic_buffer",
                format!("{b} B cannot hold the {k} × {r} B reserved by switch.class_reserve"),
            ));
        }
    }
    // What each transport's paper simulated (docs/config.md § host): htsim's NDP senders share their NIC
    // round-robin among flows; the others' NICs serve by priority class.
    let nic_default = if kind == "ndp" { "per-flow-round-robin" } else { "priority" };
    let nic_order = match h.nic_scheduler.as_deref().unwrap_or(nic_default) {
        "priority" => None,
        "fifo" => Some(NicOrder::Fifo),
        "per-flow-round-robin" => Some(NicOrder::FlowRoundRobin),
        o => {
            return Err(c.err(
                "host.nic_scheduler",
                format!("expected \"priority\", \"fifo\" or \"per-flow-round-robin\", found \"{o}\""),
            ))
        }
    };
    if nic_order.is_some() && pfabric_queue.is_some() {
        return Err(
            c.err("host.nic_scheduler", "NICs use pFabric queues here (switch.queue = \"pfabric\"): leave it out")
        );
    }
    let prm = NetParams {
        host_tx_delay: h.tx_delay.map_or(Time::ZERO, |d| d.0),
        host_rx_delay: h.rx_delay.map_or(Time::ZERO, |d| d.0),
        host_rx_parallel: match (h.rx_parallel, h.rx_delay) {
            (Some(0), _) => return Err(c.err("host.rx_parallel", "must be at least 1 packet")),
            (Some(_), None) => {
                return Err(c.err("host.rx_parallel", "needs host.rx_delay, the time to process one packet"))
            }
            (p, _) => p.unwrap_or(0),
        },
        nic_limit,
        nic_order,
        buffer,
        ecn_k,
        ecn_mode,
        trim,
        lb,
        pfabric: pfabric_queue,
        class_reserve,
        wire_overhead: fr.wire_overhead as u32,
        seed: cfg.seed,
    };
    let mut net = Network::build(&spec, &prm).map_err(|m| c.err("topology", m))?;
    if let Some(q) = &cfg.qjump {
        net.qjump = Some(super::qjump::regulator(&c, q, &net, fr)?);
    }
    super::mechanisms::install(&c, &cfg, fr, &mut net)?;
    let hosts = net.n_hosts() as u32;
    if hosts < 2 {
        return Err(c.err("topology", format!("the topology has {hosts} host(s); at least 2 are needed")));
    }
    // Load is relative to the mean host link rate (all hosts share one rate in the built-in fabrics).
    let host_rate =
        BitsPerSec(net.hosts.iter().map(|h| net.ports[h.nic.idx()].rate.0 as u128).sum::<u128>() as u64 / hosts as u64);
    if cfg.workload.is_empty() {
        return Err(c.err("workload", "missing: add at least one [[workload]] table"));
    }
    let mut flow_class = Vec::with_capacity(cfg.workload.len());
    for (i, w) in cfg.workload.iter().enumerate() {
        if let Some(cl) = w.class {
            if cl as usize >= CLASSES {
                return Err(c.err(&format!("workload[{i}].class"), format!("must be 0–7, found {cl}")));
            }
            if receiver_driven {
                return Err(c.err(
                    &format!("workload[{i}].class"),
                    format!("applies to the TCP family only ({kind} chooses its own priorities)"),
                ));
            }
            if cfg.transport.priority.as_deref() == Some("deadline") {
                return Err(c.err(
                    &format!("workload[{i}].class"),
                    "does not combine with transport.priority = \"deadline\" (which uses two classes of its own)",
                ));
            }
        }
        flow_class.push(w.class);
    }
    let mut generators = cfg
        .workload
        .iter()
        .enumerate()
        .map(|(i, w)| super::workload::generator(&c, w, i, cfg.seed, hosts, host_rate, fr))
        .collect::<R<Vec<_>>>()?;
    super::paths::pin_traces(&c, &mut generators, &mut net)?;
    // Background flows fill the time the other workloads take (docs/config.md): alone, nothing ends them.
    if !c.stopped && cfg.workload.iter().all(|w| w.kind.as_deref() == Some("background")) {
        return Err(c.err(
            "workload[0].kind",
            "background flows alone never end: add a workload that does, or set `stop.time` or `stop.max_events`",
        ));
    }
    let cbr = cfg
        .workload
        .iter()
        .enumerate()
        .filter(|(_, w)| w.kind.as_deref() == Some("cbr"))
        .map(|(i, w)| super::workload::cbr_sources(&c, w, i, hosts, fr))
        .collect::<R<Vec<_>>>()?
        .concat();
    if !cbr.is_empty() {
        if kind == "ideal" {
            return Err(c.err("transport.kind", "the flow-level Ideal has no packets: drop the cbr workloads"));
        }
        net.install(crate::net::mech::Mech::Cbr(crate::traffic::cbr::Cbr::new(cbr, cfg.seed)), []);
    }
    if kind == "ideal" {
        if let Some(i) = generators.iter().position(|g| matches!(g, Generator::Jobs(_) | Generator::Background(_))) {
            return Err(c.err(
                &format!("workload[{i}].kind"),
                "the flow-level Ideal takes open-loop flows only (no retrievals, workflows or background flows)",
            ));
        }
    }
    let mut faults = Vec::new();
    for (i, f) in cfg.fault.iter().enumerate() {
        let key = format!("fault[{i}]");
        let end = |s: &str| {
            node_by_name(&spec, s)
                .ok_or_else(|| c.err(&format!("{key}.link"), format!("\"{s}\" is not a host number or switch name")))
        };
        let (a, b) = (end(&f.link[0])?, end(&f.link[1])?);
        if f.state.is_none() && f.corrupt.is_none() && f.rate.is_none() {
            return Err(c.err(
                &key,
                "a fault needs `state` (\"up\"/\"down\"), `corrupt` (a probability) or `rate` (a degraded link)",
            ));
        }
        if f.rate.is_some_and(|r| r.0 .0 == 0) {
            return Err(c.err(&format!("{key}.rate"), "must be positive (take the link down with state = \"down\")"));
        }
        let up = match f.state.as_deref() {
            None => None,
            Some("up") => Some(true),
            Some("down") => Some(false),
            Some(o) => {
                return Err(c.err(&format!("{key}.state"), format!("expected \"up\" or \"down\", found \"{o}\"")))
            }
        };
        let one_way = f.one_way.unwrap_or(false);
        if one_way && up.is_some() {
            return Err(c.err(
                &format!("{key}.one_way"),
                "applies to `corrupt` and `rate` only (routing takes a link that is down as down both ways)",
            ));
        }
        if let Some(p) = f.corrupt {
            if !(0.0..=1.0).contains(&p) {
                return Err(c.err(&format!("{key}.corrupt"), format!("a probability in [0, 1], found {p}")));
            }
        }
        if !spec.links.iter().any(|l| (l.a == a && l.b == b) || (l.a == b && l.b == a)) {
            return Err(
                c.err(&format!("{key}.link"), format!("no link between \"{}\" and \"{}\"", f.link[0], f.link[1]))
            );
        }
        let count = match (f.every, f.count) {
            (None, None) => 1,
            (Some(e), Some(n)) if e.0 > Time::ZERO && (1..=1_000_000).contains(&n) => n,
            (Some(e), Some(_)) if e.0 == Time::ZERO => return Err(c.err(&format!("{key}.every"), "must be positive")),
            (Some(_), Some(n)) => {
                return Err(c.err(&format!("{key}.count"), format!("from 1 to 1000000 repetitions, found {n}")))
            }
            (Some(_), None) => return Err(c.err(&format!("{key}.count"), "missing: how many times `every` repeats")),
            (None, Some(_)) => return Err(c.err(&format!("{key}.every"), "missing: the period of the repetitions")),
        };
        let back = match (f.duration, up) {
            (None, _) => None,
            (Some(d), Some(false)) if d.0 > Time::ZERO => Some(d.0),
            (Some(_), Some(false)) => return Err(c.err(&format!("{key}.duration"), "must be positive")),
            (Some(_), _) => {
                return Err(
                    c.err(&format!("{key}.duration"), "applies only with state = \"down\" (how long it stays down)")
                )
            }
        };
        if let (Some(e), Some(d)) = (f.every, back) {
            if d >= e.0 && count > 1 {
                return Err(c.err(
                    &format!("{key}.duration"),
                    "must be shorter than `every` (the link is up between failures)",
                ));
            }
        }
        let every = f.every.map_or(Time::ZERO, |e| e.0);
        let jitter = f.jitter.map_or(Time::ZERO, |j| j.0);
        if f.jitter.is_some() && (f.every.is_none() || jitter + back.unwrap_or(Time::ZERO) >= every) {
            return Err(c.err(
                &format!("{key}.jitter"),
                "needs `every`, and jitter + duration must be shorter than `every` (failures must not overlap)",
            ));
        }
        let mut rng = crate::engine::Rng::new(cfg.seed, "fault-jitter", i as u64);
        for k in 0..count {
            let shift = if jitter > Time::ZERO { Time((rng.uniform() * jitter.0 as f64) as u64) } else { Time::ZERO };
            let at = Time(f.at.0 .0 + k * every.0) + shift;
            faults.push(Fault { at, a, b, up, corrupt: f.corrupt, rate: f.rate.map(|r| r.0), one_way });
            if let Some(d) = back {
                faults.push(Fault { at: at + d, a, b, up: Some(true), corrupt: None, rate: None, one_way: false });
            }
        }
    }
    let mut warnings = if stopped { Vec::new() } else { cut_off_for_good(&spec, &faults, &cfg.fault) };
    // Homa's and pHost's pacers hand the NIC one packet at a time; NDP (and either without its pacer) hands it
    // each new message's first window at once.
    let unpaced = kind == "ndp" || (receiver_driven && !cfg.transport.pacer.unwrap_or(true));
    if let (true, Some(b)) = (unpaced, nic_limit) {
        let key = if h.nic_buffer.is_some() { "host.nic_buffer" } else { "switch.buffer (host.nic_buffer unset)" };
        warnings.push(format!(
            "{key}: the NICs hold {b} B, but unpaced {kind} senders queue each new message's first window at their \
             NIC with no window shared across messages, so a sender with many messages overruns it and drops packets \
             before they leave the host (htsim's and the papers' NICs never drop): set host.nic_buffer = \"unlimited\""
        ));
    }
    // Thresholds derived from the workload use the first Poisson workload with a size distribution.
    let dist = generators.iter().zip(&cfg.workload).find_map(|(g, w)| match g {
        Generator::Poisson { sizes: Sizes::Cdf(cdf), .. } => Some((cdf.as_ref(), w.load.unwrap_or(0.0))),
        _ => None,
    });
    let lossless = matches!(buffer, BufferPolicy::Unlimited) && nic_limit.is_none() && cfg.fault.is_empty();
    let mut transport = match kind {
        "homa" => super::homa::transport(&c, &cfg.transport, fr, ack, &net, dist.map(|d| d.0), lossless)?,
        "phost" => super::receiver_driven::phost(&c, &cfg.transport, fr, ack, &net, lossless)?,
        "ndp" => super::receiver_driven::ndp(&c, &cfg.transport, fr, ack, &net, lossless)?,
        "rdma" => super::transport::rdma(&c, &cfg.transport, fr, ack, net.hosts.len())?,
        _ => super::transport::transport(&c, &cfg.transport, fr, ack, per_port, host_rate, dist)?,
    };
    super::mechanisms::fastlane_transport(&c, &cfg, &mut transport)?;
    let o = &cfg.output;
    if let Some(ids) = &o.cwnd_trace {
        tcp_output(&c, &mut transport, kind, "output.cwnd_trace", "traces TCP's window")?.trace =
            crate::transport::tcp::CwndTrace::new(ids.clone());
    }
    if o.rx_gaps == Some(true) {
        tcp_output(&c, &mut transport, kind, "output.rx_gaps", "times TCP's receivers")?.rx_gaps.on = true;
    }
    let format = match o.format.as_deref().unwrap_or("parquet") {
        "parquet" => OutputFormat::Parquet,
        "csv" => OutputFormat::Csv,
        f => return Err(c.err("output.format", format!("expected \"parquet\" or \"csv\", found \"{f}\""))),
    };
    let buckets: Vec<u64> = o.buckets.as_ref().map_or(vec![100_000, 10_000_000], |v| v.iter().map(|s| s.0).collect());
    if buckets.windows(2).any(|w| w[0] >= w[1]) || buckets.first() == Some(&0) {
        return Err(c.err("output.buckets", "bucket edges must be positive and increasing"));
    }
    if cfg.stop.max_events == Some(0) {
        return Err(c.err("stop.max_events", "must be at least 1"));
    }
    let warmup = o.warmup.map_or(Time::ZERO, |d| d.0);
    let sample_every = o.queue_sample.map(|d| d.0);
    if sample_every == Some(Time::ZERO) {
        return Err(c.err("output.queue_sample", "the sampling interval must be positive"));
    }
    let name = cfg.name.clone().unwrap_or_else(|| {
        Path::new(&src.origin).file_stem().map_or("experiment".into(), |s| s.to_string_lossy().into_owned())
    });
    // The name is the default results directory's last component (`results/<name>`): one plain name, so
    // that a run can neither write into `results/` itself nor outside it.
    if name.is_empty()
        || name == "."
        || name == ".."
        || name.contains(['/', '\\', '\0'])
        || name.chars().any(char::is_control)
    {
        return Err(c.err(
            "name",
            format!(
                "{name:?} is not a plain name: the default results directory is results/<name>, so it must be \
                     one path component (no '/', not empty, not \".\" or \"..\")"
            ),
        ));
    }
    let mut world = World::new(net, transport, generators, faults, fr, warmup, sample_every);
    world.flow_class = flow_class;
    Ok(Experiment {
        name,
        seed: cfg.seed,
        world,
        stop: StopAt { time: cfg.stop.time.map(|d| d.0), max_events: cfg.stop.max_events },
        out_dir: o.dir.clone(),
        format,
        buckets,
        warmup,
        flow_level: kind == "ideal",
        resolved,
        inputs: c.inputs.into_inner(),
        warnings,
    })
}

/// Hosts whose only link goes down and never comes back, in a run with no stop time: their flows cannot
/// finish, and the run ends only when the stall detector stops it (sim::STALL). Only the links that faults
/// take down are looked at, so a fabric without faults costs nothing here.
fn cut_off_for_good(spec: &TopologySpec, faults: &[Fault], cfgs: &[FaultCfg]) -> Vec<String> {
    let mut out = Vec::new();
    let downed: Vec<&Fault> = faults.iter().filter(|f| f.up == Some(false)).collect();
    if downed.is_empty() {
        return out;
    }
    let mut degree = vec![0u32; spec.hosts as usize];
    for l in &spec.links {
        for n in [l.a, l.b] {
            if let Some(d) = degree.get_mut(n.idx()) {
                *d += 1;
            }
        }
    }
    // Each link's last change of state (the latest; of simultaneous ones the last listed), found in one pass:
    // a search per failure was quadratic, 18 s to load one fault repeated 65,536 times (tests/fuzz.rs).
    let link = |f: &Fault| (f.a.0.min(f.b.0), f.a.0.max(f.b.0));
    let mut last: std::collections::HashMap<(u32, u32), usize> = std::collections::HashMap::new();
    for (i, g) in faults.iter().enumerate().filter(|(_, g)| g.up.is_some()) {
        let k = last.entry(link(g)).or_insert(i);
        if faults[*k].at <= g.at {
            *k = i;
        }
    }
    for f in downed {
        // The last change of this link's state is this fault: it stays down.
        if !last.get(&link(f)).is_some_and(|&i| std::ptr::eq(&faults[i], f)) {
            continue;
        }
        for h in [f.a, f.b].into_iter().filter(|h| degree.get(h.idx()) == Some(&1)) {
            let i = cfgs.iter().position(|c| c.at.0 == f.at).map_or(String::new(), |i| format!("fault[{i}]: "));
            out.push(format!(
                "{i}host {} is cut off for good (its only link goes down at {} and never comes back) and there \
                 is no stop.time: its flows cannot finish, and the run will be stopped as stalled after {:.0} s \
                 without progress",
                h.0,
                f.at,
                crate::sim::STALL.secs()
            ));
        }
    }
    out
}
