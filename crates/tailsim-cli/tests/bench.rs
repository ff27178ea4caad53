//! `tailsim bench`: what it says about bad input, before any scenario runs.

use std::process::Command;

fn bench(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tailsim")).arg("bench").args(args).output().expect("tailsim bench");
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

#[test]
fn bad_input_is_one_clear_error_line() {
    for (args, says) in [
        (vec!["--scenario", "nope"], "error: no scenario \"nope\"; see --list"),
        (vec!["--scenario", "htsim-p2", "--time", "abc"], "error: --time: expected a duration like \"2.5us\""),
        (
            vec!["--scenario", "htsim-p2", "--time", "0s"],
            "error: --time: a benchmark needs a simulated time above zero",
        ),
        (vec!["--time=-1ms"], "error: --time: a duration cannot be negative"),
        (vec!["--scenario", "htsim-p2", "--time", "99999999999s"], "error: --time: a duration must be below 2^64 ps"),
    ] {
        let (code, out, err) = bench(&args);
        assert_eq!(code, Some(1), "{args:?}: {out}{err}");
        assert!(err.starts_with(says), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?}: nothing runs, so no table: {out}");
    }
}
