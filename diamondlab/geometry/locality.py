"""Locality and asynchrony of LRnLA shapes (paper 000, section 5).

Contract
--------
The *locality parameter* of a shape in the dependency graph is the number of
vertices inside it divided by the data it must exchange with memory: the
values it reads that it does not compute (loads) plus the values it computes
that a vertex outside it reads (saves).  A vertex ``(x, y, t)`` computes
level ``t`` of a z column from level ``t - 1`` of the cross of columns within
``ShS`` along x and y (itself included) and from level ``t - 2`` of itself.
Values outside a bounded domain are the zero boundary: neither loaded nor
saved.  Counting is in z columns, so for 3D graphs the ratio is the same.

Closed formulas (``n = Nt / (2 DTS)``):

=====================  =====================================================
naive (one 3D cell)    ``1 / (3 + 3 NO)``
stepwise z row         ``1 / (3 + 2 NO)``
stepwise full layer    ``1 / 3``
DiamondTile (Nt = 1)   ``1 / (3 + 2/DTS + 1/DTS^2)``
one DiamondTorre       ``DTS n / (4 n + 2 - 2/DTS + 1/DTS^2)``
row of DiamondTorres   ``DTS n / (n (4 - 1/DTS) + 2 - 2/DTS + 1/DTS^2)``
=====================  =====================================================

:func:`count_transfers` counts exactly on any vertex set, so every formula
can be checked against the geometry it describes.  The *asynchrony parameter*
is the number of vertices that may be processed concurrently.

Every function takes the equation (``equation="acoustic"`` or ``"maxwell"``,
:class:`~diamondlab.geometry.stencils.GraphStencil`): for Maxwell a vertex is a
half step of a z column of three components, a torre of ``Nt`` steps is
``2 Nt`` tiers of the tile of order ``2 M`` (``M`` the Yee reach), and the
locality is given in the equation's cell updates (a Yee cell update: both
half steps, six components) per value moved, so ``4 / locality`` is the bytes
per update of either equation.  The closed formulas for Maxwell are the
acoustic ones of that tile and height divided by ``tiers_per_step x values``
(6): they count the tile's symmetric cross, as the engine's torres and the
performance model do; :func:`count_transfers` counts the staggered graph
itself, which reads one cell less on one side each half step.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from diamondlab.geometry.stencils import GraphStencil

__all__ = [
    "Transfers",
    "asynchrony",
    "count_transfers",
    "locality",
]


@dataclass(frozen=True)
class Transfers:
    """Exact data movement of a shape: vertices, loads and saves (in z columns).

    ``unit``: z-column values per cell update of the equation (1 acoustic, 6 Maxwell: three components a
    column, two tiers an update), so that :attr:`locality` is in cell updates per value moved.
    """

    vertices: int
    loads: int
    saves: int
    unit: int = field(default=1, repr=False)

    @property
    def locality(self) -> float:
        """``vertices / (loads + saves) / unit``."""
        return self.vertices / (self.loads + self.saves) / self.unit


def count_transfers(vertices, order: int, domain: tuple[int, int] | None = None,
                    equation: str = "acoustic") -> Transfers:
    """Count loads and saves of the shape made of ``vertices`` (an ``(n, 3)`` int array).

    Parameters
    ----------
    vertices : array_like
        ``(x, y, t)`` rows (``t`` the tier: for Maxwell even tiers update H, odd ones E); duplicates are
        ignored.
    order : int
        Stencil order NO (the Yee scheme's order for Maxwell).
    domain : (nx, ny), optional
        Bounded domain with the zero boundary; unbounded when omitted.
    equation : {"acoustic", "maxwell"}
        Whose graph (:class:`~diamondlab.geometry.stencils.GraphStencil`): the cross, or the staggered cross.

    Examples
    --------
    One vertex of the NO=2 graph reads 5 columns at t-1 and 1 at t-2 and saves 1:

    >>> count_transfers([[0, 0, 5]], order=2)
    Transfers(vertices=1, loads=6, saves=1)

    An H half step of the order-2 Yee graph reads E at offsets 0 and +1 along x and y, H at t-2:

    >>> count_transfers([[0, 0, 4]], order=2, equation="maxwell")
    Transfers(vertices=1, loads=4, saves=1)
    """
    stencil = GraphStencil(equation, order)
    # what a vertex of tier parity p reads (dt < 0), and where the vertices that read it lie (dt > 0)
    offsets = {p: [(dx, dy, -back) for dx, dy, back in stencil.offsets(p)] for p in (0, 1)}
    readers = {p: [(-dx, -dy, back) for dx, dy, back in stencil.offsets(p + 1) if back == 1] + [(0, 0, 2)]
               for p in (0, 1)}
    v = np.unique(np.asarray(vertices, dtype=np.int64).reshape(-1, 3), axis=0)
    inside = {tuple(row) for row in v.tolist()}

    def in_domain(x, y):
        return domain is None or (0 <= x < domain[0] and 0 <= y < domain[1])

    loads = set()
    saves = 0
    for x, y, t in inside:
        for dx, dy, dt in offsets[t % 2]:
            src = (x + dx, y + dy, t + dt)
            if src not in inside and in_domain(src[0], src[1]):
                loads.add(src)
        if any(in_domain(x + dx, y + dy) and (x + dx, y + dy, t + dt) not in inside
               for dx, dy, dt in readers[t % 2]):
            saves += 1
    return Transfers(vertices=len(inside), loads=len(loads), saves=saves,
                     unit=stencil.values * stencil.tiers_per_step)


def locality(shape: str, order: int = 2, size: int = 1, nt: int | None = None,
             equation: str = "acoustic") -> float:
    """Closed-formula locality parameter of a shape (paper 000, section 5), in cell updates per value moved.

    Parameters
    ----------
    shape : {"naive", "stepwise_row", "stepwise_layer", "diamond_tile", "diamond_torre", "torre_row"}
    order, size, nt : int
        NO, DTS and the torre height Nt in time steps (torre shapes only).
    equation : {"acoustic", "maxwell"}
        For Maxwell: the acoustic formula of the tile of order ``2 M`` and ``2 Nt`` tiers over 6 (module
        contract).

    Examples
    --------
    >>> locality("naive", order=2)  # 1 / (3 + 3 NO)
    0.1111111111111111
    >>> round(locality("diamond_torre", order=2, size=4, nt=8), 6)  # n = 1
    0.719101
    >>> round(4 / locality("stepwise_layer", order=4, equation="maxwell"))  # bytes per Yee cell update
    72
    """
    stencil = GraphStencil(equation, order)
    if equation != "acoustic":
        tiers = None if nt is None else stencil.tiers(nt)
        scale = stencil.values * stencil.tiers_per_step
        return locality(shape, 2 * stencil.reach, size, tiers) / scale
    no = stencil.order
    dts = float(size)
    if size < 1:
        raise ValueError(f"size (DTS) must be >= 1; got {size}")
    if shape == "naive":
        return 1.0 / (3 + 3 * no)
    if shape == "stepwise_row":
        return 1.0 / (3 + 2 * no)
    if shape == "stepwise_layer":
        return 1.0 / 3.0
    if shape == "diamond_tile":
        return 1.0 / (3 + 2 / dts + 1 / dts**2)
    if shape in ("diamond_torre", "torre_row"):
        if nt is None or nt < 1:
            raise ValueError(f"nt (Nt) must be >= 1 for shape {shape!r}; got {nt}")
        n = nt / (2 * dts)
        per_tier = 4.0 if shape == "diamond_torre" else 4.0 - 1.0 / dts
        return dts * n / (n * per_tier + 2 - 2 / dts + 1 / dts**2)
    raise ValueError(
        "shape must be one of 'naive', 'stepwise_row', 'stepwise_layer', 'diamond_tile', "
        f"'diamond_torre', 'torre_row'; got {shape!r}"
    )


def asynchrony(
    shape: str, order: int = 2, size: int = 1, nt: int = 1, shape3d: tuple[int, int, int] = (1, 1, 1),
    equation: str = "acoustic",
) -> float:
    """Closed-formula asynchrony parameter: cells that may be updated concurrently (for Maxwell, each a half
    step of three components).

    ``"stepwise_row"``: ``Nz``; ``"diamond_tile"``: ``Nz 2 DTS^2 ShS^2``;
    ``"torre_row"``: that times ``Ny / (2 DTS ShS)`` torres in a stage;
    ``"wavefront"``: that times ``Nx / (2 tiers ShS)`` stages (``tiers`` = Nt, or ``2 Nt`` half steps for
    Maxwell, whose ``ShS`` is the Yee reach ``M``).

    >>> asynchrony("torre_row", order=2, size=2, shape3d=(64, 64, 32))
    4096.0
    >>> asynchrony("wavefront", order=2, size=2, nt=4, shape3d=(64, 64, 32), equation="maxwell")
    16384.0
    """
    stencil = GraphStencil(equation, order)
    shs, nt = stencil.reach, stencil.tiers(nt)
    nx, ny, nz = shape3d
    tile = nz * 2 * size**2 * shs**2
    if shape == "stepwise_row":
        return float(nz)
    if shape == "diamond_tile":
        return float(tile)
    if shape == "torre_row":
        return tile * ny / (2 * size * shs)
    if shape == "wavefront":
        return tile * ny / (2 * size * shs) * nx / (2 * nt * shs)
    raise ValueError(
        f"shape must be one of 'stepwise_row', 'diamond_tile', 'torre_row', 'wavefront'; got {shape!r}"
    )
