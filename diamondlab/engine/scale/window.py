"""The calculation window: a grid longer in x than the device holds, streamed through it sweep by sweep.

Contract
--------
:class:`WindowBackend` keeps the equation's state in host memory (the
arrays its backend's :class:`~diamondlab.engine.scale.subdomain.EquationParts`
names: the acoustic equation's two levels; Maxwell's ``E``, ``H``, Drude
current and CPML ``psi``) and runs every sweep (or every call of ``step``)
window by window along x on one inner backend built for ``(window, ny, nz)``:
it hands the inner backend the window's cut of the physics, copies the
window's rows of every state array in, runs the sweep there, and copies
back the rows the window owns.  Windows overlap by ``2 G`` rows, ``G`` the
equation's ghost rows (``Nt * order / 2``; Maxwell's two half steps a step:
``Nt * order``), the light cone of a sweep: a window's cut edges put zeros
where its neighbours' rows are, which corrupts at most ``order / 2`` rows
per update, so after a sweep every owned row is exact, and **the result
equals the in-memory run bit for bit**.  Rows that a later window reads
after an earlier one has written them are kept at their old level for it.
Sources are applied by every window that holds their cell, receivers and
the monitors' points recorded by the window that owns them (each window's
DFT sums go on from the whole run's, so they equal the in-memory run's bit
for bit); the medium is cut to each window.

What a sweep moves: each field crosses to the device and back once, plus
the overlap: about ``2 * 2 * 4 * window / (window - 2G)`` bytes per cell
and sweep of ``Nt`` steps (:meth:`WindowBackend.bytes_per_sweep`), so a
bus of ``B`` bytes/s caps the rate near ``B * Nt / 16`` cell updates/s.  Its
copies do not overlap the sweeps: it serves the CPU engine and stepwise runs.

DiamondTorre on the GPU streams instead (paper 002's window;
:class:`~diamondlab.engine.scale.cuda_window.StreamedCUDABackend`): the sweep runs
in groups of consecutive stages, and :func:`stream_plan` says, per group,
which x rows enter the device before it (loaded once, at their old level),
which leave after it (stored once, final), and where on the device each row
lives: a ring of ``window`` rows in which row ``x`` sits at ``x - base``,
the rows still needed moved to the top when the group's rows would fall off
the bottom.  Nothing is computed twice; each streamed array crosses the bus
exactly once each way a sweep (acoustic: 8 bytes a cell in, 8 out; Maxwell's
E and H: 24 and 24; on two copy engines at once), while the next group's
rows load and the last group's store as the torres of the current one
compute (:class:`~diamondlab.engine.scale.yee_window.StreamedYeeCUDABackend`
for a Maxwell scene without periodic faces; other Maxwell runs go window by window).
"""

from __future__ import annotations

import importlib
import shutil
import tempfile
from dataclasses import dataclass

import numpy as np

from diamondlab.engine.backends import Backend, Wrapper, planes_of
from diamondlab.engine.scale.subdomain import PartPhysics, rows_index, rows_size

__all__ = [
    "STREAMED_BACKENDS", "StreamGroup", "WindowBackend", "bytes_per_cell", "check_window_dir",
    "describe_traffic", "host_arrays", "host_fields", "rows_overlap", "stream_plan", "streamed_backend",
    "window_chunks",
]

#: The backends that stream DiamondTorre sweeps through a calculation window on their device, by the
#: backend they stream for (both ``"package.module:Class"``, as :data:`~diamondlab.engine.backends.BACKENDS`;
#: loaded when asked for).  A backend not here runs a window by :class:`WindowBackend`.
STREAMED_BACKENDS = {
    "diamondlab.engine.backends.cuda:CUDABackend": "diamondlab.engine.scale.cuda_window:StreamedCUDABackend",
    "diamondlab.engine.backends.yee_cuda:YeeCUDABackend":
        "diamondlab.engine.scale.yee_window:StreamedYeeCUDABackend",
}


def streamed_backend(backend_class: type, physics=None) -> type | None:
    """The backend that streams ``backend_class``'s DiamondTorre sweeps through a window (or None), for a
    run of ``physics`` where given (None: where it streams at all; the streamed class says which scenes it
    streams, :meth:`~diamondlab.engine.scale.cuda_window.RingStream.streams`: the others go window by
    window).

    A subclass streams as its base does (the first of its classes in :data:`STREAMED_BACKENDS`).

    >>> from diamondlab.engine.backends import get_backend
    >>> streamed_backend(get_backend("cpu")) is None
    True
    """
    for klass in backend_class.__mro__:
        target = STREAMED_BACKENDS.get(f"{klass.__module__}:{klass.__qualname__}")
        if target is not None:
            module, name = target.split(":")
            streamed = getattr(importlib.import_module(module), name)
            return streamed if physics is None or streamed.streams(physics) else None
    return None


def check_window_dir(directory, nbytes: int) -> str:
    """``directory`` as a str if it is a writable folder with ``nbytes`` free, else ``ValueError``."""
    import os

    path = os.fspath(directory)
    if not os.path.isdir(path) or not os.access(path, os.W_OK):
        raise ValueError(f"window_dir must be a writable folder (the fields go there as files); got {path!r}")
    free = shutil.disk_usage(path).free
    if nbytes > free:
        raise ValueError(f"window_dir {path!r} has {free / 2**30:.2f} GiB free; the fields need "
                         f"{nbytes / 2**30:.2f} GiB")
    return path


def host_arrays(shapes, directory: str | None = None) -> tuple[np.ndarray, ...]:
    """Float32 zero arrays of ``shapes`` on the host: in memory, or (``directory``) ``numpy.memmap`` files
    there that no name points to (the space is freed when they are closed, even after a crash: no file
    remains).

    >>> e, psi = host_arrays([(3, 4, 3, 2), (4, 2, 3, 2)], tempfile.gettempdir())
    >>> type(e).__name__, psi.shape, float(abs(e).sum())
    ('memmap', (4, 2, 3, 2), 0.0)
    """
    shapes = [tuple(int(n) for n in shape) for shape in shapes]
    if directory is None:
        return tuple(np.zeros(shape, dtype=np.float32) for shape in shapes)
    return tuple(np.memmap(tempfile.TemporaryFile(dir=directory), dtype=np.float32, mode="w+", shape=shape)
                 for shape in shapes)


def host_fields(shape, directory: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The two levels of an acoustic window run on the host, zero (:func:`host_arrays`).

    >>> prev, curr = host_fields((4, 3, 2), tempfile.gettempdir())
    >>> type(curr).__name__, float(abs(prev).sum())
    ('memmap', 0.0)
    """
    return host_arrays([shape, shape], directory)


def window_chunks(nx: int, window: int, ghosts: int) -> list[tuple[int, int, int, int]]:
    """``(e0, e1, o0, o1)`` per window: rows ``[e0, e1)`` on the device (``e1 - e0 == window``), rows
    ``[o0, o1)`` owned (a partition of ``[0, nx)``), every owned row ``ghosts`` rows from a cut edge.

    >>> window_chunks(20, 8, 2)
    [(0, 8, 0, 6), (4, 12, 6, 10), (8, 16, 10, 14), (12, 20, 14, 20)]
    """
    if window >= nx:
        return [(0, nx, 0, nx)]
    if window < 2 * ghosts + 1:
        raise ValueError(f"window must hold more than 2 x {ghosts} ghost rows (the rows a sweep of Nt steps "
                         f"reads beyond a window, on each side): window >= {2 * ghosts + 1}; got {window}")
    chunks, o0 = [], 0
    while True:
        if nx - o0 <= window - ghosts:  # the last window: flush with the grid's far end
            chunks.append((nx - window, nx, o0, nx))
            return chunks
        e0 = max(0, o0 - ghosts)
        o1 = e0 + window - ghosts
        chunks.append((e0, e0 + window, o0, o1))
        o0 = o1


def bytes_per_cell(nx: int, window: int, nchunks: int) -> float:
    """Bytes a sweep moves across the bus per cell of the grid: both levels of every window, in and out.

    >>> bytes_per_cell(30, 12, 4)  # 4 windows of 12 rows for 30: 16 B x 48 / 30
    25.6
    """
    return 16.0 * nchunks * window / nx


@dataclass(frozen=True)
class StreamGroup:
    """One launch of a streamed sweep (:func:`stream_plan`); rows are x rows of the grid, ``[lo, hi)``.

    Device row of grid row ``x``: ``x - base``.  Before the group runs, ``move`` (when not None:
    ``(lo, hi, old_base)``) takes rows the group still needs from ``x - old_base`` to ``x - base``
    and ``load`` copies the rows that enter; after it, ``store`` copies the rows it finished out.
    """

    tickets: tuple[int, int]
    base: int
    live: tuple[int, int]
    load: tuple[int, int]
    store: tuple[int, int]
    move: tuple[int, int, int] | None = None


def _run_of(mask: np.ndarray, what: str) -> tuple[int, int]:
    """``[lo, hi)`` of the True entries of ``mask``, which must be one run (``(0, 0)`` for none)."""
    idx = np.flatnonzero(mask)
    if idx.size == 0:
        return 0, 0
    if idx[-1] - idx[0] + 1 != idx.size:
        raise ValueError(f"the rows a group {what} are not one run of x rows: stream a sweep stage by "
                         "stage (band=0)")
    return int(idx[0]), int(idx[-1]) + 1


def rows_overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Whether row ranges ``[a0, a1)`` and ``[b0, b1)`` share a row.

    >>> rows_overlap((0, 4), (3, 9)), rows_overlap((0, 4), (4, 9)), rows_overlap((2, 2), (0, 9))
    (True, False, False)
    """
    return max(a[0], b[0]) < min(a[1], b[1])


def stream_plan(schedule, capacity: int, stages: int) -> tuple[StreamGroup, ...]:
    """Stream a sweep of ``schedule`` (stage order) through ``capacity`` device rows, ``stages`` a group.

    Each x row is loaded before the first group that reads or writes it
    (:meth:`~diamondlab.geometry.StageSchedule.torre_rows`) and stored after
    the last; a group's rows (``live``) lie in ``[base, base + capacity)``.
    A move happens only when the group's rows would fall below the ring, and
    puts them at its top, where they overlap neither what the group before
    used (still running, its rows being stored) nor what moves.  Raises
    ``ValueError`` when ``capacity`` is too small for groups of ``stages``.

    >>> from diamondlab.geometry import stage_schedule
    >>> s = stage_schedule(order=2, size=1, nt=4, nx=40, ny=8)
    >>> plan = stream_plan(s, capacity=20, stages=2)
    >>> plan[0].load, plan[1].load, plan[0].store, plan[-1].store  # every row in once and out once
    ((37, 40), (35, 37), (0, 0), (0, 3))
    >>> max(g.live[1] - g.live[0] for g in plan), sum(g.move is not None for g in plan)
    (8, 2)
    >>> stream_plan(s, capacity=16, stages=2)
    Traceback (most recent call last):
    ...
    ValueError: a window of 16 x rows cannot move 8 rows clear of the 8 the group before used
    """
    nx = schedule.nx
    rows = schedule.torre_rows()
    bounds = [int(b) for b in schedule.stage_start[::stages]]
    if bounds[-1] != schedule.ntorres:
        bounds.append(int(schedule.ntorres))
    ngroups = len(bounds) - 1
    first = np.full(nx, ngroups, dtype=np.int64)
    last = np.full(nx, -1, dtype=np.int64)
    for g in range(ngroups):
        lo, hi = int(rows[bounds[g]:bounds[g + 1], 0].min()), int(rows[bounds[g]:bounds[g + 1], 1].max())
        first[lo:hi] = np.minimum(first[lo:hi], g)
        last[lo:hi] = g
    groups: list[StreamGroup] = []
    base = used = None
    for g in range(ngroups):
        live = _run_of((first <= g) & (last >= g), "holds")
        if live[1] - live[0] > capacity:
            raise ValueError(f"a group of {stages} stages holds {live[1] - live[0]} x rows: more than the "
                             f"window's {capacity}")
        move = None
        if base is None:
            base = live[1] - capacity
        elif live[0] < base:
            kept = _run_of((first < g) & (last >= g), "keeps")
            new = live[1] - capacity
            if rows_overlap((live[0] - new, live[1] - new), used):
                raise ValueError(f"a window of {capacity} x rows cannot move {live[1] - live[0]} rows "
                                 f"clear of the {used[1] - used[0]} the group before used")
            move, base = (*kept, base), new
        groups.append(StreamGroup((bounds[g], bounds[g + 1]), int(base), live,
                                  _run_of(first == g, "loads"), _run_of(last == g, "stores"), move))
        used = (live[0] - base, live[1] - base)
    return tuple(groups)


def describe_traffic(traffic: dict, nt: int) -> str:
    """A window backend's ``traffic()`` in words, with the rate the bus allows a sweep of ``nt`` steps.

    >>> describe_traffic({"groups": 30, "bytes_per_cell_sweep": 16.0, "overlapped": True}, 32)[-51:]
    'at most one-way bus bandwidth x 4.00 cell updates/s'
    """
    moved = traffic["bytes_per_cell_sweep"]
    if traffic["overlapped"]:  # in and out on two copy engines at once: each way carries half
        return (f"streamed in {traffic['groups']} groups a sweep, {moved:.1f} bytes a cell a sweep of "
                f"Nt={nt} across the bus, in and out at once while the torres compute: at most one-way bus "
                f"bandwidth x {2 * nt / moved:.2f} cell updates/s")
    return (f"{traffic['windows']} windows a sweep, {moved:.1f} bytes a cell a sweep of Nt={nt} across the "
            f"bus: at most bus bandwidth x {nt / moved:.2f} cell updates/s (copies not overlapped with "
            "sweeps)")


class WindowBackend(Wrapper):
    """The state in host memory, each sweep run window by window on ``inner`` (see the module contract),
    for any equation: what streams is the state arrays of ``inner.PARTS``
    (:mod:`~diamondlab.engine.scale.subdomain`).

    Parameters
    ----------
    inner : Backend
        Built for ``(window, ny, nz)``.
    shape : (nx, ny, nz)
        The whole grid.
    directory : str, optional
        Keep the state in files there (:func:`host_arrays`) instead of memory.
    """

    def __init__(self, inner: Backend, shape, directory: str | None = None):
        super().__init__(inner, shape, f"{inner.name}, window of {inner.shape[0]} x rows")
        self.window = inner.shape[0]
        self.parts = inner.PARTS
        self.ghosts = self.parts.ghost_rows(self.params.order, self.nt)
        self.chunks = window_chunks(self.shape[0], self.window, self.ghosts)
        self._directory = directory
        self.layout: tuple = ()
        self._allocate()
        self._physics: list[PartPhysics] | None = None  # per window
        self._taken: list[np.ndarray] = []
        self._sums: list[np.ndarray] = []  # the monitors' DFT sums of the whole run (each window its points')
        self._clock = 0  # the next sweep's first step, for the monitors' DFT

    def _allocate(self) -> None:
        """Host state of the whole grid for the inner backend's physics (again where that changed it)."""
        layout = self.inner.state_layout(self.shape)
        if [(a.name, a.shape) for a in layout] != [(a.name, a.shape) for a in self.layout]:
            self.layout = layout
            self._state = host_arrays([a.shape for a in layout], self._directory)

    def bytes_per_sweep(self) -> int:
        """Bytes a sweep moves across the bus: every state array's rows of every window, in and out (the
        acoustic equation: both levels; Maxwell's: E, H, the Drude current and psi)."""
        return 8 * sum(rows_size(self.layout, 0, e0, e1) for e0, e1, _, _ in self.chunks)

    def traffic(self) -> dict:
        """What a sweep moves across the bus (:func:`describe_traffic` says it in words)."""
        nx, ny, nz = self.shape
        return {"windows": len(self.chunks), "bytes_per_cell_sweep": self.bytes_per_sweep() / (nx * ny * nz),
                "overlapped": False}

    # ------------------------------------------------------------ the backend contract
    def state_views(self):
        return self._state

    def state(self):
        return tuple(np.array(a) for a in self._state)  # plain arrays, also of fields in files

    def set_state(self, arrays) -> None:
        for mine, values in zip(self._state, arrays, strict=True):
            if values is not mine:
                mine[...] = values

    def _fields(self) -> list:
        return [v for a, v in zip(self.layout, self._state, strict=True) if a.field]

    def field_views(self):
        return tuple(self._fields())

    def set_fields(self, *fields) -> None:
        for mine, values in zip(self._fields(), fields, strict=True):
            if values is not mine:
                mine[...] = values

    def fields(self):
        return tuple(np.array(v) for v in self._fields())

    def reset(self) -> None:
        """The whole state to zero (an equation whose simulation resets the backend)."""
        for a in self._state:
            a.fill(0.0)
        self._taken = []
        for a in self._sums:
            a.fill(0.0)

    def current_view(self):
        view = self.parts.current(self._state, getattr(self, "view", None)).view()
        view.flags.writeable = False
        return view

    def planes(self, index, strides):
        return planes_of(self.current_view(), index, strides)

    def set_physics(self, *physics) -> None:
        """Cut the medium and the points to each window (the windows apply them one at a time)."""
        self._physics = [self.parts.cut(physics, 0, (e0, e1), (o0, o1)) for e0, e1, o0, o1 in self.chunks]
        self._physics[0].apply(self.inner)  # now: compile() builds the kernel variant every window runs
        self._allocate()
        self._sums = [np.zeros(shape, np.complex128) for shape in self._physics[0].monitor_shapes]

    # the monitors' DFT: each window sums its own points on from the whole run's sums (bit for bit the
    # in-memory run's: one owner a point, its steps in order)
    def start_monitors(self, step: int) -> None:
        """The DFT sums to zero, the next sweep's first step ``step``."""
        for a in self._sums:
            a.fill(0.0)
        self._clock = int(step)

    def dft_sums(self, which=None) -> list[np.ndarray]:
        return [self._sums[k].copy() for k in (range(len(self._sums)) if which is None else which)]

    @property
    def _nreceivers(self) -> int:
        return 0 if self._physics is None else self._physics[0].nreceivers

    def _load(self, e0: int, e1: int, stash) -> None:
        """Rows ``[e0, e1)`` of the state into the inner backend: from the host, at their old level where an
        earlier window wrote them already (``stash``: ``(x0, x1, copies of those rows)``)."""
        views = self.inner.state_views()
        # on a device: the window's state as the inner backend holds it, on the host, then copied in
        local = views if views is not None else [np.zeros(a.shape, np.float32) for a in
                                                 self.inner.state_layout()]
        for a, host, mine in zip(self.layout, self._state, local, strict=True):
            if (src := rows_index(a, 0, e0, e1)) is not None:
                mine[rows_index(a, 0, e0, e1, e0)] = host[src]
        for x0, x1, olds in stash:
            lo, hi = max(e0, x0), min(e1, x1)
            if hi > lo:
                for a, old, mine in zip(self.layout, olds, local, strict=True):
                    if (src := rows_index(a, 0, lo, hi, x0)) is not None:
                        mine[rows_index(a, 0, lo, hi, e0)] = old[src]
        if views is None:
            self.inner.set_state(local)

    def _run(self, height: int, src_samples, advance) -> None:
        stash: list[tuple] = []  # old rows written already: (x0, x1, a copy of each array's rows)
        steps_traces = np.zeros((height, self._nreceivers), dtype=np.float32)
        for k, (e0, e1, o0, o1) in enumerate(self.chunks):
            part = None if self._physics is None else self._physics[k]
            if part is not None and len(self.chunks) > 1:
                part.apply(self.inner)  # first: a backend may set its state arrays anew with its physics
            self._load(e0, e1, stash)
            if part is None:
                advance(height, src_samples)
            else:
                if self._sums:
                    self.inner.resume_monitors(self._clock, part.sums_of(self._sums))
                advance(height, part.samples(src_samples))
                if part.nreceivers:
                    part.place(self.inner.take_traces(), steps_traces)
                if self._sums:
                    part.place_sums(self.inner.dft_sums(), self._sums)
            later = min((c[0] for c in self.chunks[k + 1:]), default=o1)
            if later < o1:  # a later window reads some of these rows at the old level
                a0 = max(o0, later)
                stash.append((a0, o1, [None if (i := rows_index(a, 0, a0, o1)) is None else host[i].copy()
                                       for a, host in zip(self.layout, self._state, strict=True)]))
            views = self.inner.state_views()
            new = views if views is not None else self.inner.state()
            for a, host, mine in zip(self.layout, self._state, new, strict=True):
                if (dst := rows_index(a, 0, o0, o1)) is not None:
                    host[dst] = mine[rows_index(a, 0, o0, o1, e0)]
        if self._nreceivers:
            self._taken.append(steps_traces)
        self._clock += height

    def step(self, nsteps: int, src_samples=None) -> None:
        self._run(int(nsteps), src_samples, self.inner.step)

    def sweep(self, height: int, src_samples=None) -> None:
        self._run(int(height), src_samples, self.inner.sweep)

    def take_traces(self) -> np.ndarray:
        rows, self._taken = self._taken, []
        if not self._nreceivers:
            return np.zeros((0, 0), dtype=np.float32)
        return np.concatenate(rows) if rows else np.zeros((0, self._nreceivers), dtype=np.float32)
