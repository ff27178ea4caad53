//! BurstRadar end to end (net/mech/burstradar.rs) with raw constant-bit-rate sources (traffic/cbr.rs) on the
//! `burstradar-testbed` preset: the Snapshot algorithm against the oracle for exact and rounded cells, the
//! ring's peak and overwrites against hand computation, couriers through the mirror port, the telemetry
//! table, determinism and the configuration's checks.

mod common;
use common::*;
use tailsim::net::mech::Mech;

/// The testbed with the example's bursts (`BURSTS`), for `ms`.
fn testbed(sizes: &str, extra: &str, ms: u32) -> String {
    burstradar_testbed(sizes, BURSTS, extra, ms)
}

const MIXED: &str = "packet_sizes = [[200, 0.3], [576, 0.6], [1000, 0.8], [1500, 1.0]]";

fn summary(s: &tailsim::Summary) -> serde_json::Value {
    s.mechanisms["burstradar"].clone()
}

fn n(v: &serde_json::Value, k: &str) -> u64 {
    v[k].as_u64().unwrap_or_else(|| panic!("{k} in {v}"))
}

#[test]
fn with_one_byte_cells_the_marks_are_exactly_the_oracles() {
    let (_, s) = run(&testbed(MIXED, "[burstradar]\ncell = \"1B\"", 20));
    let b = summary(&s);
    assert!(n(&b, "oracle") > 200, "{b}");
    assert_eq!(n(&b, "marked"), n(&b, "oracle"), "{b}");
    assert_eq!(n(&b, "extra"), 0);
    assert_eq!(n(&b, "unmarked_oracle"), 0);
    // Fewer marked than INT's every packet, and every packet of both sources crossed the watched port.
    let cbr = &s.mechanisms["cbr"];
    assert_eq!(n(&b, "packets"), n(cbr, "packets"));
    assert!(n(&b, "marked") < n(&b, "packets"));
}

#[test]
fn cells_mark_a_superset_that_is_exact_when_sizes_are_whole_cells() {
    let (_, exact) = run(&testbed(MIXED, "[burstradar]\ncell = \"1B\"", 20));
    let (_, cells) = run(&testbed(MIXED, "", 20));
    let (e, c) = (summary(&exact), summary(&cells));
    // The same traffic (the sources' draws do not depend on the mechanism): the same oracle.
    assert_eq!(n(&e, "oracle"), n(&c, "oracle"));
    assert_eq!(n(&c, "unmarked_oracle"), 0, "{c}");
    assert!(n(&c, "extra") > 0 && n(&c, "marked") == n(&c, "oracle") + n(&c, "extra"), "{c}");
    // Every packet a multiple of 160 B: the cells count the bytes exactly, no extras.
    let (_, whole) = run(&testbed("packet_sizes = [[320, 0.5], [1440, 1.0]]", "", 20));
    let w = summary(&whole);
    assert!(n(&w, "oracle") > 100, "{w}");
    assert_eq!(n(&w, "extra"), 0, "{w}");
    assert_eq!(n(&w, "marked"), n(&w, "oracle"));
    // One byte over a cell (the thesis's worst case): extras at every burst's tail.
    let (_, worst) = run(&testbed("size = 161", "", 20));
    let w = summary(&worst);
    assert!(n(&w, "extra") > 0 && n(&w, "unmarked_oracle") == 0, "{w}");
}

/// One 25 Gbps burst of 64 B packets into the 10 Gbps test link, alone: the ring's peak by hand.
#[test]
fn the_rings_peak_and_overwrites_match_a_hand_count() {
    // 200 packets of 64 B (84 B on the wire): 26.88 ns apart at 25 Gbps, leaving the 10 Gbps port every
    // 67.2 ns. A courier reads the ring when it starts leaving the mirror port: the first 270 ns after the
    // first mark (the mirror is idle), then one every 90.4 ns (93 B + 20 B at 10 Gbps), as couriers arrive
    // faster (every 67.2 ns) than they leave. So the unread count at mark k (at 67.2·k ns) is k + 1 minus
    // ⌊(67.2k − 270)/90.4⌋ + 1 reads once 67.2k ≥ 270.
    let cfg = r#"
[topology]
preset = "burstradar-testbed"
[burstradar]
cell = "1B"
threshold = "1ns"
[[workload]]
kind = "cbr"
src = 1
dst = 2
line_rate = "25Gbps"
size = 64
until = "5.376us"
"#;
    let (_, s) = run(cfg);
    let b = summary(&s);
    let marks = 200u64;
    assert_eq!(n(&s.mechanisms["cbr"], "packets"), marks);
    // Marked: every packet that left while the queue was above 1 ns (1.25 B): all but the first, which
    // found the port idle (deqQdepth of itself alone is 64 B > 1.25 B, so it is marked too).
    let marked = n(&b, "marked");
    assert_eq!(marked, marks);
    let mut peak = 0i64;
    for k in 0..marks as i64 {
        let t = 67.2 * k as f64;
        let left = if t < 270.0 { 0 } else { ((t - 270.0) / 90.4).floor() as i64 + 1 };
        peak = peak.max(k + 1 - left);
    }
    let ring = &b["ring"];
    assert_eq!(n(ring, "peak") as i64, peak, "{ring}");
    assert_eq!(n(ring, "overwritten"), 0);
    assert_eq!(n(ring, "exported"), marks);
    // A ring smaller than the peak loses exactly the records lapped by the writer, and as many couriers
    // find it empty.
    let small = cfg.replace("threshold = \"1ns\"", &format!("threshold = \"1ns\"\nring = {}", peak - 10));
    let (_, s2) = run(&small);
    let r2 = &summary(&s2)["ring"];
    assert!(n(r2, "overwritten") > 0, "{r2}");
    assert_eq!(n(r2, "overwritten"), n(r2, "empty_couriers"));
    assert_eq!(n(r2, "exported") + n(r2, "overwritten"), marks);
    assert_eq!(n(r2, "peak") as i64, peak - 10);
}

#[test]
fn couriers_reach_the_monitor_and_the_table_holds_their_records() {
    let (e, s) = run(&testbed(MIXED, "", 10));
    let b = summary(&s);
    let sinks = s.host_sinks.unwrap();
    assert_eq!(sinks.telemetry, n(&b["ring"], "exported"));
    assert_eq!(sinks.raw, n(&s.mechanisms["cbr"], "packets"));
    // Couriers are copies of the marked packets, all accounted for (the run checks its ledger).
    assert_eq!(s.packets.copies, n(&b, "marked"));
    let br = e.world.net.mechs.iter().find(|m| matches!(m, Mech::BurstRadar(_))).unwrap();
    let (name, cols) = br.table().unwrap();
    assert_eq!(name, "telemetry");
    let rows = match &cols[0] {
        tailsim::metrics::output::Column::F64(_, v) => v.len(),
        _ => panic!(),
    };
    assert_eq!(rows as u64, n(&b["ring"], "exported"));
    // Each record: queued before it left, deeper at dequeue than its own cells when above the threshold.
    let col = |name: &str| {
        cols.iter().find(|c| matches!(c, tailsim::metrics::output::Column::I64(n, _) | tailsim::metrics::output::Column::F64(n, _) if *n == name)).unwrap()
    };
    let (tailsim::metrics::output::Column::F64(_, enq), tailsim::metrics::output::Column::F64(_, deq)) =
        (col("enq_us"), col("deq_us"))
    else {
        panic!()
    };
    assert!(enq.iter().zip(deq).all(|(a, b)| a <= b));
    // Written to telemetry.parquet with the results.
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("tailsim-br-{}", std::process::id()));
    e.write_results(&dir, &s).unwrap();
    assert!(dir.join("telemetry.parquet").exists());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_example_runs_and_matches_the_docs_measurement() {
    // docs/burstradar.md's "large" row: the example's traffic for 200 ms.
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/burstradar-testbed.toml"))
        .unwrap();
    let (_, s) = run(&text);
    let b = summary(&s);
    assert_eq!((n(&b, "packets"), n(&b, "marked"), n(&b, "oracle")), (40_495, 19_545, 7_777), "{b}");
}

#[test]
fn same_seed_same_telemetry() {
    let a = summary(&run(&testbed(MIXED, "", 10)).1);
    let b = summary(&run(&testbed(MIXED, "", 10)).1);
    assert_eq!(a, b);
    let c = summary(&run(&format!("seed = 2\n{}", testbed(MIXED, "", 10))).1);
    assert_ne!(a, c);
}

#[test]
fn bad_burstradar_and_cbr_input_is_named() {
    let base = |extra: &str, wl: &str| {
        format!(
            "[topology]\npreset = \"burstradar-testbed\"\n{extra}\n[[workload]]\nkind = \"cbr\"\nsrc = 0\ndst = 2\n\
             line_rate = \"1Gbps\"\nsize = 100\nuntil = \"1ms\"\n{wl}"
        )
    };
    let cases = [
        (base("[burstradar]\nthreshold = \"0us\"", ""), "burstradar.threshold"),
        (base("[burstradar]\nring = 0", ""), "burstradar.ring"),
        (base("[burstradar]\ncell = \"0B\"", ""), "burstradar.cell"),
        (base("[burstradar]\nwatch = [3]", ""), "mirror port"),
        (base("[burstradar]\nmonitor = 9", ""), "burstradar.monitor"),
        (base("[pfc]", ""), "not with pfc"),
        (base("", "on = \"10us\""), "give both `on` and `off`"),
        (base("", "off = [[5, 0.5], [1, 1.0]]\non = \"1us\""), "workload[0].off"),
        (base("", "").replace("line_rate = \"1Gbps\"", "line_rate = \"0Gbps\""), "workload[0].line_rate"),
        (base("", "").replace("dst = 2", "dst = 0"), "cannot send to itself"),
        (base("", "").replace("until = \"1ms\"", ""), "workload[0].until"),
        (base("", "packet_sizes = [[100, 1.0]]"), "not both"),
    ];
    for (cfg, want) in cases {
        let e = config_error(&cfg);
        assert!(e.contains(want), "expected {want:?} in: {e}");
    }
    let e = config_error("[topology]\nkind = \"star\"\nhost_rates = [\"10Gbps\"]\n[[workload]]\nkind = \"poisson\"");
    assert!(e.contains("topology.host_rates"), "{e}");
    // A monitor wired straight to another host has no switch to watch.
    let topo = temp_file("br-direct.toml", "hosts = 2\n[[link]]\na = \"h0\"\nb = \"h1\"\nrate = \"10Gbps\"\n");
    let e = config_error(&format!(
        "[topology]\nkind = \"file\"\npath = \"{}\"\n[burstradar]\nmonitor = 1\nthreshold = \"1us\"\n\
         [[workload]]\nkind = \"cbr\"\nsrc = 0\ndst = 1\nline_rate = \"1Gbps\"\nsize = 100\nuntil = \"1ms\"",
        topo.display()
    ));
    assert!(e.contains("burstradar.monitor") && e.contains("not to a switch"), "{e}");
    // Sizes out of range name the key that was given.
    let big = config_error(&base("", "").replace("size = 100", "packet_sizes = [[100, 0.5], [70000, 1.0]]"));
    assert!(big.contains("workload[0].packet_sizes") && big.contains("1 to 65535"), "{big}");
}
