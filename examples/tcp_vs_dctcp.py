#!/usr/bin/env python3
"""TCP vs DCTCP on pFabric's 144-host fabric under web search, loads 0.1-0.8, with pFabric's Table 1
settings (225KB buffers, K = 22.5KB for DCTCP, initial window 12, minRTO 200us). Writes the two
pFabric-style figures: the overall average normalized FCT against load (the paper's Fig. 7), and the
breakdown by flow size (Figs. 8-9: (0,100KB] average and 99th percentile, (10MB,inf) average).

    python examples/tcp_vs_dctcp.py                      # 16 points x 5000 flows on a local process pool
    python examples/tcp_vs_dctcp.py --flows 500 --backend dask
"""

import argparse
from pathlib import Path

import tailsim
from tailsim import plots

HERE = Path(__file__).resolve().parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--flows", type=int, default=5000, help="flows per point")
    ap.add_argument("--loads", type=float, nargs="+", default=[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8])
    ap.add_argument("--out", default="results/tcp-vs-dctcp")
    ap.add_argument("--backend", choices=["local", "dask"], default="local")
    ap.add_argument("--workers", type=int)
    args = ap.parse_args()

    res = tailsim.sweep(
        HERE / "pfabric-websearch-dctcp.toml",
        grid={"transport.kind": ["tcp", "dctcp"], "workload[0].load": args.loads},
        out=args.out,
        set={"workload[0].flows": args.flows},
        backend=args.backend,
        workers=args.workers,
    )
    if res.failed:
        raise SystemExit(f"failed points: {res.failed}")

    out = Path(args.out)
    plots.normalized_fct_vs_load(
        res.summary,
        panels=[("all", "slowdown_mean", "overall average")],
        path=out / "overall-vs-load.png",
        title="web search: TCP vs DCTCP",
    )
    plots.normalized_fct_vs_load(
        res.summary,
        panels=plots.PFABRIC_PANELS[:3],
        path=out / "breakdown-vs-load.png",
        title="web search: normalized FCT by flow size",
    )
    small = res.summary[res.summary["bucket"] == "(0,100KB]"]
    print(
        small.pivot_table(
            index="workload[0].load", columns="transport.kind", values=["slowdown_mean", "slowdown_p99"]
        ).round(2)
    )
    print(f"figures: {out / 'overall-vs-load.png'}, {out / 'breakdown-vs-load.png'}")


if __name__ == "__main__":
    main()
