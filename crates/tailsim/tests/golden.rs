//! Golden outputs: fixed scenarios whose event count, packet counts by kind and fate, and hashes of the flow
//! and port tables are committed (`tests/golden/*.json`). The determinism test compares two runs of one
//! binary and cannot see a change of behaviour; this test compares against the binary that wrote the goldens.
//! A refactor must leave every byte as it is. A change meant to alter behaviour updates the goldens in a
//! commit of its own that says why: `TAILSIM_UPDATE_GOLDEN=1 cargo test --profile ci --test golden`.

mod common;
use common::DropReason;
use std::path::{Path, PathBuf};
use tailsim::Experiment;

/// (golden name, experiment file relative to the repository root, command-line overrides)
const SCENARIOS: &[(&str, &str, &[&str])] = &[
    ("bench-pfabric-websearch-dctcp", "examples/bench/pfabric-websearch-dctcp.toml", &["stop.time=\"3ms\""]),
    ("bench-fattree128-perm-100g", "examples/bench/fattree128-perm-100g.toml", &["stop.time=\"1ms\""]),
    ("homa-w4", "crates/tailsim/tests/golden/homa-w4.toml", &[]),
    ("pfabric-websearch", "crates/tailsim/tests/golden/pfabric-websearch.toml", &[]),
    ("qjump-websearch", "crates/tailsim/tests/golden/qjump-websearch.toml", &[]),
    ("ndp-incast", "crates/tailsim/tests/golden/ndp-incast.toml", &[]),
    ("phost-w1", "crates/tailsim/tests/golden/phost-w1.toml", &[]),
    ("faults-tcp", "crates/tailsim/tests/golden/faults-tcp.toml", &[]),
    ("dctcp-classes", "crates/tailsim/tests/golden/dctcp-classes.toml", &[]),
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// FNV-1a, 64 bit: stable across platforms and Rust versions (unlike `DefaultHasher`).
#[derive(Clone, Copy)]
struct Fnv(u64);
impl Fnv {
    fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    fn u64(&mut self, v: u64) {
        for b in v.to_le_bytes() {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// What the golden file holds: everything a behaviour change would move, nothing that a refactor may
/// legitimately rename (the summary's field layout, the order of result columns).
fn record(e: &Experiment, s: &tailsim::Summary) -> serde_json::Value {
    let mut flows = Fnv::new();
    for r in &e.world.records.all() {
        for v in [r.id, r.src.0 as u64, r.dst.0 as u64, r.size, r.start.0, r.end.map_or(u64::MAX, |t| t.0), r.ideal.0] {
            flows.u64(v);
        }
        flows.u64(r.retransmits as u64);
        flows.u64(r.timeouts as u64);
    }
    let mut ports = Fnv::new();
    for p in &e.world.net.ports {
        let st = &p.stats;
        for v in [st.tx_packets, st.tx_bytes, st.ecn_marks, st.trims, st.max_bytes, st.busy_time.0] {
            ports.u64(v);
        }
        // The four reasons of the first goldens always; later ones only when they occur, so adding a reason
        // leaves the existing goldens alone.
        for (i, why) in DropReason::ALL.into_iter().enumerate() {
            if i < 4 || st.drops(why) > 0 {
                ports.u64(st.drops(why));
            }
        }
        ports.u64(p.avg_bytes(e.world.now).to_bits());
    }
    let pc = &s.packets;
    serde_json::json!({
        "stop_reason": s.stop_reason,
        "simulated_ps": e.world.now.0,
        "events": s.events,
        "packet_hops": s.packet_hops,
        "flows_started": s.flows_started,
        "flows_finished": s.flows_finished,
        "packets": {
            "created": pc.created,
            "delivered": pc.delivered,
            "dropped": pc.dropped,
            "in_flight": pc.in_flight,
            "dropped_overflow": pc.drops[DropReason::Overflow],
            "dropped_link_down": pc.drops[DropReason::LinkDown],
            "dropped_corrupt": pc.drops[DropReason::Corrupt],
            "dropped_policed": pc.drops[DropReason::Policed],
            "ecn_marked": pc.ecn_marked,
            "trimmed": pc.trimmed,
        },
        "peak_live_packets": e.world.pk.peak(),
        "flows_fnv": format!("{:016x}", flows.0),
        "ports_fnv": format!("{:016x}", ports.0),
        "transport": s.transport,
    })
}

/// A scenario's experiment with its overrides, stopped after 10^8 events if it names no stop.
fn load_scenario(file: &str, set: &[&str]) -> Experiment {
    let set: Vec<String> = set.iter().map(|s| s.to_string()).collect();
    let mut e = tailsim::load(&root().join(file), &set).unwrap_or_else(|err| panic!("{err}"));
    if e.stop.time.is_none() && e.stop.max_events.is_none() {
        e.stop.max_events = Some(100_000_000);
    }
    e
}

fn golden_path(name: &str) -> PathBuf {
    root().join(format!("crates/tailsim/tests/golden/{name}.json"))
}

fn golden_text(name: &str) -> String {
    let golden = golden_path(name);
    std::fs::read_to_string(&golden).unwrap_or_else(|e| panic!("{}: {e}", golden.display()))
}

fn run_scenario(file: &str, set: &[&str]) -> serde_json::Value {
    run_scenario_with(file, set, false)
}

/// `deep`: the run loop prefetches a packet-hop's whole chain from the first event (normally only past the
/// last-level cache's size, at most 32 MiB, which none of these small scenarios reaches).
fn run_scenario_with(file: &str, set: &[&str], deep: bool) -> serde_json::Value {
    let mut e = load_scenario(file, set);
    if deep {
        e.world.set_deep_prefetch_from(0);
    }
    let s = e.run(&mut |_| {}).unwrap_or_else(|err| panic!("{file}: {err}"));
    record(&e, &s)
}

#[test]
fn golden_outputs_are_unchanged() {
    let update = std::env::var_os("TAILSIM_UPDATE_GOLDEN").is_some();
    let mut failures = vec![];
    for (name, file, set) in SCENARIOS {
        let got = run_scenario(file, set);
        let text = serde_json::to_string_pretty(&got).unwrap() + "\n";
        if update {
            std::fs::write(golden_path(name), &text).unwrap();
            continue;
        }
        let want = golden_text(name);
        if want != text {
            let golden = golden_path(name);
            failures
                .push(format!("{name} ({file}) differs from {}:\n--- golden\n{want}--- now\n{text}", golden.display()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The switch mechanisms' bench scenarios, shortened: their frames, copies and made packets cross wires that
/// the prefetcher reads ahead of time too.
const MECHANISM_SCENARIOS: &[(&str, &[&str])] = &[
    ("examples/bench/detail-128-alltoall.toml", &["stop.time=\"20ms\""]),
    ("examples/bench/fastlane-128.toml", &["stop.time=\"2ms\""]),
    ("examples/bench/sqr-websearch.toml", &["stop.time=\"25ms\""]),
    ("examples/bench/lg-100g-stress.toml", &["stop.time=\"300us\""]),
    ("examples/bench/burstradar-cache.toml", &["stop.time=\"2ms\""]),
];

#[test]
fn prefetching_the_whole_chain_changes_no_result() {
    // The deep prefetch stages (sim/ahead.rs, `prefetch_ahead`) only run past the last-level cache's size (at most 32 MiB) in
    // ordinary runs; here from the first event, on every golden scenario (against the committed outputs)
    // and on each switch mechanism (against the same run without them).
    let mut failures = vec![];
    for (name, file, set) in SCENARIOS {
        let got = serde_json::to_string_pretty(&run_scenario_with(file, set, true)).unwrap() + "\n";
        if golden_text(name) != got {
            failures.push(format!("{name}: deep prefetch differs from {}:\n{got}", golden_path(name).display()));
        }
    }
    for (file, set) in MECHANISM_SCENARIOS {
        let (light, deep) = (run_scenario_with(file, set, false), run_scenario_with(file, set, true));
        assert!(light["packet_hops"].as_u64().unwrap() > 1000, "{file}: too short to mean anything");
        if light != deep {
            failures.push(format!("{file}: deep prefetch differs:\n{light}\n{deep}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Overrides giving the homa-144 fabric's links (which have no delay; its hosts' and switches' have) 100 ns.
const LINKS_100NS: &[&str] = &["topology.edge_delay=\"100ns\"", "topology.core_delay=\"100ns\""];

/// The scenario in `file` runs on the homa-144 fabric.
fn on_homa_144(file: &str) -> bool {
    std::fs::read_to_string(root().join(file)).unwrap().contains("homa-144")
}

/// Every scenario above run as a parallel run with every node a part of its own would hand its packets over
/// (sim/handover.rs): an arrival over a link reaches the queue only when the window of the smallest link
/// delay ends, later than the serial run scheduled it, and in reverse order. The results are the goldens
/// (the mechanisms': their plain runs'): the order of simultaneous events does not depend on when an
/// arrival was scheduled (with insertion order for every tie, every scenario differs). The homa-144 fabric's
/// links have no delay (its hosts' and switches' have), which leaves nothing to cut: its scenarios run with
/// 100 ns links, against their plain runs. A lookahead twice the smallest delay is caught (one picosecond
/// longer is caught only if a packet starts over such a link at a window's first picosecond).
#[test]
fn handing_packets_over_between_parts_changes_no_result() {
    use tailsim::net::partition::Partition;
    use tailsim::sim::Handover;
    let handing_over = |file: &str, set: &[&str], times: u64| -> Result<(serde_json::Value, Handover), String> {
        let mut e = load_scenario(file, set);
        let cut = Partition::each_node(&e.world.net).unwrap();
        assert!(cut.parts() > e.world.net.hosts.len(), "{file}: every host and some switches apart");
        let lookahead = cut.lookahead().expect("links");
        let stop = e.stop;
        let h = e.world.run_handing_over(stop, &cut, tailsim::units::Time(lookahead.0 * times))?;
        e.world.check_conservation().unwrap_or_else(|err| panic!("{file}: {err}"));
        assert!(h.windows > 100 && h.held > 100, "{file}: {h:?}");
        Ok((record(&e, &e.summary(h.reason, 0.0).unwrap()), h))
    };
    // (scenario, what handing over gave, what a plain run gives)
    let mut cases = vec![];
    for (name, file, set) in SCENARIOS {
        if on_homa_144(file) {
            let set = [*set, LINKS_100NS].concat();
            cases.push((*name, handing_over(file, &set, 1).unwrap(), run_scenario(file, &set)));
        } else {
            cases.push((*name, handing_over(file, set, 1).unwrap(), serde_json::from_str(&golden_text(name)).unwrap()));
        }
    }
    for (file, set) in MECHANISM_SCENARIOS {
        cases.push((*file, handing_over(file, set, 1).unwrap(), run_scenario(file, set)));
    }
    let mut failures = vec![];
    for (name, (got, h), want) in &cases {
        eprintln!("{name}: {h:?}");
        if got != want {
            failures.push(format!("{name}: handing over differs:\n{got}\n{want}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // Every event is scheduled by a handler at its own node, crosses a link, or is word every part handles
    // (with background flows, which used to start their successors at the source from the receiver's
    // handler: docs/parallel.md, "Flows that start flows").
    for (name, (_, h), _) in cases {
        assert_eq!((h.misplaced, h.first_misplaced), (0, None), "{name}");
    }
    let (file, set) = (SCENARIOS[0].1, SCENARIOS[0].2);
    let err = handing_over(file, set, 2).expect_err("a lookahead longer than a link's delay");
    assert!(err.starts_with("causality: an arrival over port"), "{err}");
}

/// Scenarios beyond the goldens for `deferring_ends_of_serialization_changes_no_result`: whole-fabric reads
/// in the middle of a run (queue samples, the end of a warm-up, a fault) and the other transports.
const DEFERRAL_SCENARIOS: &[(&str, &[&str])] = &[
    ("examples/incast.toml", &["output.queue_sample=\"5us\"", "stop.time=\"3ms\""]),
    ("examples/fattree-failure.toml", &["output.queue_sample=\"20us\"", "stop.time=\"5ms\""]),
    ("examples/htsim-perm128.toml", &["stop.time=\"300us\""]),
    ("examples/homa.toml", &["stop.time=\"2ms\""]),
    ("examples/qjump-websearch.toml", &["stop.time=\"2ms\""]),
    ("examples/dumbbell.toml", &["stop.time=\"2ms\""]),
];

/// A run's record with ports deferring their ends of serialization (`defer`) or not, with its whole summary
/// (but the wall clock's figures) and its queue samples' hash; and how many ends of serialization were
/// deferred.
fn run_deferring(file: &str, set: &[&str], defer: bool) -> (serde_json::Value, u64) {
    let mut e = load_scenario(file, set);
    e.world.defer_starts = defer;
    let s = e.run(&mut |_| {}).unwrap_or_else(|err| panic!("{file}: {err}"));
    let mut samples = Fnv::new();
    for &(t, p, b) in &e.world.queue_samples {
        for v in [t.0, p as u64, b] {
            samples.u64(v);
        }
    }
    let mut summary = serde_json::to_value(&s).unwrap();
    for volatile in ["run_id", "wall_seconds", "events_per_second", "packet_hops_per_second", "peak_memory_bytes"] {
        summary.as_object_mut().unwrap().remove(volatile).expect("a summary's field");
    }
    let all = serde_json::json!({ "record": record(&e, &s), "summary": summary, "samples": samples.0 });
    (all, e.world.ev.deferred())
}

#[test]
fn deferring_ends_of_serialization_changes_no_result() {
    // A backlogged port leaves its end of serialization without an event and catches up when touched
    // (net/lazy.rs); every result must be what the events give, in the goldens and in runs that read the
    // whole fabric mid-run. Each scenario must defer a good share of its events, or this checks nothing.
    let mut failures = vec![];
    let mut cases: Vec<(&str, &[&str])> = SCENARIOS.iter().map(|(_, f, s)| (*f, *s)).collect();
    cases.extend(DEFERRAL_SCENARIOS.iter().copied());
    for (file, set) in cases {
        // The homa-144 fabric's links have no delay: nothing there can defer (a wire's arrival would come
        // at the very end of the serialization it is to catch up).
        let set = if on_homa_144(file) { [set, LINKS_100NS].concat() } else { set.to_vec() };
        let (with, deferred) = run_deferring(file, &set, true);
        let (without, none) = run_deferring(file, &set, false);
        let events = with["record"]["events"].as_u64().unwrap();
        assert_eq!(none, 0, "{file}: deferred with deferral off");
        assert!(deferred * 20 > events, "{file}: {deferred} of {events} events deferred: too few to check");
        if with != without {
            failures.push(format!("{file}: deferring differs:\n{with}\n{without}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
