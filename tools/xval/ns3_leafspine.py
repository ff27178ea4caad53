"""ns-3 model of a leaf-spine fabric that replays a flow trace with every flow pinned to a given path.

Part of the tailsim/ns-3 cross-validation (tools/xval/README.md); run by tcp_vs_ns3.py, or on its own:

    python ns3_leafspine.py --trace trace.csv --transport dctcp --out fct.csv

Needs the `ns3` wheel from PyPI (3.44.post0). The trace is tailsim's CSV trace format with a `path` column
(`src,dst,size_bytes,start_us,path`; the path lists the switches, e.g. `leaf0 spine1 leaf2`).

How paths are pinned with static routing: host j owns one IPv4 address per spine k, 10.k.j.1/16 (so at most
256 hosts and 256 spines). A leaf sends 10.k.0.0/16 up to spine k unless the /24 is one of its own hosts;
spine k sends 10.k.j.0/24 down to host j's leaf. A flow pinned through spine k connects from the source's
spine-k address (ns-3's source address selection picks the interface address on the destination's /16; the
socket is bound to it as well) to the destination's spine-k address, so its data and its ACKs both cross
spine k, as a pinned tailsim flow's do. Same-leaf flows use the spine-0 addresses and stay in the leaf.

Queues: every egress port (switch ports and host NICs) has a root queue disc of `buffer` bytes in front of a
one-packet NetDevice queue; for DCTCP a RED queue disc turned into a step marker on the instantaneous queue
(QW = 1, MinTh = MaxTh, no gentle mode, ECN marking instead of dropping), for TCP a FIFO. Because the
NetDevice queue holds the next packet outside the queue disc while the link is busy, the queue disc's
limit and threshold are lowered by one full packet, so that the bytes waiting at a port (queue disc + the
device's packet, the packet on the wire excluded as tailsim counts them) match tailsim's admission and
marking rules exactly whenever the device holds a full-size packet.

Per-flow completion time: from the BulkSendApplication's start (it opens the connection: SYN at once) to
the moment the PacketSink has received the flow's last byte in order.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
import time
from decimal import Decimal
from pathlib import Path

# ---------------------------------------------------------------------------------------------------------
# Units, parsed exactly as tailsim parses them (decimal prefixes; KiB etc. binary).

_RATE = {"bps": 1, "kbps": 10**3, "mbps": 10**6, "gbps": 10**9, "tbps": 10**12}
_TIME_PS = {"ps": Decimal(1), "ns": Decimal(10**3), "us": Decimal(10**6), "µs": Decimal(10**6)}
_TIME_PS.update({"ms": Decimal(10**9), "s": Decimal(10**12)})
_SIZE = {"B": 1, "KB": 10**3, "kB": 10**3, "MB": 10**6, "GB": 10**9, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30}


def _split(text: str) -> tuple[Decimal, str]:
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-zµ]*)\s*", text)
    if not m:
        raise ValueError(f"cannot parse {text!r}")
    return Decimal(m.group(1)), m.group(2)


def rate_bps(text: str) -> int:
    """'10Gbps' -> 10_000_000_000."""
    v, unit = _split(text)
    return int(v * _RATE[unit.lower()])


def time_ps(text: str) -> int:
    """'1us' -> 1_000_000 (picoseconds)."""
    v, unit = _split(text)
    if unit == "" and v == 0:
        return 0
    return int(v * _TIME_PS[unit])


def size_bytes(text: str) -> int:
    """'22.5KB' -> 22500; a bare number is bytes."""
    v, unit = _split(text)
    return int(v * _SIZE[unit or "B"])


def start_ps_of(us_text: str) -> int:
    """A trace's start_us field, converted to picoseconds exactly (no binary floating point)."""
    return int((Decimal(us_text) * 10**6).to_integral_value())


# ---------------------------------------------------------------------------------------------------------
# The per-flow bookkeeping that runs on every received packet lives in C++ (a Python callback per packet
# would dominate the run time).

CPP_HELPERS = r"""
#include <cstdint>
#include <vector>

namespace xval
{
struct FlowRec
{
    uint64_t size;
    uint64_t got;
    int64_t endPs;
    uint32_t retransmits;
    uint32_t timeouts;
};

std::vector<FlowRec> g_flows;
uint64_t g_done = 0;

void
OnRx(uint32_t i, ns3::Ptr<const ns3::Packet> p, const ns3::Address&)
{
    FlowRec& f = g_flows[i];
    f.got += p->GetSize();
    if (f.endPs < 0 && f.got >= f.size)
    {
        f.endPs = ns3::Simulator::Now().GetPicoSeconds();
        if (++g_done == g_flows.size())
        {
            ns3::Simulator::Stop();
        }
    }
}

uint64_t g_marksData = 0;
uint64_t g_marksControl = 0;

// ECN marks by what they land on: data segments, or header-only packets (ACK, SYN; ECN-capable in ns-3's DCTCP).
void
OnMark(ns3::Ptr<const ns3::QueueDiscItem> item, const char*)
{
    (item->GetSize() > 100 ? g_marksData : g_marksControl)++;
}

void
HookMarks(ns3::Ptr<ns3::QueueDisc> q)
{
    q->TraceConnectWithoutContext("Mark", ns3::MakeCallback(&OnMark));
}

uint64_t
MarksOnControl()
{
    return g_marksControl;
}

void
OnRetransmit(uint32_t i,
             ns3::Ptr<const ns3::Packet>,
             const ns3::TcpHeader&,
             const ns3::Address&,
             const ns3::Address&,
             ns3::Ptr<const ns3::TcpSocketBase>)
{
    g_flows[i].retransmits++;
}

// A data retransmission timeout doubles the RTO (TcpSocketBase::ReTxTimeout: min(2 RTO, 60 s)); every other
// update recomputes it from the RTT estimator, which gives exactly twice the old value only by a picosecond
// coincidence. (SYN retries set it otherwise and are not counted.)
void
OnRto(uint32_t i, ns3::Time before, ns3::Time after)
{
    if (after == before + before || (after == ns3::Seconds(60) && before >= ns3::Seconds(30)))
    {
        g_flows[i].timeouts++;
    }
}

void
HookSocket(ns3::Ptr<ns3::BulkSendApplication> app, uint32_t i)
{
    app->GetSocket()->TraceConnectWithoutContext("RTO", ns3::MakeBoundCallback(&OnRto, i));
}

// One flow: a PacketSink on the destination (its own port) and a BulkSend on the source, bound to the
// source address of the flow's path and connecting to the destination address of the same path.
void
AddFlow(ns3::Ptr<ns3::Node> src,
        ns3::Ptr<ns3::Node> dst,
        ns3::Ipv4Address srcAddr,
        ns3::Ipv4Address dstAddr,
        uint16_t port,
        uint64_t size,
        int64_t startPs,
        uint32_t sendSize)
{
    uint32_t i = g_flows.size();
    g_flows.push_back(FlowRec{size, 0, -1, 0, 0});
    ns3::TypeIdValue tcp(ns3::TcpSocketFactory::GetTypeId());

    ns3::Ptr<ns3::PacketSink> sink = ns3::CreateObject<ns3::PacketSink>();
    sink->SetAttribute("Protocol", tcp);
    sink->SetAttribute("Local",
                       ns3::AddressValue(ns3::InetSocketAddress(ns3::Ipv4Address::GetAny(), port)));
    dst->AddApplication(sink);
    sink->SetStartTime(ns3::Seconds(0));
    sink->TraceConnectWithoutContext("Rx", ns3::MakeBoundCallback(&OnRx, i));

    ns3::Ptr<ns3::BulkSendApplication> app = ns3::CreateObject<ns3::BulkSendApplication>();
    app->SetAttribute("Protocol", tcp);
    app->SetAttribute("Remote", ns3::AddressValue(ns3::InetSocketAddress(dstAddr, port)));
    app->SetAttribute("Local", ns3::AddressValue(ns3::InetSocketAddress(srcAddr, 0)));
    app->SetAttribute("MaxBytes", ns3::UintegerValue(size));
    app->SetAttribute("SendSize", ns3::UintegerValue(sendSize));
    src->AddApplication(app);
    app->SetStartTime(ns3::PicoSeconds(startPs));
    app->TraceConnectWithoutContext("TcpRetransmission", ns3::MakeBoundCallback(&OnRetransmit, i));
    // The socket exists once the application has started; hook its RTO 1 ps later.
    ns3::Simulator::Schedule(ns3::PicoSeconds(startPs + 1), &HookSocket, app, i);
}

int64_t
EndPs(uint32_t i)
{
    return g_flows[i].endPs;
}

uint32_t
Retransmits(uint32_t i)
{
    return g_flows[i].retransmits;
}

uint32_t
Timeouts(uint32_t i)
{
    return g_flows[i].timeouts;
}

uint64_t
Done()
{
    return g_done;
}

// Diagnostics only (--reno tailsim-ss, tailsim-ss-fs): ns-3's Linux Reno with tailsim's slow start, which
// adds every segment a cumulative ACK covers (SACKed ones included) and does not stop at ssthresh; with
// FlightSizeSsthresh, also tailsim's (RFC 5681's) ssthresh on a loss or timeout: half the data outstanding
// (HighData - HighACK), not half of ns-3's BytesInFlight (the RFC 6675 pipe).
class TcpTailsimSs : public ns3::TcpLinuxReno
{
  public:
    static ns3::TypeId GetTypeId()
    {
        static ns3::TypeId tid =
            ns3::TypeId("xval::TcpTailsimSs")
                .SetParent<ns3::TcpLinuxReno>()
                .AddConstructor<TcpTailsimSs>()
                .AddAttribute("FlightSizeSsthresh",
                              "ssthresh = max(FlightSize / 2, 2 MSS) with FlightSize = HighData - HighACK",
                              ns3::BooleanValue(false),
                              ns3::MakeBooleanAccessor(&TcpTailsimSs::m_flightSize),
                              ns3::MakeBooleanChecker());
        return tid;
    }

    uint32_t GetSsThresh(ns3::Ptr<const ns3::TcpSocketState> tcb, uint32_t bytesInFlight) override
    {
        if (!m_flightSize)
        {
            return ns3::TcpLinuxReno::GetSsThresh(tcb, bytesInFlight);
        }
        uint32_t flight = tcb->m_highTxMark.Get() - tcb->m_lastAckedSeq;
        return std::max(2 * tcb->m_segmentSize, flight / 2);
    }

    ns3::TypeId GetInstanceTypeId() const override
    {
        return GetTypeId();
    }

    TcpTailsimSs() = default;

    TcpTailsimSs(const TcpTailsimSs& o)
        : ns3::TcpLinuxReno(o),
          m_flightSize(o.m_flightSize),
          m_prevAck(o.m_prevAck),
          m_cumulative(o.m_cumulative)
    {
    }

    std::string GetName() const override
    {
        return "TcpTailsimSs";
    }

    ns3::Ptr<ns3::TcpCongestionOps> Fork() override
    {
        return ns3::CopyObject<TcpTailsimSs>(this);
    }

    void PktsAcked(ns3::Ptr<ns3::TcpSocketState> tcb, uint32_t segmentsAcked, const ns3::Time& rtt) override
    {
        if (m_prevAck == ns3::SequenceNumber32(0) || tcb->m_lastAckedSeq < m_prevAck)
        {
            m_prevAck = tcb->m_lastAckedSeq;
        }
        m_cumulative = (tcb->m_lastAckedSeq - m_prevAck) / tcb->m_segmentSize;
        m_prevAck = tcb->m_lastAckedSeq;
    }

  protected:
    uint32_t SlowStart(ns3::Ptr<ns3::TcpSocketState> tcb, uint32_t segmentsAcked) override
    {
        uint32_t n = std::max(m_cumulative, segmentsAcked);
        m_cumulative = 0;
        tcb->m_cWnd = tcb->m_cWnd + n * tcb->m_segmentSize;
        return 0;
    }

  private:
    bool m_flightSize{false};
    ns3::SequenceNumber32 m_prevAck{0};
    uint32_t m_cumulative{0};
};

// Diagnostic only (--dctcp-floor): ns-3's DCTCP, whose cut (1 - alpha/2) cwnd has no lower bound, with the
// window kept at one MSS or more as tailsim keeps it (Linux: two). Below one MSS ns-3's sender waits for a
// full segment's window (silly-window avoidance) with nothing in flight, until the RTO fires.
class TcpDctcpFloor : public ns3::TcpDctcp
{
  public:
    static ns3::TypeId GetTypeId()
    {
        static ns3::TypeId tid =
            ns3::TypeId("xval::TcpDctcpFloor").SetParent<ns3::TcpDctcp>().AddConstructor<TcpDctcpFloor>();
        return tid;
    }

    ns3::TypeId GetInstanceTypeId() const override
    {
        return GetTypeId();
    }

    TcpDctcpFloor() = default;

    TcpDctcpFloor(const TcpDctcpFloor& o)
        : ns3::TcpDctcp(o)
    {
    }

    std::string GetName() const override
    {
        return "TcpDctcpFloor";
    }

    ns3::Ptr<ns3::TcpCongestionOps> Fork() override
    {
        return ns3::CopyObject<TcpDctcpFloor>(this);
    }

    uint32_t GetSsThresh(ns3::Ptr<const ns3::TcpSocketState> tcb, uint32_t bytesInFlight) override
    {
        return std::max(ns3::TcpDctcp::GetSsThresh(tcb, bytesInFlight), tcb->m_segmentSize);
    }
};

void
RegisterDiagnostics()
{
    TcpTailsimSs::GetTypeId();
    TcpDctcpFloor::GetTypeId();
}
} // namespace xval
"""


def read_trace(path: Path) -> list[dict]:
    """Flows of a tailsim CSV trace with a `path` column, in start order (file order among equal starts)."""
    rows = []
    with open(path, newline="") as fh:
        lines = (ln for ln in fh if ln.strip() and not ln.lstrip().startswith("#"))
        for r in csv.DictReader(lines):
            rows.append(
                {
                    "src": int(r["src"]),
                    "dst": int(r["dst"]),
                    "size_bytes": int(r["size_bytes"]),
                    "start_ps": start_ps_of(r["start_us"]),
                    "path": (r.get("path") or "").strip(),
                }
            )
    order = sorted(range(len(rows)), key=lambda i: rows[i]["start_ps"])  # stable, as tailsim sorts
    return [rows[i] for i in order]


def spine_of(flow: dict, hosts_per_leaf: int, spines: int) -> int:
    """The spine a flow's path crosses (0 for a same-leaf flow), checked against its hosts."""
    names = flow["path"].split()
    src_leaf, dst_leaf = flow["src"] // hosts_per_leaf, flow["dst"] // hosts_per_leaf
    if not names:
        raise SystemExit(f"flow {flow['src']}->{flow['dst']}: no path (this model needs every flow pinned)")
    if names[0] != f"leaf{src_leaf}" or names[-1] != f"leaf{dst_leaf}":
        raise SystemExit(f"flow {flow['src']}->{flow['dst']}: path {flow['path']!r} does not join their leaves")
    if src_leaf == dst_leaf:
        if len(names) != 1:
            raise SystemExit(f"flow {flow['src']}->{flow['dst']}: same-leaf flow with path {flow['path']!r}")
        return 0
    m = re.fullmatch(r"spine(\d+)", names[1]) if len(names) == 3 else None
    if not m or int(m.group(1)) >= spines:
        raise SystemExit(f"flow {flow['src']}->{flow['dst']}: path {flow['path']!r} is not leaf spine leaf")
    return int(m.group(1))


def add_fabric_args(ap: argparse.ArgumentParser) -> None:
    """The scenario's fabric and queue flags, shared with tcp_vs_ns3.py."""
    ap.add_argument("--leaves", type=int, default=4)
    ap.add_argument("--spines", type=int, default=2)
    ap.add_argument("--hosts-per-leaf", type=int, default=8)
    ap.add_argument("--edge-rate", default="10Gbps")
    ap.add_argument("--core-rate", default="40Gbps")
    ap.add_argument("--edge-delay", default="1us")
    ap.add_argument("--core-delay", default="1us")
    ap.add_argument("--buffer", default="225KB", help="bytes per egress port (switches and NICs)")
    ap.add_argument("--ecn-threshold", default="22.5KB", help="DCTCP's K (marked when the queue holds more)")
    ap.add_argument("--mss", type=int, default=1460)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trace", type=Path, required=True, help="CSV trace with a path column")
    ap.add_argument("--out", type=Path, required=True, help="per-flow results (CSV)")
    ap.add_argument("--stats", type=Path, help="run statistics (JSON); default: OUT with .json")
    ap.add_argument("--transport", choices=["tcp", "dctcp"], required=True)
    ap.add_argument("--reno", choices=["linux", "classic", "tailsim-ss", "tailsim-ss-fs"], default="linux",
                    help="congestion control for --transport tcp: ns3::TcpLinuxReno (default; DCTCP's base "
                    "class), ns3::TcpNewReno (one segment per ACK in slow start) or, as diagnostics, Linux "
                    "Reno with tailsim's slow start (all cumulatively ACKed segments, no cap at ssthresh), "
                    "and with tailsim's ssthresh (half of HighData - HighACK) too (-fs)")  # fmt: skip
    add_fabric_args(ap)
    ap.add_argument("--init-cwnd", type=int, default=10)
    ap.add_argument("--min-rto", default="200us")
    ap.add_argument("--syn-rto", default="200us")
    ap.add_argument("--dupthresh", type=int, default=3)
    ap.add_argument("--dctcp-g", type=float, default=1 / 16)
    ap.add_argument("--dctcp-alpha-init", type=float, default=1.0)
    ap.add_argument("--dctcp-floor", action="store_true",
                    help="diagnostic: never cut DCTCP's window below one MSS (ns-3's TcpDctcp can, then stalls "
                    "until the RTO)")  # fmt: skip
    ap.add_argument("--no-queue-offset", action="store_true",
                    help="do not lower the queue disc's limit and K by one packet for the device queue")  # fmt: skip
    ap.add_argument("--max-time", default="10s", help="stop this long after the last flow's start at the latest")
    args = ap.parse_args(argv)

    flows = read_trace(args.trace)
    hosts = args.leaves * args.hosts_per_leaf
    if hosts > 256 or args.spines > 256:
        raise SystemExit("the addressing plan (10.spine.host.1) allows at most 256 hosts and 256 spines")
    if len(flows) > 60000:
        raise SystemExit("one PacketSink port per flow: at most 60000 flows")
    for f in flows:
        if not (0 <= f["src"] < hosts and 0 <= f["dst"] < hosts) or f["src"] == f["dst"]:
            raise SystemExit(f"bad hosts in flow {f}")
        f["spine"] = spine_of(f, args.hosts_per_leaf, args.spines)

    t0 = time.time()
    from ns import ns  # imported late: loading ns-3 takes seconds

    ns.Time.SetResolution(ns.Time.PS)  # tailsim's time unit; ns-3 rounds serialization times to it
    ns.cppyy.cppdef(CPP_HELPERS)
    xval = ns.cppyy.gbl.xval
    t_loaded = time.time()

    mtu = args.mss + 40  # IPv4 + TCP headers without options (timestamps are off)
    buffer = size_bytes(args.buffer)
    k = size_bytes(args.ecn_threshold)
    offset = 0 if args.no_queue_offset else mtu

    # --- TCP, identical to tailsim's [transport] where ns-3 allows (README.md lists the rest) ---
    cfg = ns.Config.SetDefault
    xval.RegisterDiagnostics()
    reno = {"linux": "ns3::TcpLinuxReno", "classic": "ns3::TcpNewReno"}
    reno.update({"tailsim-ss": "xval::TcpTailsimSs", "tailsim-ss-fs": "xval::TcpTailsimSs"})
    cfg("xval::TcpTailsimSs::FlightSizeSsthresh", ns.BooleanValue(args.reno == "tailsim-ss-fs"))
    cc = {"tcp": reno[args.reno], "dctcp": "xval::TcpDctcpFloor" if args.dctcp_floor else "ns3::TcpDctcp"}
    cfg("ns3::TcpL4Protocol::SocketType", ns.TypeIdValue(ns.TypeId.LookupByName(cc[args.transport])))
    cfg("ns3::TcpL4Protocol::RecoveryType", ns.TypeIdValue(ns.TypeId.LookupByName("ns3::TcpClassicRecovery")))
    cfg("ns3::TcpSocket::SegmentSize", ns.UintegerValue(args.mss))
    cfg("ns3::TcpSocket::InitialCwnd", ns.UintegerValue(args.init_cwnd))
    cfg("ns3::TcpSocket::DelAckCount", ns.UintegerValue(1))  # an ACK for every segment
    cfg("ns3::TcpSocket::ConnTimeout", ns.TimeValue(ns.PicoSeconds(time_ps(args.syn_rto))))
    cfg("ns3::TcpSocket::ConnCount", ns.UintegerValue(100))  # never give up (tailsim does not)
    cfg("ns3::TcpSocket::DataRetries", ns.UintegerValue(100000))
    cfg("ns3::TcpSocket::TcpNoDelay", ns.BooleanValue(True))
    big = 1 << 26  # 64 MiB: windows never limited by socket buffers (tailsim has no receive window)
    cfg("ns3::TcpSocket::SndBufSize", ns.UintegerValue(big))
    cfg("ns3::TcpSocket::RcvBufSize", ns.UintegerValue(big))
    cfg("ns3::TcpSocketBase::Sack", ns.BooleanValue(True))
    cfg("ns3::TcpSocketBase::Timestamp", ns.BooleanValue(False))  # keeps data packets at MSS + 40 B
    cfg("ns3::TcpSocketBase::WindowScaling", ns.BooleanValue(True))
    cfg("ns3::TcpSocketBase::MinRto", ns.TimeValue(ns.PicoSeconds(time_ps(args.min_rto))))
    cfg("ns3::TcpSocketBase::ClockGranularity", ns.TimeValue(ns.PicoSeconds(1)))  # RTO = SRTT + 4 RTTVAR
    cfg("ns3::TcpSocketBase::ReTxThreshold", ns.UintegerValue(args.dupthresh))
    cfg("ns3::TcpSocketBase::LimitedTransmit", ns.BooleanValue(True))
    cfg("ns3::TcpDctcp::DctcpShiftG", ns.DoubleValue(args.dctcp_g))
    cfg("ns3::TcpDctcp::DctcpAlphaOnInit", ns.DoubleValue(args.dctcp_alpha_init))

    # --- queues ---
    cfg("ns3::DropTailQueue<Packet>::MaxSize", ns.QueueSizeValue(ns.QueueSize("1p")))
    limit = ns.QueueSizeValue(ns.QueueSize(f"{buffer - offset}B"))
    tch = ns.TrafficControlHelper()
    if args.transport == "dctcp":
        th = float(k - offset + 1)  # RED marks when (bytes queued) >= MinTh, tailsim when queue > K
        cfg("ns3::RedQueueDisc::MaxSize", limit)
        cfg("ns3::RedQueueDisc::MinTh", ns.DoubleValue(th))
        cfg("ns3::RedQueueDisc::MaxTh", ns.DoubleValue(th))
        cfg("ns3::RedQueueDisc::QW", ns.DoubleValue(1.0))
        cfg("ns3::RedQueueDisc::Gentle", ns.BooleanValue(False))
        cfg("ns3::RedQueueDisc::UseEcn", ns.BooleanValue(True))
        cfg("ns3::RedQueueDisc::UseHardDrop", ns.BooleanValue(False))
        cfg("ns3::RedQueueDisc::MeanPktSize", ns.UintegerValue(mtu))
        tch.SetRootQueueDisc("ns3::RedQueueDisc")
    else:
        cfg("ns3::FifoQueueDisc::MaxSize", limit)
        tch.SetRootQueueDisc("ns3::FifoQueueDisc")

    # --- topology ---
    host_nodes, leaf_nodes, spine_nodes = ns.NodeContainer(), ns.NodeContainer(), ns.NodeContainer()
    host_nodes.Create(hosts)
    leaf_nodes.Create(args.leaves)
    spine_nodes.Create(args.spines)
    stack = ns.InternetStackHelper()
    stack.SetIpv6StackInstall(False)
    static_helper = ns.Ipv4StaticRoutingHelper()
    stack.SetRoutingHelper(static_helper)
    for c in (host_nodes, leaf_nodes, spine_nodes):
        stack.Install(c)

    def p2p(rate: str, delay: str):
        h = ns.PointToPointHelper()
        h.SetDeviceAttribute("DataRate", ns.DataRateValue(ns.DataRate(rate_bps(rate))))
        h.SetChannelAttribute("Delay", ns.TimeValue(ns.PicoSeconds(time_ps(delay))))
        return h

    edge, core = p2p(args.edge_rate, args.edge_delay), p2p(args.core_rate, args.core_delay)
    qdiscs = {"switch": [], "nic": []}
    link_no = [0]

    def connect(helper, a, b, a_is_host: bool):
        """Link nodes a and b; returns (a's interface index, b's interface index, b's link address)."""
        devs = helper.Install(a, b)
        qd = tch.Install(devs)  # before any address: ns-3 would otherwise install its default (FqCoDel)
        qdiscs["nic" if a_is_host else "switch"].append(qd.Get(0))
        qdiscs["switch"].append(qd.Get(1))
        xval.HookMarks(qd.Get(0))
        xval.HookMarks(qd.Get(1))
        base = 0xAC100000 + 4 * link_no[0]  # 172.16.0.0/12, one /30 per link
        link_no[0] += 1
        mask = ns.Ipv4Mask("255.255.255.252")
        out = []
        for n, (node, dev) in enumerate(((a, devs.Get(0)), (b, devs.Get(1)))):
            ip = node.GetObject[ns.Ipv4]()
            idx = ip.AddInterface(dev)
            ip.AddAddress(idx, ns.Ipv4InterfaceAddress(ns.Ipv4Address(base + 1 + n), mask))
            ip.SetUp(idx)
            out.append(idx)
        return out[0], out[1], ns.Ipv4Address(base + 2)

    def addr(spine: int, host: int) -> int:
        return (10 << 24) | (spine << 16) | (host << 8) | 1

    leaf_down = {}  # (leaf, host) -> leaf's interface towards the host
    for h in range(hosts):
        leaf = h // args.hosts_per_leaf
        hi, li, leaf_addr = connect(edge, host_nodes.Get(h), leaf_nodes.Get(leaf), True)
        leaf_down[(leaf, h)] = li
        ip = host_nodes.Get(h).GetObject[ns.Ipv4]()
        for s in range(args.spines):
            # A /16 per spine: ns-3's TCP takes its source address from the route (SetupEndpoint overrides a
            # bound one), and source address selection picks the interface address on the destination's subnet.
            ip.AddAddress(hi, ns.Ipv4InterfaceAddress(ns.Ipv4Address(addr(s, h)), ns.Ipv4Mask("255.255.0.0")))
        static_helper.GetStaticRouting(ip).SetDefaultRoute(leaf_addr, hi)
    leaf_up, spine_down = {}, {}
    for leaf in range(args.leaves):
        for s in range(args.spines):
            li, si, _ = connect(core, leaf_nodes.Get(leaf), spine_nodes.Get(s), False)
            leaf_up[(leaf, s)], spine_down[(s, leaf)] = li, si
    for leaf in range(args.leaves):
        rt = static_helper.GetStaticRouting(leaf_nodes.Get(leaf).GetObject[ns.Ipv4]())
        for s in range(args.spines):
            rt.AddNetworkRouteTo(
                ns.Ipv4Address(addr(s, 0) & 0xFFFF0000), ns.Ipv4Mask("255.255.0.0"), leaf_up[(leaf, s)]
            )
            for h in range(leaf * args.hosts_per_leaf, (leaf + 1) * args.hosts_per_leaf):
                rt.AddNetworkRouteTo(ns.Ipv4Address(addr(s, h) - 1), ns.Ipv4Mask("255.255.255.0"), leaf_down[(leaf, h)])
    for s in range(args.spines):
        rt = static_helper.GetStaticRouting(spine_nodes.Get(s).GetObject[ns.Ipv4]())
        for h in range(hosts):
            rt.AddNetworkRouteTo(
                ns.Ipv4Address(addr(s, h) - 1), ns.Ipv4Mask("255.255.255.0"), spine_down[(s, h // args.hosts_per_leaf)]
            )

    # --- flows ---
    for i, f in enumerate(flows):
        xval.AddFlow(
            host_nodes.Get(f["src"]),
            host_nodes.Get(f["dst"]),
            ns.Ipv4Address(addr(f["spine"], f["src"])),
            ns.Ipv4Address(addr(f["spine"], f["dst"])),
            1024 + i,
            f["size_bytes"],
            f["start_ps"],
            1 << 16,
        )
    last_start = max(f["start_ps"] for f in flows)
    ns.Simulator.Stop(ns.PicoSeconds(last_start + time_ps(args.max_time)))
    t_built = time.time()
    ns.Simulator.Run()
    t_run = time.time()
    sim_end_ps = ns.Simulator.Now().GetPicoSeconds()

    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["flow", "src", "dst", "size_bytes", "start_ps", "fct_ps", "retransmits", "timeouts", "path"])
        for i, f in enumerate(flows):
            end = int(xval.EndPs(i))
            fct = end - f["start_ps"] if end >= 0 else ""
            w.writerow(
                [i, f["src"], f["dst"], f["size_bytes"], f["start_ps"], fct]
                + [int(xval.Retransmits(i)), int(xval.Timeouts(i)), f["path"]]
            )

    def qstats(where: str) -> dict:
        drops = marks = 0
        for q in qdiscs[where]:
            st = q.GetStats()
            drops += int(st.nTotalDroppedPackets)
            marks += int(st.nTotalMarkedPackets)
        return {"drops": drops, "marks": marks}

    stats = {
        "transport": args.transport,
        "flows": len(flows),
        "finished": int(xval.Done()),
        "sim_end_ps": int(sim_end_ps),
        "events_note": "ns-3 does not count events",
        "switch_ports": qstats("switch"),
        "nics": qstats("nic"),
        "marks_on_acks_and_syns": int(xval.MarksOnControl()),
        "wall_s": {"load": t_loaded - t0, "build": t_built - t_loaded, "run": t_run - t_built},
        "time_resolution": str(ns.Time.GetResolution()),
    }
    ns.Simulator.Destroy()
    stats_path = args.stats or args.out.with_suffix(".json")
    stats_path.write_text(json.dumps(stats, indent=2) + "\n")
    print(json.dumps(stats))
    return 0 if stats["finished"] == len(flows) else 1


if __name__ == "__main__":
    sys.exit(main())
