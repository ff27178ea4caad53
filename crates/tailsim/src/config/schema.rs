//! The experiment file's schema. Every table rejects unknown keys; defaults are documented in
//! docs/config.md and applied in `build.rs`.

use super::units::{BufferValue, Duration, Rate, Size};
use serde::Deserialize;

#[derive(Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct ExperimentConfig {
    pub name: Option<String>,
    #[serde(default = "default_seed")]
    pub seed: u64,
    pub topology: TopologyCfg,
    #[serde(default)]
    pub host: HostCfg,
    #[serde(default)]
    pub switch: SwitchCfg,
    #[serde(default)]
    pub routing: RoutingCfg,
    #[serde(default)]
    pub packet: PacketCfg,
    #[serde(default)]
    pub transport: TransportCfg,
    #[serde(default)]
    pub workload: Vec<WorkloadCfg>,
    #[serde(default)]
    pub fault: Vec<FaultCfg>,
    #[serde(default)]
    pub stop: StopCfg,
    /// QJUMP's host regulators (absent = none).
    pub qjump: Option<QjumpCfg>,
    /// Priority flow control at every switch (net/mech/pfc.rs).
    pub pfc: Option<PfcCfg>,
    /// FastLane's drop notifications at every switch, and the senders' reaction (net/mech/fastlane.rs).
    pub fastlane: Option<FastLaneCfg>,
    /// CoDel ECN marking at every switch port (net/mech/codel.rs).
    pub codel: Option<CodelCfg>,
    /// BurstRadar's microburst telemetry at one switch (net/mech/burstradar.rs).
    pub burstradar: Option<BurstRadarCfg>,
    /// SQR's packet caching at switches, with its link-failure recovery (net/mech/sqr/).
    pub sqr: Option<SqrCfg>,
    /// LinkGuardian's link-local retransmission over corrupting links (net/mech/linkguardian.rs).
    pub linkguardian: Option<LinkGuardianCfg>,
    #[serde(default)]
    pub output: OutputCfg,
}

fn default_seed() -> u64 {
    1
}

#[derive(Deserialize, Debug, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct TopologyCfg {
    /// A named fabric: "pfabric-144", "homa-144", "detail-128", "detail-16", "fastlane-128", "fastlane-16".
    pub preset: Option<String>,
    /// "leaf-spine", "fat-tree", "star" (one switch), "htsim" (a .topo file), "file" (a TOML link list).
    pub kind: Option<String>,
    /// Star: each host's link rate (the list's length is the number of hosts).
    pub host_rates: Option<Vec<Rate>>,
    /// Links left out of the built fabric (each a pair of ends); routes are computed without them.
    pub remove_links: Option<Vec<[String; 2]>>,
    pub leaves: Option<u32>,
    pub spines: Option<u32>,
    pub hosts_per_leaf: Option<u32>,
    pub edge_rate: Option<Rate>,
    pub core_rate: Option<Rate>,
    pub edge_delay: Option<Duration>,
    pub core_delay: Option<Duration>,
    pub k: Option<u32>,
    pub rate: Option<Rate>,
    pub delay: Option<Duration>,
    /// Fat tree of any shape (instead of `k`): pods, ToRs per pod, hosts per ToR, aggregation switches per
    /// pod, cores (a multiple of `aggs_per_pod`: each aggregation switch links to cores / aggs_per_pod cores).
    pub pods: Option<u32>,
    pub tors_per_pod: Option<u32>,
    pub hosts_per_tor: Option<u32>,
    pub aggs_per_pod: Option<u32>,
    pub cores: Option<u32>,
    /// Fat tree: the ToR–aggregation rate (default `rate`); `edge_rate` is host–ToR and `core_rate`
    /// aggregation–core there, each defaulting to `rate` too.
    pub agg_rate: Option<Rate>,
    pub path: Option<String>,
    /// kind = "inline": the topology file's entries written in the experiment itself.
    pub hosts: Option<u32>,
    pub switch: Option<Vec<TopoSwitch>>,
    pub link: Option<Vec<TopoLink>>,
}

/// A switch of a topology file or an inline topology.
#[derive(Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct TopoSwitch {
    pub name: String,
    pub delay: Option<Duration>,
}

/// A link of a topology file or an inline topology.
#[derive(Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct TopoLink {
    pub a: String,
    pub b: String,
    pub rate: Rate,
    pub delay: Option<Duration>,
}

#[derive(Deserialize, Debug, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct HostCfg {
    pub tx_delay: Option<Duration>,
    pub rx_delay: Option<Duration>,
    /// Packets the receive path processes at once, each for `rx_delay` (default: no limit, a pure delay).
    pub rx_parallel: Option<u32>,
    pub nic_buffer: Option<BufferValue>,
    /// The order the NIC sends in: "priority", "fifo" or "per-flow-round-robin" (default per transport).
    pub nic_scheduler: Option<String>,
}

/// One threshold for every class, or one per class.
#[derive(Debug, Clone)]
pub enum EcnThreshold {
    All(Size),
    PerClass(Vec<Size>),
}

/// A size, or a list of sizes, with `expected` appended to any error.
fn size_or_sizes<E: serde::de::Error>(v: toml::Value, expected: &str) -> Result<Result<Size, Vec<Size>>, E> {
    let size =
        |x: toml::Value| Size::deserialize(x).map_err(|e| E::custom(format!("{}; {expected}", e.message().trim())));
    match v {
        toml::Value::Array(a) => a.into_iter().map(size).collect::<Result<Vec<_>, _>>().map(Err),
        other => size(other).map(Ok),
    }
}

impl<'de> Deserialize<'de> for EcnThreshold {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let expected = "expected a size such as \"22.5KB\" or a list of 8 sizes (one per class)";
        Ok(match size_or_sizes(toml::Value::deserialize(d)?, expected)? {
            Ok(k) => EcnThreshold::All(k),
            Err(v) => EcnThreshold::PerClass(v),
        })
    }
}

/// Class thresholds: explicit sizes, or a rule that derives them from the workload.
#[derive(Debug, Clone)]
pub enum ClassThresholds {
    Sizes(Vec<Size>),
    Rule(String),
}

impl<'de> Deserialize<'de> for ClassThresholds {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let expected =
            "expected a list of increasing sizes such as [\"100KB\", \"1MB\"], or \"optimal\" or \"equal-count\"";
        match toml::Value::deserialize(d)? {
            toml::Value::String(s) => Ok(ClassThresholds::Rule(s)),
            v @ toml::Value::Array(_) => {
                Ok(ClassThresholds::Sizes(size_or_sizes::<D::Error>(v, expected)?.unwrap_err()))
            }
            other => Err(D::Error::custom(format!("found {}; {expected}", other.type_str()))),
        }
    }
}

#[derive(Deserialize, Debug, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct SwitchCfg {
    /// Per-port limit (with buffer_mode = "per-port") or "unlimited".
    pub buffer: Option<BufferValue>,
    /// "per-port" (default) or "shared".
    pub buffer_mode: Option<String>,
    pub shared_buffer: Option<Size>,
    pub alpha: Option<f64>,
    pub ecn_threshold: Option<EcnThreshold>,
    /// What ECN compares K with: "per-class" (the packet's class queue, default) or "per-port" (the whole
    /// port's queue, PIAS's default).
    pub ecn_mode: Option<String>,
    /// NDP's cut payload: a data packet that would take its class queue at a switch port past this size is
    /// trimmed to its header and sent at class 0 (default for transport "ndp": 8 full data packets).
    pub trim: Option<Size>,
    /// Queue discipline of every port, NICs included: "fifo" (8 strict-priority FIFO classes, default) or
    /// "pfabric" (priority dropping and scheduling by packet rank).
    pub queue: Option<String>,
    /// pFabric: send the earliest packet of the most urgent flow (true, default) or strictly the most
    /// urgent packet (false: the paper's ablation).
    pub starvation_prevention: Option<bool>,
    /// pFabric: buffers per port served by strict priority, each of `buffer` bytes (2 for pFabric-EDF).
    pub pfabric_queues: Option<u8>,
    /// FIFO, per-port buffers: bytes of the port buffer reserved for each class in use (pFabric §6: 15KB).
    pub class_reserve: Option<Size>,
    /// How many classes get `class_reserve` (default: the classes the transport uses).
    pub reserved_classes: Option<u8>,
    /// Bounce drops: a switch turns a dropped data packet into a notice to its source (net/mech/bounce.rs).
    pub bounce: Option<bool>,
    /// "output-queued" (default) or "cioq" (ingress queues and a crossbar; net/mech/cioq.rs).
    pub architecture: Option<String>,
    /// CIOQ: bytes of each ingress queue (default: `buffer`).
    pub ingress_buffer: Option<Size>,
    /// CIOQ: crossbar speed over the link rate (default 4).
    pub speedup: Option<u32>,
    /// Forwarding latency of every switch (for `kind = "htsim"` it overrides the file's per-tier latency; a
    /// topology file's per-switch `delay` wins over it).
    pub delay: Option<Duration>,
}

#[derive(Deserialize, Debug, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct RoutingCfg {
    /// "ecmp" (default), "spray", "adaptive" (least-queued equal-cost port) or "detail" (DeTail's favoured
    /// ports; net/mech/adaptive_lb.rs).
    pub load_balance: Option<String>,
    /// With "detail": drain-byte thresholds of the favoured-port sets, increasing (default 16 KiB, 64 KiB).
    pub alb_thresholds: Option<Vec<Size>>,
    /// Re-converge routes this long after a link goes down or up (absent: routes never change).
    pub reroute: Option<Duration>,
    /// With "ecmp": whose choice among equal-cost next hops, "tailsim" (a salted flow hash, the default) or
    /// "first" (ns-3's global routing: always the first route).
    pub hash: Option<String>,
}

#[derive(Deserialize, Debug, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct PacketCfg {
    pub mss: Option<u32>,
    pub header: Option<u32>,
    pub ack: Option<u32>,
    pub wire_overhead: Option<u32>,
}

#[derive(Deserialize, Debug, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct TransportCfg {
    /// "tcp", "dctcp", "cubic", "pfabric", "pias", "ideal", "homa", "phost", "ndp" or "rdma".
    pub kind: Option<String>,
    pub init_cwnd: Option<u32>,
    pub min_rto: Option<Duration>,
    pub max_rto: Option<Duration>,
    pub init_rto: Option<Duration>,
    pub dupthresh: Option<u32>,
    pub delayed_ack: Option<u32>,
    pub delayed_ack_timeout: Option<Duration>,
    pub sack: Option<bool>,
    pub dctcp_g: Option<f64>,
    pub dctcp_alpha_init: Option<f64>,
    /// CUBIC's C (segments / s³) and β (RFC 9438: 0.4 and 0.7).
    pub cubic_c: Option<f64>,
    pub cubic_beta: Option<f64>,
    pub class: Option<u8>,
    /// Packet priority numbers for pFabric queues: "none", "remaining", "bytes-sent", "flow-size", "class",
    /// "deadline".
    pub priority: Option<String>,
    /// Data packets' class by flow-size thresholds (pFabric §6): sizes, "optimal" (M/G/1 model) or
    /// "equal-count".
    pub class_thresholds: Option<ClassThresholds>,
    /// Number of classes for "optimal" / "equal-count" thresholds.
    pub classes: Option<u8>,
    /// What the thresholds compare: "flow-size" (default; "bytes-sent" for PIAS), "bytes-sent" or "last-byte"
    /// (bytes sent through the end of the packet: PIAS's size-aware variant for single-packet messages).
    pub class_by: Option<String>,
    /// Homa: bytes of headers in a data packet (Ethernet, IP, UDP, Homa: 76).
    pub header: Option<u32>,
    /// Homa: RTTbytes (default: computed from the topology).
    pub rtt_bytes: Option<Size>,
    /// Homa: priority levels for unscheduled packets (default: from the workload's unscheduled byte share).
    pub unscheduled_levels: Option<u8>,
    /// Homa: explicit unscheduled cutoffs (remaining message sizes), most urgent level first.
    pub unscheduled_cutoffs: Option<Vec<Size>>,
    /// Homa: messages a receiver grants to at once (default: the scheduled levels).
    pub overcommit: Option<u8>,
    /// Homa: hand the NIC one packet at a time (default true).
    pub pacer: Option<bool>,
    /// Homa: grants for a message's last RTTbytes may use unscheduled levels (default true).
    pub tail_boost: Option<bool>,
    /// Homa: receiver timeout before RESEND (default 2ms); pHost, NDP: before the receiver asks for missing
    /// packets again. Off by default where nothing can be lost.
    pub resend_timeout: Option<Duration>,
    /// pHost: send the free-token packets (the first BDP) at the high priority (default true).
    pub free_tokens_high: Option<bool>,
    /// pHost: a token's lifetime at the sender (default 1.5 full-packet times).
    pub token_expiry: Option<Duration>,
    /// pHost: when the receiver counts an unanswered token as expired (default 3 RTTs + token_expiry).
    pub token_timeout: Option<Duration>,
    /// pHost: how long a downgraded sender gets no tokens without sending (default 3 × BDP time).
    pub downgrade_for: Option<Duration>,
    /// TCP NewReno: ECN as RFC 3168 (ECN-capable data, the window halved once per window on an echoed mark).
    pub ecn: Option<bool>,
    /// Duplicate-ACK/SACK loss detection (false: timeouts only).
    pub fast_retransmit: Option<bool>,
    /// A fixed retransmission timeout (no RTT estimation, no backoff); RDMA's NIC timeout (default 1 ms).
    pub rto: Option<Duration>,
    /// RDMA: the responder acknowledges every n-th in-order packet and a message's last (default 1).
    pub ack_every: Option<u32>,
    /// Consecutive timeouts before probe mode (pFabric: 5); 0 = never.
    pub probe_after: Option<u32>,
    /// Upper bound of the congestion window, segments.
    pub max_cwnd: Option<u32>,
    /// FastLane's FL-PS option: the receiver reports out-of-order segments and the sender inflates its window.
    pub ooo_inflation: Option<bool>,
    /// Open each flow with SYN / SYN-ACK, and the SYN's first timeout (1 s).
    pub handshake: Option<bool>,
    pub syn_rto: Option<Duration>,
    /// Keep growing the window during the round an ECN mark cut (before Linux's CWR freeze was modelled).
    pub cwr_growth: Option<bool>,
    /// Slow start stops at ssthresh, as Linux's (default true; false: every acknowledged segment opens the
    /// window, however far past ssthresh, as before issue 15).
    pub slow_start_cap: Option<bool>,
    /// NDP: the order a receiver's pacer sends queued pulls in, "fair" (messages in turn) or "fifo".
    pub pull_order: Option<String>,
    /// NDP: a pull the receiver's pacer would send at once rides on the ACK or NACK that prompts it (default
    /// true, as htsim; false: always a PULL packet of its own).
    pub pull_on_ack: Option<bool>,
    /// NDP: a receiver's pulls leave one per this many bytes' time at its link rate (default: one full data
    /// frame with its wire overhead; htsim's pacer: the data frame and an ACK, over 0.99).
    pub pull_spacing: Option<Size>,
}

#[derive(Deserialize, Debug, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct WorkloadCfg {
    /// "poisson", "incast", "permutation", "trace", "retrieval", "workflow", "background".
    pub kind: Option<String>,
    /// Response (or flow) sizes drawn with equal probability.
    pub sizes: Option<Vec<Size>>,
    /// Retrievals / workflows per second per client.
    pub rate: Option<f64>,
    /// Host sets: a list of host numbers and "a-b" ranges, or "all", or "random:N".
    pub clients: Option<toml::Value>,
    pub servers: Option<toml::Value>,
    pub sources: Option<toml::Value>,
    pub destinations: Option<toml::Value>,
    /// Request size of a retrieval (default 10 B).
    pub request: Option<Size>,
    /// Workflows: "sequential" or "partition-aggregate".
    pub shape: Option<String>,
    /// Sequential workflows: retrievals per workflow.
    pub parts: Option<u32>,
    /// Partition-aggregate workflows: fan-outs drawn with equal probability.
    pub fanout: Option<Vec<u32>>,
    /// Partition-aggregate by total response (FastLane): the fan-out is a drawn total / the drawn size.
    pub totals: Option<Vec<Size>>,
    /// Background: flows kept going per source.
    pub per_source: Option<u32>,
    /// A built-in CDF name or a CDF file path.
    pub cdf: Option<String>,
    pub cdf_interp: Option<String>,
    pub cdf_unit_bytes: Option<u64>,
    pub size: Option<Size>,
    pub load: Option<f64>,
    pub pattern: Option<String>,
    pub flows: Option<u64>,
    pub start: Option<Duration>,
    pub until: Option<Duration>,
    pub senders: Option<u32>,
    pub dst: Option<u32>,
    pub interval: Option<Duration>,
    pub count: Option<u64>,
    pub path: Option<String>,
    /// Poisson: mean of the exponential deadlines given to flows smaller than `deadline_below`.
    pub deadline_mean: Option<Duration>,
    /// Flows smaller than this get deadlines (default 200KB).
    pub deadline_below: Option<Size>,
    /// A deadline is at least this multiple of the flow's ideal FCT (default 1.25).
    pub deadline_min_slack: Option<f64>,
    /// Strict-priority class (0–7) of every data packet and ACK of this workload's flows, instead of the
    /// transport's `class` / `class_thresholds` (a QJUMP level per application, as on the testbed).
    pub class: Option<u8>,
    /// cbr: the sending host.
    pub src: Option<u32>,
    /// cbr, instead of `src` and `dst`: every host a source, to the host this many further on (modulo the
    /// number of hosts).
    pub shift: Option<u32>,
    /// cbr: the sending rate during on-periods.
    pub line_rate: Option<Rate>,
    /// cbr: packet sizes, [[bytes, cumulative probability], …] (an empirical CDF).
    pub packet_sizes: Option<Vec<(f64, f64)>>,
    /// cbr: on- and off-period lengths: a duration, or [[µs, cumulative probability], …] (piecewise linear).
    pub on: Option<toml::Value>,
    pub off: Option<toml::Value>,
}

#[derive(Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct FaultCfg {
    pub at: Duration,
    /// The two ends: host numbers ("3" or "h3") or switch names ("leaf0").
    pub link: [String; 2],
    /// "down" or "up".
    pub state: Option<String>,
    pub corrupt: Option<f64>,
    /// A new rate for the link, both directions (a degraded link).
    pub rate: Option<Rate>,
    /// `corrupt` and `rate` apply only from `link[0]` to `link[1]` (most corrupting links corrupt one way).
    pub one_way: Option<bool>,
    /// With state = "down": the link comes back up this long after each failure.
    pub duration: Option<Duration>,
    /// Repeat the fault with this period, `count` times in all.
    pub every: Option<Duration>,
    pub count: Option<u64>,
    /// Each repetition starts up to this much later, uniformly at random (its own seeded stream).
    pub jitter: Option<Duration>,
}

#[derive(Deserialize, Debug, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct StopCfg {
    pub time: Option<Duration>,
    pub max_events: Option<u64>,
}

#[derive(Deserialize, Debug, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct OutputCfg {
    pub dir: Option<String>,
    /// "parquet" (default) or "csv".
    pub format: Option<String>,
    pub buckets: Option<Vec<Size>>,
    pub warmup: Option<Duration>,
    /// Sample every port's queue occupancy at this interval into queues.parquet (off by default).
    pub queue_sample: Option<Duration>,
    /// Flow ids whose TCP congestion window is recorded at every ACK and timeout into cwnd.parquet.
    pub cwnd_trace: Option<Vec<u64>>,
    /// Every completed TCP flow's longest wait at the receiver for new data, into rx_gaps.parquet.
    pub rx_gaps: Option<bool>,
    /// Links whose packets are written as pcap files: a node (its link's two directions; a host's NIC
    /// link), a pair of nodes (that link's two directions), or "hosts" (every host's link).
    pub pcap: Option<Vec<PcapEntry>>,
    /// Packets captured at most, over all captured ports (default 1,000,000).
    pub pcap_max_packets: Option<u64>,
}

#[derive(Deserialize, Debug, Clone)]
#[serde(untagged)]
pub enum PcapEntry {
    Node(String),
    Link(Vec<String>),
}

#[derive(Deserialize, Debug, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct PfcCfg {
    /// Drain bytes of a class at an ingress port above which the class is paused (default 8192 B, DeTail).
    pub pause: Option<Size>,
    /// Drain bytes at or below which a paused class is resumed (default 4557 B, DeTail).
    pub unpause: Option<Size>,
    /// Time from a frame's arrival at the upstream port to its effect (default 0).
    pub response: Option<Duration>,
}

#[derive(Deserialize, Debug, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct CodelCfg {
    /// Acceptable standing sojourn time (default 50 µs).
    pub target: Option<Duration>,
    /// Time the sojourn must stay above target before marking starts (default 1 ms).
    pub interval: Option<Duration>,
}

#[derive(Deserialize, Debug, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct BurstRadarCfg {
    /// The monitoring host: its link is the mirror port of the switch it hangs off, whose ports are watched.
    pub monitor: Option<u32>,
    /// Queueing delay that makes a microburst (the thesis's latency-increase threshold, e.g. 5 % of a 25 µs
    /// RTT = "1.25us"); each port converts it to bytes at its rate.
    pub threshold: Option<Duration>,
    /// Watched ports, named by the host at their far end (default: every port of the switch but the mirror).
    pub watch: Option<Vec<u32>>,
    /// Buffer cell size that queue depths are counted in (default 160 B; 1 B: exact bytes).
    pub cell: Option<Size>,
    /// Ring buffer entries (default 1024).
    pub ring: Option<u64>,
    /// From a mark until its courier joins the mirror queue (default 270 ns).
    pub clone_delay: Option<Duration>,
    /// A courier's size (default 93 B: a truncated 64 B packet and a 29 B record).
    pub courier: Option<Size>,
}

#[derive(Deserialize, Debug, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct SqrCfg {
    /// "sharebackup" (SB', default) or "lrr".
    pub recovery: Option<String>,
    /// "ring" (default), "ideal" or "off".
    pub cache: Option<String>,
    pub delta: Option<Duration>,
    pub raise: Option<Duration>,
    pub detect: Option<Duration>,
    pub window: Option<Duration>,
    pub classes: Option<Vec<u8>>,
    pub pass_cost: Option<f64>,
    pub clone_delay: Option<Duration>,
    pub backstop: Option<f64>,
    pub timestamp_bits: Option<u32>,
    pub switches: Option<Vec<String>>,
    /// LRR backups: [switch, primary neighbour, backup neighbour].
    pub backups: Option<Vec<[String; 3]>>,
    /// Ring: the only ports (as [switch, neighbour]) whose caching queues a listed switch uses.
    pub cache_ports: Option<Vec<[String; 2]>>,
    /// Ring: how a caching queue and its port's own queue take turns, "packet" (default) or "time".
    pub turns: Option<String>,
}

#[derive(Deserialize, Debug, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct LinkGuardianCfg {
    /// Protected link directions: [sender switch, receiver switch].
    pub links: Vec<[String; 2]>,
    /// "ordered" (default: LG) or "nb" (LG-NB).
    pub mode: Option<String>,
    /// Ordered mode's PFC backpressure (default true), and its t_flight_resume (resume sent to the first
    /// resumed packet back).
    pub backpressure: Option<bool>,
    pub t_flight_resume: Option<Duration>,
    /// The link's loss rate as corruptd measures it, and the target effective loss (Eq. 5.1 gives the copies).
    pub loss_rate: Option<f64>,
    pub target: Option<f64>,
    pub copies: Option<u32>,
    pub max_holes: Option<u32>,
    pub dummies: Option<u32>,
    /// "lazy" (default): ACK frames only when they carry news; "literal": the thesis's self-replenishing ACK
    /// queue, an ACK in every idle slot (a check on the lazy model; needs `stop.time`).
    pub control: Option<String>,
    pub recirc_rate: Option<Rate>,
    pub recirc_buffer: Option<Size>,
    pub recirc_latency: Option<Duration>,
    pub ack_timeout: Option<Duration>,
    pub tick: Option<Duration>,
    pub resume: Option<Size>,
    pub pause: Option<Size>,
    pub frame: Option<Size>,
}

#[derive(Deserialize, Debug, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct FastLaneCfg {
    /// Notification bandwidth per link as a fraction of its rate (default 0.01).
    pub bandwidth: Option<f64>,
    /// Notification buffer per switch port (default 3276 B: 2.5 % of 128 KiB).
    pub buffer: Option<Size>,
    /// Scales both caps (default 1).
    pub cap_scale: Option<f64>,
    /// Notices only with tokens, never on spare capacity (default false: work-conserving).
    pub strict: Option<bool>,
}

#[derive(Deserialize, Debug, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct QjumpCfg {
    /// Throughput factor per class, class 0 (the thesis's level 7) first; classes past the list's end are
    /// not regulated.
    pub f: Option<Vec<f64>>,
    /// N (default: the topology's hosts).
    pub hosts: Option<u64>,
    /// P: bytes per epoch and largest packet, wire overhead included (default: mss + header + wire_overhead).
    pub max_packet: Option<Size>,
    /// ε (default: the largest switch forwarding delay).
    pub switch_delay: Option<Duration>,
    /// r_edge (default: the slowest host link).
    pub edge_rate: Option<Rate>,
    /// k in k·N·P/r + ε (default 1, the thesis; 2 is the NSDI'15 form).
    pub epoch_factor: Option<u32>,
    /// An explicit network epoch instead of the formula.
    pub epoch: Option<Duration>,
    /// "per-level-epoch" (default) or "common-epoch".
    pub budget: Option<String>,
    /// "ltb-listing" (default), "ltb-text", "zero-on-send" or "epoch-budget".
    pub variant: Option<String>,
    /// "lazy" (default) or "aligned".
    pub anchor: Option<String>,
    /// "police" (default) or "shape".
    pub excess: Option<String>,
    /// "host" (default: a bucket per host and class) or "flow" (a bucket per flow, police only).
    pub per: Option<String>,
}
