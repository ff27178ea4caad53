//! Same config + same seed → byte-identical result files; another seed → different flows.

mod common;
use common::*;

const EXP: &str = r#"
[topology]
preset = "pfabric-144"
[switch]
buffer = "225KB"
ecn_threshold = "22.5KB"
[transport]
kind = "dctcp"
init_cwnd = 12
[[workload]]
kind = "poisson"
cdf = "websearch"
load = 0.5
flows = 300
[[workload]]
kind = "incast"
senders = 20
size = "50KB"
count = 3
interval = "2ms"
"#;

fn hash_results(seed: u64, format: &str) -> Vec<(String, u64)> {
    hash_results_spilling(seed, format, None)
}

/// The results' hashes; `spill_at` writes the finished flows' records to the scratch file in batches of so many.
fn hash_results_spilling(seed: u64, format: &str, spill_at: Option<usize>) -> Vec<(String, u64)> {
    let mut e = exp(&format!("seed = {seed}\n{EXP}\n[output]\nformat = \"{format}\"\n"));
    e.stop.max_events = Some(50_000_000);
    if let Some(n) = spill_at {
        e.world.records.set_spill_at(n);
    }
    let s = e.run(&mut |_| {}).unwrap();
    assert_eq!(e.world.records.spilled() > 0, spill_at.is_some(), "spilled {}", e.world.records.spilled());
    assert_eq!(s.flows_finished, s.flows_started);
    let dir = std::env::temp_dir().join(format!(
        "tailsim-det-{}-{seed}-{format}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    e.write_results(&dir, &s).unwrap();
    let mut out = vec![];
    for f in ["flows", "ports"] {
        let name = format!("{f}.{format}");
        let bytes = std::fs::read(dir.join(&name)).unwrap();
        // FNV-1a over the file
        let h = bytes.iter().fold(0xcbf29ce484222325u64, |h, &b| (h ^ b as u64).wrapping_mul(0x100000001b3));
        out.push((name, h));
    }
    let summary: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("summary.json")).unwrap()).unwrap();
    out.push(("events".into(), summary["events"].as_u64().unwrap()));
    let fnv = |t: String| t.bytes().fold(0xcbf29ce484222325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100000001b3));
    out.push(("buckets".into(), fnv(summary["buckets"].to_string())));
    std::fs::remove_dir_all(&dir).unwrap();
    out
}

#[test]
fn same_seed_same_bytes() {
    for format in ["parquet", "csv"] {
        let a = hash_results(7, format);
        let b = hash_results(7, format);
        assert_eq!(a, b, "{format} results differ between identical runs");
    }
}

/// Finished flows' records written to the scratch file in small batches (so most of them are read back from
/// disk, out of the order they finished in) change no byte of the results nor any statistic.
#[test]
fn spilled_records_change_nothing() {
    for format in ["parquet", "csv"] {
        assert_eq!(hash_results(7, format), hash_results_spilling(7, format, Some(37)), "{format}");
    }
}

#[test]
fn other_seed_other_flows() {
    assert_ne!(hash_results(7, "csv")[0], hash_results(8, "csv")[0]);
}

#[test]
fn adding_a_generator_leaves_the_others_draws_alone() {
    // The Poisson generator's flows (src, dst, size) are the same whether or not the incast generator exists.
    let base = EXP.split("[[workload]]\nkind = \"incast\"").next().unwrap();
    let mut with = exp(&format!("seed = 3\n{EXP}"));
    let mut without = exp(&format!("seed = 3\n{base}"));
    with.run(&mut |_| {}).unwrap();
    without.run(&mut |_| {}).unwrap();
    let key = |e: &tailsim::Experiment| -> Vec<(u32, u32, u64, u64)> {
        // Poisson flows are the ones not of exactly 50 KB started at incast instants (0, 2, 4 ms).
        e.world
            .records
            .all()
            .iter()
            .filter(|r| !(r.size == 50_000 && r.start.0 % 2_000_000_000 == 0))
            .map(|r| (r.src.0, r.dst.0, r.size, r.start.0))
            .collect()
    };
    assert_eq!(key(&with), key(&without));
    assert_eq!(key(&without).len(), 300);
}
