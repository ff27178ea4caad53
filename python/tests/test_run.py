import json

import pandas as pd
import pytest

import tailsim

from conftest import small_dict


def test_dict_matches_toml(example, tmp_path):
    a = tailsim.run(example, tmp_path / "toml", set={"workload[0].flows": 200}, progress=False)
    b = tailsim.run(small_dict(200), tmp_path / "dict", progress=False)
    assert len(a.flows) == 200
    pd.testing.assert_frame_equal(a.flows, b.flows)
    pd.testing.assert_frame_equal(a.ports, b.ports)


def test_builder_matches_dict(tmp_path):
    exp = tailsim.Experiment(
        name="pfabric-websearch-dctcp",
        seed=1,
        topology=tailsim.Preset("pfabric-144"),
        switch=tailsim.Switch(buffer="225KB", ecn_threshold="22.5KB"),
        transport=tailsim.Dctcp(init_cwnd=12, min_rto="200us"),
        workloads=[tailsim.Poisson(cdf="websearch", load=0.6, flows=200)],
    )
    assert exp.to_dict() == small_dict(200)
    a = tailsim.run(exp, tmp_path / "b", progress=False)
    b = tailsim.run(small_dict(200), tmp_path / "d", progress=False)
    pd.testing.assert_frame_equal(a.flows, b.flows)


def test_cubic_builder_gives_its_keys():
    d = tailsim.Cubic(init_cwnd=10, cubic_beta=0.5).to_dict()
    assert d == {"kind": "cubic", "init_cwnd": 10, "cubic_beta": 0.5}
    cfg = small_dict(10)
    cfg["transport"] = d
    cfg["switch"].pop("ecn_threshold", None)
    tailsim.check(cfg)


def test_cwnd_trace_is_a_table(tmp_path):
    d = small_dict(20)
    d["output"] = {"cwnd_trace": [3, 7]}
    r = tailsim.run(d, tmp_path / "c", progress=False)
    c = r.cwnd
    assert set(c["flow_id"]) == {3, 7}
    assert (c["cwnd"] > 0).all() and set(c["event"]) <= {"ack", "timeout"}
    # Every ACK of a traced flow: its last row has everything acknowledged.
    last = c.groupby("flow_id").last()
    assert (last["una"] == last["nxt"]).all()
    assert tailsim.run(small_dict(5), tmp_path / "n", progress=False).cwnd.empty


def test_result_load_round_trips(tmp_path):
    r = tailsim.run(small_dict(100), tmp_path / "r", progress=False)
    back = tailsim.Result.load(tmp_path / "r")
    assert back.summary == json.loads(json.dumps(r.summary))
    pd.testing.assert_frame_equal(back.flows, r.flows)
    pd.testing.assert_frame_equal(back.ports, r.ports)
    assert list(back.buckets.index) == ["(0,100KB]", "(100KB,10MB]", "(10MB,inf)", "all"]
    assert back.buckets.loc["all", "flows"] == 100
    assert r.flows["finished"].all()
    # Units are in the column names and consistent with each other.
    f = r.flows
    assert ((f["fct_ps"] / 1e6 - f["fct_us"]).abs() < 1e-6).all()
    assert ((f["slowdown"] - f["fct_ps"] / f["ideal_fct_ps"]).abs() < 1e-9).all()


def test_csv_results_load_too(tmp_path):
    d = small_dict(50)
    d["output"] = {"format": "csv"}
    tailsim.run(d, tmp_path / "c", progress=False)
    assert (tmp_path / "c" / "flows.csv").exists()
    assert len(tailsim.Result.load(tmp_path / "c").flows) == 50


def test_bad_key_raises_config_error_naming_it():
    d = small_dict()
    d["switch"]["bufer"] = "36KB"
    with pytest.raises(tailsim.ConfigError, match=r"switch\.bufer"):
        tailsim.run(d, progress=False)
    d = small_dict()
    d["workload"][0]["load"] = 1.5
    with pytest.raises(tailsim.ConfigError, match=r"workload\[0\]\.load.*\(0, 1\)"):
        tailsim.run(d, progress=False)
    d = small_dict()
    d["transport"]["init_cwnd"] = None
    with pytest.raises(tailsim.ConfigError, match=r"transport\.init_cwnd"):
        tailsim.check(d)
    with pytest.raises(tailsim.ConfigError, match=r"no/such\.toml"):
        tailsim.run("no/such.toml")
    with pytest.raises(TypeError):
        tailsim.run(42)


def test_set_and_seed_overrides(tmp_path):
    a = tailsim.run(small_dict(100), tmp_path / "a", seed=5, progress=False)
    b = tailsim.run(small_dict(100), tmp_path / "b", set={"seed": 5}, progress=False)
    c = tailsim.run(small_dict(100), tmp_path / "c", progress=False)
    assert a.summary["seed"] == 5
    pd.testing.assert_frame_equal(a.flows, b.flows)
    assert not a.flows.equals(c.flows)
    t = tailsim.run(small_dict(100), tmp_path / "t", set={"transport.kind": "tcp"}, progress=False)
    assert t.config["transport"]["kind"] == "tcp"


def test_check_describes_the_fabric():
    assert tailsim.check(small_dict()) == "144 hosts, 13 switches, 180 links"


def test_queue_samples(tmp_path):
    d = small_dict(100)
    d["output"] = {"queue_sample": "20us"}
    r = tailsim.run(d, tmp_path / "q", progress=False)
    q = r.queues
    assert set(q.columns) == {"time_us", "port_id", "bytes"}
    assert q["port_id"].nunique() == len(r.ports)
    times = sorted(q["time_us"].unique())
    assert abs(times[1] - times[0] - 20.0) < 1e-9
    # The sampled maximum never exceeds the exact maximum the port recorded.
    mx = q.groupby("port_id")["bytes"].max()
    assert (mx <= r.ports.set_index("port_id")["max_queue_bytes"]).all()


def test_homa_builder_runs_on_the_thesis_fabric(tmp_path):
    exp = tailsim.Experiment(
        topology=tailsim.Preset("homa-144"),
        transport=tailsim.Homa(overcommit=2),
        workloads=[tailsim.Poisson(load=0.5, cdf="homa-thesis-w4", flows=2000)],
        output=tailsim.Output(dir=str(tmp_path / "homa")),
    )
    r = tailsim.run(exp, progress=False)
    assert r.summary["flows_finished"] == 2000
    assert r.config["transport"]["overcommit"] == 2
    # The first 10 % of messages: the shortest half never waits long at 50 % load.
    f = r.flows
    assert f[f["size_bytes"] <= f["size_bytes"].median()]["slowdown"].quantile(0.99) < 3


def test_retrieval_tables_link_flows_retrievals_and_workflows(tmp_path):
    d = {
        "topology": {"preset": "detail-16"},
        "transport": {"kind": "tcp", "min_rto": "10ms"},
        "workload": [
            {
                "kind": "workflow",
                "shape": "partition-aggregate",
                "fanout": [4],
                "rate": 200,
                "count": 20,
                "size": "2KB",
                "clients": "0-3",
                "servers": "8-15",
            }
        ],
    }
    r = tailsim.run(d, tmp_path / "wf", progress=False)
    w, q, f = r.workflows, r.retrievals, r.flows
    assert len(w) == 20 and (w["parts"] == 4).all() and w["finished"].all()
    assert len(q) == 80 and set(q["server"]) <= set(range(8, 16))
    # A workflow ends with its slowest retrieval; each retrieval is a request and a response flow.
    slowest = q.groupby("workflow_id")["end_ps"].max()
    assert (w.set_index("workflow_id")["end_ps"] == slowest).all()
    assert f["role"].value_counts().to_dict() == {"request": 80, "response": 80}
    resp = f[f["role"] == "response"].set_index("retrieval_id")
    assert (resp.loc[q["retrieval_id"], "end_ps"].to_numpy() == q["end_ps"].to_numpy()).all()
    assert r.summary["workflows"][0]["count"] == 20


def test_unknown_values_are_nulls_and_tables_say_where_they_came_from(tmp_path):
    import pyarrow.parquet as pq

    cfg = small_dict(300)
    cfg["stop"] = {"time": "5ms"}  # the largest web-search flows are still running
    r = tailsim.run(cfg, tmp_path / "p", progress=False)
    c = tailsim.run({**cfg, "output": {"format": "csv"}}, tmp_path / "c", progress=False)
    f = r.flows
    unfinished = ~f["finished"]
    assert 0 < unfinished.sum() < len(f)
    # Nulls, not sentinels: pandas' nullable Int64 for integers, NaN for floats; from either format alike.
    for col in ("end_ps", "fct_ps", "retrieval_id"):
        assert str(f[col].dtype) == "Int64", (col, f[col].dtype)
    assert f.loc[unfinished, "end_ps"].isna().all() and f.loc[~unfinished, "end_ps"].notna().all()
    assert f.loc[unfinished, ["fct_us", "slowdown"]].isna().all().all()
    assert f["retrieval_id"].isna().all() and (f["end_ps"].dropna() >= 0).all()
    pd.testing.assert_frame_equal(f, c.flows, check_dtype=True)
    # Parquet declares exactly the unknowable columns optional.
    schema = pq.read_schema(tmp_path / "p" / "flows.parquet")
    optional = {x.name for x in schema if x.nullable}
    assert optional == {"end_ps", "fct_ps", "fct_us", "slowdown", "deadline_us", "retrieval_id"}
    assert pq.read_table(tmp_path / "p" / "flows.parquet").column("end_ps").null_count == unfinished.sum()
    # Every table carries its provenance.
    for table in ("flows", "ports"):
        meta = {
            k.decode(): v.decode() for k, v in pq.read_metadata(tmp_path / "p" / f"{table}.parquet").metadata.items()
        }
        assert meta["tailsim.run_id"] == r.summary["run_id"]
        assert meta["tailsim.version"] == r.summary["tailsim_version"]
        assert meta["tailsim.build"] == r.summary["tailsim_build"]
        assert meta["tailsim.seed"] == str(r.summary["seed"])
        assert json.loads(meta["tailsim.config"]) == r.summary["config"]
        assert len(meta["tailsim.config_hash"]) == 16 and meta["tailsim.commit"]


def test_queue_over_the_arrival_window(tmp_path):
    """The ports table's ``*_arrivals`` columns stop at the last open-loop arrival: the end-of-run drain
    (and, with one flow, everything after its start) is left out."""
    d = small_dict(1)
    r = tailsim.run(d, tmp_path / "one", progress=False)
    p = r.ports
    # One flow: nothing was queued anywhere when it arrived, and its own window queued later.
    assert p["max_queue_bytes"].max() > 0
    assert (p["max_queue_bytes_arrivals"] == 0).all() and (p["avg_queue_bytes_arrivals"] == 0).all()

    d = small_dict(300)
    d["output"] = {"queue_sample": "2us"}
    r = tailsim.run(d, tmp_path / "many", progress=False)
    last = r.flows["start_us"].max()
    p = r.ports.set_index("port_id")
    q = r.queues
    before = q[q["time_us"] <= last].groupby("port_id")["bytes"].max()
    # Exact maxima bound every sample inside their window, and the window's maximum bounds nothing after it.
    assert (before <= p["max_queue_bytes_arrivals"]).all()
    assert (p["max_queue_bytes_arrivals"] <= p["max_queue_bytes"]).all()
    assert (q[q["time_us"] > last].groupby("port_id")["bytes"].max() > p["max_queue_bytes_arrivals"]).any()
    # The time-average from 2 µs samples is close to the exact one over the same window.
    sampled = q[q["time_us"] <= last].groupby("port_id")["bytes"].mean()
    busy = p["avg_queue_bytes_arrivals"] > 1000
    assert busy.sum() > 5
    rel = (sampled[busy] / p.loc[busy, "avg_queue_bytes_arrivals"] - 1).abs()
    assert rel.max() < 0.1, rel.max()
    assert p["max_queue_bytes_arrivals"].dtype == "Int64"


def test_queue_arrival_window_is_empty_without_open_loop_arrivals(tmp_path):
    csv = tmp_path / "flows.csv"
    csv.write_text("src,dst,size_bytes,start_ps\n0,20,150000,0\n1,20,150000,0\n")
    d = small_dict()
    d["workload"] = [{"kind": "trace", "path": str(csv)}]
    p = tailsim.run(d, tmp_path / "t", progress=False).ports
    assert p["max_queue_bytes"].max() > 0
    assert p["max_queue_bytes_arrivals"].isna().all() and p["avg_queue_bytes_arrivals"].isna().all()


def test_runs_that_cannot_finish_their_flows_warn_and_finished_ones_do_not():
    import warnings

    from tailsim.result import _warn_if_stuck

    base = {"simulated_seconds": 747.7, "flows_started": 200, "flows_finished": 150}
    for reason, says in [("stalled", "nothing progressed for 600 s"), ("exhausted", "no event left")]:
        with pytest.warns(RuntimeWarning, match=says) as w:
            _warn_if_stuck({**base, "stop_reason": reason})
        assert "50 flows are unfinished" in str(w[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for reason in ["finished", "time-limit", "event-budget", "interrupted"]:
            _warn_if_stuck({**base, "stop_reason": reason})


def _raw_fat_tree() -> dict:
    """A k = 4 fat tree, every host bursting raw packets to the host five further on, and three into host 0."""
    pairs = [(i, (i + 5) % 16) for i in range(16)] + [(3, 0), (9, 0), (14, 0)]
    source = {"kind": "cbr", "line_rate": "10Gbps", "size": 1000, "until": "200us"}
    return {
        "name": "raw",
        "seed": 5,
        "topology": {"kind": "fat-tree", "k": 4, "rate": "10Gbps", "delay": "1us"},
        "switch": {"buffer": "30KB"},
        "routing": {"load_balance": "spray"},
        "stop": {"time": "200us"},
        "workload": [dict(source, src=s, dst=d, on=[[1, 0.0], [20, 1.0]], off=[[1, 0.0], [20, 1.0]]) for s, d in pairs],
    }


def test_threads_give_the_results_of_one_thread(tmp_path):
    one = tailsim.run(_raw_fat_tree(), tmp_path / "one", progress=False)
    two = tailsim.run(_raw_fat_tree(), tmp_path / "two", progress=False, threads=2)
    assert one.summary["packets"]["dropped"] > 0
    wall = {"wall_seconds", "events_per_second", "packet_hops_per_second", "peak_memory_bytes"}
    assert {k: v for k, v in one.summary.items() if k not in wall} == {
        k: v for k, v in two.summary.items() if k not in wall
    }
    pd.testing.assert_frame_equal(one.ports, two.ports)


def test_ndp_flows_on_threads_give_the_flows_of_one_thread(tmp_path):
    cfg = {
        "seed": 2,
        "topology": {"kind": "fat-tree", "k": 4, "rate": "10Gbps", "delay": "1us"},
        "switch": {"trim": "12KB"},
        "routing": {"load_balance": "spray"},
        "transport": {"kind": "ndp"},
        "workload": [{"kind": "poisson", "cdf": "websearch", "load": 0.6, "flows": 80}],
    }
    one = tailsim.run(cfg, tmp_path / "one", progress=False)
    two = tailsim.run(cfg, tmp_path / "two", progress=False, threads=2)
    assert one.summary["flows_finished"] == 80 and one.summary["packets"]["trimmed"] > 0
    pd.testing.assert_frame_equal(one.flows, two.flows)
    pd.testing.assert_frame_equal(one.ports, two.ports)
    # More parts than threads (each thread runs its parts in turn): the same again.
    for threads, parts in [(1, 4), (2, 3)]:
        more = tailsim.run(cfg, tmp_path / f"p{parts}", progress=False, threads=threads, parts=parts)
        pd.testing.assert_frame_equal(one.flows, more.flows)
        pd.testing.assert_frame_equal(one.ports, more.ports)
    # Flows keep every host with its switch: a k = 4 fat tree has 8 ToRs.
    with pytest.raises(tailsim.ConfigError, match="use at most 8 parts"):
        tailsim.run(cfg, tmp_path / "nine", progress=False, threads=9)
    with pytest.raises(tailsim.ConfigError, match="parts=9: .*use at most 8 parts"):
        tailsim.run(cfg, tmp_path / "nine", progress=False, parts=9)
    with pytest.raises(tailsim.ConfigError, match="parts=2: fewer parts than threads=3"):
        tailsim.run(cfg, tmp_path / "nine", progress=False, threads=3, parts=2)
    with pytest.raises(tailsim.ConfigError, match="parts: give 1 or more"):
        tailsim.run(cfg, tmp_path / "nine", progress=False, parts=0)
    assert not (tmp_path / "nine").exists()


def test_dctcp_flows_on_two_threads_give_one_threads_results(tmp_path):
    cfg = small_dict(flows=120)
    one = tailsim.run(cfg, tmp_path / "one", progress=False)
    two = tailsim.run(cfg, tmp_path / "two", progress=False, threads=2)
    assert one.summary["flows_finished"] == 120 and one.summary["packets"]["ecn_marked"] > 0
    pd.testing.assert_frame_equal(one.flows, two.flows)
    pd.testing.assert_frame_equal(one.ports, two.ports)
    assert (tmp_path / "one" / "flows.parquet").read_bytes() == (tmp_path / "two" / "flows.parquet").read_bytes()


def test_threads_refuse_what_cannot_be_cut_yet(tmp_path, monkeypatch):
    budget = small_dict(flows=20)
    budget["stop"] = {"max_events": 1000}
    with pytest.raises(tailsim.ConfigError, match="an event budget"):
        tailsim.run(budget, tmp_path / "x", progress=False, threads=2)
    assert not (tmp_path / "x").exists()
    # Every part holds a whole world: the memory limit counts them all.
    monkeypatch.setenv("TAILSIM_MAX_MEMORY", "20MB")
    with pytest.raises(tailsim.ConfigError, match="every part of a parallel run holds a whole world"):
        tailsim.run(_raw_fat_tree(), tmp_path / "y", progress=False, threads=2)
    assert not (tmp_path / "y").exists()
