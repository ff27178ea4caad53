import json
import shutil
import subprocess
import sys

from conftest import EXAMPLE


def tailsim_cmd():
    exe = shutil.which("tailsim")
    return [exe] if exe else [sys.executable, "-m", "tailsim"]


def test_console_script_runs_the_rust_cli(tmp_path):
    out = tmp_path / "r"
    r = subprocess.run(
        [*tailsim_cmd(), "run", str(EXAMPLE), "--set", "workload[0].flows=100", "--out", str(out), "-q"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    assert "size bucket" in r.stdout and "(0,100KB]" in r.stdout
    assert json.loads((out / "summary.json").read_text())["flows_finished"] == 100


def test_errors_exit_nonzero_with_a_message(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(
        '[topology]\npreset = "pfabric-144"\n[transport]\nkind = "quic"\n'
        '[[workload]]\nkind = "incast"\nsenders = 2\nsize = 10\n'
    )
    r = subprocess.run([*tailsim_cmd(), "check", str(bad)], capture_output=True, text=True)
    assert r.returncode == 1
    assert f"{bad}:4: key `transport.kind`" in r.stderr
    r = subprocess.run([*tailsim_cmd(), "nosuchcommand"], capture_output=True, text=True)
    assert r.returncode == 2


def test_plot_command(tmp_path):
    out = tmp_path / "r"
    subprocess.run(
        [*tailsim_cmd(), "run", str(EXAMPLE), "--set", "workload[0].flows=100", "--out", str(out), "-q"], check=True
    )
    r = subprocess.run([*tailsim_cmd(), "plot", str(out), "--kind", "slowdown"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert (out / "slowdown.png").stat().st_size > 1000
    r = subprocess.run([*tailsim_cmd(), "plot", str(out), "--kind", "queues"], capture_output=True, text=True)
    assert r.returncode == 1 and "queue_sample" in r.stderr


def test_example_script_writes_both_figures(tmp_path):
    script = EXAMPLE.parent / "tcp_vs_dctcp.py"
    r = subprocess.run(
        [
            sys.executable,
            str(script),
            "--flows",
            "60",
            "--loads",
            "0.2",
            "0.5",
            "--out",
            str(tmp_path),
            "--workers",
            "2",
        ],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    for f in ("overall-vs-load.png", "breakdown-vs-load.png"):
        assert (tmp_path / f).stat().st_size > 1000
    assert "slowdown_p99" in r.stdout


def test_thresholds_command_and_reproduce_parts_are_checked():
    r = subprocess.run(
        [*tailsim_cmd(), "thresholds", "--cdf", "websearch", "--load", "0.1", "--classes", "2"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    assert "optimal" in r.stdout and "equal-count" in r.stdout and "class_thresholds = [" in r.stdout
    r = subprocess.run(
        [*tailsim_cmd(), "thresholds", "--cdf", "nope", "--load", "0.1", "--classes", "2"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 1 and "--cdf" in r.stderr and "nope" in r.stderr
    r = subprocess.run([*tailsim_cmd(), "reproduce", "pfabric", "--parts", "main,edf"], capture_output=True, text=True)
    assert r.returncode == 2 and "unknown edf" in r.stderr


def test_bench_from_the_console_script_measures_the_simulator_not_pandas():
    # The scenario's process loads only the extension module: its peak is the simulator's plus a bare
    # interpreter (about 32 MB for flows-100k), not pandas and matplotlib (about 137 MB when it imported them).
    r = subprocess.run([*tailsim_cmd(), "bench", "--scenario", "flows-100k"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    row = next(line for line in r.stdout.splitlines() if line.startswith("flows-100k"))
    peak_mb, sim_mb = (float(v) for v in row.split()[-2:])
    assert peak_mb < 70, row
    assert 0 < sim_mb <= peak_mb, row
