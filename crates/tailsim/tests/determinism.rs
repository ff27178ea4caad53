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
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
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

/// A fabric given link by link is the same fabric whatever order its links are listed in and whichever end
/// of each is named first: the same ports, and the same flows to the picosecond. (Ports' numbers order
/// simultaneous arrivals, engine/queue.rs; a networkx graph lists a graph's edges in its own order.)
#[test]
fn listing_links_in_another_order_changes_nothing() {
    let mut links: Vec<(String, String)> = (0..8).map(|h| (format!("h{h}"), format!("l{}", h / 4))).collect();
    for l in 0..2 {
        for s in 0..2 {
            links.push((format!("l{l}"), format!("s{s}")));
        }
    }
    let toml = |links: &[(String, String)]| {
        let list: Vec<String> = links
            .iter()
            .map(|(a, b)| format!("{{ a = \"{a}\", b = \"{b}\", rate = \"10Gbps\", delay = \"1us\" }}"))
            .collect();
        format!(
            "seed = 5\n[topology]\nkind = \"inline\"\nhosts = 8\n\
             switch = [{{ name = \"l0\" }}, {{ name = \"l1\" }}, {{ name = \"s0\" }}, {{ name = \"s1\" }}]\n\
             link = [{}]\n[switch]\nbuffer = \"100KB\"\necn_threshold = \"20KB\"\n[transport]\nkind = \"dctcp\"\n\
             [[workload]]\nkind = \"poisson\"\ncdf = \"websearch\"\nload = 0.6\nflows = 200\n",
            list.join(", ")
        )
    };
    let outcome = |toml: &str| {
        let (e, s) = run(toml);
        assert_eq!(s.flows_finished, 200);
        let ports: Vec<_> = e.world.net.ports.iter().map(|p| (p.node, p.peer, p.stats.tx_bytes)).collect();
        let flows: Vec<_> = e.world.records.all().iter().map(|r| (r.src, r.dst, r.size, r.start, r.end)).collect();
        (ports, flows)
    };
    let (ports, flows) = outcome(&toml(&links));
    let mut other: Vec<(String, String)> = links.iter().rev().map(|(a, b)| (b.clone(), a.clone())).collect();
    other.swap(1, 6);
    let (other_ports, other_flows) = outcome(&toml(&other));
    assert!(flows == other_flows, "the flows' ends differ");
    assert_eq!(ports, other_ports);
}
