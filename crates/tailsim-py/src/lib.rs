//! `tailsim._core`: the Rust simulator as a Python extension module.
//!
//! Deliberately thin: configurations go in as TOML text or JSON (from a dict), results come out as a
//! results directory (the same atomic files the command line writes) plus the summary as JSON; the Python
//! package reads the Parquet files into DataFrames. The simulation runs with the GIL released and calls back
//! into Python only to report progress and to notice Ctrl-C.

// pyo3 0.22's #[pyfunction] expansion converts PyErr into PyErr, which clippy 1.95 flags in generated code.
#![allow(clippy::useless_conversion)]

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use std::path::{Path, PathBuf};
use std::time::Instant;

create_exception!(
    _core,
    ConfigError,
    PyValueError,
    "An experiment configuration is invalid (the message names the key)."
);
create_exception!(_core, SimulationError, PyException, "A simulation failed while running or writing results.");

fn config_err(e: tailsim::ConfigError) -> PyErr {
    ConfigError::new_err(e.to_string())
}

/// Build an experiment from TOML text or a JSON object.
fn build(kind: &str, text: &str, origin: &str, base_dir: &str, sets: &[String]) -> PyResult<tailsim::Experiment> {
    let base = Path::new(base_dir);
    match kind {
        "toml" => tailsim::load_str(text, origin, base, sets).map_err(config_err),
        "json" => {
            let value: toml::Value = serde_json::from_str::<serde_json::Value>(text)
                .map_err(|e| ConfigError::new_err(format!("{origin}: not a JSON object: {e}")))
                .and_then(|j| json_to_toml(j, "").map_err(|m| ConfigError::new_err(format!("{origin}: {m}"))))?;
            match value {
                toml::Value::Table(t) => tailsim::load_table(t, origin, base, sets).map_err(config_err),
                _ => Err(ConfigError::new_err(format!("{origin}: the configuration must be a mapping"))),
            }
        }
        _ => Err(PyValueError::new_err(format!("unknown config kind {kind}"))),
    }
}

/// JSON → TOML values; TOML has no null, so a None is an error naming the key.
fn json_to_toml(v: serde_json::Value, key: &str) -> Result<toml::Value, String> {
    use serde_json::Value as J;
    Ok(match v {
        J::Null => return Err(format!("key `{key}`: None is not a valid value (leave the key out instead)")),
        J::Bool(b) => toml::Value::Boolean(b),
        J::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => toml::Value::Integer(i),
            (None, Some(f)) => toml::Value::Float(f),
            _ => return Err(format!("key `{key}`: number {n} is out of range")),
        },
        J::String(s) => toml::Value::String(s),
        J::Array(a) => toml::Value::Array(
            a.into_iter()
                .enumerate()
                .map(|(i, x)| json_to_toml(x, &format!("{key}[{i}]")))
                .collect::<Result<_, _>>()?,
        ),
        J::Object(o) => toml::Value::Table(
            o.into_iter()
                .map(|(k, x)| {
                    let path = if key.is_empty() { k.clone() } else { format!("{key}.{k}") };
                    json_to_toml(x, &path).map(|v| (k, v))
                })
                .collect::<Result<_, _>>()?,
        ),
    })
}

/// Validate a configuration; returns a short description of the fabric.
#[pyfunction]
#[pyo3(signature = (kind, text, origin, base_dir, sets))]
fn check(kind: &str, text: &str, origin: &str, base_dir: &str, sets: Vec<String>) -> PyResult<(String, Vec<String>)> {
    let e = build(kind, text, origin, base_dir, &sets)?;
    let n = &e.world.net;
    Ok((format!("{} hosts, {} switches, {} links", n.n_hosts(), n.switches.len(), n.ports.len() / 2), e.warnings))
}

/// The run id an experiment would have (`Experiment::run_id`: version, build, resolved configuration and the
/// contents of every file it references), without running it. A sweep compares it with a finished point's.
#[pyfunction]
#[pyo3(signature = (kind, text, origin, base_dir, sets))]
fn run_id(py: Python<'_>, kind: &str, text: &str, origin: &str, base_dir: &str, sets: Vec<String>) -> PyResult<String> {
    let e = build(kind, text, origin, base_dir, &sets)?;
    Ok(py.allow_threads(|| e.run_id()))
}

/// Run an experiment and write its results directory. Returns (summary JSON, resolved out dir).
///
/// `progress`, if given, is called about twice a second with a dict (simulated seconds, events, flows,
/// fraction done or None); returning False, or a pending KeyboardInterrupt, stops the run early: what was
/// simulated is written (marked interrupted) unless `keep_partial` is false (a sweep's point, which is
/// either finished or not there).
#[pyfunction]
#[pyo3(signature = (kind, text, origin, base_dir, sets, out_dir=None, progress=None, keep_partial=true, threads=1, parts=None))]
#[allow(clippy::too_many_arguments)] // the Python signature, keyword arguments included
fn run(
    py: Python<'_>,
    kind: &str,
    text: &str,
    origin: &str,
    base_dir: &str,
    sets: Vec<String>,
    out_dir: Option<String>,
    progress: Option<PyObject>,
    keep_partial: bool,
    threads: usize,
    parts: Option<usize>,
) -> PyResult<(String, String)> {
    let (parts, arg) = tailsim::run::parts_of_run(threads, parts, |k, v| match v {
        Some(v) => format!("{k}={v}"),
        None => k.to_string(),
    })
    .map_err(ConfigError::new_err)?;
    let before = tailsim::run::resident_memory_bytes();
    let mut exp = build(kind, text, origin, base_dir, &sets)?;
    exp.prepare_parts(parts, before, &arg, origin).map_err(ConfigError::new_err)?;
    // Every part of a parallel run runs in a whole world of its own (docs/parallel.md).
    let others = (1..parts).map(|_| build(kind, text, origin, base_dir, &sets)).collect::<PyResult<Vec<_>>>()?;
    let dir = out_dir.map_or_else(|| exp.default_out_dir(&sets), PathBuf::from);
    let completion = exp.completion();
    let mut interrupted: Option<PyErr> = None;
    let result = py.allow_threads(|| {
        let mut last = Instant::now();
        let t0 = last;
        let mut poll = |p: &tailsim::sim::Progress| {
            if last.elapsed().as_secs_f64() < 0.5 {
                return true;
            }
            last = Instant::now();
            Python::with_gil(|py| {
                if let Err(e) = py.check_signals() {
                    interrupted = Some(e);
                    return false;
                }
                let Some(cb) = &progress else { return true };
                let frac = completion.fraction(p);
                let d = pyo3::types::PyDict::new_bound(py);
                let _ = d.set_item("sim_seconds", p.now.secs());
                let _ = d.set_item("events", p.events);
                let _ = d.set_item("wall_seconds", t0.elapsed().as_secs_f64());
                let _ = d.set_item("flows_started", p.flows_started);
                let _ = d.set_item("flows_finished", p.flows_finished);
                let _ = d.set_item("fraction", frac);
                match cb.call1(py, (d,)) {
                    Ok(r) => !matches!(r.extract::<bool>(py), Ok(false)),
                    Err(e) => {
                        interrupted = Some(e);
                        false
                    }
                }
            })
        };
        if parts == 1 {
            exp.run_interruptible(&mut poll)
        } else {
            exp.run_parallel(others, threads, &mut poll).map(|(s, _)| s)
        }
    });
    let summary = result.map_err(SimulationError::new_err)?;
    if let (Some(e), false) = (&interrupted, keep_partial) {
        return Err(e.clone_ref(py));
    }
    // Stopped by Ctrl-C or by the callback: what was simulated is written (marked interrupted) before the
    // exception goes on.
    py.allow_threads(|| exp.write_results(&dir, &summary))
        .map_err(|e| SimulationError::new_err(format!("cannot write results to {}: {e}", dir.display())))?;
    if let Some(e) = interrupted {
        return Err(e);
    }
    let json = serde_json::to_string(&summary).map_err(|e| SimulationError::new_err(e.to_string()))?;
    Ok((json, dir.display().to_string()))
}

/// The `tailsim` command line (run, check, bench), as the Rust binary has it.
#[pyfunction]
fn cli(py: Python<'_>, args: Vec<String>, self_cmd: Vec<String>) -> i32 {
    // Python's handlers catch Ctrl-C (and SIGTERM, which the Python side turns into KeyboardInterrupt); a
    // run looks for them five times a second.
    let mut last = Instant::now();
    let mut asked = false;
    py.allow_threads(|| {
        tailsim_cli::main_with(args, self_cmd, &mut || {
            if !asked && last.elapsed().as_secs_f64() >= 0.2 {
                last = Instant::now();
                asked = Python::with_gil(|py| py.check_signals().is_err());
            }
            asked
        })
    }) as i32
}

/// Names of the built-in flow-size distributions.
#[pyfunction]
fn builtin_cdfs() -> Vec<&'static str> {
    tailsim_workload::SizeCdf::builtin_names().to_vec()
}

/// Mean flow size in bytes of a built-in CDF or CDF file.
#[pyfunction]
fn cdf_mean_bytes(name: &str) -> PyResult<f64> {
    let cdf = tailsim_workload::SizeCdf::builtin(name)
        .or_else(|_| tailsim_workload::SizeCdf::from_file(Path::new(name), Default::default()))
        .map_err(|e| ConfigError::new_err(e.to_string()))?;
    Ok(cdf.mean_bytes())
}

/// Flow sizes (bytes) drawn from a built-in CDF or CDF file at the given uniform numbers in [0, 1), by the
/// sampling rule the simulator uses (e.g. the SQR reproduction's truncated workloads).
#[pyfunction]
fn cdf_sample(name: &str, uniforms: Vec<f64>) -> PyResult<Vec<u64>> {
    let cdf = tailsim_workload::SizeCdf::builtin(name)
        .or_else(|_| tailsim_workload::SizeCdf::from_file(Path::new(name), Default::default()))
        .map_err(|e| ConfigError::new_err(e.to_string()))?;
    if let Some(u) = uniforms.iter().find(|u| !(0.0..1.0).contains(*u)) {
        return Err(ConfigError::new_err(format!("uniform numbers must be in [0, 1), found {u}")));
    }
    Ok(uniforms.into_iter().map(|u| cdf.sample(u)).collect())
}

/// Priority-class thresholds (bytes) for a CDF at a load: "optimal" (M/G/1 model) or "equal-count", and the
/// model's mean normalized FCT with them.
#[pyfunction]
fn class_thresholds(name: &str, load: f64, classes: usize, rule: &str) -> PyResult<(Vec<u64>, f64)> {
    let cdf = tailsim_workload::SizeCdf::builtin(name)
        .or_else(|_| tailsim_workload::SizeCdf::from_file(Path::new(name), Default::default()))
        .map_err(|e| ConfigError::new_err(e.to_string()))?;
    let t = match rule {
        "optimal" => tailsim_workload::optimal_thresholds(&cdf, load, classes)
            .map_err(|e| ConfigError::new_err(e.to_string()))?,
        "equal-count" => tailsim_workload::equal_count_thresholds(&cdf, classes),
        o => return Err(ConfigError::new_err(format!("rule: expected \"optimal\" or \"equal-count\", found \"{o}\""))),
    };
    let f: Vec<f64> = t.iter().map(|&x| x as f64).collect();
    let fct = tailsim_workload::mg1_normalized_fct(&cdf, load, &f).map_err(|e| ConfigError::new_err(e.to_string()))?;
    Ok((t, fct))
}

/// One QJUMP level: (class, level, f, epoch ps, budget bytes, rate bit/s, latency bound ps, guaranteed).
type QjumpLevelRow = (u8, u8, f64, u64, u64, f64, u64, bool);

/// QJUMP's network epoch (ps) and per-level buckets and bounds (docs/qjump.md). Units as in experiment
/// files: `edge_rate` "10Gbps", `max_packet` a size, `switch_delay` and `epoch` durations.
#[pyfunction]
#[pyo3(signature = (hosts, edge_rate, max_packet, switch_delay, f, epoch_factor=1, epoch=None, budget="per-level-epoch"))]
#[allow(clippy::too_many_arguments)]
fn qjump_levels(
    hosts: u64,
    edge_rate: &str,
    max_packet: &str,
    switch_delay: &str,
    f: Vec<f64>,
    epoch_factor: u32,
    epoch: Option<&str>,
    budget: &str,
) -> PyResult<(u64, Vec<QjumpLevelRow>)> {
    use tailsim::qjump::{levels, network_epoch, QjumpParams};
    let q = QjumpParams::parse(hosts, edge_rate, max_packet, switch_delay, &f, epoch_factor, epoch, budget)
        .map_err(ConfigError::new_err)?;
    let rows = levels(&q)[..f.len()]
        .iter()
        .map(|l| (l.class, l.level, l.f, l.epoch.0, l.budget, l.rate_bps, l.latency.0, l.guaranteed))
        .collect();
    Ok((network_epoch(&q).0, rows))
}

/// Large blocks on transparent huge pages (engine/hugepages.rs), as in the `tailsim` binary.
#[global_allocator]
static ALLOC: tailsim::engine::HugePageAlloc = tailsim::engine::HugePageAlloc;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("ConfigError", m.py().get_type_bound::<ConfigError>())?;
    m.add("SimulationError", m.py().get_type_bound::<SimulationError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(run_id, m)?)?;
    m.add_function(wrap_pyfunction!(cli, m)?)?;
    m.add_function(wrap_pyfunction!(builtin_cdfs, m)?)?;
    m.add_function(wrap_pyfunction!(cdf_sample, m)?)?;
    m.add_function(wrap_pyfunction!(cdf_mean_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(class_thresholds, m)?)?;
    m.add_function(wrap_pyfunction!(qjump_levels, m)?)?;
    Ok(())
}
