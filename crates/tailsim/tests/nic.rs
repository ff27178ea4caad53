//! Host NIC scheduling (`host.nic_scheduler`): round-robin interleaves a host's flows packet by packet, FIFO
//! ignores classes, priority serves them first; and a receiver-driven transport with a finite NIC buffer is
//! warned about.

mod common;
use common::*;

/// 10G links of 1 µs: a 1500 B packet takes 1.2 µs to send.
const TX: u64 = 1_200_000;

/// FCTs (ps) of the trace's flows from h0, with `scheduler` at the NICs; TCP with a 20-packet first window.
fn fcts(scheduler: &str, workloads: &str) -> Vec<u64> {
    let toml = format!(
        "{SAME_LEAF}[host]\nnic_scheduler = \"{scheduler}\"\n[transport]\nkind = \"tcp\"\ninit_cwnd = 20\n{workloads}"
    );
    let (e, s) = run(&toml);
    assert_eq!(s.packets.dropped, 0);
    e.world.records.all().iter().map(|r| r.fct().unwrap().0).collect()
}

#[test]
fn round_robin_interleaves_two_flows_packet_by_packet() {
    // Two 10-packet flows from h0 to two hosts, started together: every packet is in the NIC at once.
    let w = trace_workload("two-from-h0.csv", "0,1,14600,0\n0,2,14600,0\n");
    let rr = fcts("per-flow-round-robin", &w);
    // A's first packet is on the wire before B's arrive; then A2 B1 A3 B2 … A10 B9 B10: A's last is the 18th
    // to leave, B's the 20th. First come first served sends A's ten first.
    assert_eq!(rr[1] - rr[0], 2 * TX, "{rr:?}");
    let prio = fcts("priority", &w);
    assert_eq!(prio[1] - prio[0], 10 * TX, "{prio:?}");
    assert_eq!(prio[1], rr[1], "the last packet leaves at the same time either way");
}

#[test]
fn fifo_ignores_classes_and_priority_does_not() {
    // Ten packets of class 1 at t = 0, one of class 0 at 0.5 µs: by priority it goes right after the packet
    // being sent, in FIFO order after the nine still queued.
    let w = format!(
        "{}{}",
        trace_workload_class("low.csv", "0,1,14600,0\n", 1),
        trace_workload_class("high.csv", "0,2,1460,0.5\n", 0)
    );
    let (fifo, prio) = (fcts("fifo", &w), fcts("priority", &w));
    assert_eq!(fifo[1] - prio[1], 9 * TX, "fifo {fifo:?} priority {prio:?}");
}

#[test]
fn unpaced_receiver_driven_senders_are_warned_of_a_finite_nic_buffer() {
    let toml = |nic: &str, transport: &str| {
        format!(
            "{SAME_LEAF}[host]\nnic_buffer = \"{nic}\"\n[transport]\n{transport}\n{}",
            trace_workload("one.csv", "0,1,1460,0\n")
        )
    };
    let warned = |nic: &str, transport: &str| {
        let w = exp(&toml(nic, transport)).warnings;
        w.iter().any(|m| m.contains("host.nic_buffer") && m.contains("overruns"))
    };
    assert!(warned("225KB", "kind = \"ndp\""));
    assert!(!warned("unlimited", "kind = \"ndp\""));
    // Homa's and pHost's pacers hand the NIC one packet at a time: nothing to overrun, unless it is off.
    assert!(!warned("225KB", "kind = \"homa\""));
    assert!(!warned("225KB", "kind = \"phost\""));
    assert!(warned("225KB", "kind = \"homa\"\npacer = false"));
}

#[test]
fn bad_scheduler_names_are_refused() {
    let e = config_error(&with_incast("homa-144", "[host]\nnic_scheduler = \"wfq\""));
    assert!(e.contains("host.nic_scheduler") && e.contains("per-flow-round-robin"), "{e}");
    let e = config_error(&with_incast(
        "pfabric-144",
        "[switch]\nqueue = \"pfabric\"\nbuffer = \"225KB\"\n[host]\nnic_scheduler = \"fifo\"",
    ));
    assert!(e.contains("pFabric queues"), "{e}");
}
