"""Judging a reproduction's targets: what a run pins a paper's number to, and whether that settles it.

A run measures a number with an uncertainty that depends on its scale: a p99 over 240 flows, a mean of
heavy-tailed slowdowns, a load found by a search on a 0.1 grid. Each target therefore gets an
:class:`Estimate` — a value and the interval the run pins the true value to (a bootstrap confidence interval
over flows, an order-statistic interval for a percentile, the bracket between two probes, or the value itself
for a deterministic count) — and a verdict from that interval against the paper's range:

- ``yes``: the whole interval lies inside the range;
- ``NO``: the whole interval lies outside it;
- ``not judged at this scale``: the interval straddles an edge of the range (more flows, a longer window or a
  finer grid would decide), or the run cannot measure the number at all (``Estimate.unjudged`` says why:
  a window shorter than the messages, a percentile beyond the sample) — the value is still shown;
- ``not run``: the part that measures it was not run, or gave no number.

Only the interval's sampling error is covered; a bias the scale brings (a warm-up that never ends in a short
run, say) is not, and is stated as an ``unjudged`` reason where it is known.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

LEVEL = 0.95
NOT_JUDGED = "not judged at this scale"


@dataclass(frozen=True)
class Estimate:
    """A measured number: ``value`` (None when the run only bounds it) lies in ``low``–``high``."""

    value: float | None
    low: float
    high: float
    basis: str
    unjudged: str = ""

    def unless(self, reason: str) -> Estimate:
        """This estimate, not judged for ``reason`` when that is not empty (a reason already given stays)."""
        if not reason or self.unjudged:
            return self
        return Estimate(self.value, self.low, self.high, self.basis, reason)

    def scaled(self, factor: float) -> Estimate:
        v = None if self.value is None else self.value * factor
        return Estimate(v, self.low * factor, self.high * factor, self.basis, self.unjudged)


# Arrivals must last this many times the byte-weighted mean completion time for a load-dependent number
# to be judged (see ``steady``).
STEADY_RATIO = 10


def steady(flows, what: str = "") -> str:
    """Why an open-loop run's numbers do not describe its offered load, or "" when they do.

    A run offers its load only while flows arrive; bytes still in flight when arrivals stop are carried by
    a draining, lighter network, and the queues a heavy-tailed workload builds take the time of its largest
    flows to reach their steady level. The run is judged when its arrival window lasts at least
    ``STEADY_RATIO`` times the byte-weighted mean completion time (the time the average byte spends in the
    network; by Little's law then at most about 1/``STEADY_RATIO`` of the bytes are carried after the load
    stops). Unfinished flows count as completing at the run's last completion. ``flows``: a flows table
    (``start_us``, ``size_bytes``, ``fct_us``, ``finished``)."""
    if not len(flows):
        return ""
    start = flows["start_us"].to_numpy(dtype=float)
    size = flows["size_bytes"].to_numpy(dtype=float)
    fct = flows["fct_us"].to_numpy(dtype=float)
    done = flows["finished"].to_numpy(dtype=bool)
    end = float(np.max(start[done] + fct[done])) if done.any() else float(np.max(start))
    fct = np.where(done, fct, end - start)
    window = float(start.max() - start.min())
    weighted = float((size * fct).sum() / size.sum()) if size.sum() > 0 else 0.0
    if weighted <= 0 or window >= STEADY_RATIO * weighted:
        return ""
    return (f"{what}: " if what else "") + (
        f"arrivals lasted {_dur(window)}, {window / weighted:.3g}× the byte-weighted mean FCT "
        f"({_dur(weighted)}); a load-dependent number needs ≥ {STEADY_RATIO}× (more flows)"
    )


def _dur(us: float) -> str:
    return f"{us / 1e3:.3g} ms" if us >= 1e3 else f"{us:.3g} µs"


def exact(value: float, basis: str = "exact: a deterministic result, no sampling error") -> Estimate:
    return Estimate(float(value), float(value), float(value), basis)


def bracket(low: float, high: float, value: float | None = None, basis: str = "") -> Estimate:
    """A number known only to lie between two probes (``value`` an interpolation between them, if any)."""
    return Estimate(value, float(low), float(high), basis or f"between probes {low:g} and {high:g}")


def unjudged(value: float | None, why: str, basis: str = "") -> Estimate:
    """A number this run cannot settle, whatever it came to: ``why`` says what it would take."""
    v = float("nan") if value is None else float(value)
    return Estimate(None if value is None else v, v, v, basis or "one run", why)


def percentile(x, q: float, method: str = "inverted_cdf") -> float:
    """The ``q`` percentile of ``x`` (NaNs left out; NaN for no values): nearest rank, as the simulator's
    summaries compute it, or ``method="linear"`` (pandas' and numpy's default) for a part that reports that."""
    x = np.asarray(x, dtype=float)
    x = x[~np.isnan(x)]
    return float(np.quantile(x, q, method=method)) if len(x) else float("nan")


def quantile(x: np.ndarray, q: float, what: str = "flows", method: str = "inverted_cdf") -> Estimate:
    """The ``q`` quantile of the samples ``x`` (NaNs left out) with its distribution-free confidence interval:
    the order statistics whose ranks a binomial(n, q) puts around the quantile with probability ``LEVEL``.
    The value is the nearest-rank percentile, as in the simulator's tables (``method="linear"``: pandas' and
    numpy's default, for a part that reports that)."""
    x = np.sort(np.asarray(x, dtype=float))
    x = x[~np.isnan(x)]
    n = len(x)
    if n == 0:
        return unjudged(None, f"no {what}")
    v = percentile(x, q, method)
    if n * (1 - q) < 1:
        return unjudged(v, thin_tail(n, q, what), f"p{_pct(q)} of {n:,} {what}")
    lo_rank, hi_rank = _binomial_ranks(n, q)
    low, high = min(float(x[lo_rank]), v), max(float(x[hi_rank]), v)
    return Estimate(v, low, high, f"{LEVEL:.0%} order-statistic CI, {n:,} {what}")


def bootstrap(
    stat: Callable[..., float],
    samples: Sequence[np.ndarray],
    paired: bool = False,
    what: str = "flows",
    tail: float | None = None,
    resamples: int | None = None,
    seed: int = 0,
) -> Estimate:
    """``stat(*samples)`` with a ``LEVEL`` percentile-bootstrap interval. ``paired``: the samples are the same
    flows under different schemes (equal lengths, resampled with the same indices), which cancels the
    arrivals' own variation out of a ratio. ``tail``: the statistic is that quantile, and a sample with fewer
    than 1/(1 − tail) values cannot judge it. Seeded, so a target's interval is the same on every machine."""
    samples = [np.asarray(s, dtype=float) for s in samples]
    if paired and len({len(s) for s in samples}) > 1:
        raise ValueError(f"paired samples differ in length: {[len(s) for s in samples]}")
    n = min(len(s) for s in samples)
    if n == 0:
        return unjudged(None, f"no {what}")
    v = float(stat(*samples))
    sizes = " / ".join(f"{len(s):,}" for s in samples) if not paired else f"{n:,}"
    if tail is not None and n * (1 - tail) < 1:
        return unjudged(v, thin_tail(n, tail, what), f"{sizes} {what}")
    total = sum(len(s) for s in samples)
    b = resamples or (1000 if total <= 200_000 else 200)
    rng = np.random.default_rng(seed)
    vals = np.empty(b)
    for i in range(b):
        if paired:
            idx = rng.integers(0, n, n)
            vals[i] = stat(*(s[idx] for s in samples))
        else:
            vals[i] = stat(*(s[rng.integers(0, len(s), len(s))] for s in samples))
    vals = vals[np.isfinite(vals)]
    if not len(vals):
        return unjudged(v, "the statistic is undefined on resamples")
    lo, hi = np.quantile(vals, [(1 - LEVEL) / 2, (1 + LEVEL) / 2])
    kind = "paired " if paired and len(samples) > 1 else ""
    return Estimate(v, float(min(lo, v)), float(max(hi, v)), f"{LEVEL:.0%} {kind}bootstrap CI, {sizes} {what}")


def rate(events: int, trials: int, what: str = "packets") -> Estimate:
    """A proportion with its ``LEVEL`` interval: 0 of 10^5 packets pins a loss rate below 3.7·10⁻⁵, not to 0.
    Few events (≤ 200): the exact Poisson interval on the count, divided by the trials (the binomial's limit
    for the small rates this is for); more: the Wilson score interval."""
    if trials <= 0:
        return unjudged(None, f"no {what}")
    p = events / trials
    basis = f"{LEVEL:.0%} CI, {events:,} of {trials:,} {what}"
    if events > trials / 2:  # the interval of the rarer outcome, reflected
        e = rate(trials - events, trials, what)
        return Estimate(p, 1 - e.high, 1 - e.low, basis)
    if events <= 200 and p <= 0.05:
        a = (1 - LEVEL) / 2
        lo = 0.0 if events == 0 else _solve(lambda lam: _poisson_sf(events, lam) - a, 0.0, events + 1.0)
        hi = _solve(lambda lam: a - _poisson_cdf(events, lam), 0.0, events + 10 * math.sqrt(events + 1) + 10)
        return Estimate(p, lo / trials, min(1.0, hi / trials), basis)
    z = _z(LEVEL)
    d = 1 + z * z / trials
    c = (p + z * z / (2 * trials)) / d
    h = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / d
    return Estimate(p, max(0.0, c - h), min(1.0, c + h), basis)


def _poisson_cdf(k: int, lam: float) -> float:
    """P(X ≤ k) for X ~ Poisson(lam), summed in log space."""
    if lam == 0:
        return 1.0
    terms = [i * math.log(lam) - lam - math.lgamma(i + 1) for i in range(k + 1)]
    m = max(terms)
    return min(1.0, math.exp(m) * sum(math.exp(t - m) for t in terms))


def _poisson_sf(k: int, lam: float) -> float:
    """P(X ≥ k)."""
    return 1.0 - _poisson_cdf(k - 1, lam) if k > 0 else 1.0


def _solve(f: Callable[[float], float], lo: float, hi: float) -> float:
    """The root of an increasing ``f`` between ``lo`` and ``hi``, by bisection."""
    for _ in range(200):
        mid = (lo + hi) / 2
        if f(mid) < 0:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def verdict(e: Estimate | None, low: float, high: float) -> tuple[bool | None, str, str]:
    """(within, verdict, why) of an estimate against the accepted range ``low``–``high``."""
    if e is None or (e.value is None and not e.unjudged and math.isnan(e.low)):
        return None, "not run", ""
    if e.unjudged:
        return None, NOT_JUDGED, e.unjudged
    if math.isnan(e.low) or math.isnan(e.high):
        return None, "not run", "no number"
    if low <= e.low and e.high <= high:
        return True, "yes", ""
    if e.high < low or e.low > high:
        return False, "NO", ""
    edge = low if e.low < low else high
    return None, NOT_JUDGED, f"{_g(e.low)}–{_g(e.high)} ({e.basis}) straddles {_g(edge)}"


def target(name: str, e: Estimate | None, low: float, high: float, note: str = "", **labels) -> dict:
    """One target row: ``labels`` (workload, load, …), what was measured and the interval, the accepted
    range, ``within`` (True/False; None when not judged or not run), the verdict and why."""
    within, word, why = verdict(e, low, high)
    value = None if e is None or e.value is None or math.isnan(e.value) else _round(e.value)
    return {
        **labels,
        "target": name,
        "measured": value,
        "interval_low": None if e is None or math.isnan(e.low) else _round(e.low),
        "interval_high": None if e is None or math.isnan(e.high) else _round(e.high),
        "basis": "" if e is None else e.basis,
        "low": low,
        "high": high,
        "within": within,
        "verdict": word,
        "why": why,
        "note": note,
    }


def markdown(rows: list[dict], label_columns: Sequence[str] = ()) -> str:
    """``targets.md``: a count of verdicts, one line per target, and the reasons for the targets not judged
    (numbered notes, each reason once)."""
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    head = f"{len(rows)} targets: " + ", ".join(
        f"{counts[k]} {k}" for k in ("yes", "NO", NOT_JUDGED, "not run") if counts.get(k)
    )
    cols = [c for c in label_columns if any(c in r for r in rows)]
    lines = [
        head,
        "",
        "| " + " | ".join([*cols, "target", "measured", "interval", "accepted range", "verdict"]) + " |",
        "|" + "---|" * (len(cols) + 5),
    ]
    reasons: list[str] = []
    for r in rows:
        m = "—" if r["measured"] is None else _g(r["measured"])
        lo, hi = r["interval_low"], r["interval_high"]
        iv = "—" if lo is None else (_g(lo) if lo == hi else f"{_g(lo)}–{_g(hi)}")
        note = f" ({r['note']})" if r.get("note") else ""
        word = "**NO**" if r["verdict"] == "NO" else r["verdict"]
        if r["why"]:
            if r["why"] not in reasons:
                reasons.append(r["why"])
            word += f" [{reasons.index(r['why']) + 1}]"
        labels = [str(r.get(c, "")) for c in cols]
        rng = f"{_g(r['low'])}–{_g(r['high'])}"
        lines.append("| " + " | ".join([*labels, r["target"] + note, m, iv, rng, word]) + " |")
    if reasons:
        lines.append("")
        lines += [f"[{i}] {why}" for i, why in enumerate(reasons, 1)]
    return "\n".join(lines) + "\n"


def _binomial_ranks(n: int, q: float) -> tuple[int, int]:
    """0-based ranks (lo, hi) with P(X_(lo) ≤ quantile ≤ X_(hi)) ≥ LEVEL, from the normal approximation of the
    binomial with a continuity margin, clipped to the sample."""
    z = 1.959963984540054 if LEVEL == 0.95 else _z(LEVEL)
    sd = math.sqrt(n * q * (1 - q))
    lo = math.floor(n * q - z * sd - 0.5)
    hi = math.ceil(n * q + z * sd + 0.5)
    return max(0, lo - 1), min(n - 1, hi - 1)


def _z(level: float) -> float:
    from statistics import NormalDist

    return NormalDist().inv_cdf((1 + level) / 2)


def thin_tail(n: int, q: float, what: str) -> str:
    """Why a ``q`` percentile of ``n`` values is not judged (it needs at least 1/(1 − q))."""
    return f"p{_pct(q)} of {n:,} {what} is their maximum (it needs ≥ {math.ceil(1 / (1 - q)):,})"


def _pct(q: float) -> str:
    return f"{q * 100:g}"


def _round(v: float) -> float:
    """Three decimals, or four significant digits below 0.001 (an effective loss of 3.7e-8 is not 0)."""
    v = float(v)
    return round(v, 3) if abs(v) >= 1e-3 or v == 0 else float(f"{v:.4g}")


def _g(v: float) -> str:
    return f"{v:.3g}" if abs(v) < 1e4 else f"{v:,.0f}"
