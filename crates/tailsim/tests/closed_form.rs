//! A flow alone on an empty fabric: its completion time is a closed-form sum of serialization, propagation
//! and switching delays, checked to the picosecond against hand-computed values.

mod common;
use common::*;

/// Run one flow h0 -> h3 of `size` bytes; returns (FCT, ideal FCT) in ps.
fn single_flow(size: u64, fabric: &str, init_cwnd: u32) -> (i64, i64) {
    let workload = trace_workload(&format!("one_flow_{size}_{init_cwnd}.csv"), &format!("0,3,{size},0\n"));
    let toml = format!("{fabric}\n[transport]\nkind = \"tcp\"\ninit_cwnd = {init_cwnd}\n{workload}");
    let (e, s) = run(&toml);
    assert_eq!(s.flows_finished, 1);
    assert_eq!(s.packets.dropped, 0);
    let r = e.world.records.nth(0);
    (r.fct().unwrap().0 as i64, r.ideal.0 as i64)
}

#[test]
fn one_packet_same_leaf() {
    // h0 -> leaf0 -> h1: 2 × (1500 B at 10G = 1.2 us) + 2 × 1 us.
    let (fct, ideal) = single_flow(1460, SAME_LEAF, 1000);
    assert_eq!(fct, 4_400_000);
    assert_eq!(ideal, fct);
}

#[test]
fn hundred_packets_same_leaf() {
    // First packet 4.4 us, then 99 more at the 10G pace of 1.2 us.
    let (fct, ideal) = single_flow(146_000, SAME_LEAF, 1000);
    assert_eq!(fct, 4_400_000 + 99 * 1_200_000);
    assert_eq!(ideal, fct);
}

/// Two leaves of two hosts under one spine (10G edge 2.7 us, 40G core 0.2 us), 250 ns switches, host delays
/// 1 us (transmit) and 0.5 us (receive): h0 -> leaf0 -> spine -> leaf1 -> h3.
fn cross_spine() -> String {
    small_fabric(2, "[switch]\ndelay = \"250ns\"\n[host]\ntx_delay = \"1us\"\nrx_delay = \"0.5us\"")
}

#[test]
fn ten_full_packets_across_the_spine() {
    // h0 -> leaf0 -> spine -> leaf1 -> h3. Serialization 1.2 + 0.3 + 0.3 + 1.2, propagation 2.7 + 0.2 + 0.2 + 2.7,
    // 3 switches × 0.25, host delays 1 + 0.5, and 9 more packets paced by the 10G links (1.2 us each).
    let (fct, ideal) = single_flow(14_600, &cross_spine(), 1000);
    let expect = 1_000_000 + 3_000_000 + 5_800_000 + 750_000 + 500_000 + 9 * 1_200_000;
    assert_eq!(fct, expect);
    assert_eq!(ideal, fct);
}

#[test]
fn short_last_packet_across_the_spine() {
    // 9 full packets + a 100 B payload (140 B on the wire: 112 ns at 10G, 28 ns at 40G). Hop by hop, the last
    // packet waits for the train at every link (hand-computed, in ps):
    //   hop0 done 1.0 + 9×1.2 + 0.112           = 11.912 us
    //   hop1 train done 15.05, last done 15.078  (arrived 11.912 + 2.7 + 0.25 = 14.862)
    //   hop2 train done 15.80, last done 15.828
    //   hop3 train done 17.45, last done 17.562; + 2.7 propagation + 0.5 rx = 20.762 us
    let (fct, ideal) = single_flow(9 * 1460 + 100, &cross_spine(), 1000);
    assert_eq!(fct, 20_762_000);
    assert_eq!(ideal, fct);
}

#[test]
fn bottleneck_in_the_middle_paces_the_train() {
    // 40G edges, 10G core, 1 us per link, no switch or host delay; 9 full packets + 100 B. The 10G core
    // spaces the train 1.2 us apart, and the short last packet must wait behind the 9th at the fast last
    // hop (hand-computed, us):
    //   hop0 (40G): train done 2.7, last done 2.728, arrives 3.728
    //   hop1 (10G): train done 1.3 + 1.2 + 8×1.2 = 12.1, last 12.212, arrives 13.212
    //   hop2 (10G): train done 14.3, last 14.412, arrives 15.412
    //   hop3 (40G): 9th packet done 15.6 (not 15.412 + ...), last 15.628, arrives 16.628
    let fabric = r#"
[topology]
kind = "leaf-spine"
leaves = 2
spines = 1
hosts_per_leaf = 2
edge_rate = "40Gbps"
core_rate = "10Gbps"
edge_delay = "1us"
core_delay = "1us"
"#;
    let (fct, ideal) = single_flow(9 * 1460 + 100, fabric, 1000);
    assert_eq!(fct, 16_628_000);
    assert_eq!(ideal, fct);
}

#[test]
fn wire_overhead_takes_wire_time() {
    // 20 B of preamble+gap per packet: 1520 B of wire time = 1.216 us at 10G.
    let fabric = format!("{SAME_LEAF}\n[packet]\nwire_overhead = 20\n");
    let (fct, ideal) = single_flow(1460, &fabric, 1000);
    assert_eq!(fct, 2 * 1_216_000 + 2_000_000);
    assert_eq!(ideal, fct);
}

#[test]
fn slow_start_costs_round_trips() {
    // With an initial window of 1 a lone flow cannot reach the ideal: windows of 1, 2, 4 and 8 packets each
    // wait one RTT (≈ 19 us here) minus their own serialization (1.2 us per packet) before the window covers
    // the bandwidth-delay product: ≈ 19 + 17.8 + 15.4 + 10.6 ≈ 63 us extra, less the pipelining of ACKs.
    let (fct, ideal) = single_flow(146_000, &cross_spine(), 1);
    let extra = fct - ideal;
    assert!((45_000_000..75_000_000).contains(&extra), "fct {fct} ideal {ideal}: {extra} ps extra");
}

/// Run one flow h0 -> h3 of `size` bytes with extra `[transport]` keys; returns (FCT in ps, timeouts,
/// retransmits).
fn single_flow_with(size: u64, fabric: &str, transport: &str, extra: &str) -> (i64, u32, u32) {
    let workload = trace_workload(&format!("one_flow_{size}_hs.csv"), &format!("0,3,{size},0\n"));
    let toml = format!("{fabric}\n[transport]\nkind = \"tcp\"\ninit_cwnd = 1000\n{transport}\n{workload}\n{extra}");
    let (e, s) = run(&toml);
    assert_eq!(s.flows_finished, 1);
    let r = e.world.records.nth(0);
    (r.fct().unwrap().0 as i64, r.timeouts, r.retransmits)
}

#[test]
fn the_handshake_adds_one_syn_round_trip() {
    // Across the spine, the SYN and the SYN-ACK (40 B each): serialization 32 + 8 + 8 + 32 ns, propagation
    // 5.8 us, 3 switches × 0.25 us, host delays 1 + 0.5 us, each way; the data then leaves at once.
    let (plain, _, _) = single_flow_with(14_600, &cross_spine(), "", "");
    let (hs, timeouts, _) = single_flow_with(14_600, &cross_spine(), "handshake = true", "");
    let one_way = 32_000 + 8_000 + 8_000 + 32_000 + 5_800_000 + 750_000 + 1_000_000 + 500_000;
    assert_eq!(timeouts, 0);
    assert_eq!(hs - plain, 2 * one_way);
}

#[test]
fn a_lost_syn_costs_the_initial_rto() {
    // The edge link of h0 is down for the first 100 us: the SYN is lost, resent 1 s later (syn_rto), and
    // the flow then takes its handshake time. A 3 ms syn_rto gives 3 ms instead.
    let down = |until: &str| {
        format!("[[fault]]\nat = \"0us\"\nlink = [\"h0\", \"leaf0\"]\nstate = \"down\"\n[[fault]]\nat = \"{until}\"\nlink = [\"h0\", \"leaf0\"]\nstate = \"up\"")
    };
    let (hs, _, _) = single_flow_with(14_600, &cross_spine(), "handshake = true", "");
    let (lost, timeouts, retransmits) = single_flow_with(14_600, &cross_spine(), "handshake = true", &down("100us"));
    assert_eq!((timeouts, retransmits), (1, 1));
    assert_eq!(lost - hs, 1_000_000_000_000);
    let (short, _, _) = single_flow_with(14_600, &cross_spine(), "handshake = true\nsyn_rto = \"3ms\"", &down("100us"));
    assert_eq!(short - hs, 3_000_000_000);
    // Down for 1.5 s: the SYNs at 0 and 1 s are lost, the one at 1 + 2 s (the timeout doubled) gets through.
    let (twice, timeouts, _) = single_flow_with(14_600, &cross_spine(), "handshake = true", &down("1500ms"));
    assert_eq!(timeouts, 2);
    assert_eq!(twice - hs, 3_000_000_000_000);
}

#[test]
fn the_receiver_answers_until_word_of_the_senders_close_reaches_it() {
    // One packet under one leaf: received at 4.4 us; its 40 B ACK takes 2 × 32 ns + 2 × 1 us back, so the
    // sender closes at 6.464 us; word of that reaches the receiver the path's propagation later (2 × 1 us),
    // which closes its half and frees the flow's record.
    let workload = trace_workload("one_flow_linger.csv", "0,1,1460,0\n");
    let open_at = |ps: u64| {
        let (e, s) = run(&format!("{SAME_LEAF}\n[transport]\nkind = \"tcp\"\n{workload}\n[stop]\ntime = \"{ps}ps\""));
        assert_eq!(s.flows_finished, 1);
        assert_eq!(e.world.records.nth(0).fct().unwrap().0, 4_400_000);
        e.world.transport.active_flows()
    };
    assert_eq!(open_at(6_464_000 + 2_000_000 - 1), 1);
    assert_eq!(open_at(6_464_000 + 2_000_000), 0);
}
