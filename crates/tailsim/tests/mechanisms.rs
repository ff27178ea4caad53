//! Mechanisms built only on the datapath's hooks (net/mech/), and routes that re-converge after a failure:
//! adaptive load balancing, bounce drops, rerouting, and determinism with all of them on.

mod common;
use common::*;
use tailsim::net::mech::Mech;
use tailsim::transport::Transport;

/// Bytes sent by leaf0's uplinks (leaf0 is node 8; spines are 10, 11, …).
fn uplink_bytes(e: &tailsim::Experiment) -> Vec<u64> {
    e.world.net.ports.iter().filter(|p| p.node.0 == 8 && p.peer.0 >= 10).map(|p| p.stats.tx_bytes).collect()
}

#[test]
fn adaptive_load_balancing_spreads_packets_over_the_least_queued_uplinks() {
    // Three 2 MB flows from leaf0 to leaf1 over 2 spines. Per-flow hashing puts at least two on one uplink;
    // per-packet least-queued choice keeps both uplinks equally busy.
    let rows = "0,4,2000000,0\n1,5,2000000,0\n2,6,2000000,0\n";
    let (ecmp, _) = run(&format!("{}{}", two_leaves(2, ""), trace_workload("alb.csv", rows)));
    // Per-packet choice reorders packets: the receiver must tolerate it (DeTail's TCP without fast retransmit).
    let alb_cfg =
        two_leaves(2, "[routing]\nload_balance = \"adaptive\"").replace("min_rto", "fast_retransmit = false\nmin_rto");
    let (alb, s) = run(&format!("{alb_cfg}{}", trace_workload("alb.csv", rows)));
    let (e, a) = (uplink_bytes(&ecmp), uplink_bytes(&alb));
    let spread = |v: &[u64]| *v.iter().max().unwrap() as f64 / *v.iter().min().unwrap().max(&1) as f64;
    assert!(spread(&e) > 1.9, "three flows hashed onto two uplinks: {e:?}");
    assert!(spread(&a) < 1.05, "adaptive uplink bytes {a:?}");
    let mech = &s.mechanisms["adaptive_lb"];
    assert!(mech["decisions"].as_u64().unwrap() > 4000, "{mech}");
    // Balanced uplinks finish the slowest flow sooner: ideally 3 × 2 MB over 20 Gbps (2.4 ms) instead of
    // 2 × 2 MB over one 10 Gbps uplink (3.2 ms).
    let last = |x: &tailsim::Experiment| x.world.records.all().iter().map(|r| r.fct().unwrap()).max().unwrap();
    assert!(last(&alb).0 < last(&ecmp).0 * 9 / 10, "{} vs {}", last(&alb), last(&ecmp));
}

#[test]
fn adaptive_load_balancing_never_prefers_a_down_link() {
    // leaf0's uplink to spine0 is down from the start, so its queue stays empty (it would drop what it
    // sends): the mechanism must never choose it, while per-flow hashing may. (Routes re-converge after 1 ms:
    // until then ACKs that leaf1 sends through spine0 die at spine0's dead port to leaf0, a remote failure no
    // local choice can see.)
    let fault = "[[fault]]\nat = \"0us\"\nlink = [\"leaf0\", \"spine0\"]\nstate = \"down\"\n[stop]\ntime = \"20ms\"\n";
    let rows = "0,4,1000000,0\n1,5,1000000,0\n2,6,1000000,0\n";
    let dead = |e: &tailsim::Experiment| {
        e.world.net.ports.iter().find(|p| p.node.0 == 8 && p.peer.0 == 10).unwrap().stats.tx_packets
    };
    let (e, s) = run(&format!(
        "{}{}{fault}",
        two_leaves(2, "[routing]\nload_balance = \"adaptive\"\nreroute = \"1ms\""),
        trace_workload("alb-down.csv", rows)
    ));
    assert_eq!(dead(&e), 0, "adaptive load balancing sent on a down link");
    assert_eq!(s.flows_finished, 3, "{:?}", s.packets);
    let (e, _) = run(&format!("{}{}{fault}", two_leaves(2, ""), trace_workload("alb-down.csv", rows)));
    assert!(dead(&e) > 0, "the hash was expected to put a flow on the down link");
}

fn bounce_incast(extra: &str) -> (tailsim::Experiment, tailsim::Summary) {
    // An incast of 6 senders into host 0 through 30 KB switch buffers: the leaf's port to host 0 overflows.
    let rows: String = (1..7).map(|s| format!("{s},0,300000,0\n")).collect();
    run(&format!("{}[switch]\nbuffer = \"30KB\"\n{extra}\n{}", two_leaves(1, ""), trace_workload("bounce.csv", &rows)))
}

#[test]
fn bounce_drops_turn_every_dropped_data_packet_into_a_notice_the_tcp_sender_logs() {
    let (e, s) = bounce_incast("bounce = true");
    let overflow = s.packets.drops[DropReason::Overflow];
    assert!(overflow > 20, "{:?}", s.packets);
    let Transport::Tcp(tcp) = &e.world.transport else { panic!() };
    let made = s.packets.made_by_switches;
    let mech = &s.mechanisms["bounce_drop"];
    // One notice per dropped data packet (all drops are at switch ports here; ACKs are never dropped by this
    // incast's reverse path).
    assert_eq!(mech["notices"].as_u64().unwrap(), made);
    assert!(made > 20 && made <= overflow, "{made} notices for {overflow} drops");
    // Every notice reached its sender (notices are small and go back up an idle path) and was logged.
    assert_eq!(tcp.stats.notices + tcp.stats.stale_notices, made);
    assert_eq!(s.host_sinks.unwrap().notices, made);
    assert_eq!(s.packets.sunk, made);
    assert_eq!(s.transport.as_ref().unwrap()["notices"].as_u64().unwrap(), tcp.stats.notices);
    // Notices leave through the port the dropped packet came in by: leaf0's ports towards the senders
    // (hosts 1-3) and towards the spine (senders 4-6), never the congested one towards host 0.
    let (without, s0) = bounce_incast("");
    assert_eq!(s0.packets.made_by_switches, 0);
    assert!(s0.mechanisms.is_empty() && s0.host_sinks.is_none());
    let Transport::Tcp(t0) = &without.world.transport else { panic!() };
    assert_eq!(t0.stats.notices, 0);
    assert!(e.world.net.mechs.iter().any(|m| matches!(m, Mech::BounceDrop(_))));
}

/// A 2 MB flow from h0 to h4 over 2 spines, whose spine link fails at 150 us; `extra` sets re-routing.
fn failing_path(extra: &str) -> (tailsim::Experiment, tailsim::Summary) {
    let rows = "0,4,2000000,0\n";
    // Which spine does the flow's hash pick? Find out on a healthy run, then fail that link.
    let (healthy, _) = run(&format!("{}{}", two_leaves(2, ""), trace_workload("reroute.csv", rows)));
    let used = healthy
        .world
        .net
        .ports
        .iter()
        .find(|p| p.node.0 == 8 && p.peer.0 >= 10 && p.stats.tx_bytes > 1_000_000)
        .unwrap();
    let spine = format!("spine{}", used.peer.0 - 10);
    let fault = format!(
        "[[fault]]\nat = \"150us\"\nlink = [\"leaf0\", \"{spine}\"]\nstate = \"down\"\n[stop]\ntime = \"20ms\"\n"
    );
    run(&format!("{}{}{fault}", two_leaves(2, extra), trace_workload("reroute.csv", rows)))
}

#[test]
fn a_flow_over_a_failed_link_finishes_after_rerouting_and_not_without() {
    let (e, s) = failing_path("[routing]\nreroute = \"50us\"");
    assert_eq!(s.flows_finished, 1, "{:?}", s.packets);
    let fct = e.world.records.nth(0).fct().unwrap();
    assert!(fct.0 > 200_000_000, "finished at {fct}, before the failure was detected");
    assert!(s.packets.drops[DropReason::LinkDown] > 0);
    let (e, s) = failing_path("");
    assert_eq!(s.flows_finished, 0, "without re-routing the flow's hash keeps it on the dead link");
    assert!(e.world.records.nth(0).end.is_none() && s.packets.drops[DropReason::LinkDown] > 5, "{:?}", s.packets);
}

#[test]
fn a_host_cut_off_by_a_failure_gets_no_route_not_a_panic() {
    // h4's only link goes down and routes re-converge: switches have no route to it, so its packets are
    // dropped as no-route where they find none; the run ends at its time limit with every packet accounted.
    let rows = "0,4,2000000,0\n";
    let fault = "[[fault]]\nat = \"100us\"\nlink = [\"h4\", \"leaf1\"]\nstate = \"down\"\n[stop]\ntime = \"5ms\"\n";
    let (_, s) = run(&format!(
        "{}{}{fault}",
        two_leaves(2, "[routing]\nreroute = \"10us\""),
        trace_workload("cutoff.csv", rows)
    ));
    assert_eq!(s.flows_finished, 0);
    assert!(s.packets.drops[DropReason::NoRoute] > 0, "{:?}", s.packets);
}

#[test]
fn every_mechanism_on_is_deterministic() {
    let toml = format!(
        "seed = 9\n{}[switch]\nbuffer = \"30KB\"\nbounce = true\n[routing]\nload_balance = \"adaptive\"\nreroute = \"30us\"\n\
         [[workload]]\nkind = \"poisson\"\ncdf = \"websearch\"\nload = 0.6\nflows = 300\n\
         [[fault]]\nat = \"300us\"\nlink = [\"leaf0\", \"spine1\"]\nstate = \"down\"\n\
         [[fault]]\nat = \"2ms\"\nlink = [\"leaf0\", \"spine1\"]\nstate = \"up\"\n",
        two_leaves(2, "")
    );
    let key = |s: &tailsim::Summary, e: &tailsim::Experiment| {
        let fcts: Vec<_> = e.world.records.all().iter().map(|r| (r.end, r.retransmits)).collect();
        (
            s.events,
            s.packet_hops,
            serde_json::to_string(&s.packets).unwrap(),
            serde_json::to_string(&s.mechanisms).unwrap(),
            fcts,
        )
    };
    let (e1, s1) = run(&toml);
    let (e2, s2) = run(&toml);
    assert!(s1.packets.made_by_switches > 0, "{:?}", s1.packets);
    assert!(s1.mechanisms["adaptive_lb"]["decisions"].as_u64().unwrap() > 0);
    assert_eq!(key(&s1, &e1), key(&s2, &e2));
}

#[test]
fn mechanism_keys_are_checked() {
    let e = config_error(&with_incast("pfabric-144", "[routing]\nload_balance = \"least-queued\""));
    assert!(e.contains("routing.load_balance") && e.contains("adaptive"), "{e}");
    let e = config_error(&with_incast("pfabric-144", "[routing]\nreroute = \"0us\""));
    assert!(e.contains("routing.reroute") && e.contains("positive"), "{e}");
    let e = config_error(&with_incast("pfabric-144", "[switch]\nbounce = \"yes\""));
    assert!(e.contains("switch.bounce"), "{e}");
}
