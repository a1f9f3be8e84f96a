"""A diamond tile's rows, for every engine's DiamondTorre loop (plain Python, compiled by each engine).

A tile of radius ``R`` centred at ``(x0 + 1/2, yc)`` holds the cells
``|x - x0 - 1/2| + |y - yc| < R`` (:class:`~diamondlab.geometry.DiamondTile`):
its row ``x = x0 + du`` (``1 - R <= du <= R``) spans ``|y - yc| <= R - du``
for ``du >= 1`` and ``R - 1 + du`` below, cut to the grid's ``[0, ny)``.
:func:`tile_row` says so once; the CPU kernels call it through Numba's
``njit`` (:data:`tile_row_cpu`), the CUDA kernels as a device function.
"""

from __future__ import annotations

from numba import njit

__all__ = ["tile_row", "tile_row_cpu"]


def tile_row(du, radius, yc, ny):
    """``(lo, hi)``: the y cells of the tile's row ``du`` (inclusive), within ``[0, ny)``.

    >>> [tile_row(du, 2, 5, 9) for du in (-1, 0, 1, 2)]
    [(5, 5), (4, 6), (4, 6), (5, 5)]
    """
    hw = radius - du if du >= 1 else radius - 1 + du  # |y - yc| <= hw
    return max(yc - hw, 0), min(yc + hw, ny - 1)


#: :func:`tile_row` for the CPU kernels (LLVM inlines it).
tile_row_cpu = njit(cache=True, nogil=True)(tile_row)
