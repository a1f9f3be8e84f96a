"""Several processes over MPI: the domain split along y, each rank a slab with ghost rows.

Contract
--------
:class:`SlabBackend` runs one rank's part of a run on any backend: the CPU
engine, or one GPU per rank (:meth:`~diamondlab.engine.backends.Backend.claim_device`).  The grid is
split along y into ``comm.size`` slabs of nearly equal width
(:func:`slab_bounds`); rank ``r`` owns rows ``[y0, y1)`` and holds the rows
``[y0 - G, y1 + G)`` clipped to the grid, with ``G = Nt * order / 2`` ghost
rows on each side: the light cone of a sweep of ``Nt`` steps.  Before each
sweep (or each call of ``step``) the ranks exchange the ghost rows of both
levels with the ranks that own them (:mod:`~diamondlab.engine.scale.halo`: through
host memory, or GPU to GPU over CUDA IPC), then each rank runs the sweep on its
slab alone.  The zero boundary that a slab's cut edge puts in place of its
neighbour's rows corrupts at most ``order / 2`` rows per step, so after
``Nt`` steps every owned row is exact: **each rank's owned rows equal the
single-process result bit for bit**, whatever the algorithm (the ghost rows
are recomputed by both neighbours: the price of exchanging once per sweep).

Sources are applied on every rank whose slab holds their cell (ghost rows
included), receivers are recorded by the rank that owns their row; traces,
fields and planes are gathered so that every rank sees the global values
(``fields``, ``planes`` and ``take_traces`` are collective: every rank must
call them).  Decisions that depend on a rank's clock (when to check the
planes, when to report) are agreed with :meth:`SlabBackend.agree`.
"""

from __future__ import annotations

import math

import numpy as np

from diamondlab.engine.backends import Backend, Wrapper
from diamondlab.engine.scale.halo import connect
from diamondlab.engine.scale.subdomain import PartPhysics, ghost_rows

__all__ = ["SlabBackend", "predict_scaling", "slab_bounds"]


def slab_bounds(ny: int, ranks: int) -> list[tuple[int, int]]:
    """The ``[y0, y1)`` rows each of ``ranks`` ranks owns: widths differ by at most one.

    >>> slab_bounds(10, 3)
    [(0, 4), (4, 7), (7, 10)]
    """
    if not 1 <= ranks <= ny:
        raise ValueError(f"{ranks} MPI ranks need ny >= {ranks} (one row each at least); got ny={ny}")
    base, extra = divmod(ny, ranks)
    bounds, y = [], 0
    for r in range(ranks):
        width = base + (r < extra)
        bounds.append((y, y + width))
        y += width
    return bounds


def predict_scaling(shape, order: int, nt: int, ranks: int, rate: float, link: float,
                    latency: float = 20e-6, staged: float | None = None) -> dict:
    """The y split's model: what ``ranks`` ranks of a ``shape`` grid get against one device of ``rate``.

    Each rank computes its own ``ny / ranks`` rows plus ``G = Nt * order / 2``
    ghost rows on each inner side, at ``rate`` cell updates/s (a slab is
    taken to run at the one device's rate); once a sweep it sends ``G``
    rows of both levels (``8 G nx nz`` bytes) to each neighbour over
    ``link`` bytes/s each way, plus ``latency`` seconds and the run loop's
    one agreement a sweep (an allreduce: ``latency * log2(ranks)``), then
    waits (the exchange is not overlapped with the sweep).  ``staged`` (bytes/s), when
    given, adds a device-to-host and a host-to-device copy of those bytes
    (host staging: MPI that is not CUDA-aware).  Returns the seconds a sweep
    computes and exchanges, the speed-up over one device and the
    efficiency (speed-up / ranks).

    >>> m = predict_scaling((1024, 2048, 512), 2, 32, 2, rate=605.7e9, link=450e9)
    >>> round(m["speedup"], 2), round(m["compute"] * 1e3, 1), round(m["exchange"] * 1e3, 2)
    (1.92, 29.3, 0.34)
    """
    nx, ny, nz = (int(n) for n in shape)
    ghosts = ghost_rows(order, nt)
    if ranks == 1:
        compute, exchange = nx * ny * nz * nt / rate, 0.0
    else:
        width = -(-ny // ranks)
        held = width + 2 * ghosts if ranks > 2 else width + ghosts  # the widest rank waits for the rest
        compute = nx * held * nz * nt / rate
        volume = 8.0 * ghosts * nx * nz  # both levels, float32
        exchange = volume / link + latency * (1 + math.log2(ranks))
        if staged is not None:
            exchange += 2 * volume / staged
    one = nx * ny * nz * nt / rate
    speedup = one / (compute + exchange)
    return {"compute": compute, "exchange": exchange, "speedup": speedup, "efficiency": speedup / ranks}


def _extended(bounds, r: int, ghosts: int, ny: int) -> tuple[int, int]:
    y0, y1 = bounds[r]
    return max(0, y0 - ghosts), min(ny, y1 + ghosts)


class SlabBackend(Wrapper):
    """One rank's slab of a y-split run (see the module contract); the backend contract, collective.

    Parameters
    ----------
    inner : Backend
        The host backend built for :attr:`slab_shape` (``(nx, y1 - y0 + ghosts, nz)``).
    shape : (nx, ny, nz)
        The whole grid.
    comm : mpi4py communicator
    halo : {"auto", "host", "peer"}
        The exchange path (:func:`~diamondlab.engine.scale.halo.connect`).
    """

    def __init__(self, inner: Backend, shape, comm, halo: str = "auto"):
        super().__init__(inner, shape, f"{inner.name} x {comm.size} MPI ranks")
        self.comm = comm
        ny = self.shape[1]
        self.ghosts = ghost_rows(self.params.order, self.nt)
        self.bounds = slab_bounds(ny, comm.size)
        self.extended = [_extended(self.bounds, r, self.ghosts, ny) for r in range(comm.size)]
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
        self._physics = PartPhysics.cut(None, (), (), 1, self.rows, self.owned)
        local = [[(q, (y0 - self.rows[0], y1 - self.rows[0])) for q, (y0, y1) in pairs]
                 for pairs in (self._sends, self._recvs)]
        self._halo = connect(inner, comm, *local, halo)  # collective: every rank builds its slab now
        #: how the ghost rows travel (:mod:`~diamondlab.engine.scale.halo`)
        self.halo_path: str = self._halo.description

    @staticmethod
    def slab_shape(shape, order: int, nt: int, ranks: int, rank: int) -> tuple[int, int, int]:
        """The shape of the slab that ``rank`` holds (owned and ghost rows)."""
        bounds = slab_bounds(int(shape[1]), ranks)
        y0, y1 = _extended(bounds, rank, ghost_rows(order, nt), int(shape[1]))
        return int(shape[0]), y1 - y0, int(shape[2])

    # ------------------------------------------------------------ the ghost exchange
    def _local(self, y0: int, y1: int) -> slice:
        return slice(y0 - self.rows[0], y1 - self.rows[0])

    def _exchange(self) -> None:
        """Ghost rows of both levels from the ranks that own them (every rank calls it)."""
        if self.comm.size > 1:
            self._halo.exchange()

    def _gather(self, local: np.ndarray) -> np.ndarray:
        """The whole grid's array from every rank's owned rows (on every rank)."""
        owned = np.ascontiguousarray(local[:, self._local(*self.owned)].transpose(1, 0, 2))
        counts = [(y1 - y0) * self.shape[0] * self.shape[2] for y0, y1 in self.bounds]
        out = np.empty((self.shape[1], self.shape[0], self.shape[2]), dtype=np.float32)
        self.comm.Allgatherv(owned, [out, counts])
        return np.ascontiguousarray(out.transpose(1, 0, 2))

    # ------------------------------------------------------------ the backend contract
    def agree(self, flags: tuple) -> tuple:
        """``flags`` true on any rank are true on all (decisions taken from a rank's own clock)."""
        from mpi4py import MPI

        return tuple(self.comm.allreduce(bool(f), op=MPI.LOR) for f in flags)

    def field_views(self):
        return None, None  # the whole grid is not on one rank

    def set_fields(self, prev, curr) -> None:
        """The whole grid's ``(u^{n-1}, u^n)`` (every rank passes them): each rank keeps its slab."""
        rows = slice(*self.rows)
        self.inner.set_fields(np.ascontiguousarray(prev[:, rows]), np.ascontiguousarray(curr[:, rows]))

    def fields(self):
        prev, curr = self.inner.fields()
        return self._gather(prev), self._gather(curr)

    def current_view(self):
        return self._gather(self.inner.current_view())

    def planes(self, index, strides):
        """The whole grid's planes, cut by each rank from its owned rows (only the planes travel)."""
        ix, iy, iz = (int(i) for i in index)
        sy = int(strides[1])
        (r0, r1), (o0, o1) = self.rows, self.owned
        ly = iy - r0 if r0 <= iy < r1 else (iy - r0) % sy  # a slab row with the samples' residue
        if ly < r1 - r0:
            xy, xz, yz = self.inner.planes((ix, ly, iz), strides)
            ys = r0 + ly % sy + sy * np.arange(xy.shape[1])  # the grid rows of the sampled columns
            keep = (ys >= o0) & (ys < o1)
            mine = (xy[:, keep], xz if o0 <= iy < o1 else None, yz[keep])
        else:  # no sampled row on this slab
            mine = (None, None, None)
        pieces = self.comm.allgather(mine)  # in rank order: owned rows ascend
        xy = np.concatenate([p[0] for p in pieces if p[0] is not None], axis=1)
        yz = np.concatenate([p[2] for p in pieces if p[2] is not None], axis=0)
        return xy, next(p[1] for p in pieces if p[1] is not None), yz

    def set_physics(self, medium=None, sources=(), receivers=()) -> None:
        """The medium's slab, the sources whose cell is in the slab, the receivers whose row is owned."""
        self._physics = PartPhysics.cut(medium, sources, receivers, 1, self.rows, self.owned)
        self._physics.apply(self.inner)

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
