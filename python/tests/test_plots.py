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


def _legend_labels(fig) -> list[str]:
    return [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]


def test_load_plot_overlays_the_papers_ranges_when_the_sweep_is_its_setup(tmp_path):
    """A sweep of the Ideal and pFabric on pfabric-144 / web search gets pFabric §5.4's ranges drawn around
    the Ideal's curve, from `tailsim plot` too; another fabric, or --no-published, gets none."""
    import subprocess
    import sys

    from tailsim.reproduce import PFABRIC_BASE, PFABRIC_TARGETS

    grid = {"workload[0].load": [0.3, 0.6], "transport.kind": ["ideal", "pfabric"]}
    fixed = {"workload[0].flows": 60, "switch.queue": "pfabric", "switch.buffer": "36KB"}
    sw = tailsim.sweep(PFABRIC_BASE, grid, tmp_path / "pf", set=fixed, workers=2, progress=False)
    fig = plots.normalized_fct_vs_load(sw, panels=plots.PFABRIC_PANELS[:2])
    labels = _legend_labels(fig)
    expected = {
        f"paper §5.4: pFabric {lo:g}–{hi:g}× Ideal"
        for wl, s, b, st, ref, lo, hi, _ in PFABRIC_TARGETS
        if wl == "websearch" and s == "pFabric" and ref == "Ideal" and b == "(0,100KB]"
    }
    assert expected and expected <= set(labels), labels
    # The band is the Ideal's own curve times the stated ratios.
    ax = fig.axes[0]
    ideal = dict(zip(*[ln.get_data() for ln in ax.get_lines() if ln.get_label() == "ideal"][0]))
    band = ax.collections[0].get_paths()[0].vertices
    lo_ratio = next(
        lo
        for wl, s, b, st, ref, lo, hi, _ in PFABRIC_TARGETS
        if (s, b, st) == ("pFabric", "(0,100KB]", "slowdown_mean")
    )
    assert band[:, 1].min() == pytest.approx(min(v * lo_ratio for v in ideal.values()))
    assert not any(
        lbl.startswith("paper")
        for lbl in _legend_labels(plots.normalized_fct_vs_load(sw, panels=plots.PFABRIC_PANELS[:2], published=False))
    )
    # The command line, from the sweep directory alone.
    out = tmp_path / "load.png"
    cli = [sys.executable, "-m", "tailsim", "plot", str(sw.dir), "--kind", "load", "--out", str(out)]
    assert subprocess.run(cli, capture_output=True, text=True).returncode == 0 and out.stat().st_size > 0
    assert subprocess.run([*cli, "--no-published"], capture_output=True, text=True).returncode == 0
    # Not the paper's fabric: nothing drawn.
    other = tailsim.sweep(
        PFABRIC_BASE,
        grid,
        tmp_path / "other",
        set={**fixed, "topology.preset": "homa-144"},
        workers=2,
        progress=False,
    )
    assert not any(
        lbl.startswith("paper")
        for lbl in _legend_labels(plots.normalized_fct_vs_load(other, panels=plots.PFABRIC_PANELS[:2]))
    )


def test_slowdown_plot_draws_homas_bound_on_the_thesis_setup(tmp_path):
    from tailsim.reproduce_homa import HOMA_BASE

    r = tailsim.run(HOMA_BASE, tmp_path / "h", set={"workload[0].flows": 2000}, progress=False)
    assert any(lbl.startswith("thesis §6.2") for lbl in _legend_labels(plots.slowdown_vs_size(r)))
    assert not any(lbl.startswith("thesis") for lbl in _legend_labels(plots.slowdown_vs_size(r, published=False)))
    r5 = tailsim.run(
        HOMA_BASE, tmp_path / "h5", set={"workload[0].flows": 2000, "workload[0].load": 0.5}, progress=False
    )
    assert not any(lbl.startswith("thesis") for lbl in _legend_labels(plots.slowdown_vs_size(r5)))
