//! The `tailsim` command line: run an experiment, check a config, benchmark the simulator.
//!
//! A library so that the Python package's `tailsim` command runs exactly the same code.

/// Print to stdout, ignoring a closed pipe (`tailsim run … | head` must not panic).
macro_rules! out {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($t)*);
    }};
}
macro_rules! out_raw {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stdout().lock(), $($t)*);
    }};
}

mod bench;
mod project;
mod threads;

use clap::{Parser, Subcommand};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Instant;
use tailsim::{Experiment, Progress, StopReason, Summary};

#[derive(Parser)]
#[command(name = "tailsim", version, about = "Packet-level datacenter network simulator for tail-latency studies")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run an experiment file and write flows, ports and summary.json.
    Run {
        /// The experiment (TOML).
        config: PathBuf,
        /// Results directory (default: output.dir in the file, else results/<name>).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Override the seed.
        #[arg(long)]
        seed: Option<u64>,
        /// Override any key, e.g. --set workload[0].load=0.5 --set transport.kind=dctcp
        #[arg(long = "set", value_name = "KEY=VALUE")]
        sets: Vec<String>,
        /// No progress line.
        #[arg(long, short)]
        quiet: bool,
        /// Exit with status 1 when flows are left unfinished (a warning is printed either way).
        #[arg(long)]
        strict: bool,
        /// Run on this many threads, the fabric cut into as many parts: the same results as one thread,
        /// byte for byte, for every transport, workload and switch mechanism. What cannot be cut (an event
        /// budget, stop.max_events; a link between two parts without delay; the flow-level Ideal) is refused,
        /// saying why (docs/parallel.md).
        #[arg(long, default_value_t = 1, value_name = "N")]
        threads: usize,
        /// Cut the fabric into this many parts (default: one per thread), each thread running its share of
        /// them in turn, window by window: the same results again. More parts than threads keep each
        /// window's work in one part's memory, faster where the packets in flight outgrow the last-level
        /// cache (about 2x for a permutation on 5,488 hosts, one thread) and slower where they fit; every
        /// part holds a whole world, so memory grows with the parts (docs/parallel.md, "More parts than
        /// threads").
        #[arg(long, value_name = "N")]
        parts: Option<usize>,
        /// Refuse a run estimated to need more memory than this, e.g. 64GB, or "none" (default: 90 % of
        /// the machine's memory; also TAILSIM_MAX_MEMORY).
        #[arg(long, value_name = "SIZE")]
        max_memory: Option<String>,
    },
    /// Validate an experiment file without running it: reports everything `run` would refuse. A topology
    /// file (`*.topo.toml`, or a file of `hosts` and `[[link]]`s) is checked on its own; sweep files
    /// (`*.sweep.toml`) are checked by the Python package's `tailsim check`.
    Check {
        /// The experiment (TOML), or a topology file.
        config: PathBuf,
        /// Override any key as `run` would, e.g. --set workload[0].load=0.5
        #[arg(long = "set", value_name = "KEY=VALUE")]
        sets: Vec<String>,
        /// The memory limit the checks apply, as for `run`.
        #[arg(long, value_name = "SIZE")]
        max_memory: Option<String>,
    },
    /// Priority-class thresholds for a flow-size distribution (pFabric §6): the M/G/1 optimum and the
    /// equal-count split, with the model's mean normalized FCT for each.
    Thresholds {
        /// A built-in CDF name or a CDF file.
        #[arg(long)]
        cdf: String,
        /// Offered load in (0, 1).
        #[arg(long)]
        load: f64,
        /// Number of classes (1–8).
        #[arg(long)]
        classes: usize,
    },
    /// QJUMP's network epoch and, per level, the bucket, rate and latency bound (docs/qjump.md).
    Qjump {
        /// N: hosts that may send to one destination.
        #[arg(long, default_value_t = 144)]
        hosts: u64,
        /// Edge link rate.
        #[arg(long, default_value = "10Gbps")]
        rate: String,
        /// P: largest packet in bytes (inter-frame gap included if it should count).
        #[arg(long, default_value = "9000")]
        packet: String,
        /// ε: switch processing delay.
        #[arg(long, default_value = "0")]
        eps: String,
        /// Throughput factors, class 0 (the thesis's level 7) first.
        #[arg(long, default_value = "1,2,3,5,10,20,100,144")]
        f: String,
        /// k in k·N·P/r + ε: 1 = the thesis (Eq. 3.13), 2 = the NSDI'15 form.
        #[arg(long, default_value_t = 1)]
        epoch_factor: u32,
        /// An explicit network epoch instead of the formula.
        #[arg(long)]
        epoch: Option<String>,
        /// "per-level-epoch" (the thesis) or "common-epoch" (the ns-2 code).
        #[arg(long, default_value = "per-level-epoch")]
        budget: String,
        /// Also print the single-switch worst case n·P/r + ε (Eq. 3.3) for these n, e.g. 1,6,10.
        #[arg(long)]
        fan_in: Option<String>,
    },
    /// Measure simulator speed on fixed scenarios (events/s, packet-hops/s, wall s per simulated s, memory).
    Bench {
        /// Run only this scenario (see --list).
        #[arg(long)]
        scenario: Option<String>,
        /// List the scenarios.
        #[arg(long)]
        list: bool,
        /// Simulated time per scenario (default: the scenario's own).
        #[arg(long)]
        time: Option<String>,
        /// Run in this process instead of one child process per scenario (peak memory is then shared).
        #[arg(long, hide = true)]
        in_process: bool,
        /// With --in-process and one --threads count: print that run's row as one line of JSON (how
        /// `bench --threads` measures each count in a process of its own).
        #[arg(long, hide = true)]
        row_json: bool,
        /// Project a parallel run of --scenario on these thread counts (e.g. 2,4,8): the serial run, its
        /// events counted per part and time window of each cut (docs/parallel.md).
        #[arg(long, value_delimiter = ',', value_name = "N,N,...")]
        project_threads: Vec<usize>,
        /// Run --scenario on each of these thread counts (e.g. 1,2): wall time, speedup against the first,
        /// and a check that every count gives the same results (docs/parallel.md).
        #[arg(long, value_delimiter = ',', value_name = "N,N,...")]
        threads: Vec<usize>,
        /// With --scenario: run each thread count as each of these counts of parts not below it (e.g.
        /// --threads 1 --parts 1,28: the serial engine, then 28 parts in turn on one thread), with --threads
        /// 1 if not given: what cutting a fabric into more parts than threads gains (docs/parallel.md).
        #[arg(long, value_delimiter = ',', value_name = "N,N,...")]
        parts: Vec<usize>,
    },
}

/// Exit status of a run stopped by Ctrl-C or SIGTERM (128 + SIGINT, as shells report it).
pub const INTERRUPTED: u8 = 130;

/// Run the command line with `args` (args[0] is the program name). `self_cmd` is how to start this same
/// program again (for `bench`, which measures each scenario in a child process). `stop_asked` says whether
/// the user asked to stop (Ctrl-C, SIGTERM): a run polls it every 65,536 events (well under a millisecond),
/// then writes what it has, marked interrupted, and the command exits with [`INTERRUPTED`].
pub fn main_with(args: Vec<String>, self_cmd: Vec<String>, stop_asked: &mut dyn FnMut() -> bool) -> u8 {
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    if let Cmd::Bench { time, .. } = &cli.cmd {
        if let Err(e) = bench_time(time) {
            return finish(Err(e));
        }
    }
    let res = match cli.cmd {
        Cmd::Run { config, out, seed, sets, quiet, max_memory, strict, threads, parts } => {
            set_max_memory(max_memory);
            match run(config, out, seed, sets, quiet, threads, parts, stop_asked) {
                Ok(RunEnd::Interrupted) => return INTERRUPTED,
                Ok(RunEnd::Stalled) => return 1,
                Ok(RunEnd::Unfinished) if strict => return 1,
                Ok(RunEnd::Done | RunEnd::Unfinished) => Ok(()),
                Err(e) => Err(e),
            }
        }
        Cmd::Check { config, sets, max_memory } => {
            set_max_memory(max_memory);
            match file_kind(&config) {
                FileKind::Topology => return finish(check_topology(&config, &sets)),
                FileKind::Sweep => {
                    return finish(Err(format!(
                        "{}: a sweep file; the Python package's `tailsim check` checks those (every point of its \
                         grid): pip install tailsim",
                        config.display()
                    )))
                }
                FileKind::Experiment => {}
            }
            tailsim::load(&config, &sets)
                .map(|e| {
                    for w in &e.warnings {
                        eprintln!("warning: {w}");
                    }
                    out!(
                        "{}: ok ({} hosts, {} switches, {} links)",
                        config.display(),
                        e.world.net.n_hosts(),
                        e.world.net.switches.len(),
                        e.world.net.ports.len() / 2
                    );
                })
                .map_err(|e| e.to_string())
        }
        Cmd::Bench { scenario, time, project_threads, .. } if !project_threads.is_empty() => {
            match project::main(scenario, time, &project_threads, stop_asked) {
                Ok(project::Ended::Interrupted) => return INTERRUPTED,
                Ok(project::Ended::Done) => Ok(()),
                Err(e) => Err(e),
            }
        }
        Cmd::Bench { scenario, time, threads, parts, in_process, row_json, .. }
            if !threads.is_empty() || !parts.is_empty() =>
        {
            let threads = if threads.is_empty() { vec![1] } else { threads };
            match threads::main(scenario, time, &threads, &parts, in_process, row_json, &self_cmd, stop_asked) {
                Ok(threads::Ended::Interrupted) => {
                    if !in_process {
                        eprintln!("interrupted: the thread counts above finished, the running one was stopped");
                    }
                    return INTERRUPTED;
                }
                Ok(threads::Ended::Done) => Ok(()),
                Err(e) => Err(e),
            }
        }
        Cmd::Bench { scenario, list, time, in_process, .. } => {
            match bench::main(scenario, list, time, in_process, &self_cmd, stop_asked) {
                Ok(bench::Ended::Interrupted) => {
                    if !in_process {
                        eprintln!("interrupted: the scenarios above finished, the running one was stopped");
                    }
                    return INTERRUPTED;
                }
                Ok(bench::Ended::Done) => Ok(()),
                Err(e) => Err(e),
            }
        }
        Cmd::Thresholds { cdf, load, classes } => thresholds(&cdf, load, classes),
        Cmd::Qjump { hosts, rate, packet, eps, f, epoch_factor, epoch, budget, fan_in } => {
            qjump(hosts, &rate, &packet, &eps, &f, epoch_factor, epoch.as_deref(), &budget, fan_in.as_deref())
        }
    };
    finish(res)
}

/// `bench --time`: a positive duration, checked before any scenario starts (a scenario's process would
/// report a bad one as its experiment's `stop.time`, and a zero one would print a row of nothing).
fn bench_time(time: &Option<String>) -> Result<(), String> {
    let Some(t) = time else { return Ok(()) };
    match tailsim::config::units::parse_duration(t) {
        Ok(d) if d.0 > 0 => Ok(()),
        Ok(_) => Err(format!("--time: a benchmark needs a simulated time above zero, found \"{t}\"")),
        Err(e) => Err(format!("--time: {e}")),
    }
}

/// A command's exit status, its error printed.
fn finish(res: Result<(), String>) -> u8 {
    match res {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("error: {e}");
            1
        }
    }
}

/// What a TOML file given to `check` holds.
enum FileKind {
    Experiment,
    Topology,
    Sweep,
}

/// By its suffix (`.topo.toml`, `.sweep.toml`), else by its keys: a sweep has `base` and `grid`, a topology
/// file has `[[link]]`s and no `[topology]`. Anything unreadable is an experiment, whose check says why.
fn file_kind(path: &std::path::Path) -> FileKind {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    if name.ends_with(".topo.toml") {
        return FileKind::Topology;
    }
    if name.ends_with(".sweep.toml") {
        return FileKind::Sweep;
    }
    let Some(t) = std::fs::read_to_string(path).ok().and_then(|s| s.parse::<toml::Table>().ok()) else {
        return FileKind::Experiment;
    };
    if t.contains_key("base") && t.contains_key("grid") {
        FileKind::Sweep
    } else if t.contains_key("link") && !t.contains_key("topology") {
        FileKind::Topology
    } else {
        FileKind::Experiment
    }
}

fn check_topology(path: &std::path::Path, sets: &[String]) -> Result<(), String> {
    if !sets.is_empty() {
        return Err(format!("{}: a topology file: --set applies to experiments only", path.display()));
    }
    let (hosts, switches, links) = tailsim::config::check_topology_file(path)?;
    out!("{}: ok (topology file: {hosts} hosts, {switches} switches, {links} links)", path.display());
    Ok(())
}

fn thresholds(name: &str, load: f64, classes: usize) -> Result<(), String> {
    use tailsim_workload::{equal_count_thresholds, mg1_normalized_fct, optimal_thresholds, SizeCdf};
    if !(1..=8).contains(&classes) {
        return Err(format!("--classes must be 1–8, found {classes}"));
    }
    let cdf = SizeCdf::builtin(name)
        .or_else(|_| SizeCdf::from_file(std::path::Path::new(name), Default::default()))
        .map_err(|e| {
            format!(
                "--cdf: \"{name}\" is neither a built-in CDF ({}) nor a readable CDF file: {e}",
                SizeCdf::builtin_names().join(", ")
            )
        })?;
    let opt = optimal_thresholds(&cdf, load, classes).map_err(|e| e.to_string())?;
    let eq = equal_count_thresholds(&cdf, classes);
    out!("{name}, load {load}, {classes} classes (M/G/1 model of pFabric §6.1 / Appendix A):");
    for (label, t) in [("optimal", &opt), ("equal-count", &eq)] {
        let f: Vec<f64> = t.iter().map(|&x| x as f64).collect();
        let fct = mg1_normalized_fct(&cdf, load, &f).map_err(|e| e.to_string())?;
        let list: Vec<String> = t.iter().map(|b| format!("\"{b}B\"")).collect();
        out!("  {label:<12} class_thresholds = [{}]   model mean normalized FCT {fct:.4}", list.join(", "));
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn qjump(
    hosts: u64,
    rate: &str,
    packet: &str,
    eps: &str,
    f: &str,
    epoch_factor: u32,
    epoch: Option<&str>,
    budget: &str,
    fan_in: Option<&str>,
) -> Result<(), String> {
    use tailsim::qjump::{report, switch_latency, QjumpParams};
    let fv: Vec<f64> = f
        .split(',')
        .map(|x| x.trim().parse::<f64>().map_err(|_| format!("--f: \"{x}\" is not a number")))
        .collect::<Result<_, _>>()?;
    let q =
        QjumpParams::parse(hosts, rate, packet, eps, &fv, epoch_factor, epoch, budget).map_err(|e| format!("--{e}"))?;
    let text = report(&q);
    let shown = text.lines().take(2 + fv.len()).collect::<Vec<_>>().join("\n");
    out!("{shown}");
    if let Some(ns) = fan_in {
        out!("single switch, n senders of one P-byte packet each (Eq. 3.3, n·P/r + ε):");
        for n in ns.split(',') {
            let n: u64 = n.trim().parse().map_err(|_| format!("--fan-in: \"{n}\" is not a whole number"))?;
            out!("  n = {n:>4}: {}", switch_latency(n, q.max_packet, q.edge_rate, q.switch_delay));
        }
    }
    Ok(())
}

/// Run an experiment and write its results; true if it was interrupted (the results then are partial).
#[allow(clippy::too_many_arguments)] // the run command's own options, passed through
fn run(
    config: PathBuf,
    out: Option<PathBuf>,
    seed: Option<u64>,
    mut sets: Vec<String>,
    quiet: bool,
    threads: usize,
    parts: Option<usize>,
    stop_asked: &mut dyn FnMut() -> bool,
) -> Result<RunEnd, String> {
    if let Some(s) = seed {
        sets.push(format!("seed={s}"));
    }
    let (parts, flag) = tailsim::run::parts_of_run(threads, parts, |k, v| match v {
        Some(v) => format!("--{k} {v}"),
        None => format!("--{k}"),
    })?;
    let before = tailsim::run::resident_memory_bytes();
    let mut exp = tailsim::load(&config, &sets).map_err(|e| e.to_string())?;
    for w in &exp.warnings {
        eprintln!("warning: {w}");
    }
    exp.prepare_parts(parts, before, &flag, &config.display().to_string())?;
    if parts > 1 {
        let cores = tailsim::engine::cores();
        if threads > cores {
            eprintln!(
                "warning: --threads {threads} on {cores} cores: parts will wait for a core at every window, slower \
                 than --threads {cores} (the results are the same)"
            );
        }
    }
    // Every part of a parallel run runs in a whole world of its own.
    let others =
        (1..parts).map(|_| tailsim::load(&config, &sets).map_err(|e| e.to_string())).collect::<Result<Vec<_>, _>>()?;
    let dir = out.unwrap_or_else(|| exp.default_out_dir(&sets));
    let show = !quiet && std::io::stderr().is_terminal();
    let mut meter = ProgressLine::new(&exp);
    let mut progress = |p: &tailsim::sim::Progress| {
        if show {
            meter.update(p)
        }
        !stop_asked()
    };
    let summary = if parts == 1 {
        exp.run_interruptible(&mut progress).map_err(|e| format!("run failed: {e}"))?
    } else {
        let (s, par) =
            exp.run_parallel(others, threads, &mut progress).map_err(|e| format!("{flag}: run failed: {e}"))?;
        if !quiet {
            eprintln!(
                "\n{} parts on {threads} thread{}, windows of {}: {} windows, {} packets handed between parts",
                par.parts,
                if threads == 1 { "" } else { "s" },
                par.lookahead,
                par.windows,
                par.handed_over
            );
        }
        s
    };
    if show {
        eprintln!();
    }
    if let Some(e) = exp.world.records.spill_error() {
        eprintln!("warning: {e} (set TAILSIM_SPILL_DIR to a directory with room)");
    }
    exp.write_results(&dir, &summary).map_err(|e| format!("cannot write results to {}: {e}", dir.display()))?;
    // Runs that end with flows nothing could finish: their results are written, and the command fails.
    let at = tailsim::units::Time::from_secs_f64(summary.simulated_seconds);
    let stuck = match summary.stop_reason {
        StopReason::Stalled => Some((
            format!(
                "stalled at {at} simulated: for {:.0} s nothing progressed (no packet delivered, no flow started or \
                 finished) and",
                tailsim::sim::STALL.secs()
            ),
            " — is a host cut off for good?",
        )),
        StopReason::Exhausted => Some((
            format!("no event left at {at} simulated while"),
            ": nothing can move them again (a packet lost where no timer recovers it?).",
        )),
        _ => None,
    };
    if let Some((what, why)) = stuck {
        eprintln!(
            "error: {what} {} of {} flows are unfinished{why} Results so far in {}",
            summary.flows_started - summary.flows_finished,
            summary.flows_started,
            dir.display()
        );
        return Ok(RunEnd::Stalled);
    }
    if summary.stop_reason == StopReason::Interrupted {
        eprintln!(
            "interrupted at {at} simulated ({} of {} flows finished): partial results in {}",
            summary.flows_finished,
            summary.flows_started,
            dir.display()
        );
        return Ok(RunEnd::Interrupted);
    }
    print_summary(&summary);
    out!("results: {}", dir.display());
    let unfinished = summary.flows_started - summary.flows_finished;
    if unfinished > 0 {
        eprintln!(
            "warning: {unfinished} of {} flows did not finish (stop: {}); the table's FCTs and slowdowns are of \
             finished flows only (`finished = false` in the flows table; --strict makes this an error)",
            summary.flows_started,
            summary.stop_reason.name()
        );
        return Ok(RunEnd::Unfinished);
    }
    Ok(RunEnd::Done)
}

/// How a run that wrote its results ended.
enum RunEnd {
    Done,
    /// Ended (time limit, event budget) with flows left unfinished.
    Unfinished,
    Interrupted,
    /// Ended stalled or exhausted: flows are left that nothing could finish (the command fails).
    Stalled,
}

/// `--max-memory`: the limit the configuration's checks apply (config/limits.rs reads TAILSIM_MAX_MEMORY).
fn set_max_memory(v: Option<String>) {
    if let Some(v) = v {
        std::env::set_var("TAILSIM_MAX_MEMORY", v);
    }
}

/// A one-line live status: simulated time, speed, flows, ETA.
struct ProgressLine {
    t0: Instant,
    last: Instant,
    completion: tailsim::run::Completion,
}

impl ProgressLine {
    fn new(exp: &Experiment) -> Self {
        let now = Instant::now();
        ProgressLine { t0: now, last: now, completion: exp.completion() }
    }
    fn update(&mut self, p: &Progress) {
        let now = Instant::now();
        if now.duration_since(self.last).as_secs_f64() < 0.5 {
            return;
        }
        self.last = now;
        let wall = now.duration_since(self.t0).as_secs_f64();
        let frac = self.completion.fraction(p);
        let eta = frac.filter(|f| *f > 0.0).map_or("?".into(), |f| format!("{:.0}s", wall * (1.0 - f).max(0.0) / f));
        eprint!(
            "\r  sim {:>10} | {:>6.2} M events/s | flows {}/{} done, {} active | ETA {}   ",
            p.now.to_string(),
            p.events as f64 / wall / 1e6,
            p.flows_finished,
            p.flows_started,
            p.active_flows,
            eta
        );
    }
}

use tailsim::net::port::DropReason;

fn print_summary(s: &Summary) {
    out!(
        "{}: {} flows ({} finished), {:.6} s simulated in {:.2} s wall; {:.2} M events/s, {:.2} M packet-hops/s; stop: {}",
        s.name, s.flows_started, s.flows_finished, s.simulated_seconds, s.wall_seconds, s.events_per_second / 1e6, s.packet_hops_per_second / 1e6, s.stop_reason.name()
    );
    let drops: Vec<String> = DropReason::ALL
        .iter()
        .filter(|&&why| s.packets.drops[why] > 0)
        .map(|&why| format!("{} {}", s.packets.drops[why], why.name().replace('_', " ")))
        .collect();
    out!(
        "packets: {} delivered, {} dropped{}, {} ECN-marked",
        s.packets.delivered,
        s.packets.dropped,
        if drops.is_empty() { String::new() } else { format!(" ({})", drops.join(", ")) },
        s.packets.ecn_marked
    );
    if s.packets.made_by_switches + s.packets.copies > 0 {
        out!(
            "network packets: {} made by switches, {} copies, {} consumed at hosts, {} consumed by mechanisms",
            s.packets.made_by_switches,
            s.packets.copies,
            s.packets.sunk,
            s.packets.absorbed
        );
    }
    for line in summary_table(&s.buckets) {
        out!("{line}");
    }
}

/// The stop reason as summary.json spells it ("finished", "time-limit", …).
/// A duration in µs, in the unit that suits it: "812.4us", "41.79ms", "1.234s"; "–" when there is none.
fn duration_us(us: f64) -> String {
    if !us.is_finite() {
        "–".into()
    } else if us < 1e3 {
        format!("{us:.1}us")
    } else if us < 1e6 {
        format!("{:.2}ms", us / 1e3)
    } else {
        format!("{:.3}s", us / 1e6)
    }
}

/// The bucket table: FCT and slowdown mean and percentiles per size bucket. A percentile p resting on fewer
/// than 1/(1−p) finished flows is (near) the maximum: it is marked `*`, with a footnote.
fn summary_table(buckets: &[tailsim::metrics::BucketStats]) -> Vec<String> {
    // Two header lines: the groups ("FCT", "slowdown") over their columns, then the statistics.
    let mut lines = vec![
        format!("{:<16} {:>8} {:>6} {:─^44} {:─^40}", "", "", "", " FCT ", " slowdown "),
        format!(
            "{:<16} {:>8} {:>6} {:>10} {:>10} {:>10} {:>11} {:>9} {:>9} {:>9} {:>10}",
            "size bucket", "flows", "unfin", "mean", "p50", "p99", "p99.9", "mean", "p50", "p99", "p99.9"
        ),
    ];
    let mut thin = false;
    for b in buckets {
        let n = b.flows - b.unfinished;
        let mut mark = |v: String, p: f64| {
            if n > 0 && (n as f64) < 1.0 / (1.0 - p) - 1e-9 {
                thin = true;
                format!("{v}*")
            } else {
                v
            }
        };
        let sd = |v: f64| if v.is_finite() { format!("{v:.3}") } else { "–".into() };
        let (f99, f999) = (mark(duration_us(b.fct_p99_us), 0.99), mark(duration_us(b.fct_p999_us), 0.999));
        let (s99, s999) = (mark(sd(b.slowdown_p99), 0.99), mark(sd(b.slowdown_p999), 0.999));
        lines.push(format!(
            "{:<16} {:>8} {:>6} {:>10} {:>10} {:>10} {:>11} {:>9} {:>9} {:>9} {:>10}",
            b.bucket,
            b.flows,
            b.unfinished,
            duration_us(b.fct_mean_us),
            duration_us(b.fct_p50_us),
            f99,
            f999,
            sd(b.slowdown_mean),
            sd(b.slowdown_p50),
            s99,
            s999
        ));
    }
    lines.push("(slowdown: FCT over the flow's ideal FCT on an empty network; – = no finished flow)".into());
    if thin {
        lines.push(
            "* fewer than 1/(1−p) finished flows in the bucket (100 for p99, 1000 for p99.9): the value is the \
             largest or near it, not a tail estimate"
                .into(),
        );
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use tailsim::metrics::BucketStats;

    fn bucket(name: &str, flows: usize, unfinished: usize, fct_us: f64) -> BucketStats {
        BucketStats {
            bucket: name.into(),
            flows,
            unfinished,
            fct_mean_us: fct_us,
            fct_p50_us: fct_us,
            fct_p99_us: fct_us,
            fct_p999_us: fct_us,
            slowdown_mean: 1.5,
            slowdown_p50: 1.5,
            slowdown_p99: 1.5,
            slowdown_p999: 1.5,
        }
    }

    #[test]
    fn durations_are_shown_in_the_unit_that_suits_them() {
        assert_eq!(duration_us(812.44), "812.4us");
        assert_eq!(duration_us(41_786.8), "41.79ms");
        assert_eq!(duration_us(1_234_567.0), "1.235s");
        assert_eq!(duration_us(f64::NAN), "–");
    }

    #[test]
    fn the_table_marks_thin_percentiles_and_empty_buckets() {
        let t = summary_table(&[
            bucket("(0,100KB]", 1000, 0, 50.0),
            bucket("(100KB,10MB]", 150, 50, 2000.0),
            bucket("(10MB,inf)", 3, 3, f64::NAN),
        ]);
        // Grouped headers: "FCT" and "slowdown" over their four columns each (no "sd", read as a deviation).
        assert!(t[0].contains(" FCT ") && t[0].contains(" slowdown ") && !t[0].contains("sd"), "{}", t[0]);
        assert_eq!(t[1].matches("p99.9").count(), 2, "{}", t[1]);
        // The group titles sit over their own columns (character positions: the rules are multi-byte).
        let col = |line: &str, pat: &str| line[..line.find(pat).unwrap()].chars().count();
        assert!(col(&t[0], " FCT ") < col(&t[1], "p99.9") && col(&t[1], "p99.9") < col(&t[0], " slowdown "));
        // 1000 finished flows: p99 and p99.9 both judged; 100 finished: p99 judged, p99.9 marked.
        assert!(!t[2].contains('*'), "{}", t[2]);
        assert_eq!(t[3].matches('*').count(), 2, "{}", t[3]);
        assert!(t[3].contains("2.00ms"), "{}", t[3]);
        // No finished flow: dashes, not NaN, and no marker.
        assert!(t[4].contains('–') && !t[4].contains("NaN") && !t[4].contains('*'), "{}", t[4]);
        assert!(t.last().unwrap().starts_with("* fewer than"), "{t:?}");
        // Nothing thin: no footnote.
        let t = summary_table(&[bucket("all", 5000, 0, 50.0)]);
        assert!(!t.iter().any(|l| l.contains('*')), "{t:?}");
    }

    #[test]
    fn stop_reasons_are_spelled_as_in_summary_json() {
        // One spelling (StopReason::name) for the table and summary.json, and the one Python and the docs read.
        for (r, spelled) in [
            (StopReason::Finished, "finished"),
            (StopReason::TimeLimit, "time-limit"),
            (StopReason::EventBudget, "event-budget"),
            (StopReason::Interrupted, "interrupted"),
            (StopReason::Stalled, "stalled"),
            (StopReason::Exhausted, "exhausted"),
        ] {
            assert_eq!(r.name(), spelled);
            assert_eq!(serde_json_name(r), spelled);
        }
    }

    fn serde_json_name(r: StopReason) -> String {
        serde_json::to_value(r).unwrap().as_str().unwrap().to_string()
    }
}
