"""Paper-style figures. Every function returns a matplotlib Figure and, given ``path``, saves it (the format
follows the suffix: .png, .pdf, .svg)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Optional, Union

import numpy as np
import pandas as pd

from .result import Result

ResultsLike = Union[Result, Mapping[str, Result], Sequence[Result]]


def _plt():
    import matplotlib

    if os.environ.get("DISPLAY") is None and "ipykernel" not in __import__("sys").modules:
        matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def _labelled(results: ResultsLike) -> list[tuple[str, Result]]:
    if isinstance(results, Result):
        return [(results.summary["name"], results)]
    if isinstance(results, Mapping):
        return list(results.items())
    return [(r.summary["name"], r) for r in results]


def _finish(fig, path: Optional[Union[str, os.PathLike]]):
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=150)
    return fig


def _fmt_size(b: float) -> str:
    for unit, div in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if b >= div:
            v = b / div
            return f"{v:.0f}{unit}" if v >= 10 else f"{v:.1f}{unit}"
    return f"{b:.0f}B"


def size_percentile_curve(flows: pd.DataFrame, bins: int = 20) -> pd.DataFrame:
    """Slowdown p50/p99 by flow-size group, Homa style: flows sorted by size and cut into ``bins`` groups of
    equal count; x is the cumulative fraction of flows at the group's middle."""
    f = flows[flows["finished"]].sort_values("size_bytes", kind="stable").reset_index(drop=True)
    n = len(f)
    if n == 0:
        return pd.DataFrame(columns=["x", "size_bytes", "p50", "p99", "flows"])
    edges = np.linspace(0, n, bins + 1).astype(int)
    rows = []
    for lo, hi in zip(edges[:-1], edges[1:]):
        if hi <= lo:
            continue
        g = f.iloc[lo:hi]
        rows.append(
            {
                "x": (lo + hi) / 2 / n,
                "size_bytes": float(g["size_bytes"].median()),
                "p50": float(g["slowdown"].quantile(0.5)),
                "p99": float(g["slowdown"].quantile(0.99)),
                "flows": hi - lo,
            }
        )
    return pd.DataFrame(rows)


def slowdown_vs_size(results: ResultsLike, bins: int = 20, path=None, title: Optional[str] = None):
    """FCT slowdown (p50 dashed, p99 solid) against flow size, with the x axis linear in the cumulative
    fraction of flows and labelled by the flow size at those fractions (the Homa papers' layout)."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 4))
    ref_flows = None
    for label, r in _labelled(results):
        c = size_percentile_curve(r.flows, bins)
        (line,) = ax.plot(c["x"], c["p99"], "-", marker=".", label=f"{label} p99")
        ax.plot(c["x"], c["p50"], "--", color=line.get_color(), label=f"{label} p50")
        ref_flows = r.flows if ref_flows is None else ref_flows
    if ref_flows is not None and len(ref_flows):
        sizes = np.sort(ref_flows["size_bytes"].to_numpy())
        ticks = np.linspace(0.0, 1.0, 6)
        ax.set_xticks(ticks)
        ax.set_xticklabels([_fmt_size(sizes[min(int(t * (len(sizes) - 1)), len(sizes) - 1)]) for t in ticks])
    ax.set_xlim(0, 1)
    ax.set_yscale("log")
    ax.set_xlabel("flow size (x: cumulative fraction of flows)")
    ax.set_ylabel("slowdown (FCT / ideal FCT)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    if title:
        ax.set_title(title)
    return _finish(fig, path)


PFABRIC_PANELS = (
    ("(0,100KB]", "slowdown_mean", "(0, 100KB]: average"),
    ("(0,100KB]", "slowdown_p99", "(0, 100KB]: 99th percentile"),
    ("(10MB,inf)", "slowdown_mean", "(10MB, ∞): average"),
    ("all", "slowdown_mean", "all flows: average"),
)


def normalized_fct_vs_load(
    summary: Union[pd.DataFrame, object],
    x: str = "workload[0].load",
    series: str = "transport.kind",
    panels: Sequence[tuple[str, str, str]] = PFABRIC_PANELS,
    reference: Optional[Mapping[str, Sequence[tuple[float, float]]]] = None,
    path=None,
    title: Optional[str] = None,
    bands: Optional[Mapping[str, tuple[Sequence[float], Sequence[float], Sequence[float], str]]] = None,
    xlabel: str = "load",
    ylabel: str = "normalized FCT",
    xlog: bool = False,
):
    """pFabric-style panels: normalized FCT (mean slowdown or its 99th percentile) per size bucket against
    load, one line per value of ``series``. ``summary`` is a sweep's summary table (or a SweepResult).
    ``reference`` marks published values: {panel title: [(load, value), ...]}; ``bands`` shades published
    ranges: {panel title: (x values, low values, high values, label)}."""
    plt = _plt()
    df = summary.summary if hasattr(summary, "summary") and not isinstance(summary, pd.DataFrame) else summary
    fig, axes = plt.subplots(1, len(panels), figsize=(4 * len(panels), 3.6), squeeze=False)
    for ax, (bucket, stat, name) in zip(axes[0], panels):
        sub = df[df["bucket"] == bucket]
        for key, g in sub.groupby(series, sort=True):
            g = g.groupby(x, as_index=False)[stat].mean().sort_values(x)
            ax.plot(g[x], g[stat], marker="o", label=str(key))
        if bands and name in bands:
            bx, blo, bhi, blabel = bands[name]
            ax.fill_between(bx, blo, bhi, color="grey", alpha=0.25, label=blabel)
        if reference and name in reference:
            pts = np.array(reference[name], dtype=float)
            ax.plot(pts[:, 0], pts[:, 1], "kx", markersize=8, label="paper")
        vals = sub[stat].to_numpy(dtype=float)
        vals = vals[np.isfinite(vals) & (vals > 0)]
        if len(vals) and vals.max() / vals.min() > 20:
            ax.set_yscale("log")  # one scheme far above the others would flatten them
        if xlog:
            ax.set_xscale("log")
        ax.set_title(name, fontsize=10)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    if title:
        fig.suptitle(title)
    return _finish(fig, path)


def fct_cdf(results: ResultsLike, path=None, bucket: Optional[tuple[float, float]] = None, title: Optional[str] = None):
    """Empirical CDF of flow-completion times (log x), optionally for sizes in (lo, hi]."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 4))
    for label, r in _labelled(results):
        f = r.flows[r.flows["finished"]]
        if bucket is not None:
            f = f[(f["size_bytes"] > bucket[0]) & (f["size_bytes"] <= bucket[1])]
        v = np.sort(f["fct_us"].to_numpy())
        if len(v):
            ax.step(v, np.arange(1, len(v) + 1) / len(v), where="post", label=label)
    ax.set_xscale("log")
    ax.set_xlabel("flow completion time (µs)")
    ax.set_ylabel("fraction of flows")
    ax.set_ylim(0, 1)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    if title:
        ax.set_title(title)
    return _finish(fig, path)


def queue_occupancy(
    result: Result, ports: Optional[Iterable[int]] = None, top: int = 4, path=None, title: Optional[str] = None
):
    """Queue bytes over time for the given ports (default: the ``top`` ports with the largest maximum).
    Needs ``output.queue_sample`` in the experiment."""
    plt = _plt()
    q = result.queues
    if q.empty:
        raise ValueError(f'{result.dir} has no queue samples: set output.queue_sample (e.g. "10us") in the experiment')
    p = result.ports.set_index("port_id")
    if ports is None:
        ports = q.groupby("port_id")["bytes"].max().nlargest(top).index.tolist()
    fig, ax = plt.subplots(figsize=(7, 4))
    for pid in ports:
        s = q[q["port_id"] == pid]
        ax.plot(s["time_us"], s["bytes"] / 1e3, label=f"{p.loc[pid, 'node']}→{p.loc[pid, 'peer']}")
    ax.set_xlabel("time (µs)")
    ax.set_ylabel("queue (KB)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    if title:
        ax.set_title(title)
    return _finish(fig, path)
