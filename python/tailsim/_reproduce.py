"""What the thesis reproductions (DeTail, FastLane, BurstRadar) share: merging configuration tables, running
labelled points that survive a stop, and target rows with their accepted range."""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pandas as pd

from . import targets
from .result import Result
from .sweep import sweep, write_atomic


def merge(a: dict, b: dict) -> dict:
    """``a`` with ``b``'s keys laid over it, tables merged key by key (neither is modified)."""
    out = copy.deepcopy(a)
    for k, v in b.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def run_points(
    part: str, specs: list[tuple[dict, dict]], out: Path, run: dict, measure: Callable[[Result], dict]
) -> pd.DataFrame:
    """Run every (labels, config) point, each its own one-point sweep under ``out/part/<labels>`` (a point that
    finished is read back, not run again), ``run["workers"]`` at a time; one row per point: ``part``, the
    labels and what ``measure`` returns."""

    def one(spec):
        labels, cfg = spec
        tag = "-".join(f"{k}={v}" for k, v in labels.items())
        res = sweep(
            cfg,
            {"seed": [cfg["seed"]]},
            out / part / tag,
            backend=run["backend"],
            workers=1,
            scheduler=run["scheduler"],
            progress=False,
        )
        if res.failed:
            raise RuntimeError(f"{part}/{tag}: failed: {res.failed}")
        r = Result.load(res.dir / "points" / res.params["point"].iloc[0])
        if run["progress"]:
            print(f"  {part} {tag}: {r.summary['wall_seconds']:.1f} s", flush=True)
        return {"part": part, **labels, **measure(r)}

    with ThreadPoolExecutor(max_workers=max(1, run["workers"] or os.cpu_count() or 1)) as pool:
        rows = list(pool.map(one, specs))
    return pd.DataFrame(rows)


def row_at(d: pd.DataFrame, **at) -> pd.Series | None:
    """The first row of ``d`` whose columns equal ``at`` (e.g. ``scheme="TCP", util=0.2``), or None."""
    sel = d
    for k, v in at.items():
        sel = sel[sel[k] == v]
    return sel.iloc[0] if len(sel) else None


def value_at(d: pd.DataFrame, col: str, **at) -> float | None:
    """``col`` in ``row_at(d, **at)``."""
    r = row_at(d, **at)
    return None if r is None else float(r[col])


def row(target: str, measured, low: float, high: float, note: str = "", **labels) -> dict:
    """One target (``targets.target``): ``measured`` is a ``targets.Estimate`` (its interval and basis decide
    the verdict, ``yes``/``NO``/``not judged at this scale``), a plain number (a single run's value, judged
    as it is: say in ``note`` why one run settles it), or None (not run)."""
    if measured is None or isinstance(measured, targets.Estimate):
        est = measured
    elif pd.isna(measured):
        est = None
    else:
        est = targets.exact(float(measured), "one run (no interval)")
    return targets.target(target, est, low, high, note, **labels)


def targets_md(rows: list) -> str:
    return targets.markdown(rows)


def reproduce(
    out: os.PathLike | str,
    parts: Sequence[str],
    part_fns: dict[str, Callable[[dict, Path, dict], pd.DataFrame]],
    scale: dict,
    run: dict,
    check_targets: Callable[[dict], list],
    figures: Callable[[dict, Path], None],
    summarize: Callable[[dict], pd.DataFrame] | None = None,
) -> dict[str, pd.DataFrame]:
    """Run the chosen parts (``part_fns`` in their order), then write ``summary.parquet`` (``summarize`` of
    the parts, by default their rows concatenated), ``targets.json``/``targets.md`` and the figures."""
    unknown = set(parts) - set(part_fns)
    if unknown:
        raise ValueError(f"unknown parts {sorted(unknown)}; expected some of {', '.join(part_fns)}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    res = {name: fn(scale, out, run) for name, fn in part_fns.items() if name in parts}
    if any(len(d) for d in res.values()):
        summary = summarize(res) if summarize else pd.concat([d for d in res.values() if len(d)], ignore_index=True)
        write_atomic(out / "summary.parquet", lambda p: summary.to_parquet(p, index=False))
    rows = check_targets(res)
    write_atomic(out / "targets.json", lambda p: p.write_text(json.dumps(rows, indent=1)))
    write_atomic(out / "targets.md", lambda p: p.write_text(targets_md(rows)))
    figures(res, out)
    return res
