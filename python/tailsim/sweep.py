"""Sweeps: the same experiment over a grid of overrides, one process per point.

Each point is written to ``OUT/points/<id>/`` whole (the run writes a new directory and renames it into
place), then its ``point.json``; a point with both is finished: re-running a sweep skips it, so a killed sweep
resumes without redoing anything. A failing point records ``error.txt`` and does not stop the others. When
all points are done the per-point flows are combined into ``OUT/flows.parquet`` and the per-bucket statistics into
``OUT/summary.parquet``, each with one column per swept key.

Points run on a local process pool by default, or on a Dask distributed cluster (``backend="dask"``), which
must see ``OUT`` at the same path (a shared filesystem).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import multiprocessing as mp
import os
import shutil
import sys
import traceback
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Union

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ._config import ConfigLike, normalize, overrides
from .result import Result, table_file

__all__ = ["sweep", "SweepResult", "points"]


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


def _run_point(spec: dict) -> dict:
    """Run one point in a worker process. Never raises: failures are returned and written to error.txt."""
    from . import _core

    pdir = Path(spec["dir"])
    if pdir.exists() and not (pdir / "summary.json").exists():
        # A failed or cut-short attempt: only this sweep's own files, and the run writes its directory whole.
        shutil.rmtree(pdir)
    sets = list(spec["sets"]) + overrides({k: v for k, v in spec["params"].items() if k != "seed"})
    if "seed" in spec["params"]:
        sets.append(f"seed={int(spec['params']['seed'])}")
    point = json.dumps({"params": spec["params"], "sets": sets}, indent=1)
    try:
        _core.run(spec["kind"], spec["text"], spec["origin"], spec["base"], sets, str(pdir), None)
        # Last: a point is done when both its summary.json and its point.json are there.
        _atomic_write(pdir / "point.json", point)
        return {"id": spec["id"], "ok": True}
    except BaseException as e:  # noqa: BLE001 - every failure becomes a record, the sweep goes on
        msg = f"{type(e).__name__}: {e}"
        if (pdir / "summary.json").exists():
            # A run cut short (Ctrl-C) wrote what it simulated: not this point's result.
            shutil.rmtree(pdir)
        pdir.mkdir(parents=True, exist_ok=True)
        _atomic_write(pdir / "point.json", point)
        _atomic_write(pdir / "error.txt", msg + "\n\n" + traceback.format_exc())
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

    @property
    def flows(self) -> pd.DataFrame:
        """Every point's flows, with the swept keys as columns."""
        return pd.read_parquet(self.dir / "flows.parquet")

    @property
    def summary(self) -> pd.DataFrame:
        """Per-point, per-bucket statistics, with the swept keys as columns."""
        return pd.read_parquet(self.dir / "summary.parquet")

    def result(self, point: str) -> Result:
        return Result.load(self.dir / "points" / point)

    def __repr__(self) -> str:
        return f"<tailsim.SweepResult {len(self.params)} points, {len(self.failed)} failed, in {str(self.dir)!r}>"


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
) -> SweepResult:
    """Run ``base`` at every point of ``grid`` (keys as in ``--set``, plus ``"seed"``).

    ``backend="local"`` uses a process pool of ``workers`` processes (default: CPU count);
    ``backend="dask"`` uses the Dask scheduler at ``scheduler`` ("tcp://host:8786"), or a local Dask cluster
    of ``workers`` processes when no address is given. Finished points are skipped.
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
            }
        )
    todo = [s for s in specs if not _done(Path(s["dir"]))]
    outcomes: dict[str, dict] = {}
    show = progress if progress is not None else sys.stderr.isatty()
    if todo:
        if backend == "local":
            _local(todo, workers, outcomes, show, len(specs))
        elif backend == "dask":
            _dask(todo, workers, scheduler, outcomes, show, len(specs))
        else:
            raise ValueError(f"backend must be 'local' or 'dask', not {backend!r}")
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
    _combine(out, specs)
    _atomic_write(
        out / "sweep.json",
        json.dumps(
            {
                "grid": {k: list(v) for k, v in grid.items()},
                "set": dict(set or {}),
                "points": [s["id"] for s in specs],
                "failed": failed,
            },
            indent=1,
            default=str,
        ),
    )
    return SweepResult(out, params, failed)


def _report(show: bool, done: int, total: int, r: dict) -> None:
    if show:
        state = "ok" if r["ok"] else f"FAILED: {r['error']}"
        print(f"  [{done}/{total}] {r['id']}: {state}", file=sys.stderr)


def _local(todo: list, workers: Optional[int], outcomes: dict, show: bool, total: int) -> None:
    n = workers or os.cpu_count() or 1
    done = total - len(todo)
    # "fork" where available: workers do not re-run the user's script (which "spawn" does, breaking scripts
    # without an `if __name__ == "__main__":` guard), and the simulator starts no threads of its own.
    method = "fork" if "fork" in mp.get_all_start_methods() else "spawn"
    with ProcessPoolExecutor(max_workers=n, mp_context=mp.get_context(method)) as pool:
        futs = [pool.submit(_run_point, s) for s in todo]
        for f in as_completed(futs):
            r = f.result()
            outcomes[r["id"]] = r
            done += 1
            _report(show, done, total, r)


def _dask(todo: list, workers: Optional[int], scheduler: Optional[str], outcomes: dict, show: bool, total: int) -> None:
    try:
        from dask.distributed import Client, LocalCluster, as_completed as dask_completed
    except ImportError as e:
        raise ImportError("backend='dask' needs dask.distributed: pip install 'tailsim[dask]'") from e
    cluster = None
    if scheduler:
        client = Client(scheduler)
    else:
        cluster = LocalCluster(
            n_workers=workers or os.cpu_count() or 1, threads_per_worker=1, processes=True, dashboard_address=None
        )
        client = Client(cluster)
    try:
        done = total - len(todo)
        futs = client.map(_run_point, todo, pure=False, key=[f"tailsim-{s['id']}" for s in todo])
        for f in dask_completed(futs):
            r = f.result()
            outcomes[r["id"]] = r
            done += 1
            _report(show, done, total, r)
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
    return pq.read_table(f) if f.suffix == ".parquet" else pa.Table.from_pandas(pd.read_csv(f), preserve_index=False)


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
