"""The simulation runs without the GIL, reports progress, and stops on request or on Ctrl-C."""

import signal
import subprocess
import sys
import threading
import time

import tailsim

from conftest import small_dict

LONG = small_dict(200_000, load=0.6)  # minutes of work: only ever run until interrupted


def test_progress_callback_can_stop_a_run(tmp_path):
    seen = []

    def cb(p):
        seen.append(p)
        return len(seen) < 3

    r = tailsim.run(LONG, tmp_path / "i", progress=cb)
    assert r.summary["stop_reason"] == "interrupted"
    assert len(seen) == 3
    assert {"sim_seconds", "events", "wall_seconds", "flows_started", "flows_finished", "fraction"} <= set(seen[0])
    assert 0 < seen[0]["fraction"] < seen[-1]["fraction"] < 1
    assert seen[0]["events"] < seen[-1]["events"]
    assert r.summary["flows_finished"] < 200_000
    assert len(r.flows) == r.summary["flows_started"]  # partial results are written, unfinished flows included


def test_the_gil_is_released_while_simulating(tmp_path):
    ticks = []
    t = threading.Thread(target=lambda: tailsim.run(LONG, tmp_path / "g", progress=lambda p: p["wall_seconds"] < 1.5))
    t.start()
    while t.is_alive():
        ticks.append(time.perf_counter())
        time.sleep(0.01)
    t.join()
    # With the GIL held for the whole run this thread could not have woken up until it ended.
    assert len(ticks) > 50, f"main thread ran only {len(ticks)} times during a 1.5 s simulation"


def test_ctrl_c_stops_a_run_promptly(tmp_path):
    # The child says when its imports are done: a SIGINT that lands inside a slow import (a loaded CI machine)
    # can be swallowed by a library's bare ``except``, and the run would then go on for minutes.
    code = (
        f"import sys, tailsim; sys.path.insert(0, {str(__import__('pathlib').Path(__file__).parent)!r}); "
        "from conftest import small_dict\n"
        "print('imported', flush=True)\n"
        f"tailsim.run(small_dict(200_000), {str(tmp_path / 'c')!r}, progress=False)\n"
    )
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "imported"
    time.sleep(1.5)  # inside the simulation by now (building 200 000 flows takes well under a second)
    assert p.poll() is None, "the run ended before it could be interrupted"
    t0 = time.time()
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=30)
    assert time.time() - t0 < 3.0
    assert p.returncode != 0 and "KeyboardInterrupt" in err
