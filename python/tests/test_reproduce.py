"""The pFabric reproduction at CI size: every scheme runs on the same arrivals, figures and target checks are
written, and the ordering the paper reports holds."""

import json

import pandas as pd
import pytest

import tailsim
from tailsim import reproduce, reproduce_homa


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    out = tmp_path_factory.mktemp("reproduce")
    return out, reproduce.pfabric(out, scale="small", workers=2, progress=False)


def test_main_part_orders_schemes_as_the_paper(small):
    out, s = small
    s = s[s["part"] == "main"]
    assert set(s["scheme"]) == {"pFabric", "TCP-DropTail", "DCTCP", "Ideal"}
    sm = s[(s["bucket"] == "(0,100KB]") & (s["load"] == 0.6)].set_index("scheme")
    p99 = sm["slowdown_p99"]
    assert p99["Ideal"] <= p99["pFabric"] < p99["DCTCP"] < p99["TCP-DropTail"], p99.to_dict()
    # Every scheme saw the same flows (the Ideal included): same count per point.
    counts = s[s["bucket"] == "all"].groupby(["load", "scheme"])["flows"].first().unstack()
    assert (counts.nunique(axis=1) == 1).all()
    for f in ("websearch-overall.png", "websearch-breakdown.png", "targets.md", "summary.parquet"):
        assert (out / f).stat().st_size > 0
    checks = json.loads((out / "targets.json").read_text())
    main_targets = {t[-1] for t in reproduce.PFABRIC_TARGETS}
    assert main_targets <= {c["target"] for c in checks}
    # At CI size (400 flows) the arrivals last about as long as the largest flows take: nothing that depends
    # on the load is judged, every target says so and why, and its value and interval are still reported.
    main = [c for c in checks if c["target"] in main_targets]
    assert all(c["verdict"] == "not judged at this scale" and c["within"] is None for c in main), main
    assert all("byte-weighted mean FCT" in c["why"] for c in main)
    assert all(c["interval_low"] <= c["measured"] <= c["interval_high"] and c["measured"] > 0 for c in main)
    # The ratio is the two schemes' statistic over the same flows: the summary's own numbers give it too.
    sm = s[(s["bucket"] == "(0,100KB]")].groupby(["scheme", "load"])["slowdown_mean"].first()
    ratio = next(c for c in main if c["target"].startswith("small flows: DCTCP mean") and c["load"] == 0.6)
    assert abs(ratio["measured"] - sm[("DCTCP", 0.6)] / sm[("pFabric", 0.6)]) < 2e-3, ratio
    md = (out / "targets.md").read_text()
    assert md.startswith(f"{len(checks)} targets: ") and "[1] " in md


def test_deadline_part_edf_meets_the_most_deadlines(small):
    out, s = small
    d = s[(s["part"] == "deadlines") & (s["bucket"] == "all")]
    assert set(d["scheme"]) == {"pFabric-EDF", "pFabric", "TCP-DropTail", "DCTCP"}
    at = d.groupby(["scheme", "deadline_mean_us"])["application_throughput"].first().unstack("scheme")
    assert list(at.index) == [100.0, 1000.0]
    # ~240 deadline flows per point: EDF within noise of pFabric or better, both far above TCP.
    assert (at["pFabric-EDF"] >= at["pFabric"] - 0.02).all(), at
    assert (at["pFabric"] > at["TCP-DropTail"]).all(), at
    assert (at["pFabric-EDF"] > 0.9).all(), at
    assert (d["deadline_flows"] > 100).all()
    for f in ("websearch-deadlines.png", "websearch-deadlines-other.png"):
        assert (out / f).stat().st_size > 0
    checks = json.loads((out / "targets.json").read_text())
    assert {t[-1] for t in reproduce.PFABRIC_DEADLINE_TARGETS} <= {c["target"] for c in checks}


def test_queue_part_runs_every_variant_on_the_same_flows(small):
    out, s = small
    q = s[(s["part"] == "queues") & (s["bucket"] == "all")]
    assert set(q["scheme"]) == set(reproduce.PFABRIC_QUEUE_SCHEMES) | {"pFabric", "DCTCP"}
    assert q["flows"].nunique() == 1 and (q["unfinished"] == 0).all()
    m = q.set_index("scheme")["slowdown_mean"]
    # Size classes help DCTCP; none of them beats pFabric.
    assert m["pFabric"] < m["8 queues"] < m["DCTCP"], m.to_dict()
    for f in ("websearch-queues.png", "websearch-queues-thresholds.png"):
        assert (out / f).stat().st_size > 0


def test_thresholds_match_the_papers_two_queue_optimum():
    t, fct = tailsim.thresholds("websearch", 0.1, 2)
    # Paper Fig. 22: ~880 KB at 10 % load with 1500 B packets; our table counts 1460 B packets (≈ 857 KB).
    assert len(t) == 1 and abs(t[0] / 857e3 - 1) < 0.03, t
    assert abs(fct - 1.105) < 0.02
    eq, eq_fct = tailsim.thresholds("websearch", 0.8, 4, rule="equal-count")
    opt, opt_fct = tailsim.thresholds("websearch", 0.8, 4)
    assert eq == [16 * 1460, 49 * 1460, 1000 * 1460] and opt_fct < eq_fct
    with pytest.raises(tailsim.ConfigError, match="load"):
        tailsim.thresholds("websearch", 1.5, 2)
    with pytest.raises(tailsim.ConfigError, match="rule"):
        tailsim.thresholds("websearch", 0.5, 2, rule="best")


def test_builders_cover_pfabric_edf_and_classes(tmp_path):
    exp = tailsim.Experiment(
        topology=tailsim.Preset("pfabric-144"),
        switch=tailsim.Switch(queue="pfabric", buffer="36KB", pfabric_queues=2),
        transport=tailsim.PFabric(priority="deadline"),
        workloads=[tailsim.Poisson(load=0.5, cdf="websearch", flows=200, deadline_mean="500us")],
        output=tailsim.Output(dir=str(tmp_path / "edf")),
    )
    r = tailsim.run(exp, progress=False)
    assert r.deadlines["flows"] > 50 and 0.9 < r.deadlines["application_throughput"] <= 1.0
    assert r.flows["deadline_us"].notna().sum() == r.deadlines["flows"]
    exp = tailsim.Experiment(
        topology=tailsim.Preset("pfabric-144"),
        switch=tailsim.Switch(buffer="225KB", class_reserve="15KB"),
        transport=tailsim.Tcp(class_thresholds="optimal", classes=4),
        workloads=[tailsim.Poisson(load=0.5, cdf="websearch", flows=200)],
        output=tailsim.Output(dir=str(tmp_path / "pq")),
    )
    r = tailsim.run(exp, progress=False)
    assert r.deadlines is None and r.summary["flows_finished"] == 200


def test_small_homa_reproduction(tmp_path):
    m = reproduce_homa.homa(tmp_path, scale="small", workers=2, progress=False)
    assert set(m["workload"]) == {"homa-thesis-w1", "homa-thesis-w4"}
    assert set(m["scheme"]) == {"Homa", "pFabric", "pHost", "PIAS", "NDP"}
    # Each at the load the thesis ran it at: pHost and NDP could not sustain 80 %.
    assert m.groupby("scheme")["load"].first().to_dict() == {
        "Homa": 0.8,
        "pFabric": 0.8,
        "pHost": 0.6,
        "PIAS": 0.8,
        "NDP": 0.7,
    }
    assert (m["unfinished"] == 0).all() and (m["messages"] > 10000).all()
    homa, pfab = m[m["scheme"] == "Homa"], m[m["scheme"] == "pFabric"]
    # The thesis's headline: the shortest half of the messages see a p99 slowdown of at most 2.2 at 80 % load.
    assert (homa["p99_slowdown_short_half"] < 2.5).all(), m
    # Same arrivals for both transports; Homa loses nothing (unlimited buffers), pFabric drops by design.
    assert list(homa["messages"]) == list(pfab["messages"])
    assert (homa["dropped"] == 0).all() and (pfab["dropped"] > 0).all()
    assert ((homa["wasted_bandwidth"] >= 0) & (homa["wasted_bandwidth"] < 0.5)).all(), m
    # The unloaded one-way time of a message ≤ 100 B on homa-144, median over pairs (thesis: 2.1–2.3 µs across
    # racks; 1.9 µs within a rack).
    assert ((m["unloaded_latency_100B_us"] > 1.8) & (m["unloaded_latency_100B_us"] < 2.6)).all(), m
    for wl in ("homa-thesis-w1", "homa-thesis-w4"):
        assert (tmp_path / f"{wl}.png").stat().st_size > 0
    checks = json.loads((tmp_path / "targets.json").read_text())
    # Per workload (W1, W4): short-message p99, 100 B latency, Homa vs pFabric, pHost vs Homa, PIAS vs Homa;
    # W6 with k = 1 and k = 7; the maximum load of Homa and pHost on W1.
    # Table 6.1: Homa's queue mean and max for 3 port classes per workload.
    table = [c for c in checks if c["target"].startswith("Table 6.1")]
    assert len(table) == 2 * 6 and all(c["measured"] >= 0 for c in table), table
    assert len(checks) == 2 * 5 + 2 + 2 + len(table), [c["target"] for c in checks]
    assert all(c["verdict"] in ("yes", "NO", "not judged at this scale") for c in checks)
    # W6's windows (4 ms) are shorter than its messages take: neither overcommitment target is judged, and with
    # no crossing of 1 − load within the loads run, none is reported as measured — only the bound above them.
    for c in (c for c in checks if c["target"].startswith("W6")):
        assert c["verdict"] == "not judged at this scale" and c["measured"] is None, c
        assert c["interval_low"] == max(reproduce_homa.HOMA_SCALES["small"]["overcommit_loads"]), c
    # The maximum load is a bracket between probes, never a probe's load reported as the measurement.
    for c in (c for c in checks if "maximum sustainable load" in c["target"]):
        assert c["measured"] is None and c["interval_low"] < c["interval_high"], c
    oc = pd.read_parquet(tmp_path / "overcommit.parquet")
    assert set(oc["k"]) == {1, 7} and (oc["wasted_bandwidth"] > 0).all()
    # Monogamous grants waste more of the receivers' bandwidth than overcommitment, at every load.
    w = oc.pivot(index="load", columns="k", values="wasted_bandwidth")
    assert (w[1] > w[7]).all(), w
    ml = pd.read_parquet(tmp_path / "maxload.parquet")
    assert set(ml["scheme"]) == {"Homa", "pHost"} and ml["max_load"].notna().all()
    # pHost cannot carry 98 %: that probe is unstable and what it delivered is reported as its saturation
    # throughput, below what was offered; Homa is stable there, so it has none.
    ph, ho = (ml[ml["scheme"] == s].iloc[0] for s in ("pHost", "Homa"))
    assert ph["saturation_offered"] == 0.98 and 0.3 < ph["saturation"] < 0.98, ml
    assert ho["max_load"] < 0.98 or pd.isna(ho["saturation"]), ml
    for f in ("overcommit.png", "maxload.png"):
        assert (tmp_path / f).stat().st_size > 0
