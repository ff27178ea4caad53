"""The SQR reproduction at CI size (docs/sqr.md): 300 web-search flows per scheme, three route failure times, a
20 MB long flow; about 5 s. It checks what holds at any scale: SQR loses nothing (no timeout, no retransmission
at any failure time, copies resent in order), SB' alone loses packets at every failure time and has flows
waiting out the 1 s SYN timeout, the cut in the hit flows' tail, Eq. 4.1's cache bounds, and the misses the
docs explain (S3's +760 µs from δ, the ring's slow in-order release of a long flow's copies)."""

import json

import pytest

from tailsim import reproduce_sqr as rs


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    out = tmp_path_factory.mktemp("reproduce-sqr")
    return out, rs.sqr(out, scale="small", workers=2, progress=False)


def _targets(out):
    return {c["target"]: c for c in json.loads((out / "targets.json").read_text())}


def test_zeros_and_orderings_hold(small):
    out, _ = small
    t = _targets(out)
    exact = [c for k, c in t.items() if k.startswith(("zero:", "S1"))]
    assert len(exact) >= 6
    assert all(c["within"] for c in exact), [c for c in exact if not c["within"]]


def test_sqr_cuts_the_tail_of_failure_hit_flows(small):
    out, res = small
    t = _targets(out)
    sb = next(c for k, c in t.items() if k.startswith("S2 websearch: SB' hit-flow p99"))
    # A p99 over a dozen failure-hit flows is their maximum: measured, shown, not judged at this scale.
    assert sb["measured"] > 2.5 and sb["within"] is None and sb["verdict"] == "not judged at this scale", sb
    assert "p99 of" in sb["why"] and "needs ≥ 100" in sb["why"], sb
    assert next(c for k, c in t.items() if "near 1 s" in k)["measured"] >= 1
    f = res["fct"].set_index("scheme")
    # Every scheme ran the same flows, and every flow finished.
    assert f["flows"].nunique() == 1 and (f["unfinished"] == 0).all()
    assert f.loc["SB'+SQR", "hit_max_us"] < 2_000 and f.loc["SB'", "hit_max_us"] > 900_000


def test_cache_bounds_and_the_explained_misses(small):
    out, res = small
    t = _targets(out)
    for k, c in t.items():
        if k.startswith("S6"):
            assert c["within"], c
    # S3: the hit flows wait out δ = 760 µs (docs/sqr.md), not the thesis's +200 µs.
    s3 = next(c for k, c in t.items() if k.startswith("S3"))
    assert s3["within"] is False and 700 <= s3["measured"] <= 800, s3
    lf = res["longflow"].set_index("scheme")
    assert lf.loc["SB'+SQR ideal", "disruption_ms"] < 1.2
    assert lf.loc["SB'+SQR", "disruption_ms"] > 5, "the ring's in-order release is slow (docs/sqr.md)"
    # With δ = 30 µs the race of Alg. 2 loses the packet on the wire (then an RTO); one MTU more closes it.
    assert lf.loc["SB'+SQR δ+MTU ideal", "timeouts"] == 0, lf
    assert lf.loc["SB'+SQR δ+MTU ideal", "disruption_ms"] < 1.2, lf
    for f in ("summary.parquet", "targets.md", "fig4_11_fct.png", "fig4_9_loss.png"):
        assert (out / f).exists(), f


def test_intervals_contain_the_measured_values(small):
    out, _ = small
    for c in _targets(out).values():
        if c["measured"] is not None and c["interval_low"] is not None:
            assert c["interval_low"] <= c["measured"] <= c["interval_high"], c
    t = _targets(out)
    s4 = next(c for k, c in t.items() if k.startswith("S4"))
    # A share of a dozen flows: its binomial interval reaches below the accepted 0.8.
    assert s4["basis"].startswith("95% CI") and s4["interval_low"] < 0.8 and s4["within"] is None, s4


def test_a_timeout_with_sqr_flips_the_zero(small):
    _, res = small

    def zero(r):
        rows = rs.check_targets(r)
        return next(c for c in rows if c["target"].startswith("S1 zero: SB'+SQR timeouts"))

    assert zero(res)["verdict"] == "yes" and zero(res)["basis"].startswith("exact")
    lo = res["loss"].copy()
    lo.loc[lo["scheme"] == "SB'+SQR", "timeouts"] = [0] * ((lo["scheme"] == "SB'+SQR").sum() - 1) + [1]
    assert zero({**res, "loss": lo})["verdict"] == "NO"


def test_a_hit_flow_p99_is_judged_with_enough_flows():
    # 400 hit flows, SB' near 1 s and SB'+SQR near 1 ms: three orders of magnitude, judged.
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(1)
    base = rng.uniform(100, 300, 400)
    rows = [
        {"cdf": "w", "scheme": s, "hit_fct_us": list(base + add), "hit_base_us": list(base)}
        for s, add in (("SB'", 1e6), ("SB'+SQR", 800.0))
    ]
    est = rs._orders(pd.DataFrame(rows), "SB'", "SB'+SQR")
    assert est.unjudged == "" and est.low <= est.value <= est.high and 2.8 < est.low
