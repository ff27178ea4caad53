//! Constant-bit-rate sources (`kind = "cbr"`): raw packets with no transport, as a DPDK traffic generator
//! sends them (BurstRadar's testbed, thesis §3.3: a 1 Gbps background sender and a 25 Gbps "burster"). A
//! source sends back-to-back packets at its rate during on-periods and is silent during off-periods; packet
//! sizes and period lengths are drawn from distributions. Packets go straight into the source host's NIC
//! queue and are counted by the destination host's sink (`host_sinks.raw` in summary.json).
//!
//! All sources of a run live in one [`Cbr`], driven only by its timers (one pending per source), so raw
//! traffic costs nothing when absent and needs no event kind of its own.

use crate::engine::Rng;
use crate::net::hooks::{Effect, HookCtx, HookSet};
use crate::net::mech::Hooks;
use crate::net::packet::{Packet, PktKind};
use crate::net::port::Port;
use crate::units::{BitsPerSec, FlowSlot, NodeId, Time};

/// A distribution given by points of its CDF, (value, cumulative probability) with increasing values and
/// probabilities ending at 1.
#[derive(Clone, Debug, PartialEq)]
pub enum Dist {
    Fixed(f64),
    /// Empirical: a draw is the first value whose probability reaches the uniform (packet sizes).
    Steps(Vec<(f64, f64)>),
    /// Piecewise linear between the points, from the first value at probability 0 (durations).
    Linear(Vec<(f64, f64)>),
}

impl Dist {
    pub fn draw(&self, rng: &mut Rng) -> f64 {
        match self {
            Dist::Fixed(v) => *v,
            Dist::Steps(pts) => {
                let u = rng.uniform();
                pts.iter().find(|p| u < p.1).unwrap_or(pts.last().expect("validated")).0
            }
            Dist::Linear(pts) => {
                let u = rng.uniform();
                let (mut v0, mut p0) = (pts[0].0, 0.0);
                for &(v, p) in pts {
                    if u < p {
                        return v0 + (v - v0) * (u - p0) / (p - p0);
                    }
                    (v0, p0) = (v, p);
                }
                v0
            }
        }
    }
    pub fn mean(&self) -> f64 {
        match self {
            Dist::Fixed(v) => *v,
            Dist::Steps(pts) => {
                let (mut p0, mut m) = (0.0, 0.0);
                for &(v, p) in pts {
                    m += v * (p - p0);
                    p0 = p;
                }
                m
            }
            Dist::Linear(pts) => {
                let (mut v0, mut p0, mut m) = (pts[0].0, 0.0, 0.0);
                for &(v, p) in pts {
                    m += (p - p0) * (v + v0) / 2.0;
                    (v0, p0) = (v, p);
                }
                m
            }
        }
    }
}

/// One source.
#[derive(Clone, Debug)]
pub struct CbrSource {
    pub src: NodeId,
    pub dst: NodeId,
    /// The sending rate during on-periods (wire bits, framing overhead included).
    pub rate: BitsPerSec,
    /// Packet sizes in bytes (frame bytes, without the per-packet wire overhead).
    pub sizes: Dist,
    /// On- and off-period lengths in picoseconds; without `on`, the source never pauses.
    pub on: Option<Dist>,
    pub off: Option<Dist>,
    pub start: Time,
    pub until: Time,
    pub class: u8,
    /// Preamble and gap per packet, which the rate covers.
    pub wire_overhead: u32,
}

#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct CbrStats {
    pub packets: u64,
    pub bytes: u64,
    /// On-periods started (bursts).
    pub bursts: u64,
}

struct State {
    rng: Rng,
    /// End of the current on-period.
    on_until: Time,
    stats: CbrStats,
}

pub struct Cbr {
    sources: Vec<CbrSource>,
    state: Vec<State>,
}

impl Cbr {
    pub fn new(sources: Vec<CbrSource>, seed: u64) -> Cbr {
        let state = (0..sources.len())
            .map(|i| State { rng: Rng::new(seed, "cbr", i as u64), on_until: Time::ZERO, stats: CbrStats::default() })
            .collect();
        Cbr { sources, state }
    }

    /// The mean offered rate of source `i` in bits per second (on/off duty cycle included).
    pub fn mean_rate(s: &CbrSource) -> f64 {
        match (&s.on, &s.off) {
            (Some(on), Some(off)) => s.rate.0 as f64 * on.mean() / (on.mean() + off.mean()),
            _ => s.rate.0 as f64,
        }
    }

    /// Begin an on-period at `at`: returns its first send time.
    fn begin_on(&mut self, i: usize, at: Time) -> Time {
        let s = &self.sources[i];
        let st = &mut self.state[i];
        st.stats.bursts += 1;
        st.on_until = match &s.on {
            Some(d) => at + Time(d.draw(&mut st.rng).max(1.0) as u64),
            None => Time::MAX,
        };
        at
    }
}

impl Hooks for Cbr {
    const NAME: &'static str = "cbr";
    const HOOKS: HookSet = HookSet::NONE;

    fn parallel_refusal(&self) -> Option<&'static str> {
        None
    }

    /// A source's timer acts at its host.
    fn timer_node(&self, _ports: &[Port], key: u32) -> Option<NodeId> {
        Some(self.sources[key as usize].src)
    }

    /// The state of the sources whose host `theirs` accepts.
    fn take_part(&mut self, other: &mut Cbr, _ports: &[Port], theirs: &dyn Fn(NodeId) -> bool) {
        for (i, s) in self.sources.iter().enumerate() {
            if theirs(s.src) {
                std::mem::swap(&mut self.state[i], &mut other.state[i]);
            }
        }
    }

    fn start(&mut self, c: &mut HookCtx) {
        for i in 0..self.sources.len() {
            let t = self.begin_on(i, self.sources[i].start);
            if t < self.sources[i].until {
                c.timer(t, i as u32);
            }
        }
    }

    fn on_timer(&mut self, c: &mut HookCtx, key: u32) {
        let i = key as usize;
        let s = &self.sources[i];
        let st = &mut self.state[i];
        let size = (s.sizes.draw(&mut st.rng).round() as u32).max(1);
        let mut p = Packet::new(PktKind::Raw, FlowSlot(u32::MAX), 0, s.src, s.dst);
        p.size = size;
        p.payload = size;
        p.class = s.class;
        p.seq = st.stats.packets as u32;
        p.hash = crate::transport::flow_hash(i as u64, s.src, s.dst);
        p.ts = c.now;
        st.stats.packets += 1;
        st.stats.bytes += size as u64;
        let id = c.pk.alloc(p);
        c.effect(Effect::Forward { node: s.src, id });
        let mut next = c.now + s.rate.tx_time(size as u64 + s.wire_overhead as u64);
        if next >= st.on_until {
            let off = s.off.as_ref().map_or(0.0, |d| d.draw(&mut st.rng));
            next = self.begin_on(i, next + Time(off as u64));
        }
        if next < self.sources[i].until {
            c.timer(next, key);
        }
    }

    fn summary(&self) -> serde_json::Value {
        let total = self.state.iter().fold(CbrStats::default(), |a, s| CbrStats {
            packets: a.packets + s.stats.packets,
            bytes: a.bytes + s.stats.bytes,
            bursts: a.bursts + s.stats.bursts,
        });
        serde_json::json!({
            "packets": total.packets,
            "bytes": total.bytes,
            "bursts": total.bursts,
            "sources": self.state.iter().map(|s| s.stats).collect::<Vec<_>>(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distributions_draw_within_their_points_and_have_their_means() {
        let mut rng = Rng::new(1, "t", 0);
        let steps = Dist::Steps(vec![(64.0, 0.5), (1500.0, 1.0)]);
        let lin = Dist::Linear(vec![(0.0, 0.0), (100.0, 1.0)]);
        let n = 200_000;
        let (mut a, mut b) = (0.0, 0.0);
        for _ in 0..n {
            let x = steps.draw(&mut rng);
            assert!(x == 64.0 || x == 1500.0);
            a += x;
            let y = lin.draw(&mut rng);
            assert!((0.0..=100.0).contains(&y));
            b += y;
        }
        assert!((a / n as f64 - steps.mean()).abs() < 10.0, "{} vs {}", a / n as f64, steps.mean());
        assert!((steps.mean() - 782.0).abs() < 1e-9);
        assert!((b / n as f64 - 50.0).abs() < 0.5);
        assert!((lin.mean() - 50.0).abs() < 1e-9);
    }
}
