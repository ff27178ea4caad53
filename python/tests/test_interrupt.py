"""Ctrl-C and SIGTERM stop a run and keep what it simulated; a results directory holds one run only."""

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

import pandas as pd
import pytest

import tailsim

from conftest import EXAMPLE, small_dict


def tailsim_cmd():
    exe = shutil.which("tailsim")
    return [exe] if exe else [sys.executable, "-m", "tailsim"]


# Ten million flows: hours of simulation, so only the signal can end it.
ENDLESS = ["--set", "workload[0].flows=10000000"]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_the_run_and_keeps_its_results(tmp_path, sig):
    out = tmp_path / "r"
    p = subprocess.Popen(
        [*tailsim_cmd(), "run", str(EXAMPLE), *ENDLESS, "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(2.0)
    assert p.poll() is None, p.communicate()
    t0 = time.monotonic()
    p.send_signal(sig)
    stdout, stderr = p.communicate(timeout=30)
    waited = time.monotonic() - t0
    assert p.returncode == 130, stderr
    assert waited < 2.0, f"took {waited:.1f} s to stop"
    assert "Traceback" not in stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("interrupted at "), stderr
    assert str(out) in lines[0]
    r = tailsim.load(out)
    assert r.summary["stop_reason"] == "interrupted"
    assert 0 < r.summary["flows_finished"] < r.summary["flows_started"]
    f = r.flows
    assert len(f) == r.summary["flows_started"]
    assert f["finished"].sum() == r.summary["flows_finished"]
    assert f.loc[~f["finished"], "fct_us"].isna().all()


def test_ctrl_c_in_python_writes_the_partial_run_then_raises(tmp_path):
    d = small_dict(10_000_000)
    timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            tailsim.run(d, tmp_path / "r", progress=False)
    finally:
        timer.cancel()
    r = tailsim.load(tmp_path / "r")
    assert r.summary["stop_reason"] == "interrupted"
    assert r.summary["flows_finished"] > 0 and not r.flows["finished"].all()


def test_a_rerun_replaces_the_directory_whole(tmp_path):
    out = tmp_path / "r"
    d = small_dict(60)
    d["output"] = {"format": "csv", "queue_sample": "10us"}
    tailsim.run(d, out, progress=False)
    assert (out / "flows.csv").exists() and (out / "queues.csv").exists()
    # The same directory, other settings, parquet and no queue samples: nothing of the first run is left.
    tailsim.run(small_dict(40), out, progress=False)
    assert sorted(p.name for p in out.iterdir()) == ["flows.parquet", "ports.parquet", "summary.json"]
    r = tailsim.load(out)
    assert len(r.flows) == 40 and r.queues.empty
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "temporary directories left behind"


def test_a_directory_that_is_not_a_run_is_never_replaced(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(tailsim.SimulationError, match="not a tailsim results directory"):
        tailsim.run(small_dict(10), tmp_path, progress=False)
    assert (tmp_path / "notes.txt").read_text() == "mine"
    r = subprocess.run(
        [*tailsim_cmd(), "run", str(EXAMPLE), "--set", "workload[0].flows=10", "--out", str(tmp_path), "-q"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 1 and "not a tailsim results directory" in r.stderr and "Traceback" not in r.stderr


def test_load_refuses_a_table_of_another_run(tmp_path):
    a = tailsim.run(small_dict(30), tmp_path / "a", progress=False)
    b = tailsim.run(small_dict(50), tmp_path / "b", progress=False)
    assert a.summary["run_id"] != b.summary["run_id"]
    shutil.copy(tmp_path / "b" / "flows.parquet", tmp_path / "a" / "flows.parquet")
    with pytest.raises(tailsim.ResultsMismatch, match="flows.parquet"):
        _ = tailsim.load(tmp_path / "a").flows
    # A table the summary does not list is not read, even if a file of that name is there.
    pd.DataFrame({"x": [1]}).to_parquet(tmp_path / "b" / "queues.parquet")
    assert tailsim.load(tmp_path / "b").queues.empty
    # Same settings, same id: the second run's tables are the first's.
    c = tailsim.run(small_dict(30), tmp_path / "c", progress=False)
    assert c.summary["run_id"] == a.summary["run_id"]
    listed = json.loads((tmp_path / "c" / "summary.json").read_text())["files"]
    assert set(listed) == {"flows.parquet", "ports.parquet"}


def test_overrides_go_into_the_default_directory_name(tmp_path):
    r = subprocess.run(
        [*tailsim_cmd(), "run", str(EXAMPLE), "--set", "workload[0].flows=20", "--seed", "3", "-q"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "results" / "pfabric-websearch-dctcp@workload_0_.flows=20,seed=3" / "summary.json").exists()


def test_a_sweep_point_cut_short_is_not_finished(tmp_path):
    from tailsim._config import normalize
    from tailsim.sweep import _done, _run_point

    kind, text, origin, base = normalize(small_dict(10_000_000))
    pdir = tmp_path / "points" / "p"
    spec = {"id": "p", "params": {"seed": 1}, "kind": kind, "text": text, "origin": origin, "base": base}
    spec.update(sets=[], dir=str(pdir))
    timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            _run_point(spec)
    finally:
        timer.cancel()
    # Stopped points leave nothing: neither a partial run (which a resume would take for finished) nor a
    # record of failure (it did not fail).
    assert not pdir.exists() and not _done(pdir)


# --- sweeps -------------------------------------------------------------------------------------------------

SWEEP_FLOWS = 600  # about a second per point on one core


def _marked(mark: str) -> list[int]:
    """Live processes whose environment carries `mark` (a sweep's parent and workers)."""
    pids = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/environ", "rb") as f:
                    env = f.read()
                with open(f"/proc/{d}/stat") as f:
                    zombie = f.read().rsplit(")", 1)[1].split()[0] == "Z"
            except OSError:
                continue
            if mark.encode() in env and not zombie:
                pids.append(int(d))
    return pids


def _sweep_file(tmp_path, out, points: int = 4) -> "os.PathLike":
    f = tmp_path / "s.toml"
    f.write_text(
        f'base = "{EXAMPLE}"\nout = "{out}"\nworkers = 2\n[grid]\nseed = {list(range(1, points + 1))}\n'
        f'[set]\n"workload[0].flows" = {SWEEP_FLOWS}\n'
    )
    return f


def _start_sweep(sweep_file, mark):
    env = dict(os.environ, TAILSIM_TEST_MARK=mark)
    return subprocess.Popen(
        [sys.executable, "-m", "tailsim", "sweep", str(sweep_file), "-q"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,  # its own process group, as a terminal's job
    )


def _wait_first_point(out, proc):
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if list((out / "points").glob("*/point.json")):
            return
        time.sleep(0.02)
    raise AssertionError(f"no point finished in time: {proc.communicate()}")


def _no_half_points(out):
    """Every point directory is finished (summary.json and point.json) or absent."""
    for d in (out / "points").iterdir():
        assert (d / "summary.json").exists() and (d / "point.json").exists(), f"{d.name} is half there"


def test_ctrl_c_stops_a_sweep_and_the_same_command_resumes_it_byte_for_byte(tmp_path):
    out = tmp_path / "s"
    mark = f"ctrlc-{os.getpid()}-{time.time_ns()}"
    sweep_file = _sweep_file(tmp_path, out)
    proc = _start_sweep(sweep_file, mark)
    _wait_first_point(out, proc)
    t0 = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does: the parent and its workers
    _, stderr = proc.communicate(timeout=30)
    waited = time.monotonic() - t0
    assert proc.returncode == 130, stderr
    assert waited < 2.0, f"took {waited:.1f} s to stop"
    assert "Traceback" not in stderr and stderr.strip().endswith("tailsim: interrupted"), stderr
    assert _marked(mark) == [], "workers outlived the sweep"
    _no_half_points(out)
    finished = {d.name for d in (out / "points").iterdir()}
    assert 1 <= len(finished) < 4, finished
    assert not (out / "flows.parquet").exists()

    r = subprocess.run(
        [sys.executable, "-m", "tailsim", "sweep", str(sweep_file), "-q"], capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, r.stderr
    assert f"4 points: {4 - len(finished)} computed, {len(finished)} reused, 0 failed" in r.stdout
    # The same points, uninterrupted, elsewhere: every point's flows byte for byte.
    ref = tailsim.sweep(
        EXAMPLE,
        {"seed": [1, 2, 3, 4]},
        tmp_path / "ref",
        set={"workload[0].flows": SWEEP_FLOWS},
        workers=2,
        progress=False,
    )
    assert not ref.failed
    for pid in ref.params["point"]:
        a = (out / "points" / pid / "flows.parquet").read_bytes()
        b = (tmp_path / "ref" / "points" / pid / "flows.parquet").read_bytes()
        assert a == b, pid


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_a_sweep_whose_parent_is_signalled_leaves_no_worker(tmp_path, sig):
    out = tmp_path / "s"
    mark = f"parent-{sig}-{os.getpid()}-{time.time_ns()}"
    proc = _start_sweep(_sweep_file(tmp_path, out), mark)
    _wait_first_point(out, proc)
    proc.send_signal(sig)  # the parent only: a batch system's kill, or an OOM kill
    _, stderr = proc.communicate(timeout=30)
    if sig == signal.SIGTERM:
        assert proc.returncode == 130 and "Traceback" not in stderr, stderr
    deadline = time.time() + 2.0
    while _marked(mark) and time.time() < deadline:
        time.sleep(0.05)
    assert _marked(mark) == [], "workers outlived their parent"
    if sig == signal.SIGTERM:
        _no_half_points(out)
    # Whatever was left, a new sweep takes the lock and finishes the rest.
    r = subprocess.run(
        [sys.executable, "-m", "tailsim", "sweep", str(_sweep_file(tmp_path, out)), "-q"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0 and "4 points:" in r.stdout and "0 failed" in r.stdout, r.stderr
    _no_half_points(out)


def test_one_sweep_at_a_time_in_a_directory(tmp_path):
    out = tmp_path / "s"
    # Far more points than any machine finishes in the 5 s a second sweep waits for the lock (a fast VM
    # finished 24 in that time); the first sweep is interrupted at the end, so their number costs nothing.
    proc = _start_sweep(_sweep_file(tmp_path, out, points=2000), f"lock-{time.time_ns()}")
    try:
        _wait_first_point(out, proc)
        with pytest.raises(tailsim.SweepBusy, match="another sweep is running into this directory"):
            tailsim.sweep(EXAMPLE, {"seed": [1]}, out, progress=False)
        assert proc.poll() is None, "the first sweep ended while the second waited: the lock was not tested"
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        proc.communicate(timeout=30)


def test_a_worker_that_dies_fails_its_point_alone(tmp_path):
    # A crash or an OOM kill of one worker: that point fails (error.txt says how), a new worker runs the
    # rest, and the same command then computes only the failed point.
    out = tmp_path / "s"
    mark = f"crash-{os.getpid()}-{time.time_ns()}"
    sweep_file = _sweep_file(tmp_path, out)
    proc = _start_sweep(sweep_file, mark)
    workers = []
    deadline = time.time() + 60
    while len(workers) < 2 and time.time() < deadline:
        workers = [p for p in _marked(mark) if p != proc.pid]
        time.sleep(0.02)
    assert len(workers) == 2, f"expected two workers, found {workers}"
    time.sleep(1.0)  # imported and running a point (each point takes about a second)
    os.kill(workers[0], signal.SIGKILL)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 1, stderr
    assert "4 points: 3 computed, 0 reused, 1 failed" in stdout, stdout + stderr
    failed = [d for d in (out / "points").iterdir() if (d / "error.txt").exists()]
    assert len(failed) == 1
    assert (
        (failed[0] / "error.txt")
        .read_text()
        .startswith("the worker process running this point died (killed by SIGKILL)")
    )
    assert not (failed[0] / "summary.json").exists()
    r = subprocess.run(
        [sys.executable, "-m", "tailsim", "sweep", str(sweep_file), "-q"], capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0 and "4 points: 1 computed, 3 reused, 0 failed" in r.stdout, r.stdout + r.stderr


def test_a_sweep_does_not_fork_the_callers_threads_locks(tmp_path):
    # A worker forked from a process whose other threads hold locks inherits them held, and waits for ever on
    # the first it needs (a CI run hung so: a forked worker in a futex wait while the test process's Dask and
    # tqdm threads ran). Here another thread holds the import lock, which CPython's fork itself takes: a
    # forked pool cannot even start until it is released (after 60 s), while fresh worker processes do not
    # care. A first sweep imports whatever a sweep imports, so this process needs the lock for nothing.
    import _imp

    base = {"set": {"workload[0].flows": 100}}
    tailsim.sweep(EXAMPLE, {"seed": [1, 2]}, tmp_path / "warm", workers=2, progress=False, **base)
    held, release = threading.Event(), threading.Event()

    def hold():
        _imp.acquire_lock()
        held.set()
        release.wait(60)
        _imp.release_lock()

    t = threading.Thread(target=hold, daemon=True)
    t.start()
    held.wait()
    try:
        res = tailsim.sweep(EXAMPLE, {"seed": [1, 2]}, tmp_path / "s", workers=2, progress=False, **base)
        finished_while_held = not release.is_set() and t.is_alive()
    finally:
        release.set()
        t.join()
    assert finished_while_held, "the sweep waited for the lock another thread held"
    assert not res.failed and len(res.flows) == 200
