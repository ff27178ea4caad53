"""The papers' published values, overlaid on a figure whenever what it plots matches the paper's setup.

A plot made with ``tailsim plot`` (or ``tailsim.plots``) of runs on a paper's fabric and workload gets the
numbers the paper states drawn on it, as the reproductions draw them: it is the first question a reader asks
of such a figure. The match is read from each run's resolved configuration, never from labels.

- pFabric §5.4 (Figs. 7–9): on pfabric-144 with the web-search CDF, load on the x axis, the stated ranges of
  pFabric against the Ideal and of DCTCP against pFabric, as bands around the reference scheme's own curve
  (the paper states them as ratios) — drawn when both schemes of a range are among the plotted series.
- Homa thesis §6.2 (Fig. 6.1): on homa-144 with a thesis workload (W1–W7) at 80 % load, Homa's p99 slowdown
  bound of 2.2 for the shortest 50 % of messages.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Optional

import pandas as pd

# Keys a plot's x may be when it is the offered load (a sweep's key, or the reproductions' renamed column).
LOAD_KEYS = ("workload[0].load", "load")


def scheme_of(cfg: Mapping) -> Optional[str]:
    """Which of the pFabric paper's schemes a run is, from its resolved configuration."""
    kind = (cfg.get("transport") or {}).get("kind")
    return {"ideal": "Ideal", "pfabric": "pFabric", "dctcp": "DCTCP", "tcp": "TCP-DropTail"}.get(kind)


def pfabric_workload(cfg: Mapping) -> Optional[str]:
    """The pFabric workload a run reproduces (its fabric and one Poisson workload of the paper's CDFs), or None."""
    topo = cfg.get("topology") or {}
    wl = cfg.get("workload") or []
    if topo.get("preset") != "pfabric-144" or len(wl) != 1 or wl[0].get("kind") != "poisson":
        return None
    cdf = wl[0].get("cdf")
    return cdf if cdf in ("websearch", "datamining") else None


def point_configs(summary: pd.DataFrame, sweep_dir: Path) -> dict[str, dict]:
    """Each point's resolved configuration, by point id (from its summary.json; points without one left out)."""
    out = {}
    for point in summary["point"].unique() if "point" in summary.columns else []:
        f = Path(sweep_dir) / "points" / str(point) / "summary.json"
        try:
            out[point] = json.loads(f.read_text()).get("config") or {}
        except (OSError, ValueError):
            continue
    return out


def pfabric_roles(summary: pd.DataFrame, series: str, configs: Mapping[str, dict]) -> tuple[dict, Optional[str]]:
    """({series value: pFabric scheme}, workload) when every plotted point runs the paper's setup on one workload
    (else ({}, None)). A series value whose points are not all the same scheme gets no role."""
    workloads, roles = set(), {}
    for key, g in summary.groupby(series):
        cfgs = [configs.get(p) for p in g["point"].unique()]
        if any(c is None for c in cfgs):
            return {}, None
        workloads |= {pfabric_workload(c) for c in cfgs}
        schemes = {scheme_of(c) for c in cfgs}
        if len(schemes) == 1 and None not in schemes:
            roles[key] = schemes.pop()
    if len(workloads) != 1 or None in workloads:
        return {}, None
    return roles, workloads.pop()


def pfabric_bands(
    summary: pd.DataFrame,
    x: str,
    series: str,
    panels: Sequence[tuple[str, str, str]],
    roles: Mapping,
    workload: Optional[str],
) -> dict[str, list[tuple]]:
    """Bands for ``plots.normalized_fct_vs_load``: {panel title: [(x, low, high, label, series value), ...]},
    one per stated range whose two schemes are both plotted (``roles``: series value → scheme)."""
    from .reproduce import PFABRIC_TARGETS

    if x not in LOAD_KEYS or workload is None:
        return {}
    by_scheme = {v: k for k, v in roles.items()}
    out: dict[str, list[tuple]] = {}
    for wl, scheme, bucket, stat, ref, lo, hi, _label in PFABRIC_TARGETS:
        if wl != workload or scheme not in by_scheme or ref not in by_scheme:
            continue
        for pb, pstat, name in panels:
            if (pb, pstat) != (bucket, stat):
                continue
            d = summary[(summary["bucket"] == bucket) & (summary[series] == by_scheme[ref])]
            r = d.groupby(x)[stat].mean().sort_index()
            if not len(r):
                continue
            label = f"paper §5.4: {scheme} {lo:g}–{hi:g}× {ref}"
            out.setdefault(name, []).append(
                (list(r.index), list(r.to_numpy() * lo), list(r.to_numpy() * hi), label, by_scheme[scheme])
            )
    return out


# Homa thesis §6.2: at 80 % load the shortest 50 % of messages see a p99 slowdown of at most 2.2.
HOMA_SHORT_HALF_P99 = 2.2


def homa_short_half_bound(configs: Sequence[Mapping]) -> Optional[tuple[float, str]]:
    """(2.2, label) when every plotted run is the thesis's setup at 80 % load (homa-144, one thesis workload)."""
    if not configs:
        return None
    for cfg in configs:
        wl = cfg.get("workload") or []
        if (cfg.get("topology") or {}).get("preset") != "homa-144" or len(wl) != 1:
            return None
        if not str(wl[0].get("cdf", "")).startswith("homa-thesis-w") or wl[0].get("load") != 0.8:
            return None
    return HOMA_SHORT_HALF_P99, "thesis §6.2: Homa's p99 ≤ 2.2, shortest 50 % at 80 % load"
