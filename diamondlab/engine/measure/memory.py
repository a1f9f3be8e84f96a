"""Host memory a simulation takes, estimated and checked before anything is allocated.

Contract
--------
:func:`host_bytes` says how many bytes of host (CPU) memory a
:class:`~diamondlab.engine.run.simulation.Simulation` adds at its peak while it
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

:func:`run_host_bytes` adds what a whole run holds besides (the command
line checks it before any work): the copies ``--save`` keeps of the initial
layers through the run and makes of the final ones (four fields; with a
velocity model or a sponge also K and the damping per cell), the receivers'
traces over the steps asked (grown by doubling: up to three times the rows
while they grow), a snapshot being written (the gathered field, and for
``.vti`` its Fortran-order copy and VTK's), and snapshots held in memory.
Besides, :data:`WORKING_BYTES` for the schedules and the writers' chunks
(``np.savez`` copies 16 MiB pieces).  Measured on the CPU at NO=2
(``ru_maxrss`` less a 16^3 run's 0.19 GiB; tests/engine/test_memory.py): at
400^3 a run adds 0.49 GiB (estimate 0.52 GiB) and 1.45 GiB with ``--save``
(estimate 1.47 GiB).

The memory available is the least of Linux's ``MemAvailable`` and the room
under every cgroup memory limit on the way from this process's group to the
root (cgroup v2 ``memory.max``, v1 ``memory.limit_in_bytes``).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

__all__ = [
    "available_host_memory", "check_host_memory", "check_trace_memory", "host_bytes", "run_host_bytes",
    "trace_bytes",
]

#: Bytes per cell of one float32 field.
CELL_BYTES = 4

#: Bytes a run holds besides its arrays: schedules, queued receiver values, the writers' chunks.
WORKING_BYTES = 32 * 2**20


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


#: A cgroup v1 limit this high means none (the kernel writes ``LONG_MAX`` rounded to a page).
NO_LIMIT = 1 << 60


def _read_int(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    if text == "max":
        return None
    try:
        value = int(text)
    except ValueError:
        return None
    return None if value >= NO_LIMIT else value


def _groups(proc_cgroup: Path) -> dict[str, str]:
    """This process's cgroup path per hierarchy: ``"v2"`` and ``"memory"`` (v1) where present."""
    out = {}
    try:
        lines = proc_cgroup.read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if parts[0] == "0" and parts[1] == "":
            out["v2"] = parts[2]
        elif "memory" in parts[1].split(","):
            out["memory"] = parts[2]
    return out


def _walk(root: Path, group: str):
    """The folders of ``group`` under ``root`` and of each of its parents, innermost first, that exist."""
    folder = root / group.strip("/")
    while True:
        if folder.is_dir():
            yield folder
        if folder == root or root not in folder.parents:
            return
        folder = folder.parent


def _cgroup_room(proc_cgroup="/proc/self/cgroup", root="/sys/fs/cgroup") -> int | None:
    """Bytes left under the tightest cgroup memory limit of this process (v2 or v1, nested groups), or None.

    Each group from this process's up to the root is read: v2 ``memory.max`` less
    ``memory.current``, v1 ``memory.limit_in_bytes`` less ``memory.usage_in_bytes`` (in
    ``ROOT/memory/...`` or a v1 hierarchy mounted at ROOT itself); the least room counts.
    """
    root = Path(root)
    groups = _groups(Path(proc_cgroup))
    rooms = []
    candidates = []
    if "v2" in groups:
        for base in (root, root / "unified"):  # unified: the v2 tree of a hybrid machine
            candidates.append((base, groups["v2"], "memory.max", "memory.current"))
    if "memory" in groups:
        for base in (root / "memory", root):
            candidates.append((base, groups["memory"], "memory.limit_in_bytes", "memory.usage_in_bytes"))
    for base, group, limit_name, used_name in candidates:
        for folder in _walk(base, group):
            limit = _read_int(folder / limit_name)
            if limit is not None:
                used = _read_int(folder / used_name) or 0
                rooms.append(max(limit - used, 0))
    return min(rooms) if rooms else None


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


def trace_bytes(steps: int, receivers: int) -> int:
    """Peak bytes of the receivers' record over ``steps`` steps (float32, grown by doubling: old + new).

    >>> trace_bytes(10**6, 1000) / 2**30  # a thousand receivers over a million steps
    11.17587...
    """
    if not receivers:
        return 0
    rows = max(int(steps), 1024)
    return 3 * 4 * rows * int(receivers)


def check_trace_memory(shape, rows: int, capacity: tuple[int, int], steps: int) -> None:
    """Raise :class:`MemoryError` when the receivers' record cannot grow by ``steps`` rows.

    ``rows`` are recorded now in a buffer of ``capacity`` ``(rows, receivers)`` (float32).

    >>> check_trace_memory((64,) * 3, 0, (0, 5000), 10**9, )
    Traceback (most recent call last):
    ...
    MemoryError: shape (64, 64, 64) needs about 55879.4 GiB of host memory (the traces of 5000 receivers ...
    """
    n = int(capacity[1])
    grow = trace_bytes(rows + steps, n) - 4 * int(capacity[0]) * n
    if n and grow > 0:
        check_host_memory(shape, grow, parts={f"the traces of {n} receivers over {steps} steps": grow})


def run_host_bytes(
    shape, order: int, backend: str, *, velocity_model: bool = False, sponge: bool = False, steps: int = 0,
    receivers: int = 0, sources: int = 0, saved: bool = False, snapshot_formats=(),
    snapshots_in_memory: int = 0, fields: bool = True, window: int | None = None, nt: int = 1,
    state_bytes: int | None = None, points: str = "--receiver",
) -> dict[str, int]:
    """What a run holds at its peak, by part: ``{what: bytes}`` (see the module contract).

    ``fields=False`` leaves out the simulation's own fields (kept in files with ``--window-dir``).
    ``window``: x rows a calculation window holds at a time (sweeps of ``nt`` steps): on the CPU its
    two levels with their ghost rows, on the GPU with the fields in files its pinned staging buffers
    (two each way, at most the window's rows of three arrays each).
    ``steps`` and ``receivers``/``sources`` size the traces and the record's source samples;
    ``saved``: the run is saved (``--save``); ``snapshot_formats``: the formats written to disk.
    ``state_bytes``: the equation's own state where it is not the acoustic fields (Maxwell's ``E``,
    ``H``, currents and CPML: :attr:`~diamondlab.engine.equations.maxwell_plan.MaxwellPlan.host_bytes`);
    ``points``: the option that names the recording points (``--probe`` for Maxwell).

    >>> parts = run_host_bytes((400,) * 3, 2, "cpu", saved=True)
    >>> {k: round(v / 2**30, 2) for k, v in parts.items()}
    {'the fields': 0.48, "--save's copies of the initial and final layers": 0.95, 'working buffers': 0.03}
    """
    field = CELL_BYTES * int(np.prod([int(n) for n in shape], dtype=np.int64))
    parts = {}
    if fields:
        parts["the fields"] = (host_bytes(shape, order, backend, velocity_model=velocity_model)
                               if state_bytes is None else int(state_bytes))
    if receivers:
        parts[f"the traces of {receivers} {points} over {steps} --steps"] = trace_bytes(steps, receivers)
    if snapshots_in_memory:
        parts[f"{snapshots_in_memory} snapshots held in memory"] = snapshots_in_memory * field
    writing = 0
    if snapshot_formats:
        writing = field * (1 + 2 * ("vti" in snapshot_formats))  # the gathered field; vti: its F copy, VTK's
    if saved:
        # the initial pair is held through the run (beside a snapshot being written); the final pair is
        # copied at the end, with K and the damping per cell where there is a medium
        save = 4 * field + (2 * field if velocity_model or sponge else 0)
        save += 3 * 8 * 8 * int(steps) * int(sources)  # source samples: 8 cells a source, float64 wavelets
        parts["--save's copies of the initial and final layers"] = save
        writing = max(0, writing - (save - 2 * field))
    if writing:
        parts["a snapshot being written"] = writing
    if window is not None and window < int(shape[0]):
        plane = CELL_BYTES * int(shape[1]) * int(shape[2])
        if backend == "cuda":
            if not fields:
                parts[f"the window's pinned buffers ({window} rows)"] = 4 * 3 * window * plane
        else:
            from diamondlab.engine.scale.subdomain import ghost_rows

            parts[f"the window's two levels ({window} rows and their ghost rows)"] = (
                2 * (window + 2 * ghost_rows(order, nt)) * plane)
    parts["working buffers"] = WORKING_BYTES
    return parts


def check_host_memory(shape, need: int, available: int | None = None, parts: dict | None = None) -> None:
    """Raise :class:`MemoryError` when ``need`` bytes exceed the available host memory.

    ``available`` defaults to :func:`available_host_memory`; when that cannot
    be told nothing is checked.  ``parts`` (from :func:`run_host_bytes`) are named in the message.

    >>> check_host_memory((4000, 4000, 4000), 512 * 10**9, available=16 * 2**30)
    Traceback (most recent call last):
    ...
    MemoryError: shape (4000, 4000, 4000) needs about 476.8 GiB of host memory ... use a smaller shape ...
    """
    if available is None:
        available = available_host_memory()
    if available is None or need <= available:
        return
    if parts:
        what = "; ".join(f"{k} {v / 2**30:.2f} GiB" for k, v in parts.items())
        raise MemoryError(
            f"shape {tuple(shape)} needs about {need / 2**30:.1f} GiB of host memory ({what}) but "
            f"{available / 2**30:.1f} GiB are available: use a smaller shape, or lower the largest part"
        )
    raise MemoryError(
        f"shape {tuple(shape)} needs about {need / 2**30:.1f} GiB of host memory (float32 fields) but "
        f"{available / 2**30:.1f} GiB are available: use a smaller shape (each halving of every side "
        "takes 8 times less)"
    )
