//! `tailsim bench --scenario S --project-threads 2,4,8`: what a parallel run of a bench scenario would gain,
//! measured on the serial run (docs/parallel.md, tailsim::sim::Projection).

use crate::bench::{timed_run, Scenario};
use tailsim::net::partition::Partition;
use tailsim::sim::StopReason;

/// Whether the scenario was measured to its end.
pub enum Ended {
    Done,
    Interrupted,
}

pub fn main(
    scenario: Option<String>,
    time: Option<String>,
    threads: &[usize],
    stop_asked: &mut dyn FnMut() -> bool,
) -> Result<Ended, String> {
    let sc = Scenario::find("--project-threads", scenario, time)?;
    if threads.is_empty() || threads.contains(&0) {
        return Err("--project-threads: give thread counts of 1 or more, e.g. 2,4,8".into());
    }
    let load = || sc.load();

    // The cuts first: a thread count the fabric cannot take is an error before anything runs.
    let mut counted = load()?;
    let cuts = threads
        .iter()
        .map(|&n| Partition::new(&counted.world.net, n))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("--project-threads: {e}"))?;

    // The serial run, as `bench` runs it: the cost of an event.
    let (s, cpu) = timed_run(&mut load()?, stop_asked)?;
    if s.stop_reason == StopReason::Interrupted {
        return Ok(Ended::Interrupted);
    }
    let tau = cpu / s.events.max(1) as f64;

    // The same run again, counted for every cut.
    let stop = counted.stop;
    let (reason, projections) = counted.world.run_projected(stop, &cuts, &mut |_| !stop_asked());
    if reason == StopReason::Interrupted {
        return Ok(Ended::Interrupted);
    }
    counted.world.check_conservation().map_err(|e| format!("packet conservation violated: {e}"))?;
    if projections.first().is_some_and(|p| p.events != s.events) {
        return Err(format!(
            "the counted run handled {} events, the plain run {}: a run must not depend on being counted",
            projections[0].events, s.events
        ));
    }

    let meeting2 = tailsim::engine::measure_meeting(2, 200_000);
    let crossing = tailsim::sim::measure_crossing(1 << 22);
    out!(
        "{}: {} events in {} simulated; serial {:.2} CPU s, {:.0} ns per event",
        sc.name,
        s.events,
        sc.time,
        cpu,
        tau * 1e9
    );
    match meeting2 {
        Some(m) => out!(
            "meeting of 2 threads (earliest event agreed, spinning): {:.0} ns measured; of n threads projected as \
             {:.0} ns x log2(n)",
            m * 1e9,
            m * 1e9
        ),
        None => out!("meeting of 2 threads: not measured (one core); projected as 500 ns x log2(n)"),
    }
    out!("a packet crossing between parts: {:.1} ns measured (out of one arena, into another)", crossing * 1e9);
    out!(
        "{:>7} {:>6} {:>9} {:>10} {:>9} {:>13} {:>9} {:>10} {:>7} {:>7} {:>8}",
        "threads",
        "cut at",
        "cut ports",
        "lookahead",
        "windows",
        "events/window",
        "imbalance",
        "crossing %",
        "spread %",
        "global",
        "speedup"
    );
    for p in &projections {
        let n = p.parts as f64;
        let meeting = if p.parts < 2 { 0.0 } else { meeting2.unwrap_or(500e-9) * n.log2().max(1.0) };
        let level = match p.level {
            _ if p.parts == 1 => "-".into(),
            3 => "pods".into(),
            2 => "ToRs".into(),
            1 => "hosts".into(),
            l => format!("level {l}"),
        };
        out!(
            "{:>7} {:>6} {:>9} {:>10} {:>9} {:>13.1} {:>9.3} {:>10.2} {:>7.2} {:>7} {:>7.2}x",
            p.parts,
            level,
            p.cut_ports,
            p.lookahead.map_or("-".into(), |l| l.to_string()),
            p.windows,
            (p.events - p.global) as f64 / p.windows.max(1) as f64,
            p.imbalance(),
            100.0 * p.messages as f64 / p.events.max(1) as f64,
            100.0 * p.spread as f64 / p.events.max(1) as f64,
            p.global,
            p.speedup(tau, meeting, crossing)
        );
    }
    Ok(Ended::Done)
}
