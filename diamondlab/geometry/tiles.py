"""Diamond tiles, DiamondTorre prisms and conoids in (x, y, t).

Contract
--------
Every (x, y) vertex stands for a whole z column.  Cells are integer pairs.
A :class:`DiamondTile` of order ``NO`` and size ``DTS`` has radius
``R = ShS * DTS`` (``ShS = NO / 2``).  A tile *anchored* at integer
``(x0, yc)`` has its centre at ``(x0 + 1/2, yc)`` and holds the cells with
``|x - x0 - 1/2| + |y - yc| < R``: exactly ``2 R^2`` cells, none on an edge.
Row ``y = yc + dy`` (``|dy| < R``) holds ``x0 - w + 1 .. x0 + w`` with
``w = R - |dy|``.

A :class:`DiamondTorre` is that tile swept through ``Nt`` tiers, the anchor
moving ``+ShS`` in x per tier: tier ``k`` is the tile anchored at
``(x0 + ShS k, yc)``.  It is the intersection of the influence conoid of its
bottom tile and the dependence conoid of its top tile (paper 000, section 4).

A :class:`Conoid` is the (L1) diamond that grows by ``ShS`` per time step
around a tile: forwards for the influence conoid, backwards for the
dependence conoid.  NumPy only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from diamondlab.numerics import validate_order

__all__ = ["Conoid", "DiamondTile", "DiamondTorre"]


def _positive_int(name: str, value, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int >= {minimum}; got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}; got {value}")
    return int(value)


@dataclass(frozen=True)
class DiamondTile:
    """The diamond base of a torre: ``2 R^2`` cells with ``R = ShS * DTS``.

    Parameters
    ----------
    order : int
        Stencil order ``NO`` (2, 4, 6 or 8).
    size : int
        Diamond tile size ``DTS >= 1``.

    Examples
    --------
    >>> tile = DiamondTile(order=4, size=2)
    >>> tile.radius, tile.ncells
    (4, 32)
    >>> x, y = tile.cells()
    >>> len(x), int(x.min()), int(x.max()), int(y.min()), int(y.max())
    (32, -3, 4, -3, 3)
    """

    order: int = 2
    size: int = 1

    def __post_init__(self):
        object.__setattr__(self, "order", validate_order(self.order))
        object.__setattr__(self, "size", _positive_int("size (DTS)", self.size))

    @property
    def shs(self) -> int:
        """Stencil half size ``ShS = NO / 2``: the reach of one step."""
        return self.order // 2

    @property
    def radius(self) -> int:
        """``R = ShS * DTS``."""
        return self.shs * self.size

    @property
    def ncells(self) -> int:
        """Number of cells ``2 R^2``."""
        return 2 * self.radius**2

    def rows(self) -> np.ndarray:
        """Rows as an int array ``(2R-1, 3)`` of ``(dy, dx_first, dx_last)`` relative to the anchor.

        >>> DiamondTile(2, 2).rows().tolist()
        [[-1, 0, 1], [0, -1, 2], [1, 0, 1]]
        """
        return _diamond_rows(self.radius)

    def cells(self, x0: int = 0, yc: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """The ``2 R^2`` cells of the tile anchored at ``(x0, yc)``, row by row."""
        return _diamond_cells(x0, yc, self.radius)

    def contains(self, x, y, x0: int = 0, yc: int = 0):
        """Whether cells ``(x, y)`` lie in the tile anchored at ``(x0, yc)`` (vectorised)."""
        return _in_diamond(x, y, x0, yc, self.radius)

    def lattice_anchor(self, a: int, b: int) -> tuple[int, int]:
        """Anchor of tile ``(a, b)`` of the tiling lattice ``(R(a+b), R(a-b))``.

        >>> DiamondTile(2, 3).lattice_anchor(1, 0)
        (3, 3)
        """
        r = self.radius
        return r * (a + b), r * (a - b)


def _diamond_rows(radius: int) -> np.ndarray:
    dy = np.arange(-(radius - 1), radius)
    w = radius - np.abs(dy)
    return np.stack([dy, 1 - w, w], axis=1)


def _diamond_cells(x0: int, yc: int, radius: int) -> tuple[np.ndarray, np.ndarray]:
    rows = _diamond_rows(radius)
    xs = np.concatenate([np.arange(x0 + lo, x0 + hi + 1) for _, lo, hi in rows])
    ys = np.concatenate([np.full(hi - lo + 1, yc + dy) for dy, lo, hi in rows])
    return xs, ys


def _in_diamond(x, y, x0, yc, radius):
    # |x - x0 - 1/2| + |y - yc| < R, in integers: |2(x - x0) - 1| + 2|y - yc| < 2R
    x = np.asarray(x)
    y = np.asarray(y)
    return np.abs(2 * (x - x0) - 1) + 2 * np.abs(y - yc) < 2 * radius


@dataclass(frozen=True)
class DiamondTorre:
    """A DiamondTorre prism: a tile swept through ``Nt`` tiers, moving ``+ShS`` in x per tier.

    Examples
    --------
    >>> torre = DiamondTorre(DiamondTile(order=2, size=2), nt=4)
    >>> torre.nvertices, torre.tier_anchor(3)
    (32, (3, 0))
    >>> v = torre.vertices()
    >>> v.shape, sorted(set(v[:, 2].tolist()))
    ((32, 3), [0, 1, 2, 3])
    """

    tile: DiamondTile
    nt: int = 1

    def __post_init__(self):
        if not isinstance(self.tile, DiamondTile):
            raise TypeError(f"tile must be a DiamondTile; got {type(self.tile).__name__}")
        object.__setattr__(self, "nt", _positive_int("nt (Nt, torre height)", self.nt))

    @property
    def nvertices(self) -> int:
        """Vertices (z columns times steps) in the torre: ``Nt * 2 R^2``."""
        return self.nt * self.tile.ncells

    def tier_anchor(self, k: int, x0: int = 0, yc: int = 0) -> tuple[int, int]:
        """Anchor of tier ``k`` of the torre whose bottom tile is anchored at ``(x0, yc)``."""
        return x0 + self.tile.shs * k, yc

    def vertices(self, x0: int = 0, yc: int = 0, t0: int = 0) -> np.ndarray:
        """All ``(x, y, t)`` vertices, tier by tier, as an int array ``(Nt 2R^2, 3)``."""
        out = []
        for k in range(self.nt):
            ax, ay = self.tier_anchor(k, x0, yc)
            x, y = self.tile.cells(ax, ay)
            out.append(np.stack([x, y, np.full_like(x, t0 + k)], axis=1))
        return np.concatenate(out)

    def bottom_conoid(self) -> Conoid:
        """Influence conoid of the bottom tile, as tall as the torre."""
        return Conoid(self.tile, "influence", self.nt - 1)

    def top_conoid(self) -> Conoid:
        """Dependence conoid of the top tile (anchored ``(Nt-1) ShS`` further in x)."""
        top = self.nt - 1
        return Conoid(self.tile, "dependence", top, x0=self.tile.shs * top, t0=top)


@dataclass(frozen=True)
class Conoid:
    """Influence or dependence conoid of a tile: an L1 diamond growing ``ShS`` per step.

    ``kind="influence"`` grows forwards from the tile at ``t = t0``;
    ``kind="dependence"`` grows backwards from the tile at ``t = t0``.  The
    discrete cross stencil reaches a subset of this diamond; the diamond is
    the paper's (conservative) conoid.

    Examples
    --------
    >>> c = Conoid(DiamondTile(2, 1), "influence", steps=2)
    >>> [c.radius_at(k) for k in range(3)], c.ncells_at(2)
    ([1, 2, 3], 18)
    >>> x, y, t = c.vertices().T
    >>> int(t.max())
    2
    """

    tile: DiamondTile
    kind: Literal["influence", "dependence"] = "influence"
    steps: int = 1
    x0: int = 0
    yc: int = 0
    t0: int = 0

    def __post_init__(self):
        if self.kind not in ("influence", "dependence"):
            raise ValueError(f"kind must be 'influence' or 'dependence'; got {self.kind!r}")
        object.__setattr__(self, "steps", _positive_int("steps", self.steps, minimum=0))

    def radius_at(self, k: int) -> int:
        """Radius ``R + k ShS`` after ``k`` steps away from the tile."""
        return self.tile.radius + k * self.tile.shs

    def ncells_at(self, k: int) -> int:
        """Cells in the conoid's section ``k`` steps away from the tile: ``2 (R + k ShS)^2``."""
        return 2 * self.radius_at(k) ** 2

    def time_of(self, k: int) -> int:
        """Time level of section ``k``."""
        return self.t0 + k if self.kind == "influence" else self.t0 - k

    def contains(self, x, y, t):
        """Whether vertices ``(x, y, t)`` lie inside the conoid (vectorised)."""
        t = np.asarray(t)
        k = t - self.t0 if self.kind == "influence" else self.t0 - t
        inside = _in_diamond(x, y, self.x0, self.yc, self.tile.radius + np.maximum(k, 0) * self.tile.shs)
        return inside & (k >= 0) & (k <= self.steps)

    def vertices(self) -> np.ndarray:
        """All ``(x, y, t)`` vertices of the conoid, section by section."""
        out = []
        for k in range(self.steps + 1):
            xs, ys = _diamond_cells(self.x0, self.yc, self.radius_at(k))
            out.append(np.stack([xs, ys, np.full_like(xs, self.time_of(k))], axis=1))
        return np.concatenate(out)
