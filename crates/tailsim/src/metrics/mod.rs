//! Per-flow records, summaries by flow-size bucket, and the ideal (empty-fabric) completion time.

pub mod inbound;
pub mod jobs;
pub mod latency;
pub mod output;
pub mod records;
pub mod select;

use crate::net::Network;
use crate::units::{NodeId, PathId, Time};
use records::FlowRecords;
use serde::Serialize;
use std::io;

/// One flow, as written to flows.parquet.
#[derive(Clone, Debug)]
pub struct FlowRecord {
    pub id: u64,
    pub src: NodeId,
    pub dst: NodeId,
    pub size: u64,
    pub start: Time,
    /// When the receiver held the last byte.
    pub end: Option<Time>,
    pub ideal: Time,
    /// Relative deadline (deadline workloads), measured from `start`.
    pub deadline: Option<Time>,
    pub retransmits: u32,
    pub timeouts: u32,
    /// Plain flow, background flow, or a retrieval's request or response.
    pub role: crate::traffic::jobs::Role,
    /// The path the flow is pinned to (its trace named one), else NONE.
    pub path: PathId,
}

impl FlowRecord {
    /// Started (a flow made to be started by another's end may not be yet: `FlowRecords::push_dormant`).
    pub fn started(&self) -> bool {
        self.start != records::NOT_STARTED
    }
    pub fn fct(&self) -> Option<Time> {
        self.end.map(|e| e - self.start)
    }
    pub fn slowdown(&self) -> Option<f64> {
        self.fct().map(|f| f.0 as f64 / self.ideal.0 as f64)
    }
    /// For a flow with a deadline: whether it completed by it (an unfinished flow has missed it).
    pub fn met_deadline(&self) -> Option<bool> {
        self.deadline.map(|d| self.fct().is_some_and(|f| f <= d))
    }
}

/// Packet format used for the ideal FCT (and by the transports).
#[derive(Clone, Copy, Debug)]
pub struct Framing {
    pub mss: u64,
    pub header: u64,
    /// Bytes that take wire time but no buffer space (preamble, inter-frame gap).
    pub wire_overhead: u64,
}

/// Completion time of a flow of `size` bytes sent alone at line rate from `src` to `dst` on an empty fabric:
/// from the flow's start to the last byte at the receiving transport, with store-and-forward at every hop.
///
/// With equal packets, packet j leaves hop i at D_i(j) = Σ_{k≤i}(s_k + p_k + w_k) + (j−1)·max_{k≤i} s_k (the
/// slowest link so far paces the train); the shorter last packet is then pushed through the hops exactly.
pub fn ideal_fct(net: &Network, src: NodeId, dst: NodeId, size: u64, fr: Framing) -> Time {
    ideal_fct_on(net, src, dst, PathId::NONE, size, fr)
}

/// As `ideal_fct`, along the path `pin` when the flow is pinned to one (`net/pinned.rs`).
pub fn ideal_fct_on(net: &Network, src: NodeId, dst: NodeId, pin: PathId, size: u64, fr: Framing) -> Time {
    let n = size.div_ceil(fr.mss).max(1);
    let full = fr.mss + fr.header + fr.wire_overhead;
    let last = size - (n - 1) * fr.mss + fr.header + fr.wire_overhead;
    let path = net.path_of(src, dst, pin);
    let tx_delay = net.hosts[src.idx()].tx_delay;
    let mut ready = tx_delay.0; // the last packet may start at stage i no earlier than this
    let mut max_s = 0u64;
    let mut sum = tx_delay.0; // Σ (s + delay) up to the previous stage
                              // One store-and-forward stage: service times of a full and of the last packet, then a fixed delay.
    let mut stage = |s_full: u64, s_last: u64, next_delay: u64| {
        max_s = max_s.max(s_full);
        // D_i(n-1) for the train of n-1 full packets.
        let d_full = if n >= 2 { sum + s_full + (n - 2) * max_s } else { 0 };
        let start = if n >= 2 { ready.max(d_full) } else { ready };
        ready = start + s_last + next_delay;
        sum += s_full + next_delay;
    };
    for (i, &pid) in path.iter().enumerate() {
        let pt = &net.ports[pid.idx()];
        let (s_full, s_last) = (pt.tx_time(full).0, pt.tx_time(last).0);
        // At a CIOQ switch, the crossbar first (the egress rate × speedup, nothing after it).
        if let Some(k) = net.crossbar_speedup(pt.node) {
            stage(s_full / k, s_last / k, 0);
        }
        // The port's serialization, then its propagation and the next node's forwarding delay.
        let next_delay = pt.delay.0 + if i + 1 < path.len() { net.node_delay(pt.peer).0 } else { 0 };
        stage(s_full, s_last, next_delay);
    }
    let rx = net.hosts[dst.idx()].rx_delay;
    Time(ready + rx.0)
}

/// Statistics of one size bucket.
#[derive(Clone, Debug, Serialize)]
pub struct BucketStats {
    pub bucket: String,
    pub flows: usize,
    pub unfinished: usize,
    pub fct_mean_us: f64,
    pub fct_p50_us: f64,
    pub fct_p99_us: f64,
    pub fct_p999_us: f64,
    pub slowdown_mean: f64,
    pub slowdown_p50: f64,
    pub slowdown_p99: f64,
    pub slowdown_p999: f64,
}

/// Nearest-rank percentile (the smallest value with at least q of the data at or below it).
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (q * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1]
}

fn fmt_bytes(b: u64) -> String {
    match b {
        0 => "0".into(),
        b if b % 1_000_000 == 0 => format!("{}MB", b / 1_000_000),
        b if b % 1_000 == 0 => format!("{}KB", b / 1_000),
        b => format!("{b}B"),
    }
}

/// The size buckets: (lo, hi] for each pair of edges (0 first, infinity last), then "all".
fn buckets(edges: &[u64]) -> Vec<(u64, u64, String)> {
    let mut bounds = vec![0u64];
    bounds.extend_from_slice(edges);
    let mut out: Vec<(u64, u64, String)> = bounds
        .iter()
        .enumerate()
        .map(|(i, &lo)| {
            let hi = bounds.get(i + 1).copied().unwrap_or(u64::MAX);
            let name = if hi == u64::MAX {
                format!("({},inf)", fmt_bytes(lo))
            } else {
                format!("({},{}]", fmt_bytes(lo), fmt_bytes(hi))
            };
            (lo, hi, name)
        })
        .collect();
    out.push((0, u64::MAX, "all".to_string()));
    out
}

const QUANTILES: [f64; 3] = [0.5, 0.99, 0.999];

/// Summaries for flows in (edges[i-1], edges[i]] and an "all" row; flows starting before `warmup` are left out.
///
/// The records are read a chunk at a time (one pass for counts and means, then the passes of an exact
/// selection for the percentiles), so memory does not grow with the number of flows.
pub fn summarize(records: &FlowRecords, edges: &[u64], warmup: Time) -> io::Result<Vec<BucketStats>> {
    let bs = buckets(edges);
    let all = bs.len() - 1;
    // A flow's rows: its size bucket and "all" (an empty flow is in neither, as (0, ...] leaves it out).
    let rows = |r: &FlowRecord| {
        let b = bs[..all].iter().position(|&(lo, hi, _)| r.size > lo && r.size <= hi);
        b.map(|b| [b, all])
    };
    let (mut flows, mut finished) = (vec![0u64; bs.len()], vec![0u64; bs.len()]);
    let mut sums = vec![[select::Sum::default(); 2]; bs.len()];
    records.for_each_chunk(|chunk| {
        for r in chunk.iter().filter(|r| r.start >= warmup) {
            let metrics = r.fct().map(|f| [f.micros(), r.slowdown().expect("finished")]);
            for b in rows(r).into_iter().flatten() {
                flows[b] += 1;
                if let Some(m) = metrics {
                    finished[b] += 1;
                    sums[b][0].add(m[0]);
                    sums[b][1].add(m[1]);
                }
            }
        }
    })?;
    // Targets (bucket, metric, quantile), numbered in that order.
    let mut sel = select::Selector::new();
    for &n in &finished {
        for _metric in 0..2 {
            for q in QUANTILES {
                sel.quantile(q, n);
            }
        }
    }
    while sel.pending() {
        records.for_each_chunk(|chunk| {
            for r in chunk.iter().filter(|r| r.start >= warmup) {
                let Some(fct) = r.fct() else { continue };
                let metrics = [fct.micros(), r.slowdown().expect("finished")];
                for b in rows(r).into_iter().flatten() {
                    for (m, &x) in metrics.iter().enumerate() {
                        for q in 0..QUANTILES.len() {
                            sel.observe((b * 2 + m) * QUANTILES.len() + q, x);
                        }
                    }
                }
            }
        })?;
        sel.end_pass();
    }
    let pct = |b: usize, m: usize, q: usize| sel.result((b * 2 + m) * QUANTILES.len() + q);
    Ok(bs
        .into_iter()
        .enumerate()
        .map(|(b, (_, _, name))| BucketStats {
            bucket: name,
            flows: flows[b] as usize,
            unfinished: (flows[b] - finished[b]) as usize,
            fct_mean_us: sums[b][0].mean(finished[b]),
            fct_p50_us: pct(b, 0, 0),
            fct_p99_us: pct(b, 0, 1),
            fct_p999_us: pct(b, 0, 2),
            slowdown_mean: sums[b][1].mean(finished[b]),
            slowdown_p50: pct(b, 1, 0),
            slowdown_p99: pct(b, 1, 1),
            slowdown_p999: pct(b, 1, 2),
        })
        .collect())
}

/// pFabric's deadline metrics (§5.4.2): application throughput — the fraction of flows with a deadline that
/// met it (an unfinished flow has missed it) — and the mean slowdown of the flows without one.
#[derive(Clone, Debug, Serialize)]
pub struct DeadlineStats {
    pub flows: usize,
    pub met: usize,
    pub application_throughput: f64,
    pub other_flows: usize,
    pub other_slowdown_mean: f64,
}

/// Deadline metrics over flows starting at or after `warmup`; None when no flow has a deadline.
pub fn deadline_stats(records: &FlowRecords, warmup: Time) -> io::Result<Option<DeadlineStats>> {
    let (mut flows, mut met, mut other_flows, mut other_finished) = (0, 0, 0, 0u64);
    let mut other = select::Sum::default();
    records.for_each_chunk(|chunk| {
        for r in chunk.iter().filter(|r| r.start >= warmup) {
            match r.met_deadline() {
                Some(m) => {
                    flows += 1;
                    met += m as usize;
                }
                None => {
                    other_flows += 1;
                    if let Some(s) = r.slowdown() {
                        other_finished += 1;
                        other.add(s);
                    }
                }
            }
        }
    })?;
    Ok((flows > 0).then(|| DeadlineStats {
        flows,
        met,
        application_throughput: met as f64 / flows as f64,
        other_flows,
        other_slowdown_mean: other.mean(other_finished),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn nearest_rank() {
        let v: Vec<f64> = (1..=100).map(|x| x as f64).collect();
        assert_eq!(percentile(&v, 0.5), 50.0);
        assert_eq!(percentile(&v, 0.99), 99.0);
        assert_eq!(percentile(&v, 0.999), 100.0);
        assert_eq!(percentile(&[3.0], 0.99), 3.0);
    }

    /// The streamed summary (counts, compensated means, radix-selected percentiles, from a store that spilled
    /// most records to disk) against sorting each bucket's values, as the summary was first computed.
    #[test]
    fn streamed_buckets_match_sorting() {
        use crate::traffic::jobs::Role;
        use rand::{Rng, SeedableRng};
        let mut rng = rand_pcg::Pcg64::seed_from_u64(3);
        let mut store = FlowRecords::default();
        store.set_spill_at(100);
        let mut recs = vec![];
        for id in 0..5000u64 {
            let size = [0u64, 500, 1000, 1001, 80_000, 3_000_000][rng.gen_range(0..6)];
            let start = Time(rng.gen_range(0..1_000_000));
            let r = FlowRecord {
                id,
                src: NodeId(0),
                dst: NodeId(1),
                size,
                start,
                end: None,
                ideal: Time(rng.gen_range(1_000..9_000)),
                deadline: None,
                retransmits: 0,
                timeouts: 0,
                role: Role::Flow,
                path: PathId::NONE,
            };
            store.push(r.clone());
            recs.push(r);
        }
        for r in recs.iter_mut() {
            if rng.gen_bool(0.05) {
                continue; // unfinished
            }
            let end = r.start + Time(rng.gen_range(1_000..5_000_000));
            store.received(r.id, end, 0);
            store.closed(r.id, 0, 0);
            r.end = Some(end);
        }
        assert!(store.spilled() > 4000);
        let warmup = Time(100_000);
        let got = summarize(&store, &[1000, 100_000], warmup).unwrap();
        let names: Vec<&str> = got.iter().map(|b| b.bucket.as_str()).collect();
        assert_eq!(names, ["(0,1KB]", "(1KB,100KB]", "(100KB,inf)", "all"]);
        for (b, (lo, hi)) in got.iter().zip([(0, 1000), (1000, 100_000), (100_000, u64::MAX), (0, u64::MAX)]) {
            let sel: Vec<&FlowRecord> =
                recs.iter().filter(|r| r.start >= warmup && r.size > lo && r.size <= hi).collect();
            let mut fct: Vec<f64> = sel.iter().filter_map(|r| r.fct()).map(|t| t.micros()).collect();
            let mut sd: Vec<f64> = sel.iter().filter_map(|r| r.slowdown()).collect();
            fct.sort_by(f64::total_cmp);
            sd.sort_by(f64::total_cmp);
            assert_eq!((b.flows, b.unfinished), (sel.len(), sel.len() - fct.len()), "{}", b.bucket);
            assert_eq!(
                [b.fct_p50_us, b.fct_p99_us, b.fct_p999_us, b.slowdown_p50, b.slowdown_p99, b.slowdown_p999],
                [0.5, 0.99, 0.999, 0.5, 0.99, 0.999]
                    .iter()
                    .enumerate()
                    .map(|(i, &q)| percentile(if i < 3 { &fct } else { &sd }, q))
                    .collect::<Vec<_>>()
                    .as_slice(),
                "{}",
                b.bucket
            );
            let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
            assert!((b.fct_mean_us / mean(&fct) - 1.0).abs() < 1e-12, "{}", b.bucket);
            assert!((b.slowdown_mean / mean(&sd) - 1.0).abs() < 1e-12, "{}", b.bucket);
        }
        // Size-0 flows are in no bucket, not even "all" (as (0, ...] leaves them out).
        let empty = recs.iter().filter(|r| r.start >= warmup && r.size == 0).count();
        assert!(empty > 0);
        assert_eq!(got[3].flows, recs.iter().filter(|r| r.start >= warmup).count() - empty);
    }
}
