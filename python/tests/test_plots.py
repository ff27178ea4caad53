import matplotlib

matplotlib.use("Agg")

import pandas as pd
import pytest

import tailsim
from tailsim import plots

from conftest import small_dict


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    import matplotlib.pyplot as plt

    plt.close("all")


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


def _load_rows(seeds=(1,), extra=None):
    rows = []
    for seed in seeds:
        for kind, base in (("tcp", 2.0), ("dctcp", 1.5)):
            for load in (0.2, 0.4, 0.6):
                for bucket in ("(0,100KB]", "(10MB,inf)", "all"):
                    row = {
                        "point": f"{kind}-{load}-{seed}",
                        "transport.kind": kind,
                        "workload[0].load": load,
                        "seed": seed,
                        "bucket": bucket,
                        "flows": 100,
                        "slowdown_mean": base * (1 + load) + 0.1 * seed,
                        "slowdown_p99": 3 * base * (1 + load),
                    }
                    rows.append({**row, **(extra or {})})
    return rows


def test_titles_say_what_was_run(results):
    fig = plots.slowdown_vs_size(results, bins=5)
    title = fig.axes[0].get_title()
    # What both runs share is in the title; the transports, which differ, are in the legend.
    assert "pfabric-144" in title and "poisson websearch load 0.6" in title, title
    assert "dctcp" not in title.split(" · ")
    assert plots.fct_cdf(results["tcp"]).axes[0].get_title().startswith("tcp · pfabric-144")
    assert plots.slowdown_vs_size(results, title="mine").axes[0].get_title() == "mine"


def test_log_ticks_are_plain_numbers(results):
    fig = plots.slowdown_vs_size(results, bins=5)
    fig.canvas.draw()
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels() + ax.get_yticklabels(minor=True) if t.get_text()]
    assert labels, "some ticks are labelled"
    assert not [t for t in labels if "times" in t or "^" in t or "×" in t], labels
    assert all(float(t) > 0 for t in labels), labels
    assert plots._tick(2.0) == "2" and plots._tick(0.5) == "0.5" and plots._tick(3.0) == ""


def test_load_plot_names_its_axis_and_refuses_a_hidden_sweep():
    fig = plots.normalized_fct_vs_load(pd.DataFrame(_load_rows()))
    assert all(a.get_xlabel() == "workload[0].load" for a in fig.axes)
    assert "one line per transport.kind" in fig._suptitle.get_text()
    # A third key varying within the lines' points: refused, naming it.
    rows = _load_rows() + _load_rows(extra={"switch.buffer": "100KB", "point": "other"})
    for r in rows[: len(rows) // 2]:
        r["switch.buffer"] = "225KB"
    with pytest.raises(ValueError, match=r"also varies 'switch.buffer' \(100KB, 225KB\)"):
        plots.normalized_fct_vs_load(pd.DataFrame(rows))
    with pytest.raises(ValueError, match="'routing.load_balance' \\(--series\\) is not a swept key"):
        plots.normalized_fct_vs_load(pd.DataFrame(_load_rows()), series="routing.load_balance")


def test_load_plot_over_seeds_draws_mean_and_confidence_band():
    df = pd.DataFrame(_load_rows(seeds=(1, 2, 3)))
    fig = plots.normalized_fct_vs_load(df, panels=[("all", "slowdown_mean", "all")])
    ax = fig.axes[0]
    x, y = ax.get_lines()[0].get_data()  # dctcp: 1.5 * (1 + load) + 0.1 * mean(1, 2, 3)
    assert y[0] == pytest.approx(1.5 * 1.2 + 0.2)
    bands = ax.collections
    assert len(bands) == 2, "one band per line"
    # Half-width: t(0.975, 2) * sd(0.1, 0.2, 0.3) / sqrt(3) = 4.303 * 0.1 / 1.732.
    lo = bands[0].get_paths()[0].vertices[:, 1].min()
    assert y.min() - lo == pytest.approx(4.303 * 0.1 / 3**0.5, rel=1e-3)
    assert "mean of 3 seeds" in fig._suptitle.get_text()
