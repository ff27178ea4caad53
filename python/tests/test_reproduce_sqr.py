"""The SQR reproduction at CI size (docs/sqr.md): 300 web-search flows per scheme, three route failure times, a
20 MB long flow; about 5 s. It checks what holds at any scale: SQR loses nothing (no timeout, no retransmission
at any failure time, copies resent in order), SB' alone loses packets at every failure time and has flows
waiting out the 1 s SYN timeout, the cut in the hit flows' tail, Eq. 4.1's cache bounds, and the misses the
docs explain (S3 above +200 µs, S4's recovery times, the ring's slow in-order release of a long flow's copies)."""

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
        # Beside the background, busy caching ports hold copies longer than δ (docs/sqr.md): a miss.
        if k.startswith("S6") and "tpch" not in k:
            assert c["within"], c
    # S3: what arrives during a failure waits only until the route is back, so hit flows are less than
    # 760 µs late, but more than the thesis's +200 µs (docs/sqr.md).
    s3 = next(c for k, c in t.items() if k.startswith("S3"))
    assert s3["within"] is not True and 250 <= s3["measured"] < 700, s3
    lf = res["longflow"].set_index("scheme")
    assert lf.loc["SB'+SQR ideal", "disruption_ms"] < 1.2
    # The ring with turns by packet: about 0.6 ms more than the ideal cache (docs/sqr.md; 24 ms with turns by
    # time, whose many passes scrambled the copies' order).
    assert 0.8 < lf.loc["SB'+SQR", "disruption_ms"] < 2.0, lf
    # With δ = 30 µs the race of Alg. 2 loses the packet on the wire (then an RTO); one MTU more closes it.
    assert lf.loc["SB'+SQR δ+MTU ideal", "timeouts"] == 0, lf
    assert lf.loc["SB'+SQR δ+MTU ideal", "disruption_ms"] < 1.2, lf
    for f in ("summary.parquet", "targets.md", "fig4_11_fct.png", "fig4_9_loss.png", "fig4_8_recovery.png"):
        assert (out / f).exists(), f


def test_intervals_contain_the_measured_values(small):
    out, res = small
    for c in _targets(out).values():
        if c["measured"] is not None and c["interval_low"] is not None:
            assert c["interval_low"] <= c["measured"] <= c["interval_high"], c
    t = _targets(out)
    s4 = next(c for k, c in t.items() if k.startswith("S4"))
    # A share of a dozen flows, from the receivers' waits (rx_gaps): a binomial interval.
    assert s4["basis"].startswith("95% CI") and s4["interval_low"] < 0.8, s4
    f = res["fct"].set_index("scheme")
    gaps = f.loc["SB'+SQR", "hit_gap_us"]
    assert len(gaps) == f.loc["SB'+SQR", "hit"] and min(gaps) > 100, gaps


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


def test_fig_4_14_one_pass_per_own_packet_leaves_the_line_rate_traffic_its_share(small):
    out, res = small
    eg = res["egress"].set_index(["turns", "sqr_gbps"])
    # Alone, the background flow fills its port (9.95 Gb/s of frames at 10G, with the preamble and gap).
    assert eg.loc[("packet", 0.0), "background_gbps"] > 9.8
    # Turns by packet: one 7.5 % pass per 1.23 µs packet, so 1/1.075 of the port: about 690 Mb/s taken,
    # the thesis's ≈ 750 (Fig. 4.14), whatever the SQR rate once copies are always waiting.
    for g in (2.5, 10.0):
        assert 600 < eg.loc[("packet", g), "egress_cost_mbps"] < 800, eg
        assert eg.loc[("packet", g), "sqr_traffic_gbps"] > 0.95 * g
    # Turns by time: 92 ns passes come thirteen to a packet, and the ring takes half the port.
    assert eg.loc[("time", 10.0), "egress_cost_mbps"] > 4000, eg
    t = _targets(out)
    cal = {k: c for k, c in t.items() if k.startswith("Fig. 4.14")}
    assert [c["within"] for k, c in sorted(cal.items())] == [True, False], cal
    assert (out / "fig4_14_egress.png").exists()
