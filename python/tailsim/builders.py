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

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Optional, Union

Size = Union[int, str]


def _dict(obj: Any, extra: Optional[dict] = None) -> dict:
    out = dict(extra or {})
    for f in fields(obj):
        v = getattr(obj, f.name)
        if v is not None:
            out[f.name] = v
    return out


# --- topology -----------------------------------------------------------------------------------------
@dataclass
class Preset:
    """A named fabric: "pfabric-144" or "homa-144"."""

    preset: str

    def to_dict(self) -> dict:
        return {"preset": self.preset}


@dataclass
class Star:
    """One switch, each host on its own link (the BurstRadar testbed's shape)."""

    host_rates: Sequence[str]
    delay: Optional[str] = None

    def to_dict(self) -> dict:
        d = _dict(self, {"kind": "star"})
        d["host_rates"] = list(self.host_rates)
        return d


@dataclass
class LeafSpine:
    leaves: int
    spines: int
    hosts_per_leaf: int
    edge_rate: str
    core_rate: str
    edge_delay: Optional[str] = None
    core_delay: Optional[str] = None

    def to_dict(self) -> dict:
        return _dict(self, {"kind": "leaf-spine"})


@dataclass
class FatTree:
    k: int
    rate: str
    delay: Optional[str] = None

    def to_dict(self) -> dict:
        return _dict(self, {"kind": "fat-tree"})


@dataclass
class HtsimTopology:
    """An htsim .topo file."""

    path: str

    def to_dict(self) -> dict:
        return {"kind": "htsim", "path": self.path}


@dataclass
class TopologyFile:
    """A tailsim topology file (docs/config.md)."""

    path: str

    def to_dict(self) -> dict:
        return {"kind": "file", "path": self.path}


# --- fabric settings ----------------------------------------------------------------------------------
@dataclass
class Host:
    tx_delay: Optional[str] = None
    rx_delay: Optional[str] = None
    rx_parallel: Optional[int] = None  # packets processed at once (FastLane's server model: 16)
    nic_buffer: Optional[Size] = None

    def to_dict(self) -> dict:
        return _dict(self)


@dataclass
class Switch:
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

    def to_dict(self) -> dict:
        return _dict(self)


@dataclass
class Routing:
    load_balance: Optional[str] = None  # "ecmp", "spray" or "adaptive"
    reroute: Optional[str] = None  # failure-detection delay before routes re-converge, e.g. "50us"

    def to_dict(self) -> dict:
        return _dict(self)


@dataclass
class PacketFormat:
    mss: Optional[int] = None
    header: Optional[int] = None
    ack: Optional[int] = None
    wire_overhead: Optional[int] = None

    def to_dict(self) -> dict:
        return _dict(self)


# --- transports ---------------------------------------------------------------------------------------
@dataclass
class Tcp:
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

    kind = "tcp"

    def to_dict(self) -> dict:
        d = _dict(self, {"kind": self.kind})
        if "class_" in d:
            d["class"] = d.pop("class_")
        return d


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
class Homa:
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

    def to_dict(self) -> dict:
        return _dict(self, {"kind": self.kind})


@dataclass
class Ideal:
    """pFabric's flow-level SRPT Ideal on the same arrivals (no packets are simulated)."""

    kind = "ideal"

    def to_dict(self) -> dict:
        return {"kind": "ideal"}


# --- workloads ----------------------------------------------------------------------------------------
@dataclass
class Poisson:
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

    def to_dict(self) -> dict:
        return _dict(self, {"kind": "poisson"})


@dataclass
class Incast:
    senders: int
    size: Optional[Size] = None
    cdf: Optional[str] = None
    dst: Optional[int] = None
    count: Optional[int] = None
    interval: Optional[str] = None
    start: Optional[str] = None

    def to_dict(self) -> dict:
        return _dict(self, {"kind": "incast"})


@dataclass
class Permutation:
    size: Size
    start: Optional[str] = None

    def to_dict(self) -> dict:
        return _dict(self, {"kind": "permutation"})


@dataclass
class Trace:
    """Flows from a CSV trace, an htsim .cm or a .flows file."""

    path: str
    start: Optional[str] = None

    def to_dict(self) -> dict:
        return _dict(self, {"kind": "trace"})


@dataclass
class Cbr:
    """Raw packets at ``line_rate`` from ``src`` to ``dst``, optionally in on/off periods; sizes fixed
    (``size``) or from ``packet_sizes`` = [[bytes, cumulative probability], …]; ``on``/``off`` fixed durations or
    [[µs, cumulative probability], …] interpolated linearly."""

    src: int
    dst: int
    line_rate: str
    until: str
    size: Optional[Size] = None
    packet_sizes: Optional[Sequence[Sequence[float]]] = None
    on: Optional[Union[str, Sequence[Sequence[float]]]] = None
    off: Optional[Union[str, Sequence[Sequence[float]]]] = None
    start: Optional[str] = None
    class_: Optional[int] = None  # the file's ``class``

    def to_dict(self) -> dict:
        d = _dict(self, {"kind": "cbr"})
        if "class_" in d:
            d["class"] = d.pop("class_")
        for k in ("packet_sizes", "on", "off"):
            if k in d and not isinstance(d[k], str):
                d[k] = [list(p) for p in d[k]]
        return d


# --- switch mechanisms (each its own table; Experiment(mechanisms=[...])) ------------------------------
@dataclass
class BurstRadar:
    """Microburst telemetry at the monitor's switch (docs/burstradar.md)."""

    key = "burstradar"
    monitor: Optional[int] = None
    threshold: Optional[str] = None
    watch: Optional[Sequence[int]] = None
    cell: Optional[Size] = None
    ring: Optional[int] = None
    clone_delay: Optional[str] = None

    def to_dict(self) -> dict:
        d = _dict(self)
        if "watch" in d:
            d["watch"] = list(d["watch"])
        return d


@dataclass
class Pfc:
    """Priority flow control at every switch (docs/config.md § [pfc]; DeTail)."""

    key = "pfc"
    pause: Optional[Size] = None
    unpause: Optional[Size] = None
    response: Optional[str] = None

    def to_dict(self) -> dict:
        return _dict(self)


@dataclass
class FastLane:
    """Drop notifications from switches to senders (docs/fastlane.md)."""

    key = "fastlane"
    bandwidth: Optional[float] = None
    buffer: Optional[Size] = None
    cap_scale: Optional[float] = None
    strict: Optional[bool] = None

    def to_dict(self) -> dict:
        return _dict(self)


@dataclass
class CoDel:
    """CoDel's ECN marking at every switch port (docs/fastlane.md); needs an ECN-capable transport."""

    key = "codel"
    target: Optional[str] = None
    interval: Optional[str] = None

    def to_dict(self) -> dict:
        return _dict(self)


@dataclass
class Fault:
    at: str
    link: Sequence[str]
    state: Optional[str] = None
    corrupt: Optional[float] = None

    def to_dict(self) -> dict:
        d = _dict(self)
        d["link"] = list(self.link)
        return d


@dataclass
class Stop:
    time: Optional[str] = None
    max_events: Optional[int] = None

    def to_dict(self) -> dict:
        return _dict(self)


@dataclass
class Output:
    format: Optional[str] = None
    buckets: Optional[list[Size]] = None
    warmup: Optional[str] = None
    queue_sample: Optional[str] = None
    cwnd_trace: Optional[list[int]] = None  # flow ids whose TCP window goes to cwnd.parquet
    dir: Optional[str] = None

    def to_dict(self) -> dict:
        return _dict(self)


@dataclass
class Experiment:
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
