//! Congestion control on a shared bottleneck: fair sharing, DCTCP's queue around K, drop-tail TCP filling the
//! buffer, and incast timeouts.

mod common;
use common::*;
use tailsim::Experiment;

/// `n` senders (hosts 1..=n) each send `size` bytes to host 0 at t = 0 over a single leaf.
fn many_to_one(n: u32, size: &str, transport: &str, switch: &str) -> String {
    let flows: String =
        (1..=n).map(|s| format!("{s},0,{},0\n", tailsim::config::units::parse_size(size).unwrap())).collect();
    let workload = trace_workload(&format!("m2o_{n}_{size}.csv"), &flows);
    format!(
        r#"
[topology]
kind = "leaf-spine"
leaves = 1
spines = 1
hosts_per_leaf = {hosts}
edge_rate = "10Gbps"
core_rate = "40Gbps"
edge_delay = "5us"
[switch]
{switch}
[transport]
{transport}
{workload}"#,
        hosts = n + 1,
    )
}

/// The port from the leaf to host 0: the bottleneck.
fn bottleneck(e: &Experiment) -> &tailsim::net::port::Port {
    e.world.net.ports.iter().find(|p| p.peer.0 == 0).unwrap()
}

fn fair_share(transport: &str, switch: &str, expect_timeouts: bool, min_first: f64) {
    // Two 50 MB flows into one 10 Gbps link: both should finish near 2 × 50 MB / 10 Gbps = 80 ms (plus
    // header overhead 40/1460), i.e. neither got much more than half while they overlapped. (AIMD converges
    // over several sawtooth cycles of W/2 round trips each, so the flows must be long.)
    let (e, s) = run(&many_to_one(2, "50MB", transport, switch));
    assert_eq!(s.flows_finished, 2);
    // NewReno's slow-start overshoot loses whole window tails and retransmissions in the first milliseconds
    // (recovered by RTO, as RFC 6675 without lost-retransmission detection must); DCTCP's marks prevent it.
    let timeouts: u32 = e.world.records.all().iter().map(|r| r.timeouts).sum();
    if !expect_timeouts {
        assert_eq!(timeouts, 0);
    }
    let both = 2.0 * 50e6 * 1500.0 / 1460.0 * 8.0 / 10e9 * 1e12;
    let fcts: Vec<f64> = e.world.records.all().iter().map(|r| r.fct().unwrap().0 as f64).collect();
    let (first, last) = (fcts[0].min(fcts[1]), fcts[0].max(fcts[1]));
    assert!(
        first >= min_first * both,
        "first flow finished at {:.3} ms, fair share would be {:.3} ms",
        first / 1e9,
        both / 1e9
    );
    assert!(last <= 1.05 * both, "link underused: last finished at {:.3} ms vs {:.3} ms", last / 1e9, both / 1e9);
}

#[test]
fn tcp_shares_a_bottleneck_fairly() {
    fair_share("kind = \"tcp\"\ninit_cwnd = 10", "buffer = \"100KB\"", true, 0.95);
}

#[test]
fn dctcp_shares_a_bottleneck_fairly() {
    fair_share("kind = \"dctcp\"\ninit_cwnd = 10", "buffer = \"225KB\"\necn_threshold = \"30KB\"", false, 0.95);
}

#[test]
fn dctcp_holds_the_queue_near_k_at_full_throughput() {
    // DCTCP analysis (Alizadeh et al. 2010, §3.3): with N synchronized flows the queue oscillates between
    // Q_max = K + N packets and Q_max − A, A = ½·sqrt(2N(C·RTT + K)) packets. Here C·RTT ≈ 13 packets,
    // K = 20 packets, N = 8: Q_max ≈ 28, A ≈ 8 → the queue stays roughly in [20, 28] packets.
    let k = 30_000u64;
    // Queue statistics restart after 3 ms, past the slow-start overshoot of the first round trips.
    let toml =
        many_to_one(8, "4MB", "kind = \"dctcp\"\ninit_cwnd = 10", &format!("buffer = \"450KB\"\necn_threshold = {k}"));
    let (e, s) = run(&format!("{toml}\n[output]\nwarmup = \"3ms\"\n"));
    assert_eq!(s.flows_finished, 8);
    assert_eq!(s.packets.dropped, 0, "DCTCP should not overflow a 300-packet buffer");
    let p = bottleneck(&e);
    let avg = p.avg_bytes(e.world.now);
    assert!(avg > 0.5 * k as f64 && avg < 2.0 * k as f64, "time-average queue {avg:.0} B, K = {k} B");
    assert!(p.stats.max_bytes < 3 * k, "max queue {} B", p.stats.max_bytes);
    // Full throughput: 32 MB (+ headers) through 10 Gbps.
    let ideal = 8.0 * 4e6 * 1500.0 / 1460.0 * 8.0 / 10e9;
    assert!(e.world.now.secs() < 1.03 * ideal, "took {:.3} ms, ideal {:.3} ms", e.world.now.secs() * 1e3, ideal * 1e3);
}

#[test]
fn droptail_tcp_fills_the_buffer() {
    let buf = 225_000u64;
    let (e, s) = run(&many_to_one(8, "4MB", "kind = \"tcp\"\ninit_cwnd = 10", &format!("buffer = {buf}")));
    assert_eq!(s.flows_finished, 8);
    let p = bottleneck(&e);
    assert!(p.stats.max_bytes + 1500 > buf, "max queue {} B of {buf}", p.stats.max_bytes);
    assert!(p.stats.drops(DropReason::Overflow) > 0);
    assert!(p.avg_bytes(e.world.now) > 0.4 * buf as f64, "avg queue {:.0} B", p.avg_bytes(e.world.now));
    let ideal = 8.0 * 4e6 * 1500.0 / 1460.0 * 8.0 / 10e9;
    assert!(e.world.now.secs() < 1.05 * ideal, "took {:.3} ms, ideal {:.3} ms", e.world.now.secs() * 1e3, ideal * 1e3);
}

#[test]
fn incast_times_out_drop_tail_tcp_but_not_dctcp() {
    // 30 senders × 200 KB into a 120 KB buffer, initial window 2: the first burst (60 packets) fits, TCP then
    // grows every window until the buffer overflows in synchronized losses, and flows that lose a whole
    // window (or a retransmission) wait for the 200 us RTO. DCTCP keeps the queue near K and never overflows.
    let sw = "buffer = \"120KB\"\necn_threshold = \"20KB\"";
    let tcp = "kind = \"tcp\"\ninit_cwnd = 2\nmin_rto = \"200us\"";
    let dctcp = "kind = \"dctcp\"\ninit_cwnd = 2\nmin_rto = \"200us\"";
    let (e_tcp, s_tcp) = run(&many_to_one(30, "200KB", tcp, sw));
    let (e_dctcp, s_dctcp) = run(&many_to_one(30, "200KB", dctcp, sw));
    let tcp_timeouts: u32 = e_tcp.world.records.all().iter().map(|r| r.timeouts).sum();
    let dctcp_timeouts: u32 = e_dctcp.world.records.all().iter().map(|r| r.timeouts).sum();
    assert!(s_tcp.packets.drops[DropReason::Overflow] > 0);
    assert!(tcp_timeouts > 0, "drop-tail TCP had no timeouts");
    assert_eq!(dctcp_timeouts, 0);
    assert_eq!(s_dctcp.packets.dropped, 0);
    assert_eq!(s_dctcp.flows_finished, 30);
}

#[test]
fn newreno_without_sack_recovers_by_partial_acks() {
    let sw = "buffer = 100000";
    let (e, s) = run(&many_to_one(8, "4MB", "kind = \"tcp\"\ninit_cwnd = 10\nsack = false", sw));
    assert_eq!(s.flows_finished, 8);
    assert!(s.packets.drops[DropReason::Overflow] > 0);
    let retx: u32 = e.world.records.all().iter().map(|r| r.retransmits).sum();
    assert!(
        retx as u64 >= s.packets.drops[DropReason::Overflow] / 2,
        "{retx} retransmissions for {} drops",
        s.packets.drops[DropReason::Overflow]
    );
    let ideal = 8.0 * 4e6 * 1500.0 / 1460.0 * 8.0 / 10e9;
    assert!(e.world.now.secs() < 1.15 * ideal, "took {:.3} ms, ideal {:.3} ms", e.world.now.secs() * 1e3, ideal * 1e3);
}

#[test]
fn delayed_acks_halve_the_ack_count() {
    // One flow of 100 segments, no loss: one ACK per 2 segments, plus immediate ACKs for the last segment.
    let count = |delack: u32| {
        let (_, s) = run(&many_to_one(
            1,
            "146000",
            &format!("kind = \"tcp\"\ninit_cwnd = 1000\ndelayed_ack = {delack}"),
            "buffer = \"1MB\"",
        ));
        assert_eq!(s.flows_finished, 1);
        s.packets.delivered - 100
    };
    assert_eq!(count(1), 100);
    assert_eq!(count(2), 50);
}

#[test]
fn shared_buffer_fabric_runs_and_drains_its_pool() {
    let sw = "buffer_mode = \"shared\"\nshared_buffer = \"300KB\"\nalpha = 0.5";
    let (e, s) = run(&many_to_one(12, "300KB", "kind = \"tcp\"\ninit_cwnd = 10", sw));
    assert_eq!(s.flows_finished, 12);
    // alpha = 0.5: one congested queue holds at most a third of the pool.
    let p = bottleneck(&e);
    assert!(p.stats.max_bytes <= 100_000 + 1500, "max queue {} B", p.stats.max_bytes);
    assert!(s.packets.drops[DropReason::Overflow] > 0);
    assert!(e.world.net.switches.iter().all(|sw| sw.used == 0), "shared pool not drained");
}

#[test]
fn cubic_shares_a_bottleneck_fairly() {
    // One flow times out four times in the first millisecond's overshoot and restarts from two segments;
    // slow start stops at ssthresh, and CUBIC's AIMD (β = 0.7, the Reno-friendly region at these RTTs) takes
    // about 15 ms to even the two out: the first finishes at 0.88 × the fair time (0.93 with 100 MB flows).
    fair_share("kind = \"cubic\"\ninit_cwnd = 10", "buffer = \"100KB\"", true, 0.85);
}

/// Without a loss CUBIC never leaves slow start's growth or NewReno's recovery: a lone flow into an ample
/// buffer finishes at the same picosecond.
#[test]
fn cubic_without_a_loss_is_newreno() {
    let (e_reno, s_reno) = run(&many_to_one(1, "2MB", "kind = \"tcp\"\ninit_cwnd = 10", "buffer = \"4MB\""));
    let (e_cubic, s_cubic) = run(&many_to_one(1, "2MB", "kind = \"cubic\"\ninit_cwnd = 10", "buffer = \"4MB\""));
    assert_eq!(s_reno.packets.dropped + s_cubic.packets.dropped, 0);
    assert_eq!(e_reno.world.records.nth(0).fct(), e_cubic.world.records.nth(0).fct());
}

/// One long flow through a buffer much smaller than the path's bandwidth-delay product (≈ 19 packets): after
/// each loss NewReno halves its window and leaves the link idle until it grows back; CUBIC cuts to 0.7 of it
/// (RFC 9438 §4.6) and, at this RTT, grows like Reno (the Reno-friendly region, §4.3), so it keeps the link
/// busier and finishes first. With β = 0.5 and the cubic curve too slow to matter, it is Reno again.
#[test]
fn cubic_keeps_a_small_buffer_busier_than_newreno() {
    let sw = "buffer = \"6KB\"";
    let fct = |t: &str| {
        let (e, s) = run(&many_to_one(1, "20MB", t, sw));
        assert!(s.packets.drops[DropReason::Overflow] > 10, "{t}: no losses to react to");
        e.world.records.nth(0).fct().unwrap().0 as f64
    };
    let reno = fct("kind = \"tcp\"\ninit_cwnd = 10");
    let cubic = fct("kind = \"cubic\"\ninit_cwnd = 10");
    assert!(cubic < 0.97 * reno, "CUBIC {:.3} ms vs NewReno {:.3} ms", cubic / 1e9, reno / 1e9);
    let half = fct("kind = \"cubic\"\ninit_cwnd = 10\ncubic_beta = 0.5");
    assert!(half > cubic, "β = 0.5: {:.3} ms, β = 0.7: {:.3} ms", half / 1e9, cubic / 1e9);
}

/// The `cwnd` table's rows: (una, nxt, cwnd, event).
fn cwnd_rows(e: &Experiment) -> Vec<(i64, i64, f64, String)> {
    use tailsim::metrics::output::Column;
    let (name, cols) = e.world.transport.tables().into_iter().next().expect("a cwnd table");
    assert_eq!(name, "cwnd");
    let int = |n: &str| match cols.iter().find(|c| matches!(c, Column::I64(m, _) if *m == n)) {
        Some(Column::I64(_, v)) => v.clone(),
        _ => panic!("no column {n}"),
    };
    let cwnd = match cols.iter().find(|c| matches!(c, Column::F64("cwnd", _))) {
        Some(Column::F64(_, v)) => v.clone(),
        _ => panic!("no cwnd"),
    };
    let ev = match cols.iter().find(|c| matches!(c, Column::Str("event", _))) {
        Some(Column::Str(_, v)) => v.clone(),
        _ => panic!("no event"),
    };
    let (una, nxt) = (int("una"), int("nxt"));
    (0..una.len()).map(|i| (una[i], nxt[i], cwnd[i], ev[i].clone())).collect()
}

/// One 300 KB flow from a 10 Gbps host into a 1 Gbps one through a switch marking above 3 KB: the initial
/// window's burst queues at the 1 Gbps port and is marked.
fn marked_first_round(transport: &str) -> String {
    let workload = trace_workload("cwr_one_flow.csv", "1,0,300000,0\n");
    format!(
        "[topology]\nkind = \"star\"\nhost_rates = [\"1Gbps\", \"10Gbps\"]\ndelay = \"50us\"\n[switch]\nbuffer = \"1MB\"\n\
         ecn_threshold = \"3KB\"\n[transport]\n{transport}\ninit_cwnd = 10\nmin_rto = \"10ms\"\n[output]\ncwnd_trace = [0]\n{workload}"
    )
}

/// Linux's and ns-3's CWR state: after an ECN cut the window stays put until the round that was cut is
/// acknowledged, then grows as congestion avoidance says: +acked/cwnd per ACK (checked row by row against
/// the trace's own una). With `cwr_growth = true` it grows inside the round.
#[test]
fn an_ecn_cut_freezes_the_window_for_the_round_that_was_cut() {
    let (e, s) = run(&marked_first_round("kind = \"tcp\"\necn = true"));
    assert_eq!(s.flows_finished, 1);
    let rows = cwnd_rows(&e);
    assert!(rows.iter().all(|r| r.3 == "ack"));
    // Slow start: +1 per newly acknowledged segment, from 10.
    let cut = rows.windows(2).position(|w| w[1].2 < w[0].2).expect("an ECN cut") + 1;
    let mut expect = 10.0;
    for (i, r) in rows[..cut].iter().enumerate() {
        let acked = r.0 - if i == 0 { 0 } else { rows[i - 1].0 };
        expect += acked as f64;
        assert_eq!(r.2, expect, "slow start, row {i}");
    }
    // Every later row: a cut halves (NewReno with ECN) and freezes the window until the cumulative ACK
    // reaches what was outstanding at the cut (the row's nxt); otherwise congestion avoidance.
    let (mut frozen, mut cuts, mut grew) = (None, 0, 0);
    for i in cut..rows.len() {
        let (r, prev) = (&rows[i], &rows[i - 1]);
        if r.2 < prev.2 {
            assert_eq!(r.2, (prev.2 / 2.0).max(1.0), "row {i}: a cut");
            frozen = Some((r.2, r.1));
            cuts += 1;
            continue;
        }
        match frozen {
            Some((w, end)) if r.0 < end => assert_eq!(r.2, w, "row {i}: the window grew inside the round that was cut"),
            _ => {
                let acked = (r.0 - prev.0) as f64;
                assert!((r.2 - (prev.2 + acked / prev.2)).abs() < 1e-9, "row {i}: {} after {}", r.2, prev.2);
                grew += (acked > 0.0) as u32;
            }
        }
    }
    assert!(cuts >= 2 && grew > 10, "{cuts} cuts, {grew} increases");
    // The old behaviour: growth inside the cut round.
    let (e, _) = run(&marked_first_round("kind = \"tcp\"\necn = true\ncwr_growth = true"));
    let rows = cwnd_rows(&e);
    let cut = rows.windows(2).position(|w| w[1].2 < w[0].2).unwrap() + 1;
    let round_end = rows[cut].1;
    assert!(rows[cut + 1..].iter().take_while(|r| r.0 < round_end).any(|r| r.2 > rows[cut].2));
}

#[test]
fn dctcp_freezes_too_and_traces_only_the_named_flows() {
    let (e, _) = run(&marked_first_round("kind = \"dctcp\""));
    let rows = cwnd_rows(&e);
    let cut = rows.windows(2).position(|w| w[1].2 < w[0].2).expect("a DCTCP cut") + 1;
    let round_end = rows[cut].1;
    assert!(rows[cut..].iter().take_while(|r| r.0 < round_end).all(|r| r.2 == rows[cut].2));
    // Flow 1 does not exist: no rows for it, and a run without the key writes no table.
    let (e, _) = run(&marked_first_round("kind = \"dctcp\"").replace("cwnd_trace = [0]", "cwnd_trace = [1]"));
    assert!(cwnd_rows(&e).is_empty());
    let (e, _) = run(&marked_first_round("kind = \"dctcp\"").replace("cwnd_trace = [0]", ""));
    assert!(e.world.transport.tables().is_empty());
}

/// Linux's slow start stops at ssthresh (`tcp_slow_start`): after a timeout the window restarts from one
/// segment, and the ACK of the resent hole can cover hundreds of SACKed segments; only the part up to ssthresh
/// opens the window by one per segment, the rest by acked/cwnd as congestion avoidance. Checked on every ACK
/// row of 30 incast flows' traces; the incast must produce such an ACK (else the test proves nothing). With
/// `slow_start_cap = false` (pFabric's growth) the same incast breaks the bound.
#[test]
fn slow_start_stops_at_ssthresh_however_much_one_ack_covers() {
    let (over, crossings, rows) = slow_start_rows("");
    assert_eq!(over, 0, "{over} ACKs took the window past ssthresh");
    assert!(crossings > 0, "no ACK carried slow start 5 segments past ssthresh ({rows} slow-start rows)");
    let (over, _, _) = slow_start_rows("slow_start_cap = false");
    assert!(over > 0, "the uncapped growth should overshoot ssthresh");
}

/// For the TCP incast with every flow traced: ACK rows that found the window below ssthresh (ssthresh
/// unchanged) and left it above ssthresh + (nxt − una)/ssthresh; such rows whose ACK covered more than 5
/// segments past ssthresh; all such rows.
fn slow_start_rows(extra: &str) -> (u32, u32, u32) {
    use tailsim::metrics::output::Column;
    let sw = "buffer = \"120KB\"";
    let tcp = format!("kind = \"tcp\"\ninit_cwnd = 2\nmin_rto = \"200us\"\n{extra}");
    let trace: Vec<String> = (0..30).map(|i| i.to_string()).collect();
    let toml = format!("{}\n[output]\ncwnd_trace = [{}]\n", many_to_one(30, "200KB", &tcp, sw), trace.join(", "));
    let (e, _) = run(&toml);
    let (_, cols) = e.world.transport.tables().into_iter().next().expect("a cwnd table");
    let f64s = |n: &str| match cols.iter().find(|c| matches!(c, Column::F64(m, _) if *m == n)) {
        Some(Column::F64(_, v)) => v.clone(),
        _ => panic!("no column {n}"),
    };
    let i64s = |n: &str| match cols.iter().find(|c| matches!(c, Column::I64(m, _) if *m == n)) {
        Some(Column::I64(_, v)) => v.clone(),
        _ => panic!("no column {n}"),
    };
    let (flow, una, nxt, cwnd, ss) = (i64s("flow_id"), i64s("una"), i64s("nxt"), f64s("cwnd"), f64s("ssthresh"));
    let mut last: std::collections::HashMap<i64, usize> = Default::default();
    let (mut over, mut crossings, mut rows) = (0, 0, 0);
    for i in 0..flow.len() {
        if let Some(&p) = last.get(&flow[i]) {
            if cwnd[p] < ss[p] && ss[i] == ss[p] && una[i] > una[p] {
                let acked = (una[i] - una[p]) as f64; // at least this many newly acknowledged
                over += (cwnd[i] > ss[i] + ((nxt[p] - una[p]) as f64) / ss[i] + 1e-9) as u32;
                crossings += (cwnd[p] + acked > ss[i] + 5.0) as u32;
                rows += 1;
            }
        }
        last.insert(flow[i], i);
    }
    (over, crossings, rows)
}
