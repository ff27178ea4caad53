"""tailsim: a fast, deterministic packet-level datacenter network simulator for tail-latency studies.

    import tailsim
    r = tailsim.run("examples/pfabric-websearch-dctcp.toml")
    r.flows          # pandas DataFrame, one row per flow
    r.buckets        # FCT / slowdown statistics by flow size
    tailsim.plots.slowdown_vs_size(r, path="slowdown.png")

See docs/python.md and docs/sweeps.md.
"""

from . import plots
from ._core import ConfigError, SimulationError, __version__, builtin_cdfs
from .builders import (
    Background,
    BurstRadar,
    Cbr,
    CoDel,
    Cubic,
    Dctcp,
    Experiment,
    FastLane,
    FatTree,
    Fault,
    Homa,
    Host,
    HtsimTopology,
    Ideal,
    Incast,
    Inline,
    LeafSpine,
    LinkGuardian,
    Ndp,
    Output,
    PacketFormat,
    Permutation,
    PFabric,
    Pfc,
    Phost,
    Pias,
    Poisson,
    Preset,
    Qjump,
    Rdma,
    Retrieval,
    Routing,
    Sqr,
    Star,
    Stop,
    Switch,
    Tcp,
    TopologyFile,
    Trace,
    Workflow,
)
from .qjump import qjump_levels
from .result import Result, ResultsMismatch, check, run
from .sweep import SweepBusy, SweepResult, sweep
from .thresholds import thresholds

load = Result.load

__all__ = [
    "run",
    "check",
    "sweep",
    "load",
    "Result",
    "ResultsMismatch",
    "SweepResult",
    "SweepBusy",
    "ConfigError",
    "SimulationError",
    "plots",
    "builtin_cdfs",
    "Experiment",
    "Preset",
    "LeafSpine",
    "FatTree",
    "HtsimTopology",
    "TopologyFile",
    "Host",
    "Switch",
    "Routing",
    "PacketFormat",
    "Tcp",
    "Dctcp",
    "Cubic",
    "Poisson",
    "Incast",
    "Permutation",
    "Trace",
    "Fault",
    "Stop",
    "Output",
    "PFabric",
    "Ideal",
    "Homa",
    "Star",
    "Cbr",
    "BurstRadar",
    "Pfc",
    "FastLane",
    "CoDel",
    "Inline",
    "Pias",
    "Phost",
    "Ndp",
    "Rdma",
    "Qjump",
    "Sqr",
    "LinkGuardian",
    "Retrieval",
    "Workflow",
    "Background",
    "thresholds",
    "qjump_levels",
    "__version__",
]
