"""NDP in tailsim against NDP in htsim, flow by flow, on identical files (not run in CI).

Runs htsim's ``htsim_ndp`` and tailsim's ``ndp`` on the same ``.topo`` and ``.cm`` files with the settings of
``../shared/peers/htsim/side-by-side.sh`` (1500 B frames, trimming above 8 packets, spraying, 111-packet first
window, unbounded host queues) and htsim's pull spacing (``transport.pull_spacing = "1580B"``, which the
side-by-side script leaves at tailsim's default), once per tailsim NIC scheduler, and prints mean and p99 flow
completion time per size bucket for each, with the difference to htsim. Flows are matched by the
connection matrix's ids.
htsim's completion time ends when the sender holds the last ACK ("finished at" in ndp.cpp), tailsim's when the
receiver holds the last byte. So that the two measure the same thing, tailsim's FCTs are given the last ACK's
unloaded one-way trip back (the fat tree's links between the two hosts, each its latency plus a 64 B ACK's
serialization: 2.0, 4.0 or 6.0 µs on the 128-host file); ``--no-ack-trip`` shows them as tailsim reports them.

    python tools/xval/ndp_vs_htsim.py                        # web search at 50 %, 961 flows (~45 s)
    python tools/xval/ndp_vs_htsim.py --schedulers per-flow-round-robin priority fifo --markdown out.md
    python tools/xval/ndp_vs_htsim.py --pull-on-ack false     # every pull a PULL packet of its own
    python tools/xval/ndp_vs_htsim.py --pull-spacing frame    # tailsim's own pull spacing, not htsim's

htsim is the build that side-by-side.sh makes (run it once: it builds ``htsim_ndp`` into
``~/.cache/tailsim-peers``); tailsim is ``target/release/tailsim`` (``cargo build --release -p tailsim-cli``).
"""

from __future__ import annotations

import argparse
import math
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[2]
PEERS = ROOT.parent / "shared" / "peers" / "htsim"
HTSIM = Path(os.environ.get("TAILSIM_PEERS_CACHE", Path.home() / ".cache" / "tailsim-peers"))
HTSIM = HTSIM / "htsim-40ccb05" / "sim" / "build" / "datacenter" / "htsim_ndp"

# name: (topology, tailsim's matrix, htsim's matrix (start times in ps, as htsim_ndp reads them), nodes, end µs)
SCENARIOS = {
    "ws": ("fat_tree_128_100g.topo", "ws128_100g_l50_2ms.cm", "ws128_100g_l50_2ms_ps.cm", 128, 5300),
    "p2": ("fat_tree_128_100g.topo", "perm128_2MB.cm", "perm128_2MB.cm", 128, 300),
    "p2-1024": ("fat_tree_1024_100g.topo", "perm1024_2MB.cm", "perm1024_2MB.cm", 1024, 300),
}

BUCKETS = [(0, 100_000, "<= 100 KB"), (100_000, 1_000_000, "100 KB - 1 MB"), (1_000_000, math.inf, "> 1 MB")]

TEMPLATE = """\
name = "xval-ndp"
seed = 1
[topology]
kind = "htsim"
path = "{topo}"
[packet]
mss = 1460
header = 40
ack = 64
[host]
nic_buffer = "unlimited"
nic_scheduler = "{scheduler}"
[switch]
trim = "11488B"
[routing]
load_balance = "spray"
[transport]
kind = "ndp"
header = 64
rtt_bytes = 159396
{transport}
[[workload]]
kind = "trace"
path = "{cm}"
"""


def find(name: str) -> Path:
    for d in (ROOT / "workloads" / "htsim", PEERS):
        if (d / name).exists():
            return d / name
    sys.exit(f"{name}: not in workloads/htsim or {PEERS}")


def matrix(path: Path) -> dict[int, tuple[int, int, int]]:
    """Connection id -> (src, dst, size) of a .cm file."""
    out = {}
    for line in path.read_text().splitlines():
        m = re.match(r"\s*(\d+)->(\d+)\s+(.*)", line)
        if m:
            kv = dict(zip(m.group(3).split()[::2], m.group(3).split()[1::2]))
            out[int(kv["id"])] = (int(m.group(1)), int(m.group(2)), int(kv["size"]))
    return out


def starts_us(path: Path) -> dict[int, float]:
    out = {}
    for line in path.read_text().splitlines():
        m = re.match(r"\s*\d+->\d+\s+(.*)", line)
        if m:
            kv = dict(zip(m.group(1).split()[::2], m.group(1).split()[1::2]))
            out[int(kv["id"])] = float(kv["start"])
    return out


def ack_trip_us(topo: Path) -> Callable[[int, int], float]:
    """The unloaded one-way time (µs) of a 64 B ACK from host d to host s on an htsim fat-tree .topo file:
    2, 4 or 6 links (same ToR, same pod, else), each its tier's latency plus the ACK's serialization."""
    tiers, cur, podsize = [], None, None
    for line in topo.read_text().splitlines():
        kv = line.split()
        if len(kv) == 2 and kv[0] == "Podsize":
            podsize = int(kv[1])
        elif len(kv) == 2 and kv[0] == "Tier":
            cur = {}
            tiers.append(cur)
        elif len(kv) == 2 and cur is not None:
            cur[kv[0]] = float(kv[1])
    per_tor = int(tiers[0]["Radix_Down"])
    link = [t["Downlink_Latency_ns"] / 1e3 + 64 * 8 / (t["Downlink_speed_Gbps"] * 1e3) for t in tiers]

    def trip(s: int, d: int) -> float:
        if s // per_tor == d // per_tor:
            return 2 * link[0]
        if podsize and s // podsize == d // podsize:
            return 2 * (link[0] + link[1])
        return 2 * (link[0] + link[1] + link[2])

    return trip


def htsim_fcts(sc: str, work: Path) -> dict[int, float]:
    """FCT (µs) by connection id, from htsim's "flow_id N finished at T" lines."""
    topo, cm, hcm, nodes, end = SCENARIOS[sc]
    cmd = [str(HTSIM), "-topo", str(find(topo)), "-tm", str(find(hcm)), "-nodes", str(nodes), "-strat", "rand"]
    cmd += ["-mtu", "1436", "-cwnd", "111", "-q", "8", "-end", str(end)]
    log = subprocess.run(cmd, cwd=work, capture_output=True, text=True, check=True).stdout
    start = starts_us(find(cm))  # µs, as tailsim reads them
    # htsim names flows by its own ids; "flow_id" is the matrix's id.
    fin = {int(m.group(1)): float(m.group(2)) for m in re.finditer(r"flow_id (\d+) finished at (\S+)", log)}
    return {i: t - start[i] for i, t in fin.items()}


def tailsim_fcts(sc: str, scheduler: str, work: Path, binary: Path, transport: str) -> dict[int, float]:
    """FCT (µs) by connection id, `transport`: more lines of the [transport] table. Trace flows keep file order
    among equal starts, and the flows table is in start order, so rows are matched to the matrix by (src, dst,
    size, start)."""
    import pyarrow.parquet as pq

    topo, cm, _, _, _ = SCENARIOS[sc]
    toml = work / f"{sc}-{scheduler}.toml"
    toml.write_text(TEMPLATE.format(topo=find(topo), cm=find(cm), scheduler=scheduler, transport=transport))
    out = work / f"r-{sc}-{scheduler}"
    subprocess.run([str(binary), "run", "-q", str(toml), "--out", str(out)], check=True, capture_output=True)
    t = pq.read_table(out / "flows.parquet", columns=["src", "dst", "size_bytes", "start_ps", "fct_ps"]).to_pylist()
    by_key: dict[tuple, list[float]] = {}
    for r in t:
        key = (r["src"], r["dst"], r["size_bytes"], r["start_ps"])
        by_key.setdefault(key, []).append(r["fct_ps"] / 1e6 if r["fct_ps"] is not None else math.nan)
    m, start = matrix(find(cm)), starts_us(find(cm))
    out_ = {}
    for i in sorted(m):
        src, dst, size = m[i]
        key = (src, dst, size, round(start[i] * 1e6))
        out_[i] = by_key[key].pop(0)
    return out_


def p99(xs: list[float]) -> float:
    """Nearest rank, as tailsim's tables."""
    s = sorted(xs)
    return s[max(0, math.ceil(0.99 * len(s)) - 1)] if s else math.nan


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenario", choices=sorted(SCENARIOS), default="ws")
    ap.add_argument("--schedulers", nargs="+", default=["per-flow-round-robin", "priority"])
    ap.add_argument("--tailsim", type=Path, default=ROOT / "target" / "release" / "tailsim")
    ap.add_argument("--pull-order", choices=["fair", "fifo"], default="fair", help="tailsim's transport.pull_order")
    ap.add_argument(
        "--pull-on-ack",
        choices=["true", "false"],
        default="true",
        help="tailsim's transport.pull_on_ack (true: a pull the pacer would send at once rides on its ACK, as htsim's)",
    )
    ap.add_argument(
        "--pull-spacing",
        default="1580B",
        help="tailsim's transport.pull_spacing, or 'frame' for its default (one full data frame, 1500 B here); "
        "default 1580B: htsim's pacer, (1500 + 64 B) / 0.99",
    )
    ap.add_argument("--markdown", type=Path, help="also write the table here")
    ap.add_argument("--no-ack-trip", action="store_true", help="tailsim's FCTs without the last ACK's trip back")
    a = ap.parse_args()
    if not HTSIM.exists():
        sys.exit(f"{HTSIM} not found: run ../shared/peers/htsim/side-by-side.sh once to build it")
    sizes = matrix(find(SCENARIOS[a.scenario][1]))
    with tempfile.TemporaryDirectory() as d:
        work = Path(d)
        h = htsim_fcts(a.scenario, work)
        transport = f'pull_order = "{a.pull_order}"\npull_on_ack = {a.pull_on_ack}'
        if a.pull_spacing != "frame":
            transport += f'\npull_spacing = "{a.pull_spacing}"'
        runs = {s: tailsim_fcts(a.scenario, s, work, a.tailsim, transport) for s in a.schedulers}
    if not a.no_ack_trip:
        trip = ack_trip_us(find(SCENARIOS[a.scenario][0]))
        runs = {s: {i: t + trip(*sizes[i][:2]) for i, t in r.items()} for s, r in runs.items()}
    lines = [
        f"NDP, scenario {a.scenario}: {len(sizes)} flows, htsim finished {len(h)}; tailsim pull_order {a.pull_order}, "
        + f"pull_on_ack {a.pull_on_ack}, pull_spacing {a.pull_spacing}"
        + ("" if a.no_ack_trip else "; tailsim's FCTs + the last ACK's trip back, as htsim counts them"),
        "",
        "| size | flows | htsim mean µs | htsim p99 µs | "
        + " | ".join(f"tailsim {s} mean (Δ) | p99 (Δ)" for s in a.schedulers)
        + " |",
        "|---|---|---|---|" + "---|---|" * len(a.schedulers),
    ]
    for lo, hi, label in BUCKETS:
        ids = [i for i, (_, _, size) in sizes.items() if lo < size <= hi and i in h]
        if not ids:
            continue
        hv = [h[i] for i in ids]
        hm, hp = sum(hv) / len(hv), p99(hv)
        cells = []
        for s in a.schedulers:
            tv = [runs[s][i] for i in ids]
            tm, tp = sum(tv) / len(tv), p99(tv)
            cells.append(f"{tm:.1f} ({100 * (tm / hm - 1):+.1f} %) | {tp:.1f} ({100 * (tp / hp - 1):+.1f} %)")
        lines.append(f"| {label} | {len(ids)} | {hm:.1f} | {hp:.1f} | " + " | ".join(cells) + " |")
    text = "\n".join(lines)
    print(text)
    if a.markdown:
        a.markdown.write_text(text + "\n")


if __name__ == "__main__":
    main()
