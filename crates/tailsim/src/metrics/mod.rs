//! Per-flow records, summaries by flow-size bucket, and the ideal (empty-fabric) completion time.

pub mod inbound;
pub mod jobs;
pub mod latency;
pub mod output;

use crate::net::Network;
use crate::units::{NodeId, Time};
use serde::Serialize;

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
}

impl FlowRecord {
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
    let n = size.div_ceil(fr.mss).max(1);
    let full = fr.mss + fr.header + fr.wire_overhead;
    let last = size - (n - 1) * fr.mss + fr.header + fr.wire_overhead;
    let path = net.path(src, dst);
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
        let (s_full, s_last) = (pt.rate.tx_time(full).0, pt.rate.tx_time(last).0);
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

/// Summaries for flows in (edges[i-1], edges[i]] and an "all" row; flows starting before `warmup` are left out.
pub fn summarize(records: &[FlowRecord], edges: &[u64], warmup: Time) -> Vec<BucketStats> {
    let mut bounds = vec![0u64];
    bounds.extend_from_slice(edges);
    let mut out = Vec::new();
    let all = (0u64, u64::MAX, "all".to_string());
    let mut buckets: Vec<(u64, u64, String)> = bounds
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
    buckets.push(all);
    for (lo, hi, name) in buckets {
        let sel: Vec<&FlowRecord> =
            records.iter().filter(|r| r.start >= warmup && r.size > lo && r.size <= hi).collect();
        let mut fct: Vec<f64> = sel.iter().filter_map(|r| r.fct()).map(|t| t.micros()).collect();
        let mut sd: Vec<f64> = sel.iter().filter_map(|r| r.slowdown()).collect();
        fct.sort_by(f64::total_cmp);
        sd.sort_by(f64::total_cmp);
        let mean = |v: &[f64]| if v.is_empty() { f64::NAN } else { v.iter().sum::<f64>() / v.len() as f64 };
        out.push(BucketStats {
            bucket: name,
            flows: sel.len(),
            unfinished: sel.len() - fct.len(),
            fct_mean_us: mean(&fct),
            fct_p50_us: percentile(&fct, 0.5),
            fct_p99_us: percentile(&fct, 0.99),
            fct_p999_us: percentile(&fct, 0.999),
            slowdown_mean: mean(&sd),
            slowdown_p50: percentile(&sd, 0.5),
            slowdown_p99: percentile(&sd, 0.99),
            slowdown_p999: percentile(&sd, 0.999),
        });
    }
    out
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
pub fn deadline_stats(records: &[FlowRecord], warmup: Time) -> Option<DeadlineStats> {
    let sel = || records.iter().filter(|r| r.start >= warmup);
    let flows = sel().filter(|r| r.deadline.is_some()).count();
    if flows == 0 {
        return None;
    }
    let met = sel().filter(|r| r.met_deadline() == Some(true)).count();
    let other: Vec<f64> = sel().filter(|r| r.deadline.is_none()).filter_map(|r| r.slowdown()).collect();
    Some(DeadlineStats {
        flows,
        met,
        application_throughput: met as f64 / flows as f64,
        other_flows: sel().filter(|r| r.deadline.is_none()).count(),
        other_slowdown_mean: if other.is_empty() { f64::NAN } else { other.iter().sum::<f64>() / other.len() as f64 },
    })
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
}
