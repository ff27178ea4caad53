import matplotlib

matplotlib.use("Agg")

import pandas as pd
import pytest

import tailsim
from tailsim import plots

from conftest import small_dict


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    d = tmp_path_factory.mktemp("plots")
    out = {}
    for kind in ("tcp", "dctcp"):
        cfg = small_dict(300, kind=kind)
        cfg["output"] = {"queue_sample": "50us"}
        out[kind] = tailsim.run(cfg, d / kind, progress=False)
    return out


def test_slowdown_vs_size(results, tmp_path):
    fig = plots.slowdown_vs_size(results, bins=10, path=tmp_path / "s.png")
    ax = fig.axes[0]
    labels = [line.get_label() for line in ax.get_lines()]
    assert labels == ["tcp p99", "tcp p50", "dctcp p99", "dctcp p50"]
    x, y = ax.get_lines()[0].get_data()
    assert len(x) == 10 and 0 < x[0] < x[-1] < 1
    curve = plots.size_percentile_curve(results["tcp"].flows, 10)
    assert list(y) == list(curve["p99"])
    assert (curve["p99"] >= curve["p50"]).all()
    assert ax.get_yscale() == "log"
    assert [t.get_text() for t in ax.get_xticklabels()][0].endswith("KB")
    assert (tmp_path / "s.png").stat().st_size > 1000


def test_fct_cdf(results, tmp_path):
    fig = plots.fct_cdf(results, path=tmp_path / "c.pdf")
    ax = fig.axes[0]
    assert len(ax.get_lines()) == 2
    x, y = ax.get_lines()[1].get_data()
    assert y[-1] == 1.0 and len(x) == 300
    assert ax.get_xscale() == "log"
    assert (tmp_path / "c.pdf").exists()


def test_queue_occupancy(results):
    fig = plots.queue_occupancy(results["dctcp"], top=3)
    ax = fig.axes[0]
    assert len(ax.get_lines()) == 3
    assert all("→" in line.get_label() for line in ax.get_lines())
    assert ax.get_ylabel() == "queue (KB)"


def test_queue_occupancy_needs_samples(tmp_path):
    r = tailsim.run(small_dict(20), tmp_path / "n", progress=False)
    with pytest.raises(ValueError, match="queue_sample"):
        plots.queue_occupancy(r)


def test_normalized_fct_vs_load():
    rows = []
    for kind, base in (("tcp", 2.0), ("dctcp", 1.5)):
        for load in (0.2, 0.4, 0.6):
            for bucket in ("(0,100KB]", "(10MB,inf)", "all"):
                rows.append(
                    {
                        "transport.kind": kind,
                        "workload[0].load": load,
                        "bucket": bucket,
                        "slowdown_mean": base * (1 + load),
                        "slowdown_p99": 3 * base * (1 + load),
                    }
                )
    fig = plots.normalized_fct_vs_load(pd.DataFrame(rows), reference={"(0, 100KB]: average": [(0.4, 2.5)]})
    assert [a.get_title() for a in fig.axes] == [
        "(0, 100KB]: average",
        "(0, 100KB]: 99th percentile",
        "(10MB, ∞): average",
        "all flows: average",
    ]
    lines = fig.axes[1].get_lines()
    assert [line.get_label() for line in lines] == ["dctcp", "tcp"]
    x, y = lines[1].get_data()
    assert list(x) == [0.2, 0.4, 0.6] and y[0] == pytest.approx(3 * 2.0 * 1.2)
    assert fig.axes[0].get_lines()[-1].get_label() == "paper"
