"""Estimates the thesis reproductions share (DeTail, FastLane, BurstRadar, LinkGuardian, SQR), beyond
``targets``' constructors: a bootstrap over several
points at once (a largest or smallest reduction over a grid), differences and ratios of two intervals, and a
count's Poisson interval."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from . import targets
from .targets import Estimate


def exact(value, basis: str) -> Estimate | None:
    """``targets.exact``, None for no value (the part did not run it)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return targets.exact(float(value), basis)


def grouped_bootstrap(
    stat: Callable[[Sequence[Sequence[np.ndarray]]], float],
    groups: Sequence[Sequence[np.ndarray]],
    what: str = "flows",
    tail: float | None = None,
    resamples: int = 1000,
    seed: int = 0,
) -> Estimate:
    """``stat(groups)`` with a ``targets.LEVEL`` percentile-bootstrap interval, where ``groups`` are the points
    of a grid, each a list of samples: the samples of one group are resampled with the same indices when they
    have the same length (the same flows under different schemes: paired), independently otherwise; groups
    are resampled independently of each other. For a statistic over several points at once (the largest
    reduction over rates and sizes). ``tail``: the quantile the statistic reads; a sample with fewer than
    1/(1 − tail) values cannot judge it."""
    gs = [[np.asarray(s, dtype=float) for s in g] for g in groups]
    gs = [[s[~np.isnan(s)] if len({len(t) for t in g}) > 1 else s for s in g] for g in gs]
    sizes = [len(s) for g in gs for s in g]
    if not gs or min(sizes, default=0) == 0:
        return targets.unjudged(None, f"no {what}")
    v = float(stat(gs))
    n = min(sizes)
    span = f"{n:,}" if n == max(sizes) else f"{n:,}–{max(sizes):,}"
    basis = f"{len(gs)} point{'s' if len(gs) > 1 else ''}, {span} {what}"
    if tail is not None and n * (1 - tail) < 1:
        return targets.unjudged(v, targets.thin_tail(n, tail, what), basis)
    rng = np.random.default_rng(seed)
    vals = np.empty(resamples)
    for i in range(resamples):
        drawn = []
        for g in gs:
            if len({len(s) for s in g}) == 1:
                idx = rng.integers(0, len(g[0]), len(g[0]))
                drawn.append([s[idx] for s in g])
            else:
                drawn.append([s[rng.integers(0, len(s), len(s))] for s in g])
        vals[i] = stat(drawn)
    vals = vals[np.isfinite(vals)]
    if not len(vals):
        return targets.unjudged(v, "the statistic is undefined on resamples", basis)
    lo, hi = np.quantile(vals, [(1 - targets.LEVEL) / 2, (1 + targets.LEVEL) / 2])
    return Estimate(v, float(min(lo, v)), float(max(hi, v)), f"{targets.LEVEL:.0%} bootstrap CI, {basis}")


def difference(a: Estimate | None, b: Estimate | None, basis: str = "") -> Estimate | None:
    """``a − b`` with the interval their two intervals allow together (conservative: it ignores any
    correlation); not judged when either is not."""
    if a is None or b is None or a.value is None or b.value is None:
        return None
    why = a.unjudged or b.unjudged
    e = Estimate(a.value - b.value, a.low - b.high, a.high - b.low, basis or f"difference of ({a.basis}), ({b.basis})")
    return e.unless(why)


def ratio(a: Estimate | None, b: Estimate | None, basis: str = "") -> Estimate | None:
    """``a / b`` for positive intervals, with the interval their two allow together (conservative)."""
    if a is None or b is None or a.value is None or b.value is None or b.value == 0:
        return None
    why = a.unjudged or b.unjudged
    hi = a.high / b.low if b.low > 0 else math.inf
    e = Estimate(
        a.value / b.value, a.low / b.high if b.high > 0 else 0.0, hi, basis or f"ratio of ({a.basis}), ({b.basis})"
    )
    return e.unless(why)


def count(k: int, what: str = "events") -> Estimate:
    """A Poisson count ``k`` with its ``targets.LEVEL`` interval (exact for up to 200 events, normal beyond)."""
    big = 10**12
    e = targets.rate(int(k), big, what).scaled(big)
    return Estimate(float(k), e.low, e.high, f"{targets.LEVEL:.0%} Poisson CI, {int(k):,} {what}")


def inverse(e: Estimate | None, basis: str = "") -> Estimate | None:
    """``1 / e`` for a positive interval (a share turned into "one in every N")."""
    if e is None or e.value is None or e.value == 0:
        return None
    hi = 1 / e.low if e.low > 0 else math.inf
    return Estimate(1 / e.value, 1 / e.high, hi, basis or e.basis, e.unjudged)


def unless_any(e: Estimate | None, *reasons: str) -> Estimate | None:
    """``e`` not judged for the first non-empty reason."""
    if e is None:
        return None
    for r in reasons:
        if r:
            return e.unless(r)
    return e
