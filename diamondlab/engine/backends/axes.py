"""Tall columns: a grid run with its x and z axes swapped, the caller seeing its own axes.

Contract
--------
The CUDA engine holds a whole z column in one block (one z per thread,
:func:`~diamondlab.kernels.cuda.max_nz`); seismic grids are often deeper
than that.  The acoustic stencil treats the three axes alike, so a grid
``(nx, ny, nz)`` with a column too tall and a short x runs as ``(nz, ny, nx)``
(the plan decides: :meth:`~diamondlab.engine.backends.Backend.swaps_xz`):
:class:`SwappedXZBackend` hands the inner backend the swapped fields,
medium and points and gives back fields, planes and traces in the caller's
axes.  The arithmetic per cell is the inner backend's on the swapped grid:
DiamondTorre equals stepwise bit for bit there; against a run in the
caller's axes (the CPU engine) it agrees to float32 rounding (the Laplacian
adds its axes in the other order).
"""

from __future__ import annotations

import numpy as np

from diamondlab.engine.backends import Backend, Wrapper

__all__ = ["SwappedXZBackend"]


def _swap(a):
    return None if a is None else a.transpose(2, 1, 0)


class SwappedXZBackend(Wrapper):
    """``inner``, built for the swapped shape ``(nz, ny, nx)``, seen in the caller's ``(nx, ny, nz)`` axes."""

    def __init__(self, inner: Backend):
        name = f"{inner.name}, x and z swapped (a column of {inner.shape[0]} cells)"
        super().__init__(inner, inner.shape[::-1], name)

    def field_views(self):
        """The inner backend's host views, transposed (writable views; ``(None, None)`` on the GPU)."""
        return tuple(_swap(v) for v in self.inner.field_views())

    def set_fields(self, prev, curr) -> None:
        self.inner.set_fields(_swap(np.asarray(prev)), _swap(np.asarray(curr)))

    def fields(self):
        return tuple(np.ascontiguousarray(_swap(level)) for level in self.inner.fields())

    def current_view(self):
        return _swap(self.inner.current_view())

    def planes(self, index, strides):
        """``(xy, xz, yz)`` through ``index``: the inner grid's ``(yz, xz, xy)``, each transposed."""
        xy, xz, yz = self.inner.planes(tuple(index)[::-1], tuple(strides)[::-1])
        return np.ascontiguousarray(yz.T), np.ascontiguousarray(xz.T), np.ascontiguousarray(xy.T)

    def set_physics(self, medium=None, sources=(), receivers=()) -> None:
        def swap_cells(cells):
            return np.ascontiguousarray(np.asarray(cells)[:, ::-1]) if len(cells) else cells

        self.inner.set_physics(None if medium is None else medium.swap_xz(), swap_cells(sources),
                               swap_cells(receivers))

    def step(self, nsteps: int, src_samples=None) -> None:
        self.inner.step(nsteps, src_samples)

    def sweep(self, height: int, src_samples=None) -> None:
        self.inner.sweep(height, src_samples)

    def take_traces(self) -> np.ndarray:
        return self.inner.take_traces()
