"""Section 5's comparison: DiamondTorre next to the trapezoid, x-t diamond and wavefront tilings.

Contract
--------
Each tiling is represented by one of its tiles as a vertex set of the
``(x, y, t)`` graph of z columns (see :mod:`diamondlab.geometry.locality`),
all of the same height ``Nt`` and comparable width, and measured exactly
with :func:`~diamondlab.geometry.locality.count_transfers`:

- ``stepwise_row``: one column, one step (the stepwise kernel's unit).
- ``diamond_tile``: the DiamondTile, ``Nt = 1`` (a stepwise diamond tiling).
- ``diamond_torre``: one DiamondTorre of ``Nt`` tiers.
- ``trapezoid``: the upright space-time trapezoid of trapezoid tiling: a
  square of side ``2R + 2 ShS (Nt - 1)`` at the bottom shrinking by ``ShS``
  on every side each step (``R = DTS ShS``), so that its top tier is as wide
  as a DiamondTile.  Between upright ones a trapezoid tiling needs inverted
  (growing) tiles, whose locality is lower; the upright one is its best.
- ``xt_diamond``: a diamond in x-t (half-width ``ShS (min(k, Nt - 1 - k) + 1)``
  at step ``k``) over all ``ny`` rows of y: the 1D diamond tiling carried to
  3D the evident way, which holds whole rows of y in fast memory.
- ``wavefront_diamond``: the same x-t diamond, its rows of y taken in a
  wavefront (one row per tier in flight, Malas et al.): the same vertices
  and locality, only about ``Nt`` rows held at a time, and its concurrency
  the front's.

The asynchrony parameter (vertices that may run at once, here in z columns:
multiply by ``nz`` for cells) is the widest set of independent vertices of
the tile: one time layer for the tiles (a DiamondTorre tier, the trapezoid's
base, the x-t diamond's widest step over all rows), one row of every tier
for the wavefront, one column for the stepwise row.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from diamondlab.geometry.locality import Transfers, count_transfers
from diamondlab.geometry.tiles import DiamondTile, DiamondTorre, _positive_int
from diamondlab.numerics import validate_order

__all__ = ["TILINGS", "TilingMeasure", "compare_tilings", "trapezoid_vertices", "xt_diamond_vertices"]

#: The tilings of :func:`compare_tilings`, in its order.
TILINGS = ("stepwise_row", "diamond_tile", "diamond_torre", "trapezoid", "xt_diamond", "wavefront_diamond")

#: x origin of the x-t diamond in a domain bounded in y only (x far from either end)
_FAR = 10**6


@dataclass(frozen=True)
class TilingMeasure:
    """One tiling's tile: its exact transfers (z columns), locality and asynchrony (z columns)."""

    name: str
    transfers: Transfers
    asynchrony: int
    #: z columns one step of the tile reads at once (its widest layer's level n and n-1 inputs): the
    #: fast memory it needs to get its locality
    held: int
    note: str

    @property
    def locality(self) -> float:
        return self.transfers.locality


def trapezoid_vertices(order: int, size: int, nt: int) -> np.ndarray:
    """``(x, y, t)`` of the upright trapezoid whose top tier (step ``nt - 1``) is ``2R x 2R``.

    >>> v = trapezoid_vertices(2, 1, 3)  # sides 6, 4, 2
    >>> len(v), sorted(set(v[:, 2].tolist()))
    (56, [0, 1, 2])
    """
    shs = validate_order(order) // 2
    r = _positive_int("size (DTS)", size) * shs
    nt = _positive_int("nt (Nt)", nt)
    base = 2 * r + 2 * shs * (nt - 1)
    layers = []
    for k in range(nt):
        lo, hi = k * shs, base - k * shs
        x, y = np.meshgrid(np.arange(lo, hi), np.arange(lo, hi), indexing="ij")
        layers.append(np.stack([x.ravel(), y.ravel(), np.full(x.size, k)], axis=1))
    return np.concatenate(layers)


def xt_diamond_vertices(order: int, nt: int, ny: int) -> np.ndarray:
    """``(x, y, t)`` of the x-t diamond of height ``nt`` over the rows ``0 .. ny - 1`` (x around ``_FAR``).

    >>> v = xt_diamond_vertices(2, 4, 2)  # half-widths 1, 2, 2, 1: widths 2, 4, 4, 2 on 2 rows
    >>> len(v)
    24
    """
    shs = validate_order(order) // 2
    nt, ny = _positive_int("nt (Nt)", nt), _positive_int("ny", ny)
    layers = []
    for k in range(nt):
        w = shs * (min(k, nt - 1 - k) + 1)
        x, y = np.meshgrid(np.arange(_FAR - w, _FAR + w), np.arange(ny), indexing="ij")
        layers.append(np.stack([x.ravel(), y.ravel(), np.full(x.size, k)], axis=1))
    return np.concatenate(layers)


def _widest_layer(vertices: np.ndarray) -> int:
    return int(np.bincount(vertices[:, 2] - vertices[:, 2].min()).max())


def _held(layers, order: int) -> int:
    """Most columns one layer of vertices reads: the cross of ``ShS`` at ``t - 1`` and itself at ``t - 2``."""
    shs = order // 2
    most = 0
    for layer in layers:
        xy = {(int(x), int(y)) for x, y in layer[:, :2]}
        cross = {(x + dx, y + dy) for x, y in xy for dx, dy in
                 [(0, 0)] + [(s * d, 0) for d in range(1, shs + 1) for s in (1, -1)]
                 + [(0, s * d) for d in range(1, shs + 1) for s in (1, -1)]}
        most = max(most, len(cross) + len(xy))
    return most


def _layers(vertices: np.ndarray) -> list[np.ndarray]:
    return [vertices[vertices[:, 2] == t] for t in np.unique(vertices[:, 2])]


def compare_tilings(order: int = 2, size: int = 2, nt: int = 8, ny: int = 16) -> list[TilingMeasure]:
    """The tilings of :data:`TILINGS` measured on one tile each (see the module contract).

    ``ny``: the rows of y the x-t diamond and the wavefront span (the grid's).

    >>> rows = compare_tilings(2, 1, 4, ny=4)
    >>> [(r.name, round(r.locality, 3), r.held) for r in rows][:3]
    [('stepwise_row', 0.143, 6), ('diamond_tile', 0.167, 10), ('diamond_torre', 0.222, 10)]
    """
    validate_order(order)
    tile = DiamondTile(order, size)
    torre = DiamondTorre(tile, _positive_int("nt (Nt)", nt)).vertices()
    trapezoid = trapezoid_vertices(order, size, nt)
    xt = xt_diamond_vertices(order, nt, ny)
    bounded_y = (2 * _FAR, ny)  # rows of y end at the grid's walls; x runs on
    xt_count = count_transfers(xt, order, bounded_y)
    # the wavefront's front: row k of y at tier k, one row of every tier in flight
    front = np.concatenate([layer[layer[:, 1] == k % ny] for k, layer in enumerate(_layers(xt))])
    return [
        TilingMeasure("stepwise_row", count_transfers([[0, 0, 0]], order), 1, 2 + 2 * order,
                      "one z column a step: the stepwise kernel's unit"),
        TilingMeasure("diamond_tile", count_transfers(DiamondTorre(tile, 1).vertices(), order), tile.ncells,
                      _held(_layers(torre)[:1], order),
                      "DiamondTorre with Nt = 1: a stepwise tiling, near the 1/3 of a whole layer"),
        TilingMeasure("diamond_torre", count_transfers(torre, order), tile.ncells,
                      _held(_layers(torre), order),
                      "tiles x-y, climbs Nt steps; a tier fits a GPU block's registers"),
        TilingMeasure("trapezoid", count_transfers(trapezoid, order), _widest_layer(trapezoid),
                      _held(_layers(trapezoid), order),
                      "upright tile only: the inverted tiles between them have lower locality"),
        TilingMeasure("xt_diamond", xt_count, _widest_layer(xt), _held(_layers(xt), order),
                      f"a diamond in x-t over all {ny} rows of y: whole rows held in fast memory"),
        TilingMeasure("wavefront_diamond", xt_count, len(front), _held([front], order),
                      "the x-t diamond, y in a wavefront: one row of every tier in flight, only the rows "
                      "it reads held"),
    ]  # fmt: skip
