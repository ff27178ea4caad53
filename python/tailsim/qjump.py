"""QJUMP's epoch and bound calculator (docs/qjump.md): the same Rust code as ``tailsim qjump``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Optional, Union

from . import _core

Size = Union[int, str]


def qjump_levels(
    hosts: int,
    edge_rate: str = "10Gbps",
    max_packet: Size = 9000,
    switch_delay: str = "0",
    f: Sequence[float] = (1, 2, 3, 5, 10, 20, 100, 144),
    epoch_factor: int = 1,
    epoch: Optional[str] = None,
    budget: str = "per-level-epoch",
) -> dict:
    """The network epoch N·P/r + ε (Eq. 3.13; ``epoch_factor=2`` for the NSDI'15 form) and, per class
    (class 0 = the thesis's level 7 first), the bucket, rate and latency bound min(N, N/f)·P/r + ε.

    >>> tailsim.qjump_levels(10, "10Gbps", 1518, "588ns", [1])["levels"][0]["latency_us"]   # doctest: +SKIP
    12.732
    """
    epoch_ps, rows = _core.qjump_levels(
        int(hosts), edge_rate, str(max_packet), switch_delay, [float(x) for x in f], int(epoch_factor), epoch, budget
    )
    keys = ("class", "level", "f", "epoch_ps", "budget_bytes", "rate_bps", "latency_ps", "guaranteed")
    levels = []
    for r in rows:
        d = dict(zip(keys, r))
        d["epoch_us"] = d["epoch_ps"] / 1e6
        d["latency_us"] = d["latency_ps"] / 1e6
        levels.append(d)
    return {"network_epoch_ps": epoch_ps, "network_epoch_us": epoch_ps / 1e6, "levels": levels}
