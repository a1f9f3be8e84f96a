"""What a vertex of each equation's dependency graph reads: the acoustic cross and the staggered Yee cross.

Contract
--------
The graphs of :mod:`diamondlab.geometry` have a vertex ``(x, y, t)`` for a
z column at one *tier* ``t``.  :class:`GraphStencil` says, per equation,
which vertices one reads and how much data it stands for:

- ``"acoustic"`` (order ``NO`` in 2..8): tier ``t`` is time step ``t``; a
  vertex reads tier ``t - 1`` on the cross of reach ``ShS = NO / 2`` along x
  and y (itself included) and itself at ``t - 2``; one value per cell.
- ``"maxwell"`` (order 2 or 4, :mod:`diamondlab.maxwell.scheme`): tier ``t``
  is a half step, updating ``H`` for even ``t`` and ``E`` for odd ``t`` (the
  Yee kernels' ``k % 2``); a vertex reads the other field at ``t - 1`` on the
  *staggered* cross, the offsets of :func:`~diamondlab.maxwell.scheme.yee_read_offsets`
  along x and along y (``1 - M .. M`` for ``H``, ``-M .. M - 1`` for ``E``:
  lopsided, one cell shorter on one side), and its own field at ``t - 2``;
  three values (components) per cell, two tiers a time step.

The engine's tile for both is the acoustic :class:`~diamondlab.geometry.tiles.DiamondTile`
of order ``2 reach`` (:meth:`GraphStencil.tile`): ``reach`` is the widest
offset on either side over all tiers (``M`` for Maxwell: ``H`` reaches ``M``
forward, ``E`` ``M`` back), and the torre leans by it every tier: its slope
(:attr:`GraphStencil.slope`) is ``reach`` cells a tier, ``tiers_per_step *
reach`` cells a time step.  The staggered cross is inside the symmetric one,
so every check of the acoustic schedule holds for it; the exact staggered
count (:func:`~diamondlab.geometry.locality.count_transfers` with
``equation="maxwell"``) moves less than the closed formulas, which count the
tile's symmetric cross.  NumPy only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from diamondlab.geometry.tiles import DiamondTile, DiamondTorre
from diamondlab.maxwell.scheme import YeeParameters, yee_read_offsets
from diamondlab.numerics import validate_order

__all__ = ["EQUATIONS", "GraphStencil", "graph_stencil"]

#: The equations whose graphs are drawn and counted here.
EQUATIONS = ("acoustic", "maxwell")


@dataclass(frozen=True)
class GraphStencil:
    """The dependency of one equation's graph of z columns and tiers; see the module contract.

    Parameters
    ----------
    equation : {"acoustic", "maxwell"}
    order : int
        NO (2, 4, 6, 8) for the acoustic equation, the Yee scheme's order (2 or 4) for Maxwell.

    Examples
    --------
    >>> s = GraphStencil("maxwell", 4)
    >>> s.reach, s.values, s.tiers_per_step, s.field(0), s.field(1)
    (2, 3, 2, 'H', 'E')
    >>> s.cross(0).tolist(), s.cross(1).tolist()
    ([-1, 0, 1, 2], [-2, -1, 0, 1])
    >>> GraphStencil("acoustic", 4).cross(7).tolist()
    [-2, -1, 0, 1, 2]
    """

    equation: str = "acoustic"
    order: int = 2

    def __post_init__(self):
        if self.equation not in EQUATIONS:
            raise ValueError(f"equation must be one of {EQUATIONS}; got {self.equation!r}")
        order = YeeParameters(self.order).order if self.equation == "maxwell" else validate_order(self.order)
        object.__setattr__(self, "order", order)

    @property
    def reach(self) -> int:
        """Widest read offset on either side over all tiers: the tile's ``ShS``, the torre's lean a tier."""
        return YeeParameters(self.order).reach if self.equation == "maxwell" else self.order // 2

    @property
    def values(self) -> int:
        """Values a vertex updates and moves per cell: 1 (the field) or 3 (the components of E or H)."""
        return 3 if self.equation == "maxwell" else 1

    @property
    def tiers_per_step(self) -> int:
        """Tiers a time step: 1, or 2 half steps (H then E)."""
        return 2 if self.equation == "maxwell" else 1

    @property
    def slope(self) -> int:
        """Cells the torre moves in x a tier: :attr:`reach` (the dependence of one tier on the one below)."""
        return self.reach

    @property
    def updates_per_vertex(self) -> float:
        """Cell updates of the equation a vertex stands for: 1, or 1/2 (a Yee cell update is two tiers)."""
        return 1.0 / self.tiers_per_step

    def field(self, tier: int) -> str:
        """The field tier ``tier`` updates: ``"F"`` (acoustic), ``"H"`` (even) or ``"E"`` (odd)."""
        if self.equation == "acoustic":
            return "F"
        return "H" if int(tier) % 2 == 0 else "E"

    def cross(self, tier: int) -> np.ndarray:
        """Offsets along x (and y) of the vertices of tier ``tier - 1`` that a vertex of ``tier`` reads."""
        if self.equation == "acoustic":
            return np.arange(-self.reach, self.reach + 1)
        return yee_read_offsets(self.order, self.field(tier))

    def offsets(self, tier: int) -> list[tuple[int, int, int]]:
        """``(dx, dy, back)`` of the vertices a vertex of ``tier`` reads, at tier ``tier - back``.

        >>> GraphStencil("maxwell", 2).offsets(1)
        [(0, 0, 1), (0, 0, 2), (-1, 0, 1), (0, -1, 1)]
        """
        out = [(0, 0, 1), (0, 0, 2)]
        for d in self.cross(tier).tolist():
            if d:
                out += [(d, 0, 1), (0, d, 1)]
        return out

    def tile_reads(self, size: int, tier: int, x0: int = 0, yc: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """Cells ``(x, y)`` of tier ``tier - 1`` that the tile of ``tier`` anchored at ``(x0, yc)`` reads.

        For Maxwell: the ``E`` (``H``) values that an ``H`` (``E``) tile needs, the union of its cells
        shifted by the staggered cross.  In a torre, tier ``tier - 1``'s tile is anchored ``slope`` to the
        left: what lies outside it comes from torres of earlier stages.

        >>> s = GraphStencil("maxwell", 2)
        >>> x, y = s.tile_reads(1, 1, x0=1)  # an E tile of 2 cells, above the H tile anchored at 0
        >>> sorted(zip(x.tolist(), y.tolist()))  # (0, 0) and (1, 0) are the H tile's own
        [(0, 0), (1, -1), (1, 0), (2, -1), (2, 0)]
        """
        x, y = self.tile(size).cells(x0, yc)
        cells = {(a + d, b) for a, b in zip(x.tolist(), y.tolist(), strict=True) for d in self.cross(tier)}
        cells |= {(a, b + d) for a, b in zip(x.tolist(), y.tolist(), strict=True) for d in self.cross(tier)}
        out = np.array(sorted(cells), dtype=np.int64).reshape(-1, 2)
        return out[:, 0], out[:, 1]

    def tiers(self, nt: int) -> int:
        """Tiers of a torre ``nt`` time steps tall."""
        return int(nt) * self.tiers_per_step

    def tile(self, size: int) -> DiamondTile:
        """The engine's tile of this scheme: the acoustic tile of order ``2 reach`` and ``size`` (DTS)."""
        return DiamondTile(2 * self.reach, size)

    def torre(self, size: int, nt: int) -> DiamondTorre:
        """The engine's torre of ``nt`` time steps: :meth:`tile` swept through :meth:`tiers` tiers."""
        return DiamondTorre(self.tile(size), self.tiers(nt))


def graph_stencil(equation: str = "acoustic", order: int = 2) -> GraphStencil:
    """Shortcut for :class:`GraphStencil` (``equation`` checked first).

    >>> graph_stencil("maxwell", 2).tile(3).radius
    3
    """
    return GraphStencil(equation, order)
