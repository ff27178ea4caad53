"""Python-native inputs: flows from a DataFrame and topologies from a networkx graph or a DataFrame of links,
each equal to the same input given as a file, and refused with errors that name the row or the edge."""

import networkx as nx
import pandas as pd
import pytest

import tailsim
from tailsim import ConfigError

from conftest import ROOT


def _flows(n=40):
    return pd.DataFrame(
        {
            "src": [i % 4 for i in range(n)],
            "dst": [(i + 1 + i // 4) % 4 if (i + 1 + i // 4) % 4 != i % 4 else (i + 2) % 4 for i in range(n)],
            "size_bytes": [1000 + 997 * i for i in range(n)],
            "start_us": [2.5 * i for i in range(n)],
        }
    )


def _dumbbell(workloads):
    return {
        "name": "inputs",
        "topology": {"kind": "file", "path": str(ROOT / "examples" / "dumbbell.topo.toml")},
        "switch": {"buffer": "100KB", "ecn_threshold": "20KB"},
        "transport": {"kind": "dctcp"},
        "workload": workloads,
    }


def test_a_dataframe_of_flows_runs_as_the_same_csv_trace(tmp_path):
    df = _flows()
    csv = tmp_path / "flows.csv"
    df.to_csv(csv, index=False)
    from_file = tailsim.run(_dumbbell([{"kind": "trace", "path": str(csv)}]), tmp_path / "file", progress=False)
    from_df = tailsim.run(_dumbbell([]), tmp_path / "df", flows=df, progress=False)
    assert len(from_df.flows) == 40 and from_df.flows["finished"].all()
    pd.testing.assert_frame_equal(from_df.flows, from_file.flows)
    # Also beside another workload, from a TOML file: the trace comes after the file's own workloads.
    r = tailsim.run(ROOT / "examples" / "dumbbell.toml", tmp_path / "both", flows=df, progress=False)
    assert len(r.flows) == 40 + 4
    assert tailsim.check(_dumbbell([]), flows=df) == "4 hosts, 2 switches, 5 links"


def test_bad_flows_name_the_row_or_column():
    df = _flows(5)
    with pytest.raises(ConfigError, match=r"flows DataFrame: missing column\(s\) size_bytes"):
        tailsim.check(_dumbbell([]), flows=df.drop(columns=["size_bytes"]))
    bad = df.copy()
    bad.loc[3, "size_bytes"] = -5
    with pytest.raises(ConfigError, match=r"flows DataFrame: row 3: size_bytes = -5, expected a number ≥ 0, whole"):
        tailsim.check(_dumbbell([]), flows=bad)
    bad = df.copy()
    bad.loc[2, "dst"] = 700
    with pytest.raises(ConfigError, match=r"^flows DataFrame: flow 2 \(row 2\) uses host 700 but the topology has 4"):
        tailsim.check(_dumbbell([]), flows=bad)
    with pytest.raises(ConfigError, match="one start column, not start_ps and start_us"):
        tailsim.check(_dumbbell([]), flows=df.assign(start_ps=0))


def _leaf_spine(workloads):
    return {
        "name": "pinned",
        "topology": {
            "kind": "leaf-spine",
            "leaves": 2,
            "spines": 4,
            "hosts_per_leaf": 4,
            "edge_rate": "10Gbps",
            "core_rate": "10Gbps",
            "edge_delay": "1us",
            "core_delay": "1us",
        },
        "transport": {"kind": "dctcp"},
        "workload": workloads,
    }


def test_a_runs_flows_table_with_its_paths_pins_the_same_flows_to_the_same_paths(tmp_path):
    df = _flows().assign(dst=lambda d: 4 + (d["dst"] + d.index // 3) % 4)
    first = tailsim.run(_leaf_spine([]), tmp_path / "a", flows=df, progress=False)
    paths = first.flows["path"]
    assert paths.str.fullmatch(r"leaf0 spine[0-3] leaf1").all() and paths.nunique() > 1
    again = tailsim.run(
        _leaf_spine([]),
        tmp_path / "b",
        flows=first.flows[["src", "dst", "size_bytes", "start_ps", "path"]],
        progress=False,
    )
    assert (again.flows["path"] == paths).all()
    # One flow moved to another spine: the table says so, and a bad name names its row.
    moved = first.flows[["src", "dst", "size_bytes", "start_ps", "path"]].copy()
    other = "leaf0 spine3 leaf1" if paths[5] != "leaf0 spine3 leaf1" else "leaf0 spine0 leaf1"
    moved.loc[5, "path"] = other
    assert tailsim.run(_leaf_spine([]), tmp_path / "c", flows=moved, progress=False).flows["path"][5] == other
    moved.loc[7, "path"] = "leaf0 spine9 leaf1"
    with pytest.raises(ConfigError, match=r'^flows DataFrame: row 7: no switch is named "spine9"'):
        tailsim.check(_leaf_spine([]), flows=moved)


def _dumbbell_graph():
    g = nx.Graph()
    g.add_node("left", delay="500ns")
    g.add_node("right")
    for h, sw in (("h0", "left"), ("h1", "left"), ("h2", "right"), ("h3", "right")):
        g.add_edge(h, sw, rate="25Gbps", delay="1us")
    g.add_edge("left", "right", rate="10Gbps", delay="5us")
    return g


def test_a_networkx_graph_or_links_dataframe_is_the_same_topology_as_the_file(tmp_path):
    perm = [{"kind": "permutation", "size": "1MB"}]
    from_file = tailsim.run(_dumbbell(perm), tmp_path / "file", progress=False)
    for name, topo in (
        ("graph", tailsim.Inline.from_networkx(_dumbbell_graph())),
        (
            "links",
            tailsim.Inline.from_links(
                pd.DataFrame(
                    {
                        "a": ["h0", "1", "h2", "h3", "left"],
                        "b": ["left", "left", "right", "right", "right"],
                        "rate": ["25Gbps"] * 4 + ["10Gbps"],
                        "delay": ["1us"] * 4 + ["5us"],
                    }
                ),
                switches=[{"name": "left", "delay": "500ns"}, {"name": "right"}],
            ),
        ),
    ):
        cfg = {**_dumbbell(perm), "topology": topo.to_dict()}
        r = tailsim.run(cfg, tmp_path / name, progress=False)
        pd.testing.assert_frame_equal(r.flows, from_file.flows, check_like=False)
        assert r.ports["tx_bytes"].sum() == from_file.ports["tx_bytes"].sum()


def test_graph_errors_name_the_edge_or_key():
    g = _dumbbell_graph()
    g.add_edge("h3", "nowhere")  # no rate
    with pytest.raises(ValueError, match=r"edge \('h3', 'nowhere'\) has no `rate`"):
        tailsim.Inline.from_networkx(g)
    g = _dumbbell_graph()
    g.add_edge("h0", "right", rate="25Gbps")  # a host with two links
    cfg = {**_dumbbell([{"kind": "permutation", "size": "1MB"}]), "topology": tailsim.Inline.from_networkx(g).to_dict()}
    with pytest.raises(ConfigError, match="topology"):
        tailsim.check(cfg)
