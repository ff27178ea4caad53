//! DeTail's fabrics (presets detail-128, detail-16) and timing: closed forms to the picosecond.

mod common;
use common::*;
use tailsim::units::Time;

fn lone(preset: &str, src: u32, dst: u32, size: u64) -> tailsim::Experiment {
    let rows = format!("{src},{dst},{size},0\n");
    let (e, s) = run(&format!(
        "[topology]\npreset = \"{preset}\"\n[transport]\nkind = \"tcp\"\ninit_cwnd = 10\n{}",
        trace_workload(&format!("detail-{preset}-{src}-{dst}.csv"), &rows)
    ));
    assert_eq!(s.flows_finished, 1);
    e
}

#[test]
fn detail_128_has_the_thesis_shape() {
    let e = lone("detail-128", 0, 1, 1460);
    let net = &e.world.net;
    assert_eq!(net.n_hosts(), 128);
    let count = |p: &str| net.switches.iter().filter(|s| s.name.starts_with(p)).count();
    assert_eq!((count("edge"), count("agg"), count("core")), (16, 16, 8));
    // 2:1 at the ToRs (8 hosts, 4 uplinks) and at the aggregation switches (4 ToRs, 2 cores).
    let ports_to = |s: &str, p: &str| {
        let sw = net.switches.iter().find(|x| x.name == s).unwrap();
        sw.ports
            .iter()
            .filter(|q| !net.is_host(net.ports[q.idx()].peer))
            .filter(|q| {
                let peer = net.ports[q.idx()].peer.idx() - net.n_hosts();
                net.switches[peer].name.starts_with(p)
            })
            .count()
    };
    assert_eq!((ports_to("edge0", "agg"), ports_to("agg0", "edge"), ports_to("agg0", "core")), (4, 4, 2));
    assert!(net.ports.iter().all(|p| p.rate.0 == 1_000_000_000));
}

#[test]
fn a_lone_full_frame_takes_25_us_per_switch_hop() {
    // 1530 B at 1 Gbps = 12.24 us, + 5.476 us of link, + 4.224 us of forwarding and 3.06 us of crossbar (1530 B
    // at 4 Gbps) in the CIOQ switch = 25.000 us per switch hop.
    // Under one ToR: 2 links + 1 switch = 42.716 us; across pods: 6 links + 5 switches = 142.716 us.
    let same_tor = lone("detail-128", 0, 1, 1460).world.records.nth(0).fct().unwrap();
    assert_eq!(same_tor, Time::ps(42_716_000));
    let e = lone("detail-128", 0, 127, 1460);
    let cross_pod = e.world.records.nth(0).fct().unwrap();
    assert_eq!(cross_pod, Time::ps(142_716_000));
    assert_eq!(e.world.records.nth(0).ideal, cross_pod);
    assert_eq!(cross_pod - same_tor, Time::us(100)); // four more switch hops
}

#[test]
fn detail_16_has_slower_upper_tiers() {
    let e = lone("detail-16", 0, 15, 1460);
    let net = &e.world.net;
    assert_eq!(net.n_hosts(), 16);
    let mut rates: Vec<u64> = net.ports.iter().map(|p| p.rate.0).collect();
    rates.sort();
    rates.dedup();
    assert_eq!(rates, vec![250_000_000, 500_000_000, 1_000_000_000]);
    // host 0 -> host 15 crosses the core: 1 G, 0.5 G, 0.25 G, 0.25 G, 0.5 G, 1 G, store and forward. Each of
    // the 5 CIOQ switches forwards in 4.224 us, then its crossbar moves the frame at 4 × the egress rate.
    let ser = |gbps_x4: u64| 1530 * 8 * 4_000 / gbps_x4; // ps, rate in quarter-Gbps units
    let links = 2 * (ser(4) + ser(2) + ser(1)) + 6 * 5_476_000;
    let crossbars = (ser(2) + ser(1) + ser(1) + ser(2) + ser(4)) / 4;
    let fct = e.world.records.nth(0).fct().unwrap();
    assert_eq!(fct, Time::ps(links + 5 * 4_224_000 + crossbars));
    assert_eq!(e.world.records.nth(0).ideal, fct, "the ideal FCT counts the crossbars too");
}

#[test]
fn fat_tree_shape_keys_are_checked() {
    let ft = "[topology]\nkind = \"fat-tree\"\n";
    let e = config_error(&format!(
        "{ft}k = 4\npods = 4\nrate = \"1Gbps\"\n[[workload]]\nkind = \"incast\"\nsenders = 2\nsize = 10\n"
    ));
    assert!(e.contains("either `k` or the shape"), "{e}");
    let e = config_error(&format!(
        "{ft}pods = 2\ntors_per_pod = 2\nhosts_per_tor = 2\naggs_per_pod = 2\ncores = 3\nrate = \"1Gbps\"\n[[workload]]\nkind = \"incast\"\nsenders = 2\nsize = 10\n"
    ));
    assert!(e.contains("cannot be split evenly"), "{e}");
    let e = config_error(&format!(
        "{ft}pods = 2\ntors_per_pod = 2\nhosts_per_tor = 2\naggs_per_pod = 2\ncores = 2\nedge_rate = \"1Gbps\"\n[[workload]]\nkind = \"incast\"\nsenders = 2\nsize = 10\n"
    ));
    assert!(e.contains("topology.agg_rate") && e.contains("missing"), "{e}");
    let e = config_error(&format!(
        "{ft}pods = 2\nrate = \"1Gbps\"\n[[workload]]\nkind = \"incast\"\nsenders = 2\nsize = 10\n"
    ));
    assert!(e.contains("topology.tors_per_pod"), "{e}");
}

#[test]
fn a_removed_link_is_gone_and_routes_avoid_it() {
    // §5.4.4: one aggregation–core link removed. agg0's routes to other pods then use its other core link.
    let cfg = |extra: &str| {
        format!(
            "[topology]\npreset = \"detail-128\"\n{extra}\n[transport]\nkind = \"tcp\"\ninit_cwnd = 10\n{}",
            trace_workload("detail-removed.csv", "0,127,1460,0\n")
        )
    };
    let (e, s) = run(&cfg("remove_links = [[\"agg0\", \"core0\"]]"));
    assert_eq!(s.flows_finished, 1);
    let net = &e.world.net;
    let id = |name: &str| net.switches.iter().position(|s| s.name == name).unwrap() + net.n_hosts();
    let (agg0, core0) = (id("agg0"), id("core0"));
    assert!(!net.ports.iter().any(|p| p.node.idx() == agg0 && p.peer.idx() == core0));
    let to_far = net.routes.candidates(agg0 - net.n_hosts(), tailsim::units::NodeId(127));
    assert_eq!(to_far.len(), 1, "one core link left at agg0");
    assert_eq!(net.ports.len() + 2, exp(&cfg("")).world.net.ports.len());
    // A missing link and a cut-off host are refused, naming the entry.
    let err = config_error(&cfg("remove_links = [[\"agg0\", \"core7\"]]"));
    assert!(err.contains("topology.remove_links[0]") && err.contains("no link between"), "{err}");
    let err = config_error(&cfg("remove_links = [[\"agg0\", \"nope\"]]"));
    assert!(err.contains("\"nope\" is not a host number or switch name"), "{err}");
    let err = config_error(&cfg("remove_links = [[\"h5\", \"edge0\"]]"));
    assert!(err.contains("cuts host 5 off"), "{err}");
}

#[test]
fn fastlane_presets_are_the_detail_fabrics_at_their_speeds() {
    // fastlane-128: detail-128's shape at 10 Gbps, output-queued, 128 KiB; fastlane-16: k = 4 at 1 Gbps, 64 KiB.
    let e = lone("fastlane-128", 0, 127, 1460);
    let net = &e.world.net;
    assert_eq!((net.n_hosts(), net.switches.len()), (128, 40));
    assert!(net.ports.iter().all(|p| p.rate.0 == 10_000_000_000));
    assert!(net.switches.iter().all(|s| s.crossbar.is_none()));
    // 1530 B at 10 Gbps = 1.224 us per link, 6 links of 5.476 us, 5 switches of 4.224 us, and the receiving
    // server's 5 us of processing (one packet: no wait for one of its 16 servers).
    let hops = 6 * 1_224_000 + 6 * 5_476_000 + 5 * 4_224_000;
    assert_eq!(e.world.records.nth(0).fct().unwrap(), Time::ps(hops + 5_000_000));
    assert_eq!(e.world.net.hosts[127].rx_servers.len(), 16);
    let e = lone("fastlane-16", 0, 15, 1460);
    assert_eq!(e.world.net.n_hosts(), 16);
    assert!(e.world.net.ports.iter().all(|p| p.rate.0 == 1_000_000_000));
    assert_eq!(e.world.net.switches[0].buffer, tailsim::net::BufferPolicy::PerPort(65_536));
}
