"""Packet capture (`output.pcap`), read back with a real pcap parser (dpkt): every packet a captured port sent,
in order, with the simulator's own counts, sequence numbers, sizes, ECN bits and serialization-paced
timestamps; bounded by `output.pcap_max_packets`; bad entries name the key."""

import dpkt
import pytest

import tailsim
from tailsim import ConfigError

from conftest import ROOT

MSS = 1460


def _one_flow(tmp_path, size=100 * MSS, **output):
    cfg = {
        "name": "pcap",
        "topology": {"kind": "file", "path": str(ROOT / "examples" / "dumbbell.topo.toml")},
        "switch": {"buffer": "1MB", "ecn_threshold": "500KB"},
        "transport": {"kind": "dctcp", "init_cwnd": 200},
        "workload": [{"kind": "incast", "senders": 1, "dst": 2, "size": size}],
        "output": {"pcap": ["h0", ["left", "right"]], **output},
    }
    return tailsim.run(cfg, tmp_path / "r", progress=False)


def _read(path):
    with open(path, "rb") as f:
        return [(ts, dpkt.ethernet.Ethernet(buf), buf) for ts, buf in dpkt.pcap.Reader(f)]


def test_a_lone_flow_as_wireshark_would_see_it(tmp_path):
    r = _one_flow(tmp_path)
    ports = r.ports.set_index(["node", "peer"])
    files = sorted(p.name for p in (r.dir / "pcap").iterdir())
    assert files == ["h0-left.pcap", "left-h0.pcap", "left-right.pcap", "right-left.pcap"]
    for f in files:
        a, b = f.removesuffix(".pcap").split("-")
        pk = _read(r.dir / "pcap" / f)
        # Every packet the port sent, no more.
        assert len(pk) == ports.loc[(a, b), "tx_packets"], f
        assert sum(len(buf) for _, _, buf in pk) <= sum(e.data.len + 14 for _, e, _ in pk)
        times = [ts for ts, _, _ in pk]
        assert times == sorted(times) and 0 <= times[0] and float(times[-1]) <= r.summary["simulated_seconds"]
    # The sender's link: 100 data segments (h0 is 10.0.0.0, h2 10.0.0.2), sequence numbers in bytes, in order.
    data = [(ts, e) for ts, e, _ in _read(r.dir / "pcap" / "h0-left.pcap")]
    assert len(data) == 100
    ips = {(bytes(e.data.src), bytes(e.data.dst)) for _, e in data}
    assert ips == {(bytes([10, 0, 0, 0]), bytes([10, 0, 0, 2]))}
    assert [e.data.data.seq for _, e in data] == [i * MSS for i in range(100)]
    assert all(e.data.len == MSS + 40 for _, e in data)  # IP total length: payload + 40 B of headers
    assert all(e.data.tos & 3 == 2 for _, e in data)  # ECT(0): DCTCP is ECN-capable
    assert all(e.data.data.flags & dpkt.tcp.TH_ACK for _, e in data)
    # Back to back at 25 Gbps: one 1500 B packet every 480 ns (timestamps in nanoseconds, pcap's finest).
    gaps = {round((b - a) * 10**9) for (a, _), (b, _) in zip(data, data[1:])}
    assert gaps == {480}, gaps
    # The ACKs come back to h0 on the same 4-tuple, acknowledging bytes.
    acks = [e for _, e, _ in _read(r.dir / "pcap" / "left-h0.pcap")]
    first = data[0][1].data.data
    assert all((e.data.data.sport, e.data.data.dport) == (first.dport, first.sport) for e in acks)
    assert max(e.data.data.ack for e in acks) == 100 * MSS
    total = sum(len(_read(r.dir / "pcap" / f)) for f in files)
    assert total == 2 * (100 + len(acks))  # the same data and ACKs cross left-right too
    assert r.summary["mechanisms"]["pcap"] == {"captured": total, "files": 4, "not_captured": 0}


def test_a_packet_budget_bounds_the_capture(tmp_path):
    r = _one_flow(tmp_path, pcap_max_packets=10)
    n = sum(len(_read(f)) for f in (r.dir / "pcap").iterdir())
    assert n == 10
    assert r.summary["mechanisms"]["pcap"]["not_captured"] > 0


def test_bad_capture_entries_name_the_key(tmp_path):
    cfg = {
        "topology": {"kind": "file", "path": str(ROOT / "examples" / "dumbbell.topo.toml")},
        "workload": [{"kind": "permutation", "size": "10KB"}],
    }
    with pytest.raises(ConfigError, match=r"output.pcap\[1\]`: \"nowhere\" is not a host"):
        tailsim.check({**cfg, "output": {"pcap": ["h0", "nowhere"]}})
    with pytest.raises(ConfigError, match=r"output.pcap\[0\]`: no link between \"h0\" and \"right\""):
        tailsim.check({**cfg, "output": {"pcap": [["h0", "right"]]}})
    with pytest.raises(ConfigError, match="output.pcap_max_packets`: applies only with output.pcap"):
        tailsim.check({**cfg, "output": {"pcap_max_packets": 5}})
