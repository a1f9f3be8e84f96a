"""How a one-launch sweep runs on a fixed number of resident blocks: a tier-time model.

Contract
--------
The GPU sweep starts one block per torre; blocks take tickets in a launch
order (:meth:`~diamondlab.geometry.StageSchedule.launch_order`) and at most
``slots`` of them are resident at once (multiprocessors times blocks per
multiprocessor).  A resident torre waits on its two
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
``efficiency = tiers / (rounds * slots)``.  Useful to choose a band width
and a chunk for a device before measuring (BENCHMARKS.md compares it with
H100 runs).  NumPy only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from diamondlab.geometry.schedule import StageSchedule
from diamondlab.geometry.tiles import _positive_int

__all__ = ["LaunchModel", "launch_rounds"]


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
