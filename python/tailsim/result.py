"""Running one experiment, and its results as DataFrames."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Callable, Optional, Union

import pandas as pd

from . import _core
from ._config import ConfigLike, normalize, overrides


def table_file(directory: Path, name: str) -> Optional[Path]:
    """A results table's file: ``<name>.parquet``, or ``<name>.csv`` with ``output.format = "csv"``; None if
    the run wrote neither."""
    for f in (directory / f"{name}.parquet", directory / f"{name}.csv"):
        if f.exists():
            return f
    return None


# Integer columns that may be null (an unfinished flow's end, a plain flow's retrieval), by table: read as
# pandas' nullable Int64, so they stay integers whether or not a run left anything unfinished. (Parquet files
# say which columns are optional, CSV files cannot: the list makes both read alike.)
NULLABLE_INT = {
    "flows": ("end_ps", "fct_ps", "retrieval_id"),
    "ports": ("max_queue_bytes_arrivals",),
    "retrievals": ("start_ps", "end_ps"),
    "workflows": ("end_ps",),
}


def read_table(f: Path, name: str, columns: Optional[Sequence[str]] = None) -> pd.DataFrame:
    """A results table as a DataFrame: null integers as ``<NA>`` (Int64), null floats as NaN."""
    cols = list(columns) if columns is not None else None
    if f.suffix == ".parquet":
        # pyarrow converts numeric columns without copying where the layout allows.
        df = pd.read_parquet(f, engine="pyarrow", columns=cols)
    else:
        df = pd.read_csv(f, usecols=cols)
    for c in NULLABLE_INT.get(name, ()):
        if c in df.columns:
            df[c] = df[c].astype("Int64")
    return df


class ResultsMismatch(ValueError):
    """A results directory whose tables are not the ones its summary.json describes."""


class Result:
    """A results directory: ``flows`` (one row per flow), ``ports`` (one row per egress port), ``queues``
    (queue-occupancy samples, if ``output.queue_sample`` was set), ``summary`` (summary.json as a dict) and
    ``buckets`` (the per-size-bucket statistics as a DataFrame). Tables are read on first access."""

    def __init__(self, directory: Union[str, os.PathLike], summary: Optional[dict] = None):
        self.dir = Path(directory)
        if summary is None:
            path = self.dir / "summary.json"
            if not path.exists():
                raise FileNotFoundError(f"{self.dir} is not a complete tailsim results directory (no summary.json)")
            summary = json.loads(path.read_text())
        self.summary: dict = summary
        self._tables: dict[str, pd.DataFrame] = {}

    @classmethod
    def load(cls, directory: Union[str, os.PathLike]) -> Result:
        """Read a results directory written by ``tailsim run``, :func:`run` or a sweep."""
        return cls(directory)

    def _file(self, name: str) -> Optional[Path]:
        """The file of table ``name`` that this run wrote, checked against summary.json: a file the summary
        does not list is another run's and is not read; one of another size, or another run id in its
        parquet metadata, is an error (directories written before summary.json listed its files are read as
        they are)."""
        files = self.summary.get("files")
        if files is None:
            return table_file(self.dir, name)
        listed = [f for f in (f"{name}.parquet", f"{name}.csv") if f in files]
        if not listed:
            return None
        f = self.dir / listed[0]
        size = f.stat().st_size if f.exists() else None
        if size != files[listed[0]]:
            raise ResultsMismatch(
                f"{f}: summary.json lists {files[listed[0]]} bytes, found {'no file' if size is None else size}: "
                "the directory holds another run's table"
            )
        if f.suffix == ".parquet":
            import pyarrow.parquet as pq

            meta = pq.read_metadata(f).metadata or {}
            rid = meta.get(b"tailsim.run_id", b"").decode()
            if rid != self.summary.get("run_id"):
                raise ResultsMismatch(
                    f"{f}: written by run {rid or '(none)'}, summary.json is run {self.summary.get('run_id')}"
                )
        return f

    def _table(self, name: str) -> pd.DataFrame:
        if name not in self._tables:
            f = self._file(name)
            if f is None:
                self._tables[name] = pd.DataFrame()
            else:
                self._tables[name] = read_table(f, name)
        return self._tables[name]

    @property
    def flows(self) -> pd.DataFrame:
        return self._table("flows")

    def flow_columns(self, columns: Sequence[str]) -> pd.DataFrame:
        """Only these columns of ``flows``, read without loading the rest (a long run's table can hold tens
        of millions of rows); the cached table when it is already loaded."""
        f = self._file("flows")
        if "flows" in self._tables or f is None or f.suffix != ".parquet":
            return self.flows[list(columns)]
        return read_table(f, "flows", columns)

    @property
    def ports(self) -> pd.DataFrame:
        return self._table("ports")

    @property
    def queues(self) -> pd.DataFrame:
        return self._table("queues")

    @property
    def retrievals(self) -> pd.DataFrame:
        """Retrieval and workflow workloads: one row per retrieval (empty otherwise)."""
        return self._table("retrievals")

    @property
    def workflows(self) -> pd.DataFrame:
        """Retrieval and workflow workloads: one row per workflow (a lone retrieval is one of one part)."""
        return self._table("workflows")

    @property
    def cwnd(self) -> pd.DataFrame:
        """With ``output.cwnd_trace``: the traced TCP flows' window after every ACK and timeout (empty
        otherwise; docs/config.md)."""
        return self._table("cwnd")

    @property
    def rx_gaps(self) -> pd.DataFrame:
        """With ``output.rx_gaps``: every completed TCP flow's longest wait at its receiver for new data
        (``flow_id, gap_ps, gap_us, gap_end_us``; empty otherwise; docs/config.md)."""
        return self._table("rx_gaps")

    @property
    def telemetry(self) -> pd.DataFrame:
        """BurstRadar runs: one row per record the monitor received (port, packet, enqueue/dequeue times and
        depths in cells, whether the oracle counts it); empty otherwise (docs/burstradar.md)."""
        return self._table("telemetry")

    @property
    def buckets(self) -> pd.DataFrame:
        return pd.DataFrame(self.summary["buckets"]).set_index("bucket")

    @property
    def deadlines(self) -> Optional[dict]:
        """Deadline workloads: flows with a deadline, how many met it, ``application_throughput`` (their
        fraction) and ``other_slowdown_mean`` (mean slowdown of the flows without one); else None."""
        return self.summary.get("deadlines")

    @property
    def config(self) -> dict:
        return self.summary["config"]

    def __repr__(self) -> str:
        s = self.summary
        return (
            f"<tailsim.Result {s['name']!r}: {s['flows_finished']}/{s['flows_started']} flows finished, "
            f"{s['simulated_seconds'] * 1e3:.3f} ms simulated, seed {s['seed']}, in {str(self.dir)!r}>"
        )


def _progress_bar(
    enabled: Union[bool, None, Callable[[dict], Any]],
) -> tuple[Optional[Callable[[dict], bool]], Callable[[], None]]:
    """A tqdm bar (terminal or notebook) when stderr is interactive or when asked; silent otherwise; or the
    caller's own callback."""
    if callable(enabled):
        return (lambda p: enabled(p) is not False), lambda: None
    if enabled is False or (enabled is None and not _interactive()):
        return None, lambda: None
    try:
        from tqdm.auto import tqdm
    except ImportError:  # pragma: no cover - tqdm is a dependency
        return None, lambda: None
    bar = tqdm(total=100, unit="%", bar_format="{l_bar}{bar}| {postfix}")

    def update(p: dict) -> bool:
        frac = p.get("fraction")
        if frac is not None:
            bar.n = round(100 * frac, 1)
        rate = p["events"] / max(p["wall_seconds"], 1e-9) / 1e6
        bar.set_postfix_str(
            f"sim {p['sim_seconds'] * 1e3:.3f} ms, {rate:.2f} M ev/s, {p['flows_finished']}/{p['flows_started']} flows",
            refresh=True,
        )
        return True

    def close() -> None:
        bar.n = 100
        bar.close()

    return update, close


def _interactive() -> bool:
    if "ipykernel" in sys.modules:
        return True
    return hasattr(sys.stderr, "isatty") and sys.stderr.isatty()


_START_COLUMNS = ("start_ps", "start_ns", "start_us")


def _flows_trace(flows: Any) -> Path:
    """A DataFrame (or records) of flows as a CSV trace, in a file named by its contents (so the run id, which
    hashes the contents of every file a run reads, is the same for the same flows). Columns: ``src``, ``dst``,
    ``size_bytes`` and at most one of ``start_ps``, ``start_ns``, ``start_us`` (none: every flow at 0)."""
    import hashlib
    import tempfile

    df = flows if isinstance(flows, pd.DataFrame) else pd.DataFrame(flows)
    missing = [c for c in ("src", "dst", "size_bytes") if c not in df.columns]
    if missing:
        raise _core.ConfigError(
            f"flows DataFrame: missing column(s) {', '.join(missing)} (it has: {', '.join(map(str, df.columns))})"
        )
    starts = [c for c in _START_COLUMNS if c in df.columns]
    if len(starts) > 1:
        raise _core.ConfigError(f"flows DataFrame: give one start column, not {' and '.join(starts)}")
    cols = ["src", "dst", "size_bytes", *starts]
    out = df[cols].copy()
    for c in cols:
        v = pd.to_numeric(out[c], errors="coerce")
        bad = v.isna() | (v < 0) | ((v % 1 != 0) & (c != "start_us"))
        if bad.any():
            i = int(bad.to_numpy().nonzero()[0][0])
            what = "a number ≥ 0" + ("" if c == "start_us" else ", whole")
            found = df[c].iloc[i]
            found = found.item() if hasattr(found, "item") else found  # a numpy scalar as a plain number
            raise _core.ConfigError(f"flows DataFrame: row {i}: {c} = {found!r}, expected {what}")
        out[c] = v if c == "start_us" else v.astype("int64")
    if not starts:
        out["start_ps"] = 0
    for c in ("path", "via"):  # pinned paths: switch names, empty = the switches choose (docs/workloads.md)
        if c in df.columns:
            names = df[c].fillna("").astype(str).str.strip()
            bad = names.str.contains(r"[,\n\r]", regex=True)
            if bad.any():
                i = int(bad.to_numpy().nonzero()[0][0])
                raise _core.ConfigError(f"flows DataFrame: row {i}: {c} = {df[c].iloc[i]!r}, expected switch names")
            out[c] = names
    text = out.to_csv(index=False)
    name = hashlib.sha256(text.encode()).hexdigest()[:16]
    d = Path(tempfile.gettempdir()) / "tailsim-inputs"
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"flows-{name}.csv"
    if not path.exists():
        tmp = path.with_suffix(f".tmp-{os.getpid()}")
        tmp.write_text(text)
        os.replace(tmp, path)
    return path


def _add_flows(kind: str, text: str, flows: Any) -> tuple[str, Path, int]:
    """The configuration with one more workload: the flows as a trace. Returns (text, trace path, its index)."""
    path = _flows_trace(flows)
    if kind == "json":
        d = json.loads(text)
        d.setdefault("workload", []).append({"kind": "trace", "path": str(path)})
        return json.dumps(d), path, len(d["workload"]) - 1
    from ._config import tomllib

    n = len(tomllib.loads(text).get("workload", []))
    # Appended at the end, so the lines of the file's own keys keep their numbers in error messages.
    return f'{text}\n[[workload]]\nkind = "trace"\npath = {json.dumps(str(path))}\n', path, n


@contextlib.contextmanager
def _with_flows(kind: str, text: str, flows: Any):
    """The configuration's text with ``flows`` (if any) added as a trace workload; a configuration error
    about that workload, raised inside the block, is told in terms of the flows' rows."""
    if flows is None:
        yield text
        return
    text, path, index = _add_flows(kind, text, flows)
    try:
        yield text
    except _core.ConfigError as e:
        raise _flows_error(e, path, index) from None


def _flows_error(e: Exception, path: Path, index: int) -> Exception:
    """A configuration error about the flows' trace, told in terms of the DataFrame's rows."""
    import re

    msg = str(e)
    key = f"key `workload[{index}].path`: "
    if key not in msg:
        return e
    msg = "flows DataFrame: " + msg.split(key, 1)[1]
    msg = re.sub(re.escape(str(path)) + r":(\d+):", lambda m: f"row {int(m.group(1)) - 2}:", msg)
    msg = re.sub(r"\(entry (\d+)\)", lambda m: f"(row {int(m.group(1)) - 1})", msg)
    return _core.ConfigError(msg)


def run(
    config: ConfigLike,
    out: Union[str, os.PathLike, None] = None,
    *,
    seed: Optional[int] = None,
    set: Optional[Mapping[str, Any]] = None,
    progress: Union[bool, None, Callable[[dict], Any]] = None,
    flows: Any = None,
    threads: int = 1,
    parts: Optional[int] = None,
) -> Result:
    """Run one experiment and return its :class:`Result`.

    ``config`` is a TOML file path, a dict with the same structure, or a builder object
    (:class:`tailsim.Experiment`). ``set`` overrides keys (``{"workload[0].load": 0.5}``), ``seed`` the seed.
    Results are written to ``out`` (default: ``output.dir`` of the config, else ``results/<name>``).
    The simulation runs with the GIL released; ``progress`` shows a bar (default: only when interactive), or
    is a callable that receives a dict about twice a second (``sim_seconds``, ``events``, ``wall_seconds``,
    ``flows_started``, ``flows_finished``, ``fraction``) and may return False to stop the run early (the
    result then has ``summary["stop_reason"] == "interrupted"``). A run without ``stop.time`` in which nothing
    can progress (a host cut off for good) is stopped as ``"stalled"``, and one whose events run out while flows
    are unfinished ends as ``"exhausted"``, each with a ``RuntimeWarning``.
    Raises :class:`tailsim.ConfigError` for an invalid configuration (the message names the key).

    ``flows``, a DataFrame (or records) with columns ``src``, ``dst``, ``size_bytes`` and optionally one of
    ``start_ps``, ``start_ns``, ``start_us``, adds a workload of exactly those flows, as a CSV trace would
    (docs/workloads.md); a ``path`` or ``via`` column pins flows to paths (a finished run's ``flows`` table
    has ``path``); errors in it name the row.

    ``threads`` runs the simulation on that many threads, the fabric cut into as many parts, with the results
    of one thread, for every transport, workload and switch mechanism (docs/parallel.md). What cannot be cut
    (an event budget, ``stop.max_events``; a link between two parts without delay; the flow-level Ideal)
    raises :class:`tailsim.ConfigError` saying why. ``parts`` cuts the fabric into that many parts instead
    (at least ``threads``), each thread running its share in turn, window by window: the same results again,
    faster on one thread where the packets in flight outgrow the last-level cache (a fabric of thousands of
    hosts), slower where they fit, and every part holds a whole world (docs/parallel.md, "More parts than
    threads").
    """
    kind, text, origin, base = normalize(config)
    sets = overrides(set)
    if seed is not None:
        sets.append(f"seed={int(seed)}")
    with _with_flows(kind, text, flows) as text:
        update, close = _progress_bar(progress)
        try:
            _, directory = _core.run(
                kind,
                text,
                origin,
                base,
                sets,
                None if out is None else os.fspath(out),
                update,
                threads=int(threads),
                parts=None if parts is None else int(parts),
            )
        finally:
            close()
    # summary.json as written (it also lists the tables' files), rather than the returned copy.
    r = Result(directory)
    _warn_if_stuck(r.summary)
    return r


def _warn_if_stuck(summary: Mapping[str, Any]) -> None:
    """A ``RuntimeWarning`` (at the caller of ``run``) for a run that ended with flows nothing could finish."""
    stuck = {
        "stalled": "the run stalled at {t:.6g} s simulated: nothing progressed for 600 s (no packet delivered, no "
        "flow started or finished) and {n} flows are unfinished; is a host cut off for good?",
        "exhausted": "no event left at {t:.6g} s simulated while {n} flows are unfinished: nothing can move them "
        "again (a packet lost where no timer recovers it?)",
    }.get(summary.get("stop_reason"))
    if stuck:
        n = summary["flows_started"] - summary["flows_finished"]
        warnings.warn(stuck.format(t=summary["simulated_seconds"], n=n), RuntimeWarning, stacklevel=3)


def check(config: ConfigLike, *, set: Optional[Mapping[str, Any]] = None, flows: Any = None) -> str:
    """Validate a configuration without running it; returns a one-line description of the fabric. What will
    go wrong though the configuration is valid (a host cut off for good with no ``stop.time``) is issued as a
    ``RuntimeWarning``; what ``run`` would refuse raises ``ConfigError``. ``flows`` as for :func:`run`."""
    kind, text, origin, base = normalize(config)
    with _with_flows(kind, text, flows) as text:
        desc, warns = _core.check(kind, text, origin, base, overrides(set))
    for w in warns:
        warnings.warn(w, RuntimeWarning, stacklevel=2)
    return desc
