"""The ``tailsim`` console script: ``run``, ``check`` and ``bench`` are the Rust command line itself;
``sweep`` and ``plot`` are added here."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path
from typing import Optional

from . import _core
from ._config import tomllib

SWEEP_KEYS = {"base", "out", "backend", "scheduler", "workers", "grid", "set"}


def _read_sweep(path: Path) -> dict:
    """A sweep file's table, or ValueError saying what is wrong with it (file first)."""
    try:
        spec = tomllib.loads(path.read_text())
    except OSError as e:
        raise ValueError(f"{path}: cannot read the sweep file: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise ValueError(f"{path}: {e}") from None
    unknown = set(spec) - SWEEP_KEYS
    if unknown:
        raise ValueError(
            f"{path}: unknown key(s) {', '.join(sorted(unknown))}; expected {', '.join(sorted(SWEEP_KEYS))}"
        )
    for key in ("base", "grid"):
        if key not in spec:
            raise ValueError(f"{path}: missing `{key}`")
    if not isinstance(spec["grid"], dict) or not all(isinstance(v, list) for v in spec["grid"].values()):
        raise ValueError(f'{path}: `grid` must be a table of lists, e.g. "transport.kind" = ["tcp", "dctcp"]')
    return spec


def _load_sweep(arg: str) -> Optional[tuple[Path, dict, Path]]:
    """(path, table, base experiment's path) of a sweep file, or None with the error printed."""
    path = Path(arg)
    try:
        spec = _read_sweep(path)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return None
    return path, spec, path.parent / spec["base"]


def _is_sweep(path: Path) -> bool:
    """A sweep file: named *.sweep.toml, or a table with `base` and `grid` (what the Rust `check` cannot read)."""
    if path.name.endswith(".sweep.toml"):
        return True
    try:
        t = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError):
        return False
    return "base" in t and "grid" in t


def _check_sweep(argv: list[str]) -> int:
    """`tailsim check` on a sweep file: the file's keys, then the base experiment at every point of the grid."""
    ap = argparse.ArgumentParser(prog="tailsim check", description="Check a sweep file at every point of its grid.")
    ap.add_argument("sweep", help="sweep file (TOML)")
    a, _ = ap.parse_known_args(argv)
    from ._config import normalize, overrides
    from .sweep import _point_sets, points

    loaded = _load_sweep(a.sweep)
    if loaded is None:
        return 1
    path, spec, base = loaded
    params: dict = {}
    try:
        kind, text, origin, base_dir = normalize(base)
        grid = points(spec["grid"])
        desc = ""
        for params in grid:
            sets = _point_sets({"params": params, "sets": overrides(spec.get("set") or {})})
            desc, warnings = _core.check(kind, text, origin, base_dir, sets)
            for w in warnings:
                print(f"warning: {path}: point {params}: {w}", file=sys.stderr)
    except (_core.ConfigError, OSError, ValueError) as e:
        at = f"point {params}: " if params else ""
        print(f"error: {path}: {at}{e}", file=sys.stderr)
        return 1
    print(f"{path}: ok (sweep file: {len(grid)} points of {base}, e.g. {desc})")
    return 0


def _sweep(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(
        prog="tailsim sweep", description="Run an experiment over a grid of overrides (see docs/sweeps.md)."
    )
    ap.add_argument("sweep", help="sweep file (TOML)")
    ap.add_argument("--out", help="results directory (default: `out` in the file)")
    ap.add_argument("--backend", choices=["local", "dask"], help="default: `backend` in the file, else local")
    ap.add_argument(
        "--scheduler", help="Dask scheduler address, e.g. tcp://10.0.0.1:8786 (default: a local Dask cluster)"
    )
    ap.add_argument("--workers", type=int, help="local processes or local Dask workers (default: CPU count)")
    ap.add_argument(
        "--force",
        action="store_true",
        help="recompute every point (by default a finished point is reused when its "
        "run id, which covers the configuration, referenced files and tailsim build, is unchanged)",
    )
    ap.add_argument("-q", "--quiet", action="store_true")
    a = ap.parse_args(argv)
    from .sweep import SweepBusy, sweep

    loaded = _load_sweep(a.sweep)
    if loaded is None:
        return 1
    path, spec, base = loaded
    out = a.out or spec.get("out") or f"results/{path.name.removesuffix('.toml').removesuffix('.sweep')}"
    try:
        res = sweep(
            base,
            spec["grid"],
            out,
            set=spec.get("set"),
            backend=a.backend or spec.get("backend", "local"),
            workers=a.workers or spec.get("workers"),
            scheduler=a.scheduler or spec.get("scheduler"),
            progress=not a.quiet,
            force=a.force,
        )
    except (_core.ConfigError, SweepBusy) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    n, reused, failed = len(res.params), len(res.reused), len(res.failed)
    print(f"{n} points: {n - reused - failed} computed, {reused} reused, {failed} failed; results: {res.dir}")
    for pid, err in res.failed.items():
        print(f"  failed {pid}: {err}", file=sys.stderr)
    return 1 if res.failed else 0


def _plot(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="tailsim plot", description="Plot a results or sweep directory.")
    ap.add_argument("results", nargs="+", help="results directories (or one sweep directory for --kind load)")
    ap.add_argument("--kind", required=True, choices=["slowdown", "fct-cdf", "queues", "load"])
    ap.add_argument("--out", help="output file (.png/.pdf/.svg); default: <first dir>/<kind>.png")
    ap.add_argument("--x", default="workload[0].load", help="--kind load: the swept key on the x axis")
    ap.add_argument("--series", default="transport.kind", help="--kind load: the swept key that makes the lines")
    ap.add_argument(
        "--no-published",
        action="store_true",
        help="do not overlay a paper's published values when the runs match its setup (docs/python.md)",
    )
    a = ap.parse_args(argv)
    import pandas as pd

    from . import plots
    from .result import Result

    out = a.out or str(Path(a.results[0]) / f"{a.kind}.png")
    try:
        if a.kind == "load":
            summary = pd.read_parquet(Path(a.results[0]) / "summary.parquet")
            plots.normalized_fct_vs_load(
                summary, x=a.x, series=a.series, path=out, published=not a.no_published, sweep_dir=a.results[0]
            )
        else:
            rs = {Path(d).name: Result.load(d) for d in a.results}
            if a.kind == "slowdown":
                plots.slowdown_vs_size(rs, path=out, published=not a.no_published)
            elif a.kind == "fct-cdf":
                plots.fct_cdf(rs, path=out)
            else:
                plots.queue_occupancy(next(iter(rs.values())), path=out)
    except (FileNotFoundError, ValueError, KeyError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(out)
    return 0


def _reproduce(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(
        prog="tailsim reproduce",
        description="Reproduce a paper's headline results (docs/pfabric.md, docs/homa.md, docs/qjump.md, "
        "docs/detail.md, docs/fastlane.md, docs/burstradar.md, docs/sqr.md, docs/linkguardian.md).",
    )
    ap.add_argument(
        "paper", choices=["pfabric", "homa", "qjump", "detail", "fastlane", "burstradar", "sqr", "linkguardian"]
    )
    ap.add_argument(
        "--scale",
        choices=["small", "medium", "full"],
        default="small",
        help="small: minutes (CI); medium (homa only): every workload and scheme at 1/20 of the messages; "
        "full: the paper's grid",
    )
    ap.add_argument("--out", help="default: results/reproduce-<paper>-<scale>")
    ap.add_argument("--flows", type=int, help="flows per point (overrides the scale's)")
    ap.add_argument(
        "--parts",
        help="comma-separated; pfabric: main (Figs. 7-9), deadlines (Figs. 10-11), queues (Fig. 23); "
        "homa: main (Figs. 6.1-6.2, Table 6.1), overcommit (Figs. 5.2/5.4), maxload (Fig. 6.3); "
        "qjump: bound (Fig. 4.10), fabric (Fig. 4.7), and the others in docs/qjump.md; "
        "detail: micro (Figs. 5.6-5.8), asym (Fig. 5.10), web (Figs. 5.12-5.13), verify (Fig. 5.5), longflows "
        "(Fig. 5.9); fastlane: util (Fig. 6.5), share (Figs. 6.7-6.8), caps (Figs. 6.9-6.10), buffers "
        "(Figs. 6.11-6.12), testbed (Fig. 6.14); burstradar: efficiency (Fig. 3.5), extras (Fig. 3.6); "
        "sqr: fct (Figs. 4.3, 4.8, 4.10-4.11), loss (Fig. 4.9), longflow (Fig. 4.7), egress (Fig. 4.14), background "
        "(TPC-H stand-in); linkguardian: stress (Figs. 5.10, "
        "5.12, 5.17), short (Table 5.1, Figs. 5.15-5.16), motivation (Fig. 5.4), cubic (Table 5.3), transport "
        "(Figs. 5.13-5.14); default: all",
    )
    ap.add_argument("--workers", type=int)
    ap.add_argument("--backend", choices=["local", "dask"], default="local")
    ap.add_argument("--scheduler")
    a = ap.parse_args(argv)
    from . import (
        reproduce,
        reproduce_burstradar,
        reproduce_detail,
        reproduce_fastlane,
        reproduce_homa,
        reproduce_linkguardian,
        reproduce_qjump,
        reproduce_sqr,
    )

    out = a.out or f"results/reproduce-{a.paper}-{a.scale}"
    papers = {
        "pfabric": (reproduce.PARTS, reproduce.pfabric),
        "homa": (reproduce_homa.PARTS, reproduce_homa.homa),
        "qjump": (reproduce_qjump.PARTS, reproduce_qjump.qjump),
        "detail": (reproduce_detail.PARTS, reproduce_detail.detail),
        "fastlane": (reproduce_fastlane.PARTS, reproduce_fastlane.fastlane),
        "burstradar": (reproduce_burstradar.PARTS, reproduce_burstradar.burstradar),
        "sqr": (reproduce_sqr.PARTS, reproduce_sqr.sqr),
        "linkguardian": (reproduce_linkguardian.PARTS, reproduce_linkguardian.linkguardian),
    }
    known, run = papers[a.paper]
    if a.scale == "medium" and a.paper != "homa":
        print(
            f"tailsim reproduce: --scale medium exists for homa only; use small or full for {a.paper}", file=sys.stderr
        )
        return 2
    parts = [p.strip() for p in a.parts.split(",") if p.strip()] if a.parts else list(known)
    bad = sorted(set(parts) - set(known))
    if bad:
        print(
            f"tailsim reproduce: --parts: unknown {', '.join(bad)}; expected some of {', '.join(known)}",
            file=sys.stderr,
        )
        return 2
    run(out, scale=a.scale, workers=a.workers, backend=a.backend, scheduler=a.scheduler, flows=a.flows, parts=parts)
    print((Path(out) / "targets.md").read_text())
    print(f"figures and data: {out}")
    return 0


# A `tailsim bench` scenario's process: the extension module alone, loaded from its file (argv[1]) without
# importing the tailsim package.
_BENCH_CHILD = (
    "import importlib.util as u, sys; "
    "s = u.spec_from_file_location('tailsim._core', sys.argv[1]); m = u.module_from_spec(s); "
    "s.loader.exec_module(m); sys.exit(m.cli(['tailsim', *sys.argv[2:]], []))"
)


def _on_sigterm(signum, frame):  # noqa: ARG001 (signal handler signature)
    raise KeyboardInterrupt


def main(argv: Optional[list[str]] = None) -> int:
    """The ``tailsim`` command. Ctrl-C or SIGTERM stops a run, sweep or reproduction: what finished is kept,
    one line says so, and the exit status is 130."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _on_sigterm)
    from .sweep import MissingDependency

    try:
        return _main(argv)
    except KeyboardInterrupt:
        print("tailsim: interrupted", file=sys.stderr)
        return 130
    except MissingDependency as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


def _main(argv: Optional[list[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) >= 2 and argv[0] == "help" and argv[1] in ("sweep", "plot", "reproduce"):
        argv = [argv[1], "--help"]  # the Python package's commands, which the Rust parser does not know
    if argv and argv[0] == "reproduce":
        return _reproduce(argv[1:])
    if argv and argv[0] == "sweep":
        return _sweep(argv[1:])
    if argv and argv[0] == "plot":
        return _plot(argv[1:])
    files = [x for x in argv[1:] if not x.startswith("-")]
    if argv and argv[0] == "check" and files and _is_sweep(Path(files[0])):
        return _check_sweep(argv[1:])
    # `bench` measures each scenario in a child process; started as `python -m tailsim` that child would
    # import pandas and matplotlib (about 115 MB) and its peak would be the interpreter's. It loads only the
    # simulator's extension module instead (about 11 MB of interpreter).
    self_cmd = (
        [sys.executable, "-c", _BENCH_CHILD, _core.__file__]
        if argv[:1] == ["bench"]
        else [sys.executable, "-m", "tailsim"]
    )
    code = _core.cli(["tailsim", *argv], self_cmd)
    if argv and argv[0] in ("-h", "--help", "help"):
        print(
            "\nAlso (Python package):\n"
            "  sweep      Run an experiment over a grid of overrides\n"
            "  plot       Plot results or a sweep\n"
            "  reproduce  Reproduce a paper's results (pfabric, homa, qjump, detail, fastlane, burstradar, sqr, "
            "linkguardian)"
        )
    return code


if __name__ == "__main__":
    sys.exit(main())
