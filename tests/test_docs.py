"""The docs site: Sphinx builds it with warnings as errors, and every public name is in the API reference."""

import importlib
import inspect
import os
import pkgutil
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

import filelock
import pytest

import diamondlab

ROOT = Path(__file__).resolve().parents[1]
# one xdist worker takes every test here: the others never wait on the build's lock (``--dist loadgroup``)
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("docs")]
MODULES = ["diamondlab"] + sorted(
    m.name for m in pkgutil.walk_packages(diamondlab.__path__, "diamondlab.")
    if not any(part.startswith("_") for part in m.name.split("."))
)  # fmt: skip


@pytest.fixture(scope="module")
def html(tmp_path_factory) -> Path:
    """The site, built once a test run: ``-W`` makes any warning an error (the build fails).

    The xdist workers of one run share the build (the folder above their own temporary folders): the first
    builds it, the others find it finished."""
    base = tmp_path_factory.getbasetemp()
    out = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "docs-site"
    command = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html"]
    # conf.py writes docs/api and docs/notebooks into the source tree: one build at a time (xdist workers)
    lock = Path(tempfile.gettempdir()) / f"diamondlab-docs-{zlib.crc32(str(ROOT).encode()):08x}.lock"
    with filelock.FileLock(lock):
        if not (out / "built").is_file():  # a failed build leaves no mark: the next worker fails it again
            run = subprocess.run([*command, str(ROOT / "docs"), str(out)], capture_output=True, text=True,
                                 cwd=ROOT)
            assert run.returncode == 0 and not run.stderr.strip(), run.stdout[-3000:] + run.stderr[-6000:]
            (out / "built").write_text("")
    return out


def _inventory(html: Path) -> set[str]:
    """The names of the documented objects (Sphinx's objects.inv, version 2)."""
    header, _, _, _, body = (html / "objects.inv").read_bytes().split(b"\n", 4)
    assert header.startswith(b"# Sphinx inventory version 2")
    return {line.split(" ", 1)[0] for line in zlib.decompress(body).decode().splitlines()}


def test_the_docs_build_without_a_warning_and_hold_every_part(html):
    for page in ("index.html", "cli.html", "notebooks.html", "api/index.html", "BENCHMARKS.html"):
        assert (html / page).is_file(), page
    notebooks = sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb"))
    assert notebooks and sorted(p.stem for p in (html / "notebooks").glob("*.html")) == notebooks
    cli = (html / "cli.html").read_text()
    assert all(command in cli for command in ("--steps", "--matrix", "info", "clear"))


@pytest.mark.parametrize("name", MODULES)
def test_every_name_in_all_is_in_the_api_reference(html, name):
    """Each name is documented on its module's page, or where it is defined and linked from the page."""
    names = _inventory(html)
    module = importlib.import_module(name)
    page = (html / "api" / f"{name}.html").read_text()
    missing = []
    for n in module.__all__:
        obj = getattr(module, n)
        if f"{name}.{n}" in names:
            continue
        if inspect.ismodule(obj):
            home = obj.__name__
        elif inspect.isclass(obj) or inspect.isfunction(obj):
            home = f"{obj.__module__}.{obj.__qualname__}"
        else:
            home = None
        if home is None or home not in names or f"{name}.{n}" not in page:
            missing.append(n)
    assert not missing, f"{name}.__all__ names missing from the API reference: {missing}"
