//! The meeting point of the threads of one parallel run (issue "One run on every core", docs/parallel.md):
//! at the end of each time window every part offers the time of its earliest pending event, waits for the
//! others, and all leave knowing the earliest of all, where the next window starts.
//!
//! It spins rather than sleeps: windows last microseconds of CPU time, and waking a sleeping thread costs
//! several (`std::sync::Barrier` parks on a futex). But a wait that outlasts a few thousand spins means the
//! thread waited for is not running — more threads than cores, or other processes on them — and then the
//! waiter sleeps until the last one arrives, giving up its core: yielding it instead (`sched_yield`) left the
//! scheduler free to run the spinner again, and three threads on two cores took 100 µs a window (a
//! LinkGuardian run of 17,959 windows: 1.77 s against 0.03 s on two threads). Offers are kept in two sets of
//! slots used in alternate rounds, so a fast thread's next offer never overwrites one a slow thread has
//! still to read, and one meeting per window is enough.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};

/// Spins before a waiter sleeps (tens of microseconds).
const SPINS: u32 = 1 << 12;

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
    /// Spins before a waiter sleeps: none when there are more threads than cores (someone waited for is then
    /// likely waiting for a core, which a spinner would hold: 4,096 spins took 100 µs a window).
    spins: u32,
    /// Waiters that went to sleep (and may not have woken yet): the last to arrive wakes them.
    sleepers: AtomicUsize,
    lock: Mutex<()>,
    wake: Condvar,
}

impl MinBarrier {
    pub fn new(n: usize) -> MinBarrier {
        assert!(n > 0, "a barrier for no thread");
        let slots = || (0..n).map(|_| Slot::default()).collect();
        MinBarrier {
            n,
            arrived: AtomicUsize::new(0),
            round: AtomicUsize::new(0),
            slots: [slots(), slots()],
            spins: if n > cores() { 0 } else { SPINS },
            sleepers: AtomicUsize::new(0),
            lock: Mutex::new(()),
            wake: Condvar::new(),
        }
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
            self.round.store(round + 1, Ordering::SeqCst);
            // Sequentially consistent with the sleeper's count and its look at the round: either it sees the
            // new round and does not sleep, or this sees it counted and wakes it under the lock it sleeps on.
            if self.sleepers.load(Ordering::SeqCst) > 0 {
                let _held = self.lock.lock().unwrap_or_else(|e| e.into_inner());
                self.wake.notify_all();
            }
        } else {
            let mut spins = 0u32;
            while self.round.load(Ordering::Acquire) == round {
                if spins < self.spins {
                    spins += 1;
                    std::hint::spin_loop();
                    continue;
                }
                self.sleepers.fetch_add(1, Ordering::SeqCst);
                let mut held = self.lock.lock().unwrap_or_else(|e| e.into_inner());
                while self.round.load(Ordering::SeqCst) == round {
                    held = self.wake.wait(held).unwrap_or_else(|e| e.into_inner());
                }
                drop(held);
                self.sleepers.fetch_sub(1, Ordering::SeqCst);
            }
        }
        slots.iter().map(|s| s.0.load(Ordering::Relaxed)).min().expect("n > 0")
    }
}

/// The cores this process may run on (1 when the system does not say): how many threads of a parallel run
/// can run at once.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |c| c.get())
}

/// Seconds per meeting of `threads` threads over `rounds` rounds on this machine (None: fewer cores than
/// threads, where spinning would measure the scheduler instead).
pub fn measure_meeting(threads: usize, rounds: u64) -> Option<f64> {
    if threads < 2 || threads > cores() {
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

    /// A part that arrives late (here it sleeps first, as a descheduled thread would) finds the others asleep
    /// past their spins, and must wake them: a lost wake-up would hang, which the watchdog reports.
    #[test]
    fn waiters_that_slept_are_woken_by_the_last_to_arrive() {
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let b = MinBarrier::new(2);
            let rounds = 200u64;
            let seen: Vec<Vec<u64>> = std::thread::scope(|s| {
                let hs: Vec<_> = (0..2)
                    .map(|part| {
                        let b = &b;
                        s.spawn(move || {
                            (0..rounds)
                                .map(|r| {
                                    if (part as u64 + r).is_multiple_of(2) {
                                        std::thread::sleep(std::time::Duration::from_micros(300));
                                    }
                                    b.wait_min(part, 2 * r + part as u64)
                                })
                                .collect()
                        })
                    })
                    .collect();
                hs.into_iter().map(|h| h.join().unwrap()).collect()
            });
            let _ = done.send(seen);
        });
        let seen = finished.recv_timeout(std::time::Duration::from_secs(60)).expect("a waiter was never woken");
        for got in seen {
            assert_eq!(got, (0..200).map(|r| 2 * r).collect::<Vec<_>>());
        }
    }
}
