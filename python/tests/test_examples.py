"""The examples gallery and the docs: every example file passes `tailsim check` (experiments, topology files
and sweep files alike) and every experiment runs at a reduced size; every complete experiment shown in a
TOML code block of the docs checks; every `examples/...` path the docs name exists."""

import re

import pytest

import tailsim
from tailsim import _core
from tailsim.cli import main

from conftest import ROOT

EXAMPLES = sorted((ROOT / "examples").rglob("*.toml"))
# The gallery's experiments (examples/bench/ holds `tailsim bench`'s scenarios, run by it and its tests).
EXPERIMENTS = [
    p for p in EXAMPLES if p.parent.name == "examples" and not p.name.endswith((".topo.toml", ".sweep.toml"))
]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_the_gallery_has_every_kind_of_file():
    names = {p.name for p in EXAMPLES}
    for want in (
        "incast.toml",
        "fattree-failure.toml",
        "htsim-perm128.toml",
        "dumbbell.topo.toml",
        "tcp-dctcp.sweep.toml",
    ):
        assert want in names
    assert not [n for n in names if n.startswith("block")], "uncommented copies of doc blocks"


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: str(p.relative_to(ROOT / "examples")))
def test_every_example_checks(path, capfd):
    # The Rust side prints to the process's stdout (file descriptor 1), hence capfd.
    code = main(["check", str(path)])
    out, err = capfd.readouterr()
    assert code == 0, err
    assert out.startswith(f"{path}: ok ("), out
    if path.name.endswith(".topo.toml"):
        assert "topology file" in out
    if path.name.endswith(".sweep.toml"):
        assert "sweep file" in out


@pytest.mark.parametrize("path", EXPERIMENTS, ids=lambda p: str(p.relative_to(ROOT / "examples")))
def test_every_example_runs_briefly(path, tmp_path):
    r = tailsim.run(path, tmp_path / "r", set={"stop.time": "3ms"}, progress=False)
    assert r.summary["events"] > 0
    assert r.summary["flows_started"] > 0 or r.summary["packets"]["created"] > 0


def test_check_tells_the_file_kinds_apart_by_content(tmp_path, capfd):
    topo = tmp_path / "net.toml"  # no suffix: recognised by its [[link]]s
    topo.write_text((ROOT / "examples" / "dumbbell.topo.toml").read_text())
    assert main(["check", str(topo)]) == 0
    assert "topology file: 4 hosts, 2 switches, 5 links" in capfd.readouterr().out
    sweep = tmp_path / "grid.toml"
    sweep.write_text(
        f'base = "{(ROOT / "examples" / "pfabric-websearch-dctcp.toml").as_posix()}"\n'
        '[grid]\n"workload[0].load" = [0.5, 1.5]\n'
    )
    assert main(["check", str(sweep)]) == 1
    err = capfd.readouterr().err
    assert f"{sweep}: point {{'workload[0].load': 1.5}}" in err and "must be in (0, 1)" in err
    bad = tmp_path / "bad.topo.toml"
    bad.write_text('hosts = 2\n[[link]]\na = "h0"\nb = "nowhere"\nrate = "10Gbps"\n')
    assert main(["check", str(bad)]) == 1
    assert "nowhere" in capfd.readouterr().err


def _toml_blocks(doc):
    text = doc.read_text()
    for m in re.finditer(r"```toml\n(.*?)```", text, re.S):
        line = text[: m.start()].count("\n") + 2
        yield line, m.group(1)


BLOCKS = [
    (doc, line, block)
    for doc in DOCS
    for line, block in _toml_blocks(doc)
    if re.search(r"^\[topology\]", block, re.M) and re.search(r"^\[\[workload\]\]", block, re.M)
]


def test_docs_show_complete_experiments():
    assert len(BLOCKS) >= 15, len(BLOCKS)


@pytest.mark.parametrize("doc,line,block", BLOCKS, ids=[f"{d.name}:{n}" for d, n, _ in BLOCKS])
def test_every_experiment_in_the_docs_checks(doc, line, block):
    # Files such blocks name (a topology file, htsim files) are the gallery's, relative to examples/.
    _core.check("toml", block, f"{doc.name}:{line}", str(ROOT / "examples"), [])


def test_every_examples_path_in_the_docs_exists():
    missing = []
    for doc in DOCS:
        for m in re.finditer(r"examples/[A-Za-z0-9_.*/-]*[A-Za-z0-9_*/]", doc.read_text()):
            p = m.group(0)
            if not list(ROOT.glob(p)) and not (ROOT / p).exists():
                missing.append(f"{doc.name}: {p}")
    assert not missing, missing
