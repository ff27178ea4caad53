//! Link failures and corruption: packets are lost where they should be, transports recover, and every packet
//! is still accounted for.

mod common;
use common::*;

fn pair(extra: &str, size: &str) -> String {
    let bytes = tailsim::config::units::parse_size(size).unwrap();
    let workload = trace_workload(&format!("pair_{}.csv", extra.len()), &format!("0,3,{bytes},0\n"));
    format!(
        "{}\n[transport]\nkind = \"tcp\"\ninit_cwnd = 10\nmin_rto = \"200us\"\n{workload}{extra}\n",
        small_fabric(2, "")
    )
}

#[test]
fn corrupting_link_loses_packets_and_tcp_recovers() {
    let (e, s) = run(&pair("[[fault]]\nat = \"0us\"\nlink = [\"leaf0\", \"spine0\"]\ncorrupt = 0.01", "5MB"));
    assert_eq!(s.flows_finished, 1);
    assert!(s.packets.drops[DropReason::Corrupt] > 10, "{} corrupted", s.packets.drops[DropReason::Corrupt]);
    assert_eq!(s.packets.dropped, s.packets.drops[DropReason::Corrupt]);
    let data_lost: u64 =
        e.world.net.ports.iter().filter(|p| p.node.0 == 4).map(|p| p.stats.drops(DropReason::Corrupt)).sum();
    eprintln!(
        "retx {} data lost {} total corrupt {}",
        e.world.records.nth(0).retransmits,
        data_lost,
        s.packets.drops[DropReason::Corrupt]
    );
    assert!(e.world.records.nth(0).retransmits as u64 >= data_lost);
    // Only the corrupting link (both directions) loses packets.
    for p in &e.world.net.ports {
        let names = (p.node.0, p.peer.0);
        if p.stats.drops(DropReason::Corrupt) > 0 {
            assert!(names == (4, 6) || names == (6, 4), "corruption on port {names:?}");
        }
    }
}

#[test]
fn link_down_then_up_stalls_then_recovers() {
    // Down from 100 us to 1.1 ms: everything sent over it is lost, the flow waits in RTO backoff, then finishes.
    let (e, s) = run(&pair(
        "[[fault]]\nat = \"100us\"\nlink = [\"h0\", \"leaf0\"]\nstate = \"down\"\n[[fault]]\nat = \"1.1ms\"\nlink = [\"h0\", \"leaf0\"]\nstate = \"up\"",
        "2MB",
    ));
    assert_eq!(s.flows_finished, 1);
    assert!(s.packets.drops[DropReason::LinkDown] > 0);
    let r = e.world.records.nth(0);
    assert!(r.timeouts >= 1);
    assert!(r.fct().unwrap().0 > 1_100_000_000, "finished before the link came back");
}

#[test]
fn permanent_failure_ends_at_the_time_limit_with_packets_accounted_for() {
    let (e, s) = run(&pair(
        "[[fault]]\nat = \"50us\"\nlink = [\"leaf1\", \"h3\"]\nstate = \"down\"\n[stop]\ntime = \"5ms\"",
        "2MB",
    ));
    assert_eq!(s.flows_finished, 0);
    assert_eq!(format!("{:?}", s.stop_reason), "TimeLimit");
    assert!(s.packets.drops[DropReason::LinkDown] > 0);
    // run() already checked conservation; check the bookkeeping is non-trivial too.
    assert_eq!(s.packets.created, s.packets.delivered + s.packets.dropped + s.packets.in_flight);
    assert!(e.world.records.nth(0).end.is_none());
}

#[test]
fn a_degraded_link_carries_packets_at_its_new_rate() {
    // small_fabric: 10 Gbps edges, 40 Gbps core. A 1460 B packet from host 0 to host 3 crosses h0–leaf0,
    // leaf0–spine0, spine0–leaf1, leaf1–h3. Degrading leaf0–spine0 to 1 Gbps (both directions) at time 0 makes
    // that hop's serialization 1500 B × 8 / 1 Gbps = 12 us instead of 0.3 us.
    let healthy = run(&pair("", "1460B")).0.world.records.nth(0).fct().unwrap();
    let (e, s) = run(&pair("[[fault]]\nat = \"0us\"\nlink = [\"leaf0\", \"spine0\"]\nrate = \"1Gbps\"", "1460B"));
    assert_eq!(s.flows_finished, 1);
    let degraded = e.world.records.nth(0).fct().unwrap();
    // The ACK crosses the degraded link too, but the FCT ends at the receiver: one data packet, one hop.
    assert_eq!(degraded - healthy, tailsim::units::Time::ps(12_000_000 - 300_000));
    let port = e.world.net.ports.iter().find(|p| p.node.0 == 4 && p.peer.0 == 6).unwrap();
    assert_eq!(port.rate.0, 1_000_000_000);
    let err = config_error(&pair("[[fault]]\nat = \"0us\"\nlink = [\"leaf0\", \"spine0\"]\nrate = \"0Gbps\"", "1B"));
    assert!(err.contains("fault[0].rate") && err.contains("positive"), "{err}");
}

#[test]
fn a_host_cut_off_for_good_is_warned_of_and_the_run_stops_as_stalled() {
    // Host 0's only link goes down for good at 100 µs with no stop time: flows to and from it retransmit
    // forever. `check` warns; the run stops once nothing has progressed for sim::STALL, not at u64 overflow.
    let down = "[[fault]]\nat = \"100us\"\nlink = [\"0\", \"leaf0\"]\nstate = \"down\"\n";
    let mut e = exp(&pair(down, "5MB"));
    assert_eq!(e.warnings.len(), 1, "{:?}", e.warnings);
    assert!(e.warnings[0].contains("host 0 is cut off for good"), "{}", e.warnings[0]);
    let s = e.run(&mut |_| {}).unwrap();
    assert_eq!(s.stop_reason, tailsim::StopReason::Stalled);
    assert_eq!(s.flows_finished, 0);
    // Stopped within a few polls of the stall's start, not at the end of time.
    assert!(s.simulated_seconds > tailsim::sim::STALL.secs() && s.simulated_seconds < 1e6, "{}", s.simulated_seconds);

    // The link back up after 1 ms: no warning, and the flow finishes.
    let (e, s) = run(&pair(&format!("{down}duration = \"1ms\"\n"), "5MB"));
    assert!(e.warnings.is_empty(), "{:?}", e.warnings);
    assert_eq!((s.stop_reason, s.flows_finished), (tailsim::StopReason::Finished, 1));
    // A stop time: the run ends there, no warning either.
    let e = exp(&pair(&format!("{down}[stop]\ntime = \"5ms\"\n"), "5MB"));
    assert!(e.warnings.is_empty());

    // The link's last change decides, whichever way round its ends are named: down, up, then down for good.
    let fault =
        |at: &str, ends: &str, state: &str| format!("[[fault]]\nat = \"{at}\"\nlink = {ends}\nstate = \"{state}\"\n");
    let (a, b) = ("[\"0\", \"leaf0\"]", "[\"leaf0\", \"0\"]");
    let back = fault("100us", b, "down") + &fault("200us", a, "up");
    assert!(exp(&pair(&back, "5MB")).warnings.is_empty());
    let e = exp(&pair(&(back + &fault("300us", b, "down")), "5MB"));
    assert_eq!(e.warnings.len(), 1, "{:?}", e.warnings);
    assert!(e.warnings[0].starts_with("fault[2]: host 0 is cut off for good"), "{}", e.warnings[0]);
    // A million repetitions load in linear time (a search per failure was quadratic: 18 s for 65,536, found
    // by tests/fuzz.rs); a hang guard, not a measure of speed.
    let t0 = std::time::Instant::now();
    let many = format!("{down}duration = \"1us\"\nevery = \"10us\"\ncount = 1000000\n");
    assert!(exp(&pair(&many, "5MB")).warnings.is_empty());
    assert!(t0.elapsed().as_secs_f64() < 10.0, "loading took {:?}", t0.elapsed());
}

/// A link that goes down while the fast path (net/egress.rs `start_queued`) is serializing a packet onto it
/// loses that packet as the slow path does (which holds it until its end of serialization and drops it there
/// if the link is down): the same losses, retransmissions and completion time on both paths. Faults at five
/// odd times while the flow keeps h0's NIC busy, each down for 300 µs.
#[test]
fn a_link_that_goes_down_mid_packet_loses_the_same_packets_on_the_fast_and_slow_paths() {
    for at_ps in [40_000_101u64, 61_333_707, 87_777_013, 120_500_009, 200_000_303] {
        let toml = pair(
            &format!(
                "[[fault]]\nat = \"{at_ps}ps\"\nlink = [\"h0\", \"leaf0\"]\nstate = \"down\"\n\
                 [[fault]]\nat = \"{}ps\"\nlink = [\"h0\", \"leaf0\"]\nstate = \"up\"",
                at_ps + 300_000_000
            ),
            "4MB",
        );
        let [fast, slow] = [false, true].map(|slow| {
            let mut e = exp(&toml);
            if slow {
                // A transmit flag that no mechanism answers: every port takes the slow path.
                let t = tailsim::net::hooks::HookSet::TRANSMIT;
                e.world.net.ports.iter_mut().for_each(|p| p.hooks = p.hooks | t);
            }
            let s = e.run(&mut |_| {}).unwrap_or_else(|err| panic!("{err}"));
            let r = e.world.records.nth(0);
            (r.fct(), r.retransmits, r.timeouts, s.packets.drops[DropReason::LinkDown])
        });
        assert!(slow.3 > 0, "fault at {at_ps} ps: nothing was lost");
        assert_eq!(fast, slow, "fault at {at_ps} ps: (FCT, retransmits, timeouts, link-down drops), fast vs slow");
    }
}

#[test]
fn a_run_whose_events_run_out_with_flows_open_ends_as_exhausted_not_finished() {
    // Every pending event lost after 100 events (as a packet lost where no timer recovers it would leave a
    // run): the flow is open and nothing can move it. The run must not call that "finished".
    let mut e = exp(&pair("", "5MB"));
    let budget = tailsim::sim::StopAt { time: None, max_events: Some(100) };
    assert_eq!(e.world.run(budget, &mut |_| true), tailsim::StopReason::EventBudget);
    let mut lost = 0;
    while e.world.ev.pop().is_some() {
        lost += 1;
    }
    assert!(lost > 0);
    let reason = e.world.run(tailsim::sim::StopAt { time: None, max_events: None }, &mut |_| true);
    assert_eq!(reason, tailsim::StopReason::Exhausted);
    assert_eq!(reason.name(), "exhausted");
    // The same flow run to its end: "finished".
    let (_, s) = run(&pair("", "5MB"));
    assert_eq!((s.stop_reason, s.flows_finished), (tailsim::StopReason::Finished, 1));
}
