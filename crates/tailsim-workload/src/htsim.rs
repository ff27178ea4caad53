//! Readers for htsim's workload and topology files.
//!
//! htsim (the packet simulator of the Ultra Ethernet work, `uet-htsim`) is the
//! simulator we cross-check against, so we read its inputs unchanged:
//!
//! * **`.cm` connection matrix** ([`parse_cm`]):
//!   ```text
//!   Nodes 128
//!   Connections 961
//!   16->33 id 1 start 0 size 7861
//!   ```
//!   After the `Nodes` and `Connections` header, one flow per line:
//!   `SRC->DST` followed by `keyword value` pairs in any order. We use `size`
//!   (bytes, required), `start` (microseconds, required, may be fractional)
//!   and `id` (optional, must not be 0, as in htsim). The start unit is µs
//!   because htsim's drivers pass the value through `timeFromUs`, and the
//!   shipped `.cm` files agree with their `.flows` twins, whose column is
//!   named `start_us`. The keywords in [`CM_IGNORED_KEYWORDS`] are accepted
//!   and ignored: they attach completion triggers or priorities that only
//!   matter to htsim's own triggered flows. `trigger` definition lines (and
//!   a matching `Triggers` count) are skipped for the same reason. Anything
//!   we cannot honour is an error rather than silently dropped: a flow that
//!   *starts* on a trigger (`trigger N`), `failure` lines and nonzero
//!   `Failures` counts would change the experiment if ignored.
//! * **`.flows`** ([`parse_flows`]): our plain twin of a `.cm` file, the flow
//!   count on the first line, then `id src dst size_bytes start_us`.
//! * **`.topo` fat tree** ([`parse_topo`], [`HtsimTopo::fat_tree_shape`]).
//!
//! All three accept `#` comment lines and blank lines.

use std::path::Path;

use crate::error::{read_to_string, WorkloadError};
use crate::trace::{decimal_to_ps, parse_host, parse_size, TraceFlow};

/// `.cm` connection keywords that are accepted (with an integer value) and
/// ignored, because they only wire up htsim's trigger machinery or its
/// per-flow priority, neither of which tailsim models.
pub const CM_IGNORED_KEYWORDS: &[&str] = &["send_done_trigger", "recv_done_trigger", "prio"];

/// A header count such as `Nodes 128`, remembered with its line.
type Counted = Option<(u64, usize)>;

/// Parses an htsim connection matrix into flows, in file order.
pub fn parse_cm(text: &str, origin: &str) -> Result<Vec<TraceFlow>, WorkloadError> {
    parse_cm_nodes(text, origin).map(|(flows, _)| flows)
}

/// Parses an htsim connection matrix into flows and its `Nodes` count, with that line's number (checked
/// against the topology by the caller: a matrix written for another fabric must not pass).
pub fn parse_cm_nodes(text: &str, origin: &str) -> Result<(Vec<TraceFlow>, (u64, usize)), WorkloadError> {
    let at = |n: usize, msg: String| WorkloadError::at_line(origin, n, msg);
    let (mut nodes, mut conns, mut triggers): (Counted, Counted, Counted) = (None, None, None);
    let mut trigger_lines = 0u64;
    let mut flows: Vec<(usize, TraceFlow)> = Vec::new();

    for (n, line) in crate::data_lines(text) {
        let tokens: Vec<&str> = line.split_whitespace().collect();
        let slot = match tokens[0] {
            "Nodes" => Some(&mut nodes),
            "Connections" => Some(&mut conns),
            "Triggers" => Some(&mut triggers),
            _ => None,
        };
        if let Some(slot) = slot {
            if slot.is_some() {
                return Err(at(n, format!("second \"{}\" line", tokens[0])));
            }
            *slot = Some((header_count(&tokens).map_err(|m| at(n, m))?, n));
            continue;
        }
        match tokens[0] {
            "Failures" => {
                if header_count(&tokens).map_err(|m| at(n, m))? != 0 {
                    return Err(at(n, "link failures are not supported".into()));
                }
            }
            "failure" => return Err(at(n, "link failures are not supported".into())),
            "trigger" => trigger_lines += 1,
            t if t.contains("->") => flows.push((n, parse_connection(&tokens).map_err(|m| at(n, m))?)),
            other => {
                return Err(at(
                    n,
                    format!("expected \"SRC->DST ...\", \"Nodes N\" or \"Connections N\", found \"{other}\""),
                ))
            }
        }
    }

    let (nodes, nodes_line) = nodes.ok_or_else(|| WorkloadError::whole(origin, "missing \"Nodes N\" line"))?;
    let (declared, n) = conns.ok_or_else(|| WorkloadError::whole(origin, "missing \"Connections N\" line"))?;
    if declared != flows.len() as u64 {
        return Err(at(n, format!("says {declared} connections but the file has {}", flows.len())));
    }
    if let Some((declared, n)) = triggers {
        if declared != trigger_lines {
            return Err(at(n, format!("says {declared} triggers but the file has {trigger_lines}")));
        }
    }
    for (n, f) in &flows {
        if u64::from(f.src.max(f.dst)) >= nodes {
            return Err(at(
                *n,
                format!("host {} is out of range: \"Nodes {nodes}\" allows 0..{nodes}", f.src.max(f.dst)),
            ));
        }
    }
    Ok((flows.into_iter().map(|(_, f)| f).collect(), (nodes, nodes_line)))
}

/// The value of a `Keyword N` header line.
fn header_count(tokens: &[&str]) -> Result<u64, String> {
    match tokens {
        [_, v] => {
            v.parse().map_err(|_| format!("expected \"{} N\" with N a non-negative integer, found \"{v}\"", tokens[0]))
        }
        _ => Err(format!("expected \"{} N\", found {} words", tokens[0], tokens.len())),
    }
}

/// One `SRC->DST key value ...` line.
fn parse_connection(tokens: &[&str]) -> Result<TraceFlow, String> {
    let (src, dst) = tokens[0].split_once("->").ok_or_else(|| format!("expected SRC->DST, found \"{}\"", tokens[0]))?;
    let src = parse_host(src, "source").map_err(|m| format!("{m} in \"{}\"", tokens[0]))?;
    let dst = parse_host(dst, "destination").map_err(|m| format!("{m} in \"{}\"", tokens[0]))?;
    if src == dst {
        return Err(format!("source and destination are both {src}: a flow needs two different hosts"));
    }
    let (mut id, mut start, mut size) = (None, None, None);
    let mut seen: Vec<&str> = Vec::new();
    for pair in tokens[1..].chunks(2) {
        let [key, value] = pair else {
            return Err(format!("keyword \"{}\" has no value", pair[0]));
        };
        if seen.contains(key) {
            return Err(format!("keyword \"{key}\" appears twice"));
        }
        seen.push(key);
        match *key {
            "id" => match value.parse::<u64>() {
                Ok(0) => return Err("flow id 0 is not allowed (htsim reserves it)".into()),
                Ok(v) => id = Some(v),
                Err(_) => return Err(format!("bad id \"{value}\": expected a positive integer")),
            },
            "start" => start = Some(decimal_to_ps(value, 6).map_err(|m| format!("bad start (µs): {m}"))?),
            "size" => size = Some(parse_size(value, "size")?),
            "trigger" => {
                return Err(format!(
                    "flow starts on trigger {value}: triggered flows are not supported, give a start time instead"
                ))
            }
            k if CM_IGNORED_KEYWORDS.contains(&k) => {
                value.parse::<i64>().map_err(|_| format!("bad {k} \"{value}\": expected an integer"))?;
            }
            other => {
                return Err(format!(
                    "unknown keyword \"{other}\": expected id, start, size or one of {}",
                    CM_IGNORED_KEYWORDS.join(", ")
                ))
            }
        }
    }
    Ok(TraceFlow {
        id,
        src,
        dst,
        size_bytes: size.ok_or("missing \"size BYTES\"")?,
        start_ps: start.ok_or("missing \"start MICROSECONDS\"")?,
        route: None,
    })
}

/// Parses a `.flows` file: the flow count, then `id src dst size_bytes start_us`.
pub fn parse_flows(text: &str, origin: &str) -> Result<Vec<TraceFlow>, WorkloadError> {
    let mut lines = crate::data_lines(text);
    let (count_line, first) = lines
        .next()
        .ok_or_else(|| WorkloadError::whole(origin, "empty file: expected the number of flows on the first line"))?;
    let count: usize = first.parse().map_err(|_| {
        WorkloadError::at_line(origin, count_line, format!("expected the number of flows, found \"{first}\""))
    })?;
    let mut flows = Vec::with_capacity(count.min(1 << 20));
    for (n, line) in lines {
        flows.push(parse_flows_row(line).map_err(|m| WorkloadError::at_line(origin, n, m))?);
    }
    if flows.len() != count {
        return Err(WorkloadError::at_line(
            origin,
            count_line,
            format!("says {count} flows but {} follow", flows.len()),
        ));
    }
    Ok(flows)
}

fn parse_flows_row(line: &str) -> Result<TraceFlow, String> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    let [id, src, dst, size, start] = fields[..] else {
        return Err(format!("expected 5 fields \"id src dst size_bytes start_us\", found {}", fields.len()));
    };
    let id = id.parse::<u64>().map_err(|_| format!("bad id \"{id}\": expected a non-negative integer"))?;
    let src = parse_host(src, "src")?;
    let dst = parse_host(dst, "dst")?;
    if src == dst {
        return Err(format!("src and dst are both {src}: a flow needs two different hosts"));
    }
    Ok(TraceFlow {
        id: Some(id),
        src,
        dst,
        size_bytes: parse_size(size, "size_bytes")?,
        start_ps: decimal_to_ps(start, 6).map_err(|m| format!("bad start_us: {m}"))?,
        route: None,
    })
}

/// An htsim `.topo` fat-tree description, as written in the file.
///
/// Tier 0 holds the edge (ToR) switches, tier 1 the aggregation switches,
/// tier 2 the core switches; each tier describes its *downlinks*.
#[derive(Debug, Clone, PartialEq)]
pub struct HtsimTopo {
    /// Number of hosts.
    pub nodes: u32,
    /// Number of switch tiers (2 or 3 in htsim).
    pub tiers: u32,
    /// Hosts per pod (`Podsize`), if given.
    pub podsize: Option<u32>,
    /// One entry per tier, index = tier number.
    pub tier: Vec<HtsimTier>,
}

/// One `Tier k` block of a `.topo` file.
#[derive(Debug, Clone, PartialEq)]
pub struct HtsimTier {
    /// Speed of this tier's downlinks (`Downlink_speed_Gbps`).
    pub downlink_gbps: f64,
    /// Downlink ports per switch (`Radix_Down`).
    pub radix_down: u32,
    /// Uplink ports per switch (`Radix_Up`); absent for the top tier.
    pub radix_up: Option<u32>,
    /// Propagation delay of the downlinks (`Downlink_Latency_ns`).
    pub downlink_latency_ns: u64,
    /// Per-hop switching delay (`Switch_Latency_ns`, default 0).
    pub switch_latency_ns: u64,
    /// Down:up capacity ratio (`Oversubscribed`, default 1).
    pub oversubscribed: u32,
    /// Parallel links per connected switch pair below (`Bundle`, default 1).
    pub bundle: u32,
}

impl HtsimTopo {
    /// Reads and parses a `.topo` file.
    pub fn from_file(path: &Path) -> Result<HtsimTopo, WorkloadError> {
        parse_topo(&read_to_string(path)?, &path.display().to_string())
    }
}

/// A tier block while it is being read: every key is optional until the end.
#[derive(Default)]
struct TierDraft {
    index: usize,
    /// Line of the `Tier k` header, for errors about the block as a whole.
    line: usize,
    /// The top tier has no uplinks.
    top: bool,
    speed: Option<f64>,
    // Integers are kept as u64 (parsing caps them at u32::MAX) so that one
    // setter serves every keyword.
    radix_down: Option<u64>,
    radix_up: Option<u64>,
    latency: Option<u64>,
    switch_latency: Option<u64>,
    oversub: Option<u64>,
    bundle: Option<u64>,
    queue_up: Option<u64>,
    queue_down: Option<u64>,
}

/// Parses an htsim `.topo` file. Keywords are case-insensitive, as in htsim,
/// and each may appear once per block. `Queue_Up` and `Queue_Down` are
/// checked and ignored: buffer sizes are tailsim's own configuration, not
/// part of the topology's shape.
pub fn parse_topo(text: &str, origin: &str) -> Result<HtsimTopo, WorkloadError> {
    let (mut nodes, mut tiers, mut podsize): (Option<u64>, Option<u64>, Option<u64>) = (None, None, None);
    // Tier blocks in file order; the last one is the block being read.
    let mut blocks: Vec<TierDraft> = Vec::new();
    for (n, line) in crate::data_lines(text) {
        let err = |msg: String| WorkloadError::at_line(origin, n, msg);
        let tokens: Vec<&str> = line.split_whitespace().collect();
        let [key, value] = tokens[..] else {
            return Err(err(format!("expected \"Keyword value\", found {} words", tokens.len())));
        };
        let key = key.to_ascii_lowercase();
        let num = |min: u64| -> Result<u64, WorkloadError> {
            match value.parse::<u64>() {
                Ok(v) if v >= min && v <= u64::from(u32::MAX) => Ok(v),
                _ => Err(err(format!("bad {key} \"{value}\": expected an integer >= {min}"))),
            }
        };
        let set = |slot: &mut Option<u64>, v: u64| match slot.replace(v) {
            Some(_) => Err(err(format!("second \"{key}\" setting"))),
            None => Ok(()),
        };
        if key == "tier" {
            let count = tiers.ok_or_else(|| err("\"Tiers N\" must come before the first Tier block".into()))?;
            let index = num(0)?;
            if index >= count {
                return Err(err(format!("tier {index} is out of range: \"Tiers {count}\" allows 0..{count}")));
            }
            if blocks.iter().any(|b| b.index as u64 == index) {
                return Err(err(format!("second block for tier {index}")));
            }
            let top = index + 1 == count;
            blocks.push(TierDraft { index: index as usize, line: n, top, ..TierDraft::default() });
            continue;
        }
        let Some(d) = blocks.last_mut() else {
            match key.as_str() {
                "nodes" => set(&mut nodes, num(1)?)?,
                "tiers" => set(&mut tiers, num(1)?)?,
                "podsize" => set(&mut podsize, num(1)?)?,
                _ => return Err(err(format!("expected Nodes, Tiers, Podsize or Tier, found \"{key}\""))),
            }
            continue;
        };
        let t = d.index;
        match key.as_str() {
            "downlink_speed_gbps" => {
                let v: f64 =
                    value.parse().ok().filter(|v: &f64| v.is_finite() && *v > 0.0).ok_or_else(|| {
                        err(format!("bad downlink_speed_gbps \"{value}\": expected a positive number"))
                    })?;
                if d.speed.replace(v).is_some() {
                    return Err(err(format!("second \"{key}\" setting")));
                }
            }
            "radix_down" => set(&mut d.radix_down, num(1)?)?,
            "radix_up" if d.top => return Err(err(format!("top tier {t} cannot have Radix_Up: it has no uplinks"))),
            "radix_up" => set(&mut d.radix_up, num(1)?)?,
            "oversubscribed" => set(&mut d.oversub, num(1)?)?,
            "bundle" => set(&mut d.bundle, num(1)?)?,
            "downlink_latency_ns" => set(&mut d.latency, num(0)?)?,
            "switch_latency_ns" => set(&mut d.switch_latency, num(0)?)?,
            "queue_up" => set(&mut d.queue_up, num(0)?)?,
            "queue_down" => set(&mut d.queue_down, num(0)?)?,
            "nodes" | "tiers" | "podsize" => {
                return Err(err(format!("\"{key}\" must come before the first Tier block")))
            }
            _ => return Err(err(format!("unknown keyword \"{key}\" in tier {t}"))),
        }
    }
    finish_topo(origin, nodes, tiers, podsize, blocks)
}

fn finish_topo(
    origin: &str,
    nodes: Option<u64>,
    tiers: Option<u64>,
    podsize: Option<u64>,
    mut blocks: Vec<TierDraft>,
) -> Result<HtsimTopo, WorkloadError> {
    // Every integer went through `num`, which caps it at u32::MAX, so the
    // `as u32` casts below are lossless.
    let nodes = nodes.ok_or_else(|| WorkloadError::whole(origin, "missing \"Nodes N\""))? as u32;
    let tiers = tiers.ok_or_else(|| WorkloadError::whole(origin, "missing \"Tiers N\""))? as u32;
    blocks.sort_by_key(|b| b.index);
    // Indices are unique and below `tiers`, so a gap shows as a mismatch.
    if let Some(k) = (0..tiers as usize).find(|&k| blocks.get(k).is_none_or(|b| b.index != k)) {
        return Err(WorkloadError::whole(origin, format!("missing block \"Tier {k}\"")));
    }
    let mut tier = Vec::with_capacity(blocks.len());
    for d in blocks {
        let k = d.index;
        let missing = |what: &str| WorkloadError::at_line(origin, d.line, format!("tier {k} lacks {what}"));
        if !d.top && d.radix_up.is_none() {
            return Err(missing("Radix_Up"));
        }
        tier.push(HtsimTier {
            downlink_gbps: d.speed.ok_or_else(|| missing("Downlink_speed_Gbps"))?,
            radix_down: d.radix_down.ok_or_else(|| missing("Radix_Down"))? as u32,
            radix_up: d.radix_up.map(|v| v as u32),
            downlink_latency_ns: d.latency.ok_or_else(|| missing("Downlink_Latency_ns"))?,
            switch_latency_ns: d.switch_latency.unwrap_or(0),
            oversubscribed: d.oversub.unwrap_or(1) as u32,
            bundle: d.bundle.unwrap_or(1) as u32,
        });
    }
    Ok(HtsimTopo { nodes, tiers, podsize: podsize.map(|p| p as u32), tier })
}

/// Switch counts of a 3-tier fat tree, derived from an [`HtsimTopo`].
///
/// Numbering follows htsim, so per-switch results can be compared:
/// * host `h` hangs off edge switch `h / hosts_per_edge`; edge switch `e` is
///   in pod `e / edges_per_pod` (so host `h` is in pod `h / hosts_per_pod`);
/// * aggregation switch `p * aggs_per_pod + j` is the `j`-th of pod `p`, and
///   every edge switch of a pod connects to every aggregation switch of that
///   pod (with tier 1's `bundle` parallel links);
/// * core wiring is **strided**: the `j`-th aggregation switch of every pod
///   connects to cores `j, j + aggs_per_pod, j + 2*aggs_per_pod, ...`
///   (`cores_per_agg` of them, each with tier 2's `bundle` parallel links),
///   so core `c` serves position `c % aggs_per_pod` in every pod. That is
///   what `FatTreeTopology::init_network` in uet-htsim does
///   (`core = podpos + _agg_switches_per_pod * l`). Older htsim code and its
///   inter-DC variant number the cores in **blocks** instead (position `j`
///   gets cores `j*cores_per_agg ..`). The two trees are isomorphic (only
///   core labels differ): statistics over many flows do not depend on the
///   choice, but per-core counters and individual ECMP path choices do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FatTreeShape {
    pub hosts: u32,
    pub pods: u32,
    pub hosts_per_pod: u32,
    pub hosts_per_edge: u32,
    pub edges_per_pod: u32,
    pub aggs_per_pod: u32,
    /// Total core switches.
    pub cores: u32,
    /// Distinct cores each aggregation switch connects to.
    pub cores_per_agg: u32,
}

impl FatTreeShape {
    pub fn edges(&self) -> u32 {
        self.pods * self.edges_per_pod
    }
    pub fn aggs(&self) -> u32 {
        self.pods.saturating_mul(self.aggs_per_pod)
    }
    /// Edge switches + aggregation switches + cores.
    pub fn switches(&self) -> u32 {
        self.edges().saturating_add(self.aggs()).saturating_add(self.cores)
    }
    /// The cores reached by the aggregation switch at in-pod position `j`
    /// (htsim's strided convention, see the type's documentation).
    pub fn cores_of_agg_position(&self, j: u32) -> impl Iterator<Item = u32> {
        let stride = self.aggs_per_pod;
        (0..self.cores_per_agg).map(move |l| j + stride * l)
    }
}

impl HtsimTopo {
    /// Derives the switch counts of a 3-tier fat tree and checks that the
    /// file is self-consistent, the way htsim's custom-topology code does.
    ///
    /// Steps: pods = nodes / Podsize; hosts_per_edge = tier-0 Radix_Down;
    /// edges_per_pod = Podsize / hosts_per_edge; the edge uplink count implied
    /// by link speeds and tier-0 oversubscription must equal
    /// edges x tier-0 Radix_Up; aggs_per_pod = tier-0 Radix_Up / tier-1 Bundle
    /// and tier-1 Radix_Down = edges_per_pod x tier-1 Bundle; the aggregation
    /// uplink count (speeds, tier-1 oversubscription) must equal aggs x tier-1
    /// Radix_Up; cores = aggregation uplinks / tier-2 Radix_Down, a multiple of
    /// aggs_per_pod; cores_per_agg = cores / aggs_per_pod with
    /// cores_per_agg x tier-2 Bundle = tier-1 Radix_Up; and tier-2 Radix_Down =
    /// pods x tier-2 Bundle (each core reaches one aggregation switch per pod).
    ///
    /// Errors carry the origin `"fat-tree shape"`, since `HtsimTopo` does not
    /// remember its file; callers that know the path may replace it.
    pub fn fat_tree_shape(&self) -> Result<FatTreeShape, WorkloadError> {
        let fail = |msg: String| Err(WorkloadError::whole("fat-tree shape", msg));
        let [t0, t1, t2] = &self.tier[..] else {
            return fail(format!("needs a 3-tier topology, this one has {} tiers", self.tier.len()));
        };
        let podsize = match self.podsize {
            Some(p) if p > 0 => u64::from(p),
            _ => return fail("needs a positive \"Podsize\" to know how many hosts a pod has".into()),
        };
        // HtsimTopo has public fields, so guard the divisors even though
        // parse_topo never produces zeros.
        if [t0, t1, t2].iter().any(|t| t.radix_down == 0 || t.bundle == 0 || t.oversubscribed == 0) {
            return fail("Radix_Down, Bundle and Oversubscribed must be positive in every tier".into());
        }
        let (up0, up1) = (u64::from(t0.radix_up.unwrap_or(0)), u64::from(t1.radix_up.unwrap_or(0)));
        let (b1, b2) = (u64::from(t1.bundle), u64::from(t2.bundle));
        let (down1, down2) = (u64::from(t1.radix_down), u64::from(t2.radix_down));
        let hosts = u64::from(self.nodes);
        if hosts % podsize != 0 {
            return fail(format!("{hosts} hosts do not split into pods of {podsize}"));
        }
        if t0.bundle != 1 {
            return fail(format!("tier 0 Bundle must be 1 (one link per host), found {}", t0.bundle));
        }
        let pods = hosts / podsize;
        let hosts_per_edge = u64::from(t0.radix_down);
        if podsize % hosts_per_edge != 0 {
            return fail(format!("Podsize {podsize} is not a multiple of tier-0 Radix_Down {hosts_per_edge}"));
        }
        let edges_per_pod = podsize / hosts_per_edge;
        let edges = pods * edges_per_pod;

        let edge_uplinks = edges.saturating_mul(up0);
        if links(hosts as f64 * t0.downlink_gbps, t1.downlink_gbps, t0.oversubscribed) != Some(edge_uplinks) {
            return fail(format!(
                "{edges} edge switches with Radix_Up {up0} do not match {hosts} hosts at {} Gbps, \
                 uplinks at {} Gbps and oversubscription {}",
                t0.downlink_gbps, t1.downlink_gbps, t0.oversubscribed
            ));
        }
        if up0 % b1 != 0 || down1 != edges_per_pod * b1 {
            return fail(format!(
                "tier-1 Radix_Down {down1} must be {edges_per_pod} edge switches per pod x tier-1 Bundle {b1}, \
                 and tier-0 Radix_Up {up0} a multiple of that Bundle"
            ));
        }
        let aggs_per_pod = up0 / b1;
        let agg_uplinks = pods.saturating_mul(aggs_per_pod).saturating_mul(up1);
        if links(edge_uplinks as f64 * t1.downlink_gbps, t2.downlink_gbps, t1.oversubscribed) != Some(agg_uplinks) {
            return fail(format!(
                "{} aggregation switches with Radix_Up {up1} do not match {edge_uplinks} edge uplinks at {} Gbps, \
                 core links at {} Gbps and oversubscription {}",
                pods * aggs_per_pod,
                t1.downlink_gbps,
                t2.downlink_gbps,
                t1.oversubscribed
            ));
        }
        if agg_uplinks % down2 != 0 || (agg_uplinks / down2) % aggs_per_pod != 0 {
            return fail(format!(
                "{agg_uplinks} aggregation uplinks do not divide into cores of Radix_Down {down2} \
                 shared evenly by {aggs_per_pod} aggregation switches per pod"
            ));
        }
        let cores = agg_uplinks / down2;
        let cores_per_agg = cores / aggs_per_pod;
        if cores_per_agg.saturating_mul(b2) != up1 || down2 != pods * b2 {
            return fail(format!(
                "{cores} cores: tier-1 Radix_Up {up1} must be {cores_per_agg} cores per aggregation switch \
                 x tier-2 Bundle {b2}, and tier-2 Radix_Down {down2} must be {pods} pods x that Bundle"
            ));
        }
        let Ok(cores) = u32::try_from(cores) else {
            return fail(format!("{cores} core switches are too many"));
        };
        // The other counts are bounded by `hosts` or by a u32 radix.
        Ok(FatTreeShape {
            hosts: hosts as u32,
            pods: pods as u32,
            hosts_per_pod: podsize as u32,
            hosts_per_edge: hosts_per_edge as u32,
            edges_per_pod: edges_per_pod as u32,
            aggs_per_pod: aggs_per_pod as u32,
            cores,
            cores_per_agg: cores_per_agg as u32,
        })
    }
}

/// Number of links of speed `link_gbps` needed to carry `capacity_gbps`
/// with oversubscription `oversub`, if it is a whole number.
fn links(capacity_gbps: f64, link_gbps: f64, oversub: u32) -> Option<u64> {
    let x = capacity_gbps / (link_gbps * f64::from(oversub));
    let r = x.round();
    ((x - r).abs() <= 1e-9 * r.max(1.0) && r >= 1.0).then_some(r as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::read_trace;
    use std::path::PathBuf;

    /// The example files shipped in the repository (workloads/htsim); they must be there.
    fn shared(file: &str) -> Option<PathBuf> {
        let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../workloads/htsim").join(file);
        assert!(p.is_file(), "{} is missing from the repository", p.display());
        Some(p)
    }

    #[test]
    fn cm_files_equal_their_flows_twins() {
        for (stem, count) in [("perm128_2MB", 128), ("perm128_16MB", 128), ("ws128_100g_l50_2ms", 961)] {
            let Some(cm) = shared(&format!("{stem}.cm")) else {
                return;
            };
            let from_cm = read_trace(&cm).unwrap();
            let from_flows = read_trace(&cm.with_extension("flows")).unwrap();
            assert_eq!(from_cm.len(), count, "{stem}");
            assert_eq!(from_cm, from_flows, "{stem}");
        }
        let Some(ws) = shared("ws128_100g_l50_2ms.cm") else {
            return;
        };
        let flows = read_trace(&ws).unwrap();
        let first = TraceFlow { id: Some(1), src: 16, dst: 33, size_bytes: 7861, start_ps: 0, route: None };
        let last =
            TraceFlow { id: Some(961), src: 2, dst: 72, size_bytes: 416_320, start_ps: 1_993_000_000, route: None };
        assert_eq!((&flows[0], &flows[960]), (&first, &last));
        let perm = read_trace(&shared("perm128_16MB.cm").unwrap()).unwrap();
        assert!(perm.iter().all(|f| f.size_bytes == 16_000_000 && f.start_ps == 0));
    }

    #[test]
    fn shipped_fat_trees() {
        for (file, gbps) in [("fat_tree_128_10g.topo", 10.0), ("fat_tree_128_100g.topo", 100.0)] {
            let Some(path) = shared(file) else { return };
            let topo = HtsimTopo::from_file(&path).unwrap();
            assert_eq!((topo.nodes, topo.tiers, topo.podsize), (128, 3, Some(16)));
            for t in &topo.tier {
                assert_eq!((t.downlink_gbps, t.downlink_latency_ns, t.switch_latency_ns), (gbps, 1000, 0));
                assert_eq!((t.oversubscribed, t.bundle), (1, 1));
            }
            assert_eq!(topo.tier[2].radix_up, None);
            let s = topo.fat_tree_shape().unwrap();
            assert_eq!((s.hosts, s.edges(), s.pods, s.cores, s.aggs()), (128, 32, 8, 16, 32));
            assert_eq!((s.hosts_per_edge, s.edges_per_pod, s.aggs_per_pod, s.cores_per_agg), (4, 4, 4, 4));
            assert_eq!(s.switches(), 80);
            assert_eq!(s.cores_of_agg_position(1).collect::<Vec<_>>(), vec![1, 5, 9, 13]);
        }
    }

    const TOPO: &str = "Nodes 16\nTiers 3\nPodsize 4\n\
        Tier 0\nDownlink_speed_Gbps 10\nRadix_Down 2\nRadix_Up 2\nDownlink_Latency_ns 500\n\
        Tier 1\nDownlink_speed_Gbps 10\nRadix_Down 2\nRADIX_UP 2\nDownlink_Latency_ns 500\nqueue_down 100000\n\
        tier 2\ndownlink_speed_gbps 10\nradix_down 4\ndownlink_latency_ns 500\nSwitch_Latency_ns 100\n";

    #[test]
    fn small_fat_tree_and_inconsistent_ones() {
        let topo = parse_topo(TOPO, "k4.topo").unwrap();
        assert_eq!(topo.tier[2].switch_latency_ns, 100);
        let s = topo.fat_tree_shape().unwrap();
        assert_eq!((s.pods, s.edges(), s.aggs(), s.cores, s.cores_per_agg), (4, 8, 8, 4, 2));
        assert_eq!(s.cores_of_agg_position(1).collect::<Vec<_>>(), vec![1, 3]);

        let broken = [
            ("RADIX_UP 2", "RADIX_UP 1", "aggregation switches"),
            ("Podsize 4", "Podsize 5", "do not split into pods"),
            ("radix_down 4", "radix_down 2", "tier-2 Radix_Down 2 must be 4 pods"),
            ("Tier 1\nDownlink_speed_Gbps 10", "Tier 1\nDownlink_speed_Gbps 40", "edge switches"),
        ];
        for (from, to, needle) in broken {
            let topo = parse_topo(&TOPO.replacen(from, to, 1), "k4.topo").unwrap();
            let e = topo.fat_tree_shape().unwrap_err();
            assert!(e.msg.contains(needle), "{from:?} -> {to:?}: {e}");
        }
        let two_tier =
            parse_topo("Nodes 4\nTiers 1\nTier 0\nDownlink_speed_Gbps 1\nRadix_Down 4\nDownlink_Latency_ns 1\n", "t")
                .unwrap();
        assert!(two_tier.fat_tree_shape().unwrap_err().msg.contains("3-tier"));
    }

    #[test]
    fn topo_errors_name_the_line() {
        let cases = [
            (TOPO.replacen("Radix_Down 2", "Radix_Down two", 1), 6, "bad radix_down \"two\""),
            (TOPO.replacen("Radix_Down 2", "Radix_Down 2 3", 1), 6, "found 3 words"),
            (TOPO.replacen("Radix_Up 2", "Radix_Up 2\nRadix_Up 2", 1), 8, "second \"radix_up\""),
            (TOPO.replacen("queue_down 100000", "queue_down 1\nQueue_Down 2", 1), 15, "second \"queue_down\""),
            (TOPO.replacen("Podsize 4", "Colour 4", 1), 3, "expected Nodes, Tiers"),
            (TOPO.replacen("Tier 1", "Tier 3", 1), 9, "tier 3 is out of range"),
            (TOPO.replacen("Tier 1", "Tier 0", 1), 9, "second block for tier 0"),
            (TOPO.replacen("queue_down", "colour", 1), 14, "unknown keyword \"colour\""),
            (TOPO.replacen("Downlink_Latency_ns 500\nqueue", "queue", 1), 9, "tier 1 lacks Downlink_Latency_ns"),
            (TOPO.replacen("Switch_Latency_ns 100", "Radix_Up 1", 1), 19, "top tier 2 cannot have Radix_Up"),
            (TOPO.replacen("Tier 1", "Tier 1\nNodes 2", 1), 10, "must come before the first Tier"),
            (TOPO.replacen("Downlink_speed_Gbps 10", "Downlink_speed_Gbps -1", 1), 5, "positive number"),
            (format!("{TOPO}Nodes 3\n"), 20, "must come before the first Tier"),
        ];
        for (text, line, needle) in cases {
            let e = parse_topo(&text, "k4.topo").unwrap_err();
            assert_eq!(e.line, Some(line), "{e}");
            assert!(e.msg.contains(needle), "{e} lacks {needle:?}");
        }
        let e = parse_topo(&TOPO.replacen("Tiers 3", "Tiers 4", 1), "k4.topo").unwrap_err();
        assert!(e.msg.contains("missing block \"Tier 3\""), "{e}");
        assert!(parse_topo("Tier 0\n", "t").unwrap_err().msg.contains("\"Tiers N\" must come before"));
    }

    #[test]
    fn cm_keywords_in_any_order_and_errors() {
        let text = "# made by hand\nNodes 4\nConnections 2\nTriggers 1\n\
                    0->1 size 100 start 1.5 send_done_trigger 1 prio 3\n\
                    3->2   start 0.0000005 id 9 size 7\ntrigger id 1 oneshot\nFailures 0\n";
        let flows = parse_cm(text, "h.cm").unwrap();
        assert_eq!(flows[0], TraceFlow { id: None, src: 0, dst: 1, size_bytes: 100, start_ps: 1_500_000, route: None });
        assert_eq!(flows[1], TraceFlow { id: Some(9), src: 3, dst: 2, size_bytes: 7, start_ps: 1, route: None });

        let h = "Nodes 4\nConnections 1\n";
        let cases = [
            (format!("{h}0->1 start 0\n"), 3, "missing \"size BYTES\""),
            (format!("{h}0->1 size 5\n"), 3, "missing \"start MICROSECONDS\""),
            (format!("{h}0->1 start 0 size\n"), 3, "keyword \"size\" has no value"),
            (format!("{h}0->1 start 0 size 5 colour red\n"), 3, "unknown keyword \"colour\""),
            (format!("{h}0->1 start 0 size 5 size 6\n"), 3, "appears twice"),
            (format!("{h}0->1 start x size 5\n"), 3, "bad start"),
            (format!("{h}0->1 start 0 size 0\n"), 3, "at least 1 byte"),
            (format!("{h}0->1 start 0 size 5 id 0\n"), 3, "id 0"),
            (format!("{h}0->1 start 0 size 5 prio high\n"), 3, "bad prio"),
            (format!("{h}0->1 trigger 2 size 5\n"), 3, "triggered flows are not supported"),
            (format!("{h}1->1 start 0 size 5\n"), 3, "two different hosts"),
            (format!("{h}a->1 start 0 size 5\n"), 3, "bad source \"a\""),
            (format!("{h}0->4 start 0 size 5\n"), 3, "host 4 is out of range"),
            (format!("{h}\n0->1 start 0 size 5\nfailure switch_type TOR\n"), 5, "link failures"),
            (format!("{h}0->1 start 0 size 5\n0->2 start 0 size 5\n"), 2, "says 1 connections but the file has 2"),
            (format!("{h}Nodes 5\n"), 3, "second \"Nodes\""),
            ("Nodes many\n".into(), 1, "expected \"Nodes N\""),
            (format!("{h}hello\n"), 3, "found \"hello\""),
            (format!("{h}Triggers 1\n0->1 start 0 size 5\n"), 3, "says 1 triggers but the file has 0"),
        ];
        for (text, line, needle) in cases {
            let e = parse_cm(&text, "h.cm").unwrap_err();
            assert_eq!(e.line, Some(line), "{e}");
            assert!(
                e.to_string().starts_with(&format!("h.cm:{line}: ")) && e.msg.contains(needle),
                "{e} lacks {needle:?}"
            );
        }
        assert!(parse_cm("Connections 0\n", "h.cm").unwrap_err().msg.contains("missing \"Nodes N\""));
    }

    #[test]
    fn flows_errors_name_the_line() {
        assert_eq!(parse_flows("1\n5 0 1 10 0.25\n", "f").unwrap()[0].start_ps, 250_000);
        let cases = [
            ("x\n", 1, "expected the number of flows"),
            ("2\n1 0 1 10 0\n", 1, "says 2 flows but 1 follow"),
            ("1\n1 0 1 10\n", 2, "expected 5 fields"),
            ("1\n1 0 0 10 0\n", 2, "two different hosts"),
            ("1\n1 0 1 10 -1\n", 2, "negative"),
            ("1\n\n1 0 1 ten 0\n", 3, "bad size_bytes \"ten\""),
        ];
        for (text, line, needle) in cases {
            let e = parse_flows(text, "f.flows").unwrap_err();
            assert_eq!(e.line, Some(line), "{e}");
            assert!(e.msg.contains(needle), "{e} lacks {needle:?}");
        }
        assert_eq!(parse_flows("# only a comment\n", "f").unwrap_err().line, None);
    }
}
