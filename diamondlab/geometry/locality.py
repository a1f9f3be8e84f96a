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
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from diamondlab.numerics import validate_order

__all__ = [
    "Transfers",
    "asynchrony",
    "count_transfers",
    "locality",
]


@dataclass(frozen=True)
class Transfers:
    """Exact data movement of a shape: vertices, loads and saves (in z columns)."""

    vertices: int
    loads: int
    saves: int

    @property
    def locality(self) -> float:
        """``vertices / (loads + saves)``."""
        return self.vertices / (self.loads + self.saves)


def count_transfers(vertices, order: int, domain: tuple[int, int] | None = None) -> Transfers:
    """Count loads and saves of the shape made of ``vertices`` (an ``(n, 3)`` int array).

    Parameters
    ----------
    vertices : array_like
        ``(x, y, t)`` rows; duplicates are ignored.
    order : int
        Stencil order NO.
    domain : (nx, ny), optional
        Bounded domain with the zero boundary; unbounded when omitted.

    Examples
    --------
    One vertex of the NO=2 graph reads 5 columns at t-1 and 1 at t-2 and saves 1:

    >>> count_transfers([[0, 0, 5]], order=2)
    Transfers(vertices=1, loads=6, saves=1)
    """
    shs = validate_order(order) // 2
    v = np.unique(np.asarray(vertices, dtype=np.int64).reshape(-1, 3), axis=0)
    inside = {tuple(row) for row in v.tolist()}
    offsets = [(0, 0, -1), (0, 0, -2)]
    for d in range(1, shs + 1):
        offsets += [(d, 0, -1), (-d, 0, -1), (0, d, -1), (0, -d, -1)]

    def in_domain(x, y):
        return domain is None or (0 <= x < domain[0] and 0 <= y < domain[1])

    loads = set()
    saves = 0
    for x, y, t in inside:
        for dx, dy, dt in offsets:
            src = (x + dx, y + dy, t + dt)
            if src not in inside and in_domain(src[0], src[1]):
                loads.add(src)
        # readers of (x, y, t) are the mirrored offsets
        if any(
            in_domain(x - dx, y - dy) and (x - dx, y - dy, t - dt) not in inside for dx, dy, dt in offsets
        ):
            saves += 1
    return Transfers(vertices=len(inside), loads=len(loads), saves=saves)


def locality(shape: str, order: int = 2, size: int = 1, nt: int | None = None) -> float:
    """Closed-formula locality parameter of a shape (paper 000, section 5).

    Parameters
    ----------
    shape : {"naive", "stepwise_row", "stepwise_layer", "diamond_tile", "diamond_torre", "torre_row"}
    order, size, nt : int
        NO, DTS and the torre height Nt (torre shapes only).

    Examples
    --------
    >>> locality("naive", order=2)  # 1 / (3 + 3 NO)
    0.1111111111111111
    >>> round(locality("diamond_torre", order=2, size=4, nt=8), 6)  # n = 1
    0.719101
    """
    no = validate_order(order)
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
    shape: str, order: int = 2, size: int = 1, nt: int = 1, shape3d: tuple[int, int, int] = (1, 1, 1)
) -> float:
    """Closed-formula asynchrony parameter: vertices that may run concurrently.

    ``"stepwise_row"``: ``Nz``; ``"diamond_tile"``: ``Nz 2 DTS^2 ShS^2``;
    ``"torre_row"``: that times ``Ny / (2 DTS ShS)`` torres in a stage;
    ``"wavefront"``: that times ``Nx / (2 Nt ShS)`` stages.

    >>> asynchrony("torre_row", order=2, size=2, shape3d=(64, 64, 32))
    4096.0
    """
    shs = validate_order(order) // 2
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
