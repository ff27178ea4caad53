//! The meeting point of the threads of one parallel run (issue "One run on every core", docs/parallel.md):
//! at the end of each time window every part offers the time of its earliest pending event, waits for the
//! others, and all leave knowing the earliest of all, where the next window starts.
//!
//! It spins rather than sleeps: windows last microseconds of CPU time, and waking a sleeping thread costs
//! several (`std::sync::Barrier` parks on a futex); after a few thousand spins it yields its core. Offers are kept in two sets of slots used in alternate
//! rounds, so a fast thread's next offer never overwrites one a slow thread has still to read, and one meeting
//! per window is enough.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// One cache line per slot, so that parts writing their offers do not contend for a line.
#[repr(align(64))]
#[derive(Default)]
struct Slot(AtomicU64);

pub struct MinBarrier {
    n: usize,
    arrived: AtomicUsize,
    round: AtomicUsize,
    /// `slots[round % 2][part]`.
    slots: [Vec<Slot>; 2],
}

impl MinBarrier {
    pub fn new(n: usize) -> MinBarrier {
        assert!(n > 0, "a barrier for no thread");
        let slots = || (0..n).map(|_| Slot::default()).collect();
        MinBarrier { n, arrived: AtomicUsize::new(0), round: AtomicUsize::new(0), slots: [slots(), slots()] }
    }

    /// Part `part` offers `value`; returns the smallest value offered in this round, once all `n` have.
    pub fn wait_min(&self, part: usize, value: u64) -> u64 {
        let round = self.round.load(Ordering::Acquire);
        let slots = &self.slots[round % 2];
        slots[part].0.store(value, Ordering::Relaxed);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.n {
            // The last to arrive opens the next round; its release publishes every offer (each was written
            // before its thread's acquire-release arrival).
            self.arrived.store(0, Ordering::Relaxed);
            self.round.store(round + 1, Ordering::Release);
        } else {
            let mut spins = 0u32;
            while self.round.load(Ordering::Acquire) == round {
                // Spin while the others are likely running; yield once they may not be (more threads than
                // cores, or a test run beside others), so a late thread gets the core it waits for.
                if spins < 1 << 12 {
                    spins += 1;
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
        }
        slots.iter().map(|s| s.0.load(Ordering::Relaxed)).min().expect("n > 0")
    }
}

/// Seconds per meeting of `threads` threads over `rounds` rounds on this machine (None: fewer cores than
/// threads, where spinning would measure the scheduler instead).
pub fn measure_meeting(threads: usize, rounds: u64) -> Option<f64> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if threads < 2 || threads > cores {
        return None;
    }
    let b = MinBarrier::new(threads);
    let t0 = std::time::Instant::now();
    std::thread::scope(|s| {
        for part in 0..threads {
            let b = &b;
            s.spawn(move || {
                for r in 0..rounds {
                    b.wait_min(part, r + part as u64);
                }
            });
        }
    });
    Some(t0.elapsed().as_secs_f64() / rounds as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_part_leaves_each_round_with_the_smallest_offer_of_that_round() {
        let threads = 3; // more threads than this machine may have cores: correct, if slow
        let b = MinBarrier::new(threads);
        let rounds = 2_000u64;
        let seen: Vec<Vec<u64>> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..threads)
                .map(|part| {
                    let b = &b;
                    s.spawn(move || {
                        // Part p offers 10·r + (p + r) % 3: the minimum is 10·r + 0 every round, offered by a
                        // different part each time.
                        (0..rounds).map(|r| b.wait_min(part, 10 * r + (part as u64 + r) % 3)).collect()
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for got in seen {
            assert_eq!(got, (0..rounds).map(|r| 10 * r).collect::<Vec<_>>());
        }
    }
}
