//! Homa's priority levels, computed from the message-size distribution.
//!
//! A Homa receiver owns all priority decisions for its downlink (Montazeri,
//! PhD thesis, Stanford 2019, §3.5; SIGCOMM 2018 §3.4). It does two things
//! with the workload's size distribution, and both are pure functions of a
//! [`SizeCdf`], so they live here rather than in the transport:
//!
//! 1. **Split the levels** (§3.5.1). Unscheduled packets (the first
//!    RTTbytes of every message, sent blind) get the highest levels,
//!    scheduled packets the lowest. The receiver gives unscheduled traffic
//!    the share of the levels that unscheduled bytes have of all bytes,
//!    "rounded off to the nearest integer", and if either side would get no
//!    level it gets one ([`homa_level_split`]). A message of `s` bytes sends
//!    `min(s, RTTbytes)` unscheduled, so the share is
//!    `E[min(S, RTTbytes)] / E[S]`, exact via [`SizeCdf::limited_mean`].
//!    Example from the thesis: 80 % unscheduled with 8 levels gives 6
//!    unscheduled and 2 scheduled levels.
//!
//! 2. **Unscheduled cutoffs** (§3.5.2, Fig. 3.7; §4.3.3 calls the scheme
//!    "graduated"). Each unscheduled packet is tagged by the message's
//!    *remaining* size when it is sent, so a message's later packets can
//!    climb to more urgent levels, and the levels are chosen so that each
//!    carries about the same number of unscheduled bytes: from the CDF one
//!    builds `G(r)`, the unscheduled bytes sent while the remaining size is
//!    at most `r`, and cuts it into equal slices; the slice boundaries on the
//!    size axis are the cutoffs, smaller sizes more urgent.
//!
//! # What HomaSimulation did, and what we follow
//!
//! The thesis leaves the arithmetic open; the simulator that produced its
//! figures (HomaSimulation, `WorkloadEstimator::getRemainSizeCdfCbf` and
//! `PriorityResolver::setPrioCutOffs`, read for reference only) fixes it:
//!
//! - Messages are cut into packets of 1442 message bytes (1500 − 20 IP −
//!   8 UDP − 30 Homa header); packet `j` of a message of `s` bytes is sent at
//!   remaining size `s − 1442 j`.
//! - Each packet counts with its **bytes on the wire**: message bytes plus
//!   96 B of headers and framing (30 Homa + 8 UDP + 20 IP + 14 Ethernet +
//!   4 CRC + 8 preamble + 12 gap), at least 84 B (a minimum frame). That is
//!   why the thesis' one checkable cutoff comes out right: W1 with two
//!   unscheduled levels, "around 350 bytes" (Fig. 6.7), is 367 B this way
//!   and 608 B if only message bytes counted. [`HomaPriorityParams`] keeps
//!   both numbers (set them to 0 to balance message bytes).
//! - Cutoff `i` (of `N − 1`) is the smallest remaining size whose
//!   cumulative share reaches `i/N`; a size already used for the previous
//!   cutoff is skipped and the next size that occurs is taken, so when one
//!   size holds more than a slice, fewer than `N` levels are used. The last
//!   level has no upper bound (`u64::MAX`, the simulator's `UINT32_MAX`).
//!   We compare shares with a tolerance of `1e-9` of the total, so that
//!   rounding in the sums does not decide exact ties.
//!
//! Differences, on purpose:
//!
//! - The unscheduled bytes per message are `rtt_bytes` message bytes, as
//!   the thesis states them. HomaSimulation's `rttBytes = 10000` counts wire
//!   bytes: it sends 9328 message bytes unscheduled (1442 + 7886,
//!   `defaultReqBytes + defaultUnschedBytes`), so pass 9328 to match it; the
//!   thesis quotes RTTbytes = 9.7 KB.
//! - HomaSimulation also puts grant packets into the balance (as remaining
//!   size 0) and, with `boostTailBytesPrio`, the last RTTbytes of scheduled
//!   messages. Neither is in the thesis' description of the cutoffs, and
//!   with grants in, W5–W7 get their first cutoffs at 0–10 bytes. Those tail bytes
//!   still *use* the cutoffs in the transport; they just do not move them.
//! - The simulator does not compute the split: its per-workload
//!   configurations set 1, 3, 4, 4, 6, 7 and 7 scheduled levels for
//!   W1–W7. The thesis' rule gives 1, 2, 4, 6, 7, 7, 7 from the shipped
//!   CDFs (W1 7/1, W3 4/4 and W6, W7 1/7 as the thesis reports; for W4 it
//!   reports 4/4 although its ~30 % unscheduled bytes round to 2/6). Use
//!   [`homa_unscheduled_cutoffs`] with an explicit number of levels to
//!   reproduce a configuration.
//! - The simulator discretises W1's generalized-Pareto tail into 1000
//!   points up to `u = 0.999`; we integrate the tail exactly.

use crate::{SizeCdf, WorkloadError};

/// How unscheduled packets are given levels (thesis §4.3.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UnschedMode {
    /// "Graduated", Homa's scheme in the thesis simulations (HomaSimulation
    /// `STATIC_CBF_GRADUATED`): each packet by the message's remaining size
    /// when it is sent, so cutoffs bound *remaining* sizes.
    #[default]
    Graduated,
    /// "CBF uniform" (`STATIC_CBF_UNIFORM`, and the RAMCloud implementation):
    /// every unscheduled packet of a message at the level of its total size,
    /// so cutoffs bound message sizes.
    MessageSize,
}

/// Inputs of [`homa_priorities`]; [`HomaPriorityParams::new`] gives the
/// thesis' and HomaSimulation's values for everything but RTTbytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HomaPriorityParams {
    /// Message bytes each message sends unscheduled (at most; a shorter
    /// message is sent whole). Thesis: RTTbytes, 9.7 KB in its simulations.
    pub rtt_bytes: u64,
    /// Priority levels in all (8: IEEE 802.1Q).
    pub levels: usize,
    /// Message bytes per unscheduled packet: 1442.
    pub unsched_packet_bytes: u64,
    /// Bytes each packet adds on the wire in the balance: 96.
    pub packet_overhead_bytes: u64,
    /// Smallest packet on the wire in the balance: 84.
    pub min_packet_bytes: u64,
    pub mode: UnschedMode,
}

impl HomaPriorityParams {
    pub fn new(rtt_bytes: u64, levels: usize) -> HomaPriorityParams {
        HomaPriorityParams {
            rtt_bytes,
            levels,
            unsched_packet_bytes: 1442,
            packet_overhead_bytes: 96,
            min_packet_bytes: 84,
            mode: UnschedMode::Graduated,
        }
    }

    /// The wire bytes of a packet carrying `b` message bytes.
    fn wire(&self, b: u64) -> u64 {
        (b + self.packet_overhead_bytes).max(self.min_packet_bytes)
    }

    fn check(&self, origin: &str) -> Result<(), WorkloadError> {
        let bad = |msg: String| Err(WorkloadError::whole(origin, msg));
        if self.levels < 2 {
            return bad(format!(
                "Homa needs at least 2 priority levels (one unscheduled, one scheduled), not {}",
                self.levels
            ));
        }
        if self.rtt_bytes == 0 || self.unsched_packet_bytes == 0 {
            return bad("rtt_bytes and unsched_packet_bytes must be at least 1".into());
        }
        Ok(())
    }
}

/// A receiver's priority plan (see the module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct HomaPriorities {
    /// Levels for unscheduled packets: the highest ones.
    pub unscheduled_levels: usize,
    /// Levels for scheduled packets: the lowest ones; also Homa's degree of
    /// overcommitment (messages granted at once).
    pub scheduled_levels: usize,
    /// Upper bounds of the unscheduled levels, most urgent first: a packet
    /// sent at remaining size `r` (or, in [`UnschedMode::MessageSize`], of a
    /// message of `r` bytes) uses the first level whose bound is `>= r`. The
    /// last bound is `u64::MAX`. May be shorter than `unscheduled_levels`
    /// when one size holds more than a level's share.
    pub cutoffs: Vec<u64>,
    /// `E[min(S, rtt_bytes)] / E[S]`: the share of message bytes sent
    /// unscheduled.
    pub unscheduled_byte_share: f64,
}

impl HomaPriorities {
    /// The unscheduled level for remaining (or message) size `size`:
    /// 0 is the most urgent, i.e. the highest priority overall.
    pub fn unscheduled_level(&self, size: u64) -> usize {
        self.cutoffs.partition_point(|&c| c < size).min(self.cutoffs.len() - 1)
    }
}

/// The thesis' split (§3.5.1) of `levels` between unscheduled and
/// scheduled packets for an unscheduled byte share `share`:
/// `(unscheduled, scheduled)`, with `unscheduled = round(share × levels)`
/// (halves up) kept within `1..=levels − 1`. `levels` must be at least 2.
pub fn homa_level_split(share: f64, levels: usize) -> (usize, usize) {
    assert!(levels >= 2, "Homa needs at least 2 priority levels");
    let unscheduled = ((share.clamp(0.0, 1.0) * levels as f64).round() as usize).clamp(1, levels - 1);
    (unscheduled, levels - unscheduled)
}

/// The priority plan with the thesis' and HomaSimulation's defaults
/// ([`HomaPriorityParams::new`]): graduated cutoffs, 1442 B unscheduled
/// packets balanced by their wire bytes, split by the thesis' rule.
pub fn homa_priority_split(cdf: &SizeCdf, rtt_bytes: u64, levels: usize) -> Result<HomaPriorities, WorkloadError> {
    homa_priorities(cdf, &HomaPriorityParams::new(rtt_bytes, levels))
}

/// The split of the levels ([`homa_level_split`] of the exact unscheduled
/// byte share) and the unscheduled cutoffs for it.
pub fn homa_priorities(cdf: &SizeCdf, params: &HomaPriorityParams) -> Result<HomaPriorities, WorkloadError> {
    params.check(cdf.origin())?;
    let share = cdf.limited_mean(params.rtt_bytes) / cdf.mean_bytes();
    let (unscheduled_levels, scheduled_levels) = homa_level_split(share, params.levels);
    let cutoffs = homa_unscheduled_cutoffs(cdf, params, unscheduled_levels)?;
    Ok(HomaPriorities { unscheduled_levels, scheduled_levels, cutoffs, unscheduled_byte_share: share })
}

/// The cutoffs for a given number of unscheduled levels (`params.levels`
/// is not used), e.g. to reproduce a HomaSimulation configuration that
/// fixes the split. See [`HomaPriorities::cutoffs`].
pub fn homa_unscheduled_cutoffs(
    cdf: &SizeCdf,
    params: &HomaPriorityParams,
    unscheduled_levels: usize,
) -> Result<Vec<u64>, WorkloadError> {
    params.check(cdf.origin())?;
    let balance = Balance { cdf, params };
    let total = balance.g(u64::MAX);
    let tolerance = 1e-9 * total;
    let max = cdf.max_bytes();
    let mut cutoffs: Vec<u64> = Vec::new();
    for i in 1..unscheduled_levels.max(1) {
        let target = total * i as f64 / unscheduled_levels as f64;
        let reached = |r: u64| balance.g(r) >= target - tolerance;
        let cutoff = match cutoffs.last() {
            // Already past the target: the next size that carries bytes.
            Some(&prev) if reached(prev) => {
                let at_prev = balance.g(prev);
                if at_prev >= total - tolerance {
                    break;
                }
                first_true(prev + 1, max, |r| balance.g(r) > at_prev + tolerance)
            }
            Some(&prev) => first_true(prev + 1, max, reached),
            None => first_true(1, max, reached),
        };
        cutoffs.push(cutoff);
    }
    cutoffs.push(u64::MAX);
    Ok(cutoffs)
}

/// The smallest `r` in `[lo, hi]` with `pred(r)`, for a monotone `pred`
/// that holds at `hi`.
fn first_true(mut lo: u64, mut hi: u64, pred: impl Fn(u64) -> bool) -> u64 {
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if pred(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    hi
}

/// `G(r)`: the unscheduled wire bytes per message sent at remaining size
/// (or from messages of size) at most `r`, in exact closed form.
///
/// Packet `j` (of `ceil(U/P)`, `U` = rtt_bytes, `P` = packet bytes) exists
/// when `S > jP` and carries `b = min(S, U) − jP`, at most `P`: `S − jP` up
/// to `S = e = min((j+1)P, U)`, then the constant `e − jP`. Its weight
/// `max(b + h, m)` is therefore linear in `S` on three intervals, and
/// `E[(c0 + c1 S) 1{lo < S <= hi}]` needs only `P(S <= t)` and
/// `E[S; S <= t]` at the ends ([`SizeCdf::up_to`]), which are exact for
/// every rule, rounding and tail included. The packet counts when its
/// remaining size `S − jP` (graduated) or `S` is at most `r`.
struct Balance<'a> {
    cdf: &'a SizeCdf,
    params: &'a HomaPriorityParams,
}

impl Balance<'_> {
    /// `E[(c0 + c1 S) 1{lo < S <= hi}]`.
    fn range(&self, lo: u64, hi: u64, c0: f64, c1: f64) -> f64 {
        if hi <= lo {
            return 0.0;
        }
        let ((f_lo, m_lo), (f_hi, m_hi)) = (self.cdf.up_to(lo), self.cdf.up_to(hi));
        c0 * (f_hi - f_lo) + c1 * (m_hi - m_lo)
    }

    fn g(&self, r: u64) -> f64 {
        let p = self.params;
        let (u, size, h) = (p.rtt_bytes, p.unsched_packet_bytes, p.packet_overhead_bytes);
        // Below `theta` message bytes a packet weighs the minimum.
        let theta = p.min_packet_bytes.saturating_sub(h);
        let mut sum = 0.0;
        for j in 0..u.div_ceil(size) {
            let start = j * size;
            let end = ((j + 1) * size).min(u);
            let shift = if p.mode == UnschedMode::Graduated { start } else { 0 };
            let top = r.saturating_add(shift);
            let kink = (start + theta).min(end);
            sum += self.range(start, kink.min(top), p.min_packet_bytes as f64, 0.0);
            sum += self.range(kink, end.min(top), h as f64 - start as f64, 1.0);
            sum += self.range(end, top, p.wire(end - start) as f64, 0.0);
        }
        sum
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CdfOptions, Interp};
    use std::collections::BTreeMap;

    fn step(text: &str) -> SizeCdf {
        SizeCdf::parse(text, "hand.txt", CdfOptions { interp: Some(Interp::Step), unit_bytes: Some(1) }).unwrap()
    }

    fn params(rtt: u64, packet: u64, overhead: u64, min: u64, mode: UnschedMode) -> HomaPriorityParams {
        HomaPriorityParams {
            rtt_bytes: rtt,
            levels: 8,
            unsched_packet_bytes: packet,
            packet_overhead_bytes: overhead,
            min_packet_bytes: min,
            mode,
        }
    }

    /// 50 % of messages are 100 B, 30 % 1000 B, 20 % 5000 B; RTTbytes 2000 B
    /// in packets of 1000 B; message bytes only (no overhead).
    ///
    /// Unscheduled bytes: min(S, 2000) = 100, 1000, 2000, mean .5*100 +
    /// .3*1000 + .2*2000 = 750 of E[S] = 50 + 300 + 1000 = 1350: share 0.5556, and
    /// round(0.5556 * 8) = round(4.44) = 4 unscheduled, 4 scheduled levels.
    ///
    /// Graduated: the 100 B message sends 100 B at remaining 100 (weight
    /// .5*100 = 50); the 1000 B one 1000 B at 1000 (300); the 5000 B one
    /// 1000 B at remaining 5000 and 1000 B at remaining 4000 (200 each).
    /// G = 50 (r=100), 350 (1000), 550 (4000), 750 (5000). Slices of 750/4:
    /// 187.5 is reached at 1000, 375 at 4000, 562.5 at 5000.
    /// With 8 levels (slices of 93.75): 93.75 at 1000; 187.5 at 1000 again,
    /// so the next size, 4000; 281.25 at 4000 again: 5000; 375: no size
    /// left. Four levels used of eight.
    ///
    /// By message size: 50 at 100, 300 at 1000, 400 at 5000; G = 50, 350,
    /// 750. 187.5 at 1000, 375 at 5000, 562.5 at 5000 again: none left.
    #[test]
    fn hand_made_cutoffs() {
        let cdf = step("100 0.5\n1000 0.8\n5000 1\n");
        let grad = params(2000, 1000, 0, 0, UnschedMode::Graduated);
        let plan = homa_priorities(&cdf, &grad).unwrap();
        assert!((plan.unscheduled_byte_share - 750.0 / 1350.0).abs() < 1e-12);
        assert_eq!((plan.unscheduled_levels, plan.scheduled_levels), (4, 4));
        assert_eq!(plan.cutoffs, [1000, 4000, 5000, u64::MAX]);
        assert_eq!(homa_unscheduled_cutoffs(&cdf, &grad, 8).unwrap(), [1000, 4000, 5000, u64::MAX]);
        let uniform = params(2000, 1000, 0, 0, UnschedMode::MessageSize);
        assert_eq!(homa_priorities(&cdf, &uniform).unwrap().cutoffs, [1000, 5000, u64::MAX]);
        assert_eq!(homa_unscheduled_cutoffs(&cdf, &grad, 1).unwrap(), [u64::MAX]);
        // Levels for sizes: up to 1000 -> 0, (1000, 4000] -> 1, (4000, 5000] -> 2, above -> 3.
        let levels: Vec<usize> = [1, 1000, 1001, 4000, 4500, 5000, 5001].map(|r| plan.unscheduled_level(r)).into();
        assert_eq!(levels, [0, 0, 1, 1, 2, 2, 3]);
    }

    /// Why wire bytes matter: 70 % of messages are 10 B, 20 % 400 B, 10 %
    /// 1000 B, all single-packet; two unscheduled levels (one slice boundary
    /// at half of G's total).
    /// - Message bytes: 7, 80, 100, total 187; half (93.5) is reached only at
    ///   1000: cutoffs [1000, MAX], every message on the top level.
    /// - Wire bytes (+96): .7*106 = 74.2, .2*496 = 99.2, .1*1096 = 109.6;
    ///   G = 74.2, 173.4, 283.0, half 141.5 reached at 400: [400, MAX].
    /// - Minimum packet 500 B, no overhead: .7*500 = 350, .2*500 = 100,
    ///   .1*1000 = 100; G = 350, 450, 550, half 275 reached at 10: [10, MAX].
    #[test]
    fn packet_overhead_moves_cutoffs() {
        let cdf = step("10 0.7\n400 0.9\n1000 1\n");
        let cut = |overhead, min| {
            homa_unscheduled_cutoffs(&cdf, &params(10_000, 1442, overhead, min, UnschedMode::Graduated), 2).unwrap()
        };
        assert_eq!(cut(0, 0), [1000, u64::MAX]);
        assert_eq!(cut(96, 84), [400, u64::MAX]);
        assert_eq!(cut(0, 500), [10, u64::MAX]);
    }

    #[test]
    fn level_split_follows_the_thesis_rule() {
        // The thesis' example: 80 % unscheduled bytes -> P1, P2 scheduled, P3..P8 unscheduled.
        assert_eq!(homa_level_split(0.8, 8), (6, 2));
        // Everything unscheduled would leave no scheduled level: one is kept, and vice versa.
        assert_eq!((homa_level_split(1.0, 8), homa_level_split(0.0, 8)), ((7, 1), (1, 7)));
        assert_eq!((homa_level_split(0.5625, 8), homa_level_split(0.5624, 8)), ((5, 3), (4, 4))); // 4.5 rounds up
        assert_eq!(homa_level_split(0.5, 2), (1, 1));
        // All messages shorter than RTTbytes: share 1, so 7 unscheduled + 1 scheduled.
        let short = step("100 0.5\n1000 0.9\n9000 1\n");
        let plan = homa_priority_split(&short, 9700, 8).unwrap();
        assert_eq!((plan.unscheduled_byte_share, plan.unscheduled_levels, plan.scheduled_levels), (1.0, 7, 1));
        // Dominated by large messages: 10 % are 1 MB, so the share is
        // (.9*1000 + .1*10000)/(.9*1000 + .1*1e6) = 1900/100900 = 1.9 %: 1 unscheduled + 7 scheduled.
        let large = step("1000 0.9\n1000000 1\n");
        let plan = homa_priority_split(&large, 10_000, 8).unwrap();
        assert!((plan.unscheduled_byte_share - 1900.0 / 100_900.0).abs() < 1e-12);
        assert_eq!((plan.unscheduled_levels, plan.scheduled_levels, plan.cutoffs.clone()), (1, 7, vec![u64::MAX]));
        assert_eq!(plan.unscheduled_level(5), 0);
        // Bad parameters are errors, not panics.
        for (levels, rtt) in [(1, 10_000), (8, 0)] {
            assert!(homa_priority_split(&large, rtt, levels).is_err());
        }
    }

    /// HomaSimulation's procedure on the distribution as a list of atoms:
    /// packetize every size, add the weight of each packet at its remaining
    /// size, normalise the cumulative sums, and scan for `i/N` skipping
    /// repeated sizes (`PriorityResolver::setPrioCutOffs`).
    fn brute_shares(atoms: &[(u64, f64)], p: &HomaPriorityParams) -> Vec<(u64, f64)> {
        let mut by_size: BTreeMap<u64, f64> = BTreeMap::new();
        for &(s, prob) in atoms {
            let unsched = s.min(p.rtt_bytes);
            let mut j = 0;
            while j * p.unsched_packet_bytes < unsched {
                let b = (unsched - j * p.unsched_packet_bytes).min(p.unsched_packet_bytes);
                let at = if p.mode == UnschedMode::Graduated { s - j * p.unsched_packet_bytes } else { s };
                *by_size.entry(at).or_default() += prob * p.wire(b) as f64;
                j += 1;
            }
        }
        let total: f64 = by_size.values().sum();
        let mut cum = 0.0;
        by_size
            .into_iter()
            .map(|(s, w)| {
                cum += w;
                (s, cum / total)
            })
            .collect()
    }

    fn scan(shares: &[(u64, f64)], n: usize) -> Vec<u64> {
        let (mut out, mut i) = (Vec::new(), 0);
        for k in 1..n {
            let target = k as f64 / n as f64;
            while i < shares.len() {
                if Some(&shares[i].0) == out.last() {
                    i += 1;
                    continue;
                }
                if shares[i].1 >= target - 1e-9 {
                    out.push(shares[i].0);
                    break;
                }
                i += 1;
            }
        }
        out.push(u64::MAX);
        out
    }

    fn all_params() -> Vec<HomaPriorityParams> {
        let mut out = Vec::new();
        for mode in [UnschedMode::Graduated, UnschedMode::MessageSize] {
            for (overhead, min) in [(0, 0), (96, 84), (0, 500), (40, 300)] {
                for (rtt, packet) in [(9328, 1442), (9700, 1442), (2000, 700)] {
                    out.push(params(rtt, packet, overhead, min, mode));
                }
            }
        }
        out
    }

    /// The closed form against the brute force on every step-rule Homa
    /// table (thesis W2–W7), every parameter set above and 2–7 levels.
    #[test]
    fn closed_form_matches_brute_force_on_step_tables() {
        for name in
            ["homa-thesis-w2", "homa-thesis-w3", "homa-thesis-w4", "homa-thesis-w5", "homa-thesis-w6", "homa-thesis-w7"]
        {
            let cdf = SizeCdf::builtin(name).unwrap();
            let atoms: Vec<(u64, f64)> = cdf.pieces().map(|(p, x, _)| (x as u64 * cdf.unit_bytes(), p)).collect();
            for p in all_params() {
                let shares = brute_shares(&atoms, &p);
                for n in [2, 3, 4, 6, 7] {
                    let ours = homa_unscheduled_cutoffs(&cdf, &p, n).unwrap();
                    assert_eq!(ours, scan(&shares, n), "{name} {p:?} {n} levels");
                }
            }
        }
    }

    /// The same for a linear table in bytes (every whole size from 7 to 3000
    /// is an atom; P(S = s) = P(s - 1 < V <= s) by hand from the segments)
    /// and for W1 with its tail (atoms 1..=40000 from the tail's survival
    /// function, the rest lumped at 10^6: every cutoff is far below, so
    /// where the lump sits does not matter beyond its weight).
    #[test]
    fn closed_form_matches_brute_force_with_segments_and_tail() {
        let opts = CdfOptions { interp: Some(Interp::Linear), unit_bytes: Some(1) };
        let linear = SizeCdf::parse("6 0\n50 0.5\n3000 1\n", "lin.txt", opts).unwrap();
        let mut atoms = Vec::new();
        for s in 7..=3000u64 {
            let v = |x: f64| if x <= 50.0 { 0.5 * (x - 6.0) / 44.0 } else { 0.5 + 0.5 * (x - 50.0) / 2950.0 };
            atoms.push((s, v(s as f64) - v(s as f64 - 1.0)));
        }
        let w1 = SizeCdf::builtin("homa-thesis-w1").unwrap();
        let t = *w1.tail().unwrap();
        let mut w1_atoms: Vec<(u64, f64)> = w1.pieces().map(|(p, x, _)| (x as u64, p)).collect();
        let last = 40_000;
        for s in 15..=last {
            let mass = t.survival(s - 1) - t.survival(s);
            w1_atoms.push((s, (1.0 - t.from_cdf) * mass));
        }
        w1_atoms.push((1_000_000, (1.0 - t.from_cdf) * t.survival(last)));
        for p in all_params() {
            let (shares, w1_shares) = (brute_shares(&atoms, &p), brute_shares(&w1_atoms, &p));
            for n in [2, 4, 7] {
                let ours = homa_unscheduled_cutoffs(&linear, &p, n).unwrap();
                assert_eq!(ours, scan(&shares, n), "linear {p:?} {n}");
                let ours = homa_unscheduled_cutoffs(&w1, &p, n).unwrap();
                assert!(ours[ours.len() - 2] < 20_000, "{ours:?}");
                assert_eq!(ours, scan(&w1_shares, n), "W1 {p:?} {n}");
            }
        }
    }
}
