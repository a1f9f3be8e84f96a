"""How much of the GPU a one-launch sweep keeps busy: resident blocks and the launch efficiency.

Contract
--------
:func:`resident_blocks` is the number of sweep blocks a GPU holds at once
(the "slots"): multiprocessors times the blocks one multiprocessor holds,
limited by registers (allocated per warp in units of 256, from four
sub-partitions of 16384), shared memory (in 128-byte units, plus 1 KiB the
hardware keeps per block), threads and the block limit.
:func:`sweep_efficiency` replays one sweep of a grid on that many slots
with :func:`diamondlab.geometry.launch_rounds` (the launch order and the
waits of the backend's options) and returns its efficiency: the fraction of
slot time that runs tiers.  The roofline of :mod:`diamondlab.engine.perfmodel`
times this efficiency is what the order and the waits let the sweep reach;
:func:`cuda_backend_efficiency` does both for a live CUDA backend.
NumPy only, except :func:`cuda_backend_efficiency` (which asks the device).
"""

from __future__ import annotations

from diamondlab.geometry import DiamondTile, DiamondTorre, StageSchedule, launch_rounds

__all__ = ["cuda_backend_efficiency", "resident_blocks", "sweep_efficiency"]

#: Hopper (H100, H200) per-multiprocessor limits.
REGISTERS_PER_SM = 65536
SHARED_PER_SM = 228 * 1024
THREADS_PER_SM = 2048
BLOCKS_PER_SM = 32


def resident_blocks(registers: int, threads: int, shared_bytes: int, sms: int) -> int:
    """Blocks of ``threads`` threads using ``registers`` per thread and ``shared_bytes`` a GPU holds.

    >>> resident_blocks(128, 256, 68_128, 132)  # NO=2 DTS=4, nz=256 on an H100: two per multiprocessor
    264
    >>> resident_blocks(254, 256, 69_712, 132)  # NO=8 DTS=1: one (the registers)
    132
    """
    warps = -(-int(threads) // 32)
    per_warp = -(-int(registers) * 32 // 256) * 256
    # warps are placed on 4 sub-partitions of a quarter of the register file each
    by_registers = (REGISTERS_PER_SM // 4 // per_warp) * 4 // warps if per_warp else BLOCKS_PER_SM
    by_shared = SHARED_PER_SM // (-(-int(shared_bytes) // 128) * 128 + 1024)
    by_threads = THREADS_PER_SM // (warps * 32)
    return int(sms) * max(0, min(by_registers, by_shared, by_threads, BLOCKS_PER_SM))


def sweep_efficiency(order: int, size: int, nt: int, shape, slots: int, pipelined: bool = False,
                     band: int | None = None, chunk: int = 1) -> float:
    """Launch efficiency of one sweep of height ``nt`` over ``shape`` on ``slots`` resident blocks.

    >>> round(sweep_efficiency(2, 4, 32, (512, 1024, 256), 264), 2)  # whole-torre waits
    0.49
    >>> round(sweep_efficiency(2, 4, 32, (512, 1024, 256), 264, True, 32, 2), 2)
    0.95
    """
    schedule = StageSchedule(DiamondTorre(DiamondTile(order, size), nt), int(shape[0]), int(shape[1]))
    return launch_rounds(schedule, slots, pipelined, band, chunk).efficiency


def cuda_backend_efficiency(backend) -> tuple[int, float]:
    """``(slots, efficiency)`` of a compiled :class:`~diamondlab.engine.cuda_backend.CUDABackend`'s sweep."""
    from numba import cuda

    from diamondlab.kernels.cuda import sweep_block, sweep_shared_bytes

    order, size, nz = backend.params.order, backend.size, backend.shape[2]
    res = backend.resources() or {}
    sms = cuda.get_current_device().MULTIPROCESSOR_COUNT
    slots = resident_blocks(res.get("registers", 255), sweep_block(nz),
                            sweep_shared_bytes(order, size, nz) + res.get("shared_bytes", 0), sms)
    opts = backend.options
    eff = sweep_efficiency(order, size, backend.nt, backend.shape, slots, opts["pipelined"],
                           opts["band"] or None, opts["chunk"])
    return slots, eff
