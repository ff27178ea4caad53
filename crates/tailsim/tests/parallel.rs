//! A run cut into parts, each handling its own nodes' events, on threads or one after another
//! (sim/parallel.rs, docs/parallel.md): the serial run's results byte for byte, for every cut; what a
//! part cannot do yet refused before anything runs; a lookahead longer than a cut link caught.

mod common;
use common::exp;
use tailsim::{Experiment, Summary};

/// A k-ary fat tree of 10 Gbps, 1 µs links and 60 KB switch buffers, packets sprayed, every host a raw
/// source to the host `shift` further on (bursts at line rate: on and off periods drawn), plus three
/// hosts bursting into host 0 (drops); `us` microseconds.
fn raw_fat_tree(k: u32, shift: u32, us: u32) -> String {
    let hosts = k * k * k / 4;
    let mut t = format!(
        "seed = 7\n[topology]\nkind = \"fat-tree\"\nk = {k}\nrate = \"10Gbps\"\ndelay = \"1us\"\n\
         [switch]\nbuffer = \"60KB\"\n[routing]\nload_balance = \"spray\"\n[stop]\ntime = \"{us}us\"\n"
    );
    let source = |src: u32, dst: u32| {
        format!(
            "[[workload]]\nkind = \"cbr\"\nsrc = {src}\ndst = {dst}\nline_rate = \"10Gbps\"\n\
             packet_sizes = [[64, 0.2], [576, 0.5], [1500, 1.0]]\n\
             on = [[1, 0.0], [5, 0.5], [20, 1.0]]\noff = [[2, 0.0], [10, 0.5], [40, 1.0]]\nuntil = \"{us}us\"\n"
        )
    };
    for i in 0..hosts {
        t += &source(i, (i + shift) % hosts);
    }
    for i in [3, hosts / 2 + 1, hosts - 1] {
        t += &source(i, 0);
    }
    t
}

/// Everything a run's results say, but its wall time and memory.
fn results(e: &Experiment, s: &Summary) -> serde_json::Value {
    let mut v = serde_json::to_value(s).unwrap();
    let m = v.as_object_mut().unwrap();
    for k in ["wall_seconds", "events_per_second", "packet_hops_per_second", "peak_memory_bytes"] {
        m.remove(k).unwrap_or_else(|| panic!("the summary has no {k}"));
    }
    let ports: Vec<_> = e
        .world
        .net
        .ports
        .iter()
        .map(|p| {
            let st = &p.stats;
            let drops: Vec<u64> = tailsim::net::port::DropReason::ALL.into_iter().map(|w| st.drops(w)).collect();
            serde_json::json!([
                st.tx_packets,
                st.tx_bytes,
                st.max_bytes,
                st.busy_time.0,
                drops,
                p.avg_bytes(e.world.now)
            ])
        })
        .collect();
    let sinks: Vec<_> = e.world.net.hosts.iter().map(|h| [h.sink.raw, h.sink.raw_bytes]).collect();
    // Every flow's record, every field (end, retransmissions and timeouts come from different parts).
    let flows: Vec<_> = e.world.records.all().iter().map(|r| format!("{r:?}")).collect();
    // The transport's own tables (TCP's cwnd trace and rx_gaps), as text.
    let mut tables: Vec<_> =
        e.world.transport.tables().iter().map(|(name, cols)| format!("{name}: {cols:?}")).collect();
    // And the mechanisms' (BurstRadar's telemetry records).
    tables.extend(e.world.net.mechanism_tables().iter().map(|(name, cols)| format!("{name}: {cols:?}")));
    // Retrievals and workflows (each from its client's part).
    if !e.world.jobs.retrievals.is_empty() {
        let retrievals = tailsim::metrics::jobs::retrieval_columns(&e.world.jobs, &e.world.records).unwrap();
        tables.push(format!("retrievals: {retrievals:?}"));
        tables.push(format!("workflows: {:?}", tailsim::metrics::jobs::workflow_columns(&e.world.jobs)));
    }
    let samples: Vec<_> = e.world.queue_samples.iter().map(|&(t, p, b)| [t.0, p as u64, b]).collect();
    serde_json::json!({
        "summary": v, "ports": ports, "sinks": sinks, "flows": flows, "tables": tables, "now": e.world.now.0,
        "samples": samples
    })
}

fn serial(toml: &str) -> serde_json::Value {
    let mut e = exp(toml);
    let s = e.run(&mut |_| {}).unwrap_or_else(|err| panic!("{err}"));
    results(&e, &s)
}

/// `toml` run as `parts` parts on `threads` threads (a thread with several parts runs them in turn).
fn parallel(toml: &str, parts: usize, threads: usize) -> (serde_json::Value, tailsim::sim::Parallel) {
    let mut e = exp(toml);
    let others = (1..parts).map(|_| exp(toml)).collect();
    let (s, par) = e.run_parallel(others, threads, &mut |_| true).unwrap_or_else(|err| panic!("{err}"));
    (results(&e, &s), par)
}

/// The thread counts a run of `n` parts is tested on: all in turn on one thread, a thread each (if the
/// machine has the cores, or `beyond_cores`), and, if `grouped`, two threads each running several parts in
/// turn (groups of unequal sizes when `n` is odd).
fn thread_counts(n: usize, beyond_cores: bool, grouped: bool) -> Vec<usize> {
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    let mut v = vec![1];
    if grouped && n > 2 {
        v.push(2);
    }
    if n > 1 && (beyond_cores || n <= cores.max(2)) {
        v.push(n);
    }
    v
}

/// The first difference between two results, as a path and two values.
fn first_difference(a: &serde_json::Value, b: &serde_json::Value, at: &str) -> Option<String> {
    use serde_json::Value::{Array, Object};
    match (a, b) {
        (Object(x), Object(y)) => x.keys().chain(y.keys()).find_map(|k| match (x.get(k), y.get(k)) {
            (Some(u), Some(v)) => first_difference(u, v, &format!("{at}.{k}")),
            _ => Some(format!("{at}.{k}: present in one only")),
        }),
        (Array(x), Array(y)) if x.len() == y.len() => {
            x.iter().zip(y).enumerate().find_map(|(i, (u, v))| first_difference(u, v, &format!("{at}[{i}]")))
        }
        _ => (a != b).then(|| format!("{at}: {a} against {b}")),
    }
}

/// `toml` cut into each number of parts in `cuts`, in turn on one thread and on a thread each (as many parts
/// as cores at most: these runs meet thousands of times, and threads beyond the cores wait their turn at
/// every meeting), and the largest cut of more than two parts on two threads as well, each running several
/// parts in turn, gives the serial run's results `want`; packets cross between the parts.
fn cut_gives(want: &serde_json::Value, toml: &str, cuts: &[usize], name: &str) {
    let grouped = cuts.iter().copied().filter(|&n| n > 2).max();
    for &n in cuts {
        for threads in thread_counts(n, false, Some(n) == grouped) {
            let (got, par) = parallel(toml, n, threads);
            assert!(par.handed_over > 100, "{name}, {n} parts: packets crossed ({})", par.handed_over);
            if let Some(d) = first_difference(want, &got, "") {
                panic!("{name}, {n} parts on {threads} threads: {d}");
            }
        }
    }
}

#[test]
fn a_run_cut_into_parts_gives_the_serial_runs_results_for_every_cut() {
    let cases = [(4, 400, &[1usize, 2, 4, 8, 16][..], ""), (8, 100, &[2, 3, 8, 32][..], ""), (4, 300, &[2, 4], "60us")];
    for (k, us, cuts, warmup) in cases {
        let mut toml = raw_fat_tree(k, 5, us);
        if !warmup.is_empty() {
            // The end of warm-up, which every part handles for its own ports and receivers.
            toml += &format!("[output]\nwarmup = \"{warmup}\"\n");
        }
        let want = serial(&toml);
        let hops = want["summary"]["packet_hops"].as_u64().unwrap();
        let dropped = want["summary"]["packets"]["dropped"].as_u64().unwrap();
        assert!(hops > 10_000 && dropped > 0, "k = {k}: a test with traffic and drops ({hops} hops, {dropped} drops)");
        for &n in cuts {
            // A thread each even beyond the cores (the threads then wait for a core at the meetings), and two
            // threads with several parts each.
            for threads in thread_counts(n, true, true) {
                let (got, par) = parallel(&toml, n, threads);
                assert_eq!(par.parts, n);
                if n > 1 {
                    assert!(par.handed_over > 100, "k = {k}, {n} parts: packets crossed ({})", par.handed_over);
                }
                if let Some(d) = first_difference(&want, &got, "") {
                    panic!("k = {k}, {n} parts on {threads} threads: {d}");
                }
            }
        }
    }
}

/// `common::ndp_fat_tree` (web search over a sprayed, trimming fat tree) with two rounds of a six-sender incast besides the web search.
fn ndp_fat_tree(k: u32, load: f64, flows: u32, extra: &str) -> String {
    let incast = "[[workload]]\nkind = \"incast\"\nsenders = 6\nsize = \"40KB\"\ncount = 2\ninterval = \"200us\"\n";
    common::ndp_fat_tree(k, load, flows, &format!("{incast}{extra}"))
}

#[test]
fn ndp_flows_cut_into_parts_give_the_serial_runs_results() {
    let cases = [
        // Run to the end: every flow received and closed; trimming only.
        ("to the end", ndp_fat_tree(4, 0.6, 300, ""), &[2usize, 3, 4, 8][..]),
        // Cut short by a time limit: flows open at both ends, the last arrival's statistics.
        (
            "time limit",
            ndp_fat_tree(8, 0.7, 20000, "[stop]\ntime = \"300us\"\n").replace("websearch", "homa-w3"),
            &[2, 4, 7, 16][..],
        ),
        // Small buffers lose headers and control packets outright: both ends' timeouts, late packets at
        // closed halves, a warm-up.
        (
            "losses",
            ndp_fat_tree(4, 0.7, 300, "[output]\nwarmup = \"50us\"\n")
                .replace("trim = \"12KB\"", "trim = \"12KB\"\nbuffer = \"16KB\"")
                .replace("kind = \"ndp\"", "kind = \"ndp\"\nresend_timeout = \"60us\""),
            &[2, 4],
        ),
    ];
    for (name, toml, cuts) in cases {
        let want = serial(&toml);
        let s = &want["summary"];
        let finished = s["flows_finished"].as_u64().unwrap();
        assert!(finished > 100, "{name}: flows finished ({finished})");
        if name == "losses" {
            let t = s["transport"]["timeouts"].as_u64().unwrap();
            let dropped = s["packets"]["dropped"].as_u64().unwrap();
            assert!(t > 0 && dropped > 0, "{name}: timeouts ({t}) and drops ({dropped})");
        }
        if name == "time limit" {
            assert_eq!(s["stop_reason"], "time-limit");
            assert!(s["flows_started"].as_u64().unwrap() > finished, "{name}: flows still open at the end");
        }
        cut_gives(&want, &toml, cuts, name);
    }
}

#[test]
fn links_failing_under_ndp_flows_cut_into_parts_give_the_serial_runs_results() {
    // Aggregation–core links (cut in every cut between pods; one of them flapping, down 3 µs every 11 µs, so
    // that it goes down while a packet is being serialized onto it) and a ToR–aggregation link go down and
    // come back; routes re-converge 20 µs after each change. Packets are lost on the way down (NDP's
    // timeouts recover them).
    let faults = "[routing]\nreroute = \"20us\"\n\
                  [[fault]]\nat = \"80us\"\nlink = [\"agg0\", \"core0\"]\nstate = \"down\"\nduration = \"300us\"\n\
                  [[fault]]\nat = \"40us\"\nlink = [\"agg5\", \"core3\"]\nstate = \"down\"\nduration = \"3us\"\n\
                  every = \"11us\"\ncount = 40\n\
                  [[fault]]\nat = \"150us\"\nlink = [\"edge2\", \"agg3\"]\nstate = \"down\"\nduration = \"200us\"\n";
    let toml = ndp_fat_tree(4, 0.7, 200, faults).replace("[routing]\nload_balance = \"spray\"\n", "");
    let toml = toml.replace("reroute = ", "load_balance = \"spray\"\nreroute = ");
    let want = serial(&toml);
    let s = &want["summary"];
    let down = s["packets"]["dropped_link_down"].as_u64().unwrap();
    assert!(down > 0, "packets lost to the links going down: {}", s["packets"]);
    assert_eq!(s["flows_finished"], s["flows_started"], "{s}");
    cut_gives(&want, &toml, &[2, 3, 4, 8], "faults");
}

#[test]
fn homa_flows_cut_into_parts_give_the_serial_runs_results() {
    // Homa without losses (unlimited buffers: no resend timeout), so each end has a life of its own.
    let toml = ndp_fat_tree(4, 0.7, 400, "")
        .replace("trim = \"12KB\"", "buffer = \"unlimited\"")
        .replace("kind = \"ndp\"", "kind = \"homa\"")
        .replace("websearch", "homa-w4");
    let want = serial(&toml);
    let finished = want["summary"]["flows_finished"].as_u64().unwrap();
    assert_eq!(finished, want["summary"]["flows_started"].as_u64().unwrap());
    assert!(finished > 300 && want["summary"]["transport"]["grants"].as_u64().unwrap() > 1000, "{}", want["summary"]);
    cut_gives(&want, &toml, &[2, 3, 4, 8], "homa");
}

#[test]
fn lossy_homa_and_phost_flows_cut_into_parts_give_the_serial_runs_results() {
    // Homa with losses recovered (20 KB buffers, RESENDs after 50 us): the sender keeps its half until word
    // of the receiver's completion reaches it. pHost: tokens that reach the sender before that word are
    // spent; 20 KB buffers lose packets, tokened again after its timeout.
    let base = ndp_fat_tree(4, 0.7, 300, "").replace("trim = \"12KB\"", "buffer = \"20KB\"");
    let cases = [
        (
            "homa",
            base.replace("kind = \"ndp\"", "kind = \"homa\"\nresend_timeout = \"50us\"")
                .replace("websearch", "homa-w4"),
        ),
        (
            "phost",
            base.replace("kind = \"ndp\"", "kind = \"phost\"\nresend_timeout = \"100us\"")
                .replace("websearch", "homa-w4"),
        ),
    ];
    for (name, toml) in cases {
        let want = serial(&toml);
        let s = &want["summary"];
        assert_eq!(s["flows_finished"], s["flows_started"], "{name}: {s}");
        // Losses recovered: Homa's RESENDs, pHost's tokens counted as expired and sent again.
        let recovered = &s["transport"][if name == "homa" { "resends" } else { "expired" }];
        assert!(s["packets"]["dropped"].as_u64().unwrap() > 100 && recovered.as_u64().unwrap() > 100, "{name}: {s}");
        cut_gives(&want, &toml, &[2, 3, 4, 8], name);
    }
}

/// A TCP-family transport on a k = 4 fat tree of 10 Gbps, 1 µs links, ECMP: web-search flows at 70 % load,
/// `flows` of them, and an incast; `transport` holds the `[transport]` keys, `extra` is appended.
fn tcp_fat_tree(flows: u32, transport: &str, extra: &str) -> String {
    format!(
        "seed = 5\n[topology]\nkind = \"fat-tree\"\nk = 4\nrate = \"10Gbps\"\ndelay = \"1us\"\n\
         [transport]\n{transport}\n\
         [[workload]]\nkind = \"poisson\"\ncdf = \"websearch\"\nload = 0.7\nflows = {flows}\n\
         [[workload]]\nkind = \"incast\"\nsenders = 10\nsize = \"60KB\"\ncount = 3\ninterval = \"300us\"\n{extra}"
    )
}

#[test]
fn tcp_flows_cut_into_parts_give_the_serial_runs_results() {
    // Each case runs TCP's sender and receiver in their hosts' parts, the receiver's half closing when word
    // of the sender's close reaches it (a message between hosts handed over at the meetings).
    let trace = "[output]\ncwnd_trace = [3, 40, 41, 200]\nrx_gaps = true\n";
    let cases = [
        // DCTCP with ECN marks, delayed ACKs, both traces.
        (
            "dctcp",
            tcp_fat_tree(
                300,
                "kind = \"dctcp\"\ndelayed_ack = 2",
                &format!("[switch]\necn_threshold = \"30KB\"\n{trace}"),
            ),
        ),
        // NewReno with SACK over small buffers: fast retransmits, timeouts, duplicates at receivers whose
        // sender has closed; a time limit leaves flows open at both ends.
        (
            "losses",
            tcp_fat_tree(
                2000,
                "kind = \"tcp\"\nmin_rto = \"100us\"\nhandshake = true\nsyn_rto = \"200us\"",
                "[switch]\nbuffer = \"20KB\"\n[stop]\ntime = \"30ms\"\n",
            ),
        ),
        // pFabric's queues and its fixed RTO (spurious retransmissions), an edge and a core link down a
        // while with routes re-converging.
        (
            "pfabric",
            tcp_fat_tree(
                300,
                "kind = \"pfabric\"",
                "[switch]\nqueue = \"pfabric\"\nbuffer = \"36KB\"\n[routing]\nreroute = \"20us\"\n\
                 [[fault]]\nat = \"200us\"\nlink = [\"agg1\", \"core1\"]\nstate = \"down\"\nduration = \"400us\"\n\
                 [[fault]]\nat = \"300us\"\nlink = [\"h6\", \"edge3\"]\nstate = \"down\"\nduration = \"100us\"\n",
            ),
        ),
    ];
    for (name, toml) in cases {
        let mut e = exp(&toml);
        let s = e.run(&mut |_| {}).unwrap_or_else(|err| panic!("{name}: {err}"));
        let want = results(&e, &s);
        let s = &want["summary"];
        let finished = s["flows_finished"].as_u64().unwrap();
        assert!(finished > 200, "{name}: flows finished ({finished})");
        let retransmits: u64 = e.world.records.all().iter().map(|r| r.retransmits as u64).sum();
        match name {
            "dctcp" => {
                assert!(s["packets"]["ecn_marked"].as_u64().unwrap() > 1000, "{name}: {}", s["packets"]);
                assert_eq!(want["tables"].as_array().unwrap().len(), 2, "{name}: both traces");
            }
            "losses" => {
                let timeouts: u64 = e.world.records.all().iter().map(|r| r.timeouts as u64).sum();
                assert!(
                    retransmits > 100 && timeouts > 10,
                    "{name}: {retransmits} retransmissions, {timeouts} timeouts"
                );
                assert_eq!(s["stop_reason"], "time-limit");
                assert!(s["flows_started"].as_u64().unwrap() > finished, "{name}: flows still open at the end");
            }
            _ => assert!(s["packets"]["dropped_link_down"].as_u64().unwrap() > 0 && retransmits > 0, "{name}: {s}"),
        }
        cut_gives(&want, &toml, &[2, 3, 4, 8], name);
    }
}

#[test]
fn retrievals_and_workflows_cut_into_parts_give_the_serial_runs_results() {
    // Sequential workflows of 4 retrievals, partition-aggregate bursts (FastLane's totals) and lone 200 KB
    // retrievals on a k = 4 fat tree. Each flow is made at its workflow's arrival (in every part) and started
    // by its sender's part: a response by the server's, on its request's last byte; a sequential workflow's
    // next request by the client's, on the last response's. A time limit leaves workflows unfinished and
    // later flows never started (in no table).
    let jobs = "[[workload]]\nkind = \"workflow\"\nshape = \"sequential\"\nparts = 4\nsizes = [\"2KB\", \"20KB\"]\n\
                rate = 5000.0\nuntil = \"2ms\"\n\
                [[workload]]\nkind = \"workflow\"\nshape = \"partition-aggregate\"\nsizes = [\"2KB\", \"8KB\"]\n\
                totals = [\"16KB\", \"24KB\"]\nrate = 5000.0\nuntil = \"2ms\"\n\
                [[workload]]\nkind = \"retrieval\"\nsizes = [\"200KB\"]\nrate = 1000.0\nuntil = \"2ms\"\n\
                [stop]\ntime = \"1500us\"\n";
    let fat_tree = "seed = 3\n[topology]\nkind = \"fat-tree\"\nk = 4\nrate = \"10Gbps\"\ndelay = \"1us\"\n";
    let cases = [
        ("tcp", "kind = \"tcp\"\nmin_rto = \"200us\"", "[switch]\nbuffer = \"30KB\"\n[fastlane]\n"),
        ("homa", "kind = \"homa\"", ""),
    ];
    for (name, transport, extra) in cases {
        let toml = format!("{fat_tree}[transport]\n{transport}\n{extra}{jobs}");
        let mut e = exp(&toml);
        let s = e.run(&mut |_| {}).unwrap_or_else(|err| panic!("{name}: {err}"));
        let want = results(&e, &s);
        let jobs = &e.world.jobs;
        let done = jobs.workflows.iter().filter(|w| w.end.is_some()).count();
        let started = s.flows_started as usize;
        assert!(done > 150 && done < jobs.workflows.len(), "{name}: {done} of {} workflows", jobs.workflows.len());
        assert!(
            started < e.world.records.len(),
            "{name}: flows never started ({started} of {})",
            e.world.records.len()
        );
        assert_eq!(e.world.records.all().len(), started, "{name}: the tables hold the started flows");
        cut_gives(&want, &toml, &[2, 3, 4, 8], name);
    }
}

#[test]
fn background_flows_cut_into_parts_give_the_serial_runs_results() {
    // DeTail's traffic without its adaptive load balancer: retrievals and sequential workflows in the
    // foreground, closed-loop 200 KB background flows from every host, over TCP, lossy and over PFC. A
    // finished background flow's successor is made in every part, when word of it (a broadcast) reaches its
    // source; every part counts the foreground work done the same way, so every part ends the run at the
    // same event: the least delay of word after the last workflow.
    let fat_tree = "seed = 11\n[topology]\nkind = \"fat-tree\"\nk = 4\nrate = \"10Gbps\"\ndelay = \"1us\"\n\
                    [transport]\nkind = \"tcp\"\nmin_rto = \"200us\"\n";
    let jobs =
        "[[workload]]\nkind = \"retrieval\"\nsizes = [\"2KB\", \"8KB\", \"32KB\"]\nrate = 20000.0\nuntil = \"2ms\"\n\
                class = 0\n\
                [[workload]]\nkind = \"workflow\"\nshape = \"sequential\"\nparts = 3\nsizes = [\"4KB\"]\n\
                rate = 5000.0\nuntil = \"2ms\"\nclass = 0\n\
                [[workload]]\nkind = \"background\"\nsize = \"50KB\"\nclass = 1\n";
    let cases = [
        ("lossy", "[switch]\nbuffer = \"40KB\"\n".to_string()),
        ("pfc", "[switch]\nbuffer = \"40KB\"\n[host]\nnic_buffer = \"unlimited\"\n[pfc]\n".to_string()),
    ];
    for (name, extra) in cases {
        let toml = format!("{fat_tree}{extra}{jobs}");
        let mut e = exp(&toml);
        let s = e.run(&mut |_| {}).unwrap_or_else(|err| panic!("{name}: {err}"));
        let want = results(&e, &s);
        assert_eq!(s.stop_reason, tailsim::StopReason::Finished, "{name}");
        let bg = e
            .world
            .records
            .all()
            .iter()
            .filter(|r| matches!(r.role, tailsim::traffic::jobs::Role::Background(_)))
            .count();
        let last = e.world.jobs.workflows.iter().map(|w| w.end.unwrap()).max().unwrap();
        assert_eq!(e.world.now, last + tailsim::units::Time::us(1), "{name}: the end");
        assert!(
            bg > 100 && s.flows_started as usize > bg + 1000,
            "{name}: {bg} background flows of {}",
            s.flows_started
        );
        cut_gives(&want, &toml, &[2, 3, 4, 8], name);
    }
}

#[test]
fn rdma_flows_cut_into_parts_give_the_serial_runs_results() {
    // Go-back-N over small buffers: NAKs, rewinds, timeouts, duplicates answered by responders whose
    // requester has closed, until word of that close reaches them.
    let toml = tcp_fat_tree(300, "kind = \"rdma\"\nrto = \"100us\"", "[switch]\nbuffer = \"30KB\"\n");
    let want = serial(&toml);
    let s = &want["summary"];
    assert_eq!(s["flows_finished"], s["flows_started"], "{s}");
    let t = &s["transport"];
    assert!(t["naks"].as_u64().unwrap() > 10 && t["duplicates"].as_u64().unwrap() > 10, "{t}");
    cut_gives(&want, &toml, &[2, 3, 4, 8], "rdma");
}

#[test]
fn corrupting_links_cut_into_parts_give_the_serial_runs_results() {
    // The `faults-tcp` golden: TCP on a leaf-spine whose leaf0–spine1 link corrupts 2 % of its packets from
    // the start (both ways, a link between parts in every cut) and an edge link that goes down and comes back.
    // A link's losses are drawn where its packets arrive, from the sending port's stream, and counted on the
    // sending port: in a parallel run, the receiving part's.
    let toml = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/faults-tcp.toml")).unwrap();
    let want = serial(&toml);
    let corrupt = want["summary"]["packets"]["dropped_corrupt"].as_u64().unwrap();
    assert!(corrupt > 1000, "corrupted packets: {corrupt}");
    cut_gives(&want, &toml, &[2, 3, 4], "corrupting link");
}

#[test]
fn qjump_cut_into_parts_gives_the_serial_runs_results() {
    // The `qjump-websearch` golden (pFabric-144, a per-flow policer, TCP on 8 classes), and the same with
    // the testbed's per-host buckets shaping (packets held to the next epoch, the hosts' shaper events).
    let golden =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/qjump-websearch.toml")).unwrap();
    let shaped = golden
        .replace("per = \"flow\"", "per = \"host\"\nexcess = \"shape\"")
        .replace("anchor = \"aligned\"", "anchor = \"lazy\"")
        .replace("flows = 600", "flows = 300");
    for (name, toml) in [("policer", golden), ("shaper", shaped)] {
        let want = serial(&toml);
        let q = &want["summary"]["qjump"];
        let levels = q["levels"].as_array().unwrap();
        let count = |k: &str| levels.iter().map(|l| l[k].as_u64().unwrap()).sum::<u64>();
        let regulated = if name == "policer" { count("policed") } else { count("held") };
        assert!(regulated > 10, "{name}: {q}");
        cut_gives(&want, &toml, &[2, 3, 9], &format!("qjump {name}"));
    }
}

#[test]
fn switch_mechanisms_cut_into_parts_give_the_serial_runs_results() {
    // TCP's web-search flows and three 10-to-1 incasts (`tcp_fat_tree`) through each mechanism that splits
    // between parts. Its state is its switches' (per port, per switch), its timers act at one switch, and
    // the packets it makes cross links between parts as any packet does: PFC's frames (pauses climb from
    // the incast's ToR through aggregation and cores into other pods), FastLane's and bounce's notices,
    // LinkGuardian's frames with what each says (`Hooks::hand_out`).
    let lossless = "[host]\nnic_buffer = \"unlimited\"\n[pfc]\nresponse = \"1us\"\n";
    let cases = [
        ("pfc", "kind = \"tcp\"", format!("[switch]\nbuffer = \"30KB\"\n{lossless}"), &[2usize, 3, 4, 8][..]),
        (
            "cioq",
            "kind = \"tcp\"",
            format!("[switch]\narchitecture = \"cioq\"\nbuffer = \"30KB\"\ningress_buffer = \"200KB\"\n{lossless}"),
            &[2, 4],
        ),
        ("fastlane", "kind = \"tcp\"\nmin_rto = \"1ms\"", "[switch]\nbuffer = \"20KB\"\n[fastlane]\n".into(), &[2, 4]),
        ("bounce_drop", "kind = \"tcp\"", "[switch]\nbuffer = \"20KB\"\nbounce = true\n".into(), &[2, 4]),
        (
            "codel",
            "kind = \"tcp\"\necn = true",
            "[switch]\nbuffer = \"300KB\"\n[codel]\ntarget = \"5us\"\ninterval = \"50us\"\n".into(),
            &[2, 4],
        ),
        ("burstradar", "kind = \"tcp\"", "[burstradar]\nmonitor = 15\nthreshold = \"2us\"\n".into(), &[2, 4]),
        // Per-packet adaptive load balancing, each switch drawing from its own stream: least queued, and
        // DeTail's favoured ports over PFC.
        (
            "adaptive_lb",
            "kind = \"tcp\"\nfast_retransmit = false",
            "[switch]\nbuffer = \"30KB\"\n[routing]\nload_balance = \"adaptive\"\n".into(),
            &[2, 4],
        ),
        (
            "adaptive_lb",
            "kind = \"tcp\"\nfast_retransmit = false",
            format!("[switch]\nbuffer = \"30KB\"\n[routing]\nload_balance = \"detail\"\n{lossless}"),
            &[2, 3, 4, 8],
        ),
        (
            "linkguardian",
            "kind = \"tcp\"",
            "[[fault]]\nat = \"0us\"\nlink = [\"agg1\", \"core1\"]\ncorrupt = 0.01\n\
             [linkguardian]\nlinks = [[\"agg1\", \"core1\"], [\"core1\", \"agg1\"]]\nloss_rate = 0.01\nresume = \"40KB\"\nt_flight_resume = \"5us\"\n"
                .into(),
            &[2, 3, 4],
        ),
    ];
    for (name, transport, extra, cuts) in cases {
        let toml = tcp_fat_tree(300, transport, &extra);
        let want = serial(&toml);
        let s = &want["summary"];
        let m = &s["mechanisms"][name];
        let n = |k: &str| m[k].as_u64().unwrap_or_else(|| panic!("{name}: {k} in {m}"));
        match name {
            "pfc" => assert!(n("pause_frames") > 100 && s["packets"]["dropped"] == 0, "{name}: {m}"),
            "cioq" => assert!(n("transfers") > 10_000 && m["pfc"]["pause_frames"].as_u64().unwrap() > 10, "{m}"),
            "fastlane" | "bounce_drop" => assert!(n("notices") > 100, "{name}: {m}"),
            "codel" => assert!(n("marks") > 100, "{name}: {m}"),
            "burstradar" => assert!(n("marked") > 100 && m["ring"]["exported"].as_u64().unwrap() > 100, "{m}"),
            "adaptive_lb" => assert!(n("decisions") > 10_000, "{name}: {m}"),
            _ => {
                // Both directions of an aggregation–core link corrupt 1 %; LinkGuardian resends what was lost
                // (here the flows' ECMP hashes put traffic on the way down only), holds for order, gives up.
                let l = &m["links"][1];
                let n = |k: &str| l[k].as_u64().unwrap();
                assert!(n("recovered") > 100 && n("held") > 100 && n("gave_up") > 0, "{name}: {m}");
            }
        }
        cut_gives(&want, &toml, cuts, name);
    }
}

#[test]
fn packet_capture_cut_into_parts_gives_the_serial_runs_files() {
    // Every host's link captured, in full and with a budget that runs out mid-run: each part captures its
    // own ports; the merge keeps what the serial run kept (it stops at the instant the budget runs out).
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("tailsim-parallel-pcap-{}", std::process::id()));
    // A permutation sends a first packet from every host at t = 0: a budget of 5 runs out at that instant,
    // whose 16 packets the serial order alone could choose from (none is kept).
    let permutation = "[[workload]]\nkind = \"permutation\"\nsize = \"30KB\"\n";
    for budget in ["", "pcap_max_packets = 3000\n", &format!("pcap_max_packets = 5\n{permutation}")] {
        let toml = tcp_fat_tree(100, "kind = \"dctcp\"", &format!("[output]\npcap = [\"hosts\"]\n{budget}"));
        let files = |e: &Experiment, name: &str| -> Vec<(String, Vec<u8>)> {
            let d = dir.join(name);
            let _ = std::fs::remove_dir_all(&d);
            let mut out: Vec<_> = e
                .world
                .net
                .write_mechanism_files(&d)
                .unwrap()
                .into_iter()
                .map(|(f, _)| {
                    let bytes = std::fs::read(d.join(&f)).unwrap();
                    (f, bytes)
                })
                .collect();
            out.sort();
            out
        };
        let mut e = exp(&toml);
        let s = e.run(&mut |_| {}).unwrap_or_else(|err| panic!("{err}"));
        let want = (results(&e, &s), files(&e, "serial"));
        let pcap = &want.0["summary"]["mechanisms"]["pcap"];
        let missed = pcap["not_captured"].as_u64().unwrap();
        let captured = pcap["captured"].as_u64().unwrap();
        match budget.lines().next() {
            None => assert!(captured > 2000 && missed == 0, "{pcap}"),
            Some("pcap_max_packets = 5") => assert!(captured == 0 && missed > 16, "{pcap}"),
            _ => assert!(captured > 2000 && captured <= 3000 && missed > 0, "{pcap}"),
        }
        for n in [2, 3, 8] {
            let mut p = exp(&toml);
            let others = (1..n).map(|_| exp(&toml)).collect();
            let (s, _) = p.run_parallel(others, 1, &mut |_| true).unwrap_or_else(|err| panic!("{err}"));
            let got = (results(&p, &s), files(&p, &format!("parts{n}")));
            if let Some(d) = first_difference(&want.0, &got.0, "") {
                panic!("{budget:?}, {n} parts: {d}");
            }
            assert!(want.1 == got.1, "{budget:?}, {n} parts: the capture files differ");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sqr_cut_into_parts_gives_the_serial_runs_results() {
    // The `sqr-websearch` bench scenario (SB'+SQR with the Queue Ring on the thesis's two-pod testbed, web
    // search at 50 % over CUBIC, an aggregation-core link down 760 us every 20 ms), 45 ms: copies made,
    // cached and resent in each switch's part, the failures detected by the parts of the link's ends.
    let bench =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/bench/sqr-websearch.toml"))
            .unwrap();
    let toml = format!("{bench}\n[stop]\ntime = \"45ms\"\n");
    let want = serial(&toml);
    let m = &want["summary"]["mechanisms"]["sqr"];
    let n = |k: &str| m[k].as_u64().unwrap_or_else(|| panic!("{k} in {m}"));
    assert!(n("copies") > 1000 && n("resent") > 10 && n("failures_detected") >= 2, "{m}");
    cut_gives(&want, &toml, &[2, 3], "sqr");
}

#[test]
fn queue_samples_cut_into_parts_give_the_serial_runs_samples() {
    // The serial run samples every port each `queue_sample` and stops after the first tick that finds
    // nothing else pending; each part samples its own ports, and the merge keeps the serial run's ticks
    // (sim/parallel.rs, `settle_samples`): runs that end at the time limit, that finish, and that finish with
    // their next tick past the limit (so the serial run stops at the limit).
    let raw = format!("{}[output]\nqueue_sample = \"7us\"\n", raw_fat_tree(4, 5, 300));
    // Sampled more often than the lookahead (1 us): a window holds ticks after the last event, so taking
    // the parts' last ticks for the serial run's is caught.
    let tcp = tcp_fat_tree(
        1,
        "kind = \"dctcp\"",
        "[switch]\necn_threshold = \"30KB\"\n[output]\nqueue_sample = \"700ns\"\nwarmup = \"50us\"\n",
    );
    let want = serial(&tcp);
    let s = &want["summary"];
    assert_eq!(s["stop_reason"], "finished", "{s}");
    // The last event is the last tick, and it found nothing else pending: a limit just before it makes the
    // serial run stop there, at the time limit, one tick short.
    let end = want["now"].as_u64().unwrap();
    assert_eq!(end % 700_000, 0, "the run ends at a tick");
    let cut_short = format!("{tcp}[stop]\ntime = \"{}ps\"\n", end - 1);
    for (name, toml) in [("time limit", raw), ("finished", tcp), ("next tick past the limit", cut_short)] {
        let want = serial(&toml);
        let samples = want["samples"].as_array().unwrap();
        let ports = want["ports"].as_array().unwrap().len();
        assert!(samples.len() > 30 * ports && samples.len().is_multiple_of(ports), "{name}: {} samples", samples.len());
        let reason = &want["summary"]["stop_reason"];
        assert_eq!(reason, if name == "finished" { "finished" } else { "time-limit" }, "{name}");
        cut_gives(&want, &toml, &[2, 3, 4, 8], &format!("queue samples, {name}"));
    }
}

#[test]
fn a_lookahead_longer_than_a_cut_link_is_caught() {
    let toml = raw_fat_tree(4, 5, 100);
    let mut e = exp(&toml);
    let mut cut = tailsim::net::partition::Partition::new(&e.world.net, 2).unwrap();
    let right = cut.lookahead().unwrap();
    let others = vec![exp(&toml).world];
    cut.assume_lookahead(tailsim::units::Time(right.0 * 2));
    let err = e.world.run_parallel(others, &cut, e.stop, 2, &mut |_| true).unwrap_err();
    assert!(err.starts_with("causality: a packet over port"), "{err}");
    // A message between hosts (TCP's close) due inside the window it was sent in is caught as well: here
    // in the serial run that hands packets and messages over as the parts would, with a lookahead beyond
    // every path's propagation delay (6 µs between pods).
    let tcp = tcp_fat_tree(100, "kind = \"tcp\"", "");
    let mut e = exp(&tcp);
    let cut = tailsim::net::partition::Partition::keeping_hosts(&e.world.net, 2).unwrap();
    let err = e.world.run_handing_over(e.stop, &cut, tailsim::units::Time::us(20)).unwrap_err();
    assert!(err.starts_with("causality: a message between hosts of two parts"), "{err}");
    // The right lookahead runs.
    let mut e = exp(&toml);
    let cut = tailsim::net::partition::Partition::new(&e.world.net, 2).unwrap();
    e.world.run_parallel(vec![exp(&toml).world], &cut, e.stop, 2, &mut |_| true).unwrap();
}

#[test]
fn what_parts_cannot_do_yet_is_refused_before_anything_runs() {
    let base = raw_fat_tree(4, 5, 50);
    let mut e = exp(&base);
    e.stop.max_events = Some(1000);
    let err = e.run_parallel(vec![exp(&base)], 2, &mut |_| true).unwrap_err();
    assert!(err.contains("event budget"), "{err}");
}

#[test]
fn an_interrupted_parallel_run_stops_at_a_meeting_with_its_packets_accounted() {
    let toml = raw_fat_tree(4, 5, 4000);
    let mut e = exp(&toml);
    let mut calls = 0;
    let (s, _) = e
        .run_parallel(vec![exp(&toml)], 2, &mut |_| {
            calls += 1;
            calls < 2
        })
        .unwrap();
    assert_eq!(s.stop_reason, tailsim::sim::StopReason::Interrupted);
    assert!(s.simulated_seconds < 4000e-6, "stopped early: {} s", s.simulated_seconds);
    assert_eq!(calls, 2, "progress is called about every 2^16 of the first part's events");
    assert!(s.packets.in_flight > 0);
}

/// A parallel run's progress counts every part's finished flows (each part finishes those of its own
/// receivers), and the flows started and not finished as active: late in the run it reports more flows
/// finished than the first part's receivers have (seen to fail with the first part's own count).
#[test]
fn a_parallel_runs_progress_counts_every_parts_finished_flows() {
    let toml = tcp_fat_tree(300, "kind = \"tcp\"", "");
    let mut e = exp(&toml);
    let cut = e.parallel_cut(4).unwrap();
    let others = (1..4).map(|_| exp(&toml)).collect();
    let mut seen = (0, 0);
    let (s, _) = e
        .run_parallel(others, 1, &mut |p| {
            assert_eq!(p.active_flows as u64, p.flows_started - p.flows_finished, "{}", p.flows_finished);
            seen = (seen.0 + 1, seen.1.max(p.flows_finished));
            true
        })
        .unwrap();
    let total = s.flows_finished;
    let first: u64 = (0..e.world.records.len()).filter(|&i| cut.of(e.world.records.nth(i).dst) == 0).count() as u64;
    assert!(seen.0 > 5 && total > 300 && first < total / 2, "{seen:?} calls, {total} flows, {first} to part 0");
    assert!(seen.1 > first && seen.1 <= total, "at most {} seen finished, {first} in part 0, {total} in all", seen.1);
}

#[test]
fn a_shift_makes_the_sources_written_out_host_by_host() {
    let long = raw_fat_tree(4, 5, 100);
    let mut short = long[..long.find("[[workload]]").unwrap()].to_string();
    short += "[[workload]]\nkind = \"cbr\"\nshift = 5\nline_rate = \"10Gbps\"\n\
              packet_sizes = [[64, 0.2], [576, 0.5], [1500, 1.0]]\n\
              on = [[1, 0.0], [5, 0.5], [20, 1.0]]\noff = [[2, 0.0], [10, 0.5], [40, 1.0]]\nuntil = \"100us\"\n";
    for (src, dst) in [(3, 0), (9, 0), (15, 0)] {
        short += &format!(
            "[[workload]]\nkind = \"cbr\"\nsrc = {src}\ndst = {dst}\nline_rate = \"10Gbps\"\n\
             packet_sizes = [[64, 0.2], [576, 0.5], [1500, 1.0]]\n\
             on = [[1, 0.0], [5, 0.5], [20, 1.0]]\noff = [[2, 0.0], [10, 0.5], [40, 1.0]]\nuntil = \"100us\"\n"
        );
    }
    let (mut a, mut b) = (serial(&long), serial(&short));
    // The configurations differ (the summary carries them); nothing else may.
    a["summary"].as_object_mut().unwrap().remove("config");
    b["summary"].as_object_mut().unwrap().remove("config");
    a["summary"].as_object_mut().unwrap().remove("run_id");
    b["summary"].as_object_mut().unwrap().remove("run_id");
    assert!(a["summary"]["packet_hops"].as_u64().unwrap() > 1000);
    if let Some(d) = first_difference(&a, &b, "") {
        panic!("{d}");
    }
    let err = common::config_error(&short.replacen("shift = 5\n", "shift = 5\nsrc = 1\n", 1));
    assert!(err.contains("workload[0].shift") && err.contains("give `shift` (every host a source) or `src`"), "{err}");
    let err = common::config_error(&short.replacen("shift = 5\n", "shift = 32\n", 1));
    assert!(err.contains("a shift of 32 sends every host to itself (the topology has 16 hosts)"), "{err}");
}
