"""Cross-validate tailsim's TCP NewReno and DCTCP against ns-3 on one leaf-spine scenario, flow by flow.

For each transport: (1) tailsim runs a Poisson web-search workload with ECMP; (2) its flows, with the path
each took, become a CSV trace; (3) tailsim replays the trace without paths and then with every flow pinned
to its path; the first must give exactly the first run's completion times, the second moves them slightly
(a pinned flow's ACKs come back along its data's path, where ECMP hashes them on their own; README.md), and
the size of that move is reported as a yardstick; (4) ns-3
(ns3_leafspine.py) replays the same trace on the same paths; (5) a table compares mean and p99 FCT per
flow-size bucket, tailsim's pinned run against ns-3. See README.md in this directory.

    /work/xval-venv/bin/python tools/xval/tcp_vs_ns3.py --work /tmp/xval
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
from ns3_leafspine import add_fabric_args  # the same flags as the ns-3 model (plain argparse, no ns-3 import)

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent

sys.path.insert(0, str(HERE))
from ns3_leafspine import size_bytes  # noqa: E402  (this directory is not a package)


def experiment_toml(a: argparse.Namespace, transport: str, workload: str) -> str:
    """A tailsim experiment: the scenario of `a`, the transport, and one [[workload]] table."""
    ecn = f'ecn_threshold = "{a.ecn_threshold}"\n' if transport == "dctcp" else ""
    return f"""# Written by tools/xval/tcp_vs_ns3.py: the tailsim side of the ns-3 cross-validation.
name = "xval-{transport}"
seed = {a.seed}

[topology]
kind = "leaf-spine"
leaves = {a.leaves}
spines = {a.spines}
hosts_per_leaf = {a.hosts_per_leaf}
edge_rate = "{a.edge_rate}"
core_rate = "{a.core_rate}"
edge_delay = "{a.edge_delay}"
core_delay = "{a.core_delay}"

[switch]
buffer = "{a.buffer}"          # per port; the NICs take the same (host.nic_buffer unset)
{ecn}
[packet]
mss = {a.mss}
header = 40
ack = 40
wire_overhead = {a.wire_overhead}     # ns-3's point-to-point links add a 2-byte PPP header to every frame

[transport]
kind = "{transport}"
init_cwnd = {a.init_cwnd}
min_rto = "{a.min_rto}"
handshake = true
syn_rto = "{a.syn_rto}"
delayed_ack = 1
sack = true
dupthresh = {a.dupthresh}

[[workload]]
{workload}
[output]
format = "parquet"
"""


def run(cmd: list[str], what: str) -> float:
    """Run a command, fail loudly; returns its wall time in seconds."""
    t = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.stderr.write(p.stdout + p.stderr)
        raise SystemExit(f"{what} failed (exit {p.returncode}): {' '.join(cmd)}")
    if p.stderr.strip():
        sys.stderr.write(p.stderr)
    return time.time() - t


def tailsim(a: argparse.Namespace, toml: Path, out: Path) -> tuple[pd.DataFrame, float]:
    wall = run([str(a.tailsim), "run", str(toml), "--out", str(out), "-q"], f"tailsim {toml.name}")
    flows = pd.read_parquet(out / "flows.parquet").sort_values("flow_id").reset_index(drop=True)
    return flows, wall


def us_text(ps: int) -> str:
    """Picoseconds as an exact decimal number of microseconds."""
    return f"{ps // 10**6}.{ps % 10**6:06d}"


def write_trace(flows: pd.DataFrame, path: Path, with_path: bool) -> None:
    cols = "src,dst,size_bytes,start_us" + (",path" if with_path else "")
    lines = [
        "# Flows of a tailsim run (tools/xval/tcp_vs_ns3.py), in flow_id order, with the switches each crossed",
        cols,
    ]
    for r in flows.itertuples(index=False):
        row = f"{r.src},{r.dst},{r.size_bytes},{us_text(int(r.start_ps))}"
        lines.append(row + (f",{r.path}" if with_path else ""))
    path.write_text("\n".join(lines) + "\n")


def same_fcts(ref: pd.DataFrame, other: pd.DataFrame, what: str) -> list[str]:
    """Differences between two tailsim runs of the same flows (empty: identical flows, paths and FCTs)."""
    if len(ref) != len(other):
        return [f"{what}: {len(other)} flows instead of {len(ref)}"]
    problems = []
    for col in ["src", "dst", "size_bytes", "start_ps", "path", "fct_ps"]:
        diff = ref[col].astype(str) != other[col].astype(str)
        if diff.any():
            i = diff.idxmax()
            problems.append(
                f"{what}: column {col} differs for {int(diff.sum())} of {len(ref)} flows "
                f"(first: flow_id {i}: {ref.loc[i, col]} vs {other.loc[i, col]})"
            )
    return problems


def tailsim_counters(out: Path) -> dict:
    """Drops and ECN marks at switch ports and NICs, from ports.parquet."""
    ports = pd.read_parquet(out / "ports.parquet")
    node = next(c for c in ("node", "from", "src_node", "switch") if c in ports.columns)
    nic = ports[node].astype(str).str.fullmatch(r"h?\d+")
    res = {}
    for where, sel in (("switch_ports", ~nic), ("nics", nic)):
        res[where] = {
            "drops": int(ports.loc[sel, "drops_overflow"].sum()),
            "marks": int(ports.loc[sel, "ecn_marks"].sum()),
        }
    return res


def bucket_edges(text: str) -> list[int]:
    return [size_bytes(t) for t in text.split(",") if t.strip()]


def bucket_names(edges: list[int]) -> list[str]:
    def fmt(b: int) -> str:
        for unit, v in (("MB", 10**6), ("KB", 10**3)):
            if b >= v and b % v == 0:
                return f"{b // v} {unit}"
        return f"{b} B"

    names = [f"≤ {fmt(edges[0])}"] if edges else []
    names += [f"{fmt(lo)} – {fmt(hi)}" for lo, hi in zip(edges, edges[1:])]
    names += [f"> {fmt(edges[-1])}"] if edges else ["all sizes"]
    return names


def p99(x: pd.Series) -> float:
    """Nearest-rank 99th percentile, as tailsim's summary computes it."""
    v = sorted(x)
    return v[min(len(v), max(1, math.ceil(0.99 * len(v)))) - 1] if v else float("nan")


def compare(ts: pd.DataFrame, n3: pd.DataFrame, edges: list[int]) -> pd.DataFrame:
    df = pd.DataFrame({"size": ts["size_bytes"], "ts": ts["fct_ps"] / 1e6, "ns3": n3["fct_ps"].astype(float) / 1e6})
    bins = [0, *edges, math.inf]
    df["bucket"] = pd.cut(df["size"], bins=bins, labels=bucket_names(edges), right=True)
    rows = []
    groups = [(str(b), g) for b, g in df.groupby("bucket", observed=False)] + [("all", df)]
    for name, g in groups:
        rows.append(
            {
                "bucket": name,
                "flows": len(g),
                "ts_mean": g["ts"].mean(),
                "ns3_mean": g["ns3"].mean(),
                "ts_p99": p99(g["ts"]),
                "ns3_p99": p99(g["ns3"]),
                "within_5pct": (abs(g["ts"] / g["ns3"] - 1) <= 0.05).mean() if len(g) else float("nan"),
            }
        )
    out = pd.DataFrame(rows)
    out["mean_diff_pct"] = 100 * (out["ts_mean"] / out["ns3_mean"] - 1)
    out["p99_diff_pct"] = 100 * (out["ts_p99"] / out["ns3_p99"] - 1)
    return out


def markdown(table: pd.DataFrame, transport: str) -> str:
    def num(v: float) -> str:
        return "–" if pd.isna(v) else f"{v:,.1f}"

    def pct(v: float) -> str:
        return "–" if pd.isna(v) else f"{v:+.1f} %"

    head = (
        f"| **{transport}** | flows | mean tailsim | mean ns-3 | diff | p99 tailsim | p99 ns-3 | diff "
        "| flows within ±5 % |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    )
    lines = [head]
    for r in table.itertuples(index=False):
        star = "*" if r.flows < 100 else ""  # a p99 on fewer than 100 flows is the maximum or near it
        lines.append(
            f"| {r.bucket} | {r.flows} | {num(r.ts_mean)} | {num(r.ns3_mean)} | {pct(r.mean_diff_pct)} "
            f"| {num(r.ts_p99)}{star} | {num(r.ns3_p99)}{star} | {pct(r.p99_diff_pct)} "
            f"| {'–' if pd.isna(r.within_5pct) else f'{100 * r.within_5pct:.0f} %'} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, default=Path("/tmp/xval"), help="working directory (replaced runs)")
    ap.add_argument("--tailsim", type=Path, default=REPO / "target/release/tailsim", help="the tailsim CLI binary")
    ap.add_argument("--ns3-python", default=sys.executable, help="a Python with the ns3 wheel (default: this one)")
    ap.add_argument("--transports", default="tcp,dctcp")
    ap.add_argument("--flows", type=int, default=2000)
    ap.add_argument("--load", type=float, default=0.5)
    ap.add_argument("--cdf", default="websearch")
    ap.add_argument("--seed", type=int, default=1)
    add_fabric_args(ap)
    ap.add_argument("--wire-overhead", type=int, default=2, help="tailsim packet.wire_overhead (ns-3's PPP header)")
    ap.add_argument("--init-cwnd", type=int, default=10)
    ap.add_argument("--min-rto", default="200us")
    ap.add_argument("--syn-rto", default="200us", help="the SYN's first timeout in both (README.md: why not 1 s)")
    ap.add_argument("--dupthresh", type=int, default=3)
    ap.add_argument(
        "--reno",
        choices=["linux", "classic", "tailsim-ss", "tailsim-ss-fs"],
        default="linux",
        help="ns-3 class for tcp (ns3_leafspine.py)",
    )
    ap.add_argument("--dctcp-floor", action="store_true", help="ns-3 diagnostic (ns3_leafspine.py --help)")
    ap.add_argument("--buckets", default="10KB,100KB,1MB", help="flow-size bucket edges")
    ap.add_argument("--markdown", type=Path, help="write the tables here (default: WORK/xval.md)")
    a = ap.parse_args(argv)

    if not a.tailsim.exists():
        raise SystemExit(f"no tailsim binary at {a.tailsim} (cargo build --release -p tailsim-cli)")
    a.work.mkdir(parents=True, exist_ok=True)
    edges = bucket_edges(a.buckets)
    poisson = f'kind = "poisson"\ncdf = "{a.cdf}"\nload = {a.load}\nflows = {a.flows}\n'
    sections, report = [], {}
    for transport in [t.strip() for t in a.transports.split(",") if t.strip()]:
        d = a.work / transport
        d.mkdir(exist_ok=True)
        walls = {}
        toml = d / "ecmp.toml"
        toml.write_text(experiment_toml(a, transport, poisson))
        ecmp, walls["tailsim_ecmp"] = tailsim(a, toml, d / "ecmp")
        if not ecmp["finished"].all():
            raise SystemExit(f"{transport}: {int((~ecmp['finished']).sum())} flows unfinished in the tailsim run")
        for name, with_path in (("replay", False), ("pinned", True)):
            write_trace(ecmp, d / f"trace-{name}.csv", with_path)
            (d / f"{name}.toml").write_text(
                experiment_toml(a, transport, f'kind = "trace"\npath = "trace-{name}.csv"\n')
            )
        replay, walls["tailsim_replay"] = tailsim(a, d / "replay.toml", d / "replay")
        pinned, walls["tailsim_pinned"] = tailsim(a, d / "pinned.toml", d / "pinned")
        replay_problems = same_fcts(ecmp, replay, "trace replay without paths")
        for p in replay_problems:
            print(f"{transport}: MISMATCH: {p}", file=sys.stderr)
        if replay_problems:
            raise SystemExit(f"{transport}: replaying the ECMP run's flows as a trace does not reproduce it")
        # Expected to differ (symmetric pinned paths, see README.md): reported, not an error.
        problems = same_fcts(ecmp, pinned, "trace replay with pinned paths")
        for p in problems:
            print(f"{transport}: pinned replay vs ECMP run: {p}", file=sys.stderr)
        pin_effect = compare(pinned, ecmp, edges) if problems else None

        ns3_csv = d / "ns3.csv"
        cmd = [a.ns3_python, str(HERE / "ns3_leafspine.py"), "--trace", str(d / "trace-pinned.csv")]
        cmd += ["--out", str(ns3_csv), "--transport", transport, "--reno", a.reno]
        for opt in ("leaves", "spines", "hosts_per_leaf", "edge_rate", "core_rate", "edge_delay", "core_delay"):
            cmd += [f"--{opt.replace('_', '-')}", str(getattr(a, opt))]
        cmd += ["--buffer", a.buffer, "--ecn-threshold", a.ecn_threshold, "--mss", str(a.mss)]
        cmd += ["--init-cwnd", str(a.init_cwnd), "--min-rto", a.min_rto, "--syn-rto", a.syn_rto]
        cmd += ["--dupthresh", str(a.dupthresh)] + (["--dctcp-floor"] if a.dctcp_floor else [])
        walls["ns3"] = run(cmd, f"ns-3 ({transport})")
        n3 = pd.read_csv(ns3_csv).sort_values("flow").reset_index(drop=True)
        n3_stats = json.loads(ns3_csv.with_suffix(".json").read_text())
        for col in ["src", "dst", "size_bytes", "start_ps"]:
            if not (n3[col].to_numpy() == pinned[col].to_numpy()).all():
                raise SystemExit(f"{transport}: ns-3's flows differ from tailsim's in {col}")
        if n3["fct_ps"].isna().any():
            raise SystemExit(f"{transport}: {int(n3['fct_ps'].isna().sum())} flows unfinished in ns-3")

        table = compare(pinned, n3, edges)
        joined = pinned[["flow_id", "src", "dst", "size_bytes", "start_ps", "path"]].copy()
        joined["ts_fct_us"], joined["ns3_fct_us"] = pinned["fct_ps"] / 1e6, n3["fct_ps"] / 1e6
        joined["ts_ecmp_fct_us"] = ecmp["fct_ps"] / 1e6
        joined["ts_retx"], joined["ns3_retx"] = pinned["retransmits"], n3["retransmits"]
        joined["ts_timeouts"], joined["ns3_timeouts"] = pinned["timeouts"], n3["timeouts"]
        joined.to_csv(d / "joined.csv", index=False)
        ts_counts = tailsim_counters(d / "pinned")
        counters = {
            "tailsim": {
                **ts_counts,
                "retransmits": int(pinned["retransmits"].sum()),
                "timeouts": int(pinned["timeouts"].sum()),
            },
            "ns3": {
                "switch_ports": n3_stats["switch_ports"],
                "nics": n3_stats["nics"],
                "retransmits": int(n3["retransmits"].sum()),
                "timeouts": int(n3["timeouts"].sum()),
                "marks_on_acks_and_syns": n3_stats.get("marks_on_acks_and_syns", 0),
            },
        }
        report[transport] = {"walls_s": walls, "counters": counters, "pin_problems": problems}
        text = (
            markdown(table, transport)
            + "\n\n"
            + " · ".join(
                f"{who}: switch drops {c['switch_ports']['drops']}, NIC drops {c['nics']['drops']}, "
                f"ECN marks {c['switch_ports']['marks'] + c['nics']['marks']}"
                + (f" ({c['marks_on_acks_and_syns']} on ACKs/SYNs)" if c.get("marks_on_acks_and_syns") else "")
                + f", retransmits {c['retransmits']}, "
                f"timeouts {c['timeouts']}"
                for who, c in counters.items()
            )
        )
        if pin_effect is not None:
            text += (
                f"\n\ntailsim pinned vs tailsim ECMP (same flows and data paths; the pinned run's ACKs return "
                f"through the data's spine, ECMP's hash their own): {int((pinned['fct_ps'] != ecmp['fct_ps']).sum())} "
                f"of {len(pinned)} FCTs differ; mean / p99 change by bucket: "
                + ", ".join(
                    f"{r.bucket} {r.mean_diff_pct:+.1f} % / {r.p99_diff_pct:+.1f} %" for r in pin_effect.itertuples()
                )
            )
            report[transport]["pinned_vs_ecmp"] = pin_effect.to_dict(orient="records")
        sections.append(text)
        print(f"\n{sections[-1]}\n")
        print(json.dumps(report[transport], indent=1))

    intro = (
        f"FCT in µs, {a.flows} `{a.cdf}` flows at load {a.load} (seed {a.seed}) "
        f"on a {a.leaves}×{a.hosts_per_leaf}-host "
        f"leaf-spine with {a.spines} spines ({a.edge_rate}/{a.core_rate}, {a.edge_delay}/{a.core_delay} per link), "
        f"{a.buffer} per port, K = {a.ecn_threshold} (DCTCP), MSS {a.mss}, init_cwnd {a.init_cwnd}, "
        f"min RTO {a.min_rto}, handshake on; identical flows and paths in both simulators (tools/xval). "
        "diff = tailsim / ns-3 − 1. `*`: a p99 over fewer than 100 flows."
    )
    md = intro + "\n\n" + "\n\n".join(sections) + "\n"
    out = a.markdown or a.work / "xval.md"
    out.write_text(md)
    (a.work / "xval.json").write_text(json.dumps(report, indent=1) + "\n")
    print(f"\nwritten: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
