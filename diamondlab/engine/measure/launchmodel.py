"""How much of the GPU a one-launch sweep keeps busy: resident blocks, the launch replay, the efficiency.

Contract
--------
:func:`resident_blocks` is the number of sweep blocks a GPU holds at once
(the "slots"): multiprocessors times the blocks one multiprocessor holds,
limited by registers (allocated per warp in units of 256, from four
sub-partitions of a quarter of the register file each), shared memory (in
128-byte units, plus what the hardware reserves per block), threads and the
block limit, all from a :class:`~diamondlab.devices.GPUArch` (default: the
H100).

The GPU sweep starts one block per torre; blocks take tickets in a launch
order (:meth:`~diamondlab.geometry.StageSchedule.launch_order`) and at most
``slots`` of them are resident at once.  A resident torre waits on its two
:meth:`~diamondlab.geometry.StageSchedule.dependencies`:

- whole-torre waits: before tier 0, until both finished all ``Nt`` tiers;
- pipelined waits in chunks of ``chunk`` tiers: before tiers ``0, chunk,
  2 chunk, ...``, until both finished tier ``min(k + chunk, Nt) - 1`` (what
  the CUDA kernel does).

:func:`launch_rounds` replays a sweep in rounds of one tier time: in each
round every resident torre whose waits are met (by the progress at the
start of the round) runs one tier, finished torres leave, and free slots
take the next tickets.  All tiers cost the same (clipped tiers too), and
flags and barriers cost nothing, so the model says how much of the GPU the
*order and the waits* keep busy, not how fast a tier is:
``efficiency = tiers / (rounds * slots)``.  :func:`sweep_efficiency` does it
for a grid; the roofline of :mod:`diamondlab.engine.measure.perfmodel` times this
efficiency is what the order and the waits let the sweep reach;
:func:`cuda_backend_efficiency` does both for a live CUDA backend.  NumPy
only, except :func:`cuda_backend_efficiency` (which asks the device).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from diamondlab.devices import H100, GPUArch
from diamondlab.geometry import StageSchedule, stage_schedule
from diamondlab.geometry.tiles import _positive_int

__all__ = ["LaunchModel", "cuda_backend_efficiency", "launch_rounds", "resident_blocks", "sweep_efficiency"]


def resident_blocks(registers: int, threads: int, shared_bytes: int, sms: int | None = None,
                    arch: GPUArch = H100) -> int:
    """Blocks of ``threads`` threads using ``registers`` per thread and ``shared_bytes`` a GPU holds.

    ``arch`` gives the per-multiprocessor limits; ``sms`` overrides its
    multiprocessor count.

    >>> resident_blocks(128, 256, 68_128, 132)  # NO=2 DTS=4, nz=256 on an H100: two per multiprocessor
    264
    >>> resident_blocks(254, 256, 69_712, 132)  # NO=8 DTS=1: one (the registers)
    132
    """
    sms = arch.multiprocessors if sms is None else int(sms)
    warps = -(-int(threads) // 32)
    per_warp = -(-int(registers) * 32 // 256) * 256
    # warps are placed on 4 sub-partitions of a quarter of the register file each
    by_registers = (arch.registers_per_sm // 4 // per_warp) * 4 // warps if per_warp else arch.blocks_per_sm
    unit = -(-int(shared_bytes) // 128) * 128 + arch.reserved_shared_per_block
    by_shared = arch.shared_per_sm // unit if unit else arch.blocks_per_sm
    by_threads = arch.threads_per_sm // (warps * 32)
    return sms * max(0, min(by_registers, by_shared, by_threads, arch.blocks_per_sm))


@dataclass(frozen=True)
class LaunchModel:
    """Tier-time replay of one sweep: ``rounds`` tier times for ``tiers`` torre tiers on ``slots``."""

    rounds: int
    tiers: int
    slots: int

    @property
    def efficiency(self) -> float:
        """Fraction of slot-rounds that run a tier (1: the slots never wait)."""
        return self.tiers / (self.rounds * self.slots)


def launch_rounds(schedule: StageSchedule, slots: int, pipelined: bool = False, band: int | None = None,
                  chunk: int = 1) -> LaunchModel:
    """Replay one sweep of ``schedule`` on ``slots`` resident blocks (see the module contract).

    Parameters
    ----------
    schedule : StageSchedule
        Torres, their dependencies and ``Nt``.
    slots : int
        Blocks resident at once.
    pipelined : bool
        Tier-level waits in chunks of ``chunk`` tiers instead of whole-torre waits.
    band : int, optional
        Launch order: diagonal bands of ``band`` torres (None: stage by stage).

    Examples
    --------
    >>> from diamondlab.geometry import stage_schedule
    >>> s = stage_schedule(order=2, size=1, nt=4, nx=12, ny=12)
    >>> launch_rounds(s, slots=s.ntorres).rounds == s.nstages * 4  # whole-torre waits, no slot limit
    True
    >>> launch_rounds(s, slots=s.ntorres, pipelined=True).rounds == s.nstages + 4 - 1
    True
    >>> launch_rounds(s, slots=1).rounds == s.ntorres * 4  # one block at a time
    True
    """
    if not isinstance(schedule, StageSchedule):
        raise TypeError(f"schedule must be a StageSchedule; got {type(schedule).__name__}")
    slots = _positive_int("slots", slots)
    chunk = _positive_int("chunk", chunk)
    nt, n = schedule.nt, schedule.ntorres
    if band is not None and not pipelined:
        raise ValueError("band needs pipelined=True (with whole-torre waits a band runs one stage at a time)")
    order = schedule.launch_order(band)
    deps = schedule.dependencies()
    progress = np.zeros(n, dtype=np.int64)
    resident = np.zeros(0, dtype=np.int64)
    admitted = rounds = 0
    while admitted < n or len(resident):
        take = min(slots - len(resident), n - admitted)
        if take > 0:
            resident = np.concatenate([resident, order[admitted:admitted + take]])
            admitted += take
        k = progress[resident]
        if pipelined:
            need = np.where(k % chunk == 0, np.minimum(k + chunk, nt), 0)
        else:
            need = np.where(k == 0, nt, 0)
        ready = np.ones(len(resident), dtype=bool)
        for j in range(2):
            d = deps[resident, j]
            ready &= (d < 0) | (progress[np.maximum(d, 0)] >= need)
        if not ready.any():  # pragma: no cover - tickets follow the dependencies
            raise RuntimeError("launch replay deadlocked")
        progress[resident[ready]] += 1
        resident = resident[progress[resident] < nt]
        rounds += 1
    return LaunchModel(rounds, n * nt, slots)


def sweep_efficiency(order: int, size: int, nt: int, shape, slots: int, pipelined: bool = False,
                     band: int | None = None, chunk: int = 1) -> float:
    """Launch efficiency of one sweep of height ``nt`` over ``shape`` on ``slots`` resident blocks.

    >>> round(sweep_efficiency(2, 4, 32, (512, 1024, 256), 264), 2)  # whole-torre waits
    0.49
    >>> round(sweep_efficiency(2, 4, 32, (512, 1024, 256), 264, True, 32, 2), 2)
    0.95
    """
    schedule = stage_schedule(order, size, nt, int(shape[0]), int(shape[1]))
    return launch_rounds(schedule, slots, pipelined, band, chunk).efficiency


def cuda_backend_efficiency(backend) -> tuple[int, float]:
    """``(slots, efficiency)`` of a compiled :class:`~diamondlab.engine.backends.cuda.CUDABackend`'s sweep."""
    from diamondlab.devices import current_gpu
    from diamondlab.kernels.cuda import sweep_block, sweep_shared_bytes

    order, size, nz = backend.params.order, backend.size, backend.shape[2]
    res = backend.resources() or {}
    arch = current_gpu() or H100
    shared = sweep_shared_bytes(order, size, nz, segments=backend.segments) + res.get("shared_bytes", 0)
    slots = resident_blocks(res.get("registers", 255), sweep_block(nz), shared, arch=arch)
    opts = backend.options
    eff = sweep_efficiency(order, size, backend.nt, backend.shape, slots, opts["pipelined"],
                           opts["band"] or None, opts["chunk"])
    return slots, eff
