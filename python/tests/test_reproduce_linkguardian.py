"""The LinkGuardian reproduction at CI size (docs/linkguardian.md): about 10 s. It checks what holds at any
scale: nothing lost at the thesis's loss rates, Eq. 5.1's p^(copies+1) at inflated ones, LG's ≈ 92 % of a
100G link, the ablation's tails against the lossless one, the gains at the 99.9th percentile, CUBIC and DCTCP
restored at 25G, and the misses docs/linkguardian.md explains (lossless hosts without a tail, CUBIC at a
30 µs RTT, no overflow without backpressure at 25G, a one-pass resend delay)."""

import json

import numpy as np
import pytest

from tailsim import reproduce_linkguardian as rl


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    out = tmp_path_factory.mktemp("reproduce-linkguardian")
    return out, rl.linkguardian(out, scale="small", workers=2, progress=False)


def _targets(out):
    return {c["target"]: c for c in json.loads((out / "targets.json").read_text())}


def _only(t, prefix):
    rows = [c for k, c in t.items() if k.startswith(prefix)]
    assert len(rows) == 1, (prefix, rows)
    return rows[0]


def test_zeros_and_orderings_hold(small):
    out, _ = small
    t = _targets(out)
    exact = [c for k, c in t.items() if k.startswith(("zero:", "L6 zero", "L8 at 100G")) or "ordering" in k]
    assert len(exact) >= 23
    assert all(c["within"] for c in exact), [c for c in exact if not c["within"]]


def test_effective_loss_and_speed(small):
    out, res = small
    t = _targets(out)
    stated = [c for k, c in t.items() if k.startswith(("L1 25G", "L1 100G"))]
    assert len(stated) == 4 and all(c["measured"] == 0 for c in stated), stated
    # None lost in 2e5 frames bounds the effective loss near 2e-5, not 1e-8: not judged at this scale.
    for c in stated:
        assert c["within"] is None and c["verdict"] == "not judged at this scale", c
        assert c["interval_low"] == 0 and 1e-5 < c["interval_high"] < 3e-5, c
    nb = [c for k, c in t.items() if k.startswith("L1 inflated: NB")]
    assert len(nb) == 2 and all(0.8 <= c["measured"] <= 1.2 for c in nb), nb
    assert _only(t, "L2 100G")["within"]
    # Ordered mode too, since dummies go during a pause (2.4x at p = 0.05 before: docs/linkguardian.md).
    lg = [c for k, c in t.items() if k.startswith("L1 inflated: LG")]
    assert len(lg) == 2 and all(0.7 <= c["measured"] <= 1.4 for c in lg), lg
    s = res["stress"]
    # Tens of frames lost per inflated point at least: the ratios above are not noise around zero (24 to 160
    # expected; LG at p = 0.05 with 2 copies numbers fewer frames, so 1.25e-4 of them is about 24, and 18 came).
    assert (s[s["kind"] == "inflated"]["lost"] > 10).all()


def test_tails_and_gains_match_the_thesis(small):
    out, res = small
    t = _targets(out)
    for prefix in ("L3 loss:", "L3 ReTx", "L3 LG", "L4 "):
        rows = [c for k, c in t.items() if k.startswith(prefix)]
        # Judged ones hold; a p99.9 gain over 20,000 one-packet flows at 1e-3 sits on the hits' edge and its
        # interval reaches below the range: not judged at this scale.
        assert rows and all(c["within"] is not False for c in rows), [c for c in rows if c["within"] is False]
        assert any(c["within"] for c in rows), rows
        for c in rows:
            assert c["interval_low"] <= c["measured"] <= c["interval_high"], c
    gain = _only(t, "L4 DCTCP 143 B: p99.9 gain of LG ")
    assert gain["verdict"] == "not judged at this scale" and gain["basis"].startswith("95% paired bootstrap"), gain
    sh = res["short"]
    assert (sh["unfinished"] == 0).all()
    assert sh["fct_us"].map(len).nunique() == 1, "every scheme ran the same flows"


def test_the_explained_misses(small):
    out, res = small
    t = _targets(out)
    # Without loss every message takes exactly its time, so a hit's timeout over it is ×(1 + RTO / 14.5 µs).
    # The hits themselves: about 20 of the 20,000 flows at 1e-3, so the p99.9 (the 20th slowest) is a hit's
    # time or the lossless one by chance (17 hits, ×1, once the corrupting port's random stream changed).
    m = res["motivation"]
    for kind, low, high in (("dctcp", 65, 75), ("rdma", 330, 360)):
        fct = np.asarray(m[(m["transport"] == kind) & (m["scheme"] == "loss")].iloc[0]["fct_us"], dtype=float)
        base = np.median(fct)
        hits = fct[fct > 5 * base] / base
        assert 5 <= len(hits) <= 40 and ((low < hits) & (hits < high)).all(), (kind, base, hits)
    # CUBIC at 10G and 1e-3 keeps the link at a 30 µs RTT; at 150 µs it falls to the thesis's share.
    assert _only(t, "L7 10G CUBIC, none, 0.001")["measured"] > 0.95
    cu = res["cubic"].set_index(["scheme", "loss", "rtt_us"])
    assert 0.267 <= cu.loc[("none", 0.001, 150.0), "share_of_lossless"] <= 0.467
    # At 25G nothing accumulates in the receiver's loop, with or without backpressure.
    assert [c["measured"] for k, c in t.items() if k.startswith("L8 25G") and "overflows" in k] == [0, 0]
    # A resend comes on the copy's first return: one pass (1 µs) and a little, not the thesis's 2-5.25 µs.
    cal = [c["measured"] for k, c in t.items() if k.startswith("calibration")]
    assert len(cal) == 4 and all(1.0 < m < 1.5 for m in cal), cal
    for f in (
        "summary.parquet",
        "targets.md",
        "fig5_10_resend_delay.png",
        "fig5_12_stress.png",
        "fig5_15_16_short.png",
        "fig5_4_motivation.png",
        "table5_3_cubic.png",
        "fig5_13_transport.png",
    ):
        assert (out / f).exists(), f


def test_an_exact_zero_flips_when_broken(small):
    _, res = small
    st = res["stress"].copy()

    def drained(d):
        rows = rl.check_targets({"stress": d})
        return next(c for c in rows if c["target"] == "zero: 25G, 0.001, LG: packets still in flight after the drain")

    assert drained(st)["verdict"] == "yes" and drained(st)["basis"].startswith("exact")
    st.loc[(st["kind"] == "loss") & (st["gbps"] == 25) & (st["mode"] == "LG"), "in_flight"] = 3
    assert drained(st)["verdict"] == "NO"


def test_one_flow_with_few_losses_is_not_judged(small):
    out, _ = small
    t = _targets(out)
    low = _only(t, "L7 10G CUBIC, LG, 1e-05")
    assert low["verdict"] == "not judged at this scale" and "corrupted frames" in low["why"], low
    assert _only(t, "L7 10G CUBIC, LG, 0.001")["verdict"] == "yes"
