"""Plot the projected speedup of a parallel run (issue "One run on every core", docs/parallel.md).

Runs `tailsim bench --scenario S --project-threads 1,2,4,...,64` for each scenario (the serial run, its
events counted per part and window of each cut, priced with a measured cost per event, meeting and crossing),
reads the table it prints and draws speedup and efficiency against threads, with the ideal line; and, for
the thread counts this machine has cores for (`--measure`, default: up to the core count), the speedup
measured by `tailsim bench --scenario S --threads 1,...` (which also checks that the results are the
serial run's), drawn as open markers.

    python tools/plot_parallel_projection.py [--bin target/release/tailsim] [--out docs/img-parallel-projection.png]
        [--scenario fattree1024-ws --scenario htsim-p2-1024 ...] [--measure 2]

About 2 minutes for the default four scenarios on the project's 2-core VM.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

THREADS = [1, 2, 4, 8, 16, 32, 64]
DEFAULT = ["fattree1024-ws", "htsim-p2-1024", "fattree5488-perm-ndp", "htsim-ws"]
ROW = re.compile(r"^\s*(\d+)\s+\S+\s+\d+\s+.*\s([\d.]+)x\s*$")
# `bench --threads`: threads, wall s, speedup, efficiency, windows, handovers, events, packet-hops, peak MB, results.
MEASURED = re.compile(r"^\s*(\d+)\s+[\d.]+\s+([\d.]+)x\s+\d+%.*\s(\S+)\s*$")


def project(binary: str, scenario: str) -> dict[int, float]:
    """Thread count -> projected speedup, from the table `tailsim bench --project-threads` prints."""
    cmd = [binary, "bench", "--scenario", scenario, "--project-threads", ",".join(map(str, THREADS))]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stderr.strip()}")
    rows = {int(m[1]): float(m[2]) for m in map(ROW.match, out.stdout.splitlines()) if m}
    if sorted(rows) != THREADS:
        sys.exit(f"{scenario}: expected rows for {THREADS} threads in:\n{out.stdout}")
    return rows


def measure(binary: str, scenario: str, upto: int) -> dict[int, float]:
    """Thread count -> measured speedup of `tailsim bench --threads 1,...,upto` (results checked identical)."""
    counts = ",".join(str(t) for t in THREADS if t <= upto)
    cmd = [binary, "bench", "--scenario", scenario, "--threads", counts]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stderr.strip()}")
    rows = {}
    for m in map(MEASURED.match, out.stdout.splitlines()):
        if m:
            if m[3] not in ("serial", "identical"):
                sys.exit(f"{scenario} on {m[1]} threads: results {m[3]}:\n{out.stdout}")
            rows[int(m[1])] = float(m[2])
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default="target/release/tailsim", help="the tailsim binary")
    ap.add_argument("--out", default="docs/img-parallel-projection.png", type=Path)
    ap.add_argument("--scenario", action="append", help=f"bench scenario (default: {', '.join(DEFAULT)})")
    ap.add_argument("--measure", type=int, default=os.cpu_count() or 1, help="measure up to this many threads")
    args = ap.parse_args()
    if not Path(args.bin).exists():
        sys.exit(f"{args.bin}: no such binary (cargo build --release -p tailsim-cli, or --bin)")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (sp, ef) = plt.subplots(1, 2, figsize=(10, 4))
    for s in args.scenario or DEFAULT:
        print(f"projecting {s} ...", file=sys.stderr)
        r = project(args.bin, s)
        n = sorted(r)
        (line,) = sp.plot(n, [r[k] for k in n], marker="o", label=s)
        ef.plot(n, [r[k] / k for k in n], marker="o", label=s)
        if args.measure > 1:
            print(f"measuring {s} on 1-{args.measure} threads ...", file=sys.stderr)
            m = measure(args.bin, s, args.measure)
            print(f"  {s}: projected {r}, measured {m}", file=sys.stderr)
            k = sorted(t for t in m if t > 1)
            style = dict(marker="s", markersize=9, linestyle="none", fillstyle="none", color=line.get_color())
            sp.plot(k, [m[t] for t in k], label=f"{s}, measured", **style)
            ef.plot(k, [m[t] / t for t in k], **style)
    sp.plot(THREADS, THREADS, "k:", label="ideal")
    for ax, title in ((sp, "speedup"), (ef, "efficiency (speedup / threads)")):
        ax.set_xscale("log", base=2)
        ax.set_xticks(THREADS, [str(t) for t in THREADS])
        ax.set_xlabel("threads")
        ax.set_title(title)
        ax.grid(alpha=0.3)
    sp.set_yscale("log", base=2)
    sp.set_yticks(THREADS, [str(t) for t in THREADS])
    ef.set_ylim(0, 1.2)  # two threads measured can beat twice one (each part's working set is half)
    sp.legend(fontsize=8)
    fig.suptitle("One run on N threads: projected from the serial run (lines), measured (open squares)")
    fig.tight_layout()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
