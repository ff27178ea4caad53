"""Judging targets: intervals that cover what they claim to, verdicts from interval against range, and the
rule that a run too short for its load judges nothing that depends on it."""

import numpy as np
import pandas as pd
import pytest

from tailsim import targets as t


def test_verdict_from_interval_against_range():
    assert t.verdict(t.exact(1.5), 1.0, 2.0)[:2] == (True, "yes")
    assert t.verdict(t.exact(2.5), 1.0, 2.0)[:2] == (False, "NO")
    assert t.verdict(t.Estimate(1.9, 1.8, 2.1, "ci"), 1.0, 2.0)[:2] == (None, t.NOT_JUDGED)
    assert "straddles 2" in t.verdict(t.Estimate(1.9, 1.8, 2.1, "ci"), 1.0, 2.0)[2]
    assert t.verdict(t.Estimate(2.4, 2.2, 2.6, "ci"), 1.0, 2.0)[:2] == (False, "NO")
    assert t.verdict(None, 1.0, 2.0)[:2] == (None, "not run")
    # A reason the scale cannot judge wins over an interval inside the range.
    within = t.exact(1.5).unless("window too short")
    assert t.verdict(within, 1.0, 2.0) == (None, t.NOT_JUDGED, "window too short")
    assert t.exact(1.5).unless("") == t.exact(1.5)


def test_a_bracket_is_a_bound_not_a_measurement():
    row = t.target("max load", t.bracket(0.82, 0.9, None, "stable at 0.82, unstable at 0.9"), 0.89, 0.92)
    assert row["measured"] is None and (row["interval_low"], row["interval_high"]) == (0.82, 0.9)
    assert row["verdict"] == t.NOT_JUDGED and row["within"] is None
    assert t.target("max load", t.bracket(0.82, 0.9), 0.58, 0.73)["verdict"] == "NO"


@pytest.mark.parametrize("q", [0.5, 0.99])
def test_quantile_interval_covers_the_true_quantile(q):
    """Coverage of the order-statistic interval over 400 samples of 2 000 exponentials: close to 95 %."""
    rng = np.random.default_rng(7)
    truth = -np.log(1 - q)
    hits = sum((e := t.quantile(rng.exponential(size=2000), q)).low <= truth <= e.high for _ in range(400))
    assert 0.92 <= hits / 400 <= 0.99, hits


def test_a_percentile_beyond_the_sample_is_not_judged():
    e = t.quantile(np.arange(50.0), 0.99)
    assert e.unjudged and "p99 of 50 flows is their maximum" in e.unjudged
    assert t.bootstrap(lambda x: np.quantile(x, 0.99), [np.arange(50.0)], tail=0.99).unjudged
    assert not t.quantile(np.arange(500.0), 0.99).unjudged


def test_bootstrap_interval_covers_the_mean_and_pairing_narrows_a_ratio():
    rng = np.random.default_rng(3)
    hits = 0
    for i in range(100):
        x = rng.exponential(size=300)
        e = t.bootstrap(np.mean, [x], resamples=300, seed=i)
        hits += e.low <= 1.0 <= e.high
    assert 88 <= hits <= 99, hits
    # The same flows under two schemes: the flows' own spread cancels out of a paired ratio.
    base = rng.pareto(1.5, size=500) + 1
    other = base * 1.2 * rng.uniform(0.95, 1.05, size=500)
    paired = t.bootstrap(lambda a, b: a.mean() / b.mean(), [other, base], paired=True)
    unpaired = t.bootstrap(lambda a, b: a.mean() / b.mean(), [other, base])
    assert paired.low <= 1.2 <= paired.high
    assert paired.high - paired.low < (unpaired.high - unpaired.low) / 5, (paired, unpaired)
    # Seeded: the same interval on every call.
    assert t.bootstrap(np.mean, [base]) == t.bootstrap(np.mean, [base])
    with pytest.raises(ValueError, match="paired samples differ"):
        t.bootstrap(lambda a, b: 1.0, [base, base[:10]], paired=True)


def test_rate_interval_is_exact_for_few_events():
    # Zero of n: the upper 97.5 % bound is -ln(0.025)/n (the "rule of three" is its one-sided 95 % cousin).
    e = t.rate(0, 100_000)
    assert e.value == 0 and e.low == 0 and abs(e.high - 3.6889e-5) < 1e-8
    # 3 of 1 000: Clopper–Pearson gives 0.000619–0.00874.
    e = t.rate(3, 1000)
    assert abs(e.low - 0.000619) < 2e-5 and abs(e.high - 0.00874) < 5e-5
    # Symmetric: the complement's interval.
    a, b = t.rate(990, 1000), t.rate(10, 1000)
    assert abs(a.low - (1 - b.high)) < 1e-12 and abs(a.high - (1 - b.low)) < 1e-12
    # Many events: Wilson, around the proportion.
    e = t.rate(5000, 100_000)
    assert e.low < 0.05 < e.high and e.high - e.low < 0.003


def _flows(n, window_us, size, fct_us):
    return pd.DataFrame(
        {
            "start_us": np.linspace(0, window_us, n),
            "size_bytes": np.full(n, size),
            "fct_us": np.full(n, fct_us),
            "finished": np.ones(n, dtype=bool),
        }
    )


def test_steady_needs_arrivals_ten_times_the_byte_weighted_fct():
    assert t.steady(_flows(100, 10_000, 1000, 999)) == ""
    why = t.steady(_flows(100, 10_000, 1000, 1001), "DCTCP at load 0.6")
    assert why.startswith("DCTCP at load 0.6: arrivals lasted 10 ms, 9.99× the byte-weighted mean FCT")
    # Weighted by bytes: one large slow flow among many small fast ones decides.
    f = _flows(100, 10_000, 1000, 10)
    f.loc[50, ["size_bytes", "fct_us"]] = [1_000_000, 5_000]
    assert "byte-weighted" in t.steady(f)
    # An unfinished flow counts as finishing at the run's last completion, not as instantaneous.
    f = _flows(100, 10_000, 1000, 10)
    f.loc[0, ["size_bytes", "finished"]] = [1_000_000, False]
    f.loc[0, "fct_us"] = np.nan
    assert t.steady(f)


def test_markdown_counts_verdicts_and_numbers_reasons_once():
    rows = [
        t.target("a", t.exact(1.0), 0, 2, load=0.3),
        t.target("b", t.exact(3.0), 0, 2, load=0.3),
        t.target("c", t.exact(1.0).unless("too short"), 0, 2, load=0.6),
        t.target("d", t.exact(1.0).unless("too short"), 0, 2, load=0.6),
        t.target("e", None, 0, 2),
    ]
    md = t.markdown(rows, ("load",))
    assert md.startswith("5 targets: 1 yes, 1 NO, 2 not judged at this scale, 1 not run")
    assert md.count("[1]") == 3 and "[2]" not in md and "[1] too short" in md
    assert "| 0.3 | b | 3 | 3 | 0–2 | **NO** |" in md
