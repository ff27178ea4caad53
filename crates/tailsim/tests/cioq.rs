//! CIOQ switches (net/mech/cioq.rs): ingress queues that drop when full without PFC and pause with it, a
//! crossbar that never overfills an egress queue, head-of-line blocking, the lossless maximum, determinism.

mod common;
use common::*;
use tailsim::net::mech::cioq::Cioq;
use tailsim::net::mech::Mech;

/// Two leaves of 4 hosts, one spine, 10 Gbps, CIOQ switches with 30 KB egress queues and `ingress` ones.
fn fabric_in(ingress: &str, extra: &str) -> String {
    two_leaves(
        1,
        &format!(
            "[switch]\narchitecture = \"cioq\"\nbuffer = \"30KB\"\ningress_buffer = \"{ingress}\"\n\
             [host]\nnic_buffer = \"unlimited\"\n{extra}"
        ),
    )
}

/// Seven senders (three on host 0's leaf, four across the spine) send 300 KB each to host 0.
fn incast(ingress: &str, extra: &str) -> (tailsim::Experiment, tailsim::Summary) {
    run(&format!("{}{}", fabric_in(ingress, extra), incast_to_host0()))
}

fn cioq(e: &tailsim::Experiment) -> &Cioq {
    e.world.net.mechs.iter().find_map(|m| if let Mech::Cioq(c) = m { Some(c) } else { None }).unwrap()
}

#[test]
fn without_pfc_a_full_ingress_queue_drops_and_egress_never_does() {
    let (e, s) = incast("30KB", "");
    assert_eq!(s.flows_finished, 7);
    let st = cioq(&e).stats;
    let net = &e.world.net;
    // Every overflow drop is an ingress drop, counted at the port the packet came in by (a switch port whose
    // peer sent it), and no egress queue ever held more than its 30 KB.
    assert!(st.ingress_drops > 20, "{st:?}");
    assert_eq!(s.packets.drops[DropReason::Overflow], st.ingress_drops);
    assert!(st.blocked_by_full_egress > 0, "the bottleneck's egress queue filled and held packets in ingress");
    for p in net.switch_ports() {
        assert!(net.ports[p.idx()].stats.max_bytes <= 30_000, "{}", net.ports[p.idx()].stats.max_bytes);
    }
    assert!(st.max_ingress_bytes <= 30_000);
}

#[test]
fn with_pfc_nothing_is_lost_and_ingress_stays_within_pause_plus_headroom() {
    // 8 classes × (8 KB + 4.5 KB of headroom at 10 Gbps) fit in 120 KB (the lossless maximum check).
    let (e, s) = incast("120KB", "[pfc]\npause = \"8KB\"\nunpause = \"4KB\"\n");
    assert_eq!(s.flows_finished, 7);
    assert_eq!(s.packets.dropped, 0, "{:?}", s.packets);
    let c = cioq(&e);
    assert_eq!(c.stats.ingress_drops, 0);
    let pfc = c.pfc.as_ref().unwrap().stats;
    assert!(pfc.pause_frames > 10, "{pfc:?}");
    // Headroom at 10 Gbps over 1 us links: the frame being sent (1.2 us), the pause frame, 2 us of wire, the
    // upstream frame in progress (1.2 us): about 4.5 KB; plus one packet for the charge at arrival.
    assert!(pfc.max_drain_bytes <= 8_000 + 4_500 + 1_500, "{pfc:?}");
    // Everything the ingress queues held is accounted for at the end (conservation checked by `run`) and
    // they are empty.
    for p in e.world.net.switch_ports() {
        assert_eq!(c.ingress_bytes(p), 0);
    }
}

#[test]
fn a_blocked_head_holds_up_its_class_but_not_the_others() {
    // Host 0's link is degraded to 100 Mbps, and hosts 1 and 4 send to it in class 1, so leaf0's port to host
    // 0 stays full and host 4's packets from the spine wait in leaf0's ingress queue behind a head that can
    // go only every 120 us. A short flow from host 5 (other leaf) to host 1 (an idle port) crosses the same
    // ingress queue: in class 0 it has a FIFO of its own and is not held up; in class 1 it waits behind the
    // blocked head (and PFC's pause of class 1 upstream). With PFC, so that nothing is dropped and the waiting
    // is all there is. (A blocked higher class does hold up the lower ones: their drain bytes include it.)
    let fct_of_probe = |probe_class: u8| {
        let rows = "4,0,400000,0\n1,0,400000,0\n";
        let probe = "5,1,3000,2000\n";
        let cfg = format!(
            "{}{}{}[[fault]]\nat = \"0us\"\nlink = [\"0\", \"leaf0\"]\nrate = \"100Mbps\"\n",
            fabric_in("120KB", "[pfc]\npause = \"8KB\"\nunpause = \"4KB\"\n"),
            trace_workload_class("cioq-hol-bulk.csv", rows, 1),
            trace_workload_class("cioq-hol-probe.csv", probe, probe_class)
        );
        let (e, s) = run(&cfg);
        assert_eq!(s.packets.dropped, 0);
        let r = e.world.records.all().into_iter().find(|r| r.dst.0 == 1).unwrap();
        (r.fct().unwrap(), r.ideal)
    };
    let (own_class, ideal) = fct_of_probe(0);
    let (same_class, _) = fct_of_probe(1);
    assert!(own_class.0 < ideal.0 * 3 / 2, "{own_class} vs ideal {ideal}");
    assert!(same_class.0 > own_class.0 * 5, "{same_class} vs {own_class}: head-of-line blocking in class 1");
}

#[test]
fn a_pause_threshold_above_the_lossless_maximum_is_refused() {
    // The thesis: (131072 − 8 × 4557) / 8 = 11827 B on 1 Gbps links; tailsim's headroom for detail-128 (two
    // 1530 B frames, a 94 B pause frame, 2 × 5.476 us of wire: 36.18 us) gives 11 861 B.
    let e = config_error(&with_incast("detail-128", "[pfc]\npause = \"12000B\"\n"));
    assert!(e.contains("key `pfc.pause`") && e.contains("lossless maximum of 11861 B"), "{e}");
    let ok = tailsim::load_str(
        &with_incast("detail-128", "[pfc]\npause = \"11861B\"\n"),
        "x.toml",
        std::path::Path::new("."),
        &[],
    );
    assert!(ok.is_ok());
    // A slower reaction leaves less room.
    let e = config_error(&with_incast("detail-128", "[pfc]\nresponse = \"40us\"\n"));
    assert!(e.contains("key `pfc`") && e.contains("above the lossless maximum"), "{e}");
}

#[test]
fn cioq_keys_are_checked() {
    let e = config_error(&with_incast("detail-16", "[switch]\narchitecture = \"voq\"\n"));
    assert!(e.contains("switch.architecture") && e.contains("\"voq\""), "{e}");
    let e = config_error(&with_incast("pfabric-144", "[switch]\ningress_buffer = \"10KB\"\n"));
    assert!(e.contains("switch.ingress_buffer") && e.contains("only with"), "{e}");
    let e = config_error(&with_incast("detail-16", "[switch]\nbuffer = \"unlimited\"\n"));
    assert!(e.contains("switch.buffer") && e.contains("finite"), "{e}");
    let e = config_error(&with_incast("detail-16", "[switch]\nspeedup = 0\n"));
    assert!(e.contains("switch.speedup"), "{e}");
}

#[test]
fn cioq_runs_are_deterministic() {
    let cfg = format!(
        "{}[routing]\nload_balance = \"detail\"\n[pfc]\n[[workload]]\nkind = \"retrieval\"\nrate = 20000\n\
         until = \"3ms\"\nsizes = [\"2KB\", \"32KB\"]\nclass = 0\n[[workload]]\nkind = \"background\"\n\
         size = \"1MB\"\nclass = 1\n",
        fabric_in("120KB", "")
    );
    let (a, sa) = run(&cfg);
    let (b, sb) = run(&cfg);
    assert!(a.world.jobs.retrievals.len() > 100);
    assert_eq!(sa.events, sb.events);
    let ends = |e: &tailsim::Experiment| e.world.records.all().iter().map(|r| r.end).collect::<Vec<_>>();
    assert_eq!(ends(&a), ends(&b));
    assert_eq!(cioq(&a).stats.transfers, cioq(&b).stats.transfers);
}
