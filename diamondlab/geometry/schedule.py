"""The stage schedule of one DiamondTorre sweep over a rectangular domain.

Contract
--------
A sweep advances every cell of an ``nx x ny`` domain (each cell a z column)
by ``Nt`` time steps.  Torres are taken from the tiling lattice of
:class:`~diamondlab.geometry.tiles.DiamondTile`: stage ``m`` holds the torres
whose bottom tiles are anchored at ``x0 = R m`` and ``yc = R m + 2 R j``.
Tier ``k`` of a torre covers time step ``k`` of the sweep (it computes level
``t + k + 1`` from levels ``t + k`` and ``t + k - 1``).  Stages run from the
right (+x) boundary to the left (decreasing ``m``); torres of one stage are
independent, a torre depends only on torres of stages already run (to its
right) and on its own lower tiers.  Each tier is clipped to the domain; a
torre that loses cells to the clipping is a *boundary torre*.

At every step of the sweep the tiers of all torres tile the plane, so every
``(x, y, step)`` vertex of the domain is computed exactly once; because a
torre leans by exactly the stencil reach, the two field arrays can be updated
in place.  A torre needs only the two torres of the previous stage beside it
(:meth:`StageSchedule.dependencies`), and of them not whole: its tier ``k``
may start once their tier ``k`` is done (:meth:`StageSchedule.pipeline_violations`
proves it for any timing), which shortens the critical path of a sweep from
``Nt`` tiers per stage to one.  :class:`StageSchedule` exposes plain int arrays that the kernels
consume (``torre_x0``, ``torre_yc``, ``stage_start``) and a vertex-level API
for tests and drawings.

``periodic_y=True``: the domain wraps in y (cell ``y`` and ``y + ny`` are
one).  The tile lattice repeats every ``2 R`` in y, so when ``ny`` is a
multiple of ``2 R`` the wrapped domain is tiled by the lattice itself: a
stage keeps one torre per class of ``yc`` modulo ``ny`` (``ny / 2R``
torres), and a tier's rows wrap modulo ``ny`` instead of being clipped
(a torre across the face is one torre, run by one worker, not two clipped
halves that would race on the cells beside the face).  Each torre then does
what it and its images do on the infinite periodic grid, so every check
here (:meth:`replay_in_place`, :meth:`pipeline_violations`, reading
neighbours across the face) holds as on the open domain; :meth:`launch_order`
keeps stage order (a wrapped dependency may lie in a later diagonal band).
Another ``ny`` is refused (the lattice would not close on itself).  NumPy only.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from diamondlab.geometry.tiles import DiamondTile, DiamondTorre, _positive_int

__all__ = ["StageSchedule", "stage_schedule"]


@dataclass(frozen=True)
class StageSchedule:
    """Ordered stages of DiamondTorres covering an ``nx x ny`` domain for ``Nt`` steps.

    Parameters
    ----------
    torre : DiamondTorre
        Tile (order, size) and height ``nt`` of the torres.
    nx, ny : int
        Domain size in cells; each must be at least ``2 R`` (one tile).

    Examples
    --------
    >>> s = stage_schedule(order=2, size=2, nt=4, nx=9, ny=7)
    >>> s.nstages, s.ntorres
    (7, 14)
    >>> int(s.torre_x0[s.stage_start[0]]), int(s.torre_x0[s.stage_start[-2]])  # right to left
    (8, -4)
    >>> v = s.vertices()
    >>> len(v) == 9 * 7 * 4  # every (x, y, step) exactly once
    True
    """

    torre: DiamondTorre
    nx: int
    ny: int
    periodic_y: bool = False
    stage_m: np.ndarray = field(init=False, repr=False, compare=False)
    stage_start: np.ndarray = field(init=False, repr=False, compare=False)
    torre_x0: np.ndarray = field(init=False, repr=False, compare=False)
    torre_yc: np.ndarray = field(init=False, repr=False, compare=False)
    torre_stage: np.ndarray = field(init=False, repr=False, compare=False)

    @staticmethod
    def check(torre: DiamondTorre, nx: int, ny: int, periodic_y: bool = False) -> tuple[int, int]:
        """Validate a schedule of ``torre`` over ``nx`` x ``ny`` without building it; return ``(nx, ny)``.

        >>> from diamondlab.geometry import DiamondTile
        >>> StageSchedule.check(DiamondTorre(DiamondTile(2, 4), 8), 6, 40)
        Traceback (most recent call last):
        ...
        ValueError: grid too small for one tile: nx=6 but ... spans 2R=8 cells; use nx >= 8 or a smaller DTS
        """
        if not isinstance(torre, DiamondTorre):
            raise TypeError(f"torre must be a DiamondTorre; got {type(torre).__name__}")
        r = torre.tile.radius
        sizes = []
        for name, value in (("nx", nx), ("ny", ny)):
            value = _positive_int(name, value)
            if value < 2 * r:
                tile = torre.tile
                raise ValueError(
                    f"grid too small for one tile: {name}={value} but a diamond tile with "
                    f"NO={tile.order}, DTS={tile.size} spans 2R={2 * r} cells; use {name} >= {2 * r}"
                    " or a smaller DTS"
                )
            sizes.append(value)
        if periodic_y and sizes[1] % (2 * r):
            tile = torre.tile
            raise ValueError(f"periodic y needs ny a multiple of 2R={2 * r} (the diamond tiles' period in y "
                             f"at NO={tile.order}, DTS={tile.size}); got ny={sizes[1]}")
        return sizes[0], sizes[1]

    def __post_init__(self):
        nx, ny = self.check(self.torre, self.nx, self.ny, self.periodic_y)
        object.__setattr__(self, "nx", nx)
        object.__setattr__(self, "ny", ny)
        r = self.torre.tile.radius
        shs, nt = self.torre.tile.shs, self.torre.nt
        # stage m has tier-k cells x in [R m + ShS k - R + 1, R m + ShS k + R]
        m_max = (self.nx - 2 + r) // r
        m_min = -((r + shs * (nt - 1)) // r)
        stages = np.arange(m_max, m_min - 1, -1, dtype=np.int64)
        x0s, ycs, owner, start = [], [], [], [0]
        for i, m in enumerate(stages):
            first = r * m - 2 * r * ((r * m - (1 - r)) // (2 * r))  # smallest yc >= 1 - R
            end = first + self.ny if self.periodic_y else self.ny + r - 1  # one torre per class mod ny
            yc = np.arange(first, end, 2 * r, dtype=np.int64)
            x0s.append(np.full(len(yc), r * m, dtype=np.int64))
            ycs.append(yc)
            owner.append(np.full(len(yc), i, dtype=np.int64))
            start.append(start[-1] + len(yc))
        object.__setattr__(self, "stage_m", stages)
        object.__setattr__(self, "stage_start", np.array(start, dtype=np.int64))
        object.__setattr__(self, "torre_x0", np.concatenate(x0s))
        object.__setattr__(self, "torre_yc", np.concatenate(ycs))
        object.__setattr__(self, "torre_stage", np.concatenate(owner))
        for a in (self.stage_m, self.stage_start, self.torre_x0, self.torre_yc, self.torre_stage):
            a.flags.writeable = False

    # ----------------------------------------------------------------- sizes
    @property
    def tile(self) -> DiamondTile:
        return self.torre.tile

    @property
    def nt(self) -> int:
        return self.torre.nt

    @property
    def nstages(self) -> int:
        return len(self.stage_m)

    @property
    def ntorres(self) -> int:
        return len(self.torre_x0)

    def stage_torres(self, stage: int) -> np.ndarray:
        """Indices of the torres of stage number ``stage`` (0 is the rightmost)."""
        return np.arange(self.stage_start[stage], self.stage_start[stage + 1])

    # ----------------------------------------------------------- clipped tiers
    def tier_rows(self, torre: int, k: int) -> np.ndarray:
        """Clipped rows ``(y, x_first, x_last)`` of tier ``k`` of torre ``torre`` (may be empty)."""
        x0 = int(self.torre_x0[torre]) + self.tile.shs * k
        yc = int(self.torre_yc[torre])
        rows = self.tile.rows()
        y = yc + rows[:, 0]
        if self.periodic_y:
            y = y % self.ny
        lo = np.maximum(x0 + rows[:, 1], 0)
        hi = np.minimum(x0 + rows[:, 2], self.nx - 1)
        keep = (y >= 0) & (y < self.ny) & (lo <= hi)
        return np.stack([y[keep], lo[keep], hi[keep]], axis=1)

    def torre_rows(self) -> np.ndarray:
        """x rows ``[lo, hi)`` each torre reads or writes over its ``Nt`` tiers (its tiers' cells and the
        stencil reach beyond them), clipped to the domain: an int array ``(ntorres, 2)``.

        A calculation window (:mod:`diamondlab.engine.scale.window`) holds these rows on the device while
        the torre runs.

        >>> s = stage_schedule(order=2, size=2, nt=4, nx=9, ny=7)
        >>> s.torre_rows()[s.stage_start[3]].tolist()  # x0 = 2: its tiers cover x 1..7, read 0..8
        [0, 9]
        """
        rows = self.tile.rows()
        shs, nt = self.tile.shs, self.nt
        lo = self.torre_x0 + int(rows[:, 1].min()) - shs
        hi = self.torre_x0 + shs * (nt - 1) + int(rows[:, 2].max()) + shs + 1
        return np.stack([np.clip(lo, 0, self.nx), np.clip(hi, 0, self.nx)], axis=1)

    def tier_cells(self) -> np.ndarray:
        """Cells per (torre, tier) after clipping, an int array ``(ntorres, Nt)`` (:meth:`tier_rows`'
        widths summed, all torres and tiers at once)."""
        rows = self.tile.rows().astype(np.int64)
        x0 = self.torre_x0.astype(np.int64)[:, None, None] + self.tile.shs * np.arange(self.nt)[None, :, None]
        y = self.torre_yc.astype(np.int64)[:, None, None] + rows[None, None, :, 0]
        if self.periodic_y:
            y = y % self.ny
        lo = np.maximum(x0 + rows[None, None, :, 1], 0)
        hi = np.minimum(x0 + rows[None, None, :, 2], self.nx - 1)
        keep = (y >= 0) & (y < self.ny) & (lo <= hi)
        return np.where(keep, hi - lo + 1, 0).sum(axis=2).astype(np.int64)

    @property
    def boundary(self) -> np.ndarray:
        """Whether each torre is cut by the domain edge (a boundary torre)."""
        return (self.tier_cells() < self.tile.ncells).any(axis=1)

    # ---------------------------------------------------------------- vertices
    def iter_tiers(self) -> Iterator[tuple[int, int, int, np.ndarray]]:
        """Yield ``(stage, torre, k, rows)`` in a valid execution order.

        Stages in order; within a stage torre by torre (any order would do),
        tiers bottom to top.
        """
        for s in range(self.nstages):
            for i in self.stage_torres(s):
                for k in range(self.nt):
                    rows = self.tier_rows(i, k)
                    if len(rows):
                        yield s, int(i), k, rows

    def vertices(self) -> np.ndarray:
        """All ``(x, y, step)`` vertices of the sweep in execution order, shape ``(n, 3)``."""
        out = []
        for _, _, k, rows in self.iter_tiers():
            for y, lo, hi in rows:
                x = np.arange(lo, hi + 1)
                out.append(np.stack([x, np.full_like(x, y), np.full_like(x, k)], axis=1))
        return np.concatenate(out)

    def stage_of_vertex(self) -> np.ndarray:
        """Stage index of every ``(x, y, step)`` vertex, an int array ``(nx, ny, Nt)``."""
        owner = self.torre_of_vertex()
        return np.where(owner >= 0, self.torre_stage[np.maximum(owner, 0)], -1)

    def torre_of_vertex(self) -> np.ndarray:
        """Index of the torre computing every ``(x, y, step)`` vertex, an int array ``(nx, ny, Nt)``."""
        out = np.full((self.nx, self.ny, self.nt), -1, dtype=np.int64)
        for _, i, k, rows in self.iter_tiers():
            for y, lo, hi in rows:
                out[lo : hi + 1, y, k] = i
        return out

    def time_levels_after(self, done) -> np.ndarray:
        """Steps completed by every cell once the torres ``done`` (a bool mask or indices) have run.

        >>> s = stage_schedule(order=2, size=1, nt=4, nx=8, ny=4)
        >>> bool((s.time_levels_after(s.stage_torres(0)) == s.time_levels(1)).all())
        True
        """
        mask = np.zeros(self.ntorres, dtype=bool)
        mask[np.asarray(done)] = True
        owner = self.torre_of_vertex()
        return (mask[np.maximum(owner, 0)] & (owner >= 0)).sum(axis=2)

    def time_levels(self, stages_done: int) -> np.ndarray:
        """Steps completed by every cell after the first ``stages_done`` stages (paper fig. 9).

        >>> s = stage_schedule(order=2, size=1, nt=4, nx=8, ny=4)
        >>> int(s.time_levels(0).max()), int(s.time_levels(s.nstages).min())
        (0, 4)
        """
        stage = self.stage_of_vertex()
        return (stage < stages_done).sum(axis=2)

    def replay_in_place(self) -> list[str]:
        """Replay the sweep on two in-place arrays of time levels; return every violation found.

        Array ``p`` holds the levels of parity ``p``; at the start array 0
        holds level 0 and array 1 level 1.  Step ``k`` of a vertex reads level
        ``k + 1`` of its cross (within the domain) from array ``(k+1) % 2`` and
        level ``k`` of itself from array ``k % 2``, then overwrites the latter
        with level ``k + 2``.  A read that finds another level means the
        schedule read too early or a value was overwritten before its last
        reader.  An empty list means the schedule is correct.

        >>> stage_schedule(order=4, size=2, nt=5, nx=13, ny=10).replay_in_place()
        []
        """
        return self._replay(self.iter_tiers())

    def _replay(self, tiers) -> list[str]:
        """Replay ``(stage, torre, k, rows)`` tiers in the given order (see :meth:`replay_in_place`)."""
        shs, nx, ny = self.tile.shs, self.nx, self.ny
        levels = [np.zeros((nx, ny), dtype=np.int64), np.ones((nx, ny), dtype=np.int64)]
        problems: list[str] = []
        for s, i, k, rows in tiers:
            src, dst = levels[(k + 1) % 2], levels[k % 2]
            for y, lo, hi in rows:
                reads = [src[lo : hi + 1, y], dst[lo : hi + 1, y]]
                for d in range(1, shs + 1):
                    reads.append(src[max(lo - d, 0) : max(hi + 1 - d, 0), y])
                    reads.append(src[min(lo + d, nx) : min(hi + 1 + d, nx), y])
                    for yn in (y - d, y + d):
                        if self.periodic_y or 0 <= yn < ny:
                            reads.append(src[lo : hi + 1, yn % ny])
                wanted = [k + 1, k] + [k + 1] * (len(reads) - 2)
                for got, want in zip(reads, wanted, strict=True):
                    if got.size and not np.all(got == want):
                        problems.append(
                            f"stage {s} torre {i} tier {k} row y={y} x={lo}..{hi}: read level "
                            f"{sorted(set(got.tolist()))}, needs {want}"
                        )
                dst[lo : hi + 1, y] = k + 2
        for p, want in ((self.nt % 2, self.nt), ((self.nt + 1) % 2, self.nt + 1)):
            if not np.all(levels[p] == want):
                problems.append(f"after the sweep array {p} is not all at level {want}")
        return problems

    # ------------------------------------------------------------------ owners
    def owner(self, x, y, k) -> tuple[np.ndarray, np.ndarray]:
        """Which torre computes vertex ``(x, y, step k)``, and which cell of its tile it is.

        Returns ``(torre, cell)`` int arrays (vectorised over the inputs):
        the index of the torre whose tier ``k`` holds the vertex, and the
        vertex's position in that tile's cells listed row by row
        (:meth:`DiamondTile.cells` order: ``dy`` ascending, then ``dx``).
        At step ``k`` the tiers form the tile lattice shifted by ``ShS k`` in
        x, so the owner follows from rotated coordinates, without a search.
        Kernels use it to place sources and receivers inside the torres.

        >>> s = stage_schedule(order=2, size=2, nt=3, nx=8, ny=6)
        >>> torre, cell = s.owner(5, 2, 1)
        >>> x0, yc = int(s.torre_x0[torre]) + 1, int(s.torre_yc[torre])  # tier 1 sits ShS further
        >>> xs, ys = s.tile.cells(x0, yc)
        >>> int(xs[cell]), int(ys[cell])
        (5, 2)
        """
        x, y, k = np.broadcast_arrays(*(np.asarray(a, dtype=np.int64) for a in (x, y, k)))
        if ((x < 0) | (x >= self.nx) | (y < 0) | (y >= self.ny) | (k < 0) | (k >= self.nt)).any():
            raise ValueError(
                f"vertices must lie in 0 <= x < {self.nx}, 0 <= y < {self.ny}, 0 <= k < {self.nt}"
            )
        r, shs = self.tile.radius, self.tile.shs
        xs = x - shs * k  # the vertex in the tier-0 lattice
        # tile (a, b) is anchored at (R(a+b), R(a-b)), its centre at x + 1/2: |dx - 1/2| + |dy| < R
        a = (2 * (xs + y) - 1 + 2 * r) // (4 * r)
        b = (2 * (xs - y) - 1 + 2 * r) // (4 * r)
        x0, yc = r * (a + b), r * (a - b)
        stage = self.stage_m[0] - (a + b)
        first = self.torre_yc[self.stage_start[stage]]
        offset = (yc - first) % self.ny if self.periodic_y else yc - first
        torre = self.stage_start[stage] + offset // (2 * r)
        # position in the tile, row by row: rows dy = 1-R .. R-1 of 2(R - |dy|) cells from dx = 1 - w
        dy, dx = y - yc, xs - x0
        widths = 2 * (r - np.abs(np.arange(1 - r, r)))
        row_start = np.concatenate([[0], np.cumsum(widths)])
        cell = row_start[dy + r - 1] + dx - (1 - (r - np.abs(dy)))
        return torre, cell

    # ------------------------------------------------------- tier pipelining
    def dependencies(self) -> np.ndarray:
        """The torres of the previous stage at ``yc - R`` and ``yc + R`` of every torre (-1: none).

        The only direct dependencies of a torre; every other torre that its
        tiers touch is reached through them (paper 000, section 6).

        >>> s = stage_schedule(order=2, size=2, nt=3, nx=8, ny=8)
        >>> d = s.dependencies()
        >>> d.shape == (s.ntorres, 2) and bool((d[: s.stage_start[1]] == -1).all())
        True
        """
        r = self.tile.radius
        deps = np.full((self.ntorres, 2), -1, dtype=np.int64)
        for st in range(1, self.nstages):
            prev = {self._yclass(int(self.torre_yc[i])): i for i in self.stage_torres(st - 1)}
            for i in self.stage_torres(st):
                for j, dy in enumerate((-r, r)):
                    deps[i, j] = prev.get(self._yclass(int(self.torre_yc[i]) + dy), -1)
        return deps

    def _yclass(self, yc: int) -> int:
        """``yc`` modulo ``ny`` on a periodic y (a torre and its images are one), else ``yc``."""
        return yc % self.ny if self.periodic_y else yc

    def launch_order(self, band: int | None = None) -> np.ndarray:
        """The order in which a sweep hands torres out (a permutation of torre indices).

        ``band=None``: stage by stage (the schedule's own order).  ``band=B``:
        diagonal bands of ``B`` torres.  On the tile lattice torre ``(a, b)``
        (``x0 = R (a + b)``, ``yc = R (a - b)``) depends on ``(a + 1, b)``
        and ``(a, b + 1)`` (:meth:`dependencies`), so taking the bands of
        ``B`` consecutive ``a`` from the largest down, and stage by stage inside
        a band, puts every dependency before its dependant.  With tier-level
        waits the torres of one band then run a few tiers apart and read what
        the torre before them wrote a tier earlier, while it is still in a
        cache; stage by stage the whole stage runs in between.

        >>> s = stage_schedule(order=2, size=1, nt=3, nx=12, ny=12)
        >>> bool((s.launch_order() == np.arange(s.ntorres)).all())
        True
        >>> order = s.launch_order(band=2)
        >>> rank = np.argsort(order)
        >>> d = s.dependencies()
        >>> bool(((d < 0) | (rank[np.maximum(d, 0)] < rank[:, None])).all())  # dependencies first
        True
        """
        if band is None or self.periodic_y:  # a wrapped dependency may lie in a later band: stage order
            return np.arange(self.ntorres, dtype=np.int64)
        return np.lexsort((np.arange(self.ntorres), self.torre_stage, self._band_of(band))).astype(np.int64)

    def _band_of(self, band: int) -> np.ndarray:
        """Each torre's diagonal band of ``band`` torres, counted from the largest lattice diagonal."""
        a = (self.torre_x0 + self.torre_yc) // (2 * self.tile.radius)
        return (a.max() - a) // _positive_int("band", band)

    def launch_groups(self, band: int | None = None) -> list[np.ndarray]:
        """The torres of :meth:`launch_order` in the groups a sweep hands out together: one stage
        (``band=None``) or the torres of one stage inside one diagonal band of ``band`` torres.

        >>> s = stage_schedule(order=2, size=1, nt=3, nx=12, ny=12)
        >>> len(s.launch_groups()) == s.nstages
        True
        >>> groups = s.launch_groups(band=2)
        >>> bool((np.concatenate(groups) == s.launch_order(band=2)).all()), len(groups) > s.nstages
        (True, True)
        """
        order = self.launch_order(band)
        stage = self.torre_stage[order]
        if band is None:
            return np.split(order, np.flatnonzero(np.diff(stage)) + 1)
        key = self._band_of(band)[order] if not self.periodic_y else np.zeros(len(order), np.int64)
        return np.split(order, np.flatnonzero((np.diff(stage) != 0) | (np.diff(key) != 0)) + 1)

    def pipelined_rounds(self, lag: int = 1) -> list[list[tuple[int, int]]]:
        """Rounds of ``(torre, k)`` tiers when a tier waits on *tiers*, not whole torres.

        Tier ``k`` of a torre may run once its own tier ``k - 1`` and tier
        ``min(k + lag, Nt - 1)`` of both its :meth:`dependencies` are done;
        each round holds every tier ready at its start (they would run at
        the same time).  ``lag = Nt - 1`` is the whole-torre wait of the
        one-launch GPU sweep; :meth:`pipeline_violations` says which lags keep
        the in-place update correct (``lag = 0`` does, ``-1`` does not: the
        torre two stages back would be waited on one tier too little), and
        ``len(rounds)`` is the critical path in tiers: ``Nt`` per stage for
        whole-torre waits, one per stage plus ``Nt - 1`` for ``lag = 0``.

        >>> s = stage_schedule(order=2, size=1, nt=4, nx=8, ny=6)
        >>> len(s.pipelined_rounds(3)) == s.nstages * 4, len(s.pipelined_rounds(1)) < s.nstages * 4
        (True, True)
        """
        if not isinstance(lag, (int, np.integer)) or lag < -1:
            raise ValueError(f"lag must be an int >= -1; got {lag!r}")
        nt, deps = self.nt, self.dependencies()
        done = np.full(self.ntorres, -1, dtype=np.int64)  # last tier finished per torre
        rounds = []
        while (done < nt - 1).any():
            k = done + 1
            need = np.minimum(k + lag, nt - 1)
            ready = k < nt
            for j in range(2):
                d = deps[:, j]
                ready &= (d < 0) | (done[np.maximum(d, 0)] >= need)
            idx = np.flatnonzero(ready)
            if not len(idx):  # pragma: no cover - the dependencies form a DAG
                raise RuntimeError("pipelined schedule deadlocked")
            rounds.append([(int(i), int(k[i])) for i in idx])
            done[idx] += 1
        return rounds

    def pipeline_violations(self, lag: int = 1) -> list[str]:
        """Data dependencies that tier-level waits with this ``lag`` leave unordered.

        With the waits of :meth:`pipelined_rounds` a tier is guaranteed to run
        after its torre's lower tiers, after the awaited tiers of its
        dependencies and, transitively, after everything those awaited.  Tier
        ``k`` of the vertex ``(x, y)`` must run after the tier ``k - 2``
        that wrote level ``k`` there (it reads it and overwrites it) and after
        tier ``k - 1`` of ``(x, y)`` and of its cross neighbours within ``ShS``
        (they wrote the level ``k + 1`` it reads and read the level ``k`` it
        overwrites).  Returns one line per such pair that the waits do not
        order, for ANY timing of the tiers (not one simulated order); an empty
        list means the in-place update stays correct.

        >>> s = stage_schedule(order=4, size=1, nt=5, nx=14, ny=10)
        >>> s.pipeline_violations(s.nt - 1)  # whole-torre waits
        []
        """
        nt, nx, ny, shs = self.nt, self.nx, self.ny, self.tile.shs
        deps = self.dependencies()
        lag_rounds = self.pipelined_rounds(lag)  # validates lag; events in an order that respects the waits
        # before[i, k, t]: the highest tier of torre t guaranteed done when tier k of torre i starts
        before = np.full((self.ntorres, nt, self.ntorres), -1, dtype=np.int64)
        for events in lag_rounds:
            for i, k in events:
                b = before[i, k - 1].copy() if k else np.full(self.ntorres, -1, dtype=np.int64)
                if k:
                    b[i] = k - 1
                need = min(k + lag, nt - 1)
                for d in deps[i]:
                    if d >= 0:
                        np.maximum(b, before[d, need], out=b)
                        b[d] = max(b[d], need)
                before[i, k] = b
        x, y = np.meshgrid(np.arange(nx), np.arange(ny), indexing="ij")
        x, y = x.ravel(), y.ravel()
        offsets = [(0, 0)] + [(sx * d, sy * d) for d in range(1, shs + 1)
                              for sx, sy in ((1, 0), (-1, 0), (0, 1), (0, -1))]
        problems = []
        for k in range(nt):
            me, _ = self.owner(x, y, k)
            checks = []
            if k >= 2:
                checks.append((x, y, self.owner(x, y, k - 2)[0], k - 2))
            if k >= 1:
                for dx, dy in offsets:
                    xn, yn = x + dx, y + dy
                    if self.periodic_y:
                        yn = yn % ny
                    inside = (xn >= 0) & (xn < nx) & (yn >= 0) & (yn < ny)
                    prev = np.full(len(x), -1, dtype=np.int64)
                    prev[inside] = self.owner(xn[inside], yn[inside], k - 1)[0]
                    checks.append((xn, yn, prev, k - 1))
            for _, _, other, tier in checks:
                bad = (other >= 0) & (other != me) & (before[me, k, np.maximum(other, 0)] < tier)
                for j in np.flatnonzero(bad)[:3]:
                    problems.append(
                        f"tier {k} of torre {me[j]} at ({x[j]}, {y[j]}) may run before tier {tier} "
                        f"of torre {other[j]}"
                    )
        return problems

    # -------------------------------------------------------------- asynchrony
    def stage_asynchrony(self, nz: int = 1) -> np.ndarray:
        """Vertices each stage can compute concurrently: max over tiers of the stage's cells, times ``nz``."""
        cells = self.tier_cells()
        out = np.zeros(self.nstages, dtype=np.int64)
        for s in range(self.nstages):
            out[s] = cells[self.stage_torres(s)].sum(axis=0).max()
        return out * nz


def stage_schedule(order: int = 2, size: int = 1, nt: int = 1, nx: int = 16, ny: int = 16,
                   periodic_y: bool = False) -> StageSchedule:
    """Shortcut: ``StageSchedule(DiamondTorre(DiamondTile(order, size), nt), nx, ny, periodic_y)``.

    >>> s = stage_schedule(order=4, size=2, nt=5, nx=13, ny=16, periodic_y=True)
    >>> s.replay_in_place(), s.pipeline_violations(0), len(s.vertices()) == 13 * 16 * 5
    ([], [], True)
    """
    return StageSchedule(DiamondTorre(DiamondTile(order, size), nt), nx, ny, periodic_y)
