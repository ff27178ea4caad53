//! QJUMP's epoch and bound calculator (Grosvenor, UCAM-CL-TR-943, §3.2 and §4.1; docs/qjump.md).
//!
//! Pure functions of the topology's parameters, used by the regulator (`net::regulator`), by
//! `tailsim qjump` and by the Python package. Sizes are bytes *as charged by the regulator* (a packet's
//! buffer size plus `packet.wire_overhead`): the thesis folds the inter-frame gap into P (§3.2, assumption 7).

use crate::net::queue::CLASSES;
use crate::units::{BitsPerSec, Time};

/// How a level's throughput factor f becomes a bucket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Budget {
    /// The thesis (§4.1, Eq. 4.3): the level behaves as N' = N/f senders, so it gets its own epoch
    /// e_i = factor·(N/f_i)·P/r + ε and a budget of P per epoch.
    PerLevelEpoch,
    /// The authors' ns-2 code: one network epoch for every level and a budget of f_i·P per epoch.
    CommonEpoch,
}

/// Inputs of the calculator.
#[derive(Clone, Debug)]
pub struct QjumpParams {
    /// N: hosts that may send to one destination (the datacenter reduction, §3.2.5).
    pub hosts: u64,
    /// r_edge: the edge (host) link rate.
    pub edge_rate: BitsPerSec,
    /// P_max in bytes, inter-frame gap included if the regulator charges it.
    pub max_packet: u64,
    /// ε: the switch's intrinsic processing delay, counted once (Eq. 3.3).
    pub switch_delay: Time,
    /// Multiplies N·P/r: 1 is the thesis's Eq. 3.13 (default); 2 is the network epoch quoted from the
    /// NSDI'15 paper (2·n·P/R + ε), see docs/qjump.md.
    pub epoch_factor: u32,
    /// An explicit network epoch instead of the formula (the ns-2 scripts used 1.05 ms).
    pub epoch: Option<Time>,
    /// Throughput factor per class, class 0 (highest priority, the thesis's level 7) first.
    pub f: [f64; CLASSES],
    pub budget: Budget,
}

impl QjumpParams {
    /// From command-line or Python values, with units as in experiment files ("10Gbps", "9KB", "588ns");
    /// errors name the argument.
    #[allow(clippy::too_many_arguments)]
    pub fn parse(
        hosts: u64,
        rate: &str,
        packet: &str,
        eps: &str,
        f: &[f64],
        epoch_factor: u32,
        epoch: Option<&str>,
        budget: &str,
    ) -> Result<QjumpParams, String> {
        use crate::config::units::{parse_duration, parse_rate, parse_size};
        if f.is_empty() || f.len() > CLASSES || f.iter().any(|x| !(x.is_finite() && *x > 0.0)) {
            return Err(format!("f: expected 1–8 positive throughput factors, found {f:?}"));
        }
        if hosts == 0 || epoch_factor == 0 {
            return Err("hosts and epoch_factor must be at least 1".into());
        }
        let mut fa = [1.0; CLASSES];
        fa[..f.len()].copy_from_slice(f);
        let q = QjumpParams {
            hosts,
            edge_rate: parse_rate(rate).map_err(|e| format!("rate: {e}"))?,
            max_packet: parse_size(packet).map_err(|e| format!("packet: {e}"))?,
            switch_delay: parse_duration(eps).map_err(|e| format!("eps: {e}"))?,
            epoch_factor,
            epoch: epoch.map(|e| parse_duration(e).map_err(|m| format!("epoch: {m}"))).transpose()?,
            f: fa,
            budget: match budget {
                "per-level-epoch" => Budget::PerLevelEpoch,
                "common-epoch" => Budget::CommonEpoch,
                o => return Err(format!("budget: expected \"per-level-epoch\" or \"common-epoch\", found \"{o}\"")),
            },
        };
        if q.max_packet == 0 || q.epoch == Some(Time::ZERO) {
            return Err("packet and epoch must be positive".into());
        }
        Ok(q)
    }
}

/// One level's regulator setting and guarantees.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Level {
    pub class: u8,
    /// The thesis's level number: 7 − class (f_7 = 1 is the highest priority).
    pub level: u8,
    pub f: f64,
    /// The level's bucket: `budget` bytes per `epoch`.
    pub epoch: Time,
    pub budget: u64,
    /// Average rate the bucket admits per host, budget/epoch (Eq. 3.14 scaled by f), bits/s.
    pub rate_bps: f64,
    /// Worst-case latency at the fan-in switch, min(N, N/f)·P/r + ε (Eq. 3.3 with N' = N/f senders). A
    /// guarantee only for f ≤ 1; above it the thesis assumes, and does not enforce, that at most N/f hosts
    /// send at once (§4.1).
    pub latency: Time,
    pub guaranteed: bool,
}

/// Worst-case latency through one switch when `n` senders each send one `p`-byte packet at once to one
/// output of rate `r`: n·P/r + ε (Eq. 3.3), last bit in to last bit out.
pub fn switch_latency(n: u64, p: u64, r: BitsPerSec, eps: Time) -> Time {
    r.tx_time(n * p) + eps
}

/// The network epoch: factor·N·P/r + ε (Eq. 3.13), or the explicit epoch.
pub fn network_epoch(q: &QjumpParams) -> Time {
    q.epoch.unwrap_or_else(|| q.edge_rate.tx_time(q.epoch_factor as u64 * q.hosts * q.max_packet) + q.switch_delay)
}

/// A duration divided by a throughput factor, rounded up to a picosecond (exact when f = 1).
fn div_f(t: Time, f: f64) -> Time {
    if f == 1.0 {
        t
    } else {
        Time((t.0 as f64 / f).ceil() as u64)
    }
}

/// Every class's bucket and bound.
pub fn levels(q: &QjumpParams) -> [Level; CLASSES] {
    let net = network_epoch(q);
    std::array::from_fn(|c| {
        let f = q.f[c];
        let (epoch, budget) = match q.budget {
            // The formula's N·P/r part shrinks by f; ε does not (an explicit epoch is scaled whole).
            Budget::PerLevelEpoch => match q.epoch {
                Some(e) => (div_f(e, f), q.max_packet),
                None => (div_f(net - q.switch_delay, f) + q.switch_delay, q.max_packet),
            },
            Budget::CommonEpoch => (net, (q.max_packet as f64 * f).floor() as u64),
        };
        let senders = div_f(q.edge_rate.tx_time(q.hosts * q.max_packet), f.max(1.0));
        Level {
            class: c as u8,
            level: (CLASSES - 1 - c) as u8,
            f,
            epoch,
            budget,
            rate_bps: budget as f64 * 8.0 / epoch.secs(),
            latency: senders + q.switch_delay,
            guaranteed: f <= 1.0,
        }
    })
}

/// A plain-text table of the epoch and the levels (what `tailsim qjump` prints).
pub fn report(q: &QjumpParams) -> String {
    let mut s = format!(
        "QJUMP: N = {} hosts, r = {}, P = {} B, ε = {}, network epoch = {}{}\n",
        q.hosts,
        q.edge_rate,
        q.max_packet,
        q.switch_delay,
        network_epoch(q),
        match (q.epoch, q.epoch_factor) {
            (Some(_), _) => " (given)".to_string(),
            (None, 1) => " (N·P/r + ε, Eq. 3.13)".to_string(),
            (None, k) => format!(" ({k}·N·P/r + ε)"),
        }
    );
    s += &format!(
        "{:>5} {:>5} {:>8} {:>12} {:>10} {:>14} {:>14}  {}\n",
        "class", "level", "f", "epoch", "budget B", "rate", "latency", ""
    );
    for l in levels(q) {
        s += &format!(
            "{:>5} {:>5} {:>8} {:>12} {:>10} {:>9.3} Mb/s {:>14}  {}\n",
            l.class,
            l.level,
            l.f,
            l.epoch.to_string(),
            l.budget,
            l.rate_bps / 1e6,
            l.latency.to_string(),
            if l.guaranteed { "guaranteed" } else { "assumed (f > 1)" }
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arista_validation_numbers() {
        // §3.4.6: 1518 B, 10 Gbps, ε = 588 ns.
        let r = BitsPerSec::gbps(10);
        assert_eq!(switch_latency(1, 1518, r, Time::ns(588)), Time::ps(1_802_400));
        assert_eq!(switch_latency(10, 1518, r, Time::ns(588)), Time::ps(12_732_000));
    }
}
