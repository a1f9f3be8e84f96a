"""Several processes over MPI: the domain split along one axis, each rank a slab with ghost rows.

Contract
--------
:class:`SlabBackend` runs one rank's part of a run on any backend of any
equation: the CPU engine, or one GPU per rank
(:meth:`~diamondlab.engine.backends.Backend.claim_device`).  The equation
(:class:`~diamondlab.engine.scale.subdomain.EquationParts`) names the axis (the
acoustic equation: y; Maxwell's: x, whose rows are long runs of its
arrays), the ghost rows ``G`` (:meth:`~diamondlab.engine.scale.subdomain.EquationParts.ghost_rows`:
``Nt * order / 2`` for the acoustic equation, twice that for Maxwell's two
half steps a step) and its state.  The grid is split along that axis into
``comm.size`` slabs whose owned and ghost rows together are nearly equal (:func:`slab_bounds`: an edge
rank, with one inner side, owns ``G`` rows more than a middle one); rank ``r``
owns rows ``[lo, hi)`` and holds the rows ``[lo - G, hi + G)`` clipped to
the grid: the light cone of a sweep of ``Nt`` steps.  Before each
sweep (or each call of ``step``) the ranks exchange the ghost rows of every
state array with the ranks that own them (:mod:`~diamondlab.engine.scale.halo`: through
host memory, or GPU to GPU over CUDA IPC), then each rank runs the sweep on its
slab alone.  The zero boundary that a slab's cut edge puts in place of its
neighbour's rows corrupts at most ``order / 2`` rows per update, so after
``Nt`` steps every owned row is exact: **each rank's owned rows equal the
single-process result bit for bit**, whatever the algorithm (the ghost rows
are recomputed by both neighbours: the price of exchanging once per sweep).

Sources are applied on every rank whose slab holds their cell (ghost rows
included), receivers and the monitors' points are recorded by the rank that
owns their row; traces, fields, the whole state and the monitors' DFT sums
are gathered so that every rank sees the global values (``fields``,
``state``, ``planes``, ``dft_sums`` and ``take_traces`` are collective:
every rank must call them).  Decisions that depend on a rank's clock (when to check the
planes, when to report) are agreed with :meth:`SlabBackend.agree`.
"""

from __future__ import annotations

import math

import numpy as np

from diamondlab.engine.backends import Backend, Wrapper
from diamondlab.engine.scale.halo import connect
from diamondlab.engine.scale.subdomain import ACOUSTIC, ghost_rows, rows_index

__all__ = ["SlabBackend", "predict_scaling", "slab_bounds"]


def slab_bounds(n: int, ranks: int, axis: str = "y", ghosts: int = 0) -> list[tuple[int, int]]:
    """The ``[lo, hi)`` rows of the split ``axis`` (``n`` cells) each of ``ranks`` ranks owns, so that every
    rank computes as many rows.

    A rank computes its own rows and ``ghosts`` rows on each inner side (one side for the two edge ranks,
    two for the others): an edge rank owns ``ghosts`` rows more than a middle one, and the sweep of the
    slowest rank, which every rank waits for, is as short as the split allows.  Where the grid is too
    narrow for that (a middle rank would own no row), the ghost rows weigh only as much as leaves each
    rank a row.  ``ghosts=0``: widths differ by at most one.

    >>> slab_bounds(10, 3)
    [(0, 4), (4, 7), (7, 10)]
    >>> slab_bounds(4096, 4, ghosts=32)  # each rank computes 1072 rows: 1040 + 32, 1008 + 2 x 32
    [(0, 1040), (1040, 2048), (2048, 3056), (3056, 4096)]
    """
    if not 1 <= ranks <= n:
        raise ValueError(f"{ranks} MPI ranks need n{axis} >= {ranks} (one row each at least); got "
                         f"n{axis}={n}")
    sides = [(r > 0) + (r < ranks - 1) for r in range(ranks)]
    weight = min(int(ghosts), (n - ranks) // 2) if ranks > 2 else 0  # two edge ranks alone: equal halves
    # rank r's ideal width (n + weight * sum(sides)) / ranks - weight * sides[r]; the bounds are those
    # widths' running sums, rounded up (numerators over ``ranks``, in integers: the first ranks the widest)
    total = n + weight * sum(sides)
    bounds, lo, numerator = [], 0, 0
    for r in range(ranks):
        numerator += total - ranks * weight * sides[r]
        hi = -(-numerator // ranks)
        bounds.append((lo, hi))
        lo = hi
    return bounds


def predict_scaling(shape, order: int, nt: int, ranks: int, rate: float, link: float,
                    latency: float = 20e-6, staged: float | None = None, overlap: bool = False,
                    shared: bool = True) -> dict:
    """The y split's model: what ``ranks`` ranks of a ``shape`` grid get against one device of ``rate``.

    As built (``overlap=False``): each rank computes its own rows
    (:func:`slab_bounds`: an edge rank owns ``G`` more than a middle one)
    plus ``G = Nt * order / 2`` ghost rows on each inner side, at ``rate``
    cell updates/s (a slab is taken to run at the one device's rate); once a
    sweep it sends ``G`` rows of both levels (``8 G nx nz`` bytes) to each
    neighbour over ``link`` bytes/s each way (``shared=True``: a GPU's own,
    which a middle rank's two sends share, as the NVLinks of a GPU on an
    NVSwitch do; ``False``: a link a side, as where one side crosses to
    another node), plus ``latency`` seconds and
    the run loop's one agreement a sweep (an allreduce: ``latency *
    log2(ranks)``), then waits (the exchange is not overlapped with the
    sweep).  ``staged`` (bytes/s), when given, adds a device-to-host and a
    host-to-device copy of those bytes (host staging: MPI that is not
    CUDA-aware).

    ``overlap=True`` models the schedule that hides the exchange (not built:
    issue 30): no ghost row is recomputed; a sweep first runs the torres of
    the ``2 G`` rows at each inner side (the ``G`` rows the neighbour reads
    next and the torres that reach them), sends those rows while it runs the
    rest, and starts the next sweep once they have arrived: a sweep takes
    ``edges + max(interior, exchange)``.

    Returns the seconds a sweep computes (``compute``: ghost rows, or edges
    and interior) and exchanges (``exchange``; ``hidden``: the part behind
    the interior torres), the speed-up over one device and the efficiency
    (speed-up / ranks).  Losses the model does not hold (a slab runs a few
    per cent slower than the whole grid, the queue drains once a sweep at the
    host's wait) are measured beside it (BENCHMARKS.md).

    >>> m = predict_scaling((1024, 2048, 512), 2, 32, 2, rate=605.7e9, link=450e9)
    >>> round(m["speedup"], 2), round(m["compute"] * 1e3, 1), round(m["exchange"] * 1e3, 2)
    (1.92, 29.3, 0.34)
    >>> [round(predict_scaling((2048, 4096, 512), 2, 32, 4, 632.4e9, 450e9, overlap=o)["speedup"], 2)
    ...  for o in (False, True)]
    [3.74, 4.0]
    """
    nx, ny, nz = (int(n) for n in shape)
    ghosts = ghost_rows(order, nt)
    one = nx * ny * nz * nt / rate
    hidden = 0.0
    if ranks == 1:
        compute, exchange = one, 0.0
    else:
        width = -(-ny // ranks)
        sides = 2 if ranks > 2 else 1  # a middle rank's inner sides: the most rows to hand over
        volume = 8.0 * ghosts * nx * nz  # both levels, float32
        # a middle rank sends to both neighbours through the same links: a GPU's NVLinks all reach the
        # NVSwitch (a NIC is one link too), so its two sends share ``link``
        through = sides if shared else 1
        exchange = through * volume / link + latency * (1 + math.log2(ranks))
        if staged is not None:
            exchange += 2 * through * volume / staged
        if overlap:
            edges = min(width, 2 * ghosts * sides)
            compute = nx * width * nz * nt / rate
            interior = nx * (width - edges) * nz * nt / rate
            hidden = min(exchange, interior)
        else:  # the rank computing the most rows (slab_bounds evens them out), which the others wait for
            bounds = slab_bounds(ny, ranks, ghosts=ghosts)
            rows = max(min(ny, hi + ghosts) - max(0, lo - ghosts) for lo, hi in bounds)
            compute = nx * rows * nz * nt / rate
    speedup = one / (compute + exchange - hidden)
    return {"compute": compute, "exchange": exchange, "hidden": hidden, "speedup": speedup,
            "efficiency": speedup / ranks}


def _extended(bounds, r: int, ghosts: int, n: int) -> tuple[int, int]:
    lo, hi = bounds[r]
    return max(0, lo - ghosts), min(n, hi + ghosts)


class SlabBackend(Wrapper):
    """One rank's slab of a split run (see the module contract); the backend contract, collective.

    The equation (``inner.PARTS``, :mod:`~diamondlab.engine.scale.subdomain`) says the axis the ranks split
    (the acoustic equation: y; Maxwell's: x), the ghost rows a sweep needs and how to cut its physics.

    Parameters
    ----------
    inner : Backend
        The host backend built for :meth:`slab_shape` (the whole grid but ``[lo - G, hi + G)`` along the
        split axis).
    shape : (nx, ny, nz)
        The whole grid.
    comm : mpi4py communicator
    halo : {"auto", "host", "peer"}
        The exchange path (:func:`~diamondlab.engine.scale.halo.connect`).
    """

    def __init__(self, inner: Backend, shape, comm, halo: str = "auto"):
        super().__init__(inner, shape, f"{inner.name} x {comm.size} MPI ranks")
        self.comm = comm
        self.parts = inner.PARTS
        self.axis = axis = self.parts.split_axis
        n = self.shape[axis]
        self.ghosts = self.parts.ghost_rows(self.params.order, self.nt)
        self.bounds = slab_bounds(n, comm.size, "xyz"[axis], self.ghosts)
        self.extended = [_extended(self.bounds, r, self.ghosts, n) for r in range(comm.size)]
        self.owned = self.bounds[comm.rank]
        self.rows = self.extended[comm.rank]
        # what this rank sends to / receives from each other rank: rows of the whole grid
        self._sends, self._recvs = [], []
        for q in range(comm.size):
            if q == comm.rank:
                continue
            send = (max(self.owned[0], self.extended[q][0]), min(self.owned[1], self.extended[q][1]))
            recv = (max(self.bounds[q][0], self.rows[0]), min(self.bounds[q][1], self.rows[1]))
            if send[1] > send[0]:
                self._sends.append((q, send))
            if recv[1] > recv[0]:
                self._recvs.append((q, recv))
        self._physics = self.parts.cut((), axis, self.rows, self.owned)
        local = [[(q, (lo - self.rows[0], hi - self.rows[0])) for q, (lo, hi) in pairs]
                 for pairs in (self._sends, self._recvs)]
        self._halo = connect(inner, comm, *local, halo)  # collective: every rank builds its slab now
        #: how the ghost rows travel (:mod:`~diamondlab.engine.scale.halo`)
        self.halo_path: str = self._halo.description

    @staticmethod
    def slab_shape(shape, order: int, nt: int, ranks: int, rank: int, parts=ACOUSTIC) -> tuple[int, int, int]:
        """The shape of the slab that ``rank`` holds (owned and ghost rows) of an equation's ``parts``."""
        axis = parts.split_axis
        ghosts = parts.ghost_rows(order, nt)
        bounds = slab_bounds(int(shape[axis]), ranks, "xyz"[axis], ghosts)
        lo, hi = _extended(bounds, rank, ghosts, int(shape[axis]))
        return tuple(hi - lo if a == axis else int(n) for a, n in enumerate(shape))

    # ------------------------------------------------------------ the ghost exchange
    def _exchange(self) -> None:
        """Ghost rows of the state from the ranks that own them (every rank calls it)."""
        if self.comm.size > 1:
            self._halo.exchange()

    def _gather(self, local: np.ndarray, axis: int | None = None) -> np.ndarray:
        """The whole grid's array (along array ``axis``: the split one's) from every rank's owned rows."""
        axis = self.axis if axis is None else axis
        lo, hi = self.owned[0] - self.rows[0], self.owned[1] - self.rows[0]
        return self._gather_owned(np.take(local, np.arange(lo, hi), axis=axis), axis)

    def _gather_owned(self, owned: np.ndarray, axis: int) -> np.ndarray:
        """Every rank's ``owned`` part, joined in rank order along array ``axis`` (collective)."""
        owned = np.ascontiguousarray(np.moveaxis(owned, axis, 0), dtype=np.float32)
        counts = self.comm.allgather(owned.size)
        out = np.empty((sum(counts) // max(1, int(np.prod(owned.shape[1:]))), *owned.shape[1:]), np.float32)
        self.comm.Allgatherv(owned, [out, counts])
        return np.ascontiguousarray(np.moveaxis(out, 0, axis))

    def state(self) -> tuple:
        """Host copies of the whole grid's state arrays (every rank's owned rows: collective; a CPML's
        ``psi`` along the split axis: the owned layer cells' slots, in order)."""
        out = []
        for a, local in zip(self.inner.state_layout(self.shape), self.inner.state(), strict=True):
            index = rows_index(a, self.axis, *self.owned, self.rows[0])
            axis = a.axes[self.axis]
            owned = local[index] if index is not None else np.take(local, np.arange(0), axis=axis)
            out.append(self._gather_owned(owned, axis))
        return tuple(out)

    def set_state(self, arrays) -> None:
        """The whole grid's state arrays (every rank passes them): each rank keeps its slab's rows."""
        local = [np.zeros(a.shape, np.float32) for a in self.inner.state_layout()]
        for a, mine, values in zip(self.inner.state_layout(self.shape), local, arrays, strict=True):
            if (src := rows_index(a, self.axis, *self.rows)) is not None:
                mine[rows_index(a, self.axis, *self.rows, self.rows[0])] = np.asarray(values)[src]
        self.inner.set_state(local)

    # ------------------------------------------------------------ the backend contract
    def agree(self, flags: tuple) -> tuple:
        """``flags`` true on any rank are true on all (decisions taken from a rank's own clock)."""
        from mpi4py import MPI

        return tuple(self.comm.allreduce(bool(f), op=MPI.LOR) for f in flags)

    def field_views(self):
        return None, None  # the whole grid is not on one rank

    def _field_arrays(self) -> list:
        return [a for a in self.inner.state_layout() if a.field]

    def set_fields(self, *fields) -> None:
        """The whole grid's fields (``(u^{n-1}, u^n)``; Maxwell's ``(E, H)``; every rank passes them): each
        rank keeps its slab."""
        rows = []
        for a, f in zip(self._field_arrays(), fields, strict=True):
            index = (slice(None),) * a.axes[self.axis] + (slice(*self.rows),)
            rows.append(np.ascontiguousarray(np.asarray(f)[index]))
        self.inner.set_fields(*rows)

    def fields(self):
        return tuple(self._gather(f, a.axes[self.axis])
                     for a, f in zip(self._field_arrays(), self.inner.fields(), strict=True))

    def reset(self) -> None:
        """Every state array of the slab to zero (an equation whose simulation resets the backend)."""
        self.inner.reset()

    @property
    def view(self):
        return getattr(self.inner, "view", None)

    @view.setter
    def view(self, name) -> None:
        self.inner.view = name

    def current_view(self):
        return self._gather(self.inner.current_view())

    def planes(self, index, strides):
        """The whole grid's planes, cut by each rank from its owned rows (only the planes travel)."""
        index = [int(i) for i in index]
        a, i, s = self.axis, index[self.axis], int(strides[self.axis])
        (r0, r1), (o0, o1) = self.rows, self.owned
        local = i - r0 if r0 <= i < r1 else (i - r0) % s  # a slab row with the samples' residue
        pairs = ((0, 1), (0, 2), (1, 2))  # the grid axes of xy, xz, yz
        if local < r1 - r0:
            index[a] = local
            planes = self.inner.planes(tuple(index), strides)
            rows = r0 + local % s + s * np.arange(len(range(local % s, r1 - r0, s)))  # the sampled grid rows
            keep = (rows >= o0) & (rows < o1)
            mine = tuple(np.take(p, np.flatnonzero(keep), axis=pair.index(a)) if a in pair else
                         (p if o0 <= i < o1 else None) for p, pair in zip(planes, pairs, strict=True))
        else:  # no sampled row on this slab
            mine = (None, None, None)
        pieces = self.comm.allgather(mine)  # in rank order: owned rows ascend
        return tuple(np.concatenate([p[k] for p in pieces if p[k] is not None], axis=pair.index(a))
                     if a in pair else next(p[k] for p in pieces if p[k] is not None)
                     for k, pair in enumerate(pairs))

    def set_physics(self, *physics) -> None:
        """The medium's slab, the sources whose cell is in the slab, the receivers whose row is owned."""
        self._physics = self.parts.cut(physics, self.axis, self.rows, self.owned)
        self._physics.apply(self.inner)
        self._halo = self._halo.refit()  # the physics may add state rows (a Drude current, psi)
        self.halo_path = self._halo.description

    def start_monitors(self, step: int) -> None:
        """The monitors' DFT sums to zero (each rank sums the points it owns), the next step ``step``."""
        self.inner.start_monitors(step)

    def dft_sums(self, which=None) -> list[np.ndarray]:
        """The monitors' DFT sums of the whole grid (collective: one owner a point, summed over the ranks:
        x + 0 is x); ``which``: the monitors' indices (None: every monitor)."""
        from mpi4py import MPI

        shapes = self._physics.monitor_shapes
        which = range(len(shapes)) if which is None else which
        whole = [np.zeros(shapes[k], np.complex128) for k in which]
        if self.inner.monitors is not None:
            self._physics.place_sums(self.inner.dft_sums(which), whole, which)
        for w in whole:
            self.comm.Allreduce(MPI.IN_PLACE, w, op=MPI.SUM)
        return whole

    def step(self, nsteps: int, src_samples=None) -> None:
        self._exchange()
        self.inner.step(nsteps, self._physics.samples(src_samples))

    def sweep(self, height: int, src_samples=None) -> None:
        self._exchange()
        self.inner.sweep(height, self._physics.samples(src_samples))

    def take_traces(self) -> np.ndarray:
        """Every receiver point's values since the last call (each from the rank that owns it)."""
        from mpi4py import MPI

        local, nreceivers = self.inner.take_traces(), self._physics.nreceivers
        steps = self.comm.allreduce(len(local) if nreceivers else 0, op=MPI.MAX)
        out = np.zeros((steps, nreceivers), dtype=np.float32)
        self._physics.place(local, out)
        self.comm.Allreduce(MPI.IN_PLACE, out, op=MPI.SUM)  # one owner per column: x + 0 is x
        return out
