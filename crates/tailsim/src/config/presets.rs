//! Named fabrics. A preset is a TOML fragment merged *under* the user's file: any key the user writes wins.

use toml::Table;

pub const NAMES: &[&str] = &[
    "pfabric-144",
    "homa-144",
    "detail-128",
    "detail-16",
    "fastlane-128",
    "fastlane-16",
    "burstradar-testbed",
    "sqr-testbed",
    "lg-10g",
    "lg-25g",
    "lg-100g",
];

/// pFabric's baseline fabric (shared/notes/seed-002-pfabric.md §3.1): 9 leaves × 16 hosts, 4 spines,
/// 10/40 Gbps. The 2.5 µs per-traversal host delay is folded into the edge links' 0.2 µs propagation, as the
/// ns-2 scripts do, giving a 14.68 µs RTT across the spine (13.26 µs within a leaf).
const PFABRIC_144: &str = r#"
[topology]
kind = "leaf-spine"
leaves = 9
spines = 4
hosts_per_leaf = 16
edge_rate = "10Gbps"
core_rate = "40Gbps"
edge_delay = "2.7us"
core_delay = "0.2us"

[packet]
mss = 1460
header = 40
ack = 40
"#;

/// The Homa thesis's simulated fabric (shared/notes/seed-001-homa.md §1.13): 9 racks × 16 hosts, 4
/// aggregation switches, 10/40 Gbps, zero propagation, 250 ns store-and-forward switches, 1 µs of host
/// transmit delay (0.5 software + 0.5 NIC) and 0.5 µs receive delay, unlimited buffers, per-packet spraying.
/// Frames are 1538 B on the wire for a 1500 B IP packet (Ethernet header+CRC 18 B in the buffer, preamble
/// and gap 20 B on the wire only); an ACK is a minimum 64 B frame (84 B on the wire).
const HOMA_144: &str = r#"
[topology]
kind = "leaf-spine"
leaves = 9
spines = 4
hosts_per_leaf = 16
edge_rate = "10Gbps"
core_rate = "40Gbps"
edge_delay = "0ns"
core_delay = "0ns"

[host]
tx_delay = "1us"
rx_delay = "0.5us"

[switch]
delay = "250ns"
buffer = "unlimited"

[routing]
load_balance = "spray"

[packet]
mss = 1460
header = 58
ack = 64
wire_overhead = 20
"#;

/// The DeTail fabrics' timing and framing, shared by `detail-128` and `detail-16` (see `detail-128`). Hosts
/// never drop what their own stack sends: the NIC queue is unbounded, as a socket buffer blocks the sender
/// (the thesis does not state its hosts' queues; under PFC a bounded NIC queue would drop paused traffic).
macro_rules! detail_timing {
    () => {
        concat!(
            r#"
[host]
nic_buffer = "unlimited"

[switch]
architecture = "cioq"
delay = "4.224us"
buffer = "128KiB"
ingress_buffer = "128KiB"
speedup = 4
"#,
            frames_1530!()
        )
    };
}

/// 1530 B frames on the wire (a 1500 B IP packet + 30 B), for the DeTail and FastLane fabrics.
macro_rules! frames_1530 {
    () => {
        r#"
[packet]
mss = 1460
header = 40
ack = 40
wire_overhead = 30
"#
    };
}

/// The 128-host shape of the DeTail and FastLane fabrics (before the rate and delay keys).
macro_rules! shape_128 {
    () => {
        r#"
[topology]
kind = "fat-tree"
pods = 4
tors_per_pod = 4
hosts_per_tor = 8
aggs_per_pod = 4
cores = 8
"#
    };
}

/// The DeTail thesis's simulated fabric (§5.3.1, §5.4; shared/notes/seed-000-detail-fastlane.md): 4 pods of 4
/// ToRs × 8 hosts, 4 aggregation switches per pod, 8 cores (2 core links per aggregation switch), all 1 Gbps:
/// 128 hosts, 2:1 over-subscribed at the ToRs and again at the aggregation switches. Links 5.476 µs (with
/// transceivers); 1530 B frames (a 1500 B IP packet + 30 B); CIOQ switches (128 KB ingress and egress queues
/// per port) with 4.224 µs forwarding plus the crossbar's 3.06 µs for a full frame (size / (4 × rate)):
/// 25.000 µs per switch hop for a full frame.
const DETAIL_128: &str = concat!(
    shape_128!(),
    r#"rate = "1Gbps"
delay = "5.476us"
"#,
    detail_timing!()
);

/// The DeTail thesis's small fabric (§5.4, Fig. 5.5): a k = 4 fat tree (16 hosts), hosts at 1 Gbps, ToR–
/// aggregation links at 500 Mbps, aggregation–core at 250 Mbps; the timing of `detail-128`.
const DETAIL_16: &str = concat!(
    r#"
[topology]
kind = "fat-tree"
k = 4
rate = "1Gbps"
agg_rate = "500Mbps"
core_rate = "250Mbps"
delay = "5.476us"
"#,
    detail_timing!()
);

/// FastLane's simulated fabric (thesis §6.6.1): `detail-128`'s shape (4:1 over-subscribed, 128 hosts) at
/// 10 Gbps, with 128 KB per port. Its switches are ordinary output-queued ones, and its per-hop delays are not
/// stated: the links and forwarding keep `detail-128`'s values (without the crossbar). Servers process each
/// received packet in 5 µs, 16 at a time (§6.6.1, after Chronos); their NIC queues never drop what their own
/// stack sends (as `detail-128`).
const FASTLANE_128: &str = concat!(
    shape_128!(),
    r#"rate = "10Gbps"
delay = "5.476us"

[host]
rx_delay = "5us"
rx_parallel = 16
nic_buffer = "unlimited"

[switch]
delay = "4.224us"
buffer = "128KiB"
"#,
    frames_1530!()
);

/// FastLane's testbed (thesis §6.6.1): a k = 4 fat tree of 16 servers, full bisection, 1 Gbps, 64 KB per
/// port; timing as `fastlane-128` (without its server model: the testbed's servers are real), NIC queues that
/// never drop.
const FASTLANE_16: &str = concat!(
    r#"
[topology]
kind = "fat-tree"
k = 4
rate = "1Gbps"
delay = "5.476us"

[host]
nic_buffer = "unlimited"

[switch]
delay = "4.224us"
buffer = "64KiB"
"#,
    frames_1530!()
);

/// BurstRadar's testbed (Joshi thesis §3.3, Fig. 3.4): one switch; h0 the background sender (10G), h1 the
/// burster (25G), h2 the receiver behind the 10 Gbps test link, h3 the monitoring server on the mirror port.
/// RTT ≈ 25 µs: 6 µs per link each way plus serialization. A Tofino's buffer is shared and large (tens of
/// MB): 16 MB per port never drops here. Ethernet framing: 20 B of preamble and gap per frame on the wire.
/// `[burstradar]` watches the test link at 5 % of the RTT (1.25 µs = 1562.5 B at 10 Gbps) with 160 B cells.
const BURSTRADAR_TESTBED: &str = r#"
[topology]
kind = "star"
host_rates = ["10Gbps", "25Gbps", "10Gbps", "10Gbps"]
delay = "6us"

[host]
nic_buffer = "unlimited"

[switch]
buffer = "16MB"

[packet]
wire_overhead = 20

[burstradar]
monitor = 3
watch = [2]
threshold = "1.25us"
"#;

/// SQR's testbed (Joshi thesis §4.4.1, Fig. 4.2): a two-pod fat tree of 10G links, named as in the thesis.
/// Every path the thesis uses runs through core sw2 (h2 → sw8 → sw4 → sw2 → sw6 → sw10 → h4 for the test
/// flows; TPC-H between h4 and h1, h2 the same way), so the other plane's core sw1 and its links are left out:
/// with them, ECMP would send half the flows around the failed link. Pod 1: aggs sw3, sw4, ToRs sw7, sw8;
/// pod 2: aggs sw5, sw6, ToRs sw9, sw10. Hosts h1..h4 under sw7..sw10 as in the thesis; h0 (not in the thesis)
/// is a second host under sw7. Host-to-host RTT ≈ 100 µs as measured there: 20 µs of host stack each way at
/// each end, 0.5 µs per link and per switch. Hosts: CUBIC with SACK, RTO_min 4 ms, initial window 10, MSS
/// 1448, the SYN handshake (initial RTO 1 s). Frames: 1448 B + 52 B TCP/IP (timestamps) + 18 B Ethernet, and
/// 20 B of preamble and gap on the wire. Failures and `[sqr]` are the experiment's (docs/sqr.md).
const SQR_TESTBED: &str = r#"
[topology]
kind = "inline"
hosts = 5
switch = [
  { name = "sw2" }, { name = "sw3" }, { name = "sw4" }, { name = "sw5" }, { name = "sw6" },
  { name = "sw7" }, { name = "sw8" }, { name = "sw9" }, { name = "sw10" },
]
link = [
  { a = "sw2", b = "sw4", rate = "10Gbps", delay = "0.5us" },
  { a = "sw2", b = "sw6", rate = "10Gbps", delay = "0.5us" },
  { a = "sw3", b = "sw7", rate = "10Gbps", delay = "0.5us" },
  { a = "sw3", b = "sw8", rate = "10Gbps", delay = "0.5us" },
  { a = "sw4", b = "sw7", rate = "10Gbps", delay = "0.5us" },
  { a = "sw4", b = "sw8", rate = "10Gbps", delay = "0.5us" },
  { a = "sw5", b = "sw9", rate = "10Gbps", delay = "0.5us" },
  { a = "sw5", b = "sw10", rate = "10Gbps", delay = "0.5us" },
  { a = "sw6", b = "sw9", rate = "10Gbps", delay = "0.5us" },
  { a = "sw6", b = "sw10", rate = "10Gbps", delay = "0.5us" },
  { a = "h0", b = "sw7", rate = "10Gbps", delay = "0.5us" },
  { a = "h1", b = "sw7", rate = "10Gbps", delay = "0.5us" },
  { a = "h2", b = "sw8", rate = "10Gbps", delay = "0.5us" },
  { a = "h3", b = "sw9", rate = "10Gbps", delay = "0.5us" },
  { a = "h4", b = "sw10", rate = "10Gbps", delay = "0.5us" },
]

[host]
tx_delay = "20us"
rx_delay = "20us"
nic_buffer = "unlimited"

[switch]
delay = "0.5us"
buffer = "4MB"

[transport]
kind = "cubic"
sack = true
min_rto = "4ms"
init_cwnd = 10
handshake = true

[packet]
mss = 1448
header = 70
ack = 70
wire_overhead = 20
"#;

/// LinkGuardian's testbed (Joshi thesis §5.4, Figs. 5.8/5.9): h0, h1 — sw2 ═ sw6 — h2, h3, every link at
/// `RATE`; sw2 → sw6 is the link that corrupts (the experiment's `[[fault]]` and `[linkguardian]`). Short
/// fibers (0.1 µs) and 7 µs of host stack each way give the thesis's RTT of ≈ 30 µs. DCTCP with ECN at 100 KB
/// and RTO_min 1 ms (§5.4); 1518 B frames with 20 B of preamble and gap, so LG's 3-byte header makes 1541 B.
const LG_TESTBED: &str = r#"
[topology]
kind = "inline"
hosts = 4
switch = [{ name = "sw2" }, { name = "sw6" }]
link = [
  { a = "h0", b = "sw2", rate = "RATE", delay = "0.1us" },
  { a = "h1", b = "sw2", rate = "RATE", delay = "0.1us" },
  { a = "sw2", b = "sw6", rate = "RATE", delay = "0.1us" },
  { a = "h2", b = "sw6", rate = "RATE", delay = "0.1us" },
  { a = "h3", b = "sw6", rate = "RATE", delay = "0.1us" },
]

[host]
tx_delay = "7us"
rx_delay = "7us"
nic_buffer = "unlimited"

[switch]
buffer = "4MB"
ecn_threshold = "100KB"

[transport]
kind = "TRANSPORT"
min_rto = "1ms"

[packet]
mss = 1448
header = 70
ack = 70
wire_overhead = 20
"#;

pub fn table(name: &str) -> Option<Table> {
    // LinkGuardian's testbed at three rates: DCTCP at 25 and 100 Gbps, CUBIC at 10 Gbps (Table 5.3).
    let lg = |rate: &str, transport: &str| LG_TESTBED.replace("RATE", rate).replace("TRANSPORT", transport);
    let text = match name {
        "lg-10g" => lg("10Gbps", "cubic"),
        "lg-25g" => lg("25Gbps", "dctcp"),
        "lg-100g" => lg("100Gbps", "dctcp"),
        n => return table_static(n),
    };
    Some(text.parse().expect("built-in preset is valid TOML"))
}

fn table_static(name: &str) -> Option<Table> {
    let text = match name {
        "pfabric-144" => PFABRIC_144,
        "homa-144" => HOMA_144,
        "detail-128" => DETAIL_128,
        "detail-16" => DETAIL_16,
        "fastlane-128" => FASTLANE_128,
        "fastlane-16" => FASTLANE_16,
        "burstradar-testbed" => BURSTRADAR_TESTBED,
        "sqr-testbed" => SQR_TESTBED,
        _ => return None,
    };
    Some(text.parse().expect("built-in preset is valid TOML"))
}
