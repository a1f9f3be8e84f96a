"""The dependency graph of the scheme in one space dimension and time (paper 000, Figs. 2-4).

Contract
--------
A vertex ``(x, t)`` computes level ``t`` at ``x`` from level ``t - 1`` at
``x + d`` for ``|d| <= ShS`` (the cross stencil of order ``NO``, ``ShS = NO/2``)
and from level ``t - 2`` at ``x`` (:func:`dependency_offsets`).  The graph's
edges on a finite ``nx x nt`` window (:func:`dependency_edges`), the light
cone of a vertex (the vertices it depends on, :func:`light_cone`) and three
subdivisions of the window into shapes (:func:`subdivision`): stepwise
layers, a domain decomposition of each layer, and LRnLA diamonds in x-t,
whose dependencies all point one way (the property that lets them run as
whole shapes).  NumPy only.
"""

from __future__ import annotations

import numpy as np

from diamondlab.geometry.tiles import _positive_int
from diamondlab.numerics import validate_order

__all__ = ["SUBDIVISIONS", "dependency_edges", "dependency_offsets", "light_cone", "shape_neighbours",
           "subdivision"]

#: The subdivisions of :func:`subdivision` (paper 000, Fig. 4).
SUBDIVISIONS = ("stepwise", "domain_decomposition", "lrnla")


def dependency_offsets(order: int) -> list[tuple[int, int]]:
    """``(dx, dt)`` from a vertex to the vertices it reads.

    >>> dependency_offsets(4)
    [(-2, -1), (-1, -1), (0, -1), (1, -1), (2, -1), (0, -2)]
    """
    shs = validate_order(order) // 2
    return [(d, -1) for d in range(-shs, shs + 1)] + [(0, -2)]


def dependency_edges(order: int, nx: int, nt: int) -> np.ndarray:
    """Edges ``(x, t, x_src, t_src)`` of every vertex of ``[0, nx) x [2, nt)`` to the vertices it reads
    inside the window (the zero boundary outside it is read from no vertex).

    >>> dependency_edges(2, 3, 3)[:2].tolist()
    [[0, 2, 0, 1], [0, 2, 1, 1]]
    """
    nx, nt = _positive_int("nx", nx), _positive_int("nt", nt)
    out = []
    for t in range(2, nt):
        for x in range(nx):
            out += [(x, t, x + dx, t + dt) for dx, dt in dependency_offsets(order) if 0 <= x + dx < nx]
    return np.array(out, dtype=np.int64).reshape(-1, 4)


def light_cone(order: int, apex: tuple[int, int], depth: int) -> np.ndarray:
    """``(x, t)`` of every vertex the ``apex`` depends on, down to ``depth`` steps below it (apex
    included): ``|x - x0| <= ShS k`` at ``t0 - k``, found by walking the edges.

    >>> sorted(map(tuple, light_cone(2, (0, 5), 1).tolist()))
    [(-1, 4), (0, 4), (0, 5), (1, 4)]
    """
    offsets = dependency_offsets(order)
    x0, t0 = apex
    seen, frontier = {(x0, t0)}, {(x0, t0)}
    while frontier:
        frontier = {(x + dx, t + dt) for x, t in frontier for dx, dt in offsets
                    if t + dt >= t0 - depth} - seen
        seen |= frontier
    return np.array(sorted(seen), dtype=np.int64)


def subdivision(kind: str, order: int, nx: int, nt: int, width: int = 8) -> np.ndarray:
    """``(nt, nx)`` ids of the shape each vertex belongs to.

    ``"stepwise"``: one shape per time layer; ``"domain_decomposition"``:
    each layer cut into blocks of ``width`` cells; ``"lrnla"``: diamonds in
    x-t of diagonal ``width`` (sides of slope ``ShS``: with ``u = x + ShS t``
    and ``v = x - ShS t`` the diamond is ``(u // width, v // width)``), whose
    dependencies point to diamonds of smaller or equal ``u`` and larger or
    equal ``v`` only.

    >>> subdivision("stepwise", 2, 3, 2).tolist()
    [[0, 0, 0], [1, 1, 1]]
    """
    shs = validate_order(order) // 2
    nx, nt, width = _positive_int("nx", nx), _positive_int("nt", nt), _positive_int("width", width)
    t, x = np.mgrid[0:nt, 0:nx]
    if kind == "stepwise":
        return t
    if kind == "domain_decomposition":
        return t * (-(-nx // width)) + x // width
    if kind == "lrnla":
        a, b = (x + shs * t) // width, (x - shs * t) // width
        return a * (2 * (nx + shs * nt) // width + 4) + (b - b.min())
    raise ValueError(f"kind must be one of {SUBDIVISIONS}; got {kind!r}")


def shape_neighbours(ids: np.ndarray, order: int, shape: int) -> tuple[np.ndarray, np.ndarray]:
    """``(reads, feeds)``: the shapes of a :func:`subdivision` ``ids`` that shape ``shape`` reads from
    (its vertices' dependencies lie there) and the shapes that read from it, each sorted, itself excluded.

    With LRnLA diamonds every dependency points one way, so a diamond reads
    from the diamonds below it (earlier in u, later in v) and feeds those above:

    >>> ids = subdivision("lrnla", 2, 16, 8, 4)
    >>> me = ids[4, 8]
    >>> reads, feeds = shape_neighbours(ids, 2, me)
    >>> len(reads), len(feeds), bool(set(reads.tolist()) & set(feeds.tolist()))
    (3, 3, False)
    """
    nt, nx = ids.shape
    reads, feeds = set(), set()
    for dx, dt in dependency_offsets(order):
        # vertex (x, t) reads (x + dx, t + dt): both inside the window
        dst = ids[max(0, -dt):, max(0, -dx):nx - max(0, dx)]
        src = ids[:nt + dt, max(0, dx):nx + min(0, dx)]
        reads |= set(np.unique(src[dst == shape]).tolist())
        feeds |= set(np.unique(dst[src == shape]).tolist())
    reads.discard(shape)
    feeds.discard(shape)
    return np.array(sorted(reads), dtype=np.int64), np.array(sorted(feeds), dtype=np.int64)
