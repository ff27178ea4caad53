//! The build's identity: a hash of the simulator's sources (this crate's and tailsim-workload's) and of
//! Cargo.lock (the versions of every dependency), as `TAILSIM_BUILD`. It goes into each run's id, so a sweep
//! never reuses a point computed by another build, though the version number did not change.

use std::path::{Path, PathBuf};

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else {
            out.push(p);
        }
    }
}

fn main() {
    let here = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
    let roots = [here.join("src"), here.join("../tailsim-workload/src"), here.join("../../Cargo.lock")];
    let mut all = Vec::new();
    for r in &roots {
        println!("cargo:rerun-if-changed={}", r.display());
        if r.is_file() {
            all.push(r.clone());
        } else {
            files(r, &mut all);
        }
    }
    all.sort();
    // FNV-1a, 64 bit, over each file's path (relative to this crate) and contents.
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes {
            h = (h ^ b as u64).wrapping_mul(0x100_0000_01b3);
        }
    };
    for f in &all {
        let rel = f.strip_prefix(&here).unwrap_or(f);
        eat(rel.to_string_lossy().as_bytes());
        eat(&std::fs::read(f).unwrap_or_default());
    }
    println!("cargo:rustc-env=TAILSIM_BUILD={h:016x}");
    println!("cargo:rustc-env=TAILSIM_COMMIT={}", commit(&here.join("../..")));
}

/// The git commit the sources come from, "-modified" when the simulator's sources differ from it, or
/// "unknown" outside a git checkout (a source archive). Informative only (tables' metadata); the build hash
/// is what identifies a build. Computed again when the sources change or HEAD moves.
fn commit(root: &Path) -> String {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .arg("-C")
            .arg(root)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let Some(head) = git(&["rev-parse", "HEAD"]).filter(|h| !h.is_empty()) else { return "unknown".into() };
    // A new commit changes the answer without touching the sources: look again when HEAD or its branch moves.
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        let dir = PathBuf::from(dir);
        let branch = git(&["symbolic-ref", "-q", "HEAD"]).unwrap_or_default();
        for f in [dir.join("HEAD"), dir.join(&branch), dir.join("packed-refs")] {
            if f.is_file() {
                println!("cargo:rerun-if-changed={}", f.display());
            }
        }
    }
    let paths = [
        "status",
        "--porcelain",
        "--untracked-files=no",
        "--",
        "crates/tailsim",
        "crates/tailsim-workload",
        "Cargo.lock",
    ];
    match git(&paths) {
        Some(s) if s.is_empty() => head,
        _ => format!("{head}-modified"),
    }
}
