//! The bad-input corpus (tests/bad-inputs/*.toml, with the data files they reference in data/): each file
//! starts with `# error: <substring>` and must be refused with an error that names the file, then the line
//! and key (or, for a file-level error, the file alone), and says why (the substring) — never a panic, never
//! slower than a few seconds. docs/testing.md says how to add a case.

use std::path::{Path, PathBuf};
use std::time::Instant;

fn corpus() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/bad-inputs");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/bad-inputs")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_bad_input_gets_an_error_naming_file_key_or_line_and_reason() {
    // The memory checks compare with a limit; fix it so that the corpus means the same on every machine.
    std::env::set_var("TAILSIM_MAX_MEMORY", "16GB");
    let files = corpus();
    assert!(files.len() >= 100, "the corpus has {} cases; the issue asks for at least 100", files.len());
    let mut failures = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let want = text
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("# error: "))
            .unwrap_or_else(|| panic!("{}: the first line must be `# error: <expected substring>`", f.display()));
        let t0 = Instant::now();
        let got = std::panic::catch_unwind(|| tailsim::load(f, &[]).map(|_| ()).map_err(|e| e.to_string()));
        let secs = t0.elapsed().as_secs_f64();
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let problem = match got {
            Err(_) => Some("panicked".to_string()),
            Ok(Ok(())) => Some("accepted".to_string()),
            Ok(Err(e)) => {
                let origin = f.display().to_string();
                let rest = e.strip_prefix(&origin);
                let located = rest.is_some_and(|r| {
                    // "FILE:LINE: key `K`: ...", "FILE: key `K`: ..." or "FILE:LINE: ..." (TOML syntax)
                    r.starts_with(": ") || r.starts_with(':') && r[1..].starts_with(|c: char| c.is_ascii_digit())
                });
                if !located {
                    Some(format!("does not start with the file's name: {e}"))
                } else if !e.contains(want) {
                    Some(format!("expected {want:?} in: {e}"))
                } else if secs > 5.0 {
                    Some(format!("took {secs:.1} s"))
                } else {
                    None
                }
            }
        };
        if let Some(p) = problem {
            failures.push(format!("{name}: {p}"));
        }
    }
    assert!(failures.is_empty(), "{} of {} cases:\n{}", failures.len(), files.len(), failures.join("\n"));
}

/// A packet-level run keeps finished flows' records on disk, so 10^8 flows fit where the Ideal's do not.
#[test]
fn many_flows_fit_a_packet_level_run_but_not_the_ideal() {
    std::env::set_var("TAILSIM_MAX_MEMORY", "16GB");
    let f = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/bad-inputs/131-ideal-flows-memory.toml");
    assert!(tailsim::load(&f, &[]).is_err());
    if let Err(e) = tailsim::load(&f, &["transport.kind=\"dctcp\"".to_string()]) {
        panic!("{e}");
    }
}
