//! RDMA WRITE over RoCEv2 RC (`transport/rdma.rs`): line-rate sending, go-back-N from the hole, the fixed
//! timeout for a lost last packet, ACK coalescing, round-robin between connections, and what its config
//! refuses. Times are hand-computed to the picosecond: on `SAME_LEAF` a full packet (1024 B + 44 B) takes
//! 854.4 ns per 10G link, an ACK (48 B) 38.4 ns, and h0 -> leaf0 -> h3 has two links of 1 us.

mod common;
use common::*;
use tailsim::transport::Transport;

const PKT: u64 = 854_400;
const ACK: u64 = 38_400;
const US: u64 = 1_000_000;

/// A run of `rows` flows over RDMA on `SAME_LEAF`, with `extra` after `[transport]`.
fn rdma(name: &str, rows: &str, extra: &str) -> (tailsim::Experiment, tailsim::Summary) {
    let workload = trace_workload(name, rows);
    run(&format!("{SAME_LEAF}\n[transport]\nkind = \"rdma\"\n{extra}\n{workload}"))
}

fn stats(e: &tailsim::Experiment) -> tailsim::transport::rdma::RdmaStats {
    let Transport::Rdma(t) = &e.world.transport else { panic!("not RDMA") };
    t.stats
}

/// Packets host `h`'s NIC sent.
fn nic_tx(e: &tailsim::Experiment, h: usize) -> u64 {
    let nic = e.world.net.hosts[h].nic;
    e.world.net.ports[nic.idx()].stats.tx_packets
}

/// Corrupt every frame from leaf0 to h3 that arrives in [from, to) (µs), one way.
fn lose(from: &str, to: &str) -> String {
    format!(
        "[[fault]]\nat = \"{from}us\"\nlink = [\"leaf0\", \"h3\"]\ncorrupt = 1.0\none_way = true\n\
         [[fault]]\nat = \"{to}us\"\nlink = [\"leaf0\", \"h3\"]\ncorrupt = 0.0\none_way = true\n"
    )
}

#[test]
fn a_lone_message_goes_at_line_rate_in_1024_byte_packets() {
    // 10 packets: the first takes 2 × 854.4 ns + 2 × 1 us, the other 9 follow at the 10G pace.
    let (e, s) = rdma("rdma-lone.csv", "0,3,10240,0\n", "");
    assert_eq!(s.flows_finished, 1);
    let r = e.world.records.nth(0);
    assert_eq!(r.fct().unwrap().0, 11 * PKT + 2 * US);
    assert_eq!(r.ideal, r.fct().unwrap(), "the ideal FCT uses the same RoCEv2 framing");
    assert_eq!((nic_tx(&e, 0), nic_tx(&e, 3)), (10, 10), "ten packets, an ACK for each");
    assert_eq!(stats(&e), Default::default());
}

#[test]
fn a_lost_packet_makes_the_sender_go_back_to_the_hole() {
    // 20 packets; packet 5 reaches h3 at 2 us + 7 × 854.4 ns = 7.9808 us and is lost. Packet 6 (8.8352 us)
    // draws the NAK, which reaches h0 at 8.8352 + 2 × (38.4 ns + 1 us) = 10.912 us, while h0 serializes
    // packet 12 (handed at 10.2528 us). Go-back-N resends 5..12 — 8 packets, 7 of which h3 had received and
    // discarded — and then 13..19: 15 packets from 11.1072 us, the last reaching h3 at 26.7776 us.
    let (e, s) = rdma("rdma-hole.csv", "0,3,20480,0\n", &lose("7.6", "8.3"));
    assert_eq!(s.flows_finished, 1);
    assert_eq!(s.packets.drops[DropReason::Corrupt], 1);
    let st = stats(&e);
    assert_eq!((st.naks, st.retransmits, st.out_of_order, st.timeouts, st.duplicates), (1, 8, 7, 0, 0));
    assert_eq!(nic_tx(&e, 0), 28, "20 packets and 8 sent again");
    let r = e.world.records.nth(0);
    assert_eq!(r.fct().unwrap().0, 11_107_200 + 14 * PKT + 2 * PKT + 2 * US);
    assert_eq!((r.retransmits, r.timeouts), (8, 0));
}

#[test]
fn a_lost_last_packet_waits_for_the_fixed_timeout() {
    // 4 packets; the last reaches h3 at 2 us + 5 × 854.4 ns = 6.272 us and is lost: no later packet, no NAK.
    // The ACK of packet 2 (sent at 5.4176 us) reaches h0 at 7.4944 us and restarts the 1 ms timer; at
    // 1007.4944 us h0 goes back to packet 3, which reaches h3 2 × 854.4 ns + 2 us later.
    let (e, s) = rdma("rdma-tail.csv", "0,3,4096,0\n", &lose("6.0", "6.5"));
    assert_eq!(s.flows_finished, 1);
    let st = stats(&e);
    assert_eq!((st.naks, st.retransmits, st.timeouts), (0, 1, 1));
    let r = e.world.records.nth(0);
    assert_eq!(r.fct().unwrap().0, 5_417_600 + 2 * (ACK + US) + 1000 * US + 2 * PKT + 2 * US);
    // A 5 ms timeout (the thesis's CX5) moves the completion by exactly the difference.
    let (e5, _) = rdma("rdma-tail.csv", "0,3,4096,0\n", &format!("rto = \"5ms\"\n{}", lose("6.0", "6.5")));
    assert_eq!(e5.world.records.nth(0).fct().unwrap().0 - r.fct().unwrap().0, 4000 * US);
}

#[test]
fn a_lost_nak_is_recovered_by_the_timeout() {
    // 10 packets; packet 5 lost as above, and the NAK too: packet 6 draws it at 8.8352 us, and it reaches
    // leaf0 at 9.8736 us, inside a one-way loss window on h3 -> leaf0. Packets 6..9 are discarded in silence
    // (one NAK per hole). The last ACK (packet 4's, reaching h0 at 7.1264 + 2 × 1.0384 = 9.2032 us) restarted
    // the timer: at 1009.2032 us h0 goes back to una = 5 and sends 5..9, the last reaching h3 6 × 854.4 ns +
    // 2 us later.
    let faults = format!(
        "{}[[fault]]\nat = \"9.7us\"\nlink = [\"h3\", \"leaf0\"]\ncorrupt = 1.0\none_way = true\n\
         [[fault]]\nat = \"10.0us\"\nlink = [\"h3\", \"leaf0\"]\ncorrupt = 0.0\none_way = true\n",
        lose("7.6", "8.3")
    );
    let (e, s) = rdma("rdma-nak-lost.csv", "0,3,10240,0\n", &faults);
    assert_eq!(s.flows_finished, 1);
    assert_eq!(s.packets.drops[DropReason::Corrupt], 2, "packet 5 and the NAK");
    let st = stats(&e);
    assert_eq!((st.naks, st.timeouts, st.retransmits, st.out_of_order, st.duplicates), (1, 1, 5, 4, 0));
    assert_eq!(e.world.records.nth(0).fct().unwrap().0, 1_009_203_200 + 6 * PKT + 2 * US);
}

#[test]
fn a_duplicate_after_a_lost_ack_is_acknowledged_again_not_placed_twice() {
    // 4 packets all arrive (the last at 6.272 us: the flow completes then), but the last ACK is lost on
    // h3 -> leaf0 (it reaches leaf0 at 6.272 + 1.0384 = 7.3104 us). The sender times out 1 ms after packet
    // 2's ACK and sends packet 3 again; h3 discards the duplicate and acknowledges it, and the sender closes.
    let faults = "[[fault]]\nat = \"7.2us\"\nlink = [\"h3\", \"leaf0\"]\ncorrupt = 1.0\none_way = true\n\
                  [[fault]]\nat = \"7.4us\"\nlink = [\"h3\", \"leaf0\"]\ncorrupt = 0.0\none_way = true\n";
    let (e, s) = rdma("rdma-ack-lost.csv", "0,3,4096,0\n", faults);
    assert_eq!(s.packets.drops[DropReason::Corrupt], 1);
    let st = stats(&e);
    assert_eq!((st.duplicates, st.timeouts, st.retransmits, st.naks), (1, 1, 1, 0));
    let r = e.world.records.nth(0);
    assert_eq!(r.fct().unwrap().0, 5 * PKT + 2 * US, "complete when the data arrived, not when acknowledged");
    assert_eq!((r.retransmits, r.timeouts), (1, 1));
    assert_eq!(nic_tx(&e, 3), 5, "four ACKs and one for the duplicate");
}

#[test]
fn acks_coalesce_without_delaying_the_message() {
    // ack_every = 4: ACKs after packets 4 and 8, and the last (10).
    let (e, _) = rdma("rdma-lone.csv", "0,3,10240,0\n", "ack_every = 4");
    assert_eq!(nic_tx(&e, 3), 3);
    assert_eq!(e.world.records.nth(0).fct().unwrap().0, 11 * PKT + 2 * US);
}

#[test]
fn connections_of_one_host_share_its_link_packet_by_packet() {
    // Two 10-packet messages from h0 at once. The NIC serves its connections in turn, one packet each; the
    // first message, started first, is back in the list before the second joins it, so the order is A0 A1
    // B0 A2 B1 ... A9 B8 B9: A's last leaves 18th, B's 20th, two packet times later.
    let (e, s) = rdma("rdma-two.csv", "0,3,10240,0\n0,2,10240,0\n", "");
    assert_eq!(s.flows_finished, 2);
    let f: Vec<u64> = e.world.records.all().iter().map(|r| r.fct().unwrap().0).collect();
    assert_eq!(f[0], 17 * PKT + 2 * PKT + 2 * US);
    assert_eq!(f[1], f[0] + 2 * PKT);
}

#[test]
fn random_corruption_both_ways_loses_nothing_and_runs_alike_twice() {
    // 300 messages of 1..30 packets among 4 hosts under 1 % corruption of every frame both ways (data, ACKs,
    // NAKs): every message completes, conservation holds (checked by `run`), and a second run is identical.
    let rows: String = (0..300u64)
        .map(|i| format!("{},{},{},{}\n", i % 4, (i + 1 + i / 4 % 3) % 4, 1 + i * 97 % 30_000, i * 20))
        .collect();
    let fault = "[[fault]]\nat = \"0us\"\nlink = [\"leaf0\", \"h1\"]\ncorrupt = 0.01\n\
                 [[fault]]\nat = \"0us\"\nlink = [\"leaf0\", \"h2\"]\ncorrupt = 0.01\n";
    let (a, sa) = rdma("rdma-random.csv", &rows, fault);
    let (b, _) = rdma("rdma-random.csv", &rows, fault);
    assert_eq!(sa.flows_finished, 300);
    let st = stats(&a);
    assert!(sa.packets.drops[DropReason::Corrupt] > 20, "{} corrupted", sa.packets.drops[DropReason::Corrupt]);
    assert!(st.naks > 0 && st.timeouts > 0 && st.retransmits > st.naks, "{st:?}");
    let ends = |e: &tailsim::Experiment| e.world.records.all().iter().map(|r| (r.id, r.end)).collect::<Vec<_>>();
    assert_eq!(ends(&a), ends(&b));
    assert_eq!(stats(&b), st);
}

#[test]
fn bad_rdma_settings_name_their_key() {
    let base = |t: &str| with_incast("detail-16", &format!("[transport]\nkind = \"rdma\"\n{t}"));
    for (t, key, msg) in [
        ("rto = \"0us\"", "transport.rto", "must be positive"),
        ("ack_every = 0", "transport.ack_every", "at least 1"),
        ("class = 8", "transport.class", "0–7"),
        ("min_rto = \"1ms\"", "transport.min_rto", "does not apply to kind \"rdma\""),
        ("init_cwnd = 4", "transport.init_cwnd", "does not apply to kind \"rdma\""),
    ] {
        let e = config_error(&base(t));
        assert!(e.contains(key) && e.contains(msg), "{t}: {e}");
    }
    let e = config_error(&with_incast("detail-16", "[transport]\nkind = \"dctcp\"\nack_every = 2"));
    assert!(e.contains("transport.ack_every") && e.contains("does not apply to kind \"dctcp\""), "{e}");
    let e = config_error(&format!(
        "{SAME_LEAF}[[fault]]\nat = \"1us\"\nlink = [\"leaf0\", \"h3\"]\nstate = \"down\"\none_way = true\n\
         [[workload]]\nkind = \"incast\"\nsenders = 2\nsize = 10\n"
    ));
    assert!(e.contains("fault[0].one_way") && e.contains("`corrupt` and `rate` only"), "{e}");
}
