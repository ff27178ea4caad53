//! FastLane end to end (net/mech/fastlane.rs, transport/tcp/fastlane.rs): notices for every drop, their caps
//! over a whole run, the senders' reaction against plain TCP and pFabric; CoDel marking; hosts' parallel
//! receive processing; the configuration's checks. Algorithm 1 on hand-built sequences and the notification
//! queue's timing to the picosecond are unit tests beside the code.

mod common;
use common::*;
use tailsim::net::mech::Mech;
use tailsim::transport::Transport;

/// 15 senders send 64 KB each to host 0 of `fastlane-16` (1 Gbps, 64 KiB per port): 960 KB into one port.
fn incast(extra: &str) -> (tailsim::Experiment, tailsim::Summary) {
    let rows: String = (1..16).map(|s| format!("{s},0,64000,0\n")).collect();
    let cfg = format!(
        "[topology]\npreset = \"fastlane-16\"\n[transport]\nkind = \"tcp\"\nmin_rto = \"10ms\"\n{extra}\n{}",
        trace_workload("fl-incast.csv", &rows)
    );
    run(&cfg)
}

fn fastlane(e: &tailsim::Experiment) -> &tailsim::net::mech::fastlane::FastLane {
    e.world.net.mechs.iter().find_map(|m| if let Mech::FastLane(f) = m { Some(f) } else { None }).unwrap()
}

#[test]
fn every_drop_becomes_a_notice_that_reaches_its_sender_and_recovery_beats_the_timeout() {
    let (e, s) = incast("[fastlane]");
    let (tcp_e, tcp) = incast("");
    let st = fastlane(&e).stats();
    let overflow = s.packets.drops[DropReason::Overflow];
    assert!(overflow > 50, "{:?}", s.packets);
    // One notice per dropped packet (all drops are overflows at switch ports); none dropped at these caps.
    assert_eq!(st.notices, overflow);
    assert_eq!(st.notices, s.packets.made_by_switches);
    assert_eq!(st.notices_dropped, 0);
    assert!(st.max_queue_bytes <= 3276, "{st:?}");
    let Transport::Tcp(t) = &e.world.transport else { panic!() };
    assert_eq!(t.stats.notices + t.stats.stale_notices, st.notices);
    assert_eq!(s.host_sinks.unwrap().notices, st.notices);
    assert!(t.stats.fl_recoveries > 0 && t.stats.fl_retransmits > 0);
    // Recovery by notice, not by the 10 ms timeout: plain TCP times out, FastLane does not.
    let timeouts = |e: &tailsim::Experiment| e.world.records.all().iter().map(|r| r.timeouts as u64).sum::<u64>();
    assert_eq!(timeouts(&e), 0);
    assert!(timeouts(&tcp_e) > 0);
    let last = |e: &tailsim::Experiment| e.world.records.all().iter().filter_map(|r| r.fct()).max().unwrap();
    assert!(last(&e).0 * 3 < last(&tcp_e).0 * 2, "{} vs {}", last(&e), last(&tcp_e));
    assert_eq!(s.flows_finished, 15);
    assert_eq!(tcp.flows_finished, 15);
}

#[test]
fn strict_caps_bound_every_ports_notice_bytes_by_rate_times_time_plus_one_notice() {
    // A tight cap (0.1 % of 1 Gbps, 2 notices deep) over the first 2 ms of the incast, so that it binds:
    // notices wait and some are dropped.
    let stop = "[stop]\ntime = \"2ms\"\n";
    let (e, s) = incast(&format!("{stop}[fastlane]\nbandwidth = 0.001\nbuffer = \"128B\"\nstrict = true"));
    let (spare, _) = incast(&format!("{stop}[fastlane]\nbandwidth = 0.001\nbuffer = \"128B\""));
    let t = s.simulated_seconds;
    let fl = fastlane(&e);
    let st = fl.stats();
    assert!(st.notices_dropped > 0 && st.max_queue_bytes == 128, "{st:?}");
    assert_eq!(st.sent_spare, 0);
    let net = &e.world.net;
    let budget = |p: tailsim::units::PortId| {
        let pt = &net.ports[p.idx()];
        pt.rate.0 as f64 * 0.001 * t / 8.0 + (64 + pt.wire_overhead) as f64
    };
    let mut binding = 0;
    for p in net.switch_ports() {
        let sent = fl.sent_bytes(p) as f64;
        assert!(sent <= budget(p), "port {p:?} sent {sent} B of notices, budget {}", budget(p));
        binding += (sent > 0.5 * budget(p)) as u32;
    }
    assert!(binding > 0, "the cap never bound");
    // Work-conserving, the same caps let notices use idle links: some port goes past the token budget.
    let fl2 = fastlane(&spare);
    assert!(fl2.stats().sent_spare > 0);
    assert!(spare.world.net.switch_ports().any(|p| fl2.sent_bytes(p) as f64 > budget(p)));
}

#[test]
fn fastlane_runs_are_deterministic() {
    let (a, sa) = incast("[fastlane]\n[routing]\nload_balance = \"spray\"");
    let (b, sb) = incast("[fastlane]\n[routing]\nload_balance = \"spray\"");
    assert_eq!((sa.events, sa.packet_hops), (sb.events, sb.packet_hops));
    let ends = |e: &tailsim::Experiment| e.world.records.all().iter().map(|r| r.end).collect::<Vec<_>>();
    assert_eq!(ends(&a), ends(&b));
    assert_eq!(format!("{:?}", fastlane(&a).stats()), format!("{:?}", fastlane(&b).stats()));
}

#[test]
fn pfabric_with_fastlane_probes_before_resending() {
    let pf = "[switch]\nbuffer = \"20KB\"\nqueue = \"pfabric\"\n[routing]\nload_balance = \"spray\"\n";
    let rows: String = (1..16).map(|s| format!("{s},0,64000,0\n")).collect();
    let cfg = |fl: &str| {
        format!(
            "[topology]\npreset = \"fastlane-16\"\n{pf}[transport]\nkind = \"pfabric\"\nrto = \"1ms\"\n{fl}\n{}",
            trace_workload("fl-pf.csv", &rows)
        )
    };
    let (e, s) = run(&cfg("[fastlane]"));
    let Transport::Tcp(t) = &e.world.transport else { panic!() };
    assert_eq!(s.flows_finished, 15);
    // One probe per recovery (plus any probe resent after its own notice), and resends only after it.
    assert!(t.stats.fl_recoveries > 0, "{:?}", t.stats);
    assert!(t.stats.fl_probes >= t.stats.fl_recoveries, "{:?}", t.stats);
    assert!(t.stats.fl_retransmits > 0);
    let (_, plain) = run(&cfg(""));
    assert!(plain.transport.is_none() || plain.transport.as_ref().unwrap()["fl_probes"] == 0);
}

#[test]
fn codel_marks_only_a_queue_that_stands_above_target_for_an_interval() {
    // Three 3 MB flows into one 10G port through 300 KB buffers: NewReno with ECN under CoDel.
    let rows: String = (4..7).map(|s| format!("{s},0,3000000,0\n")).collect();
    let cfg = |codel: &str| {
        two_leaves(
            1,
            &format!("ecn = true\n[switch]\nbuffer = \"300KB\"\n{codel}\n{}", trace_workload("codel.csv", &rows)),
        )
    };
    let (e, s) = run(&cfg("[codel]\ntarget = \"5us\"\ninterval = \"50us\""));
    let marks = s.mechanisms["codel"]["marks"].as_u64().unwrap();
    assert!(marks > 0 && s.mechanisms["codel"]["episodes"].as_u64().unwrap() > 0);
    let Transport::Tcp(t) = &e.world.transport else { panic!() };
    assert!(t.stats.ecn_cuts > 0 && t.stats.ecn_cuts <= marks);
    // A target above any sojourn this fabric can produce (300 KB at 10 Gbps is 240 us): no marks.
    let (_, calm) = run(&cfg("[codel]\ntarget = \"1ms\"\ninterval = \"50us\""));
    assert_eq!(calm.mechanisms["codel"]["marks"].as_u64().unwrap(), 0);
}

#[test]
fn a_receive_path_of_one_server_processes_a_train_one_packet_at_a_time() {
    // Ten full packets h0 -> h1 under one leaf at 10 Gbps, 1 us links: the last bit of packet i reaches h1 at
    // 2.2 us + 1.2 us × (i + 1) - ... ; processing 5 us each, one at a time: the 10th is handed over at
    // first arrival (4.4 us) + 10 × 5 us. With 16 servers, each is done 5 us after it arrives.
    let fabric = "[topology]\nkind = \"leaf-spine\"\nleaves = 1\nspines = 1\nhosts_per_leaf = 4\n\
                  edge_rate = \"10Gbps\"\ncore_rate = \"40Gbps\"\nedge_delay = \"1us\"\n";
    let fct = |par: u32| {
        let w = trace_workload("rx-par.csv", "0,1,14600,0\n");
        let cfg = format!(
            "{fabric}[host]\nrx_delay = \"5us\"\nrx_parallel = {par}\n[transport]\nkind = \"tcp\"\ninit_cwnd = 100\n{w}"
        );
        let (e, _) = run(&cfg);
        e.world.records.nth(0).fct().unwrap().0
    };
    assert_eq!(fct(1), 4_400_000 + 10 * 5_000_000);
    // Last packet's last bit at 4.4 + 9 × 1.2 = 15.2 us, then 5 us.
    assert_eq!(fct(16), 15_200_000 + 5_000_000);
}

#[test]
fn fastlane_keys_are_checked() {
    let with = |t: &str| with_incast("fastlane-16", t);
    for (toml, key, says) in [
        ("[fastlane]\nbandwidth = 0", "fastlane.bandwidth", "(0, 1]"),
        ("[fastlane]\nbandwidth = 1.5", "fastlane.bandwidth", "(0, 1]"),
        ("[fastlane]\nbandwidth = 0.5\ncap_scale = 4", "fastlane.cap_scale", "(0, 1]"),
        ("[fastlane]\nbuffer = \"63B\"", "fastlane.buffer", "64 B"),
        ("[fastlane]\ncap_scale = 0.01", "fastlane.cap_scale", "64 B"),
        ("[fastlane]\n[pfc]", "fastlane", "PFC"),
        ("[fastlane]\n[transport]\nkind = \"dctcp\"", "fastlane", "\"dctcp\""),
        ("[fastlane]\n[transport]\nkind = \"homa\"", "fastlane", "\"homa\""),
        ("[fastlane]\n[switch]\nbounce = true", "switch.bounce", "not both"),
        ("[codel]", "codel", "transport.ecn"),
        ("[codel]\ntarget = \"0us\"\n[transport]\necn = true", "codel.target", "positive"),
        ("[host]\nrx_parallel = 4", "host.rx_parallel", "rx_delay"),
        ("[host]\nrx_delay = \"1us\"\nrx_parallel = 0", "host.rx_parallel", "at least 1"),
    ] {
        let e = config_error(&with(toml));
        assert!(e.contains(key) && e.contains(says), "{toml}: {e}");
    }
    let e = config_error(&with_incast("detail-16", "[fastlane]"));
    assert!(e.contains("output-queued"), "{e}");
}

#[test]
fn partition_aggregate_by_totals_fans_out_total_over_size() {
    let cfg =
        "[topology]\npreset = \"fastlane-16\"\n[[workload]]\nkind = \"workflow\"\nshape = \"partition-aggregate\"\n\
               sizes = [\"2KB\", \"4KB\"]\ntotals = [\"8KB\", \"12KB\"]\nrate = 1000.0\ncount = 200\n";
    let (e, s) = run(cfg);
    assert_eq!(s.flows_finished as usize, e.world.records.len());
    // Every workflow's responses share one size s and number total / s: 2, 3, 4 or 6.
    let mut by_job: std::collections::BTreeMap<u32, Vec<u64>> = Default::default();
    for r in &e.world.jobs.retrievals {
        by_job.entry(r.workflow).or_default().push(r.size);
    }
    assert_eq!(by_job.len(), 200);
    let mut fans = std::collections::BTreeSet::new();
    for sizes in by_job.values() {
        assert!(sizes.iter().all(|&s| s == sizes[0]));
        assert!([8000, 12000].contains(&(sizes[0] * sizes.len() as u64)), "{sizes:?}");
        fans.insert(sizes.len());
    }
    assert_eq!(fans.into_iter().collect::<Vec<_>>(), vec![2, 3, 4, 6]);
    let e = config_error(&format!("{cfg}fanout = [2]\n"));
    assert!(e.contains("totals") && e.contains("not both"), "{e}");
    let e = config_error(&cfg.replace("\"12KB\"]", "\"40KB\"]"));
    assert!(e.contains("fan-out of 20"), "{e}");
}
