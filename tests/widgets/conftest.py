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


#: Resident memory a rebuilt lab may add, MiB (30 acoustic labs measured +0.7 MiB in all, 2026-11-28).
SOAK_MIB_PER_LAB = 1.0


@pytest.fixture
def soak(cell):
    """``soak(build, times=12)``: re-run the cell that builds a lab ``times`` times (``build()`` builds one
    and uses it; each closes the one before) and check that resident memory grew by at most
    :data:`SOAK_MIB_PER_LAB` a lab from the third build (the imports, caches and compiled kernels are in by
    then) to the last; returns the two, MiB.  A lab left open keeps 4-9 MiB: 9 builds leave 36 MiB or more.
    Skipped where ``/proc`` does not give the resident set size."""
    if not os.path.exists("/proc/self/statm"):
        pytest.skip("reads the resident set size from /proc")

    def run(build, times: int = 12) -> tuple[float, float]:
        rss = []
        for i in range(times):
            lab = build()
            gc.collect()  # each time: garbage left between builds would raise the high-water mark
            if i in (2, times - 1):
                rss.append(rss_mib())
        lab.close()
        allowed = SOAK_MIB_PER_LAB * (times - 3)
        grew = f"resident memory grew from {rss[0]:.0f} to {rss[1]:.0f} MiB over {times - 3} labs"
        assert rss[1] - rss[0] <= allowed, f"{grew} (at most {allowed:.0f} allowed)"
        return rss[0], rss[1]

    return run
