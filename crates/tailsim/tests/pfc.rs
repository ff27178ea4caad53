//! Priority flow control (net/mech/pfc.rs) on output-queued switches: lossless incasts, bounded ingress
//! occupancy, counters that match a recount of the packets in the switches, determinism, bad keys.

mod common;
use common::*;
use tailsim::net::mech::pfc::Pfc;
use tailsim::net::mech::Mech;
use tailsim::net::queue::CLASSES;
use tailsim::units::PortId;

/// Two leaves of 4 hosts, one spine, 10 Gbps and 1 us everywhere; per-port buffers of `buffer`; NIC queues
/// unlimited (a paused NIC holds what its transport sends).
fn fabric(buffer: &str, extra: &str) -> String {
    fabric_spines(1, buffer, extra)
}

fn fabric_spines(spines: u32, buffer: &str, extra: &str) -> String {
    two_leaves(spines, &format!("[switch]\nbuffer = \"{buffer}\"\n[host]\nnic_buffer = \"unlimited\"\n{extra}"))
}

/// Seven senders (three on host 0's leaf, four across the spine) send 300 KB each to host 0.
fn incast(extra: &str, stop: &str) -> (tailsim::Experiment, tailsim::Summary) {
    incast_buffer("60KB", extra, stop)
}

fn incast_buffer(buffer: &str, extra: &str, stop: &str) -> (tailsim::Experiment, tailsim::Summary) {
    run(&format!("{}{}{stop}", fabric(buffer, extra), incast_to_host0()))
}

fn pfc(e: &tailsim::Experiment) -> &Pfc {
    e.world.net.mechs.iter().find_map(|m| if let Mech::Pfc(p) = m { Some(p) } else { None }).unwrap()
}

#[test]
fn an_incast_that_drops_without_pfc_is_lossless_with_it() {
    let (_, lossy) = incast("", "");
    assert!(lossy.packets.drops[DropReason::Overflow] > 50, "{:?}", lossy.packets);
    let (e, s) = incast("[pfc]\n", "");
    assert_eq!(s.flows_finished, 7);
    assert_eq!(s.packets.dropped, 0, "{:?}", s.packets);
    let st = pfc(&e).stats;
    assert!(st.pause_frames > 10 && st.unpause_frames > 10, "{st:?}");
    // Every frame was made by a switch and consumed at the other end of its link.
    assert_eq!(s.packets.made_by_switches, st.pause_frames + st.unpause_frames);
    assert_eq!(s.packets.absorbed, s.packets.made_by_switches);
    assert!(s.mechanisms["pfc"]["pause_frames"].as_u64().unwrap() > 10);
    // Lossless but no faster: the bottleneck is the same link.
    let last = |x: &tailsim::Experiment| x.world.records.all().iter().filter_map(|r| r.fct()).max().unwrap();
    assert!(last(&e).0 < 2_100_000_000, "{}", last(&e));
}

#[test]
fn ingress_occupancy_stays_within_the_threshold_plus_the_reaction_headroom() {
    // After a pause is sent, at most what the upstream port is serializing, the frame's own time, the bytes on
    // the 1 us wire in both directions and the response time at 10 Gbps can still arrive.
    for response_us in [0u64, 5] {
        let pfc_cfg = format!("[pfc]\npause = \"8KB\"\nunpause = \"4KB\"\nresponse = \"{response_us}us\"\n");
        let (e, s) = incast_buffer("100KB", &pfc_cfg, "");
        assert_eq!(s.packets.dropped, 0, "response {response_us} us");
        let bytes_per_us = 10_000 / 8;
        let headroom = 1500 + 64 + 2 * bytes_per_us + response_us * bytes_per_us + 1500;
        let max = pfc(&e).stats.max_drain_bytes;
        assert!(max > 8_000, "never reached the threshold: {max}");
        assert!(max <= 8_000 + headroom, "response {response_us} us: {max} B > 8000 + {headroom}");
    }
}

#[test]
fn drain_bytes_match_a_recount_of_the_packets_in_the_switches() {
    // Stopped mid-incast: every byte a switch has charged to an ingress port and class is a packet still in
    // that switch (queued or in its forwarding pipeline), and the other way round.
    let (e, s) = incast("[pfc]\n", "[stop]\ntime = \"150us\"\n");
    assert_eq!(s.flows_finished, 0);
    let net = &e.world.net;
    let mut recount = vec![[0u64; CLASSES]; net.ports.len()];
    let mut charge = |id| {
        let p = e.world.pk.get(id);
        if p.in_port != PortId::NONE && !p.kind.is_link_local() {
            recount[p.in_port.idx()][p.class as usize] += p.size as u64;
        }
    };
    for port in net.switch_ports() {
        net.ports[port.idx()].queue.packets().for_each(&mut charge);
    }
    net.switches.iter().for_each(|s| s.fwd.iter().for_each(&mut charge));
    let m = pfc(&e);
    let mut total = 0;
    for port in net.switch_ports() {
        assert_eq!(m.ingress_bytes(port), recount[port.idx()], "port {}", port.0);
        total += recount[port.idx()].iter().sum::<u64>();
    }
    assert!(total > 20_000, "the switches should hold a backlog mid-incast: {total} B");
    // Drain bytes are cumulative over higher priorities.
    let p = net.switch_ports().max_by_key(|p| m.drain_bytes(*p, CLASSES - 1)).unwrap();
    assert_eq!(m.drain_bytes(p, CLASSES - 1), recount[p.idx()].iter().sum::<u64>());
}

#[test]
fn pfc_with_adaptive_load_balancing_is_deterministic_and_lossless() {
    // Two spines, so the load balancer chooses at the leaves' ingress, where PFC must still account for every
    // packet (both are ingress mechanisms; the balancer is installed first).
    let toml = format!(
        "seed = 4\n{}[routing]\nload_balance = \"adaptive\"\n[[workload]]\nkind = \"poisson\"\ncdf = \"websearch\"\n\
         load = 0.7\nflows = 300\n[stop]\ntime = \"1s\"\n",
        fabric_spines(2, "60KB", "[pfc]\n").replace("min_rto", "fast_retransmit = false\nmin_rto")
    );
    let (e1, s1) = run(&toml);
    let (e2, s2) = run(&toml);
    assert_eq!(s1.flows_finished, 300);
    assert_eq!(s1.packets.dropped, 0, "{:?}", s1.packets);
    assert!(s1.mechanisms["adaptive_lb"]["decisions"].as_u64().unwrap() > 1000);
    assert!(pfc(&e1).stats.pause_frames > 0);
    let key = |e: &tailsim::Experiment, s: &tailsim::Summary| {
        (
            s.events,
            serde_json::to_string(&s.mechanisms).unwrap(),
            e.world.records.all().iter().map(|r| r.end).collect::<Vec<_>>(),
        )
    };
    assert_eq!(key(&e1, &s1), key(&e2, &s2));
}

#[test]
fn pfc_keys_are_checked() {
    let e = config_error(&with_incast("pfabric-144", "[pfc]\npause = \"4KB\"\nunpause = \"4KB\""));
    assert!(e.contains("pfc.unpause") && e.contains("below"), "{e}");
    let e = config_error(&with_incast("pfabric-144", "[switch]\nqueue = \"pfabric\"\n[pfc]\n"));
    assert!(e.contains("pfc") && e.contains("pFabric"), "{e}");
    let e = config_error(&with_incast("homa-144", "[transport]\nkind = \"ndp\"\n[pfc]\n"));
    assert!(e.contains("trimming"), "{e}");
    let e = config_error(&with_incast("pfabric-144", "[pfc]\npaus = \"4KB\""));
    assert!(e.contains("paus"), "{e}");
}

#[test]
fn detail_and_lossless_packet_scatter_drop_nothing() {
    // The thesis's D4: no congestion drops with DeTail (PFC + favoured-port load balancing) or LPS (PFC +
    // uniform random ports), where flow hashing without PFC drops.
    let base = |lb: &str, pfc: &str| {
        format!(
            "seed = 2\n{}[routing]\nload_balance = \"{lb}\"\n[[workload]]\nkind = \"poisson\"\ncdf = \"websearch\"\n\
             load = 0.8\nflows = 200\n[stop]\ntime = \"1s\"\n",
            fabric_spines(2, "40KB", pfc).replace("min_rto", "fast_retransmit = false\nmin_rto")
        )
    };
    let (_, fh) = run(&base("ecmp", ""));
    assert!(fh.packets.drops[DropReason::Overflow] > 0, "{:?}", fh.packets);
    for lb in ["detail", "spray"] {
        let (e, s) = run(&base(lb, "[pfc]\n"));
        assert_eq!(s.flows_finished, 200, "{lb}");
        assert_eq!(s.packets.dropped, 0, "{lb}: {:?}", s.packets);
        assert!(pfc(&e).stats.pause_frames > 0, "{lb}");
    }
}

#[test]
fn alb_threshold_keys_are_checked() {
    let e = config_error(&with_incast(
        "pfabric-144",
        "[routing]\nload_balance = \"detail\"\nalb_thresholds = [\"64KB\", \"16KB\"]",
    ));
    assert!(e.contains("routing.alb_thresholds") && e.contains("increasing"), "{e}");
    let e = config_error(&with_incast("pfabric-144", "[routing]\nalb_thresholds = [\"16KB\"]"));
    assert!(e.contains("routing.alb_thresholds") && e.contains("detail"), "{e}");
}
