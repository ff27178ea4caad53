"""Open-loop stability and the maximum sustainable load (Homa thesis §6.3, Fig. 6.3; Ch. 5, Figs. 5.2 and 5.4).

An open-loop generator offers load whatever the network does. Below the transport's capacity the backlog —
bytes of messages that have arrived but are not yet complete — fluctuates around a level; above it the backlog
grows without bound, at the rate the offered load exceeds what the transport delivers. ``judge`` decides which
of the two a run shows; ``max_load`` searches the highest load judged stable.

The criterion: the backlog B(t) is sampled over the arrival window [0, T] (the run stops at T, when arrivals
stop); a least-squares line is fitted to its last two thirds (the first third is the fill-up). The run is
unstable when the line's slope exceeds ``tolerance`` × the offered byte rate, i.e. when more than that fraction
of the offered bytes is not being delivered. Over a window W the noise of the slope falls as 1/W, so heavier
tails (W6, W7: messages up to 10–29 MB) need longer windows; ``max_load`` takes the window as a parameter.

The second estimator is the thesis's own for Fig. 5.2: receivers' wasted bandwidth (downlink idle while they
have incomplete messages, ``summary["receivers"]``) rises with load; where it meets the surplus line 1 − load,
the transport cannot deliver more. ``wasted_crossing`` interpolates that point from a load sweep.
"""

from __future__ import annotations

import copy
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Optional, Union

import numpy as np
import pandas as pd

from .sweep import sweep


def backlog(flows: pd.DataFrame, until_s: float, samples: int = 60) -> pd.DataFrame:
    """Bytes of messages that have arrived but not completed, at ``samples`` times over (0, until_s]."""
    t = np.linspace(until_s / samples, until_s, samples)
    start = flows["start_ps"].to_numpy() / 1e12
    end_ps = flows["end_ps"].to_numpy(dtype=float, na_value=np.nan)  # null (unfinished) in results files
    end = np.where(flows["finished"].to_numpy(dtype=bool), end_ps / 1e12, np.inf)
    size = flows["size_bytes"].to_numpy().astype(float)
    order_s, order_e = np.argsort(start), np.argsort(end)
    arrived = np.concatenate([[0.0], np.cumsum(size[order_s])])[np.searchsorted(start[order_s], t, side="right")]
    done = np.concatenate([[0.0], np.cumsum(size[order_e])])[np.searchsorted(end[order_e], t, side="right")]
    return pd.DataFrame({"t_s": t, "backlog_bytes": arrived - done})


def judge(r, tolerance: float = 0.02) -> dict[str, Any]:
    """Whether a run that stopped when its arrivals stopped was stable: see the module's docstring.

    Returns ``stable``, ``growth`` (backlog slope / offered byte rate), the offered and delivered byte rates
    (B/s), the receivers' ``wasted_bandwidth`` and ``downlink_utilization`` when the run reports them."""
    f = r.flow_columns(["start_ps", "end_ps", "finished", "size_bytes"])
    until = float(r.summary["simulated_seconds"])
    if until <= 0 or len(f) < 10:
        raise ValueError("judge needs a run with arrivals over a positive time (set workload.until and stop.time)")
    b = backlog(f, until)
    tail = b[b["t_s"] >= until / 3]
    slope = float(np.polyfit(tail["t_s"], tail["backlog_bytes"], 1)[0])
    offered = float(f["size_bytes"].sum()) / until
    rec = r.summary.get("receivers") or {}
    growth = slope / offered if offered > 0 else 0.0
    return {
        "stable": bool(growth <= tolerance),
        "growth": growth,
        "offered_Bps": offered,
        "delivered_Bps": float(f.loc[f["finished"], "size_bytes"].sum()) / until,
        "backlog_end_bytes": float(b["backlog_bytes"].iloc[-1]),
        "wasted_bandwidth": rec.get("wasted_bandwidth", math.nan),
        "downlink_utilization": rec.get("downlink_utilization", math.nan),
        "unfinished": int((~f["finished"]).sum()),
    }


def _window_config(base: Mapping[str, Any], duration: str) -> dict:
    """``base`` with its first workload offering load until ``duration`` and the run stopping then."""
    cfg = copy.deepcopy(dict(base))
    wl = dict(cfg["workload"][0])
    wl.pop("flows", None)
    wl["until"] = duration
    cfg["workload"] = [wl, *cfg["workload"][1:]]
    cfg["stop"] = {**cfg.get("stop", {}), "time": duration}
    return cfg


def load_points(
    base: Mapping[str, Any],
    loads: list[float],
    out: Union[str, os.PathLike],
    *,
    duration: str = "20ms",
    set: Optional[Mapping[str, Any]] = None,
    tolerance: float = 0.02,
    **run: Any,
) -> pd.DataFrame:
    """Run ``base`` (a config dict) at each load over an arrival window of ``duration`` and judge each run.
    Points are sweep points under ``out`` (finished ones are reused)."""
    res = sweep(_window_config(base, duration), {"workload[0].load": [round(x, 4) for x in loads]}, out, set=set, **run)
    if res.failed:
        raise RuntimeError(f"failed points: {res.failed}")
    rows = []
    for p in res.params.itertuples():
        r = res.result(p.point)
        rows.append({"load": r.config["workload"][0]["load"], **judge(r, tolerance), "dir": str(r.dir)})
    return pd.DataFrame(rows).sort_values("load", ignore_index=True)


def max_load(
    base: Mapping[str, Any],
    out: Union[str, os.PathLike],
    *,
    lo: float = 0.5,
    hi: float = 0.98,
    resolution: float = 0.01,
    duration: str = "20ms",
    set: Optional[Mapping[str, Any]] = None,
    tolerance: float = 0.02,
    workers: Optional[int] = None,
    **run: Any,
) -> dict[str, Any]:
    """The highest load in [lo, hi] at which ``base`` is judged stable, to within ``resolution``.

    Each round runs ``workers`` (default 2) loads spread evenly inside the current bracket, in parallel, and
    narrows it to (highest stable load below the lowest unstable one, lowest unstable load). ``lo`` is
    checked first, and ``hi`` if every probe is stable. Returns ``max_load`` (None if even ``lo`` is
    unstable), the bracket, and every probe's judgement in ``probes``."""
    n = max(1, workers or 2)
    out = Path(out)
    probes: list[pd.DataFrame] = []

    def probe(loads: list[float]) -> pd.DataFrame:
        d = load_points(base, loads, out, duration=duration, set=set, tolerance=tolerance, workers=n, **run)
        probes.append(d)
        return d

    first = probe([lo])
    if not first["stable"].iloc[0]:
        return {"max_load": None, "bracket": (None, lo), "probes": pd.concat(probes, ignore_index=True)}
    a, b = lo, None  # highest stable load, lowest unstable load (None: none found yet)
    while (b if b is not None else hi) - a > resolution + 1e-9:
        if b is None:  # spread the probes up to hi itself
            pts = [a + (hi - a) * (i + 1) / n for i in range(n)]
        else:
            pts = [a + (b - a) * (i + 1) / (n + 1) for i in range(n)]
        d = probe(pts)
        if (~d["stable"]).any():
            b = min(b if b is not None else math.inf, float(d.loc[~d["stable"], "load"].min()))
        below = d[d["stable"] & (d["load"] < (b if b is not None else math.inf))]
        if len(below):
            a = max(a, float(below["load"].max()))
    return {
        "max_load": a,
        "bracket": (a, b),
        "probes": pd.concat(probes, ignore_index=True).sort_values("load", ignore_index=True),
    }


def wasted_crossing(points: pd.DataFrame) -> Optional[float]:
    """The load at which wasted bandwidth first reaches the surplus 1 − load (linear interpolation between
    the sweep's loads), or None if it never does within the sweep (thesis Fig. 5.2)."""
    p = points.sort_values("load")
    x, w = p["load"].to_numpy(), p["wasted_bandwidth"].to_numpy()
    gap = w - (1 - x)
    for i in range(len(x)):
        if gap[i] >= 0:
            if i == 0:
                return float(x[0])
            x0, x1, g0, g1 = x[i - 1], x[i], gap[i - 1], gap[i]
            return float(x0 + (x1 - x0) * (-g0) / (g1 - g0))
    return None
