"""Sweeps: the same experiment over a grid of overrides, one process per point.

Each point is written to ``OUT/points/<id>/`` whole (the run writes a new directory and renames it into
place), then its ``point.json``; a point with both is finished. Re-running a sweep reuses a finished point
only if its run id (tailsim's version and build, the resolved configuration, the contents of every file it
references) is the one it would have now, and recomputes it otherwise (``force=True``: always), so a killed
or interrupted sweep resumes without redoing anything and a changed CDF or a new tailsim never serves stale
points. A failing point records ``error.txt`` and does not stop the others. When all points are done the
per-point flows are combined into ``OUT/flows.parquet`` and the per-bucket statistics into
``OUT/summary.parquet``, each with one column per swept key.

Ctrl-C or SIGTERM stops a local sweep: queued points are cancelled, running ones stop within a poll and
leave nothing (a point is finished or absent), the workers exit (also when the parent is killed outright:
they ask the kernel for a signal on their parent's death), and KeyboardInterrupt goes on to the caller. One
sweep at a time writes into a directory (a lock file, ``OUT/.lock``).

Points run on local worker processes by default (fresh interpreters, not forks: ``_sweep_worker``), or on a
Dask distributed cluster (``backend="dask"``), which must see ``OUT`` at the same path (a shared filesystem).
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import fcntl
import hashlib
import itertools
import json
import os
import pickle
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Union

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ._config import ConfigLike, normalize, overrides
from .result import Result, read_table, table_file

__all__ = ["sweep", "SweepResult", "SweepBusy", "points"]


def points(grid: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """The cartesian product of the grid, in the grid's key order (last key varies fastest)."""
    keys = list(grid)
    for k in keys:
        if isinstance(grid[k], (str, bytes)) or not isinstance(grid[k], Sequence):
            raise TypeError(f"grid[{k!r}] must be a list of values")
    return [dict(zip(keys, combo)) for combo in itertools.product(*(grid[k] for k in keys))]


def point_id(params: Mapping[str, Any], context: str = "") -> str:
    """A stable name for a point: readable prefix + hash of the exact parameters and of ``context`` (the base
    experiment and the fixed overrides), so that re-running a sweep into the same directory with a changed
    base or ``set`` computes new points instead of reusing stale ones."""
    key = json.dumps(params, sort_keys=True, default=str) + context
    digest = hashlib.sha1(key.encode()).hexdigest()[:10]
    readable = "_".join(f"{_short(k)}={v}" for k, v in params.items())
    readable = "".join(c if c.isalnum() or c in "=._-" else "-" for c in readable)[:60]
    return f"{readable}__{digest}" if readable else digest


def _short(key: str) -> str:
    return key.split(".")[-1].split("]")[-1] or key


# Set in local pool workers (by _worker_init): how a signal is taken there.
_POOL_WORKER = False
_IN_RUN = False
_STOPPING = False


def _worker_init(parent: int) -> None:
    """A local pool worker: exit when the parent dies (Linux: PR_SET_PDEATHSIG), and on SIGINT/SIGTERM stop
    the running point (KeyboardInterrupt, then exit) or, between points, exit at once."""
    global _POOL_WORKER
    _POOL_WORKER = True
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG = 1
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:  # the parent died before the request above took effect
        os._exit(1)
    signal.signal(signal.SIGINT, _worker_signal)
    signal.signal(signal.SIGTERM, _worker_signal)


def _worker_signal(signum, frame) -> None:  # noqa: ARG001 (signal handler signature)
    global _STOPPING
    if _STOPPING:  # Ctrl-C reaches the worker and the parent, which then also sends SIGTERM: once is enough
        return
    _STOPPING = True
    if not _IN_RUN:
        os._exit(130)
    raise KeyboardInterrupt


def _point_sets(spec: dict) -> list:
    sets = list(spec["sets"]) + overrides({k: v for k, v in spec["params"].items() if k != "seed"})
    if "seed" in spec["params"]:
        sets.append(f"seed={int(spec['params']['seed'])}")
    return sets


def _finished_run_id(pdir: Path) -> Optional[str]:
    if not _done(pdir):
        return None
    try:
        return json.loads((pdir / "summary.json").read_text()).get("run_id")
    except (OSError, ValueError):
        return None


def _run_point(spec: dict) -> dict:
    """Run one point in a worker process (or reuse it when finished with the same run id). Never raises but
    for Ctrl-C: failures are returned and written to error.txt."""
    from . import _core

    global _IN_RUN
    pdir = Path(spec["dir"])
    sets = _point_sets(spec)
    args = (spec["kind"], spec["text"], spec["origin"], spec["base"], sets)
    _IN_RUN = True
    try:
        have = _finished_run_id(pdir)
        if have is not None and not spec.get("force"):
            if _core.run_id(*args) == have:
                return {"id": spec["id"], "ok": True, "reused": True}
        if pdir.exists():
            # A failed, cut-short or out-of-date attempt: only this sweep's own files, removed whole before
            # the run, so the point is never taken for finished while it reruns.
            shutil.rmtree(pdir)
        _core.run(*args, str(pdir), None, False)
        # Last: a point is done when both its summary.json and its point.json are there.
        _atomic_write(pdir / "point.json", _point_json(spec))
        return {"id": spec["id"], "ok": True, "recomputed": have is not None}
    except KeyboardInterrupt:
        # Stopped: the point is not finished, so nothing of it stays (the run wrote no partial results).
        shutil.rmtree(pdir, ignore_errors=True)
        if _POOL_WORKER:
            os._exit(130)
        raise
    except BaseException as e:  # noqa: BLE001 - every failure becomes a record, the sweep goes on
        return _record_failure(spec, f"{type(e).__name__}: {e}", traceback.format_exc())
    finally:
        _IN_RUN = False


def _point_json(spec: dict) -> str:
    return json.dumps({"params": spec["params"], "sets": _point_sets(spec)}, indent=1)


def _record_failure(spec: dict, msg: str, detail: str = "") -> dict:
    """A failed point: its directory holds point.json and error.txt only (no summary.json: not finished)."""
    pdir = Path(spec["dir"])
    shutil.rmtree(pdir, ignore_errors=True)
    pdir.mkdir(parents=True, exist_ok=True)
    _atomic_write(pdir / "point.json", _point_json(spec))
    _atomic_write(pdir / "error.txt", msg + ("\n\n" + detail if detail else "\n"))
    return {"id": spec["id"], "ok": False, "error": msg}


def _done(pdir: Path) -> bool:
    return (pdir / "summary.json").exists() and (pdir / "point.json").exists()


def write_atomic(path: Path, write: Callable[[Path], None]) -> None:
    """``write`` to a temporary name beside ``path``, then rename: a reader never sees half a file."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    write(tmp)
    os.replace(tmp, path)


def _atomic_write(path: Path, text: str) -> None:
    write_atomic(path, lambda p: p.write_text(text))


@dataclass
class SweepResult:
    dir: Path
    params: pd.DataFrame  # one row per point: id, swept keys, status
    failed: dict[str, str]  # point id -> error
    reused: list = dataclasses.field(default_factory=list)  # ids of the finished points taken as they were

    @property
    def flows(self) -> pd.DataFrame:
        """Every point's flows, with the swept keys as columns."""
        return read_table(self.dir / "flows.parquet", "flows")

    @property
    def summary(self) -> pd.DataFrame:
        """Per-point, per-bucket statistics, with the swept keys as columns."""
        return pd.read_parquet(self.dir / "summary.parquet")

    def result(self, point: str) -> Result:
        return Result.load(self.dir / "points" / point)

    def __repr__(self) -> str:
        return (
            f"<tailsim.SweepResult {len(self.params)} points ({len(self.reused)} reused), {len(self.failed)} failed, "
            f"in {str(self.dir)!r}>"
        )


class SweepBusy(RuntimeError):
    """Another sweep is writing into the same directory."""


class MissingDependency(ImportError):
    """An optional package a chosen feature needs is not installed (e.g. dask for backend="dask")."""


def sweep(
    base: ConfigLike,
    grid: Mapping[str, Sequence[Any]],
    out: Union[str, os.PathLike],
    *,
    set: Optional[Mapping[str, Any]] = None,
    backend: str = "local",
    workers: Optional[int] = None,
    scheduler: Optional[str] = None,
    progress: Optional[bool] = None,
    force: bool = False,
) -> SweepResult:
    """Run ``base`` at every point of ``grid`` (keys as in ``--set``, plus ``"seed"``).

    ``backend="local"`` uses a process pool of ``workers`` processes (default: CPU count);
    ``backend="dask"`` uses the Dask scheduler at ``scheduler`` ("tcp://host:8786"), or a local Dask cluster
    of ``workers`` processes when no address is given. A finished point is reused when its run id is the one it
    would have now (same tailsim build, configuration and referenced files' contents); ``force`` recomputes
    every point. Ctrl-C stops the sweep (KeyboardInterrupt); the same call resumes it.
    """
    kind, text, origin, base_dir = normalize(base)
    out = Path(out).resolve()
    (out / "points").mkdir(parents=True, exist_ok=True)
    fixed = overrides(set)
    plist = points(grid)
    context = json.dumps([text, fixed], default=str)
    specs = []
    for params in plist:
        pid = point_id(params, context)
        specs.append(
            {
                "id": pid,
                "params": params,
                "kind": kind,
                "text": text,
                "origin": origin,
                "base": base_dir,
                "sets": fixed,
                "dir": str(out / "points" / pid),
                "force": force,
            }
        )
    outcomes: dict[str, dict] = {}
    show = progress if progress is not None else sys.stderr.isatty()
    with _lock(out):
        try:
            if backend == "local":
                _local(specs, workers, outcomes, show)
            elif backend == "dask":
                _dask(specs, workers, scheduler, outcomes, show)
            else:
                raise ValueError(f"backend must be 'local' or 'dask', not {backend!r}")
        except KeyboardInterrupt:
            if show:
                n = sum(_done(Path(s["dir"])) for s in specs)
                print(
                    f"  interrupted: {n} of {len(specs)} points finished; the same command resumes the rest",
                    file=sys.stderr,
                )
            raise
        failed = {}
        rows = []
        for s in specs:
            done = _done(Path(s["dir"]))
            err = Path(s["dir"]) / "error.txt"
            if not done:
                failed[s["id"]] = outcomes.get(s["id"], {}).get("error") or (
                    err.read_text().split("\n")[0] if err.exists() else "not run"
                )
            rows.append({"point": s["id"], **s["params"], "status": "done" if done else "failed"})
        params = pd.DataFrame(rows)
        reused = [s["id"] for s in specs if outcomes.get(s["id"], {}).get("reused")]
        _combine(out, specs)
        _atomic_write(
            out / "sweep.json",
            json.dumps(
                {
                    "grid": {k: list(v) for k, v in grid.items()},
                    "set": dict(set or {}),
                    "points": [s["id"] for s in specs],
                    "reused": reused,
                    "failed": failed,
                },
                indent=1,
                default=str,
            ),
        )
    return SweepResult(out, params, failed, reused)


@contextlib.contextmanager
def _lock(out: Path, wait: float = 5.0):
    """One sweep at a time in a directory: two would compute the same points into the same place. A sweep that
    was just killed may hold it a moment longer (its workers stop at their next poll), hence the wait."""
    path = out / ".lock"
    with open(path, "a+") as f:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    f.seek(0)
                    who = f.read().strip() or "another process"
                    raise SweepBusy(f"{out}: another sweep is running into this directory ({who})") from None
                time.sleep(0.1)
        f.seek(0)
        f.truncate()
        f.write(f"pid {os.getpid()}")
        f.flush()
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _report(show: bool, done: int, total: int, r: dict) -> None:
    if show:
        if not r["ok"]:
            state = f"FAILED: {r['error']}"
        elif r.get("reused"):
            state = "reused (finished, same run id)"
        elif r.get("recomputed"):
            state = "ok (recomputed: its configuration, inputs or tailsim changed, or --force)"
        else:
            state = "ok"
        print(f"  [{done}/{total}] {r['id']}: {state}", file=sys.stderr)


def _local(todo: list, workers: Optional[int], outcomes: dict, show: bool) -> None:
    n = min(workers or os.cpu_count() or 1, len(todo))
    if n == 0:
        return
    procs = _Workers(n)
    threads = ThreadPoolExecutor(max_workers=n, thread_name_prefix="tailsim-sweep")
    futs = []
    try:
        futs = [threads.submit(procs.run, s) for s in todo]
        for done, f in enumerate(as_completed(futs), 1):
            r = f.result()
            if r is None:  # a worker was stopped by a signal sent to it alone: the sweep stops as on Ctrl-C
                raise KeyboardInterrupt
            outcomes[r["id"]] = r
            _report(show, done, len(todo), r)
        procs.close()
    except BaseException:
        # Ctrl-C (the workers got it too, from the terminal) or SIGTERM (only this process did): cancel what
        # is queued, stop what runs, and wait for the workers to be gone.
        for f in futs:
            f.cancel()
        procs.stop()
        raise
    finally:
        threads.shutdown(wait=True, cancel_futures=True)


class _Workers:
    """The local pool: ``n`` worker processes (`tailsim._sweep_worker`, fresh interpreters started with
    ``subprocess``: why not forked, nor multiprocessing's "spawn", is said there), each serving one point
    at a time to one of the sweep's threads. A worker that dies on a point (a crash, an OOM kill) fails that
    point alone, and a new one takes its place."""

    def __init__(self, n: int):
        self._lock = threading.Lock()
        self._stopping = False
        self._procs: list[subprocess.Popen] = []
        self._idle: queue.SimpleQueue = queue.SimpleQueue()
        # Started from the calling thread, which outlives them: on Linux a worker's parent-death signal
        # follows the thread that started it.
        for _ in range(n):
            self._idle.put(self._start())

    def _start(self) -> subprocess.Popen:
        env = dict(os.environ)
        # The tailsim this process runs, whatever sys.path the caller built at run time.
        here = str(Path(__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join([here, *filter(None, [env.get("PYTHONPATH")])])
        p = subprocess.Popen(
            [sys.executable, "-m", "tailsim._sweep_worker", str(os.getpid())],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
        with self._lock:
            self._procs.append(p)
        return p

    def run(self, spec: dict) -> Optional[dict]:
        """The point's outcome, or None if the sweep is stopping or the worker was stopped by a signal."""
        p = self._idle.get()
        try:
            if self._stopping:
                return None
            try:
                pickle.dump(spec, p.stdin)
                p.stdin.flush()
                return pickle.load(p.stdout)
            except (EOFError, OSError, ValueError, pickle.UnpicklingError):  # ValueError: closed by stop()
                code = p.wait()
            if self._stopping or code in (130, -signal.SIGINT, -signal.SIGTERM):
                return None
            # It died on this point: the point fails alone (as _run_point records a failure), a new worker
            # serves the next.
            p = self._start()
            how = f"exit status {code}"
            if code < 0:
                how = f"killed by signal {-code}"
                with contextlib.suppress(ValueError):
                    how = f"killed by {signal.Signals(-code).name}"
            return _record_failure(spec, f"the worker process running this point died ({how})")
        finally:
            self._idle.put(p)

    def close(self) -> None:
        """Every point answered: end of input ends each worker."""
        for p in self._procs:
            with contextlib.suppress(OSError):
                p.stdin.close()
        for p in self._procs:
            p.wait()

    def stop(self, grace: float = 5.0) -> None:
        """SIGTERM to every worker (a running point stops at its next poll and leaves nothing), then wait;
        a worker still there after ``grace`` seconds is killed."""
        with self._lock:
            self._stopping = True
            procs = list(self._procs)
        for p in procs:
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(grace)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            for f in (p.stdin, p.stdout):
                with contextlib.suppress(OSError):
                    f.close()


def _dask(todo: list, workers: Optional[int], scheduler: Optional[str], outcomes: dict, show: bool) -> None:
    try:
        from dask.distributed import Client, LocalCluster, as_completed as dask_completed
    except ImportError as e:
        raise MissingDependency(
            "backend='dask' needs dask.distributed: pip install 'dask[distributed]' (or, in a tailsim checkout, "
            "pip install '.[dask]')"
        ) from e
    cluster = None
    if scheduler:
        client = Client(scheduler)
    else:
        cluster = LocalCluster(
            n_workers=workers or os.cpu_count() or 1, threads_per_worker=1, processes=True, dashboard_address=None
        )
        client = Client(cluster)
    futs = []
    try:
        futs = client.map(_run_point, todo, pure=False, key=[f"tailsim-{s['id']}" for s in todo])
        for done, f in enumerate(dask_completed(futs), 1):
            r = f.result()
            outcomes[r["id"]] = r
            _report(show, done, len(todo), r)
    except BaseException:
        client.cancel(futs)
        raise
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _combine(out: Path, specs: list) -> None:
    """Concatenate finished points into OUT/flows.parquet and OUT/summary.parquet (atomically).

    The flows are streamed point by point into one Parquet file: a long-window point can hold tens of millions
    of flows, and holding every point's table at once (as one DataFrame) exhausted the memory of a 23 GB
    machine on a two-point maximum-load probe."""
    done = [s for s in specs if _done(Path(s["dir"]))]
    if not done:
        return
    # One row of swept values per point, typed together (ints and floats mixed become floats, as in a concat).
    tags = pd.DataFrame([{"point": s["id"], **{k: _cell(v) for k, v in s["params"].items()}} for s in done])
    tag_schema = pa.Schema.from_pandas(tags, preserve_index=False)
    files = [table_file(Path(s["dir"]), "flows") for s in done]
    present = [f for f in files if f is not None]
    if present:
        flow_schema = _unify([pq.read_schema(f) if f.suffix == ".parquet" else _read_flows(f).schema for f in present])
        flow_schema = pa.schema([f for f in flow_schema if f.name not in tag_schema.names] + list(tag_schema))

        def write_flows(tmp: Path) -> None:
            with pq.ParquetWriter(tmp, flow_schema) as w:
                for i, f in enumerate(files):
                    if f is not None:
                        w.write_table(_with_tags(_read_flows(f), flow_schema, tag_schema, tags.iloc[i]))

        write_atomic(out / "flows.parquet", write_flows)
    buckets = []
    for i, s in enumerate(done):
        r = Result.load(s["dir"])
        b = r.buckets.reset_index()
        # Deadline metrics are per run; repeat them on every bucket row so one table holds everything.
        for k, v in (r.deadlines or {}).items():
            b[f"deadline_{k}" if not k.startswith(("application", "other")) else k] = v
        for k, v in tags.iloc[i].items():
            b[k] = v
        buckets.append(b)
    df = pd.concat(buckets, ignore_index=True)
    write_atomic(out / "summary.parquet", lambda p: df.to_parquet(p, index=False))


def _read_flows(f: Path) -> pa.Table:
    if f.suffix == ".parquet":
        return pq.read_table(f)
    return pa.Table.from_pandas(read_table(f, "flows"), preserve_index=False)


def _unify(schemas: list) -> pa.Schema:
    try:
        return pa.unify_schemas(schemas, promote_options="permissive")
    except TypeError:  # pyarrow < 14: no type promotion
        return pa.unify_schemas(schemas)


def _with_tags(t: pa.Table, schema: pa.Schema, tag_schema: pa.Schema, tag: pd.Series) -> pa.Table:
    """One point's flows with its swept values as constant columns, in ``schema``'s columns and types."""
    n = t.num_rows
    cols = []
    for field in schema:
        if field.name in tag_schema.names:
            v = tag[field.name]
            cols.append(
                pa.repeat(pa.scalar(None if pd.isna(v) else v.item() if hasattr(v, "item") else v, field.type), n)
            )
        elif field.name in t.column_names:
            cols.append(t.column(field.name).cast(field.type))
        else:
            cols.append(pa.nulls(n, field.type))
    return pa.Table.from_arrays(cols, schema=schema)


def _cell(v: Any) -> Any:
    return json.dumps(v) if isinstance(v, (list, dict)) else v
