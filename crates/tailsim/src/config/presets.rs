//! Named fabrics. A preset is a TOML fragment merged *under* the user's file: any key the user writes wins.

use toml::Table;

pub const NAMES: &[&str] = &["pfabric-144", "homa-144"];

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

pub fn table(name: &str) -> Option<Table> {
    let text = match name {
        "pfabric-144" => PFABRIC_144,
        "homa-144" => HOMA_144,
        _ => return None,
    };
    Some(text.parse().expect("built-in preset is valid TOML"))
}
