import os
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

import tailsim

from conftest import ROOT, small_dict

GRID = {"transport.kind": ["tcp", "dctcp"], "workload[0].load": [0.3, 0.6]}


def _sorted(df: pd.DataFrame) -> pd.DataFrame:
    return df.sort_values(["point", *(c for c in ("flow_id", "bucket") if c in df.columns)]).reset_index(drop=True)


def test_local_pool_and_dask_cluster_give_the_same_rows(tmp_path):
    pytest.importorskip("dask.distributed")
    base = small_dict(150)
    local = tailsim.sweep(base, GRID, tmp_path / "local", workers=2, progress=False)
    dask = tailsim.sweep(base, GRID, tmp_path / "dask", backend="dask", workers=2, progress=False)
    assert not local.failed and not dask.failed
    assert len(local.params) == 4
    fl, fd = _sorted(local.flows), _sorted(dask.flows)
    assert len(fl) == 4 * 150
    pd.testing.assert_frame_equal(fl, fd)
    pd.testing.assert_frame_equal(_sorted(local.summary), _sorted(dask.summary))
    # Swept keys are columns, and each point really ran its own parameters.
    assert set(fl["transport.kind"]) == {"tcp", "dctcp"}
    for p in local.params.itertuples():
        r = local.result(p.point)
        assert r.config["transport"]["kind"] == p._2
        assert r.config["workload"][0]["load"] == p._3


def test_combined_flows_are_every_points_flows_with_its_swept_values(tmp_path):
    # The combined table is streamed point by point; it must equal the plain concatenation, with an int and a
    # float grid value in one column promoted together.
    res = tailsim.sweep(
        small_dict(120), {"workload[0].load": [0.3, 0.6], "seed": [1, 2]}, tmp_path / "c", workers=2, progress=False
    )
    assert not res.failed
    parts = []
    for p in res.params.itertuples():
        f = res.result(p.point).flows.copy()
        f["point"], f["workload[0].load"], f["seed"] = p.point, p._2, p.seed
        parts.append(f)
    want = _sorted(pd.concat(parts, ignore_index=True))
    got = _sorted(res.flows)
    assert len(got) == 4 * 120 and list(got.columns) == list(want.columns)
    pd.testing.assert_frame_equal(got, want, check_dtype=False)
    assert got["seed"].dtype.kind == "i" and got["workload[0].load"].dtype.kind == "f"


def test_csv_points_are_combined_too(tmp_path):
    base = small_dict(60)
    base["output"] = {"format": "csv"}
    res = tailsim.sweep(base, {"workload[0].load": [0.3, 0.5]}, tmp_path / "csv", workers=1, progress=False)
    assert not res.failed and len(res.flows) == 2 * 60
    assert sorted(set(res.flows["workload[0].load"])) == [0.3, 0.5]


def test_failed_point_is_reported_and_others_finish(tmp_path):
    res = tailsim.sweep(
        small_dict(50), {"workload[0].load": [0.3, 1.5, 0.5]}, tmp_path / "f", workers=2, progress=False
    )
    assert len(res.failed) == 1
    ((pid, err),) = res.failed.items()
    assert "load=1.5" in pid and "workload[0].load" in err and "(0, 1)" in err
    assert (res.params["status"] == "done").sum() == 2
    assert (tmp_path / "f" / "points" / pid / "error.txt").exists()
    assert set(res.flows["workload[0].load"]) == {0.3, 0.5}


def test_killed_sweep_resumes_without_redoing_finished_points(tmp_path):
    out = tmp_path / "k"
    grid = {"seed": [1, 2, 3, 4, 5, 6]}
    sweep_file = tmp_path / "s.toml"
    sweep_file.write_text(
        f'base = "{ROOT / "examples" / "pfabric-websearch-dctcp.toml"}"\nout = "{out}"\nworkers = 1\n'
        '[grid]\nseed = [1, 2, 3, 4, 5, 6]\n[set]\n"workload[0].flows" = 800\n'
    )
    proc = subprocess.Popen([sys.executable, "-m", "tailsim", "sweep", str(sweep_file), "-q"], start_new_session=True)
    points = out / "points"

    def finished():
        # A point is done once its point.json is written, after its summary.json (sweep.py `_done`): a kill
        # between the two leaves it to be run again.
        return sorted(
            p.parent / "summary.json" for p in points.glob("*/point.json") if (p.parent / "summary.json").exists()
        )

    deadline = time.time() + 120
    done = []
    while time.time() < deadline:
        done = finished() if points.exists() else []
        if done or proc.poll() is not None:
            break
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert 1 <= len(done) < 6, f"{len(done)} points finished before the kill; the test needs a partial sweep"
    done = finished()
    stamps = {p: p.stat().st_mtime_ns for p in done}
    assert not (out / "flows.parquet").exists()  # never combined: the sweep did not finish

    res = tailsim.sweep(
        ROOT / "examples" / "pfabric-websearch-dctcp.toml",
        grid,
        out,
        set={"workload[0].flows": 800},
        workers=2,
        progress=False,
    )
    assert not res.failed and len(res.params) == 6
    for p, t in stamps.items():
        assert p.stat().st_mtime_ns == t, f"{p.parent.name} was run again"
    assert len(res.flows) == 6 * 800
    # No temporary files left behind by the killed run are taken for results.
    assert all(not n.name.startswith(".") or n.name == ".lock" for n in out.iterdir())


def test_sweep_cli_and_plot(tmp_path):
    sweep_file = tmp_path / "s.toml"
    sweep_file.write_text(
        f'base = "{ROOT / "examples" / "pfabric-websearch-dctcp.toml"}"\n'
        '[grid]\n"transport.kind" = ["tcp", "dctcp"]\n"workload[0].load" = [0.2, 0.4]\n'
        '[set]\n"workload[0].flows" = 100\n'
    )
    out = tmp_path / "out"
    r = subprocess.run(
        [sys.executable, "-m", "tailsim", "sweep", str(sweep_file), "--out", str(out), "--workers", "2", "-q"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    assert "4 points: 4 computed, 0 reused, 0 failed" in r.stdout
    png = tmp_path / "load.png"
    r = subprocess.run(
        [sys.executable, "-m", "tailsim", "plot", str(out), "--kind", "load", "--out", str(png)],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    assert png.stat().st_size > 1000
    bad = tmp_path / "bad.toml"
    bad.write_text('base = "x.toml"\ngrid = {seed = [1]}\nbackend_typo = 1\n')
    r = subprocess.run([sys.executable, "-m", "tailsim", "sweep", str(bad)], capture_output=True, text=True)
    assert r.returncode == 1 and "backend_typo" in r.stderr


def test_changed_fixed_settings_do_not_reuse_stale_points(tmp_path):
    grid = {"workload[0].load": [0.3]}
    a = tailsim.sweep(small_dict(60), grid, tmp_path / "s", set={"transport.kind": "tcp"}, workers=1, progress=False)
    b = tailsim.sweep(small_dict(60), grid, tmp_path / "s", set={"transport.kind": "dctcp"}, workers=1, progress=False)
    assert list(a.params["point"]) != list(b.params["point"])
    assert b.result(b.params["point"][0]).config["transport"]["kind"] == "dctcp"
    # Re-running the same sweep resumes: same point, nothing recomputed.
    c = tailsim.sweep(small_dict(60), grid, tmp_path / "s", set={"transport.kind": "dctcp"}, workers=1, progress=False)
    assert list(c.params["point"]) == list(b.params["point"])


def test_a_sweep_recomputes_exactly_the_points_whose_referenced_file_changed(tmp_path):
    # Two points: one reads a CDF file, one a built-in CDF. Editing the file recomputes the first only;
    # --force (force=True) recomputes both; an unchanged re-run reuses both.
    cdf = tmp_path / "sizes.txt"
    cdf.write_text("1000 0\n20000 1\n")
    base = small_dict(80)
    grid = {"workload[0].cdf": [str(cdf), "websearch"]}
    out = tmp_path / "s"
    first = tailsim.sweep(base, grid, out, workers=2, progress=False)
    assert not first.failed and first.reused == []
    ids = dict(zip(first.params["workload[0].cdf"], first.params["point"]))
    stamp = {k: (out / "points" / v / "summary.json").stat().st_mtime_ns for k, v in ids.items()}
    old_id = first.result(ids[str(cdf)]).summary["run_id"]

    again = tailsim.sweep(base, grid, out, workers=2, progress=False)
    assert sorted(again.reused) == sorted(ids.values())

    cdf.write_text("1000 0\n90000 1\n")  # larger flows: another result
    edited = tailsim.sweep(base, grid, out, workers=2, progress=False)
    assert edited.reused == [ids["websearch"]]
    assert (out / "points" / ids["websearch"] / "summary.json").stat().st_mtime_ns == stamp["websearch"]
    assert (out / "points" / ids[str(cdf)] / "summary.json").stat().st_mtime_ns != stamp[str(cdf)]
    sizes = edited.result(ids[str(cdf)]).flows["size_bytes"]
    assert sizes.max() > 20000, "the recomputed point still has the old file's sizes"
    assert edited.result(ids[str(cdf)]).summary["run_id"] != old_id

    forced = tailsim.sweep(base, grid, out, workers=2, progress=False, force=True)
    assert forced.reused == []
    assert (out / "points" / ids["websearch"] / "summary.json").stat().st_mtime_ns != stamp["websearch"]


def test_run_id_names_the_referenced_files_contents(tmp_path):
    cdf = tmp_path / "sizes.txt"
    cdf.write_text("1000 0\n20000 1\n")
    d = small_dict(40)
    d["workload"][0]["cdf"] = str(cdf)
    a = tailsim.run(d, tmp_path / "a", progress=False).summary
    b = tailsim.run(d, tmp_path / "b", progress=False).summary
    assert a["run_id"] == b["run_id"] and len(a["tailsim_build"]) == 16
    cdf.write_text("1000 0\n20001 1\n")
    c = tailsim.run(d, tmp_path / "c", progress=False).summary
    assert c["run_id"] != a["run_id"]


def test_help_for_the_python_commands_and_a_missing_dask_in_one_line(tmp_path):
    for cmd in ("sweep", "plot", "reproduce"):
        r = subprocess.run([sys.executable, "-m", "tailsim", "help", cmd], capture_output=True, text=True)
        assert r.returncode == 0 and f"usage: tailsim {cmd}" in r.stdout, r.stderr
    # Without dask installed: one line naming a package that exists, no traceback.
    code = (
        "import builtins, sys\n"
        "real = builtins.__import__\n"
        "def imp(name, *a, **k):\n"
        "    if name.startswith('dask'):\n"
        "        raise ImportError('No module named dask')\n"
        "    return real(name, *a, **k)\n"
        "builtins.__import__ = imp\n"
        "from tailsim.cli import main\n"
        f"sys.exit(main(['sweep', r'{ROOT / 'examples' / 'tcp-dctcp.sweep.toml'}', '--backend', 'dask', "
        f"'--out', r'{tmp_path / 'd'}', '-q']))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 1, r.stderr
    assert r.stderr.strip().count("\n") == 0 and "pip install 'dask[distributed]'" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
