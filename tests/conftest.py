"""Shared test configuration: skip ``gpu`` tests where no real CUDA GPU is present."""

import os
import subprocess
import sys

import pytest


def _real_gpu_present() -> bool:
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        return False
    if os.environ.get("DIAMONDLAB_TEST_GPU") in ("0", "1"):  # answered by the caller, no probe
        return os.environ["DIAMONDLAB_TEST_GPU"] == "1"
    probe = "from numba import cuda; import sys; sys.exit(0 if cuda.is_available() else 1)"
    try:
        return subprocess.run([sys.executable, "-c", probe], capture_output=True, timeout=120).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def pytest_collection_modifyitems(config, items):
    gpu_items = [item for item in items if "gpu" in item.keywords]
    if not gpu_items or _real_gpu_present():
        return
    skip = pytest.mark.skip(reason="needs a real CUDA GPU (none found)")
    for item in gpu_items:
        item.add_marker(skip)
