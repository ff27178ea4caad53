//! The `tailsim` binary stops a run on SIGINT or SIGTERM, writes what it simulated and exits 130; a run that
//! leaves flows unfinished warns (and with --strict exits 1); a stalled run exits 1.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn example() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/pfabric-websearch-dctcp.toml")
}

fn stop_with(signal: &str) {
    let out = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("tailsim-interrupt-{signal}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    // Ten million flows: hours of simulation, so only the signal ends it.
    let child = Command::new(env!("CARGO_BIN_EXE_tailsim"))
        .args(["run", example().to_str().unwrap(), "--set", "workload[0].flows=10000000", "--out"])
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(1));
    let t0 = Instant::now();
    let ok = Command::new("kill").args([&format!("-{signal}"), &child.id().to_string()]).status().unwrap();
    assert!(ok.success());
    let res = child.wait_with_output().unwrap();
    let waited = t0.elapsed();
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert_eq!(res.status.code(), Some(130), "{stderr}");
    assert!(waited < Duration::from_secs(2), "took {waited:?} to stop");
    assert!(stderr.trim().starts_with("interrupted at ") && stderr.trim().lines().count() == 1, "{stderr}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["stop_reason"], "interrupted");
    let (done, started) = (summary["flows_finished"].as_u64().unwrap(), summary["flows_started"].as_u64().unwrap());
    assert!(done > 0 && done < started, "{done} of {started}");
    assert!(out.join("flows.parquet").exists());
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn sigint_stops_a_run_and_keeps_its_results() {
    stop_with("INT");
}

#[test]
fn sigterm_stops_a_run_and_keeps_its_results() {
    stop_with("TERM");
}

#[test]
fn unfinished_flows_are_a_warning_and_with_strict_an_error() {
    let out =
        std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("tailsim-strict-{}", std::process::id()));
    let run = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_tailsim"))
            .args(["run", example().to_str().unwrap(), "-q", "--set", "workload[0].flows=300", "--out"])
            .arg(&out)
            .args(extra)
            .output()
            .unwrap()
    };
    // 20 ms: some of the 300 flows (the largest) are still running.
    let cut = ["--set", "stop.time=\"20ms\""];
    let r = run(&cut);
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("flows did not finish (stop: time-limit)"), "{stderr}");
    assert!(String::from_utf8_lossy(&r.stdout).contains("stop: time-limit"));
    let r = run(&[&cut[..], &["--strict"]].concat());
    assert_eq!(r.status.code(), Some(1), "{}", String::from_utf8_lossy(&r.stderr));
    // Every flow finished: no warning, and --strict is content.
    let r = run(&["--strict"]);
    assert_eq!(r.status.code(), Some(0), "{}", String::from_utf8_lossy(&r.stderr));
    assert!(!String::from_utf8_lossy(&r.stderr).contains("warning"));
    std::fs::remove_dir_all(&out).unwrap();
}

/// Processes whose environment holds `mark` (the bench's scenario processes inherit it).
fn marked(mark: &str) -> Vec<String> {
    let needle = format!("TAILSIM_TEST_MARK={mark}");
    std::fs::read_dir("/proc")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().chars().all(|c| c.is_ascii_digit()))
                .filter(|e| {
                    std::fs::read(e.path().join("environ"))
                        .is_ok_and(|env| env.split(|&b| b == 0).any(|v| v == needle.as_bytes()))
                })
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Start `tailsim args` with `mark` in its environment, wait `settle`, check it runs with one child process
/// (a bench's scenario or thread count), send it `signal`, and check that it and its child stop within a
/// second, with exit 130 and one line on stderr, leaving nothing in the temporary directory (the child's
/// scratch copy of the scenarios' files).
fn signal_stops_bench_and_its_child(args: &[&str], settle: Duration, signal: &str) {
    let mark = format!("bench-{signal}-{}-{}", args.len(), std::process::id());
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(&mark);
    std::fs::create_dir_all(&tmp).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_tailsim"))
        .args(args)
        .env("TAILSIM_TEST_MARK", &mark)
        .env("TMPDIR", &tmp)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(settle);
    assert_eq!(marked(&mark).len(), 2, "{args:?}: the bench and its child process run");
    let t0 = Instant::now();
    assert!(Command::new("kill").args([&format!("-{signal}"), &child.id().to_string()]).status().unwrap().success());
    let res = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert_eq!(res.status.code(), Some(130), "{args:?} {signal}: {stderr}");
    assert!(t0.elapsed() < Duration::from_secs(1), "{args:?} {signal}: took {:?}", t0.elapsed());
    assert!(stderr.trim().lines().count() == 1 && stderr.contains("interrupted"), "{stderr}");
    std::thread::sleep(Duration::from_millis(200));
    assert!(marked(&mark).is_empty(), "{args:?} {signal}: left {:?}", marked(&mark));
    let left: Vec<_> = std::fs::read_dir(&tmp).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(left.is_empty(), "{args:?} {signal}: left {left:?} in the temporary directory");
    std::fs::remove_dir(&tmp).unwrap();
}

/// `tailsim bench` runs each scenario in a child process: a signal to the parent alone (as `kill` or a
/// supervisor sends it) stops it within a second, with exit 130, one line and no scenario process left.
#[test]
fn a_signal_stops_bench_and_its_scenario_process() {
    if !cfg!(target_os = "linux") {
        return;
    }
    for signal in ["INT", "TERM"] {
        signal_stops_bench_and_its_child(&["bench", "--scenario", "flows-1m"], Duration::from_millis(700), signal);
    }
}

/// `tailsim bench --threads` runs each thread count in a child process: the same.
#[test]
fn a_signal_stops_bench_threads_and_its_count_process() {
    if !cfg!(target_os = "linux") {
        return;
    }
    let args = ["bench", "--scenario", "fattree1024-ws", "--time", "50ms", "--threads", "2,1"];
    signal_stops_bench_and_its_child(&args, Duration::from_millis(1500), "INT");
}
