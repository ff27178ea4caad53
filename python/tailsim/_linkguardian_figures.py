"""LinkGuardian's figures (``tailsim.reproduce_linkguardian``): the thesis's Figs. 5.x from the parts' tables."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from . import plots


def _tail(ax, fct: Sequence[float], label: str, top: float = 0.01) -> None:
    """The slowest ``top`` of the flows as a CCDF (the thesis's 'top 1 %' plots)."""
    a = np.sort(np.asarray(fct))
    if not len(a):
        return
    ccdf = 1 - np.arange(len(a)) / len(a)
    keep = ccdf <= top
    ax.step(a[keep], ccdf[keep], where="post", label=label)


def _tail_axes(ax, title: str, legend_size: int) -> None:
    """The axes of a top-1 % CCDF: both log, FCT against the fraction of flows slower."""
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("FCT (µs)")
    ax.set_ylabel("fraction of flows slower")
    ax.set_title(title)
    ax.legend(fontsize=legend_size)


def figures(res: dict[str, pd.DataFrame], out: Path) -> None:
    """The thesis chapter's figures from the parts that ran (``tailsim reproduce linkguardian``)."""
    from .reproduce_linkguardian import CUBIC_LOSSES, RTT_US, TABLE_5_3

    plt = plots._plt()
    st = res.get("stress")
    if st is not None and len(st):
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.8))
        lo = st[st["kind"] != "speed"]
        x = np.arange(len(lo))
        a1.bar(x - 0.2, lo["effective_loss"].clip(lower=1e-12), 0.4, label="measured (1e-12: none lost)")
        a1.bar(x + 0.2, lo["expected_loss"], 0.4, label="p^(copies+1)")
        a1.axhline(1e-8, color="k", ls=":", label="target 1e-8")
        a1.set_yscale("log")
        a1.set_xticks(x, [f"{r.gbps}G {r.loss:g}\n{r.mode}" for r in lo.itertuples()], fontsize=6)
        a1.set_ylabel("effective loss rate")
        a1.set_title("Fig. 5.12 (effective loss)")
        a1.legend(fontsize=7)
        sp = st[st["kind"] == "speed"]
        x = np.arange(len(sp))
        a2.bar(x, sp["speed"])
        a2.axhline(0.92, color="k", ls=":", label="thesis: LG at 100G, 1e-3")
        a2.set_xticks(x, [f"{r.gbps}G {r.loss:g}\n{r.mode}" for r in sp.itertuples()], fontsize=6)
        a2.set_ylabel("effective link speed (share)")
        a2.set_ylim(0, 1.05)
        a2.set_title("Fig. 5.12 (speed)")
        a2.legend(fontsize=7)
        plots._finish(fig, out / "fig5_12_stress.png")
        plt.close(fig)
    if st is not None and len(st) and "resend_hist_100ns" in st:
        sp = st[(st["kind"] == "speed") & (st["resends_timed"] > 0)]
        fig, ax = plt.subplots(figsize=(5.5, 3.8))
        for r in sp.itertuples():
            h = np.asarray(r.resend_hist_100ns, dtype=float)
            ax.step(
                np.arange(len(h)) * 0.1, np.cumsum(h) / h.sum(), where="post", label=f"{r.gbps:g}G {r.loss:g} {r.mode}"
            )
        ax.axvspan(2.0, 5.25, color="0.85", label="thesis, 100G (2-5.25 µs)")
        ax.set_xlim(0, 8)
        ax.set_xlabel("loss detected -> resend received (µs)")
        ax.set_ylabel("CDF")
        ax.set_title("Fig. 5.10 (calibration)")
        ax.legend(fontsize=7)
        plots._finish(fig, out / "fig5_10_resend_delay.png")
        plt.close(fig)
    sh = res.get("short")
    if sh is not None and len(sh):
        fig, axes = plt.subplots(2, 2, figsize=(10, 7))
        for ax, (kind, size) in zip(axes.flat, [(k, s) for s in (143, 24387) for k in ("dctcp", "rdma")]):
            for _, r in sh[(sh["transport"] == kind) & (sh["size"] == size)].iterrows():
                _tail(ax, r["fct_us"], r["scheme"])
            _tail_axes(ax, f"{kind.upper()} {size:,} B, 100G, 1e-3 (Figs. 5.15-5.16)", 6)
        plots._finish(fig, out / "fig5_15_16_short.png")
        plt.close(fig)
    mo = res.get("motivation")
    if mo is not None and len(mo):
        fig, ax = plt.subplots(figsize=(5, 3.8))
        for _, r in mo.iterrows():
            _tail(ax, r["fct_us"], f"{r['transport'].upper()} {r['scheme']}")
        _tail_axes(ax, "143 B at 25G, no LG (Fig. 5.4)", 7)
        plots._finish(fig, out / "fig5_4_motivation.png")
        plt.close(fig)
    cu = res.get("cubic")
    if cu is not None and len(cu):
        fig, ax = plt.subplots(figsize=(5.5, 3.8))
        xs = np.arange(len(CUBIC_LOSSES))
        for i, (scheme, stated) in enumerate(TABLE_5_3.items()):
            g = cu[(cu["scheme"] == scheme) & (cu["rtt_us"] == RTT_US)].sort_values("loss")
            ax.plot(xs, g["goodput_gbps"], marker="os^"[i], label=f"{scheme} (tailsim)")
            ax.plot(xs, stated, ls=":", marker="os^"[i], color=ax.lines[-1].get_color(), label=f"{scheme} (thesis)")
        g = cu[cu["rtt_us"] != RTT_US].sort_values("loss")
        ax.plot(xs, g["goodput_gbps"], marker="x", label="none, 150 µs RTT (tailsim)")
        ax.set_xticks(xs, ["0", "1e-5", "1e-4", "1e-3"])
        ax.set_xlabel("loss rate")
        ax.set_ylabel("CUBIC goodput (Gb/s)")
        ax.set_title("Table 5.3 (10G)")
        ax.legend(fontsize=6)
        plots._finish(fig, out / "table5_3_cubic.png")
        plt.close(fig)
    tr = res.get("transport")
    if tr is not None and len(tr):
        fig, ax = plt.subplots(figsize=(7, 3.8))
        labels = [f"{r.gbps}G {r.transport}\n{r.scheme}" for r in tr.itertuples()]
        ax.bar(np.arange(len(tr)), tr["goodput_gbps"] / tr["gbps"])
        ax.set_xticks(np.arange(len(tr)), labels, fontsize=5, rotation=60)
        ax.set_ylabel("goodput / link rate")
        ax.set_title("Figs. 5.13-5.14 (1e-3)")
        plots._finish(fig, out / "fig5_13_transport.png")
        plt.close(fig)
