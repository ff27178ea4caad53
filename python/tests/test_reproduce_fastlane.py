"""The FastLane reproduction at CI size (docs/fastlane.md): the utilization part at 60 % on fastlane-128, TCP
with CoDel against FastLane with flow hashing and with packet scatter, on the same arrivals. It checks what the
small scale can: FastLane below TCP at p99.9 for every short size, the notification caps held, the figure and
target files written."""

import json

import pandas as pd
import pytest

import tailsim
from tailsim import reproduce_fastlane


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    out = tmp_path_factory.mktemp("reproduce-fastlane")
    return out, reproduce_fastlane.fastlane(out, scale="small", workers=2, progress=False, parts=["util"])


def test_fastlane_beats_tcp_at_the_tail_within_its_caps(small):
    _, res = small
    u = res["util"].set_index("scheme")
    assert set(u.index) == {"TCP", "FL-FH", "FL-PS"}
    for s in reproduce_fastlane.SHORT_BYTES:
        for fl in ("FL-FH", "FL-PS"):
            assert u.loc[fl, f"p999_{s}"] < u.loc["TCP", f"p999_{s}"], (fl, s)
        # Every scheme saw the same requests (responses are counted by their start, which the transport
        # moves by a request's delivery: a few at the warm-up's edge differ).
        n = u[f"n_{s}"]
        assert n.max() - n.min() <= 0.01 * n.max() and n.min() > 300, n
    fl = u.loc[["FL-FH", "FL-PS"]]
    assert (fl["notices"] > 0).all()
    assert (fl["notice_queue_max_b"] <= 3276).all()
    assert (fl["notice_bw_max"] <= 0.01).all()
    assert (u.loc["TCP", "notices"] == 0) and u.loc["TCP", "timeout_share"] > u.loc["FL-FH", "timeout_share"]


def test_targets_and_figures_are_written(small):
    out, _ = small
    checks = json.loads((out / "targets.json").read_text())
    by = {c["target"].split(" ")[0] for c in checks}
    assert {"F1", "F2", "F8", "ordering:"} <= by
    order = next(c for c in checks if c["target"].startswith("ordering:"))
    assert order["within"] is True, order
    assert all(c["within"] for c in checks if c["target"].startswith("F8")), checks
    for f in ("fig6_5_utilization.png", "targets.md", "summary.parquet"):
        assert (out / f).stat().st_size > 0
    assert set(pd.read_parquet(out / "summary.parquet")["part"]) == {"util"}


def test_rates_put_the_stated_load_on_the_core():
    short, long = reproduce_fastlane.rates(0.6, 0.5)
    # 128 clients × 96/127 of their responses cross 32 × 10 Gbps of core links.
    per_client = 0.6 * 32 * 10e9 / 8 / (128 * 96 / 127)
    assert short * 96_000 == pytest.approx(per_client / 2)
    assert long * 1e6 == pytest.approx(per_client / 2)


def test_every_scheme_and_fabric_gives_a_valid_experiment():
    # The full scale's configurations too, which CI does not run: each must load.
    for scheme in reproduce_fastlane.SCHEMES:
        tailsim.check(reproduce_fastlane.config(scheme, 0.2, 0.1, 1))
    for scheme in ("TCP", "FL-FH"):
        tailsim.check(reproduce_fastlane.config(scheme, 0.8, 0.1, 1, fabric="fastlane-16"))
    for scale in (0.25, 2.0):
        tailsim.check(reproduce_fastlane.config("FL-FH", 0.6, 0.5, 1, extra={"fastlane": {"cap_scale": scale}}))


def test_unknown_parts_are_refused():
    with pytest.raises(ValueError, match="unknown parts"):
        reproduce_fastlane.fastlane("/nonexistent", parts=["nope"])
