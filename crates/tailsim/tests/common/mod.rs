#![allow(dead_code, unused_imports)]
use std::path::Path;
pub use tailsim::net::port::DropReason;
use tailsim::{Experiment, Summary};

/// Build an experiment from TOML text; paths resolve against the repository root.
pub fn exp(toml: &str) -> Experiment {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    tailsim::load_str(toml, "test.toml", &root, &[]).unwrap_or_else(|e| panic!("{e}"))
}

/// The error loading `toml` gives (it must fail), as the user would see it.
pub fn config_error(toml: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    match tailsim::load_str(toml, "x.toml", &root, &[]) {
        Ok(_) => panic!("expected a configuration error for:\n{toml}"),
        Err(e) => e.to_string(),
    }
}

/// A config with `extra` tables on `preset` and a tiny incast workload, for checking other tables' keys.
pub fn with_incast(preset: &str, extra: &str) -> String {
    format!("[topology]\npreset = \"{preset}\"\n{extra}\n[[workload]]\nkind = \"incast\"\nsenders = 2\nsize = 10\n")
}

/// Run to completion. `Experiment::run` checks packet conservation at the end and fails otherwise, so every
/// test that runs a simulation also checks conservation. Without a stop condition of its own a run gets an
/// event budget far above what any test needs, so a broken transport fails a test instead of hanging it.
pub fn run(toml: &str) -> (Experiment, Summary) {
    let mut e = exp(toml);
    if e.stop.time.is_none() && e.stop.max_events.is_none() {
        e.stop.max_events = Some(50_000_000);
    }
    let s = e.run(&mut |_| {}).unwrap_or_else(|err| panic!("{err}"));
    (e, s)
}

/// Four hosts under one leaf: h0 -> leaf0 -> h3 crosses two 10G links of 1 us.
pub const SAME_LEAF: &str = r#"
[topology]
kind = "leaf-spine"
leaves = 1
spines = 1
hosts_per_leaf = 4
edge_rate = "10Gbps"
core_rate = "40Gbps"
edge_delay = "1us"
"#;

/// Two hosts per leaf, `leaves` leaves, one spine; 10G edge 40G core.
pub fn small_fabric(leaves: u32, extra: &str) -> String {
    format!(
        r#"
[topology]
kind = "leaf-spine"
leaves = {leaves}
spines = 1
hosts_per_leaf = 2
edge_rate = "10Gbps"
core_rate = "40Gbps"
edge_delay = "2.7us"
core_delay = "0.2us"
{extra}
"#
    )
}

/// NDP over a sprayed k-ary fat tree (10 Gbps, 1 µs links, trimming at 12 KB, seed 3) carrying `flows` web-search
/// messages at `load`; `extra` is appended (more workloads, sections).
pub fn ndp_fat_tree(k: u32, load: f64, flows: u32, extra: &str) -> String {
    format!(
        "seed = 3\n[topology]\nkind = \"fat-tree\"\nk = {k}\nrate = \"10Gbps\"\ndelay = \"1us\"\n\
         [switch]\ntrim = \"12KB\"\n[routing]\nload_balance = \"spray\"\n[transport]\nkind = \"ndp\"\n\
         [[workload]]\nkind = \"poisson\"\ncdf = \"websearch\"\nload = {load}\nflows = {flows}\n{extra}"
    )
}

/// Write a scratch file of this test program (in cargo's scratch directory for tests, `target/tmp`: one
/// directory per test program, reused by every run rather than one more in the system's temporary directory
/// each time) and return its path.
pub fn temp_file(name: &str, content: &str) -> std::path::PathBuf {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(env!("CARGO_CRATE_NAME"));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    // Atomic: tests running in parallel may write the same file (same name, same content).
    let tmp = dir.join(format!(".{name}.{}.{:?}", std::process::id(), std::thread::current().id()));
    std::fs::write(&tmp, content).unwrap();
    std::fs::rename(&tmp, &p).unwrap();
    p
}

/// A `[[workload]]` table replaying `rows` ("src,dst,size_bytes,start_us" lines), written to a scratch trace
/// file called `name`.
pub fn trace_workload(name: &str, rows: &str) -> String {
    // Named by content too: tests run in parallel threads and share the scratch directory, so two tests that
    // chose the same name for different rows must not overwrite each other's file.
    let tag = rows.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3));
    let path = temp_file(&format!("{tag:016x}-{name}"), &format!("src,dst,size_bytes,start_us\n{rows}"));
    format!("[[workload]]\nkind = \"trace\"\npath = \"{}\"\n", path.display())
}

/// On `two_leaves`: seven senders (three on host 0's leaf, four across the spine) send 300 KB each to host 0.
pub fn incast_to_host0() -> String {
    let rows: String = (1..8).map(|s| format!("{s},0,300000,0\n")).collect();
    trace_workload("incast-to-host0.csv", &rows)
}

/// As `trace_workload`, every flow in strict-priority class `class`.
pub fn trace_workload_class(name: &str, rows: &str, class: u8) -> String {
    format!("{}class = {class}\n", trace_workload(name, rows))
}

/// Two leaves of 4 hosts and `spines` spines, 10 Gbps and 1 us everywhere (so the uplinks are a bottleneck),
/// TCP with a 10-packet window and a 200 us minimum RTO; `extra` adds tables (or keys after `[transport]`).
pub fn two_leaves(spines: u32, extra: &str) -> String {
    format!(
        "[topology]\nkind = \"leaf-spine\"\nleaves = 2\nspines = {spines}\nhosts_per_leaf = 4\nedge_rate = \"10Gbps\"\n\
         core_rate = \"10Gbps\"\nedge_delay = \"1us\"\ncore_delay = \"1us\"\n[transport]\nkind = \"tcp\"\n\
         init_cwnd = 10\nmin_rto = \"200us\"\n{extra}\n"
    )
}

/// The bursts of `examples/burstradar-testbed.toml`: on and off lengths (µs) from CDFs.
pub const BURSTS: &str = "on = [[4, 0.0], [10, 0.5], [20, 0.7], [40, 0.85], [80, 0.95], [160, 1.0]]
off = [[200, 0.0], [1000, 0.3], [2000, 0.6], [4000, 0.85], [10000, 1.0]]";

/// The `burstradar-testbed` preset with a 1 Gbps background from h0 and 25 Gbps bursts (`bursts`: their
/// `on`/`off` keys) from h1, both to h2, `sizes` for both, for `ms`; `extra` goes after the topology.
pub fn burstradar_testbed(sizes: &str, bursts: &str, extra: &str, ms: u32) -> String {
    format!(
        r#"
[topology]
preset = "burstradar-testbed"
{extra}
[[workload]]
kind = "cbr"
src = 0
dst = 2
line_rate = "1Gbps"
{sizes}
until = "{ms}ms"
[[workload]]
kind = "cbr"
src = 1
dst = 2
line_rate = "25Gbps"
{sizes}
{bursts}
until = "{ms}ms"
"#
    )
}
