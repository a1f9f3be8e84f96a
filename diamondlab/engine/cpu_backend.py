"""CPU backend: padded NumPy fields advanced by the Numba kernels of :mod:`diamondlab.kernels.cpu`.

Contract: see :mod:`diamondlab.engine.backends`.  The two fields are held
with a halo of ``ShS`` zero cells on every side; ``fields()`` returns copies
of the interiors.  Schedules are built once per sweep height and cached.
"""

from __future__ import annotations

import functools

import numpy as np

from diamondlab.geometry import DiamondTile, DiamondTorre, StageSchedule
from diamondlab.kernels.cpu import cpu_kernels
from diamondlab.numerics import WaveParameters

__all__ = ["CPUBackend", "check_shape"]


def check_shape(shape, params: WaveParameters, size: int, nt: int) -> tuple[int, int, int]:
    """Validate ``shape`` and (DTS, Nt) for a DiamondTorre run; return the shape as ints."""
    try:
        shape = tuple(int(n) for n in shape)
    except TypeError:
        raise TypeError(f"shape must be three ints (nx, ny, nz); got {shape!r}") from None
    if len(shape) != 3 or min(shape) < 1:
        raise ValueError(f"shape must be three positive ints (nx, ny, nz); got {shape!r}")
    # builds and validates the tile (DTS >= 1), the torre (Nt >= 1) and the domain (>= one tile)
    StageSchedule(DiamondTorre(DiamondTile(params.order, size), nt), shape[0], shape[1])
    return shape


class CPUBackend:
    """Fields in host memory, kernels compiled with Numba (parallel over torres of a stage)."""

    name = "cpu"

    #: (DTS, Nt) per NO measured best on a 2-core machine at 256^3 (see BENCHMARKS.md)
    TILING = {2: (6, 24), 4: (3, 24), 6: (2, 24), 8: (2, 32)}

    @classmethod
    def default_tiling(cls, order: int) -> tuple[int, int]:
        """Default (DTS, Nt) for stencil order ``order``."""
        return cls.TILING[order]

    @staticmethod
    def available() -> bool:
        return True

    @staticmethod
    def unavailable_reason() -> str:  # pragma: no cover - always available
        return ""

    def __init__(self, params: WaveParameters, shape, size: int, nt: int):
        self.params = params
        self.shape = check_shape(shape, params, size, nt)
        self.size = size
        self.nt = nt
        self.halo = params.order // 2
        self.kernels = cpu_kernels(params.order)
        padded = tuple(n + 2 * self.halo for n in self.shape)
        self._prev = np.zeros(padded, dtype=np.float32)
        self._curr = np.zeros(padded, dtype=np.float32)

    @property
    def _interior(self):
        h = self.halo
        return tuple(slice(h, h + n) for n in self.shape)

    def set_fields(self, prev: np.ndarray, curr: np.ndarray) -> None:
        self._prev[self._interior] = prev
        self._curr[self._interior] = curr

    def fields(self) -> tuple[np.ndarray, np.ndarray]:
        return self._prev[self._interior].copy(), self._curr[self._interior].copy()

    @functools.lru_cache(maxsize=8)  # noqa: B019 - one backend lives as long as its simulation
    def schedule(self, height: int) -> StageSchedule:
        tile = DiamondTile(self.params.order, self.size)
        return StageSchedule(DiamondTorre(tile, height), self.shape[0], self.shape[1])

    def compile(self) -> None:
        """Compile (or load from Numba's cache) both kernels before anything is timed."""
        h = self.halo
        dummy = np.zeros((2 * h + 1,) * 3, dtype=np.float32)
        empty = np.zeros(1, dtype=np.int64)
        coeffs = self.params.coefficients
        self.kernels.stepwise_steps(dummy, dummy.copy(), 0, coeffs)
        self.kernels.diamondtorre_sweep(dummy, dummy.copy(), 0, 1, empty, empty, empty[:1], coeffs)

    def step(self, nsteps: int) -> None:
        self.kernels.stepwise_steps(self._curr, self._prev, nsteps, self.params.coefficients)
        if nsteps % 2:
            self._prev, self._curr = self._curr, self._prev

    def sweep(self, height: int) -> None:
        s = self.schedule(height)
        self.kernels.diamondtorre_sweep(
            self._curr,
            self._prev,
            height,
            s.tile.radius,
            s.torre_x0,
            s.torre_yc,
            s.stage_start,
            self.params.coefficients,
        )
        if height % 2:
            self._prev, self._curr = self._curr, self._prev

    def synchronize(self) -> None:
        return None
