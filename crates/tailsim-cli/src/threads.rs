//! `tailsim bench --scenario S --threads 1,2,4`: one run of a bench scenario on each thread count, its wall
//! time against the serial engine's, and a check that every count gave the serial run's results
//! (docs/parallel.md). Runs a parallel run cannot take yet are refused before anything runs.

use crate::bench::Scenario;
use std::time::Instant;
use tailsim::sim::StopReason;

/// Whether every thread count was measured.
pub enum Ended {
    Done,
    Interrupted,
}

/// What must agree between thread counts: everything the summary counts (not wall time or memory).
fn counted(s: &tailsim::run::Summary) -> serde_json::Value {
    let mut v = serde_json::to_value(s).unwrap_or_default();
    if let Some(m) = v.as_object_mut() {
        for k in ["wall_seconds", "events_per_second", "packet_hops_per_second", "peak_memory_bytes"] {
            m.remove(k);
        }
    }
    v
}

pub fn main(
    scenario: Option<String>,
    time: Option<String>,
    threads: &[usize],
    stop_asked: &mut dyn FnMut() -> bool,
) -> Result<Ended, String> {
    let sc = Scenario::find("--threads", scenario, time)?;
    if threads.is_empty() || threads.contains(&0) {
        return Err("--threads: give thread counts of 1 or more, e.g. 1,2".into());
    }
    let (name, load) = (&sc.name, || sc.load());
    // Refusals first: a scenario a parallel run cannot take fails before anything runs.
    if threads.iter().any(|&n| n > 1) {
        let e = load()?;
        if let Some(why) = e.world.parallel_refusal(&e.stop) {
            return Err(format!("--threads: {name} cannot run on more than one thread yet: {why}"));
        }
        for &n in threads.iter().filter(|&&n| n > 1) {
            e.parallel_cut(n).map_err(|why| format!("--threads {n}: {name}: {why}"))?;
        }
    }
    out!(
        "{:<8} {:>9} {:>8} {:>10} {:>9} {:>10} {:>12} {:>13} {:>10}",
        "threads",
        "wall s",
        "speedup",
        "efficiency",
        "windows",
        "handovers",
        "events",
        "packet-hops",
        "results"
    );
    let mut serial: Option<(f64, serde_json::Value)> = None;
    for &n in threads {
        let mut e = load()?;
        let others = (1..n).map(|_| load()).collect::<Result<Vec<_>, _>>()?;
        let t0 = Instant::now();
        let (s, windows, handed) = if n == 1 {
            (e.run_interruptible(&mut |_| !stop_asked())?, 0, 0)
        } else {
            let (s, par) = e.run_parallel(others, true, &mut |_| !stop_asked())?;
            (s, par.windows, par.handed_over)
        };
        let wall = t0.elapsed().as_secs_f64();
        if s.stop_reason == StopReason::Interrupted {
            return Ok(Ended::Interrupted);
        }
        let c = counted(&s);
        let base = serial.get_or_insert_with(|| (wall, c.clone()));
        let same = if n == 1 && threads[0] == 1 {
            "serial"
        } else if base.1 == c {
            "identical"
        } else {
            "DIFFER"
        };
        out!(
            "{:<8} {:>9.2} {:>7.2}x {:>9.0}% {:>9} {:>10} {:>12} {:>13} {:>10}",
            n,
            wall,
            base.0 / wall,
            100.0 * base.0 / wall / n as f64,
            windows,
            handed,
            s.events,
            s.packet_hops,
            same
        );
        if same == "DIFFER" {
            return Err(format!("{n} threads gave other results than the first run: a parallel run must not"));
        }
    }
    out!("(speedup and efficiency against the first count given; give 1 first to compare with the serial engine)");
    Ok(Ended::Done)
}
