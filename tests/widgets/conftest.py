"""What the lab tests share: a notebook cell of a test's own, and the memory soak of re-building a lab."""

import gc
import os

import pytest


@pytest.fixture
def cell(monkeypatch):
    """Labs built in a notebook cell of their own: they close each other, not a module's lab."""
    from diamondlab.widgets import labbase

    name = f"cell-{os.urandom(4).hex()}"
    monkeypatch.setattr(labbase, "_cell_id", lambda: name)
    return name


def rss_mib() -> float:
    """This process's resident memory, MiB (from ``/proc``)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


@pytest.fixture
def soak(cell):
    """``soak(build, times=30)``: re-run the cell that builds a lab ``times`` times (``build()`` builds one
    and uses it; each closes the one before) and check that resident memory after the last stays within
    10 % of what it was after the third (the imports, caches and compiled kernels are in by then); returns
    the two, MiB.  Skipped where ``/proc`` does not give the resident set size."""
    if not os.path.exists("/proc/self/statm"):
        pytest.skip("reads the resident set size from /proc")

    def run(build, times: int = 30) -> tuple[float, float]:
        rss = []
        for i in range(times):
            lab = build()
            if i in (2, times - 1):
                gc.collect()
                rss.append(rss_mib())
        lab.close()
        assert rss[1] <= 1.10 * rss[0], f"resident memory grew from {rss[0]:.0f} to {rss[1]:.0f} MiB"
        return rss[0], rss[1]

    return run
