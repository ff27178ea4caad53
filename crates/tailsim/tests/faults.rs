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
        e.world.records[0].retransmits,
        data_lost,
        s.packets.drops[DropReason::Corrupt]
    );
    assert!(e.world.records[0].retransmits as u64 >= data_lost);
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
    let r = &e.world.records[0];
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
    assert!(e.world.records[0].end.is_none());
}
