"""The open-loop stability judgement and the maximum-load search, on synthetic data where the answer is known."""

import numpy as np
import pandas as pd
import pytest

from tailsim import stability


class _Run:
    def __init__(self, flows, until_s, receivers=None):
        self.flows = flows
        self.summary = {"simulated_seconds": until_s, "receivers": receivers}

    def flow_columns(self, columns):
        return self.flows[list(columns)]


def _flows(n, until_s, service_s, size=10_000):
    """n equal messages arriving evenly over (0, until_s), each finishing service_s after it starts (a
    stable system), or — with service_s growing with arrival time — an unstable one."""
    start = np.linspace(0, until_s, n, endpoint=False)
    end = start + service_s(start)
    fin = end <= until_s
    return pd.DataFrame(
        {
            "start_ps": (start * 1e12).astype(np.int64),
            "end_ps": np.where(fin, end * 1e12, -1).astype(np.int64),
            "finished": fin,
            "size_bytes": size,
        }
    )


def test_a_bounded_backlog_is_stable_and_a_growing_one_is_not():
    T = 0.01
    stable = stability.judge(_Run(_flows(5000, T, lambda s: np.full_like(s, 50e-6)), T))
    assert stable["stable"] and abs(stable["growth"]) < 0.01, stable
    # Each message waits in proportion to its arrival time: the system delivers only half of what arrives.
    grow = stability.judge(_Run(_flows(5000, T, lambda s: s + 50e-6), T))
    assert not grow["stable"] and 0.4 < grow["growth"] < 0.6, grow
    b = stability.backlog(_flows(100, 1.0, lambda s: np.full_like(s, 0.5)), 1.0, samples=4)
    # Arrivals at 0, 0.01, …, 0.99, each done 0.5 later. At t = 0.25: 26 arrived, none done; 0.5: 51 arrived,
    # 1 done; 0.75: 76 and 26; 1.0: 100 and 51.
    assert list(b["backlog_bytes"] / 10_000) == [26, 50, 50, 49]


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_max_load_brackets_a_known_capacity(monkeypatch, tmp_path, workers):
    capacity = 0.834
    seen = []

    def fake(base, loads, out, **kw):
        seen.extend(loads)
        return pd.DataFrame({"load": loads, "stable": [x <= capacity for x in loads]})

    monkeypatch.setattr(stability, "load_points", fake)
    m = stability.max_load({"workload": [{}]}, tmp_path, lo=0.5, hi=0.98, resolution=0.01, workers=workers)
    lo, hi = m["bracket"]
    assert lo <= capacity < hi and hi - lo <= 0.01 + 1e-9, m["bracket"]
    assert m["max_load"] == lo and len(m["probes"]) == len(seen)
    # Everything stable up to hi: the answer is hi itself.
    monkeypatch.setattr(
        stability, "load_points", lambda b, loads, o, **kw: pd.DataFrame({"load": loads, "stable": True})
    )
    assert stability.max_load({"workload": [{}]}, tmp_path, lo=0.5, hi=0.98, workers=workers)["max_load"] == 0.98
    # Unstable already at lo.
    monkeypatch.setattr(
        stability, "load_points", lambda b, loads, o, **kw: pd.DataFrame({"load": loads, "stable": False})
    )
    assert stability.max_load({"workload": [{}]}, tmp_path, workers=workers)["max_load"] is None


def test_wasted_bandwidth_meets_the_surplus_line():
    d = pd.DataFrame({"load": [0.4, 0.5, 0.6, 0.7], "wasted_bandwidth": [0.1, 0.2, 0.35, 0.5]})
    # 1 − load at 0.6 is 0.4 (gap −0.05), at 0.7 is 0.3 (gap +0.2): crossing at 0.6 + 0.1 × 0.05 / 0.25 = 0.62.
    assert stability.wasted_crossing(d) == pytest.approx(0.62)
    assert stability.wasted_crossing(d.assign(wasted_bandwidth=0.0)) is None


def test_window_config_replaces_the_flow_count_with_an_arrival_window():
    base = {"workload": [{"kind": "poisson", "flows": 10, "load": 0.5}], "stop": {"max_events": 5}}
    c = stability._window_config(base, "7ms")
    assert c["workload"][0] == {"kind": "poisson", "load": 0.5, "until": "7ms"}
    assert c["stop"] == {"max_events": 5, "time": "7ms"} and base["workload"][0]["flows"] == 10
