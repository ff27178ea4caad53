"""One-command reproductions of the papers' headline results.

    tailsim reproduce pfabric [--scale small|full] [--out DIR] [--workers N] [--backend dask]

Each reproduction runs the paper's setup for every scheme, writes the paper's figures, and checks the
numbers the paper states (as ratios between schemes, the way the paper states them) in ``targets.json`` and
``targets.md``. A result outside a stated range is reported, not tuned away (docs/pfabric.md explains them).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Dict, Optional, Sequence

import pandas as pd

from . import plots
from .sweep import sweep

# The pFabric paper's baseline setup (§5.1): 144 hosts, 9 leaves × 16 hosts, 4 spines, 10/40 Gbps, ~14.6 µs RTT;
# Poisson all-to-all arrivals; per-packet spraying, the paper's default load balancing.
PFABRIC_BASE = {
    "name": "pfabric",
    "seed": 1,
    "topology": {"preset": "pfabric-144"},
    "routing": {"load_balance": "spray"},
    "workload": [{"kind": "poisson", "cdf": "websearch", "load": 0.6, "flows": 10000}],
}

# pFabric Table 1, as override sets on PFABRIC_BASE. With spraying, the ns-2 setup disabled
# duplicate-ACK fast retransmit for every scheme (reordering would trigger it), which we follow.
PFABRIC_SCHEMES: Dict[str, dict] = {
    "pFabric": {"switch.queue": "pfabric", "switch.buffer": "36KB", "transport.kind": "pfabric"},
    "TCP-DropTail": {"switch.buffer": "225KB", "transport.kind": "tcp", "transport.init_cwnd": 12,
                     "transport.min_rto": "200us", "transport.fast_retransmit": False},
    "DCTCP": {"switch.buffer": "225KB", "switch.ecn_threshold": "22.5KB", "transport.kind": "dctcp",
              "transport.init_cwnd": 12, "transport.min_rto": "200us", "transport.fast_retransmit": False,
              "transport.dctcp_g": 0.0625},
    "Ideal": {"transport.kind": "ideal"},
}

SCALES = {
    # 8 loads x 2 workloads x 4 schemes; the paper's scripts used 100 000 flows per point.
    "full": {"workloads": ["websearch", "datamining"], "loads": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8], "flows": 20000},
    "small": {"workloads": ["websearch"], "loads": [0.3, 0.6], "flows": 400},
}

# What the paper states (pFabric §5.4), as (scheme, bucket, statistic, reference scheme, low, high): the
# ratio scheme/reference of the statistic must lie in [low, high] at every load.
PFABRIC_TARGETS = [
    ("websearch", "pFabric", "(0,100KB]", "slowdown_mean", "Ideal", 1.013, 1.134, "small flows: pFabric mean within 1.3–13.4 % of Ideal"),
    ("websearch", "pFabric", "(0,100KB]", "slowdown_p99", "Ideal", 1.033, 1.29, "small flows: pFabric p99 within 3.3–29 % of Ideal"),
    ("websearch", "DCTCP", "(0,100KB]", "slowdown_mean", "pFabric", 2.5, 4.0, "small flows: DCTCP mean 2.5–4× pFabric's"),
    ("websearch", "DCTCP", "(0,100KB]", "slowdown_p99", "pFabric", 3.0, 4.0, "small flows: DCTCP p99 3–4× pFabric's"),
    ("websearch", "pFabric", "all", "slowdown_mean", "Ideal", 1.007, 1.178, "all flows: pFabric mean within 0.7–17.8 % of Ideal"),
]


def pfabric(out: os.PathLike | str = "results/reproduce-pfabric", scale: str = "small", workers: Optional[int] = None,
            backend: str = "local", scheduler: Optional[str] = None, flows: Optional[int] = None,
            loads: Optional[Sequence[float]] = None, progress: bool = True) -> pd.DataFrame:
    """Run the pFabric reproduction and return the combined per-bucket summary (one row per scheme,
    workload, load and bucket). Figures and target checks are written to ``out``."""
    cfg = dict(SCALES[scale])
    if flows:
        cfg["flows"] = flows
    if loads:
        cfg["loads"] = list(loads)
    out = Path(out)
    base = PFABRIC_BASE
    parts = []
    for name, overrides in PFABRIC_SCHEMES.items():
        res = sweep(base, {"workload[0].cdf": cfg["workloads"], "workload[0].load": cfg["loads"]}, out / name,
                    set={**overrides, "workload[0].flows": cfg["flows"]}, backend=backend, workers=workers,
                    scheduler=scheduler, progress=progress)
        if res.failed:
            raise RuntimeError(f"{name}: failed points: {res.failed}")
        s = res.summary
        s["scheme"] = name
        parts.append(s)
    summary = pd.concat(parts, ignore_index=True).rename(columns={"workload[0].cdf": "workload", "workload[0].load": "load"})
    summary.to_parquet(out / "summary.parquet", index=False)
    for wl in cfg["workloads"]:
        s = summary[summary["workload"] == wl]
        plots.normalized_fct_vs_load(s, x="load", series="scheme", panels=[("all", "slowdown_mean", "overall average")],
                                     path=out / f"{wl}-overall.png", title=f"pFabric Fig. 7 ({wl})")
        plots.normalized_fct_vs_load(s, x="load", series="scheme", panels=plots.PFABRIC_PANELS[:3],
                                     path=out / f"{wl}-breakdown.png", title=f"pFabric Figs. 8–9 ({wl})",
                                     bands=_bands(s, wl))
    checks = check_targets(summary)
    (out / "targets.json").write_text(json.dumps(checks, indent=1))
    (out / "targets.md").write_text(_targets_md(checks))
    return summary


def _bands(s: pd.DataFrame, workload: str) -> dict:
    """The paper's ranges relative to the Ideal, drawn as bands around the Ideal's curve."""
    ideal = s[s["scheme"] == "Ideal"]
    bands = {}
    for wl, scheme, bucket, stat, ref, lo, hi, label in PFABRIC_TARGETS:
        if wl != workload or ref != "Ideal" or scheme != "pFabric":
            continue
        title = {("(0,100KB]", "slowdown_mean"): "(0, 100KB]: average", ("(0,100KB]", "slowdown_p99"): "(0, 100KB]: 99th percentile"}.get((bucket, stat))
        if title:
            r = ideal[ideal["bucket"] == bucket].groupby("load")[stat].mean().sort_index()
            bands[title] = (list(r.index), list(r.values * lo), list(r.values * hi), f"paper: pFabric {lo:.3f}–{hi:.2f}× Ideal")
    return bands


def check_targets(summary: pd.DataFrame) -> list:
    rows = []
    for wl, scheme, bucket, stat, ref, lo, hi, label in PFABRIC_TARGETS:
        s = summary[(summary["workload"] == wl) & (summary["bucket"] == bucket)]
        a = s[s["scheme"] == scheme].groupby("load")[stat].mean()
        b = s[s["scheme"] == ref].groupby("load")[stat].mean()
        for load in sorted(set(a.index) & set(b.index)):
            ratio = float(a[load] / b[load])
            rows.append({"workload": wl, "target": label, "load": load, "ratio": round(ratio, 4), "low": lo, "high": hi,
                         "within": bool(lo <= ratio <= hi)})
    return rows


def _targets_md(rows: list) -> str:
    lines = ["| workload | target | load | measured ratio | paper range | within |", "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['workload']} | {r['target']} | {r['load']} | {r['ratio']:.3f} | {r['low']}–{r['high']} | {'yes' if r['within'] else 'NO'} |")
    return "\n".join(lines) + "\n"
