"""The typed builders cannot drift from the simulator's schema: for every table, the keys the builders can
produce are exactly the keys the Rust schema accepts (read from its own "unknown field … expected one of"
error), and every transport builder's fields apply to its kind (no "does not apply to kind")."""

import dataclasses
import re

import pytest

import tailsim
from tailsim import ConfigError, builders

BASE = {
    "name": "schema",
    "topology": {
        "kind": "leaf-spine",
        "leaves": 2,
        "spines": 1,
        "hosts_per_leaf": 2,
        "edge_rate": "10Gbps",
        "core_rate": "10Gbps",
    },
    "workload": [{"kind": "incast", "senders": 2, "size": "1KB"}],
}


def schema_keys(table: str) -> set:
    """The keys the schema accepts in ``table`` ("transport", "workload", …), from its unknown-field error."""
    cfg = {**BASE}
    if table == "workload":
        cfg["workload"] = [{"kind": "incast", "senders": 2, "size": "1KB", "zzz": 1}]
    elif table == "fault":
        cfg["fault"] = [{"at": "1us", "link": ["h0", "leaf0"], "zzz": 1}]
    elif table == "topology":
        cfg["topology"] = {**BASE["topology"], "zzz": 1}
    else:
        cfg[table] = {"zzz": 1}
    with pytest.raises(ConfigError) as e:
        tailsim.check(cfg)
    m = re.search(r"unknown field `zzz`, expected (.*)$", str(e.value))
    assert m, str(e.value)
    return set(re.findall(r"`([^`]+)`", m.group(1)))


def builder_keys(cls) -> set:
    """The keys a builder's ``to_dict`` can produce (every field set)."""
    if cls is builders.Inline:
        return {"kind", "hosts", "switch", "link"}
    obj = cls(**{f.name: [[1]] for f in dataclasses.fields(cls)})
    return set(obj.to_dict())


TABLES = {
    "transport": [
        builders.Tcp,
        builders.Dctcp,
        builders.Cubic,
        builders.PFabric,
        builders.Pias,
        builders.Homa,
        builders.Phost,
        builders.Ndp,
        builders.Rdma,
        builders.Ideal,
    ],
    "switch": [builders.Switch],
    "routing": [builders.Routing],
    "host": [builders.Host],
    "packet": [builders.PacketFormat],
    "stop": [builders.Stop],
    "output": [builders.Output],
    "fault": [builders.Fault],
    "topology": [
        builders.Preset,
        builders.Star,
        builders.LeafSpine,
        builders.FatTree,
        builders.HtsimTopology,
        builders.TopologyFile,
        builders.Inline,
    ],
    "pfc": [builders.Pfc],
    "fastlane": [builders.FastLane],
    "codel": [builders.CoDel],
    "burstradar": [builders.BurstRadar],
    "qjump": [builders.Qjump],
    "sqr": [builders.Sqr],
    "linkguardian": [builders.LinkGuardian],
    "workload": [
        builders.Poisson,
        builders.Incast,
        builders.Permutation,
        builders.Trace,
        builders.Cbr,
        builders.Retrieval,
        builders.Workflow,
        builders.Background,
    ],
}


@pytest.mark.parametrize("table", sorted(TABLES))
def test_builders_cover_exactly_the_schema(table):
    have = set().union(*(builder_keys(c) for c in TABLES[table]))
    want = schema_keys(table)
    assert not want - have, f"[{table}] keys without a builder field: {sorted(want - have)}"
    assert not have - want, f"[{table}] builder fields the schema does not know: {sorted(have - want)}"


SAMPLES = {
    **dict.fromkeys(
        [
            "min_rto",
            "max_rto",
            "init_rto",
            "delayed_ack_timeout",
            "rto",
            "syn_rto",
            "resend_timeout",
            "token_expiry",
            "token_timeout",
            "downgrade_for",
        ],
        "1ms",
    ),
    **dict.fromkeys(
        [
            "sack",
            "fast_retransmit",
            "ecn",
            "ooo_inflation",
            "handshake",
            "cwr_growth",
            "slow_start_cap",
            "pacer",
            "tail_boost",
            "free_tokens_high",
            "pull_on_ack",
        ],
        True,
    ),
    "init_cwnd": 10,
    "dupthresh": 3,
    "delayed_ack": 2,
    "probe_after": 3,
    "max_cwnd": 100,
    "classes": 4,
    "unscheduled_levels": 2,
    "overcommit": 2,
    "header": 40,
    "ack_every": 1,
    "class_": 1,
    "rtt_bytes": "10KB",
    "dctcp_g": 0.0625,
    "dctcp_alpha_init": 1.0,
    "cubic_c": 0.4,
    "cubic_beta": 0.7,
    "priority": "remaining",
    "class_by": "flow-size",
    "pull_order": "fair",
    "pull_spacing": "1580B",
    "class_thresholds": ["10KB", "100KB"],
    "unscheduled_cutoffs": ["1KB"],
}


@pytest.mark.parametrize("cls", TABLES["transport"], ids=lambda c: c.__name__)
def test_every_transport_field_applies_to_its_kind(cls):
    for f in dataclasses.fields(cls):
        d = cls(**{f.name: SAMPLES[f.name]}).to_dict()
        try:
            tailsim.check({**BASE, "transport": d})
        except ConfigError as e:
            assert "does not apply" not in str(e), f"{cls.__name__}.{f.name}: {e}"
