//! `tailsim run --threads N` and `tailsim bench --threads` (docs/parallel.md): the result files of a run on
//! two threads are those of one thread; what a parallel run cannot take yet is a clear error.

use std::path::{Path, PathBuf};
use std::process::Command;

fn tailsim(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tailsim")).args(args).output().expect("tailsim");
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

fn scratch(name: &str) -> PathBuf {
    let d = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("tailsim-threads-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A k = 4 fat tree, every host bursting raw packets to the host five further on, and three more sources
/// into host 0 (drops).
fn raw_experiment(dir: &Path) -> PathBuf {
    let mut t = String::from(
        "name = \"raw\"\nseed = 3\n[topology]\nkind = \"fat-tree\"\nk = 4\nrate = \"10Gbps\"\ndelay = \"1us\"\n\
         [switch]\nbuffer = \"30KB\"\n[routing]\nload_balance = \"spray\"\n[stop]\ntime = \"300us\"\n",
    );
    for (i, dst) in (0..16).map(|i| (i, (i + 5) % 16)).chain([(3, 0), (9, 0), (14, 0)]) {
        t += &format!(
            "[[workload]]\nkind = \"cbr\"\nsrc = {i}\ndst = {dst}\nline_rate = \"10Gbps\"\nsize = 1000\n\
             on = [[1, 0.0], [20, 1.0]]\noff = [[1, 0.0], [20, 1.0]]\nuntil = \"300us\"\n"
        );
    }
    let p = dir.join("raw.toml");
    std::fs::write(&p, t).unwrap();
    p
}

/// NDP flows on a k = 4 fat tree with trimming switches: web-search flows between random hosts and an
/// incast, to the end (every flow finished).
fn ndp_experiment(dir: &Path) -> PathBuf {
    let t = "name = \"ndp\"\nseed = 5\n[topology]\nkind = \"fat-tree\"\nk = 4\nrate = \"10Gbps\"\ndelay = \"1us\"\n\
             [switch]\ntrim = \"12KB\"\n[routing]\nload_balance = \"spray\"\n[transport]\nkind = \"ndp\"\n\
             [[workload]]\nkind = \"poisson\"\ncdf = \"websearch\"\nload = 0.6\nflows = 150\n\
             [[workload]]\nkind = \"incast\"\nsenders = 6\nsize = \"40KB\"\ncount = 2\ninterval = \"200us\"\n";
    let p = dir.join("ndp.toml");
    std::fs::write(&p, t).unwrap();
    p
}

#[test]
fn two_threads_write_the_result_files_of_one() {
    let d = scratch("files");
    for cfg in [raw_experiment(&d), ndp_experiment(&d)] {
        same_files_for_every_thread_count(&d, &cfg);
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// `cfg` run on 1, 2 and 4 threads, and as more parts than threads (4 parts in turn on one thread, 3 on
/// two), writes the same files (summary.json the same but for wall time and memory).
fn same_files_for_every_thread_count(d: &Path, cfg: &Path) {
    let name = cfg.file_stem().unwrap().to_str().unwrap();
    let mut dirs = vec![];
    for (n, parts) in [("1", None), ("2", None), ("4", None), ("1", Some("4")), ("2", Some("3"))] {
        let out = d.join(format!("{name}-{n}-{}", parts.unwrap_or("")));
        let mut args = vec!["run", cfg.to_str().unwrap(), "--quiet", "--threads", n, "--out", out.to_str().unwrap()];
        args.extend(parts.map(|p| ["--parts", p]).iter().flatten());
        let (ok, o, e) = tailsim(&args);
        assert!(ok, "--threads {n}, --parts {parts:?}: {o}{e}");
        // More threads than cores is allowed (same results) but said to be slower.
        let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
        let warned = e.contains(&format!("warning: --threads {n} on {cores} cores"));
        assert_eq!(warned, n.parse::<usize>().unwrap() > cores, "--threads {n}: {e}");
        dirs.push(out);
    }
    let mut files: Vec<_> = std::fs::read_dir(&dirs[0]).unwrap().map(|f| f.unwrap().file_name()).collect();
    files.sort();
    assert!(files.iter().any(|f| f == "ports.parquet") && files.iter().any(|f| f == "summary.json"), "{files:?}");
    let summary = |dir: &Path| {
        let text = std::fs::read_to_string(dir.join("summary.json")).unwrap();
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        for k in ["wall_seconds", "events_per_second", "packet_hops_per_second", "peak_memory_bytes"] {
            v.as_object_mut().unwrap().remove(k).unwrap();
        }
        v
    };
    let one = summary(&dirs[0]);
    assert!(one["packet_hops"].as_u64().unwrap() > 10_000, "{one}");
    if name == "raw" {
        assert!(one["packets"]["dropped"].as_u64().unwrap() > 0, "{one}");
    } else {
        assert!(files.iter().any(|f| f == "flows.parquet"), "{files:?}");
        assert_eq!(one["flows_finished"], one["flows_started"], "{one}");
        assert!(one["flows_finished"].as_u64().unwrap() > 100 && one["packets"]["trimmed"].as_u64().unwrap() > 0);
    }
    for dir in &dirs[1..] {
        assert_eq!(summary(dir), one, "{}", dir.display());
        for f in files.iter().filter(|f| *f != "summary.json") {
            let (a, b) = (std::fs::read(dirs[0].join(f)).unwrap(), std::fs::read(dir.join(f)).unwrap());
            assert!(a == b, "{}: {f:?} differs from one thread's", dir.display());
        }
    }
}

#[test]
fn what_a_parallel_run_cannot_take_is_an_error_before_anything_runs() {
    let d = scratch("refused");
    let cfg = d.join("budget.toml");
    std::fs::write(
        &cfg,
        "[topology]\nkind = \"fat-tree\"\nk = 4\nrate = \"10Gbps\"\ndelay = \"1us\"\n[transport]\nkind = \"tcp\"\n\
         [[workload]]\nkind = \"background\"\nsize = \"1MB\"\n[stop]\ntime = \"1ms\"\nmax_events = 1000\n",
    )
    .unwrap();
    let out = d.join("out");
    let (ok, o, e) = tailsim(&["run", cfg.to_str().unwrap(), "--threads", "2", "--out", out.to_str().unwrap()]);
    assert!(!ok && e.contains("--threads 2") && e.contains("budget.toml") && e.contains("an event budget"), "{o}{e}");
    assert!(!e.contains("panicked") && !out.exists(), "{e}");
    // A run of flows keeps every host with its switch: a k = 4 fat tree has 8 ToRs.
    let ndp = ndp_experiment(&d);
    let (ok, o, e) = tailsim(&["run", ndp.to_str().unwrap(), "--threads", "9", "--out", out.to_str().unwrap()]);
    assert!(!ok && e.contains("--threads 9") && e.contains("ndp.toml") && e.contains("use at most 8 parts"), "{o}{e}");
    assert!(!out.exists(), "{e}");
    // The Homa thesis's fabric has no propagation delay: no lookahead between parts, refused by name.
    let homa = d.join("homa.toml");
    std::fs::write(&homa, "[topology]\npreset = \"homa-144\"\n[transport]\nkind = \"homa\"\n[[workload]]\nkind = \"poisson\"\ncdf = \"homa-w4\"\nload = 0.5\nflows = 10\n").unwrap();
    let (ok, o, e) = tailsim(&["run", homa.to_str().unwrap(), "--threads", "2", "--out", out.to_str().unwrap()]);
    assert!(
        !ok && e.contains("--threads 2") && e.contains("homa.toml") && e.contains("has no propagation delay"),
        "{o}{e}"
    );
    assert!(!out.exists(), "{e}");
    // Every part holds a whole world: the memory limit counts them all.
    let raw = raw_experiment(&d);
    let (ok, o, e) = tailsim(&[
        "run",
        raw.to_str().unwrap(),
        "--threads",
        "2",
        "--max-memory",
        "6MB",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(!ok && e.contains("--threads 2: every part of a parallel run holds a whole world"), "{o}{e}");
    assert!(e.contains("more than the 6 MB this run may use") && !out.exists(), "{e}");
    let (ok, _, e) = tailsim(&["run", cfg.to_str().unwrap(), "--threads", "0"]);
    assert!(!ok && e.contains("--threads: give 1 or more"), "{e}");
    // More parts: the same checks, named by --parts; never fewer parts than threads.
    let (ok, o, e) = tailsim(&["run", ndp.to_str().unwrap(), "--parts", "9", "--out", out.to_str().unwrap()]);
    assert!(!ok && e.contains("--parts 9: ") && e.contains("use at most 8 parts") && !out.exists(), "{o}{e}");
    let (ok, o, e) = tailsim(&["run", cfg.to_str().unwrap(), "--parts", "4", "--out", out.to_str().unwrap()]);
    assert!(!ok && e.contains("--parts 4: ") && e.contains("an event budget") && !out.exists(), "{o}{e}");
    let (ok, _, e) = tailsim(&["run", raw.to_str().unwrap(), "--threads", "3", "--parts", "2"]);
    assert!(!ok && e.contains("--parts 2: fewer parts than --threads 3"), "{e}");
    let (ok, _, e) = tailsim(&["run", raw.to_str().unwrap(), "--parts", "0"]);
    assert!(!ok && e.contains("--parts: give 1 or more"), "{e}");
    let _ = std::fs::remove_dir_all(&d);
}

/// The rows of a `bench --threads` table (one per count, split into columns; the rows start with a number).
fn table_rows(out: &str) -> Vec<Vec<&str>> {
    let row = |l: &&str| l.split_whitespace().next().is_some_and(|c| c.parse::<usize>().is_ok());
    out.lines().filter(row).map(|l| l.split_whitespace().collect()).collect()
}

/// The rows of `bench --threads 1,2`'s table, checked: the serial run, then two threads with identical
/// results, packets having crossed between the parts.
fn serial_then_identical<'a>(out: &'a str, name: &str) -> Vec<Vec<&'a str>> {
    let rows = table_rows(out);
    assert_eq!(
        rows.iter().map(|r| (r[0], *r.last().unwrap())).collect::<Vec<_>>(),
        [("1", "serial"), ("2", "identical")],
        "{name}: {out}"
    );
    assert!(rows[1][6].parse::<u64>().unwrap() > 0, "{name}: packets crossed: {out}");
    rows
}

#[test]
fn bench_threads_prints_one_row_per_count_with_the_same_results() {
    let (ok, out, err) = tailsim(&["bench", "--scenario", "fattree1024-cbr", "--time", "10us", "--threads", "1,2"]);
    assert!(ok, "{out}{err}");
    let rows = serial_then_identical(&out, "fattree1024-cbr");
    assert_eq!(rows[0][7], rows[1][7], "the same events: {out}");
    // Each count in its own process: two whole worlds peak above one.
    let peak = |r: &Vec<&str>| r[9].parse::<f64>().unwrap_or_else(|_| panic!("peak MB: {out}"));
    assert!(peak(&rows[1]) > peak(&rows[0]) && peak(&rows[0]) > 0.0, "{out}");
}

/// `bench --parts 1,4`: the serial engine, then four parts in turn on one thread, with identical results;
/// counts of parts below a thread count are skipped, and a list with nothing left is an error.
#[test]
fn bench_parts_prints_a_row_per_count_of_parts() {
    let (ok, out, err) = tailsim(&["bench", "--scenario", "fattree1024-cbr", "--time", "10us", "--parts", "1,4"]);
    assert!(ok, "{out}{err}");
    let rows = table_rows(&out);
    let cells: Vec<_> = rows.iter().map(|r| (r[0], r[1], *r.last().unwrap())).collect();
    assert_eq!(cells, [("1", "1", "serial"), ("1", "4", "identical")], "{out}");
    assert!(rows[1][6].parse::<u64>().unwrap() > 0 && rows[0][7] == rows[1][7], "handovers, events: {out}");
    let (ok, out, _) =
        tailsim(&["bench", "--scenario", "fattree1024-cbr", "--time", "5us", "--threads", "1,2", "--parts", "2"]);
    assert!(ok, "{out}");
    let firsts: Vec<_> = table_rows(&out).iter().map(|r| (r[0], r[1])).collect();
    assert_eq!(firsts, [("1", "2"), ("2", "2")], "{out}");
    let (ok, _, err) = tailsim(&["bench", "--scenario", "fattree1024-cbr", "--threads", "4", "--parts", "2"]);
    assert!(!ok && err.contains("--parts: every count is below every thread count"), "{err}");
    let (ok, _, err) = tailsim(&["bench", "--scenario", "fattree1024-cbr", "--parts", "0,2"]);
    assert!(!ok && err.contains("--parts: give counts of parts of 1 or more"), "{err}");
    // A cut that cannot be made is refused before anything runs (htsim-p2's flows: at most 32 ToRs).
    let (ok, out, err) = tailsim(&["bench", "--scenario", "htsim-p2", "--parts", "1,200"]);
    assert!(!ok && err.contains("200 parts: htsim-p2: ") && !out.contains("serial"), "{out}{err}");
}

/// Every bench scenario, briefly, on one thread and two: the same results (`bench --threads` compares the
/// summaries), packets crossing between the parts, and no hang. Scenarios are taken from `bench --list`, so a
/// new one is covered as it is added. (A child's report larger than the pipe's buffer, `fattree5488-cbr`'s,
/// once hung the parent, which waited for the child without reading its output.)
#[test]
fn bench_threads_gives_the_serial_results_on_every_scenario() {
    let (ok, list, err) = tailsim(&["bench", "--list"]);
    assert!(ok, "{err}");
    let names: Vec<&str> = list.lines().filter_map(|l| l.split_whitespace().next()).collect();
    assert!(names.len() >= 19, "{list}");
    let d = scratch("every-scenario");
    for name in names {
        // Long enough for packets to cross a cut, short enough for CI (under a second each).
        let time = match name {
            "fattree5488-cbr" | "fattree5488-perm-ndp" | "fabric-6144" => "5us",
            "htsim-p2-1024" => "20us",
            "detail-128-alltoall" | "burstradar-cache" => "2ms",
            "sqr-websearch" => "3ms",
            _ => "100us",
        };
        let (out_path, err_path) = (d.join(format!("{name}.out")), d.join(format!("{name}.err")));
        let mut child = Command::new(env!("CARGO_BIN_EXE_tailsim"))
            .args(["bench", "--scenario", name, "--time", time, "--threads", "1,2"])
            .stdout(std::fs::File::create(&out_path).unwrap())
            .stderr(std::fs::File::create(&err_path).unwrap())
            .spawn()
            .unwrap();
        // A watchdog: a hang fails this test instead of holding CI until its timeout.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if std::time::Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("bench --threads 1,2 of {name} ({time}) did not end within 120 s");
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        let out = std::fs::read_to_string(&out_path).unwrap();
        let err = std::fs::read_to_string(&err_path).unwrap();
        assert!(status.success(), "{name}: {out}{err}");
        serial_then_identical(&out, name);
    }
    let _ = std::fs::remove_dir_all(&d);
}
