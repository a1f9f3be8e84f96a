"""The data of a torre's tier on the GPU, apart from how it is printed.

Contract
--------
A CUDA block runs one DiamondTorre of a :class:`~diamondlab.geometry.DiamondTile`
(one z per thread).  At tier ``k`` the tile is anchored at ``(x0 + ShS k, yc)``
and every cell is named by its offset ``(u, v) = (x - x0 - ShS k, y - yc)``
from that anchor: the tile holds row ``v`` (``|v| < R``) from ``u = 1 - w`` to
``w`` with ``w = R - |v|`` (:func:`tile_rows`).  A :class:`TilePlan` says, in
these offsets, what a thread holds and moves at each tier:

- ``held``: level n of the cells the tile reads that it already held at the
  tier before (the *prefix*, ``T_{k-1}`` seen from ``T_k``), in registers;
- ``entering``: level n of the cells that enter each row at this tier
  (loaded), and ``y_halo``: level n of the rows beyond the tile that the y
  derivative reads (loaded); with ``left_from_memory`` the left strip of each
  row (``left_strip``) is loaded again each tier instead of held;
- ``leaving``: the tile cells stored at every tier (they are not in the tile
  two tiers up); ``kept``: the rest, stored on the last two tiers only;
- ``groups``: the tile's cells in the order they are updated (one group, or
  ``segments`` column groups when level n-1 lives in shared memory), and
  ``load_group``: the group before which each load is issued
  (:data:`PREFETCH_GROUPS` groups ahead of the first group that reads it).

Everything is computed from the tile's geometry; the printer
(:mod:`diamondlab.kernels.cuda_source`) only names the registers and writes
the code.  NumPy-free Python data, testable against the geometry layer.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from diamondlab.geometry import DiamondTile

__all__ = ["PREFETCH_GROUPS", "TilePlan", "tile_rows"]

#: Segmented sweeps issue a tier's loads this many segments before the one that reads them first.
PREFETCH_GROUPS = 1

Cell = tuple[int, int]


def tile_rows(radius: int) -> list[tuple[int, int]]:
    """Rows ``(v, w)`` of a tile of radius ``R``: ``v = dy``, cells ``u = 1-w .. w``.

    >>> tile_rows(2)
    [(-1, 1), (0, 2), (1, 1)]
    """
    return [(v, radius - abs(v)) for v in range(1 - radius, radius)]


@dataclass(frozen=True)
class TilePlan:
    """What one thread of a torre's block holds, loads, updates and stores at a tier.

    Parameters
    ----------
    tile : DiamondTile
        The torre's base (NO and DTS).
    segments : int
        0: level n-1 in registers and one group of cells; an even ``S > 0``:
        level n-1 in shared memory and ``S`` column groups (validated by
        :func:`~diamondlab.kernels.cuda_source.shared_layout`).
    left_from_memory : bool
        Load the left strip of each row every tier instead of holding it.

    Examples
    --------
    >>> plan = TilePlan(DiamondTile(2, 2))
    >>> plan.cells
    ((0, -1), (1, -1), (-1, 0), (0, 0), (1, 0), (2, 0), (0, 1), (1, 1))
    >>> plan.entering
    ((1, -1), (2, -1), (2, 0), (3, 0), (1, 1), (2, 1))
    >>> plan.leaving, plan.kept
    (((0, -1), (1, -1), (-1, 0), (0, 0), (0, 1), (1, 1)), ((1, 0), (2, 0)))
    """

    tile: DiamondTile
    segments: int = 0
    left_from_memory: bool = False

    @property
    def shs(self) -> int:
        """``ShS``: the reach of one step, and the tile's shift in x per tier."""
        return self.tile.shs

    @property
    def radius(self) -> int:
        """``R = ShS * DTS``."""
        return self.tile.radius

    @cached_property
    def rows(self) -> tuple[tuple[int, int], ...]:
        """``(v, w)`` per tile row (:func:`tile_rows`), from the tile's own row table."""
        return tuple((int(dy), int(last)) for dy, _, last in self.tile.rows())

    @cached_property
    def cells(self) -> tuple[Cell, ...]:
        """The tile's ``2 R^2`` cells, row by row (a cell's index is its slot in shared memory)."""
        return tuple((u, v) for v, w in self.rows for u in range(1 - w, w + 1))

    @cached_property
    def cell_index(self) -> dict[Cell, int]:
        """Each tile cell's index in :attr:`cells`."""
        return {c: i for i, c in enumerate(self.cells)}

    def left_strip(self, v: int, w: int) -> range:
        """Offsets ``u`` of row ``v`` that left the tile one tier ago (already stored)."""
        return range(1 - w - self.shs, min(-w, w - self.shs) + 1)

    @cached_property
    def held(self) -> tuple[Cell, ...]:
        """Level n held in registers from the tier before: each row's prefix ``u = 1-w-ShS .. w-ShS``
        (without the left strip where it is loaded instead)."""
        return tuple((u, v) for v, w in self.rows for u in range(1 - w - self.shs, w - self.shs + 1)
                     if not (self.left_from_memory and u in self.left_strip(v, w)))

    @cached_property
    def entering(self) -> tuple[Cell, ...]:
        """Level n of the cells that enter each row at a tier: ``u = w-ShS+1 .. w+ShS`` (loaded)."""
        return tuple((u, v) for v, w in self.rows for u in range(w - self.shs + 1, w + self.shs + 1))

    @cached_property
    def reloaded_left(self) -> tuple[Cell, ...]:
        """With ``left_from_memory``: each row's left strip, loaded every tier (else empty)."""
        if not self.left_from_memory:
            return ()
        return tuple((u, v) for v, w in self.rows for u in self.left_strip(v, w))

    @cached_property
    def y_halo(self) -> tuple[Cell, ...]:
        """Level n of the cells beyond the tile's rows that its y derivative reads (loaded), sorted."""
        shs, radius = self.shs, self.radius
        return tuple(sorted({(u, v + s * d) for u, v in self.cells for d in range(1, shs + 1)
                             for s in (-1, 1) if abs(v + s * d) >= radius}))

    @cached_property
    def y_halo_rows(self) -> tuple[int, ...]:
        """The offsets ``v`` of the rows :attr:`y_halo` reads (a boundary torre guards each)."""
        return tuple(sorted({v for _, v in self.y_halo}))

    @property
    def x_span(self) -> range:
        """Offsets ``u`` that a tier reads or writes (a boundary torre guards each)."""
        return range(1 - self.radius - self.shs, self.radius + self.shs + 1)

    @cached_property
    def loads(self) -> tuple[Cell, ...]:
        """Level n loaded at each tier: :attr:`entering`, :attr:`reloaded_left`, :attr:`y_halo`."""
        return self.entering + self.reloaded_left + self.y_halo

    @cached_property
    def leaving(self) -> tuple[Cell, ...]:
        """Tile cells stored at every tier: not in the tile two tiers up (``u < 1 - w + 2 ShS``)."""
        return tuple((u, v) for v, w in self.rows for u in range(1 - w, w + 1) if u < 1 - w + 2 * self.shs)

    @cached_property
    def kept(self) -> tuple[Cell, ...]:
        """Tile cells still in the tile two tiers up: stored on the last two tiers only."""
        leaving = set(self.leaving)
        return tuple(c for c in self.cells if c not in leaving)

    @cached_property
    def groups(self) -> tuple[tuple[Cell, ...], ...]:
        """The cells in update order: all at once, or ``segments`` groups of whole columns."""
        if not self.segments:
            return (self.cells,)
        by_column, n, s = sorted(self.cells), len(self.cells), self.segments
        return tuple(tuple(by_column[i * n // s:(i + 1) * n // s]) for i in range(s))

    def reads(self, u: int, v: int) -> tuple[Cell, ...]:
        """Level n read by the update of ``(u, v)`` (besides z): itself and its x and y neighbours, and
        with level n-1 in shared memory ``(u + ShS, v)``, which becomes its level n-1 a tier later."""
        out = [(u, v)]
        for d in range(1, self.shs + 1):
            out += [(u - d, v), (u + d, v), (u, v - d), (u, v + d)]
        if self.segments:
            out.append((u + self.shs, v))
        return tuple(out)

    @cached_property
    def load_group(self) -> dict[Cell, int]:
        """For each of :attr:`loads`: the group before whose updates it is issued."""
        loads = set(self.loads)
        first: dict[Cell, int] = {}
        for i, group in enumerate(self.groups):
            for cell in group:
                for read in self.reads(*cell):
                    if read in loads:
                        first.setdefault(read, i)
        missing = loads - set(first)
        if missing:  # a load no update reads: the plan is wrong, not the input
            raise AssertionError(f"loads that no update reads: {sorted(missing)}")
        return {cell: max(first[cell] - PREFETCH_GROUPS, 0) for cell in self.loads}

    @cached_property
    def kappa_held(self) -> tuple[Cell, ...]:
        """``K`` kept in registers with the tile: the cells not entering at a tier (``u <= w - ShS``)."""
        return tuple((u, v) for v, w in self.rows for u in range(1 - w, w - self.shs + 1))

    @cached_property
    def kappa_entering(self) -> tuple[Cell, ...]:
        """``K`` loaded at each tier: the cells entering the tile (``u = max(1-w, w-ShS+1) .. w``; a row
        narrower than ``ShS`` enters whole)."""
        return tuple((u, v) for v, w in self.rows for u in range(max(1 - w, w - self.shs + 1), w + 1))
