"""tools/pgo-build.sh, the opt-in profile-guided build, is not run here (it builds the simulator twice): these
keep what it names in step with the simulator — its training scenarios are `tailsim bench`'s, its examples
exist and check with their overrides — and the script itself parses and refuses bad arguments."""

import re
import shlex
import subprocess

import pytest

from tailsim.cli import main

from conftest import ROOT

SCRIPT = ROOT / "tools" / "pgo-build.sh"


def _array(name):
    text = SCRIPT.read_text()
    m = re.search(rf"^{name}=\((.*?)\)$", text, re.S | re.M)
    assert m, f"{name}=(...) not found in {SCRIPT}"
    body = "\n".join(line.split("#", 1)[0] for line in m.group(1).splitlines())
    return shlex.split(body)


def test_the_script_parses_and_refuses_what_it_does_not_know():
    subprocess.run(["bash", "-n", str(SCRIPT)], check=True)
    r = subprocess.run([str(SCRIPT), "--help"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0 and "Usage: tools/pgo-build.sh [--install]" in r.stdout
    r = subprocess.run([str(SCRIPT), "--bogus"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 2 and "unknown argument '--bogus'" in r.stderr


def test_training_scenarios_are_bench_scenarios(capfd):
    runs = _array("bench_runs")
    assert len(runs) >= 8
    assert main(["bench", "--list"]) == 0
    listed = {line.split()[0] for line in capfd.readouterr().out.splitlines() if line.strip()}
    for run in runs:
        scenario, time = run.split()
        assert scenario in listed, f"pgo-build.sh trains on '{scenario}', which `tailsim bench --list` lacks"
        assert re.fullmatch(r"\d+(us|ms|s)", time), f"'{time}' for {scenario}"


@pytest.mark.parametrize("entry", _array("examples"))
def test_training_examples_check_with_their_overrides(entry, capfd):
    name, *overrides = entry.split()
    path = ROOT / "examples" / f"{name}.toml"
    assert path.is_file(), f"pgo-build.sh runs examples/{name}.toml, which does not exist"
    code = main(["check", str(path), *overrides])
    out, err = capfd.readouterr()
    assert code == 0, out + err
