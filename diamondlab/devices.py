"""The GPUs the engine runs on: their limits, read from the driver, and the tuning measured on them.

Contract
--------
:class:`GPUArch` holds what the launch model, the kernels' register caps and
the performance model need of a GPU: multiprocessors, registers, shared
memory (per multiprocessor, per block, reserved per block), threads and
blocks per multiprocessor, FP32 lanes and clock (hence the FP32 rate).
:func:`current_gpu` reads them from the driver (numba-cuda's device
attributes); what the driver does not say (FP32 lanes, and any attribute
an old driver lacks) comes from :data:`GENERATIONS`, the per-compute-
capability table of NVIDIA's CUDA programming guide ("technical
specifications per compute capability").  :data:`H100` is the reference
device where none can be asked (no GPU, the CUDA simulator): the kernels'
shared-memory limit and the documentation's examples use it.

:class:`CUDATuning` is the tuning measured on a device generation (default
tiles, pipelined waits, register caps, when to specialise a sweep for its
grid); :func:`cuda_tuning` gives the one for a device.  Only Hopper has
been measured (BENCHMARKS.md); other generations use it as the starting
point, and ``--dts auto --nt auto`` measures on the device itself.

The CPU's part is one fact: :func:`usable_cpus`, the cores this process may
use (its affinity, lowered to a container's CPU quota), which
``import diamondlab`` hands to Numba as its thread count unless
``NUMBA_NUM_THREADS`` is set (Numba counts the host's cores: 8 threads on a
2-CPU Binder container cost 36 %).

This module is a bottom floor: it imports nothing of diamondlab, and
numba.cuda only inside :func:`current_gpu`.
"""

from __future__ import annotations

import functools
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["GENERATIONS", "H100", "CUDATuning", "GPUArch", "cuda_tuning", "current_gpu", "gpu_arch",
           "usable_cpus"]

KIB = 1024

#: Per-multiprocessor limits by compute capability (CUDA C++ Programming Guide, "Technical
#: Specifications per Compute Capability"; FP32 lanes from the architecture white papers):
#: shared memory per SM and the opt-in maximum per block (bytes), resident threads and blocks,
#: FP32 lanes, shared memory the hardware reserves per block.
GENERATIONS: dict[tuple[int, int], dict[str, int]] = {
    (7, 0): {"shared_per_sm": 96 * KIB, "shared_per_block": 96 * KIB, "threads_per_sm": 2048,
             "blocks_per_sm": 32, "fp32_lanes_per_sm": 64, "reserved_shared_per_block": 0},
    (7, 5): {"shared_per_sm": 64 * KIB, "shared_per_block": 64 * KIB, "threads_per_sm": 1024,
             "blocks_per_sm": 16, "fp32_lanes_per_sm": 64, "reserved_shared_per_block": 0},
    (8, 0): {"shared_per_sm": 164 * KIB, "shared_per_block": 163 * KIB, "threads_per_sm": 2048,
             "blocks_per_sm": 32, "fp32_lanes_per_sm": 64, "reserved_shared_per_block": KIB},
    (8, 6): {"shared_per_sm": 100 * KIB, "shared_per_block": 99 * KIB, "threads_per_sm": 1536,
             "blocks_per_sm": 16, "fp32_lanes_per_sm": 128, "reserved_shared_per_block": KIB},
    (8, 7): {"shared_per_sm": 164 * KIB, "shared_per_block": 163 * KIB, "threads_per_sm": 2048,
             "blocks_per_sm": 16, "fp32_lanes_per_sm": 128, "reserved_shared_per_block": KIB},
    (8, 9): {"shared_per_sm": 100 * KIB, "shared_per_block": 99 * KIB, "threads_per_sm": 1536,
             "blocks_per_sm": 24, "fp32_lanes_per_sm": 128, "reserved_shared_per_block": KIB},
    (9, 0): {"shared_per_sm": 228 * KIB, "shared_per_block": 227 * KIB, "threads_per_sm": 2048,
             "blocks_per_sm": 32, "fp32_lanes_per_sm": 128, "reserved_shared_per_block": KIB},
    (10, 0): {"shared_per_sm": 228 * KIB, "shared_per_block": 227 * KIB, "threads_per_sm": 2048,
              "blocks_per_sm": 32, "fp32_lanes_per_sm": 128, "reserved_shared_per_block": KIB},
    (12, 0): {"shared_per_sm": 100 * KIB, "shared_per_block": 99 * KIB, "threads_per_sm": 1536,
              "blocks_per_sm": 32, "fp32_lanes_per_sm": 128, "reserved_shared_per_block": KIB},
}  # fmt: skip


@dataclass(frozen=True)
class GPUArch:
    """One GPU's limits (see the module contract).

    Examples
    --------
    >>> round(H100.fp32_rate / 1e12, 1), H100.shared_per_block
    (66.9, 232448)
    """

    name: str
    compute_capability: tuple[int, int]
    multiprocessors: int
    clock_hz: float
    shared_per_sm: int
    shared_per_block: int
    threads_per_sm: int
    blocks_per_sm: int
    fp32_lanes_per_sm: int
    reserved_shared_per_block: int = KIB
    registers_per_sm: int = 65536
    max_registers_per_thread: int = 255

    @property
    def fp32_rate(self) -> float:
        """Peak FP32 operations per second (an FMA counts two)."""
        return 2.0 * self.fp32_lanes_per_sm * self.multiprocessors * self.clock_hz


def gpu_arch(name: str, compute_capability, multiprocessors: int, clock_hz: float, **limits) -> GPUArch:
    """A :class:`GPUArch` from the generation table, with ``limits`` (e.g. from the driver) overriding it.

    >>> a100 = gpu_arch("NVIDIA A100-SXM4-80GB", (8, 0), 108, 1.41e9)
    >>> round(a100.fp32_rate / 1e12, 1), a100.shared_per_sm
    (19.5, 167936)
    """
    cc = tuple(int(c) for c in compute_capability)
    if cc < (7, 0):
        raise ValueError(f"diamondlab's CUDA engine needs compute capability >= 7.0; {name} has {cc}")
    table = GENERATIONS.get(cc) or GENERATIONS[max(k for k in GENERATIONS if k <= cc)]  # a newer minor
    values = {**table, **{k: int(v) for k, v in limits.items() if v}}
    return GPUArch(name, cc, int(multiprocessors), float(clock_hz), **values)


#: NVIDIA H100 SXM (80GB HBM3): the device the tuning tables were measured on (BENCHMARKS.md).
H100 = gpu_arch("NVIDIA H100 80GB HBM3", (9, 0), 132, 1.98e9)

#: numba-cuda device attribute -> GPUArch field, read where the driver has it.
_DRIVER_ATTRIBUTES = {
    "MAX_REGISTERS_PER_MULTIPROCESSOR": "registers_per_sm",
    "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR": "shared_per_sm",
    "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": "shared_per_block",
    "MAX_THREADS_PER_MULTI_PROCESSOR": "threads_per_sm",
    "MAX_BLOCKS_PER_MULTIPROCESSOR": "blocks_per_sm",
    "RESERVED_SHARED_MEMORY_PER_BLOCK": "reserved_shared_per_block",
}


@functools.cache
def current_gpu() -> GPUArch | None:
    """This machine's current CUDA device, from the driver; None without one (or under the simulator)."""
    try:
        from numba import config, cuda

        if config.ENABLE_CUDASIM or not cuda.is_available():
            return None
        dev = cuda.get_current_device()
    except Exception:  # noqa: BLE001 - no numba-cuda, no driver, no device: no GPU
        return None
    limits = {}
    for attribute, name in _DRIVER_ATTRIBUTES.items():
        try:
            limits[name] = int(getattr(dev, attribute))
        except Exception:  # noqa: BLE001, S112 - an old driver: the generation table says it
            continue
    name = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
    return gpu_arch(name, dev.compute_capability, dev.MULTIPROCESSOR_COUNT, dev.CLOCK_RATE * 1e3, **limits)


@dataclass(frozen=True)
class CUDATuning:
    """Tuning of the CUDA engine measured on one device generation (BENCHMARKS.md)."""

    #: device it was measured on
    measured_on: str
    #: (DTS, Nt) per NO measured best at 512 x 2048 x 256
    tiling: dict = field(default_factory=dict)
    #: (DTS, Nt) per NO where a damped medium (sponge or velocity model) measured faster than
    #: :attr:`tiling` in the generic sweep (its NO=2 DTS=4 medium variant spills 248 bytes a thread under
    #: its register cap; the (ny, nz)-specialised one 48 and runs DTS=4 faster: BENCHMARKS.md)
    damped_tiling: dict = field(default_factory=dict)
    #: (DTS, Nt) per NO where a velocity model with K per cell measured faster than the damped tiles
    model_tiling: dict = field(default_factory=dict)
    #: per NO a pair ``(cells, Nt)``; grids of fewer cells run this Nt (shorter torres, fewer tiers to
    #: wait on; NO=8 Nt=8 measured 5-12 % faster than 16 from 256^3 to 512x512x256, equal at 2 GiB)
    small_grid_nt: dict = field(default_factory=dict)
    #: NO at which DiamondTorre with a velocity model measured slower than stepwise (BENCHMARKS.md);
    #: ``algorithm="auto"`` runs stepwise there
    stepwise_with_model: tuple = ()
    #: (NO, DTS) pairs whose sweep with a velocity model measured faster with the tile's K kept in
    #: registers (loading only the entering cells' K each tier) than with K loaded per cell and tier
    kappa_in_registers: tuple = ()
    #: where the boundary torres of a sweep with a medium keep their damping factors, per (NO, DTS) where
    #: not ``"held"`` (:class:`~diamondlab.kernels.cuda_source.TorreVariant`)
    boundary_profiles: dict = field(default_factory=dict)
    #: what a sweep's z exchange waits for: ``"block"`` (every warp) or ``"neighbours"`` (the warps above and
    #: below; :class:`~diamondlab.kernels.cuda_source.TorreVariant`)
    exchange_barrier: str = "block"
    #: tiers ahead whose loads a sweep's tier prefetches into L2, per (NO, DTS) where not 0
    #: (:class:`~diamondlab.kernels.cuda_source.TorreVariant`)
    prefetch: dict = field(default_factory=dict)
    #: (band, chunk) of the (NO, DTS) pairs whose pipelined sweep measured faster than whole-torre waits
    pipelined: dict = field(default_factory=dict)
    #: register cap of the generic sweep per (NO, DTS) (128: two 256-thread blocks a multiprocessor)
    max_registers: dict = field(default_factory=dict)
    #: register cap of the (ny, nz)-specialised sweep per (NO, DTS)
    specialised_max_registers: dict = field(default_factory=dict)
    #: register cap of the generic sweep with a medium (sponge, layered or per-cell K) per (NO, DTS)
    #: where the bare scheme's cap makes its update spill
    medium_max_registers: dict = field(default_factory=dict)
    #: the same for the (ny, nz)-specialised sweep (its literal strides free registers: NO=4 DTS=2
    #: keeps the bare cap of 128, 17-19 % faster than 255 at 512x1024x256)
    specialised_medium_max_registers: dict = field(default_factory=dict)
    #: grids of at least this many cells get the (ny, nz)-specialised sweep (5-16 % faster from 256^3
    #: up; a kernel compiled per (ny, nz), cached on disk, instead of one per (NO, DTS))
    specialise_min_cells: int = 2**24
    #: tallest column at which a block keeps 255 registers a thread (above it NO=8 DTS=1 keeps level n-1 in
    #: shared memory: :data:`diamondlab.kernels.cuda.TALL_COLUMN_SEGMENTS`)
    full_register_nz: int = 256
    #: tallest column on which the NO=8 sweep is chosen (``algorithm="auto"``): 512 cells measured 1.53x
    #: stepwise with level n-1 in shared memory (512x512x1280, H100); taller blocks leave a thread fewer than
    #: 128 registers (not measured)
    tall_column_nz: int = 512
    #: tallest column for the sweeps with level n-1 in shared memory (NO=6 DTS=2): at 384 cells, capped
    #: at 168 registers, it still beat DTS=1 by a third (H200: 246.4 vs 183.5 G/s at 384^3)
    shared_previous_nz: int = 384
    #: sweep options the auto-tuner tries per (DTS, Nt)
    tuning_options: tuple = ()


HOPPER_TUNING = CUDATuning(
    measured_on=H100.name,
    tiling={2: (4, 32), 4: (2, 32), 6: (2, 16), 8: (1, 16)},
    damped_tiling={2: (3, 32)},
    model_tiling={6: (1, 16)},
    small_grid_nt={8: (2**28, 8)},
    kappa_in_registers=((2, 3), (4, 1), (4, 2), (6, 1), (8, 1)),
    # NO=4 DTS=2 with a 16-cell sponge at 256^3: 219.8 against 196.9 G/s held; NO=2 DTS=4 loses (383 vs 408)
    boundary_profiles={(4, 2): "x_at_use"},
    pipelined={(2, 4): (32, 2), (4, 2): (16, 1), (6, 2): (16, 1)},
    max_registers={(2, 3): 128, (2, 4): 128, (4, 2): 128},
    specialised_max_registers={(2, 3): 80, (2, 4): 128, (4, 2): 128},
    medium_max_registers={(2, 3): 128, (4, 2): 255},
    specialised_medium_max_registers={(2, 3): 128},
    tuning_options=(
        {"pipelined": False},
        {"pipelined": True, "band": 0, "chunk": 2},
        {"pipelined": True, "band": 16, "chunk": 2},
        {"pipelined": True, "band": 32, "chunk": 2},
    ),
)


def cuda_tuning(arch: GPUArch | None = None) -> CUDATuning:
    """The tuning tables for ``arch`` (only Hopper has been measured: every device starts from it)."""
    return HOPPER_TUNING


def usable_cpus(cgroup: str | os.PathLike = "/sys/fs/cgroup") -> int:
    """Cores this process may use: its CPU affinity, lowered to the cgroup's CPU quota (rounded up).

    Reads cgroup v2's ``cpu.max`` (``"quota period"`` or ``"max period"``) or
    v1's ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us`` (quota -1: none) under ``cgroup``.

    >>> usable_cpus("/nonexistent") >= 1
    True
    """
    affinity = getattr(os, "sched_getaffinity", None)
    cores = len(affinity(0)) if affinity is not None else (os.cpu_count() or 1)
    root, quota = Path(cgroup), None
    try:
        limit, period = (root / "cpu.max").read_text().split()[:2]
        quota = None if limit == "max" else int(limit) / int(period)
    except (OSError, ValueError):
        try:
            limit = int((root / "cpu" / "cpu.cfs_quota_us").read_text())
            period = int((root / "cpu" / "cpu.cfs_period_us").read_text())
            quota = limit / period if limit > 0 and period > 0 else None
        except (OSError, ValueError):
            quota = None
    return cores if quota is None else max(1, min(cores, math.ceil(quota)))
