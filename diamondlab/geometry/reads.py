"""Which torres of a DiamondTorre sweep a torre reads from, counted exactly; torres as runs of vertices.

Contract
--------
A *run* is a row of vertices ``(x, y, t)`` along x, ``(x_lo, x_hi, y, t)``:
:func:`runs_from_vertices` and :func:`vertices_of_runs` convert between the
two, :func:`torre_runs` gives every clipped tier of one torre of a
:class:`~diamondlab.geometry.StageSchedule` (:meth:`StageSchedule.tier_rows`).

Torre ``a`` *reads from* torre ``b`` when a vertex of ``a`` needs a value
(level ``t - 1`` of its cross, level ``t - 2`` of itself, within the domain)
that a vertex of ``b`` computes in the same sweep.
:func:`torre_dependencies` counts that for every torre on the schedule's
vertex ownership (:func:`vertex_owner`), :func:`torre_reads` for one torre
with :meth:`StageSchedule.owner` (no ownership array), and
:func:`reads_around` places the torres one torre reads from around it,
anchored at ``(0, 0)`` (the frame of :class:`~diamondlab.geometry.DiamondTorre`).
The pictures of :mod:`diamondlab.viz.lrnla` and :mod:`diamondlab.viz.stages`
draw these; the tests check with them that a torre reads only from earlier
stages (the schedule is valid) and never from its own (a stage is
asynchronous).

Each takes the equation (``equation="maxwell"``: the staggered graph of
:class:`~diamondlab.geometry.stencils.GraphStencil`, its tiers half steps,
even ones updating ``H``, read on the lopsided cross): the schedule is then
the engine's, of the Yee order's tile and ``2 Nt`` tiers.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from diamondlab.geometry.schedule import StageSchedule, stage_schedule  # noqa: F401 - the doctests'
from diamondlab.geometry.stencils import GraphStencil

__all__ = [
    "Neighbourhood", "reads_around", "rows_to_runs", "runs_from_vertices", "torre_dependencies",
    "torre_reads", "torre_runs", "vertex_owner", "vertices_of_runs",
]


def runs_from_vertices(vertices) -> np.ndarray:
    """Merge ``(x, y, t)`` vertices into runs along x: an int array ``(n, 4)`` of ``(x_lo, x_hi, y, t)``.

    >>> runs_from_vertices([[0, 0, 0], [1, 0, 0], [3, 0, 0], [0, 1, 0]]).tolist()
    [[0, 1, 0, 0], [3, 3, 0, 0], [0, 0, 1, 0]]
    """
    v = np.unique(np.asarray(vertices, dtype=np.int64).reshape(-1, 3), axis=0)
    if len(v) == 0:
        return np.zeros((0, 4), dtype=np.int64)
    v = v[np.lexsort((v[:, 0], v[:, 1], v[:, 2]))]
    new = np.ones(len(v), dtype=bool)
    new[1:] = (np.diff(v[:, 0]) != 1) | (np.diff(v[:, 1]) != 0) | (np.diff(v[:, 2]) != 0)
    starts = np.flatnonzero(new)
    ends = np.append(starts[1:], len(v)) - 1
    return np.stack([v[starts, 0], v[ends, 0], v[starts, 1], v[starts, 2]], axis=1)


def rows_to_runs(rows, t: int) -> np.ndarray:
    """Clipped tier rows ``(y, x_first, x_last)`` of :meth:`StageSchedule.tier_rows` at step ``t`` as runs."""
    rows = np.asarray(rows, dtype=np.int64).reshape(-1, 3)
    return np.stack([rows[:, 1], rows[:, 2], rows[:, 0], np.full(len(rows), t)], axis=1)


def vertices_of_runs(runs) -> np.ndarray:
    """The ``(x, y, t)`` vertices of runs ``(x_lo, x_hi, y, t)`` (the inverse of :func:`runs_from_vertices`).

    >>> vertices_of_runs([[0, 1, 0, 0], [3, 3, 0, 0]]).tolist()
    [[0, 0, 0], [1, 0, 0], [3, 0, 0]]
    """
    runs = np.asarray(runs, dtype=np.int64).reshape(-1, 4)
    if len(runs) == 0:
        return np.zeros((0, 3), dtype=np.int64)
    lengths = runs[:, 1] - runs[:, 0] + 1
    starts = np.repeat(runs[:, 0] - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths)
    x = starts + np.arange(int(lengths.sum()))
    return np.stack([x, np.repeat(runs[:, 2], lengths), np.repeat(runs[:, 3], lengths)], axis=1)


def torre_runs(schedule: StageSchedule, torre: int) -> np.ndarray:
    """Boxes of all clipped tiers of one torre of ``schedule`` (runs ``(x_lo, x_hi, y, t)``)."""
    parts = [rows_to_runs(schedule.tier_rows(torre, k), k) for k in range(schedule.nt)]
    return np.concatenate(parts) if parts else np.zeros((0, 4), dtype=np.int64)


def vertex_owner(schedule: StageSchedule) -> np.ndarray:
    """Torre index computing every ``(x, y, step)`` vertex (:meth:`StageSchedule.torre_of_vertex`)."""
    return schedule.torre_of_vertex()


def _stencil(schedule: StageSchedule, equation: str) -> GraphStencil:
    """The graph of ``equation`` at the order whose tile ``schedule`` runs (the Yee order is its tile's)."""
    stencil = GraphStencil(equation, schedule.tile.order if equation == "acoustic" else 2 * schedule.tile.shs)
    if stencil.tiers_per_step > 1 and schedule.nt % stencil.tiers_per_step:
        raise ValueError(f"a {equation} sweep has {stencil.tiers_per_step} tiers a step: the schedule's Nt "
                         f"must be a multiple of it; got {schedule.nt}")
    return stencil


def torre_dependencies(schedule: StageSchedule, equation: str = "acoustic") -> list[np.ndarray]:
    """For every torre, the sorted torres (of the same sweep) whose computed values it reads.

    >>> s = stage_schedule(order=2, size=1, nt=2, nx=6, ny=4)
    >>> deps = torre_dependencies(s)
    >>> all(s.torre_stage[d].max(initial=-1) < s.torre_stage[i] for i, d in enumerate(deps))
    True
    """
    stencil = _stencil(schedule, equation)
    owner = vertex_owner(schedule)
    nx, ny, nt = owner.shape
    step = stencil.tiers_per_step
    pairs = [np.zeros((0, 2), dtype=np.int64)]
    for parity in range(step):
        for dx, dy, dt in stencil.offsets(parity):
            first = dt + (parity - dt) % step  # the first reading tier of this parity
            if first >= nt:
                continue
            # reader at (x, y, k) reads source at (x + dx, y + dy, k - dt), k = first, first + step, ...
            xr = slice(max(0, -dx), nx - max(0, dx))
            yr = slice(max(0, -dy), ny - max(0, dy))
            xs = slice(max(0, dx), nx - max(0, -dx))
            ys = slice(max(0, dy), ny - max(0, -dy))
            reader = owner[xr, yr, first::step]
            source = owner[xs, ys, first - dt::step][:, :, : reader.shape[2]]
            pairs.append(np.stack([reader.ravel(), source.ravel()], axis=1))
    pairs = np.unique(np.concatenate(pairs), axis=0)
    pairs = pairs[(pairs[:, 0] != pairs[:, 1]) & (pairs[:, 1] >= 0)]
    out = [np.zeros(0, dtype=np.int64) for _ in range(schedule.ntorres)]
    for reader in np.unique(pairs[:, 0]):
        out[reader] = pairs[pairs[:, 0] == reader, 1]
    return out


def torre_reads(schedule: StageSchedule, torre: int, equation: str = "acoustic") -> np.ndarray:
    """The sorted torres (of the same sweep) whose computed values torre ``torre`` reads.

    The same count as :func:`torre_dependencies` for one torre, asking the
    schedule who owns each vertex read instead of building the ownership of
    the whole sweep.

    >>> s = stage_schedule(order=2, size=1, nt=2, nx=6, ny=4)
    >>> all(np.array_equal(torre_reads(s, i), d) for i, d in enumerate(torre_dependencies(s)))
    True
    """
    stencil = _stencil(schedule, equation)
    x, y, k = vertices_of_runs(torre_runs(schedule, int(torre))).T
    owners = []
    for parity in range(stencil.tiers_per_step):
        mine = k % stencil.tiers_per_step == parity
        for dx, dy, dt in stencil.offsets(parity):
            xs, ys, ks = x[mine] + dx, y[mine] + dy, k[mine] - dt
            inside = (xs >= 0) & (xs < schedule.nx) & (ys >= 0) & (ys < schedule.ny) & (ks >= 0)
            if inside.any():
                owners.append(schedule.owner(xs[inside], ys[inside], ks[inside])[0])
    found = np.unique(np.concatenate(owners)) if owners else np.zeros(0, dtype=np.int64)
    return found[found != torre].astype(np.int64)


class Neighbourhood(NamedTuple):
    """A torre of a sweep and the torres it reads from, in the frame of ``DiamondTorre(...).vertices()``."""

    schedule: StageSchedule
    torre: int
    reads: np.ndarray  # the torres it reads from (indices in ``schedule``)
    runs: np.ndarray  # their boxes ``(x_lo, x_hi, y, t)``, shifted so that the torre is anchored at (0, 0)
    shift: tuple[int, int]  # the torre's anchor in ``schedule``

    @property
    def count(self) -> int:
        """How many torres it reads from."""
        return len(self.reads)


def reads_around(order: int, size: int, nt: int, equation: str = "acoustic") -> Neighbourhood:
    """A torre with every torre it reads from inside the domain, none cut by the boundary.

    The torre is the one of the schedule anchored at ``(2R, 2R)``; the domain
    grows until no torre it reads from loses cells to the boundary.  ``nt``
    is in time steps (``2 nt`` tiers for Maxwell).
    """
    stencil = GraphStencil(equation, order)
    torre_shape = stencil.torre(size, nt)
    tile, tiers = torre_shape.tile, torre_shape.nt
    r, shs = tile.radius, tile.shs
    full = torre_shape.nvertices
    nx, ny = 6 * r + shs * tiers + 2, 5 * r + 2
    for _ in range(6):
        s = StageSchedule(torre_shape, nx, ny)
        torre = int(np.flatnonzero((s.torre_x0 == 2 * r) & (s.torre_yc == 2 * r))[0])
        reads = torre_reads(s, torre, equation)
        parts = [torre_runs(s, int(j)) for j in reads]
        if all(int((p[:, 1] - p[:, 0] + 1).sum()) == full for p in parts):
            break
        nx, ny = 2 * nx, 2 * ny
    runs = np.concatenate(parts) if parts else np.zeros((0, 4), dtype=np.int64)
    runs = runs - np.array([2 * r, 2 * r, 2 * r, 0])
    return Neighbourhood(s, torre, reads, runs, (2 * r, 2 * r))
