"""A diamond tile's rows, for every engine's DiamondTorre loop (plain Python, compiled by each engine).

A tile of radius ``R`` centred at ``(x0 + 1/2, yc)`` holds the cells
``|x - x0 - 1/2| + |y - yc| < R`` (:class:`~diamondlab.geometry.DiamondTile`):
its row ``x = x0 + du`` (``1 - R <= du <= R``) spans ``|y - yc| <= R - du``
for ``du >= 1`` and ``R - 1 + du`` below, cut to the grid's ``[0, ny)``.
:func:`tile_row` says so once; the CPU kernels call it through Numba's
``njit`` (:data:`tile_row_cpu`), the CUDA kernels as a device function.
On a periodic y the row is not cut but wrapped (:func:`tile_row_wrapped`:
the whole row, ``y`` to be taken modulo ``ny`` by :func:`wrap_y`).
"""

from __future__ import annotations

from numba import njit

__all__ = ["tile_row", "tile_row_cpu", "tile_row_wrapped", "tile_row_wrapped_cpu", "wrap_y", "wrap_y_cpu"]


def tile_row_wrapped(du, radius, yc, ny, periodic):
    """``(lo, hi)``: the y cells of the tile's row ``du`` (inclusive): within ``[0, ny)``, or, where
    ``periodic``, whole (``lo`` may be below 0 and ``hi`` above ``ny - 1``: :func:`wrap_y` each ``y``).

    >>> tile_row_wrapped(0, 2, 0, 8, True), tile_row_wrapped(0, 2, 0, 8, False)
    ((-1, 1), (0, 1))
    """
    hw = radius - du if du >= 1 else radius - 1 + du  # |y - yc| <= hw
    if periodic:
        return yc - hw, yc + hw
    return max(yc - hw, 0), min(yc + hw, ny - 1)


def wrap_y(y, ny):
    """``y`` modulo ``ny`` for ``-ny <= y < 2 ny`` (a wrapped tile row's cell).

    >>> wrap_y(-1, 8), wrap_y(8, 8), wrap_y(3, 8)
    (7, 0, 3)
    """
    if y < 0:
        return y + ny
    if y >= ny:
        return y - ny
    return y


def tile_row(du, radius, yc, ny):
    """``(lo, hi)``: the y cells of the tile's row ``du`` (inclusive), within ``[0, ny)``.

    >>> [tile_row(du, 2, 5, 9) for du in (-1, 0, 1, 2)]
    [(5, 5), (4, 6), (4, 6), (5, 5)]
    """
    hw = radius - du if du >= 1 else radius - 1 + du  # |y - yc| <= hw
    return max(yc - hw, 0), min(yc + hw, ny - 1)


#: :func:`tile_row`, :func:`tile_row_wrapped` and :func:`wrap_y` for the CPU kernels (LLVM inlines them).
tile_row_wrapped_cpu = njit(cache=True, nogil=True)(tile_row_wrapped)
tile_row_cpu = njit(cache=True, nogil=True)(tile_row)
wrap_y_cpu = njit(cache=True, nogil=True)(wrap_y)
