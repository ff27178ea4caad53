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
    Dctcp,
    Experiment,
    FatTree,
    Fault,
    Host,
    Homa,
    HtsimTopology,
    Ideal,
    Incast,
    LeafSpine,
    Output,
    PacketFormat,
    PFabric,
    Permutation,
    Poisson,
    Preset,
    Routing,
    Stop,
    Switch,
    Tcp,
    TopologyFile,
    Trace,
)
from .result import Result, check, run
from .thresholds import thresholds
from .qjump import qjump_levels
from .sweep import SweepResult, sweep

load = Result.load

__all__ = [
    "run", "check", "sweep", "load", "Result", "SweepResult", "ConfigError", "SimulationError", "plots",
    "builtin_cdfs", "Experiment", "Preset", "LeafSpine", "FatTree", "HtsimTopology", "TopologyFile", "Host",
    "Switch", "Routing", "PacketFormat", "Tcp", "Dctcp", "Poisson", "Incast", "Permutation", "Trace", "Fault",
    "Stop", "Output", "PFabric", "Ideal", "Homa", "thresholds", "qjump_levels", "__version__",
]
