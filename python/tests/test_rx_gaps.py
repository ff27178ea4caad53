"""`output.rx_gaps` (every completed TCP flow's longest wait at its receiver for new data) against what a
capture of the receiver's link shows, read with a real pcap parser (dpkt): one flow on the SQR testbed whose
packets a 760 µs failure of sw6-sw10 held in SB'+SQR's cache, and the same flow without the failure."""

import dpkt
import pytest

import tailsim
from tailsim import ConfigError

MSS = 1448  # the sqr-testbed preset's


def _run(tmp_path, fault: bool, name: str):
    csv = tmp_path / f"{name}.csv"
    csv.write_text(f"src,dst,size_bytes,start_us\n2,4,{60 * MSS},0\n")
    cfg = {
        "name": name,
        "topology": {"preset": "sqr-testbed"},
        "sqr": {"recovery": "sharebackup", "cache": "ideal"},
        "workload": [{"kind": "trace", "path": str(csv)}],
        "output": {"rx_gaps": True, "pcap": [["sw10", "h4"]]},
    }
    if fault:
        cfg["fault"] = [{"at": "250us", "link": ["sw6", "sw10"], "state": "down", "duration": "760us"}]
    return tailsim.run(cfg, tmp_path / name, progress=False)


def _gap_from_capture(r):
    """The longest time between consecutive arrivals of segments with data h4 did not hold yet (the SYN
    first), from the capture of sw10 → h4: a packet arrives its serialization (IP length at 10 Gb/s) plus
    a constant after the capture's timestamp (the start of its transmission)."""
    pk = []
    with open(r.dir / "pcap" / "sw10-h4.pcap", "rb") as f:
        for ts, buf in dpkt.pcap.Reader(f):
            ip = dpkt.ethernet.Ethernet(buf).data
            pk.append((float(ts) + ip.len * 8 / 10e9, ip.data))
    syn = next(ts for ts, t in pk if t.flags & dpkt.tcp.TH_SYN)
    seen, last, best = set(), syn, 0.0
    for ts, t in pk:
        if t.flags & dpkt.tcp.TH_SYN:
            continue
        if t.seq in seen:
            continue
        seen.add(t.seq)
        best, last = max(best, ts - last), ts
    return best * 1e6, len(seen)


@pytest.mark.parametrize("fault", [False, True])
def test_the_longest_wait_is_the_one_the_receivers_link_shows(tmp_path, fault):
    r = _run(tmp_path, fault, "gap" if fault else "nogap")
    g = r.rx_gaps
    assert list(g.columns) == ["flow_id", "gap_ps", "gap_us", "gap_end_us", "first_us"]
    assert len(g) == 1 and g["flow_id"][0] == 0
    want, segments = _gap_from_capture(r)
    assert segments == 60
    # pcap timestamps are in nanoseconds.
    assert abs(g["gap_us"][0] - want) < 0.002, (g, want)
    if fault:
        # Held in the cache until the route came back: the receiver waited most of the failure.
        assert 500 < g["gap_us"][0] < 900, g
        assert r.summary["mechanisms"]["sqr"]["resent"] > 0
    else:
        # No failure: the longest wait is a round trip of the window's growth (about 100 µs on this testbed).
        assert 50 < g["gap_us"][0] < 150, g


def test_without_the_key_there_is_no_table_and_other_transports_refuse_it(tmp_path):
    cfg = {
        "topology": {"preset": "sqr-testbed"},
        "workload": [{"kind": "incast", "senders": 1, "dst": 4, "size": "10KB"}],
    }
    r = tailsim.run(cfg, tmp_path / "r", progress=False)
    assert r.rx_gaps.empty
    with pytest.raises(ConfigError, match=r"output.rx_gaps.*TCP's receivers.*homa"):
        tailsim.run({**cfg, "transport": {"kind": "homa"}, "output": {"rx_gaps": True}}, tmp_path / "h", progress=False)
    # The same refusal, from the same check, for the other TCP-only output.
    with pytest.raises(ConfigError, match=r"output.cwnd_trace.*TCP's window.*homa"):
        tailsim.run(
            {**cfg, "transport": {"kind": "homa"}, "output": {"cwnd_trace": [0]}}, tmp_path / "c", progress=False
        )
