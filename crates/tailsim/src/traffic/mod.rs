//! Traffic generators: when flows start, between which hosts, and how large. Each generator owns its random
//! streams (inter-arrival gaps, sizes, endpoints), so adding or changing one generator leaves the draws of the
//! others untouched. Generators are lazy: one pending arrival event each, never a pre-built list of flows.
//!
//! Load calibration (Poisson): a host sends flows at rate
//!     λ_host = load · R_host / (8 · E[wire bytes of a flow]),
//!     E[wire bytes] = E[S] + E[⌈S / MSS⌉] · (header + per-packet wire overhead),
//! so `load` is the mean utilization of host uplinks by data packets (ACKs excluded), the definition used
//! by pFabric's ns-2 scripts. The aggregate process over H hosts is Poisson with rate H · λ_host.

pub mod cbr;
pub mod jobs;

use crate::engine::Rng;
use crate::units::{NodeId, PathId, Time};
use jobs::{BackgroundGen, JobGen};
use std::sync::Arc;
use tailsim_workload::{SizeCdf, TraceFlow};

/// Flow sizes: a distribution, a constant, or one of a list with equal probability.
#[derive(Clone)]
pub enum Sizes {
    Cdf(Arc<SizeCdf>),
    Fixed(u64),
    Choice(Vec<u64>),
}

impl Sizes {
    pub(crate) fn draw(&self, rng: &mut Rng) -> u64 {
        match self {
            Sizes::Cdf(c) => c.sample(rng.uniform()),
            Sizes::Fixed(s) => *s,
            Sizes::Choice(v) => v[rng.below(v.len() as u32) as usize],
        }
    }
    /// The smallest size it can draw.
    pub fn min_bytes(&self) -> u64 {
        match self {
            Sizes::Cdf(c) => c.sample(0.0),
            Sizes::Fixed(s) => *s,
            Sizes::Choice(v) => v.iter().copied().min().unwrap_or(0),
        }
    }
    /// The largest size it can draw.
    pub fn max_bytes(&self) -> u64 {
        match self {
            Sizes::Cdf(c) => c.max_bytes(),
            Sizes::Fixed(s) => *s,
            Sizes::Choice(v) => v.iter().copied().max().unwrap_or(0),
        }
    }
    /// E[S] and E[⌈S/mss⌉].
    pub fn means(&self, mss: u64) -> (f64, f64) {
        match self {
            Sizes::Cdf(c) => (c.mean_bytes(), c.mean_packets(mss)),
            Sizes::Fixed(s) => (*s as f64, s.div_ceil(mss) as f64),
            Sizes::Choice(v) => {
                let n = v.len() as f64;
                (v.iter().sum::<u64>() as f64 / n, v.iter().map(|s| s.div_ceil(mss)).sum::<u64>() as f64 / n)
            }
        }
    }
}

/// Who talks to whom.
#[derive(Clone)]
pub enum Pattern {
    /// Uniformly random source, uniformly random destination ≠ source.
    AllToAll,
    /// Source uniformly random, destination fixed by a random derangement drawn at start.
    Permutation(Vec<u32>),
}

pub enum Generator {
    Poisson {
        hosts: u32,
        pattern: Pattern,
        sizes: Sizes,
        /// Mean gap of the aggregate process, in picoseconds.
        mean_gap_ps: f64,
        next_at: f64,
        remaining: Option<u64>,
        until: Option<Time>,
        gap_rng: Rng,
        size_rng: Rng,
        pair_rng: Rng,
        deadlines: Option<Deadlines>,
    },
    /// N senders → 1 receiver, `count` times, every `interval`.
    Incast {
        hosts: u32,
        senders: u32,
        dst: Option<u32>,
        sizes: Sizes,
        next_at: Time,
        interval: Time,
        remaining: u64,
        rng: Rng,
        size_rng: Rng,
    },
    /// Explicit flows (trace file, htsim connection matrix, permutation round), sorted by start time, and the
    /// path each is pinned to (empty: none is).
    List { flows: Vec<TraceFlow>, pins: Vec<PathId>, next: usize },
    /// Poisson retrievals and workflows (jobs.rs); the world chains their flows.
    Jobs(Box<JobGen>),
    /// Closed-loop background flows (jobs.rs).
    Background(Box<BackgroundGen>),
}

/// pFabric's deadline workload (§5.4.2): flows smaller than `below` bytes get a deadline drawn from an
/// exponential distribution of mean `mean`, raised to at least `min_slack` × the flow's ideal FCT (known only
/// once the path is, so the simulation applies the floor when it records the flow).
pub struct Deadlines {
    pub mean: Time,
    pub below: u64,
    pub min_slack: f64,
    pub rng: Rng,
}

/// A deadline as drawn, before the floor: (exponential draw, minimum multiple of the ideal FCT).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DeadlineDraw {
    pub draw: Time,
    pub min_slack: f64,
}

/// A flow a generator releases.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NewFlow {
    pub src: NodeId,
    pub dst: NodeId,
    pub size: u64,
    pub deadline: Option<DeadlineDraw>,
    /// The path its trace pins it to (`net/pinned.rs`), else NONE.
    pub path: PathId,
}

impl NewFlow {
    pub fn new(src: NodeId, dst: NodeId, size: u64) -> NewFlow {
        NewFlow { src, dst, size, deadline: None, path: PathId::NONE }
    }
}

impl Generator {
    /// A random derangement of 0..n (no host sends to itself).
    pub fn derangement(n: u32, rng: &mut Rng) -> Vec<u32> {
        loop {
            let mut p: Vec<u32> = (0..n).collect();
            for i in (1..n as usize).rev() {
                let j = rng.below(i as u32 + 1) as usize;
                p.swap(i, j);
            }
            if p.iter().enumerate().all(|(i, &d)| i as u32 != d) {
                return p;
            }
        }
    }

    /// Time of the next arrival, if any.
    pub fn next_time(&self) -> Option<Time> {
        match self {
            Generator::Poisson { next_at, remaining, until, .. } => {
                let t = Time(next_at.round() as u64);
                if *remaining == Some(0) || until.is_some_and(|u| t >= u) {
                    None
                } else {
                    Some(t)
                }
            }
            Generator::Incast { next_at, remaining, .. } => (*remaining > 0).then_some(*next_at),
            Generator::List { flows, next, .. } => flows.get(*next).map(|f| Time(f.start_ps)),
            Generator::Jobs(j) => j.next_time(),
            Generator::Background(b) => b.pending.then_some(b.start),
        }
    }

    /// Whether the run's end waits for this generator's traffic (background traffic only fills the time).
    pub fn is_foreground(&self) -> bool {
        !matches!(self, Generator::Background(_))
    }

    /// Release the flows due now into `out` and advance (workflows are drawn by `JobGen::release`).
    pub fn release(&mut self, out: &mut Vec<NewFlow>) {
        match self {
            Generator::Poisson {
                hosts,
                pattern,
                sizes,
                mean_gap_ps,
                next_at,
                remaining,
                gap_rng,
                size_rng,
                pair_rng,
                deadlines,
                ..
            } => {
                let src = pair_rng.below(*hosts);
                let dst = match pattern {
                    Pattern::AllToAll => {
                        let d = pair_rng.below(*hosts - 1);
                        if d >= src {
                            d + 1
                        } else {
                            d
                        }
                    }
                    Pattern::Permutation(p) => p[src as usize],
                };
                let size = sizes.draw(size_rng);
                // The deadline stream is drawn for every flow, so sizes and deadlines stay paired the same way
                // whatever the size threshold.
                let deadline = deadlines.as_mut().and_then(|d| {
                    let draw = Time(d.rng.exp(d.mean.0 as f64).round() as u64);
                    (size < d.below).then_some(DeadlineDraw { draw, min_slack: d.min_slack })
                });
                out.push(NewFlow { src: NodeId(src), dst: NodeId(dst), size, deadline, path: PathId::NONE });
                if let Some(r) = remaining {
                    *r -= 1;
                }
                *next_at += gap_rng.exp(*mean_gap_ps);
            }
            Generator::Incast { hosts, senders, dst, sizes, next_at, interval, remaining, rng, size_rng } => {
                let d = dst.unwrap_or_else(|| rng.below(*hosts));
                // Choose `senders` distinct hosts other than d (partial Fisher–Yates over the others).
                let mut others: Vec<u32> = (0..*hosts).filter(|&h| h != d).collect();
                for i in 0..*senders as usize {
                    let j = i + rng.below((others.len() - i) as u32) as usize;
                    others.swap(i, j);
                    out.push(NewFlow::new(NodeId(others[i]), NodeId(d), sizes.draw(size_rng)));
                }
                *remaining -= 1;
                *next_at += *interval;
            }
            Generator::List { flows, pins, next } => {
                let t = flows[*next].start_ps;
                while let Some(f) = flows.get(*next).filter(|f| f.start_ps == t) {
                    let path = pins.get(*next).copied().unwrap_or(PathId::NONE);
                    out.push(NewFlow { path, ..NewFlow::new(NodeId(f.src), NodeId(f.dst), f.size_bytes) });
                    *next += 1;
                }
            }
            Generator::Jobs(_) => unreachable!("the world draws workflows with JobGen::release"),
            Generator::Background(b) => b.release(out),
        }
    }
}
