"""Packaging: one version, the licence and py.typed shipped, no NumPy cap for CPU users, lean extras."""

import importlib.metadata
import re
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement

import diamondlab

ROOT = Path(__file__).resolve().parents[1]
tomllib = pytest.importorskip("tomllib")  # Python 3.11+
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
PROJECT = PYPROJECT["project"]


def _installed_requirements() -> list[Requirement]:
    return [Requirement(text) for text in importlib.metadata.requires("diamondlab") or []]


def _extra(req: Requirement) -> str | None:
    match = re.search(r"extra == \"([^\"]+)\"", str(req.marker or ""))
    return match and match.group(1)


def test_the_version_is_written_once_and_read_from_the_metadata():
    assert diamondlab.__version__ == importlib.metadata.version("diamondlab") == PROJECT["version"]
    copies = [p for p in (ROOT / "diamondlab").rglob("*.py") if f'"{PROJECT["version"]}"' in p.read_text()]
    assert copies == []


def test_version_on_the_command_line():
    out = subprocess.run([sys.executable, "-m", "diamondlab", "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == f"diamondlab {diamondlab.__version__}"


def test_the_licence_ships():
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License") and "Copyright (c) 2026 the diamondlab authors" in text
    assert PROJECT["license"] == "MIT" and PROJECT["license-files"] == ["LICENSE"]
    assert importlib.metadata.metadata("diamondlab")["License-Expression"] == "MIT"


def test_py_typed_ships():
    assert (ROOT / "diamondlab" / "py.typed").is_file()
    assert "py.typed" in PYPROJECT["tool"]["setuptools"]["package-data"]["diamondlab"]


def test_a_cpu_install_carries_no_numpy_cap_of_its_own():
    core = [r for r in _installed_requirements() if r.marker is None]
    numpy = [r for r in core if r.name == "numpy"]
    assert numpy and not any(s.operator in ("<", "<=", "==", "~=") for r in numpy for s in r.specifier)
    capped = {_extra(r) for r in _installed_requirements() if r.name == "numpy" and "<" in str(r.specifier)}
    assert capped == {"cuda-sim"}  # numba-cuda's matter, and only where numba-cuda goes
    assert "diamondlab[cuda-sim]" in PROJECT["optional-dependencies"]["cuda"]


def test_the_cuda_extra_installs_nvvm_and_nvrtc_from_pip():
    cuda = [Requirement(t) for t in PROJECT["optional-dependencies"]["cuda"]]
    assert any(r.name == "numba-cuda" and "cu12" in r.extras for r in cuda)


def test_the_test_extra_is_built_from_the_others():
    extras = PROJECT["optional-dependencies"]
    test = [Requirement(t) for t in extras["test"]]
    names = {r.name for r in test}
    assert {"pytest", "pytest-xdist", "hypothesis", "nbclient"} <= names
    assert "ruff" not in names and "jupyterlab" not in names  # the lab's list comes from diamondlab[lab]
    ours = [r for r in test if r.name == "diamondlab"]
    assert ours and all(extra in extras for r in ours for extra in r.extras)
    assert {"lab", "cuda-sim", "docs"} <= {extra for r in ours for extra in r.extras}
    assert "ruff" in str(PYPROJECT["dependency-groups"]["lint"])


def test_nothing_depends_on_kaleido_that_the_package_does_not_import():
    listed = str(PROJECT["dependencies"]) + str(PROJECT["optional-dependencies"])
    imports = [p for p in (ROOT / "diamondlab").rglob("*.py") if "kaleido" in p.read_text()]
    assert imports or "kaleido" not in listed


def test_ci_runs_the_linter_and_the_readme_install():
    script = (ROOT / ".ci" / "run").read_text()
    assert "ruff check ." in script and 'pip install --quiet -e ".[test]"' in script


def test_binder_installs_the_tested_versions_then_the_lab():
    """binder/requirements.txt is a lock: every line a pin (``name==version``) but the last, the
    package with its lab extras; the pins hold the lab's own requirements, each in its range."""
    lines = [ln.strip() for ln in (ROOT / "binder" / "requirements.txt").read_text().splitlines()]
    lines = [ln for ln in lines if ln and not ln.startswith("#")]
    assert lines[-1] == "-e .[lab]"
    pins = {}
    for line in lines[:-1]:
        req = Requirement(line)
        (spec,) = req.specifier
        assert spec.operator == "==", line
        pins[req.name.lower().replace("_", "-")] = spec.version
    extras = PROJECT["optional-dependencies"]
    wanted = [Requirement(t) for t in PROJECT["dependencies"] + extras["viz"] + extras["lab"]]
    for req in wanted:
        if req.name == "diamondlab":
            continue
        name = req.name.lower().replace("_", "-")
        assert name in pins, f"binder/requirements.txt pins no {name}"
        assert req.specifier.contains(pins[name], prereleases=True), f"{name}=={pins[name]} is not {req}"
    assert "kaleido" not in pins  # plotly's static export: the README assets' tool, not Binder's
