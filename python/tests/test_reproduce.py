"""The pFabric reproduction at CI size: every scheme runs on the same arrivals, figures and target checks are
written, and the ordering the paper reports holds."""

import json

import tailsim
from tailsim import reproduce


def test_small_pfabric_reproduction(tmp_path):
    s = reproduce.pfabric(tmp_path, scale="small", workers=2, progress=False)
    assert set(s["scheme"]) == {"pFabric", "TCP-DropTail", "DCTCP", "Ideal"}
    small = s[(s["bucket"] == "(0,100KB]") & (s["load"] == 0.6)].set_index("scheme")
    p99 = small["slowdown_p99"]
    assert p99["Ideal"] <= p99["pFabric"] < p99["DCTCP"] < p99["TCP-DropTail"], p99.to_dict()
    # Every scheme saw the same flows (the Ideal included): same count per point.
    counts = s[s["bucket"] == "all"].groupby(["load", "scheme"])["flows"].first().unstack()
    assert (counts.nunique(axis=1) == 1).all()
    for f in ("websearch-overall.png", "websearch-breakdown.png", "targets.md", "summary.parquet"):
        assert (tmp_path / f).stat().st_size > 0
    checks = json.loads((tmp_path / "targets.json").read_text())
    assert {c["target"] for c in checks} == {t[-1] for t in reproduce.PFABRIC_TARGETS}
    assert all(isinstance(c["within"], bool) and c["ratio"] > 0 for c in checks)
