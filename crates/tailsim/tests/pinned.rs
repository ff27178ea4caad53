//! Pinned paths (a trace's `path` and `via` columns): every packet of a pinned flow crosses exactly the given
//! switches (port counters), its ACKs take them back, a longer path's ideal FCT is still met to the
//! picosecond, the flows table names each flow's path, and bad paths are refused with the file and line.

mod common;
use common::*;
use tailsim::metrics::output::Column;
use tailsim::units::NodeId;

/// A trace with a `path` or `via` column; `rows` are "src,dst,size,start_us,path,via".
fn pinned_trace(name: &str, rows: &str) -> String {
    let tag = rows.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3));
    let path = temp_file(&format!("{tag:016x}-{name}"), &format!("src,dst,size_bytes,start_us,path,via\n{rows}"));
    format!("[[workload]]\nkind = \"trace\"\npath = \"{}\"\n", path.display())
}

/// Packets sent by node `a` towards node `b`.
fn tx(e: &tailsim::Experiment, a: u32, b: u32) -> u64 {
    let net = &e.world.net;
    net.ports[net.port_towards(NodeId(a), NodeId(b)).unwrap().idx()].stats.tx_packets
}

fn paths(e: &tailsim::Experiment) -> Vec<String> {
    let cols = e.flow_columns_of(0..e.world.records.len()).unwrap();
    match cols.into_iter().find(|c| matches!(c, Column::Str("path", _))) {
        Some(Column::Str(_, v)) => v,
        _ => panic!("no path column"),
    }
}

// two_leaves(4): hosts 0–7, leaf0 = 8, leaf1 = 9, spine0–3 = 10–13.
const LEAF0: u32 = 8;
const LEAF1: u32 = 9;
const SPINE0: u32 = 10;

#[test]
fn pinned_flows_cross_exactly_their_switches_and_acks_come_back() {
    let rows = "0,4,100000,0,leaf0 spine2 leaf1,\n1,5,100000,0,,spine3\n";
    let (e, s) = run(&format!("{}{}", two_leaves(4, ""), pinned_trace("pinned.csv", rows)));
    assert_eq!((s.flows_finished, s.packets.dropped), (2, 0));
    let data = 100_000u64.div_ceil(1460); // 69 segments each, none resent
    for k in 0..4 {
        let (up, down, acks) = (tx(&e, LEAF0, SPINE0 + k), tx(&e, SPINE0 + k, LEAF1), tx(&e, LEAF1, SPINE0 + k));
        let want = if k >= 2 { data } else { 0 };
        assert_eq!((up, down), (want, want), "data through spine{k}");
        assert_eq!(acks > 0, k >= 2, "ACKs back through spine{k}: {acks}");
        assert_eq!(tx(&e, SPINE0 + k, LEAF0), acks, "ACKs reach leaf0 from spine{k}");
    }
    assert_eq!(paths(&e), ["leaf0 spine2 leaf1", "leaf0 spine3 leaf1"]);
}

#[test]
fn the_flows_table_names_the_path_ecmp_chose() {
    // Unpinned flows: the spine the table names for each is the one whose ports carried its packets.
    let rows: String = (0..16).map(|i| format!("{},{},{},{}\n", i % 4, 4 + (i * 3) % 4, 1460 * (i + 1), i)).collect();
    let (e, s) = run(&format!("{}{}", two_leaves(4, ""), trace_workload("ecmp16.csv", &rows)));
    assert_eq!((s.flows_finished, s.packets.dropped), (16, 0));
    let names = paths(&e);
    let mut per_spine = [0u64; 4];
    for (i, p) in names.iter().enumerate() {
        let k: usize = p.strip_prefix("leaf0 spine").and_then(|r| r.strip_suffix(" leaf1")).unwrap().parse().unwrap();
        per_spine[k] += i as u64 + 1; // flow i has i + 1 segments
    }
    assert!(per_spine.iter().filter(|&&n| n > 0).count() >= 2, "{per_spine:?}: ECMP used one spine only");
    for (k, &n) in per_spine.iter().enumerate() {
        assert_eq!(tx(&e, LEAF0, SPINE0 + k as u32), n, "spine{k}");
    }
}

#[test]
fn a_longer_pinned_path_meets_its_own_ideal_to_the_picosecond() {
    // Three leaves of one host, two spines: h0 → h1 pinned to leaf0 spine0 leaf2 spine1 leaf1, six 10G links
    // of 1 µs: one 1500 B packet takes 6 × (1.2 µs + 1 µs).
    let fabric = "[topology]\nkind = \"leaf-spine\"\nleaves = 3\nspines = 2\nhosts_per_leaf = 1\n\
                  edge_rate = \"10Gbps\"\ncore_rate = \"10Gbps\"\nedge_delay = \"1us\"\ncore_delay = \"1us\"\n";
    let rows = "0,1,1460,0,leaf0 spine0 leaf2 spine1 leaf1,\n";
    let (e, s) = run(&format!("{fabric}{}", pinned_trace("long.csv", rows)));
    assert_eq!(s.flows_finished, 1);
    let r = e.world.records.nth(0);
    assert_eq!(r.ideal.0, 6 * 2_200_000);
    assert_eq!(r.fct().unwrap(), r.ideal);
    // leaf2 = node 5 forwarded it once, to spine1 = node 7.
    assert_eq!(tx(&e, 5, 7), 1);
}

#[test]
fn bad_paths_name_the_file_line_and_step() {
    let cases = [
        ("0,4,10,0,leaf0 spine9 leaf1,\n", "no switch is named \"spine9\""),
        ("0,4,10,0,leaf0 leaf1,\n", "leaf0 has no link to leaf1"),
        ("0,4,10,0,leaf1 spine0 leaf0,\n", "h0 has no link to leaf1"),
        ("0,4,10,0,leaf0 3 leaf1,\n", "\"3\" is a host"),
        ("0,1,10,0,,spine0\n", "leaf0 appears twice"),
        ("0,4,10,0,,leaf0\n", "4 shortest paths join leaf0 and h4"),
        ("0,4,10,0,leaf0 spine0 leaf1,spine0\n", "both path and via"),
        ("0,4,10,0,,spine0 spine1\n", "expected one switch name"),
    ];
    for (row, needle) in cases {
        let err =
            config_error(&format!("{}{}", two_leaves(4, ""), pinned_trace("bad.csv", &format!("1,5,10,0,,\n{row}"))));
        assert!(err.contains(needle), "{row:?}: {err}");
        assert!(err.contains("bad.csv:3"), "{row:?} names no line: {err}");
    }
}

#[test]
fn a_run_replayed_with_its_flows_tables_paths_puts_every_flow_where_ecmp_had_put_it() {
    // 40 unpinned flows across the spines, then the same trace pinned to the paths the flows table names:
    // every uplink carries the same data packets (the ACKs now come back along the data's path).
    let rows: Vec<String> =
        (0..40).map(|i| format!("{},{},{},{}", i % 4, 4 + (i * 7) % 4, 1460 * (1 + i % 9), i / 3)).collect();
    let (e, s) = run(&format!("{}{}", two_leaves(4, ""), trace_workload("replay.csv", &(rows.join("\n") + "\n"))));
    assert_eq!((s.flows_finished, s.packets.dropped), (40, 0));
    let names = paths(&e);
    let pinned: String = rows.iter().zip(&names).map(|(r, p)| format!("{r},{p},\n")).collect();
    let (again, s2) = run(&format!("{}{}", two_leaves(4, ""), pinned_trace("replay-pinned.csv", &pinned)));
    assert_eq!((s2.flows_finished, s2.packets.dropped), (40, 0));
    assert_eq!(paths(&again), names);
    for k in 0..4 {
        for (a, b) in [(LEAF0, SPINE0 + k), (SPINE0 + k, LEAF1)] {
            assert_eq!(tx(&again, a, b), tx(&e, a, b), "data {a} → {b}");
        }
    }
}

#[test]
fn ns3s_first_route_puts_every_flow_on_the_first_spine() {
    let rows: String = (0..12).map(|i| format!("{},{},14600,{}\n", i % 4, 4 + i % 4, i)).collect();
    let toml = |hash: &str| {
        format!("{}[routing]\nhash = \"{hash}\"\n{}", two_leaves(4, ""), trace_workload("first.csv", &rows))
    };
    let (e, s) = run(&toml("first"));
    assert_eq!(s.flows_finished, 12);
    assert_eq!(tx(&e, LEAF0, SPINE0), 12 * 10, "every data packet through spine0");
    assert_eq!(tx(&e, LEAF1, SPINE0), tx(&e, SPINE0, LEAF0), "and every ACK");
    assert!(paths(&e).iter().all(|p| p == "leaf0 spine0 leaf1"));
    let (e, _) = run(&toml("tailsim"));
    assert!(tx(&e, LEAF0, SPINE0) < 12 * 10, "the salted hash spreads them");
}

#[test]
fn routing_hash_is_checked() {
    let e = config_error(&format!(
        "{}[routing]\nhash = \"crc\"\n{}",
        two_leaves(2, ""),
        trace_workload("h.csv", "0,4,10,0\n")
    ));
    assert!(e.contains("routing.hash") && e.contains("\"first\""), "{e}");
    let e = config_error(&format!(
        "{}[routing]\nload_balance = \"spray\"\nhash = \"first\"\n{}",
        two_leaves(2, ""),
        trace_workload("h.csv", "0,4,10,0\n")
    ));
    assert!(e.contains("routing.hash") && e.contains("ecmp"), "{e}");
}
