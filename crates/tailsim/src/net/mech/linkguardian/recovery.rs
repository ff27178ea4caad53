//! How long a loss takes to repair (Fig. 5.10): from the receiver finding a number missing to the first copy
//! of its resend arriving there, as a histogram in 100 ns bins.

use super::seq::Seq;
use crate::units::Time;

/// Bins of the histogram, 100 ns wide; the last also takes everything longer.
pub const BINS: usize = 200;
const BIN: u64 = 100_000; // ps
const NONE: u64 = u64::MAX;

/// When each 16-bit number was found missing (allocated once per link: 512 KB), and the delays so far.
pub(super) struct Recovery {
    missed_at: Vec<u64>,
    pub hist: Vec<u64>,
    pub count: u64,
    pub sum: u64,
    pub min: u64,
    pub max: u64,
}

impl Default for Recovery {
    fn default() -> Recovery {
        Recovery { missed_at: vec![NONE; 1 << 16], hist: vec![0; BINS], count: 0, sum: 0, min: NONE, max: 0 }
    }
}

impl Recovery {
    /// `n` consecutive numbers from `first` found missing at `now`.
    pub fn missed(&mut self, first: Seq, n: u32, now: Time) {
        let mut s = first;
        for _ in 0..n {
            self.missed_at[s.n as usize] = now.0;
            s = s.next();
        }
    }

    /// A resend of `s` arrived at `now`: the first one repairs it (later copies, and numbers never reported
    /// missing, are ignored).
    pub fn arrived(&mut self, s: Seq, now: Time) {
        let at = std::mem::replace(&mut self.missed_at[s.n as usize], NONE);
        if at == NONE {
            return;
        }
        let d = now.0 - at;
        self.hist[((d / BIN) as usize).min(BINS - 1)] += 1;
        self.count += 1;
        self.sum += d;
        self.min = self.min.min(d);
        self.max = self.max.max(d);
    }

    pub fn summary(&self) -> serde_json::Value {
        let us = |ps: u64| ps as f64 / 1e6;
        serde_json::json!({
            "count": self.count,
            "min_us": if self.count > 0 { us(self.min) } else { 0.0 },
            "mean_us": if self.count > 0 { us(self.sum) / self.count as f64 } else { 0.0 },
            "max_us": us(self.max),
            "hist_100ns": self.hist,
        })
    }
}
