"""Shared test configuration: the cache folder, the one GPU probe, ``gpu``/``no_gpu`` markers, ``target``.

The session's kernels and tunings go to ``$DIAMONDLAB_CACHE`` where it is
set (CI sets it; set it to a folder of your own to keep compiled kernels
between sessions), else to a temporary folder removed at the end: never
to the user's cache folder.

``gpu`` tests are skipped where no real CUDA GPU is present and ``no_gpu``
tests where one is.  The ``target`` fixture runs a test once per backend
that can run here: ``"cpu"`` always, ``"cuda"`` on a real GPU or under
Numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``, a session of its own:
:func:`tests.engine.test_backend_contract.test_the_contract_under_the_cuda_simulator`).
``DIAMONDLAB_TEST_TARGETS`` (a comma list) limits them.
"""

import functools
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

_OWN_CACHE = pytest.StashKey[str]()


def pytest_configure(config):
    if not os.environ.get("DIAMONDLAB_CACHE"):  # xdist workers inherit the controller's
        folder = tempfile.mkdtemp(prefix="diamondlab-tests-")
        config.stash[_OWN_CACHE] = os.environ["DIAMONDLAB_CACHE"] = folder


def pytest_unconfigure(config):
    folder = config.stash.get(_OWN_CACHE, None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)
        del os.environ["DIAMONDLAB_CACHE"]


def simulated() -> bool:
    return os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"


@functools.cache
def gpu_present() -> bool:
    """Whether a real CUDA GPU is usable: asked once per session, in a subprocess (no CUDA context here).

    ``DIAMONDLAB_TEST_GPU=1`` or ``0`` answers without asking.
    """
    if simulated():
        return False
    if os.environ.get("DIAMONDLAB_TEST_GPU") in ("0", "1"):  # answered by the caller, no probe
        return os.environ["DIAMONDLAB_TEST_GPU"] == "1"
    probe = "from numba import cuda; import sys; sys.exit(0 if cuda.is_available() else 1)"
    try:
        return subprocess.run([sys.executable, "-c", probe], capture_output=True, timeout=120).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def pytest_collection_modifyitems(config, items):
    # the long tests first (their order kept): xdist's workers start on them and end on short ones, so
    # neither finishes a long test alone at the end of the run; before them the ``first`` ones, one per
    # worker: each compiles a set of kernels (the Yee CPU kernels of an order: 100 s) that later tests
    # would otherwise wait for, a worker idle, while the other worker compiles them
    items.sort(key=lambda item: ("first" not in item.keywords, "slow" not in item.keywords))
    gpu_items = [item for item in items if "gpu" in item.keywords]
    no_gpu_items = [item for item in items if "no_gpu" in item.keywords]
    if not gpu_items and not no_gpu_items:
        return
    present = gpu_present()
    reason = "a real CUDA GPU is present" if present else "needs a real CUDA GPU (none found)"
    skip = pytest.mark.skip(reason=reason)
    for item in no_gpu_items if present else gpu_items:
        if not present and simulated() and "target" in item.fixturenames:
            continue  # the cuda target runs under the simulator
        item.add_marker(skip)


@pytest.fixture(params=["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def target(request) -> str:
    """A backend name that runs here (see the module docstring)."""
    wanted = os.environ.get("DIAMONDLAB_TEST_TARGETS", "cpu,cuda").split(",")
    if request.param not in wanted:
        pytest.skip(f"target {request.param} not in DIAMONDLAB_TEST_TARGETS")
    if request.param == "cuda" and not (simulated() or gpu_present()):
        pytest.skip("target cuda needs a real CUDA GPU (the simulator runs in its own session)")
    return request.param
