from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "pfabric-websearch-dctcp.toml"


def small_dict(flows: int = 200, load: float = 0.6, kind: str = "dctcp") -> dict:
    """The demo experiment as a dict, made small."""
    return {
        "name": "pfabric-websearch-dctcp",
        "seed": 1,
        "topology": {"preset": "pfabric-144"},
        "switch": {"buffer": "225KB", "ecn_threshold": "22.5KB"},
        "transport": {"kind": kind, "init_cwnd": 12, "min_rto": "200us"},
        "workload": [{"kind": "poisson", "cdf": "websearch", "load": load, "flows": flows}],
    }


@pytest.fixture
def example():
    return EXAMPLE
