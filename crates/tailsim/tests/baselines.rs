//! The transports Homa was compared with: pHost, NDP and PIAS, end to end (docs/phost.md, docs/ndp.md,
//! docs/pias.md). Every run also checks packet conservation (`common::run`).

mod common;
use common::*;
use tailsim::transport::Transport;
use tailsim::units::{BitsPerSec, Time};

fn on(preset: &str, kind: &str, extra: &str, rows: &str) -> (tailsim::Experiment, tailsim::Summary) {
    run(&format!(
        "[topology]\npreset = \"{preset}\"\n[transport]\nkind = \"{kind}\"\n{extra}\n{}",
        trace_workload(&format!("{kind}-{:x}.csv", rows.len() * 31 + extra.len() + preset.len()), rows)
    ))
}

fn phost_stats(e: &tailsim::Experiment) -> tailsim::transport::phost::PhostStats {
    match &e.world.transport {
        Transport::Phost(t) => t.stats,
        _ => panic!("not pHost"),
    }
}

fn ndp_stats(e: &tailsim::Experiment) -> tailsim::transport::ndp::NdpStats {
    match &e.world.transport {
        Transport::Ndp(t) => t.stats,
        _ => panic!("not NDP"),
    }
}

#[test]
fn a_lone_message_takes_exactly_its_unloaded_latency() {
    // pHost: free tokens cover the first BDP and the first token arrives before they run out; NDP: the first
    // window covers the round trip and each arrival pulls the next packet, so the sender's link never idles.
    // Both presets, across a rack (0 → 1) and across the core (0 → last host).
    for preset in ["homa-144", "pfabric-144"] {
        for kind in ["phost", "ndp"] {
            for size in [100u64, 1442, 9000, 100_000, 3_000_000] {
                for dst in [1, 143] {
                    // One path (ECMP): with spraying a short last packet can overtake a full one on another
                    // spine, and the single-path closed form is no longer a bound.
                    let (e, s) = on(preset, kind, "[routing]\nload_balance = \"ecmp\"", &format!("0,{dst},{size},0\n"));
                    assert_eq!(s.flows_finished, 1);
                    let r = e.world.records.nth(0);
                    // A pHost message longer than its free tokens sends an RTS first: one minimum frame (84 B on
                    // the wire on homa-144: 67.2 ns at 10 Gbps) ahead of its data on the sender's link.
                    let rts = match &e.world.transport {
                        Transport::Phost(t) => {
                            let c = t.config();
                            let free = c.rtt_bytes.div_ceil(c.payload as u64);
                            let rts = BitsPerSec::gbps(10).tx_time((c.ctrl_size + c.wire_overhead) as u64);
                            if size.div_ceil(c.payload as u64) > free {
                                rts
                            } else {
                                Time::ZERO
                            }
                        }
                        _ => Time::ZERO,
                    };
                    assert_eq!(
                        r.fct(),
                        Some(r.ideal + rts),
                        "{preset} {kind} {size} B to {dst}: fct {:?} ideal {}",
                        r.fct(),
                        r.ideal
                    );
                    assert_eq!((s.packets.dropped, s.packets.trimmed, r.retransmits), (0, 0, 0));
                }
            }
        }
    }
}

#[test]
fn pias_single_flow_within_the_initial_window_takes_its_unloaded_latency() {
    // DCTCP's initial window is 10 segments: a flow of up to 14 600 B goes out back to back.
    for preset in ["homa-144", "pfabric-144"] {
        for size in [100u64, 1460, 14_600] {
            let (e, s) = on(preset, "pias", "class_thresholds = [\"1KB\", \"10KB\"]", &format!("0,143,{size},0\n"));
            assert_eq!(s.flows_finished, 1);
            let r = e.world.records.nth(0);
            assert_eq!(r.fct(), Some(r.ideal), "{preset} {size} B");
        }
    }
}

#[test]
fn ndp_trimmed_headers_reach_the_receiver_and_their_payload_is_sent_again() {
    // Eight senders in other racks start 100 KB each at once: their first windows (7 packets each) meet in
    // the receiver's 8-packet ToR queue, which trims what does not fit.
    let rows: String = (1..=8).map(|i| format!("{},0,100000,0\n", i * 16)).collect();
    let (e, s) = on("homa-144", "ndp", "", &rows);
    assert_eq!(s.flows_finished, 8);
    let st = ndp_stats(&e);
    assert!(s.packets.trimmed > 0, "no trimming: {st:?}");
    // Every trimmed header arrived (none was lost: headers are never trimmed again and the header queue is
    // unlimited here), was NACKed, and its payload was sent again exactly once.
    assert_eq!(st.headers, s.packets.trimmed);
    assert_eq!(st.nacks, st.headers);
    let retransmits: u64 = e.world.records.all().iter().map(|r| r.retransmits as u64).sum();
    assert_eq!(retransmits, s.packets.trimmed);
    assert_eq!((s.packets.dropped, st.timeouts), (0, 0));
    // Trimming happened at the receiver's ToR downlink only, and its data queue never held more than 8 packets
    // plus the headers queued ahead of them.
    let trims: Vec<_> = e.world.net.ports.iter().filter(|p| p.stats.trims > 0).collect();
    assert_eq!(trims.len(), 1);
    assert_eq!(trims[0].peer.0, 0);
    // The receiver's downlink stays busy: the incast ends within 10 % of its 800 KB serialization time
    // plus one RTT.
    let end = e.world.records.all().iter().map(|r| r.end.unwrap().secs()).fold(0.0, f64::max);
    let serial = 8.0 * 70.0 * 1518.0 * 8.0 / 10e9;
    assert!(end < serial * 1.1 + 8e-6, "done at {end}, link time {serial}");
}

#[test]
fn ndp_a_pull_the_pacer_would_send_at_once_rides_on_its_ack() {
    // A lone 100 KB message (70 packets, a first window of 7 on homa-144): its packets reach the receiver one
    // full frame apart, the pull spacing, so the pacer is free at every arrival and each of the 63 pulls rides
    // on an ACK (htsim's pacer does the same). The network carries data and ACKs only, and the message still
    // takes exactly its unloaded latency. `pull_on_ack = false`: 63 PULL packets of their own, as before.
    for (on_ack, carried, created) in [(true, 63, 140), (false, 0, 203)] {
        let extra = format!("pull_on_ack = {on_ack}\n[routing]\nload_balance = \"ecmp\"");
        let (e, s) = on("homa-144", "ndp", &extra, "0,143,100000,0\n");
        let st = ndp_stats(&e);
        let r = e.world.records.nth(0);
        assert_eq!((st.pulls, st.pulls_carried, s.packets.created), (63, carried, created), "pull_on_ack {on_ack}");
        assert_eq!(r.fct(), Some(r.ideal), "pull_on_ack {on_ack}");
    }
    // An incast keeps the receiver's pacer busy: pulls queue and leave as PULL packets, and only those the
    // pacer could send at once ride (on ACKs, and on the NACKs of trimmed headers: a carried pull the sender
    // ignored would leave its message short of pulls, unfinished, with no timeout on homa-144). Every packet
    // is a data packet (sent once, or again after a trim), an ACK, a NACK or a PULL of its own.
    let rows: String = (1..=8).map(|i| format!("{},0,100000,0\n", i * 16)).collect();
    for on_ack in [true, false] {
        let (e, s) = on("homa-144", "ndp", &format!("pull_on_ack = {on_ack}"), &rows);
        assert_eq!(s.flows_finished, 8);
        let st = ndp_stats(&e);
        let retransmits: u64 = e.world.records.all().iter().map(|r| r.retransmits as u64).sum();
        let data = 8 * 70 + retransmits;
        assert_eq!(s.packets.created, data + 8 * 70 + st.nacks + st.pulls - st.pulls_carried, "{st:?}");
        match on_ack {
            true => assert!(0 < st.pulls_carried && st.pulls_carried < st.pulls, "{st:?}"),
            false => assert_eq!(st.pulls_carried, 0),
        }
    }
    // Web search over a sprayed fat tree trims at every tier, so a trimmed header can reach a receiver whose
    // pacer is free, and its NACK carries the pull (of the 300 messages, some would be left unfinished, short
    // of a pull, if the sender ignored a NACK's; with no outright loss nothing else would send it).
    let toml = ndp_fat_tree(4, 0.6, 300, "").replace("kind = \"ndp\"\n", "kind = \"ndp\"\npull_on_ack = true\n");
    let (e, s) = run(&toml);
    assert_eq!((s.flows_finished, s.packets.dropped), (300, 0));
    let st = ndp_stats(&e);
    assert!(st.headers > 0 && st.pulls_carried > 0, "{st:?}");
}

#[test]
fn ndp_pulls_leave_at_the_pull_spacing() {
    // A lone 100 KB message (70 packets, 7 unpulled) on homa-144 (10 Gbps, a full frame F of 1,538 B:
    // 1.2304 µs). With pulls spaced 2F or 3F apart the pull clock binds: pulls queue at the pacer from the
    // first window on and leave one per spacing, the last (the 63rd) 62 spacings after the first, and the
    // message ends one unloaded pull-and-data round trip after it. So 3F ends exactly 62 F later than 2F. At
    // the default spacing (F) the sender's link binds instead and the message takes its unloaded latency.
    let frame = BitsPerSec::gbps(10).tx_time(1538);
    for on_ack in [true, false] {
        let fct = |spacing: &str| {
            let extra = format!("pull_on_ack = {on_ack}\n{spacing}\n[routing]\nload_balance = \"ecmp\"");
            let (e, _) = on("homa-144", "ndp", &extra, "0,143,100000,0\n");
            let r = e.world.records.nth(0);
            (r.fct().unwrap(), r.ideal)
        };
        let ((one, ideal), (two, _), (three, _)) =
            (fct(""), fct("pull_spacing = \"3076B\""), fct("pull_spacing = \"4614B\""));
        assert_eq!(one, ideal, "pull_on_ack {on_ack}");
        assert_eq!(three.0 - two.0, 62 * frame.0, "pull_on_ack {on_ack}: 2F {two:?}, 3F {three:?}");
        assert!(two.0 - one.0 > 55 * frame.0, "pull_on_ack {on_ack}: F {one:?}, 2F {two:?}");
    }
    let e = config_error(&with_incast("homa-144", "[transport]\nkind = \"ndp\"\npull_spacing = \"0B\""));
    assert!(e.contains("transport.pull_spacing") && e.contains("positive"), "{e}");
    let e = config_error(&with_incast("homa-144", "[transport]\nkind = \"phost\"\npull_spacing = \"1KB\""));
    assert!(e.contains("transport.pull_spacing") && e.contains("\"phost\""), "{e}");
}

#[test]
fn ndp_without_trimming_room_for_headers_still_recovers() {
    // Finite buffers make outright loss possible: the receiver timeout is on, and with a data queue of one
    // packet most of an incast is trimmed; everything still arrives.
    let rows: String = (1..=4).map(|i| format!("{},0,50000,0\n", i * 16)).collect();
    let (e, s) = on("pfabric-144", "ndp", "[switch]\ntrim = \"1518B\"", &rows);
    assert_eq!(s.flows_finished, 4);
    assert!(s.packets.trimmed > 20, "{:?}", s.packets);
    let Transport::Ndp(t) = &e.world.transport else { panic!() };
    assert!(t.config().timeout.is_some());
}

#[test]
fn phost_downgrades_a_sender_that_leaves_its_tokens_unused() {
    // Host 0 sends 2 MB to host 16 and 1 MB to host 32 at once. It serves the shorter message first (SRPT),
    // so host 16's tokens expire unused: host 16 must downgrade host 0, stop tokening it, and take it back
    // once it sends again or 3 × BDP time has passed; both messages still complete.
    let rows = "0,16,2000000,0\n0,32,1000000,0\n";
    let (e, s) = on("homa-144", "phost", "", rows);
    assert_eq!(s.flows_finished, 2);
    let st = phost_stats(&e);
    assert!(st.expired_at_sender > 0, "{st:?}");
    assert!(st.downgrades >= 1, "{st:?}");
    assert_eq!(st.upgrades, st.downgrades, "{st:?}");
    let (long, short) = (e.world.records.nth(0), e.world.records.nth(1));
    assert!(short.end < long.end);
    // Downgrading bounds the waste. Without it (a downgraded sender is taken back at the next token), host 16
    // keeps sending a token per packet time to a sender busy elsewhere for the whole 1 MB, and they expire.
    let (e2, _) = on("homa-144", "phost", "downgrade_for = \"1ns\"", rows);
    let st2 = phost_stats(&e2);
    assert!(st2.expired_at_sender > st.expired_at_sender * 3 / 2, "{st2:?} vs {st:?}");
}

#[test]
fn pias_demotes_a_long_flow_so_a_later_short_one_overtakes_it() {
    // A 2 MB flow from host 16 to host 0 has sent past the 20 KB threshold when a 10 KB flow from host 32 to
    // host 0 starts. Under PIAS the short flow's packets go at class 0, the long one's at class 1: the short
    // flow finishes near its unloaded time. Under DCTCP (one class) it waits behind the long flow's queue.
    let rows = "16,0,2000000,0\n32,0,10000,300\n";
    let extra = "class_thresholds = [\"20KB\"]";
    let (e, _) = on("homa-144", "pias", extra, rows);
    let short = e.world.records.nth(1);
    let pias = short.fct().unwrap().0 as f64 / short.ideal.0 as f64;
    let (e2, _) = on("homa-144", "dctcp", "", rows);
    let short2 = e2.world.records.nth(1);
    let dctcp = short2.fct().unwrap().0 as f64 / short2.ideal.0 as f64;
    assert!(pias < 1.25, "PIAS short-flow slowdown {pias}");
    assert!(dctcp > pias + 0.3, "DCTCP {dctcp} vs PIAS {pias}");
}

#[test]
fn pias_derives_eight_levels_from_the_workload_and_the_size_aware_variant_changes_only_the_first_packet() {
    let cfg = |extra: &str| {
        format!(
            "[topology]\npreset = \"homa-144\"\n[transport]\nkind = \"pias\"\n{extra}\n[[workload]]\nkind = \"poisson\"\ncdf = \"homa-thesis-w1\"\nload = 0.5\nflows = 2000\n"
        )
    };
    let e = exp(&cfg(""));
    let Transport::Tcp(t) = &e.world.transport else { panic!() };
    let th = match &t.config().class {
        tailsim::transport::tcp::ClassPolicy::Thresholds { thresholds, by } => {
            assert_eq!(*by, tailsim::transport::tcp::ClassBy::BytesSent);
            thresholds.clone()
        }
        p => panic!("{p:?}"),
    };
    assert_eq!(th.len(), 7);
    assert!(th.windows(2).all(|w| w[0] < w[1]));
    let e = exp(&cfg("class_by = \"last-byte\""));
    let Transport::Tcp(t) = &e.world.transport else { panic!() };
    assert!(matches!(
        &t.config().class,
        tailsim::transport::tcp::ClassPolicy::Thresholds { by: tailsim::transport::tcp::ClassBy::LastByte, .. }
    ));
}

#[test]
fn same_seed_same_results_for_each_transport() {
    for kind in ["phost", "ndp", "pias"] {
        let cfg = format!(
            "[topology]\npreset = \"homa-144\"\n[transport]\nkind = \"{kind}\"\n[[workload]]\nkind = \"poisson\"\ncdf = \"homa-thesis-w4\"\nload = 0.8\nflows = 3000\n"
        );
        let (a, sa) = run(&cfg);
        let (b, sb) = run(&cfg);
        let ends = |e: &tailsim::Experiment| {
            e.world.records.all().iter().map(|r| (r.id, r.end, r.retransmits)).collect::<Vec<_>>()
        };
        assert_eq!(ends(&a), ends(&b), "{kind}");
        assert_eq!(sa.packets.created, sb.packets.created, "{kind}");
        assert_eq!(sa.events, sb.events, "{kind}");
        assert_eq!(sa.flows_finished, 3000, "{kind}");
    }
}

#[test]
fn keys_of_one_transport_are_refused_for_another() {
    let e = config_error(&with_incast("homa-144", "[transport]\nkind = \"ndp\"\ntoken_expiry = \"1us\""));
    assert!(e.contains("transport.token_expiry") && e.contains("\"ndp\""), "{e}");
    let e = config_error(&with_incast("homa-144", "[transport]\nkind = \"homa\"\n[switch]\ntrim = \"12KB\""));
    assert!(e.contains("switch.trim"), "{e}");
    let e = config_error(&with_incast("homa-144", "[transport]\nkind = \"ndp\"\n[switch]\ntrim = \"1KB\""));
    assert!(e.contains("switch.trim") && e.contains("one full data packet"), "{e}");
    let e = config_error(&with_incast("homa-144", "[transport]\nkind = \"phost\"\ninit_cwnd = 4"));
    assert!(e.contains("transport.init_cwnd"), "{e}");
    let e = config_error(&with_incast("homa-144", "[transport]\nkind = \"pias\"\n[switch]\necn_mode = \"per-queue\""));
    assert!(e.contains("switch.ecn_mode"), "{e}");
}

#[test]
fn ndp_fair_pulls_let_a_late_short_message_through_sooner() {
    // Four 1 MB messages from other racks send first windows of 111 packets (htsim's setting) into host 0's
    // 8-packet ToR queue: most are trimmed, and host 0 queues a pull for every header, hundreds at once. A
    // 4 KB message joins 5 µs later and is trimmed too. With the pacer serving messages in turn (htsim's
    // FairPullQueue, the default) its re-pulls wait for one pull of each long message; in FIFO order behind
    // every pull queued before them.
    let mut rows: String = (1..=4).map(|i| format!("{},0,1000000,0\n", i * 16)).collect();
    rows.push_str("80,0,4000,5\n");
    let short = |order: &str| {
        let (e, s) = on("homa-144", "ndp", &format!("rtt_bytes = 159396\npull_order = \"{order}\""), &rows);
        assert_eq!(s.flows_finished, 5);
        let r = e.world.records.all().into_iter().find(|r| r.size == 4000).unwrap();
        assert!(r.retransmits > 0, "the short message was not trimmed");
        (r.fct().unwrap().0, ndp_stats(&e).pulls)
    };
    let ((fair, pulls_fair), (fifo, pulls_fifo)) = (short("fair"), short("fifo"));
    assert_eq!(pulls_fair, pulls_fifo, "the order changes, not the number of pulls");
    assert!(fair * 2 < fifo, "fair {fair} ps, FIFO {fifo} ps"); // measured: 188.1 against 501.9 µs
}

#[test]
fn ndp_senders_timeout_acts_at_the_sender_as_a_parallel_run_needs() {
    // The scenario below, with 100 ns links (homa-144's have no delay, which no cut can take), run as a
    // parallel run with every node a part would hand packets over (sim/handover.rs): the sender's timeout
    // fires at h16 and sends from h16, nothing is scheduled for a node by another part's handler. (When both
    // ends shared one timer, attributed to the receiver, its resend from h16 was misplaced: 1 event here.)
    let toml = format!(
        "[topology]\npreset = \"homa-144\"\nedge_delay = \"100ns\"\ncore_delay = \"100ns\"\n[transport]\n\
         kind = \"ndp\"\n[[fault]]\nat = \"0us\"\nlink = [\"h16\", \"leaf1\"]\nstate = \"down\"\n\
         [[fault]]\nat = \"100us\"\nlink = [\"h16\", \"leaf1\"]\nstate = \"up\"\n{}",
        trace_workload("ndp-timeout-handover.csv", "16,0,10000,0\n")
    );
    let mut e = exp(&toml);
    let cut = tailsim::net::partition::Partition::each_node(&e.world.net).unwrap();
    let stop = tailsim::sim::StopAt { time: Some(tailsim::units::Time::ms(3)), max_events: None };
    let h = e.world.run_handing_over(stop, &cut, cut.lookahead().unwrap()).unwrap();
    assert_eq!(e.world.flows_finished, 1);
    assert_eq!(ndp_stats(&e).timeouts, 1, "the first window was lost whole and sent again");
    assert_eq!(h.misplaced, 0, "{:?}", h.first_misplaced);
}

#[test]
fn ndp_recovers_a_first_window_lost_whole_by_the_senders_timeout() {
    // h16's link is down for its first 100 µs: its 7-packet first window is lost before anything reaches the
    // receiver, which so never hears of the message. The sender's timeout (1 ms, on since a fault can lose
    // packets) sends the window again and the message finishes just after it.
    let fault = "[[fault]]\nat = \"0us\"\nlink = [\"h16\", \"leaf1\"]\nstate = \"down\"\n\
                 [[fault]]\nat = \"100us\"\nlink = [\"h16\", \"leaf1\"]\nstate = \"up\"";
    let (e, s) = on("homa-144", "ndp", fault, "16,0,10000,0\n");
    assert_eq!(s.flows_finished, 1);
    let r = e.world.records.nth(0);
    assert_eq!(r.timeouts, 1);
    let fct = r.fct().unwrap().0;
    assert!((1_000_000_000..1_000_000_000 + 2 * r.ideal.0).contains(&fct), "FCT {fct} ps, ideal {}", r.ideal.0);
    assert_eq!(ndp_stats(&e).timeouts, 1);
}
