"""Typed builders for experiments: the same structure as the TOML file, with names an editor can complete.

    from tailsim import Experiment, Preset, Switch, Dctcp, Poisson
    exp = Experiment(
        topology=Preset("pfabric-144"),
        switch=Switch(buffer="225KB", ecn_threshold="22.5KB"),
        transport=Dctcp(init_cwnd=12, min_rto="200us"),
        workloads=[Poisson(cdf="websearch", load=0.6, flows=10_000)],
    )
    tailsim.run(exp)

Every field left as ``None`` is left out, so the simulator's documented default applies (docs/config.md).
Units are strings ("10Gbps", "2.5us", "36KB") or plain numbers where the file takes numbers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Optional, Union

Size = Union[int, str]


def _lists(d: dict, key: str) -> dict:
    """``d`` with ``d[key]``, a sequence of pairs, as lists (TOML arrays), when present."""
    if key in d:
        d[key] = [list(p) for p in d[key]]
    return d


class _Table:
    """What the builders share: ``to_dict`` gives the set fields as the file's keys, ``kind`` first when the
    builder has one, ``class_`` and ``raise_`` (Python keywords) spelled ``class`` and ``raise``."""

    kind: ClassVar[Optional[str]] = None

    def to_dict(self) -> dict:
        d: dict = {"kind": self.kind} if self.kind else {}
        for f in fields(self):  # type: ignore[arg-type]  (every subclass is a dataclass)
            v = getattr(self, f.name)
            if v is not None:
                d[f.name[:-1] if f.name in ("class_", "raise_") else f.name] = v
        return d


# --- topology -----------------------------------------------------------------------------------------
@dataclass
class Preset(_Table):
    """A named fabric ("pfabric-144", "homa-144", "detail-128", …; docs/config.md § Presets)."""

    preset: str
    remove_links: Optional[Sequence[Sequence[str]]] = None  # links left out, e.g. [["agg0", "core0"]]

    def to_dict(self) -> dict:
        return _lists(super().to_dict(), "remove_links")


@dataclass
class Star(_Table):
    """One switch, each host on its own link (the BurstRadar testbed's shape)."""

    host_rates: Sequence[str]
    delay: Optional[str] = None

    kind = "star"

    def to_dict(self) -> dict:
        d = super().to_dict()
        d["host_rates"] = list(self.host_rates)
        return d


@dataclass
class LeafSpine(_Table):
    leaves: int
    spines: int
    hosts_per_leaf: int
    edge_rate: str
    core_rate: str
    edge_delay: Optional[str] = None
    core_delay: Optional[str] = None

    kind = "leaf-spine"


@dataclass
class FatTree(_Table):
    """A three-tier fat tree: k-ary (``k``), or any shape (``pods``, ``tors_per_pod``, ``hosts_per_tor``,
    ``aggs_per_pod``, ``cores`` instead of ``k``), with per-tier rates if they differ."""

    k: Optional[int] = None
    rate: Optional[str] = None
    delay: Optional[str] = None
    pods: Optional[int] = None
    tors_per_pod: Optional[int] = None
    hosts_per_tor: Optional[int] = None
    aggs_per_pod: Optional[int] = None
    cores: Optional[int] = None
    edge_rate: Optional[str] = None
    agg_rate: Optional[str] = None
    core_rate: Optional[str] = None
    remove_links: Optional[Sequence[Sequence[str]]] = None

    kind = "fat-tree"

    def to_dict(self) -> dict:
        return _lists(super().to_dict(), "remove_links")


@dataclass
class HtsimTopology(_Table):
    """An htsim .topo file."""

    path: str

    kind = "htsim"


@dataclass
class Inline(_Table):
    """A topology written link by link in the experiment: ``hosts`` (h0 … h<N−1>), ``switches`` as
    ``{"name", "delay"}`` and ``links`` as ``{"a", "b", "rate", "delay"}`` (docs/config.md § inline). Build one from
    a networkx graph (:meth:`from_networkx`) or a DataFrame of links (:meth:`from_links`)."""

    hosts: int
    links: Sequence[Mapping[str, Any]]
    switches: Sequence[Mapping[str, Any]] = ()

    def to_dict(self) -> dict:
        d: dict = {"kind": "inline", "hosts": int(self.hosts)}
        if self.switches:
            d["switch"] = [_clean(s) for s in self.switches]
        d["link"] = [_clean(link) for link in self.links]
        return d

    @classmethod
    def from_networkx(cls, graph: Any, rate: Optional[str] = None, delay: Optional[str] = None) -> Inline:
        """Hosts are the nodes with ``kind="host"`` or named ``h<i>`` (numbered in node order, or by ``i`` when
        the names are exactly h0 … h<N−1>); every other node is a switch named ``str(node)``, with an optional
        ``delay`` attribute. Each edge is a link with its ``rate`` and ``delay`` attributes, else ``rate`` and
        ``delay`` given here; an edge without a rate is an error naming it."""
        import re

        def is_host(n, data):
            return data.get("kind") == "host" or re.fullmatch(r"h\d+", str(n)) is not None

        nodes = list(graph.nodes(data=True))
        hosts = [n for n, data in nodes if is_host(n, data)]
        names = [str(n) for n in hosts]
        if sorted(names, key=lambda x: int(x[1:]) if x[1:].isdigit() else -1) == [f"h{i}" for i in range(len(hosts))]:
            index = {n: int(str(n)[1:]) for n in hosts}
        else:
            index = {n: i for i, n in enumerate(hosts)}
        switches = []
        for n, data in nodes:
            if n not in index:
                sw = {"name": str(n)}
                if data.get("delay") is not None:
                    sw["delay"] = data["delay"]
                switches.append(sw)

        def end(n):
            return f"h{index[n]}" if n in index else str(n)

        links = []
        for a, b, data in graph.edges(data=True):
            r = data.get("rate", rate)
            if r is None:
                raise ValueError(f"edge ({a!r}, {b!r}) has no `rate` attribute and no default rate was given")
            link = {"a": end(a), "b": end(b), "rate": r}
            d = data.get("delay", delay)
            if d is not None:
                link["delay"] = d
            links.append(link)
        return cls(hosts=len(hosts), switches=switches, links=links)

    @classmethod
    def from_links(cls, links: Any, hosts: Optional[int] = None, switches: Sequence[Mapping[str, Any]] = ()) -> Inline:
        """From a DataFrame (or records) with columns ``a``, ``b``, ``rate`` and optionally ``delay``; ends as
        in a topology file ("h3" or "3" for hosts, else switch names). ``hosts`` defaults to the number of
        distinct host ends; switches not listed in ``switches`` are the other ends."""
        import pandas as pd

        df = pd.DataFrame(links)
        for col in ("a", "b", "rate"):
            if col not in df.columns:
                raise ValueError(f"links: missing column {col!r} (columns: {', '.join(map(str, df.columns))})")
        records = [{k: v for k, v in r.items() if not (isinstance(v, float) and v != v)} for r in df.to_dict("records")]
        ends = [str(r[k]) for r in records for k in ("a", "b")]

        def host_no(e):
            e = e[1:] if e.startswith("h") else e
            return int(e) if e.isdigit() else None

        listed = {s["name"] for s in switches}
        host_ends = {host_no(e) for e in ends if e not in listed and host_no(e) is not None}
        extra = [{"name": e} for e in dict.fromkeys(ends) if e not in listed and host_no(e) is None]
        n = hosts if hosts is not None else len(host_ends)
        links_out = [{k: (str(v) if k in ("a", "b") else v) for k, v in r.items()} for r in records]
        return cls(hosts=n, switches=[*switches, *extra], links=links_out)


def _clean(m: Mapping[str, Any]) -> dict:
    return {k: v for k, v in m.items() if v is not None}


@dataclass
class TopologyFile(_Table):
    """A tailsim topology file (docs/config.md)."""

    path: str

    kind = "file"


# --- fabric settings ----------------------------------------------------------------------------------
@dataclass
class Host(_Table):
    tx_delay: Optional[str] = None
    rx_delay: Optional[str] = None
    rx_parallel: Optional[int] = None  # packets processed at once (FastLane's server model: 16)
    nic_buffer: Optional[Size] = None
    nic_scheduler: Optional[str] = None  # "priority", "fifo" or "per-flow-round-robin" (default per transport)


@dataclass
class Switch(_Table):
    buffer: Optional[Size] = None
    buffer_mode: Optional[str] = None
    shared_buffer: Optional[Size] = None
    alpha: Optional[float] = None
    ecn_threshold: Optional[Union[Size, Sequence[Size]]] = None
    ecn_mode: Optional[str] = None  # "per-class" or "per-port"
    trim: Optional[Size] = None  # NDP's trimming threshold
    bounce: Optional[bool] = None  # drop notices to senders (net/mech/bounce.rs)
    delay: Optional[str] = None
    queue: Optional[str] = None  # "fifo" or "pfabric"
    starvation_prevention: Optional[bool] = None
    pfabric_queues: Optional[int] = None  # 2 for pFabric-EDF
    class_reserve: Optional[Size] = None  # per-class reservation in per-port FIFO buffers
    reserved_classes: Optional[int] = None
    architecture: Optional[str] = None  # "output-queued" or "cioq" (DeTail's combined input-output queues)
    ingress_buffer: Optional[Size] = None  # CIOQ: per ingress port
    speedup: Optional[int] = None  # CIOQ: crossbar speed over the egress rate


@dataclass
class Routing(_Table):
    load_balance: Optional[str] = None  # "ecmp", "spray", "adaptive" or "detail"
    reroute: Optional[str] = None  # failure-detection delay before routes re-converge, e.g. "50us"
    alb_thresholds: Optional[Sequence[Size]] = None  # DeTail's adaptive load balancing thresholds
    hash: Optional[str] = None  # ECMP's choice: "tailsim" (salted flow hash) or "first" (ns-3's global routing)


@dataclass
class PacketFormat(_Table):
    mss: Optional[int] = None
    header: Optional[int] = None
    ack: Optional[int] = None
    wire_overhead: Optional[int] = None


# --- transports ---------------------------------------------------------------------------------------
@dataclass
class Tcp(_Table):
    """TCP NewReno with SACK (docs/transport-tcp.md)."""

    init_cwnd: Optional[int] = None
    min_rto: Optional[str] = None
    max_rto: Optional[str] = None
    init_rto: Optional[str] = None
    dupthresh: Optional[int] = None
    delayed_ack: Optional[int] = None
    delayed_ack_timeout: Optional[str] = None
    sack: Optional[bool] = None
    class_: Optional[int] = None
    priority: Optional[str] = None  # "none", "remaining", "bytes-sent", "flow-size", "deadline"
    fast_retransmit: Optional[bool] = None
    rto: Optional[str] = None
    probe_after: Optional[int] = None
    max_cwnd: Optional[int] = None
    class_thresholds: Optional[Union[str, Sequence[Size]]] = None  # sizes, "optimal" or "equal-count"
    classes: Optional[int] = None
    class_by: Optional[str] = None  # "flow-size" or "bytes-sent"
    ecn: Optional[bool] = None  # RFC 3168 (tcp, cubic)
    ooo_inflation: Optional[bool] = None  # FastLane's FL-PS option
    handshake: Optional[bool] = None  # SYN / SYN-ACK before data
    syn_rto: Optional[str] = None
    cwr_growth: Optional[bool] = None  # grow during the round an ECN cut applies to (off: Linux's CWR)
    slow_start_cap: Optional[bool] = None  # slow start stops at ssthresh, as Linux's (default; pFabric: off)

    kind = "tcp"


@dataclass
class Dctcp(Tcp):
    dctcp_g: Optional[float] = None
    dctcp_alpha_init: Optional[float] = None

    kind = "dctcp"


@dataclass
class Cubic(Tcp):
    """CUBIC (RFC 9438) on TCP's loss recovery (docs/transport-tcp.md)."""

    cubic_c: Optional[float] = None
    cubic_beta: Optional[float] = None

    kind = "cubic"


@dataclass
class PFabric(Tcp):
    """pFabric's minimal rate control (docs/pfabric.md); pair with ``Switch(queue="pfabric", buffer="36KB")``."""

    kind = "pfabric"


@dataclass
class Homa(_Table):
    """Homa (docs/homa.md): receiver-driven, message-based; pair with ``Preset("homa-144")``."""

    rtt_bytes: Optional[Size] = None
    unscheduled_levels: Optional[int] = None
    unscheduled_cutoffs: Optional[Sequence[Size]] = None
    overcommit: Optional[int] = None
    pacer: Optional[bool] = None
    tail_boost: Optional[bool] = None
    resend_timeout: Optional[str] = None
    header: Optional[int] = None

    kind = "homa"


@dataclass
class Pias(Dctcp):
    """PIAS (docs/pias.md): DCTCP whose packets are demoted through priority classes by bytes sent."""

    kind = "pias"


@dataclass
class Phost(_Table):
    """pHost (docs/phost.md): receiver tokens, a free first RTTbytes; pair with ``Preset("homa-144")``."""

    rtt_bytes: Optional[Size] = None
    header: Optional[int] = None
    resend_timeout: Optional[str] = None
    pacer: Optional[bool] = None
    free_tokens_high: Optional[bool] = None
    token_expiry: Optional[str] = None
    token_timeout: Optional[str] = None
    downgrade_for: Optional[str] = None

    kind = "phost"


@dataclass
class Ndp(_Table):
    """NDP (docs/ndp.md): pulls, spraying, trimming switches; pair with ``Switch(trim=...)`` to choose the
    trimming threshold."""

    rtt_bytes: Optional[Size] = None
    header: Optional[int] = None
    resend_timeout: Optional[str] = None
    pull_order: Optional[str] = None  # "fair" (messages in turn, htsim's) or "fifo" (every pull in order)
    pull_on_ack: Optional[bool] = None  # a pull the pacer would send at once rides on its ACK/NACK (htsim's)
    pull_spacing: Optional[Size] = None  # bytes' time at the link rate between pulls (default: one full frame)

    kind = "ndp"


@dataclass
class Rdma(_Table):
    """RDMA WRITE over RoCEv2 RC (docs/transport-rdma.md): go-back-N at line rate."""

    class_: Optional[int] = None
    rto: Optional[str] = None
    ack_every: Optional[int] = None

    kind = "rdma"


@dataclass
class Ideal(_Table):
    """pFabric's flow-level SRPT Ideal on the same arrivals (no packets are simulated)."""

    kind = "ideal"


# --- workloads ----------------------------------------------------------------------------------------
@dataclass
class Poisson(_Table):
    """Poisson flow arrivals at a target load (fraction of host link capacity)."""

    load: float
    cdf: Optional[str] = None
    size: Optional[Size] = None
    flows: Optional[int] = None
    until: Optional[str] = None
    start: Optional[str] = None
    pattern: Optional[str] = None  # "all-to-all" or "permutation"
    cdf_interp: Optional[str] = None
    cdf_unit_bytes: Optional[int] = None
    deadline_mean: Optional[str] = None  # pFabric §5.4.2: exponential deadlines for small flows
    deadline_below: Optional[Size] = None
    deadline_min_slack: Optional[float] = None
    class_: Optional[int] = None  # the file's ``class``: every packet of these flows in this class

    kind = "poisson"


@dataclass
class Incast(_Table):
    senders: int
    size: Optional[Size] = None
    cdf: Optional[str] = None
    dst: Optional[int] = None
    count: Optional[int] = None
    interval: Optional[str] = None
    start: Optional[str] = None

    kind = "incast"


@dataclass
class Permutation(_Table):
    size: Size
    start: Optional[str] = None

    kind = "permutation"


@dataclass
class Trace(_Table):
    """Flows from a CSV trace, an htsim .cm or a .flows file."""

    path: str
    start: Optional[str] = None

    kind = "trace"


HostSet = Union[str, Sequence[int]]


@dataclass
class Retrieval(_Table):
    """Request–response traffic (DeTail): each client issues retrievals at ``rate`` per second to random
    servers, responses of ``size``, ``sizes`` or ``cdf`` (docs/config.md § retrieval and workflow)."""

    rate: float
    size: Optional[Size] = None
    sizes: Optional[Sequence[Size]] = None
    cdf: Optional[str] = None
    clients: Optional[HostSet] = None
    servers: Optional[HostSet] = None
    request: Optional[Size] = None
    count: Optional[int] = None
    until: Optional[str] = None
    start: Optional[str] = None
    class_: Optional[int] = None

    kind = "retrieval"


@dataclass
class Workflow(Retrieval):
    """A client's group of retrievals: ``shape = "sequential"`` (``parts``) or ``"partition-aggregate"``
    (``fanout`` or ``totals``)."""

    shape: Optional[str] = None
    parts: Optional[int] = None
    fanout: Optional[Sequence[int]] = None
    totals: Optional[Sequence[Size]] = None

    kind = "workflow"


@dataclass
class Background(_Table):
    """Closed-loop flows: each source keeps ``per_source`` flows going to random destinations."""

    size: Optional[Size] = None
    sizes: Optional[Sequence[Size]] = None
    cdf: Optional[str] = None
    sources: Optional[HostSet] = None
    destinations: Optional[HostSet] = None
    per_source: Optional[int] = None
    class_: Optional[int] = None

    kind = "background"


@dataclass
class Cbr(_Table):
    """Raw packets at ``line_rate`` from ``src`` to ``dst`` (or, with ``shift`` instead, from every host h to
    host h + ``shift``), optionally in on/off periods; sizes fixed (``size``) or from ``packet_sizes`` = [[bytes,
    cumulative probability], …]; ``on``/``off`` fixed durations or [[µs, cumulative probability], …] interpolated
    linearly. Give the fields by name: ``src`` and ``dst`` may be left out for ``shift``."""

    src: Optional[int] = None
    dst: Optional[int] = None
    line_rate: Optional[str] = None
    until: Optional[str] = None
    shift: Optional[int] = None
    size: Optional[Size] = None
    packet_sizes: Optional[Sequence[Sequence[float]]] = None
    on: Optional[Union[str, Sequence[Sequence[float]]]] = None
    off: Optional[Union[str, Sequence[Sequence[float]]]] = None
    start: Optional[str] = None
    class_: Optional[int] = None  # the file's ``class``

    kind = "cbr"

    def to_dict(self) -> dict:
        d = super().to_dict()
        for k in ("packet_sizes", "on", "off"):
            if k in d and not isinstance(d[k], str):
                d[k] = [list(p) for p in d[k]]
        return d


# --- switch mechanisms (each its own table; Experiment(mechanisms=[...])) ------------------------------
@dataclass
class BurstRadar(_Table):
    """Microburst telemetry at the monitor's switch (docs/burstradar.md)."""

    key = "burstradar"
    monitor: Optional[int] = None
    threshold: Optional[str] = None
    watch: Optional[Sequence[int]] = None
    cell: Optional[Size] = None
    ring: Optional[int] = None
    clone_delay: Optional[str] = None
    courier: Optional[Size] = None

    def to_dict(self) -> dict:
        d = super().to_dict()
        if "watch" in d:
            d["watch"] = list(d["watch"])
        return d


@dataclass
class Pfc(_Table):
    """Priority flow control at every switch (docs/config.md § [pfc]; DeTail)."""

    key = "pfc"
    pause: Optional[Size] = None
    unpause: Optional[Size] = None
    response: Optional[str] = None


@dataclass
class FastLane(_Table):
    """Drop notifications from switches to senders (docs/fastlane.md)."""

    key = "fastlane"
    bandwidth: Optional[float] = None
    buffer: Optional[Size] = None
    cap_scale: Optional[float] = None
    strict: Optional[bool] = None


@dataclass
class CoDel(_Table):
    """CoDel's ECN marking at every switch port (docs/fastlane.md); needs an ECN-capable transport."""

    key = "codel"
    target: Optional[str] = None
    interval: Optional[str] = None


@dataclass
class Qjump(_Table):
    """QJUMP's rate-limited priority levels at the hosts (docs/qjump.md)."""

    key = "qjump"
    f: Optional[Union[float, Sequence[float]]] = None
    hosts: Optional[int] = None
    max_packet: Optional[Size] = None
    switch_delay: Optional[str] = None
    edge_rate: Optional[str] = None
    epoch_factor: Optional[float] = None
    epoch: Optional[str] = None
    budget: Optional[Size] = None
    variant: Optional[str] = None
    anchor: Optional[str] = None
    excess: Optional[str] = None
    per: Optional[str] = None


@dataclass
class Sqr(_Table):
    """SQR: switches cache recent packets so a link failure loses none (docs/sqr.md)."""

    key = "sqr"
    recovery: Optional[str] = None
    cache: Optional[str] = None
    delta: Optional[str] = None
    raise_: Optional[Any] = None  # the file's ``raise``
    detect: Optional[str] = None
    window: Optional[Any] = None
    classes: Optional[Any] = None
    pass_cost: Optional[str] = None
    clone_delay: Optional[str] = None
    backstop: Optional[Any] = None
    timestamp_bits: Optional[int] = None
    switches: Optional[Sequence[str]] = None
    backups: Optional[Any] = None
    cache_ports: Optional[Sequence[Sequence[str]]] = None  # [switch, neighbour]: the only caching queues
    turns: Optional[str] = None  # "packet" (default) or "time"


@dataclass
class LinkGuardian(_Table):
    """LinkGuardian: link-local retransmission over corrupting links (docs/linkguardian.md)."""

    key = "linkguardian"
    links: Optional[Sequence[Sequence[str]]] = None
    mode: Optional[str] = None
    backpressure: Optional[bool] = None
    t_flight_resume: Optional[str] = None
    loss_rate: Optional[float] = None
    target: Optional[float] = None
    copies: Optional[int] = None
    max_holes: Optional[int] = None
    dummies: Optional[bool] = None
    control: Optional[Any] = None
    recirc_rate: Optional[str] = None
    recirc_buffer: Optional[Size] = None
    recirc_latency: Optional[str] = None
    ack_timeout: Optional[str] = None
    tick: Optional[str] = None
    resume: Optional[Any] = None
    pause: Optional[Any] = None
    frame: Optional[Any] = None


@dataclass
class Fault(_Table):
    """A change of a link at ``at``: ``state`` "down"/"up", a ``corrupt`` probability or a new ``rate``
    (``one_way``: only a → b); ``duration`` makes it temporary, ``every``/``count``/``jitter`` repeat it."""

    at: str
    link: Sequence[str]
    state: Optional[str] = None
    corrupt: Optional[float] = None
    rate: Optional[str] = None
    one_way: Optional[bool] = None
    duration: Optional[str] = None
    every: Optional[str] = None
    count: Optional[int] = None
    jitter: Optional[str] = None

    def to_dict(self) -> dict:
        d = super().to_dict()
        d["link"] = list(self.link)
        return d


@dataclass
class Stop(_Table):
    time: Optional[str] = None
    max_events: Optional[int] = None


@dataclass
class Output(_Table):
    format: Optional[str] = None
    buckets: Optional[list[Size]] = None
    warmup: Optional[str] = None
    queue_sample: Optional[str] = None
    cwnd_trace: Optional[list[int]] = None  # flow ids whose TCP window goes to cwnd.parquet
    rx_gaps: Optional[bool] = None  # each TCP flow's longest wait at its receiver, to rx_gaps.parquet
    dir: Optional[str] = None
    pcap: Optional[list[Union[str, Sequence[str]]]] = None  # nodes, [a, b] links or "hosts": pcap/<a>-<b>.pcap
    pcap_max_packets: Optional[int] = None


@dataclass
class Experiment(_Table):
    """A whole experiment. ``to_dict()`` gives exactly the structure of the TOML file."""

    topology: Any
    workloads: list[Any] = field(default_factory=list)
    transport: Any = None
    switch: Optional[Switch] = None
    host: Optional[Host] = None
    routing: Optional[Routing] = None
    packet: Optional[PacketFormat] = None
    faults: list[Fault] = field(default_factory=list)
    mechanisms: list[Any] = field(default_factory=list)  # e.g. [BurstRadar(threshold="1.25us")]
    stop: Optional[Stop] = None
    output: Optional[Output] = None
    name: Optional[str] = None
    seed: Optional[int] = None

    def to_dict(self) -> dict:
        d: dict = {}
        if self.name is not None:
            d["name"] = self.name
        if self.seed is not None:
            d["seed"] = self.seed
        d["topology"] = self.topology.to_dict()
        for key in ("transport", "switch", "host", "routing", "packet", "stop", "output"):
            v = getattr(self, key)
            if v is not None:
                d[key] = v.to_dict()
        for m in self.mechanisms:
            if m.key in d:
                raise ValueError(f"mechanisms: [{m.key}] given twice")
            d[m.key] = m.to_dict()
        d["workload"] = [w.to_dict() for w in self.workloads]
        if self.faults:
            d["fault"] = [f.to_dict() for f in self.faults]
        return d
