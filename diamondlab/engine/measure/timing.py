"""The one measurement service: timed repeats, their medians and spreads, and a backend timed bare.

Contract
--------
Every rate diamondlab reports is timed here: the auto-tuner
(:mod:`diamondlab.engine.run.autotune`), the benchmarks of whole runs
(:mod:`diamondlab.engine.measure.bench`: ``diamondlab bench``, the lab's
Tuning panel, the watch-cost benchmark) and the CUDA kernel benchmark
(:func:`diamondlab.engine.measure.perfmodel.benchmark`).  It knows backends
by their contract only (``sweep``, ``step``, ``synchronize``), never a run
plan or a simulation, so that the plan's tuner can use it.

- :func:`time_repeats` runs a callable once to warm up (compilation, caches;
  stop signals held: :func:`~diamondlab.engine.run.interrupts.held_while_compiling`)
  and then ``repeats`` times, each timed to the end of the device's work:
  with CUDA events on the GPU, with ``time.perf_counter`` and the backend's
  ``synchronize`` elsewhere.
- :class:`Measurement` holds the seconds of the repeats and the cell updates
  of one repeat; its rate is the median's, its ``spread`` the range of the
  rates relative to that median (a tuning point is trusted when it is small).
- :func:`measure_backend` times a backend's DiamondTorre sweeps or stepwise
  steps (no physics, no Python bookkeeping between sweeps).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from diamondlab.engine.run.interrupts import held_while_compiling

__all__ = ["Measurement", "measure_backend", "time_repeats"]


@dataclass(frozen=True)
class Measurement:
    """Seconds of ``repeats`` timed runs of ``cell_updates`` cell updates each.

    >>> m = Measurement((2.0, 1.0, 4.0), 8e9)
    >>> m.seconds_median, m.rate / 1e9, round(m.spread, 2)
    (2.0, 4.0, 1.5)
    """

    seconds: tuple[float, ...]
    cell_updates: float

    @property
    def seconds_median(self) -> float:
        return statistics.median(self.seconds)

    @property
    def rate(self) -> float:
        """Cell updates per second of the median repeat."""
        return self.cell_updates / self.seconds_median

    @property
    def gcells(self) -> float:
        return self.rate / 1e9

    @property
    def spread(self) -> float:
        """(fastest - slowest rate) / median rate of the repeats (0 for one repeat)."""
        rates = [self.cell_updates / s for s in self.seconds]
        return (max(rates) - min(rates)) / self.rate


def time_repeats(run: Callable[[], object], synchronize: Callable[[], None], repeats: int,
                 cuda_events: bool = False, warmup: bool = True) -> tuple[float, ...]:
    """Seconds of ``repeats`` calls of ``run`` after one warm-up call (see the module contract).

    ``cuda_events`` times on the GPU's own clock (not under Numba's CUDA simulator, which has none).
    """
    if cuda_events:
        from diamondlab.kernels.cuda import simulator_enabled

        cuda_events = not simulator_enabled()
    if warmup:
        with held_while_compiling():  # the warm-up compiles: a stop signal waits for it
            run()
            synchronize()
    times = []
    for _ in range(int(repeats)):
        if cuda_events:
            from numba import cuda

            start, stop = cuda.event(), cuda.event()
            start.record()
            run()
            stop.record()
            stop.synchronize()
            times.append(cuda.event_elapsed_time(start, stop) / 1e3)
        else:
            t0 = time.perf_counter()
            run()
            synchronize()
            times.append(time.perf_counter() - t0)
    return tuple(times)


def measure_backend(backend, algorithm: str, steps: int, repeats: int = 3,
                    warmup: bool = True) -> Measurement:
    """Time ``steps`` steps of ``backend`` (DiamondTorre: whole sweeps of its Nt, at least one) per repeat.

    The warm-up compiles the kernels; the fields are whatever the backend
    holds (set them first).
    """
    nt = backend.nt
    if algorithm == "diamondtorre":
        sweeps = max(1, int(steps) // nt)
        steps = sweeps * nt

        def run():
            for _ in range(sweeps):
                backend.sweep(nt)
    elif algorithm == "stepwise":

        def run():
            backend.step(steps)
    else:
        raise ValueError(f"algorithm must be 'diamondtorre' or 'stepwise'; got {algorithm!r}")
    seconds = time_repeats(run, backend.synchronize, repeats, backend.name == "cuda", warmup)
    return Measurement(seconds, float(steps) * float(np.prod(backend.shape)))
