//! `tailsim bench --project-threads` (docs/parallel.md): the table, and clear errors for what it cannot do.

use std::process::Command;

fn bench(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tailsim")).arg("bench").args(args).output().expect("tailsim bench");
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

#[test]
fn the_projection_prints_one_row_per_thread_count() {
    let (ok, out, err) = bench(&["--scenario", "htsim-p2", "--time", "30us", "--project-threads", "1,2,8"]);
    assert!(ok, "{out}{err}");
    let rows: Vec<Vec<&str>> = out
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|w| w.first().is_some_and(|c| c.parse::<usize>().is_ok()))
        .collect();
    assert_eq!(rows.iter().map(|r| r[0]).collect::<Vec<_>>(), ["1", "2", "8"], "{out}");
    // One thread: nothing cut, a speedup of exactly 1; the 128-host fat tree file is cut between its 8 pods.
    assert_eq!((rows[0][1], rows[0][2], rows[0].last().copied()), ("-", "0", Some("1.00x")), "{out}");
    assert_eq!((rows[1][1], rows[1][3]), ("pods", "1.000us"), "{out}");
    assert!(out.contains("ns per event") && out.contains("a packet crossing between parts"), "{out}");
}

#[test]
fn thread_counts_the_fabric_cannot_take_are_errors_before_anything_runs() {
    for (args, says) in [
        (vec!["--scenario", "htsim-p2", "--project-threads", "200"], "cannot cut a fabric of 128 hosts into 200 parts"),
        (vec!["--scenario", "htsim-p2", "--project-threads", "0,2"], "thread counts of 1 or more"),
        (vec!["--project-threads", "2"], "--project-threads needs --scenario"),
        (vec!["--scenario", "nope", "--project-threads", "2"], "no scenario \"nope\""),
    ] {
        let (ok, out, err) = bench(&args);
        assert!(!ok && err.contains(says), "{args:?}: {out}{err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}
