//! What this machine's memory allows a packet-hop at scale (docs/performance.md, "Scale"): the cost of one
//! cache line taken at random from an arena of a given size, two ways.
//!
//! - **latency**: each load's address comes from the load before (a chase through a random cycle), the
//!   case of a chain of records that nothing loaded ahead;
//! - **throughput**: independent read-modify-writes of random lines, as many in flight as the core allows
//!   (its out-of-order window, and a software prefetch 16 lines ahead), the best a perfectly prefetched
//!   hop could do.
//!
//! ```sh
//! cargo run --release -p tailsim-cli --example memory_floor            # 1, 8, 32 and 128 MiB
//! cargo run --release -p tailsim-cli --example memory_floor -- 2 256   # arenas of these MiB
//! ```
//!
//! The arenas come from the `tailsim` binary's allocator (transparent huge pages where the kernel grants
//! them, engine/hugepages.rs), so that TLB misses count as they do in a run.

use std::hint::black_box;
use std::time::Instant;

#[global_allocator]
static ALLOC: tailsim::engine::HugePageAlloc = tailsim::engine::HugePageAlloc;

/// A small, fast generator (xorshift64): the addresses must not be predictable by the hardware prefetcher.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

const LINE_WORDS: usize = 8;

/// Nanoseconds per dependent load through a random cycle over `lines` lines.
fn latency(lines: usize, rng: &mut XorShift) -> f64 {
    // A random cyclic order of the lines (Sattolo's shuffle), each line's first word holding the next's index.
    let mut order: Vec<u32> = (0..lines as u32).collect();
    for i in (1..lines).rev() {
        let j = (rng.next() % i as u64) as usize;
        order.swap(i, j);
    }
    let mut arena = vec![0u64; lines * LINE_WORDS];
    for i in 0..lines {
        arena[order[i] as usize * LINE_WORDS] = (order[(i + 1) % lines] as usize * LINE_WORDS) as u64;
    }
    drop(order);
    let loads = 4_000_000;
    let mut at = 0usize;
    for _ in 0..lines.min(loads) {
        at = arena[at] as usize; // warm up: the pages mapped, the caches in their steady state
    }
    let start = Instant::now();
    for _ in 0..loads {
        at = arena[at] as usize;
    }
    black_box(at);
    start.elapsed().as_nanos() as f64 / loads as f64
}

/// Nanoseconds per independent read-modify-write of a random line among `lines`.
fn throughput(lines: usize, rng: &mut XorShift) -> f64 {
    let mut arena = vec![0u64; lines * LINE_WORDS];
    let n = 16_000_000;
    let idx: Vec<u32> = (0..n).map(|_| (rng.next() % lines as u64) as u32).collect();
    const AHEAD: usize = 16;
    let run = |arena: &mut [u64]| {
        let mut sum = 0u64;
        for i in 0..n {
            if let Some(&j) = idx.get(i + AHEAD) {
                tailsim::engine::prefetch(arena.as_ptr().wrapping_add(j as usize * LINE_WORDS));
            }
            let w = &mut arena[idx[i] as usize * LINE_WORDS];
            sum = sum.wrapping_add(*w);
            *w = sum;
        }
        sum
    };
    black_box(run(&mut arena)); // warm up
    let start = Instant::now();
    black_box(run(&mut arena));
    start.elapsed().as_nanos() as f64 / n as f64
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let sizes: Vec<usize> = if args.is_empty() {
        vec![1, 8, 32, 128]
    } else {
        match args.iter().map(|a| a.parse::<usize>()).collect::<Result<Vec<_>, _>>() {
            Ok(v) if v.iter().all(|&m| (1..=4096).contains(&m)) => v,
            _ => {
                eprintln!("error: the arguments are arena sizes in MiB, whole numbers from 1 to 4096");
                std::process::exit(2);
            }
        }
    };
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    println!("{:>10} {:>14} {:>16}", "arena MiB", "latency ns", "throughput ns");
    for mib in sizes {
        let lines = mib * (1 << 20) / 64;
        let l = latency(lines, &mut rng);
        let t = throughput(lines, &mut rng);
        println!("{mib:>10} {l:>14.1} {t:>16.1}");
    }
}
