"""Plot the projected speedup of a parallel run (issue "One run on every core", docs/parallel.md).

Runs `tailsim bench --scenario S --project-threads 1,2,4,...,64` for each scenario (the serial run, its
events counted per part and window of each cut, priced with a measured cost per event, meeting and crossing),
reads the table it prints and draws speedup and efficiency against threads, with the ideal line.

    python tools/plot_parallel_projection.py [--bin target/release/tailsim] [--out docs/img-parallel-projection.png]
        [--scenario fattree1024-ws --scenario htsim-p2-1024 ...]

About 75 s for the default four scenarios on the project's 2-core VM.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

THREADS = [1, 2, 4, 8, 16, 32, 64]
DEFAULT = ["fattree1024-ws", "htsim-p2-1024", "fattree5488-perm-ndp", "htsim-ws"]
ROW = re.compile(r"^\s*(\d+)\s+\S+\s+\d+\s+.*\s([\d.]+)x\s*$")


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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default="target/release/tailsim", help="the tailsim binary")
    ap.add_argument("--out", default="docs/img-parallel-projection.png", type=Path)
    ap.add_argument("--scenario", action="append", help=f"bench scenario (default: {', '.join(DEFAULT)})")
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
        sp.plot(n, [r[k] for k in n], marker="o", label=s)
        ef.plot(n, [r[k] / k for k in n], marker="o", label=s)
    sp.plot(THREADS, THREADS, "k:", label="ideal")
    for ax, title in ((sp, "projected speedup"), (ef, "efficiency (speedup / threads)")):
        ax.set_xscale("log", base=2)
        ax.set_xticks(THREADS, [str(t) for t in THREADS])
        ax.set_xlabel("threads")
        ax.set_title(title)
        ax.grid(alpha=0.3)
    sp.set_yscale("log", base=2)
    sp.set_yticks(THREADS, [str(t) for t in THREADS])
    ef.set_ylim(0, 1.05)
    sp.legend(fontsize=8)
    fig.suptitle("One run on N threads, projected from the serial run (docs/parallel.md); 2 threads exist here")
    fig.tight_layout()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
