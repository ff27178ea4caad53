//! `tailsim bench --scenario S --threads 1,2,4 [--parts 1,28]`: one run of a bench scenario on each thread
//! count (and each count of parts, default one per thread), its wall time against the first's, its peak
//! memory, and a check that every count gave the serial run's results (docs/parallel.md). Each count runs in
//! a child process of its own (`--in-process --threads N --parts P --row-json`), so that its peak memory is
//! its own: every part of a parallel run holds a whole world, and what that costs per part is part of the
//! figure. Runs a parallel run cannot take yet are refused before anything runs.

use crate::bench::{bench_apart, Scenario};
use serde::{Deserialize, Serialize};
use std::time::Instant;
use tailsim::sim::StopReason;

/// Whether every thread count was measured.
pub enum Ended {
    Done,
    Interrupted,
}

/// One thread count's run, as its child process reports it.
#[derive(Serialize, Deserialize)]
struct Row {
    threads: usize,
    parts: usize,
    wall_seconds: f64,
    windows: u64,
    handovers: u64,
    events: u64,
    packet_hops: u64,
    /// The process's peak resident memory, bytes (None where the system does not say).
    peak_bytes: Option<u64>,
    /// What must agree between thread counts: everything the summary counts (not wall time or memory).
    counted: serde_json::Value,
}

fn counted(s: &tailsim::run::Summary) -> serde_json::Value {
    let mut v = serde_json::to_value(s).unwrap_or_default();
    if let Some(m) = v.as_object_mut() {
        for k in ["wall_seconds", "events_per_second", "packet_hops_per_second", "peak_memory_bytes"] {
            m.remove(k);
        }
    }
    v
}

/// Run the scenario once as `parts` parts on `n` threads in this process; None if interrupted.
fn measure(sc: &Scenario, n: usize, parts: usize, stop_asked: &mut dyn FnMut() -> bool) -> Result<Option<Row>, String> {
    let mut e = sc.load()?;
    let others = (1..parts).map(|_| sc.load()).collect::<Result<Vec<_>, _>>()?;
    let t0 = Instant::now();
    let (s, windows, handovers) = if parts == 1 {
        (e.run_interruptible(&mut |_| !stop_asked())?, 0, 0)
    } else {
        let (s, par) = e.run_parallel(others, n, &mut |_| !stop_asked())?;
        (s, par.windows, par.handed_over)
    };
    let wall_seconds = t0.elapsed().as_secs_f64();
    if s.stop_reason == StopReason::Interrupted {
        return Ok(None);
    }
    Ok(Some(Row {
        threads: n,
        parts,
        wall_seconds,
        windows,
        handovers,
        events: s.events,
        packet_hops: s.packet_hops,
        peak_bytes: s.peak_memory_bytes,
        counted: counted(&s),
    }))
}

/// Run the scenario as `parts` parts on `n` threads in a child process of this program; None if interrupted.
fn measure_apart(
    sc: &Scenario,
    time: &Option<String>,
    (n, parts): (usize, usize),
    self_cmd: &[String],
    stop_asked: &mut dyn FnMut() -> bool,
) -> Result<Option<Row>, String> {
    let (n_s, p_s) = (n.to_string(), parts.to_string());
    let args = ["--row-json", "--scenario", &sc.name, "--threads", &n_s, "--parts", &p_s];
    let what = format!("{n} threads, {parts} parts");
    let Some(text) = bench_apart(self_cmd, &args, time, &what, stop_asked)? else { return Ok(None) };
    serde_json::from_str(text.trim()).map(Some).map_err(|e| format!("{what}: unreadable report ({e}): {text}"))
}

/// The (threads, parts) pairs to measure: each thread count with each count of parts not below it, or with
/// as many parts as threads when no count of parts is given.
fn pairs(threads: &[usize], parts: &[usize]) -> Result<Vec<(usize, usize)>, String> {
    if threads.is_empty() || threads.contains(&0) {
        return Err("--threads: give thread counts of 1 or more, e.g. 1,2".into());
    }
    if parts.contains(&0) {
        return Err("--parts: give counts of parts of 1 or more, e.g. 1,28".into());
    }
    if parts.is_empty() {
        return Ok(threads.iter().map(|&n| (n, n)).collect());
    }
    let v: Vec<_> =
        threads.iter().flat_map(|&n| parts.iter().filter(move |&&p| p >= n).map(move |&p| (n, p))).collect();
    if v.is_empty() {
        return Err("--parts: every count is below every thread count (a thread runs one part or more)".into());
    }
    Ok(v)
}

#[allow(clippy::too_many_arguments)] // the bench command's own options, passed through
pub fn main(
    scenario: Option<String>,
    time: Option<String>,
    threads: &[usize],
    parts: &[usize],
    in_process: bool,
    row_json: bool,
    self_cmd: &[String],
    stop_asked: &mut dyn FnMut() -> bool,
) -> Result<Ended, String> {
    let flag = if parts.is_empty() { "--threads" } else { "--parts" };
    let sc = Scenario::find(flag, scenario, time.clone())?;
    let pairs = pairs(threads, parts)?;
    let name = &sc.name;
    // Refusals first: a scenario a parallel run cannot take fails before anything runs (in the parent: a
    // child's peak memory is its run's alone).
    if pairs.iter().any(|&(_, p)| p > 1) && !row_json {
        let e = sc.load()?;
        if let Some(why) = e.world.parallel_refusal(&e.stop) {
            let how = if parts.is_empty() { "on more than one thread" } else { "in parts" };
            return Err(format!("{flag}: {name} cannot run {how} yet: {why}"));
        }
        for &(_, p) in pairs.iter().filter(|&&(_, p)| p > 1) {
            e.parallel_cut(p).map_err(|why| format!("{p} parts: {name}: {why}"))?;
        }
    }
    if row_json {
        // A child's report: one count, one line of JSON.
        let [(n, p)] = pairs[..] else { return Err("--row-json takes one thread count and one count of parts".into()) };
        let Some(row) = measure(&sc, n, p, stop_asked)? else { return Ok(Ended::Interrupted) };
        out!("{}", serde_json::to_string(&row).map_err(|e| e.to_string())?);
        return Ok(Ended::Done);
    }
    out!(
        "{:<8} {:>6} {:>9} {:>8} {:>10} {:>9} {:>10} {:>12} {:>13} {:>9} {:>10}",
        "threads",
        "parts",
        "wall s",
        "speedup",
        "efficiency",
        "windows",
        "handovers",
        "events",
        "packet-hops",
        "peak MB",
        "results"
    );
    let mut first: Option<Row> = None;
    for &(n, p) in &pairs {
        let row = if in_process {
            measure(&sc, n, p, stop_asked)?
        } else {
            measure_apart(&sc, &time, (n, p), self_cmd, stop_asked)?
        };
        let Some(row) = row else { return Ok(Ended::Interrupted) };
        let base = first.get_or_insert_with(|| Row { counted: row.counted.clone(), ..row });
        let same = if p == 1 && pairs[0] == (1, 1) {
            "serial"
        } else if base.counted == row.counted {
            "identical"
        } else {
            "DIFFER"
        };
        // In one process the peak is the whole sequence's so far, not this count's.
        let peak = match row.peak_bytes {
            Some(b) if !in_process => format!("{:.1}", b as f64 / 1e6),
            _ => "-".into(),
        };
        out!(
            "{:<8} {:>6} {:>9.2} {:>7.2}x {:>9.0}% {:>9} {:>10} {:>12} {:>13} {:>9} {:>10}",
            n,
            p,
            row.wall_seconds,
            base.wall_seconds / row.wall_seconds,
            100.0 * base.wall_seconds / row.wall_seconds * base.threads as f64 / n as f64,
            row.windows,
            row.handovers,
            row.events,
            row.packet_hops,
            peak,
            same
        );
        if same == "DIFFER" {
            return Err(format!(
                "{n} threads, {p} parts gave other results than the first run: a parallel run must not"
            ));
        }
    }
    out!("(speedup and efficiency against the first count given; give 1 first to compare with the serial engine;");
    out!(" peak MB: each count's own process, loading included: every part holds a whole world)");
    Ok(Ended::Done)
}
