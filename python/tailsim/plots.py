"""Paper-style figures. Every function returns a matplotlib Figure and, given ``path``, saves it (the format
follows the suffix: .png, .pdf, .svg)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
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
    for ax in fig.axes:
        _plain_log_ticks(ax)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=150)
        # Saved: let pyplot forget it (a sweep of plots would otherwise keep every figure open); the returned
        # Figure stays usable.
        _plt().close(fig)
    return fig


def _tick(v: float, _pos=None) -> str:
    """A log axis's tick as a plain number (1, 2, 5, 10, 0.5, 2000), only at 1, 2 and 5 times a power of ten
    (matplotlib's default writes 2×10⁰ on short ranges)."""
    if v <= 0 or not np.isfinite(v):
        return ""
    mantissa = v / 10 ** np.floor(np.log10(v) + 1e-9)
    if not any(abs(mantissa - m) < 1e-6 for m in (1, 2, 5)):
        return ""
    return f"{v:g}" if 1e-4 <= v < 1e6 else f"{v:.0e}"


def _plain_log_ticks(ax) -> None:
    from matplotlib.ticker import FuncFormatter

    for axis, scale in ((ax.xaxis, ax.get_xscale()), (ax.yaxis, ax.get_yscale())):
        if scale == "log" and not isinstance(axis.get_major_formatter(), FuncFormatter):
            axis.set_major_formatter(FuncFormatter(_tick))
            axis.set_minor_formatter(FuncFormatter(_tick))


def describe(r: Result) -> list[str]:
    """What was run, in a few words (transport, fabric, workloads), from the results' resolved configuration."""
    cfg = r.summary.get("config") or {}
    parts = []
    t = cfg.get("transport") or {}
    parts.append(t.get("kind", "tcp"))
    topo = cfg.get("topology") or {}
    parts.append(topo.get("preset") or topo.get("kind", "?"))
    for w in cfg.get("workload") or []:
        words = [w.get("kind", "?")]
        if w.get("cdf"):
            words.append(str(w["cdf"]))
        if w.get("load") is not None:
            words.append(f"load {w['load']:g}")
        parts.append(" ".join(words))
    return parts


def _default_title(results: list[tuple[str, Result]]) -> str:
    """What every result has in common (the differences are in the legend)."""
    descs = [describe(r) for _, r in results]
    if not descs:
        return ""
    common = [p for p in descs[0] if all(p in d for d in descs[1:])]
    return " · ".join(common)


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


def slowdown_vs_size(
    results: ResultsLike, bins: int = 20, path=None, title: Optional[str] = None, published: bool = True
):
    """FCT slowdown (p50 dashed, p99 solid) against flow size, with the x axis linear in the cumulative
    fraction of flows and labelled by the flow size at those fractions (the Homa papers' layout).
    ``published``: runs of the Homa thesis's setup at 80 % load get its 2.2 bound over the shortest half."""
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
    if published:
        from .published import homa_short_half_bound

        bound = homa_short_half_bound([r.summary.get("config") or {} for _, r in _labelled(results)])
        if bound:
            ax.hlines(bound[0], 0, 0.5, colors="black", linestyles=":", label=bound[1])
    ax.set_xlim(0, 1)
    ax.set_yscale("log")
    ax.set_xlabel("flow size (x: cumulative fraction of flows)")
    ax.set_ylabel("slowdown (FCT / ideal FCT)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(title if title is not None else _default_title(_labelled(results)), fontsize=10)
    return _finish(fig, path)


PFABRIC_PANELS = (
    ("(0,100KB]", "slowdown_mean", "(0, 100KB]: average"),
    ("(0,100KB]", "slowdown_p99", "(0, 100KB]: 99th percentile"),
    ("(10MB,inf)", "slowdown_mean", "(10MB, ∞): average"),
    ("all", "slowdown_mean", "all flows: average"),
)


# Columns of a sweep's summary table that are statistics, not swept keys.
_STAT_COLUMNS = {
    "point",
    "bucket",
    "flows",
    "unfinished",
    "fct_mean_us",
    "fct_p50_us",
    "fct_p99_us",
    "fct_p999_us",
    "slowdown_mean",
    "slowdown_p50",
    "slowdown_p99",
    "slowdown_p999",
    "application_throughput",
    "other_flows",
    "other_slowdown_mean",
}

# Two-sided 95 % Student t quantiles by degrees of freedom (1-30); 1.96 beyond.
_T95 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131]
_T95 += [2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


def swept_keys(summary: pd.DataFrame) -> list[str]:
    """The keys a sweep's summary table was swept over (its columns that are not statistics)."""
    return [c for c in summary.columns if c not in _STAT_COLUMNS and not c.startswith("deadline_")]


def normalized_fct_vs_load(
    summary: Union[pd.DataFrame, object],
    x: str = "workload[0].load",
    series: str = "transport.kind",
    panels: Sequence[tuple[str, str, str]] = PFABRIC_PANELS,
    reference: Optional[Mapping[str, Sequence[tuple[float, float]]]] = None,
    path=None,
    title: Optional[str] = None,
    bands: Optional[Mapping[str, tuple[Sequence[float], Sequence[float], Sequence[float], str]]] = None,
    xlabel: Optional[str] = None,
    ylabel: str = "normalized FCT",
    xlog: bool = False,
    published: bool = True,
    sweep_dir: Optional[Union[str, os.PathLike]] = None,
):
    """pFabric-style panels: normalized FCT (mean slowdown or its 99th percentile) per size bucket against
    ``x``, one line per value of ``series``. ``summary`` is a sweep's summary table (or a SweepResult).

    Any other key that varies within one (series, x) point is an error (a line would silently average over
    it) unless it is ``seed``: over seeds a line is the mean and a band its 95 % confidence interval (Student t).
    ``reference`` marks published values: {panel title: [(x, value), ...]}; ``bands`` shades published
    ranges: {panel title: (x values, low values, high values, label[, series value to colour it by]), or a
    list of those}. ``published``: when the sweep's points (``summary`` a SweepResult, or its directory given as
    ``sweep_dir``) all ran a paper's setup, its stated values are added to ``bands`` (``tailsim.published``)."""
    plt = _plt()
    if sweep_dir is None and not isinstance(summary, pd.DataFrame):
        sweep_dir = getattr(summary, "dir", None)
    df = summary.summary if hasattr(summary, "summary") and not isinstance(summary, pd.DataFrame) else summary
    swept = swept_keys(df)
    for key, flag in ((x, "--x"), (series, "--series")):
        if key not in df.columns:
            raise ValueError(f"{key!r} ({flag}) is not a swept key of this sweep; swept: {', '.join(swept) or 'none'}")
    # A key that varies within one (series, x) point would be averaged over silently.
    groups = df.groupby([series, x], dropna=False)
    others = [k for k in swept if k not in (x, series, "seed") and (groups[k].nunique(dropna=False) > 1).any()]
    if others:
        k = others[0]
        values = ", ".join(str(v) for v in sorted(df[k].dropna().unique(), key=str))
        raise ValueError(
            f"the sweep also varies {k!r} ({values}): each line would average over it; put it on --x or "
            f"--series, or plot one value at a time (summary[summary[{k!r}] == value])"
        )
    seeds = int(df["seed"].nunique()) if "seed" in df.columns else 1
    bands = {k: (list(v) if isinstance(v, list) else [v]) for k, v in (bands or {}).items()}
    if published and sweep_dir is not None:
        from . import published as pub

        roles, workload = pub.pfabric_roles(df, series, pub.point_configs(df, Path(sweep_dir)))
        for name, extra in pub.pfabric_bands(df, x, series, panels, roles, workload).items():
            bands.setdefault(name, []).extend(extra)
    fig, axes = plt.subplots(1, len(panels), figsize=(4 * len(panels), 3.6), squeeze=False)
    for ax, (bucket, stat, name) in zip(axes[0], panels):
        sub = df[df["bucket"] == bucket]
        colors = {}
        for key, g in sub.groupby(series, sort=True):
            g = g.groupby(x)[stat].agg(["mean", "std", "count"]).reset_index().sort_values(x)
            (line,) = ax.plot(g[x], g["mean"], marker="o", label=str(key))
            colors[key] = line.get_color()
            if seeds > 1:
                t = np.array([_T95[n - 2] if 2 <= n <= 31 else 1.96 for n in g["count"]])
                half = t * g["std"].fillna(0).to_numpy() / np.sqrt(g["count"].to_numpy())
                ax.fill_between(g[x], g["mean"] - half, g["mean"] + half, color=line.get_color(), alpha=0.2)
        for band in bands.get(name, []):
            bx, blo, bhi, blabel = band[:4]
            color = colors.get(band[4], "grey") if len(band) > 4 else "grey"
            ax.fill_between(bx, blo, bhi, color=color, alpha=0.2, label=blabel)
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
        ax.set_xlabel(xlabel if xlabel is not None else x)
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8, title=series, title_fontsize=8)
    if title is None:
        title = f"{ylabel} against {x}, one line per {series}"
        if seeds > 1:
            title += f"; mean of {seeds} seeds, band: 95 % confidence interval"
    fig.suptitle(title, fontsize=11)
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
    if title is None:
        title = _default_title(_labelled(results))
        if bucket is not None:
            title += f" · flows of ({_fmt_size(bucket[0])}, {_fmt_size(bucket[1])}]"
    ax.set_title(title, fontsize=10)
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
    ax.set_title(title if title is not None else _default_title([("", result)]), fontsize=10)
    return _finish(fig, path)
