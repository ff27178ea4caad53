//! CUBIC congestion control (RFC 9438), the window growth of Linux TCP and of the SQR and LinkGuardian
//! testbeds (Joshi's thesis, §4.4.1 and §5.5).
//!
//! Only the window changes: loss detection, recovery and timeouts are NewReno's/SACK's (mod.rs). After a
//! congestion event at window W_max the window is cut to β·W_max, and in congestion avoidance it follows
//!
//! ```text
//!     W_cubic(t) = C·(t − K)³ + W_max,    K = ∛((W_max − cwnd_epoch) / C)        (RFC 9438 eqs. 1–2)
//! ```
//!
//! with t the time since congestion avoidance began, in seconds, and windows in segments: concave up to
//! W_max, flat around it, then convex while probing for more. Per ACK the window moves towards
//! W_cubic(t + RTT), by at most half of itself per RTT (§4.4), and never below the window a Reno flow would
//! have (the Reno-friendly estimate, §4.3). Fast convergence (§4.7) releases bandwidth to newer flows: a
//! congestion event below the previous W_max remembers a lower one.
//!
//! Not modelled (docs/transport-tcp.md): HyStart (Linux leaves slow start on delay increase), the
//! `tcp_cubic` module's integer arithmetic and its 1/1024 s clock, and ACK-rate-based pacing.

use crate::units::Time;

/// CUBIC's two constants (RFC 9438 §4.1: C = 0.4, β = 0.7).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CubicParams {
    /// Window growth constant, segments / s³.
    pub c: f64,
    /// Multiplicative decrease factor.
    pub beta: f64,
}

impl Default for CubicParams {
    fn default() -> Self {
        CubicParams { c: 0.4, beta: 0.7 }
    }
}

/// One flow's CUBIC state.
#[derive(Clone, Copy, Debug, Default)]
pub struct Cubic {
    /// The window at the last congestion event, after fast convergence (segments).
    w_max: f64,
    /// The window at the last congestion event, before fast convergence.
    w_last_max: f64,
    /// Start of the current congestion-avoidance epoch; None until its first ACK.
    epoch: Option<Time>,
    /// K of the current epoch, seconds.
    k: f64,
    /// The Reno-friendly estimate (segments).
    w_est: f64,
    /// The window at the start of the epoch (cwnd_prior of §4.3).
    cwnd_prior: f64,
}

impl Cubic {
    /// A congestion event (loss detected, an ECN echo, or a timeout) at window `cwnd`: remember W_max and
    /// return the reduced window β·cwnd (at least 2 segments), which becomes ssthresh, and cwnd except after
    /// a timeout, where the window restarts from one segment in slow start (RFC 5681) and CUBIC takes over at
    /// ssthresh with the W_max recorded here (RFC 9438 §4.8).
    pub fn on_congestion(&mut self, p: CubicParams, cwnd: f64) -> f64 {
        // §4.7: a flow whose window shrank since the last event releases more.
        self.w_max = if cwnd < self.w_last_max { cwnd * (1.0 + p.beta) / 2.0 } else { cwnd };
        self.w_last_max = cwnd;
        self.epoch = None;
        self.cwnd_prior = cwnd;
        (cwnd * p.beta).max(2.0)
    }

    /// W_cubic(t) for the current epoch, `t` seconds after it began.
    pub fn w_cubic(&self, p: CubicParams, t: f64) -> f64 {
        p.c * (t - self.k).powi(3) + self.w_max
    }

    /// Congestion avoidance: `acked` segments newly acknowledged at `now` with window `cwnd` and smoothed RTT
    /// `srtt` (seconds); returns the new window.
    pub fn on_ack(&mut self, p: CubicParams, cwnd: f64, acked: f64, now: Time, srtt: f64) -> f64 {
        let start = match self.epoch {
            Some(t) => t,
            None => {
                // The first ACK of the epoch (§4.2). Without an earlier congestion event (slow start ended at
                // ssthresh), the current window is W_max and growth starts on the plateau (K = 0).
                self.epoch = Some(now);
                if self.w_max < cwnd {
                    self.w_max = cwnd;
                }
                self.k = ((self.w_max - cwnd) / p.c).cbrt();
                self.w_est = cwnd;
                if self.cwnd_prior == 0.0 {
                    self.cwnd_prior = cwnd;
                }
                now
            }
        };
        let t = (now.0 - start.0) as f64 * 1e-12;
        // §4.3: the window a Reno flow with the same β would have; α = 3(1 − β)/(1 + β) until it passes the
        // window before the cut, then 1 (a standard Reno increase).
        let alpha = if self.w_est >= self.cwnd_prior { 1.0 } else { 3.0 * (1.0 - p.beta) / (1.0 + p.beta) };
        self.w_est += alpha * acked / cwnd;
        let w_cubic = self.w_cubic(p, t);
        if w_cubic < self.w_est {
            return self.w_est.max(cwnd);
        }
        // §4.4–4.5: aim at where the curve is one RTT ahead, at most 1.5 × cwnd.
        let target = self.w_cubic(p, t + srtt).clamp(cwnd, 1.5 * cwnd);
        cwnd + (target - cwnd) / cwnd * acked
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: CubicParams = CubicParams { c: 0.4, beta: 0.7 };

    #[test]
    fn the_cut_is_beta_and_k_puts_the_curve_back_at_w_max() {
        let mut c = Cubic::default();
        let w = c.on_congestion(P, 100.0);
        assert_eq!(w, 70.0);
        c.on_ack(P, w, 1.0, Time(0), 1e-4);
        // K = ∛((100 − 70) / 0.4) = ∛75 s.
        assert!((c.k - 75f64.cbrt()).abs() < 1e-12);
        assert!((c.w_cubic(P, 0.0) - 70.0).abs() < 1e-9);
        assert!((c.w_cubic(P, c.k) - 100.0).abs() < 1e-12);
        assert!((c.w_cubic(P, c.k + 2.0) - (100.0 + 0.4 * 8.0)).abs() < 1e-9);
    }

    #[test]
    fn fast_convergence_lowers_w_max_when_the_window_shrank() {
        let mut c = Cubic::default();
        c.on_congestion(P, 100.0);
        c.on_congestion(P, 80.0);
        assert!((c.w_max - 80.0 * 1.7 / 2.0).abs() < 1e-12);
        c.on_congestion(P, 90.0);
        assert_eq!(c.w_max, 90.0);
    }

    /// Driven one ACK per segment over a long RTT, the window tracks W_cubic(t + RTT) (it can lag by the
    /// growth within one RTT) and never falls below the curve at t once the curve is above Reno's estimate.
    #[test]
    fn the_window_follows_the_cubic_curve() {
        let mut c = Cubic::default();
        let mut w = c.on_congestion(P, 1000.0);
        let rtt = 0.1; // s: the concave part lasts K = ∛750 ≈ 9.1 s ≈ 91 RTTs
        let mut now = 0.0;
        for _ in 0..200 {
            // One RTT: cwnd ACKs, spread evenly.
            let n = w as usize;
            for i in 0..n {
                let t = now + rtt * i as f64 / n as f64;
                w = c.on_ack(P, w, 1.0, Time((t * 1e12) as u64), rtt);
            }
            now += rtt;
            let want = c.w_cubic(P, now);
            assert!(w >= want - 1e-6 * want || w >= c.w_est, "t={now}: {w} < W_cubic {want}");
            assert!(w <= c.w_cubic(P, now + rtt) + 1.0, "t={now}: {w} above W_cubic(t + RTT)");
        }
        // Past K the window has passed W_max and is probing.
        assert!(w > 1000.0);
    }

    /// With a short RTT the cubic curve is flat for many RTTs and the Reno-friendly estimate wins.
    #[test]
    fn reno_friendly_region() {
        let mut c = Cubic::default();
        let mut w = c.on_congestion(P, 20.0);
        let rtt = 1e-4;
        let mut now = 0.0;
        for _ in 0..50 {
            let n = w as usize;
            for _ in 0..n {
                w = c.on_ack(P, w, 1.0, Time((now * 1e12) as u64), rtt);
            }
            now += rtt;
        }
        // 50 RTTs: W_cubic has barely moved from 14 (K = ∛15 ≈ 2.47 s), Reno's estimate grew ≈ 0.53/RTT to
        // W_max (about 11 RTTs), then 1/RTT: about 57.
        assert!(c.w_cubic(P, now) < 14.1);
        assert!(w > 50.0 && w < 60.0, "{w}");
    }
}
