"""CUDA backend: the two fields on the GPU, advanced by :mod:`diamondlab.kernels.cuda`.

Contract: see :mod:`diamondlab.engine.backends`.  The fields are flat
float32 device arrays of exactly ``nx * ny * nz`` cells each (no halo); they
stay on the device between calls and are copied to the host only by
:meth:`CUDABackend.fields`.  Besides them the backend holds only the stage
schedules (a few ints per torre) and the sweep's completion flags, far under
one percent of the fields.

Everything the backend cannot run raises ``ValueError`` in the constructor,
before any device memory is taken: an (NO, DTS) pair the engine does not
build, ``nz`` above :data:`~diamondlab.kernels.cuda.MAX_NZ`, a shape whose two
fields do not fit the GPU's free memory.  Without a usable GPU the
constructor raises ``RuntimeError`` with :meth:`CUDABackend.unavailable_reason`.

Importing this module does not import numba.cuda; the first method that needs
the GPU does.
"""

from __future__ import annotations

import numpy as np

from diamondlab.geometry import DiamondTile, DiamondTorre, StageSchedule
from diamondlab.numerics import WaveParameters, validate_shape

__all__ = ["CUDABackend", "device_memory"]

#: Device memory kept free beside the two fields (schedules, flags, the CUDA context's needs).
MEMORY_MARGIN_BYTES = 256 * 2**20


def device_memory() -> tuple[int, int]:
    """``(free, total)`` bytes of the current CUDA device."""
    from numba import cuda

    free, total = cuda.current_context().get_memory_info()
    return int(free), int(total)


class CUDABackend:
    """Fields in GPU memory; stepwise and one-launch DiamondTorre sweeps in Numba-CUDA."""

    name = "cuda"

    #: (DTS, Nt) per NO measured best on an H100 at 512 x 2048 x 256 (BENCHMARKS.md)
    TILING = {2: (4, 32), 4: (2, 32), 6: (1, 16), 8: (1, 16)}

    @classmethod
    def default_tiling(cls, order: int) -> tuple[int, int]:
        """Default (DTS, Nt) for stencil order ``order``."""
        return cls.TILING[order]

    @classmethod
    def tuning_candidates(cls, order: int) -> list[tuple[int, int]]:
        """(DTS, Nt) pairs the auto-tuner measures: every built DTS with Nt = 16, 32, 64."""
        from diamondlab.kernels.cuda import SUPPORTED_SIZES

        return [(size, nt) for size in SUPPORTED_SIZES[order] for nt in (16, 32, 64)]

    @staticmethod
    def available() -> bool:
        """Whether an NVIDIA GPU with a working driver (or Numba's CUDA simulator) is present."""
        try:
            from numba import cuda
        except ImportError:
            return False
        try:
            return bool(cuda.is_available())
        except Exception:  # noqa: BLE001 - any driver failure means "not available"
            return False

    @staticmethod
    def unavailable_reason() -> str:
        try:
            import numba.cuda  # noqa: F401
        except ImportError:
            return (
                "backend='cuda' needs numba-cuda (pip install 'diamondlab[cuda]') and an NVIDIA "
                "GPU; use backend='cpu' or 'auto'"
            )
        return (
            "backend='cuda' needs an NVIDIA GPU with a working CUDA driver; none was found: "
            "use backend='cpu' or 'auto'"
        )

    def __init__(self, params: WaveParameters, shape, size: int, nt: int,
                 max_registers: int | None = None, specialize: bool | None = None,
                 left_from_memory: bool = False):
        """See the module contract.

        ``max_registers`` overrides the sweep kernel's register cap;
        ``specialize=True`` compiles the sweep for this grid's (ny, nz) (constant
        offsets, fewer registers, faster; one compile per shape, cached on disk;
        default: for grids of at least ``SPECIALISE_MIN_CELLS`` cells);
        ``left_from_memory=True`` re-reads the tile's left neighbours from L2
        each tier instead of keeping them in registers.
        """
        from diamondlab.kernels import cuda as kernels

        self.params = params
        self.shape = validate_shape(shape)
        self.size = size
        self.nt = nt
        # geometry checks (DTS >= 1, Nt >= 1, the domain holds one tile) before anything else
        StageSchedule(DiamondTorre(DiamondTile(params.order, size), nt), *self.shape[:2])
        kernels.check_pair(params.order, size)
        kernels.check_nz(self.shape[2])
        if not self.available():
            raise RuntimeError(self.unavailable_reason())
        self._kernels_api = kernels
        ncells = int(np.prod(self.shape, dtype=np.int64))
        need = 2 * 4 * ncells
        if not kernels.simulator_enabled():
            free, total = device_memory()
            if need + MEMORY_MARGIN_BYTES > free:
                raise ValueError(
                    f"shape {self.shape} needs {need / 2**30:.2f} GiB of GPU memory for its two "
                    f"float32 fields but the GPU has {free / 2**30:.2f} GiB free of "
                    f"{total / 2**30:.2f} GiB: use a smaller shape or backend='cpu'"
                )
        from numba import cuda

        self._cuda = cuda
        if specialize is None:
            specialize = ncells >= kernels.SPECIALISE_MIN_CELLS
        self.specialized = bool(specialize)
        cap = kernels.sweep_register_cap(params.order, size, self.shape[2], max_registers,
                                         self.specialized)
        yz = self.shape[1:] if specialize else None
        self.kernels = kernels.cuda_kernels(params.order, size, cap, yz, left_from_memory)
        self._coeffs = cuda.to_device(np.ascontiguousarray(params.coefficients, dtype=np.float32))
        self._prev = self._zeros(ncells)
        self._curr = self._zeros(ncells)
        self._schedules: dict[int, tuple] = {}
        self._done = None
        self._counter = cuda.to_device(np.zeros(1, dtype=np.int64))
        self._tickets = 0
        self._epoch = 0
        self.last_sweep_kernel = None

    def _zeros(self, n: int):
        cuda = self._cuda
        if self._kernels_api.simulator_enabled():
            return cuda.to_device(np.zeros(n, dtype=np.float32))
        from numba.cuda.cudadrv.driver import device_memset

        arr = cuda.device_array(n, dtype=np.float32)
        device_memset(arr, 0, arr.nbytes)
        return arr

    # ------------------------------------------------------------------ fields
    def _host(self, a, name: str) -> np.ndarray:
        a = np.asarray(a)
        if a.shape != self.shape:
            raise ValueError(f"{name} must have shape {self.shape}; got {a.shape}")
        return np.ascontiguousarray(a, dtype=np.float32).ravel()

    def set_fields(self, prev: np.ndarray, curr: np.ndarray) -> None:
        self._prev.copy_to_device(self._host(prev, "prev"))
        self._curr.copy_to_device(self._host(curr, "curr"))

    def fields(self) -> tuple[np.ndarray, np.ndarray]:
        prev = self._prev.copy_to_host().reshape(self.shape)
        curr = self._curr.copy_to_host().reshape(self.shape)
        return prev, curr

    def current_view(self) -> np.ndarray:
        """The current level on the host (a copy: the fields live on the device)."""
        return self._curr.copy_to_host().reshape(self.shape)

    # ---------------------------------------------------------------- stepping
    def step(self, nsteps: int) -> None:
        for _ in range(int(nsteps)):
            self._kernels_api.launch_stepwise(
                self.kernels, self._curr, self._prev, self.shape, self._coeffs
            )
            self._prev, self._curr = self._curr, self._prev

    def _schedule(self, height: int) -> tuple:
        cached = self._schedules.get(height)
        if cached is None:
            cuda = self._cuda
            tile = DiamondTile(self.params.order, self.size)
            s = StageSchedule(DiamondTorre(tile, height), self.shape[0], self.shape[1])
            deps = self._kernels_api.sweep_dependencies(
                s.torre_x0, s.torre_yc, s.stage_start, tile.radius
            )
            arrays = tuple(
                cuda.to_device(np.ascontiguousarray(a, dtype=np.int64))
                for a in (s.torre_x0, s.torre_yc, deps)
            )
            cached = self._schedules[height] = (s.ntorres, arrays)
            if self._done is None or len(self._done) < s.ntorres:
                self._done = cuda.to_device(np.zeros(s.ntorres, dtype=np.int64))
        return cached

    def compile(self) -> None:
        """Compile (or load from the disk cache) both kernels for this grid; launches nothing."""
        api = self._kernels_api
        api.launch_stepwise(self.kernels, self._curr, self._prev, self.shape, self._coeffs,
                            compile_only=True)
        _, arrays = self._schedule(self.nt)
        kernel = api.launch_sweep(
            self.kernels, self.params.order, self.size, self._curr, self._prev, self.shape,
            self.nt, arrays, (self._done, self._counter), self._tickets, self._epoch + 1,
            self._coeffs, compile_only=True,
        )
        self.last_sweep_kernel = kernel or self.last_sweep_kernel

    def sweep(self, height: int) -> None:
        if not 1 <= height <= self.nt:
            raise ValueError(f"sweep height must be between 1 and nt={self.nt}; got {height}")
        ntorres, arrays = self._schedule(height)
        self._epoch += 1
        self.last_sweep_kernel = self._kernels_api.launch_sweep(
            self.kernels, self.params.order, self.size, self._curr, self._prev, self.shape,
            height, arrays, (self._done, self._counter), self._tickets, self._epoch, self._coeffs,
        )
        self._tickets += ntorres
        if height % 2:
            self._prev, self._curr = self._curr, self._prev

    def synchronize(self) -> None:
        self._cuda.synchronize()

    def resources(self) -> dict[str, int] | None:
        """Registers, local bytes and shared bytes of the last sweep kernel (None before one)."""
        if self.last_sweep_kernel is None:
            return None
        return self._kernels_api.kernel_resources(self.last_sweep_kernel)
