//! `tailsim bench`: fixed scenarios, each run in its own child process so that peak memory is its own.

use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

/// (name, description, experiment TOML, default simulated time). The TOML files are shared with the golden
/// test (crates/tailsim/tests/golden.rs). Files they name are in `FILES`.
pub(crate) const SCENARIOS: &[(&str, &str, &str, &str)] = &[
    (
        "pfabric-websearch-dctcp",
        "pfabric-144, web search, DCTCP (K = 22.5KB, 225KB buffers), load 0.6, ECMP",
        include_str!("../../../examples/bench/pfabric-websearch-dctcp.toml"),
        "20ms",
    ),
    (
        "fattree128-perm-100g",
        "k = 8 fat tree (128 hosts, 100 Gbps, 1 us links), permutation of 2 MB flows, TCP, 1500 B packets (htsim's comparison setup)",
        include_str!("../../../examples/bench/fattree128-perm-100g.toml"),
        "100ms",
    ),
    (
        "detail-128-alltoall",
        "detail-128 (CIOQ, 1 Gbps), DeTail (PFC + adaptive load balancing), all-to-all 2/8/32 KB retrievals at 2000/s per server + 1 MB background flows",
        include_str!("../../../examples/bench/detail-128-alltoall.toml"),
        "200ms",
    ),
    (
        "fastlane-128",
        "fastlane-128 (10 Gbps, 4:1, 128 KB), TCP + CoDel with FastLane notices, 60 % core load, half partition-aggregate bursts of 2-32 KB, half 1 MB",
        include_str!("../../../examples/bench/fastlane-128.toml"),
        "100ms",
    ),
    (
        "burstradar-cache",
        "burstradar-testbed (one switch, 10 Gbps test link), BurstRadar at 5 % of a 25 us RTT, 160 B cells; 1 Gbps background + 25 Gbps bursts, cache-like small packets",
        include_str!("../../../examples/bench/burstradar-cache.toml"),
        "10s",
    ),
    (
        "sqr-websearch",
        "sqr-testbed (two-pod fat tree, 10 Gbps, CUBIC), SB'+SQR with the Queue Ring, web search at 50 % load between 5 hosts, sw6-sw10 down 760 us every 20 ms",
        include_str!("../../../examples/bench/sqr-websearch.toml"),
        "200ms",
    ),
    (
        "lg-100g-stress",
        "lg-100g (sw2 = sw6 at 100 Gbps), 1518 B frames at line rate over a link corrupting 1e-3 one way, LinkGuardian ordered with 2 copies",
        include_str!("../../../examples/bench/lg-100g-stress.toml"),
        "200ms",
    ),
    (
        "htsim-p2",
        "side by side with htsim (p2): htsim's 128-host fat-tree file, 2 MB permutation, NDP as htsim_ndp runs it (spraying, trimming at 8 packets, 1500 B)",
        include_str!("../../../examples/bench/htsim-p2.toml"),
        "10ms",
    ),
    (
        "htsim-ws",
        "side by side with htsim (ws): htsim's 128-host fat-tree file, web search at 50 % (961 flows over 2 ms), NDP as htsim-p2",
        include_str!("../../../examples/bench/htsim-ws.toml"),
        "20ms",
    ),
    (
        "htsim-p2-1024",
        "side by side with htsim (p2-1024): htsim's 1,024-host fat-tree file, 2 MB permutation, NDP as htsim-p2",
        include_str!("../../../examples/bench/htsim-p2-1024.toml"),
        "10ms",
    ),
    (
        "fattree1024-ws",
        "k = 16 fat tree (1,024 hosts, 100 Gbps, 1 us links), web search at 50 %, NDP as htsim-ws: the parallel run's scenario (docs/parallel.md)",
        include_str!("../../../examples/bench/fattree1024-ws.toml"),
        "1ms",
    ),
    (
        "fattree1024-dctcp",
        "k = 16 fat tree (1,024 hosts, 100 Gbps, 1 us links), web search at 50 %, DCTCP (K = 100 KB, 1 MB buffers), ECMP: TCP's flows in a parallel run (docs/parallel.md)",
        include_str!("../../../examples/bench/fattree1024-dctcp.toml"),
        "1ms",
    ),
    (
        "fattree1024-pfc",
        "k = 16 fat tree (1,024 hosts, 100 Gbps, 1 us links), web search at 50 %, RDMA over PFC (lossless), ECMP: a switch mechanism in a parallel run (docs/parallel.md)",
        include_str!("../../../examples/bench/fattree1024-pfc.toml"),
        "1ms",
    ),
    (
        "fattree1024-cbr",
        "k = 16 fat tree (1,024 hosts, 100 Gbps, 1 us links), raw bursts at 50 % from every host, sprayed: what a parallel run takes today (docs/parallel.md)",
        include_str!("../../../examples/bench/fattree1024-cbr.toml"),
        "500us",
    ),
    (
        "fattree5488-cbr",
        "k = 28 fat tree (5,488 hosts, 980 switches, 100 Gbps, 1 us links), raw bursts at 50 % from every host, sprayed: a parallel run at scale (docs/parallel.md)",
        include_str!("../../../examples/bench/fattree5488-cbr.toml"),
        "50us",
    ),
    (
        "fattree5488-perm-ndp",
        "k = 28 fat tree (5,488 hosts, 980 switches, 100 Gbps), 2 MB permutation, NDP as htsim-p2: the per-hop cost at scale (--parts 1,28: cut into parts for the cache)",
        include_str!("../../../examples/bench/fattree5488-perm-ndp.toml"),
        "20us",
    ),
    (
        "fabric-6144",
        "building a 6,144-host fat tree (24 pods, 1,024 switches, 36,864 ports) and one 1 KB flow: build s and the fabric's memory",
        include_str!("../../../examples/bench/fabric-6144.toml"),
        "1ms",
    ),
    (
        "flows-100k",
        "pfabric-144, DCTCP, 100 000 flows of Homa's W1 sizes at 60 % load: the peak memory beside flows-1m's is what finished flows cost",
        include_str!("../../../examples/bench/flows-100k.toml"),
        "10s",
    ),
    (
        "flows-1m",
        "pfabric-144, DCTCP, 1 000 000 flows of Homa's W1 sizes at 60 % load (see flows-100k)",
        include_str!("../../../examples/bench/flows-1m.toml"),
        "10s",
    ),
];

/// Files the scenarios name, by their paths in the repository: written into a scratch directory in the same
/// layout, so a scenario's TOML (in `examples/bench/`) finds them at the relative paths it names, here and in
/// a checkout (`tailsim check examples/bench/htsim-p2.toml`).
const FILES: &[(&str, &str)] = &[
    ("workloads/htsim/fat_tree_128_100g.topo", include_str!("../../../workloads/htsim/fat_tree_128_100g.topo")),
    ("workloads/htsim/perm128_2MB.cm", include_str!("../../../workloads/htsim/perm128_2MB.cm")),
    ("workloads/htsim/ws128_100g_l50_2ms.cm", include_str!("../../../workloads/htsim/ws128_100g_l50_2ms.cm")),
    ("workloads/htsim/fat_tree_1024_100g.topo", include_str!("../../../workloads/htsim/fat_tree_1024_100g.topo")),
    ("workloads/htsim/perm1024_2MB.cm", include_str!("../../../workloads/htsim/perm1024_2MB.cm")),
    ("workloads/htsim/fat_tree_6144_100g.topo", include_str!("../../../workloads/htsim/fat_tree_6144_100g.topo")),
    ("examples/bench/fabric-6144.csv", include_str!("../../../examples/bench/fabric-6144.csv")),
];

/// A scratch directory holding `FILES`, removed when dropped; `base()` is the scenarios' directory in it.
pub(crate) struct Files(std::path::PathBuf);

impl Files {
    /// The scratch directory of the process `pid`.
    fn dir(pid: u32) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("tailsim-bench-{pid}"))
    }
    pub(crate) fn write() -> Result<Files, String> {
        let files = Files(Files::dir(std::process::id()));
        for (name, text) in FILES {
            let p = files.0.join(name);
            let parent = p.parent().expect("a file in a directory");
            std::fs::create_dir_all(parent).map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
            std::fs::write(&p, text).map_err(|e| format!("cannot write {}: {e}", p.display()))?;
        }
        Ok(files)
    }
    pub(crate) fn base(&self) -> std::path::PathBuf {
        self.0.join("examples/bench")
    }
}

impl Drop for Files {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// One scenario of `--scenario`, its files written, to load as often as a measurement needs
/// (`--threads`, `--project-threads`); `flag` names the option in the errors.
pub(crate) struct Scenario {
    pub(crate) name: String,
    toml: &'static str,
    pub(crate) time: String,
    files: Files,
}

impl Scenario {
    pub(crate) fn find(flag: &str, scenario: Option<String>, time: Option<String>) -> Result<Scenario, String> {
        let name = scenario.ok_or_else(|| format!("{flag} needs --scenario (one scenario; see --list)"))?;
        let (_, _, toml, default_time) =
            SCENARIOS.iter().find(|s| s.0 == name).ok_or_else(|| format!("no scenario \"{name}\"; see --list"))?;
        let time = time.unwrap_or_else(|| default_time.to_string());
        Ok(Scenario { name, toml, time, files: Files::write()? })
    }
    pub(crate) fn load(&self) -> Result<tailsim::Experiment, String> {
        tailsim::load_str(self.toml, &self.name, &self.files.base(), &[format!("stop.time=\"{}\"", self.time)])
            .map_err(|e| e.to_string())
    }
}

/// CPU time this thread has used (Linux: /proc/thread-self/schedstat, nanoseconds), None elsewhere.
fn thread_cpu_seconds() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    Some(s.split_whitespace().next()?.parse::<u64>().ok()? as f64 * 1e-9)
}

/// Run `exp` and measure the CPU seconds of the simulating thread (what side-by-side.sh compares), else the
/// wall seconds.
pub(crate) fn timed_run(
    exp: &mut tailsim::Experiment,
    stop_asked: &mut dyn FnMut() -> bool,
) -> Result<(tailsim::run::Summary, f64), String> {
    let cpu0 = thread_cpu_seconds();
    let s = exp.run_interruptible(&mut |_| !stop_asked())?;
    let cpu = match (cpu0, thread_cpu_seconds()) {
        (Some(a), Some(b)) if b > a => b - a,
        _ => s.wall_seconds,
    };
    Ok((s, cpu))
}

/// How `tailsim bench` ended.
pub enum Ended {
    Done,
    /// Ctrl-C or SIGTERM: the running scenario was stopped and no other started.
    Interrupted,
}

pub fn main(
    only: Option<String>,
    list: bool,
    time: Option<String>,
    in_process: bool,
    self_cmd: &[String],
    stop_asked: &mut dyn FnMut() -> bool,
) -> Result<Ended, String> {
    if list {
        for (n, d, _, t) in SCENARIOS {
            out!("{n:<28} {d} (default {t} simulated)");
        }
        return Ok(Ended::Done);
    }
    let chosen: Vec<_> = SCENARIOS.iter().filter(|s| only.as_deref().is_none_or(|o| o == s.0)).collect();
    if chosen.is_empty() {
        return Err(format!("no scenario \"{}\"; see --list", only.unwrap_or_default()));
    }
    if !in_process {
        out!(
            "{:<28} {:>9} {:>8} {:>8} {:>12} {:>10} {:>13} {:>13} {:>10} {:>12} {:>9} {:>8}",
            "scenario",
            "sim s",
            "build s",
            "wall s",
            "events",
            "M ev/s",
            "M pkt-hops/s",
            "M hops/cpu-s",
            "copies",
            "wall/sim s",
            "peak MB",
            "sim MB"
        );
        for s in chosen {
            let what = format!("scenario {}", s.0);
            let Some(out) = bench_apart(self_cmd, &["--scenario", s.0], &time, &what, stop_asked)? else {
                return Ok(Ended::Interrupted);
            };
            out_raw!("{out}");
        }
        return Ok(Ended::Done);
    }
    let files = Files::write()?;
    for (name, _, toml, default_time) in chosen {
        let t = time.clone().unwrap_or_else(|| default_time.to_string());
        // What the process held before the scenario: an interpreter, when started from the Python package.
        let before = tailsim::run::resident_memory_bytes().unwrap_or(0);
        let t0 = std::time::Instant::now();
        let mut exp =
            tailsim::load_str(toml, name, &files.base(), &[format!("stop.time=\"{t}\"")]).map_err(|e| e.to_string())?;
        let build = t0.elapsed().as_secs_f64();
        // Packet-hops per CPU second of the simulation (what side-by-side.sh compares), else per wall second.
        let (s, cpu) = timed_run(&mut exp, stop_asked)?;
        if s.stop_reason == tailsim::sim::StopReason::Interrupted {
            return Ok(Ended::Interrupted);
        }
        let peak = s.peak_memory_bytes.unwrap_or(0);
        out!(
            "{:<28} {:>9.4} {:>8.2} {:>8.2} {:>12} {:>10.2} {:>13.2} {:>13.2} {:>10} {:>12.1} {:>9.1} {:>8.1}",
            name,
            s.simulated_seconds,
            build,
            s.wall_seconds,
            s.events,
            s.events_per_second / 1e6,
            s.packet_hops_per_second / 1e6,
            s.packet_hops as f64 / cpu / 1e6,
            // Packets the switches made or copied (BurstRadar's couriers, FastLane's notices): their hops are
            // in the packet-hops, their count here, so a mechanism's share of the work can be seen.
            s.packets.copies + s.packets.made_by_switches,
            s.wall_seconds / s.simulated_seconds.max(1e-12),
            peak as f64 / 1e6,
            peak.saturating_sub(before) as f64 / 1e6
        );
    }
    Ok(Ended::Done)
}

/// Run `bench --in-process` with `args` (and `--time`, if given) in a child process of this program
/// (`self_cmd`), so that its peak memory is its own, and return what it printed; None if it was interrupted
/// (a Ctrl-C here, or its own exit code saying so). `what` names the run in errors; a failed run's error is
/// its standard error.
pub(crate) fn bench_apart(
    self_cmd: &[String],
    args: &[&str],
    time: &Option<String>,
    what: &str,
    stop_asked: &mut dyn FnMut() -> bool,
) -> Result<Option<String>, String> {
    let (exe, pre) = self_cmd.split_first().ok_or("no command to start the benchmark with")?;
    let mut cmd = Command::new(exe);
    cmd.args(pre).args(["bench", "--in-process"]).args(args);
    if let Some(t) = time {
        cmd.args(["--time", t]);
    }
    let child =
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().map_err(|e| format!("cannot start {exe}: {e}"))?;
    let pid = child.id();
    let Some(out) = wait_or_stop(child, stop_asked).map_err(|e| format!("{what}: {e}"))? else {
        // Killed before it could remove its scratch directory (it holds the scenarios' files): every Ctrl-C
        // of a bench left one behind in the temporary directory.
        let _ = std::fs::remove_dir_all(Files::dir(pid));
        return Ok(None);
    };
    if out.status.code() == Some(i32::from(crate::INTERRUPTED)) {
        return Ok(None);
    }
    if !out.status.success() {
        return Err(child_failed(what, &out.stderr));
    }
    Ok(Some(String::from_utf8_lossy(&out.stdout).into_owned()))
}

/// The error of a scenario's process that failed: `what` and its standard error, which it began with
/// "error: " as this process will (`finish`), so that is said once.
fn child_failed(what: &str, stderr: &[u8]) -> String {
    let err = String::from_utf8_lossy(stderr);
    format!("{what} failed: {}", err.trim().trim_start_matches("error: "))
}

/// Wait for a scenario's process, polling for Ctrl-C: if the user asks to stop, the child is killed (it
/// may not have seen the signal: a SIGTERM or a `kill` reaches only this process) and None returned.
///
/// Its output is read while it runs, a thread for each pipe: a child whose report outgrows the pipe's buffer
/// (64 KiB; `bench --threads`'s report of `fattree5488-cbr` holds every host's sink) would otherwise block
/// on its write while this waited for it to end, for good.
fn wait_or_stop(mut child: Child, stop_asked: &mut dyn FnMut() -> bool) -> std::io::Result<Option<Output>> {
    fn drain(pipe: Option<impl std::io::Read + Send + 'static>) -> std::thread::JoinHandle<Vec<u8>> {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut p) = pipe {
                // A read error ends the output there; the exit status still tells what happened.
                let _ = p.read_to_end(&mut buf);
            }
            buf
        })
    }
    let (out, err) = (drain(child.stdout.take()), drain(child.stderr.take()));
    let collect = |h: std::thread::JoinHandle<Vec<u8>>| h.join().unwrap_or_default();
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(Output { status, stdout: collect(out), stderr: collect(err) }));
        }
        if stop_asked() {
            let _ = child.kill();
            let _ = child.wait();
            // The pipes close with the child: the readers end.
            let _ = (collect(out), collect(err));
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_scenario_process_is_named_and_its_error_said_once() {
        let e = child_failed("scenario htsim-p2", b"error: htsim-p2: key `stop.time`: expected a duration\n");
        assert_eq!(e, "scenario htsim-p2 failed: htsim-p2: key `stop.time`: expected a duration");
        // A panic's message (which has no such prefix) is kept whole.
        let e = child_failed("scenario x", b"thread 'main' panicked at src/x.rs:1:1:\nboom\n");
        assert_eq!(e, "scenario x failed: thread 'main' panicked at src/x.rs:1:1:\nboom");
    }

    /// A scenario whose file stopped loading (a renamed key, a removed preset) would only show when someone
    /// benchmarks; every one must load with its default time.
    #[test]
    fn every_scenario_loads() {
        for (name, _, toml, time) in SCENARIOS {
            let files = Files::write().unwrap();
            if let Err(e) = tailsim::load_str(toml, name, &files.base(), &[format!("stop.time=\"{time}\"")]) {
                panic!("bench scenario {name}: {e}");
            }
        }
    }
}
