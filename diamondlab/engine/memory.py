"""Host memory a simulation takes, estimated and checked before anything is allocated.

Contract
--------
:func:`host_bytes` says how many bytes of host (CPU) memory a
:class:`~diamondlab.engine.simulation.Simulation` adds at its peak while it
is built and run, from the grid, the stencil order, the backend and the
medium; :func:`check_host_memory` compares that with the memory this
machine (or its cgroup) has available and raises a :class:`MemoryError`
that names the shape, the bytes and what to change.  The GPU backend checks
its own device memory (``CUDABackend``); this is the host side.

What is counted (float32, 4 bytes per cell):

- ``"cpu"``: the two time levels with their halo of ``NO/2`` cells (built
  in place, no full-size temporary: see ``CPUBackend.field_views``);
- ``"cuda"``: the two initial levels staged on the host before the copy;
- with a velocity model: ``K`` per cell (:meth:`Physics.medium`; on the CPU
  also its padded copy).  A constant velocity stays a number and a sponge
  three 1D profiles (:class:`~diamondlab.media.Medium`): no 3D array.

The user's velocity model is already in memory when the simulation is
made and is not counted.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["available_host_memory", "check_host_memory", "host_bytes"]

#: Bytes per cell of one float32 field.
CELL_BYTES = 4


def host_bytes(shape, order: int, backend: str, *, velocity_model: bool = False) -> int:
    """Estimated peak host bytes a simulation adds (see the module contract).

    >>> round(host_bytes((512, 512, 512), 2, "cpu") / 2**30, 4)  # two levels with a one-cell halo
    1.0118
    >>> host_bytes((100, 100, 100), 8, "cuda", velocity_model=True)
    12000000
    """
    nx, ny, nz = (int(n) for n in shape)
    cells = nx * ny * nz
    halo = order // 2
    padded = (nx + 2 * halo) * (ny + 2 * halo) * (nz + 2 * halo)
    fields = 2 * (padded if backend == "cpu" else cells)
    medium = 0
    if velocity_model:
        medium = cells + (padded if backend == "cpu" else 0)  # K, and on the CPU its padded copy
    return CELL_BYTES * (fields + medium)


def _cgroup_room() -> int | None:
    """Bytes left under this process's cgroup (v2) memory limit, or None without a limit."""
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        if limit == "max":
            return None
        used = int(Path("/sys/fs/cgroup/memory.current").read_text())
        return max(int(limit) - used, 0)
    except (OSError, ValueError):
        return None


def available_host_memory() -> int | None:
    """Bytes of host memory available for new allocations, or None where this cannot be told.

    Linux's ``MemAvailable`` (what can be taken without swapping), lowered to
    the room under a cgroup memory limit (containers, batch jobs); elsewhere
    the physical memory.
    """
    room = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                room = int(line.split()[1]) * 1024
                break
    except (OSError, ValueError, IndexError):
        room = None
    if room is None:
        try:
            room = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (AttributeError, OSError, ValueError):
            return None
    cgroup = _cgroup_room()
    return room if cgroup is None else min(room, cgroup)


def check_host_memory(shape, need: int, available: int | None = None) -> None:
    """Raise :class:`MemoryError` when ``need`` bytes exceed the available host memory.

    ``available`` defaults to :func:`available_host_memory`; when that cannot
    be told nothing is checked.

    >>> check_host_memory((4000, 4000, 4000), 512 * 10**9, available=16 * 2**30)
    Traceback (most recent call last):
    ...
    MemoryError: shape (4000, 4000, 4000) needs about 476.8 GiB of host memory ... use a smaller shape ...
    """
    if available is None:
        available = available_host_memory()
    if available is None or need <= available:
        return
    raise MemoryError(
        f"shape {tuple(shape)} needs about {need / 2**30:.1f} GiB of host memory (float32 fields) but "
        f"{available / 2**30:.1f} GiB are available: use a smaller shape (each halving of every side "
        "takes 8 times less)"
    )
