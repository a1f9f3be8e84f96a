"""The one measurement service: the measurement rule, its value, and a backend timed bare.

Contract
--------
Every rate diamondlab reports is measured here, by one rule: the auto-tuner
(:mod:`diamondlab.engine.run.autotune`), the benchmarks of whole runs
(:mod:`diamondlab.engine.measure.bench`: ``diamondlab bench``, the lab's
Tuning panel, notebooks 04 and 07, the watch-cost benchmark), the CPU
model's probes and the CUDA kernel benchmark
(:mod:`diamondlab.engine.measure.perfmodel`).  It knows backends by their
contract only (``sweep``, ``step``, ``synchronize``), never a run plan or a
simulation, so that the plan's tuner can use it.

The rule (:func:`measure`, :func:`measure_alternated`): one warm-up call
(compilation, caches; stop signals held:
:func:`~diamondlab.engine.run.interrupts.held_while_compiling`), then timed
calls until they last :data:`MIN_SECONDS` together *and* number at least
:data:`MIN_REPEATS` (at most :data:`MAX_REPEATS`), each timed to the end of
the device's work (CUDA events on the GPU, ``time.perf_counter`` and the
``synchronize`` given elsewhere).  Several runs compared with each other
are timed alternately, so that all see the same machine.  Over the whole
interval the machine's load is sampled (:class:`LoadProbe`): the CPU time
other processes took (``/proc/stat``'s busy time less the host's steal
and this process's own, ``os.times``), as a share of the machine's cores,
and apart from it the time the host of a virtual machine took from its
vCPUs (``/proc/stat``'s steal: :func:`stolen_seconds`); where
``/proc/stat`` is missing they are unknown (None), and said so.

The value (:class:`Measurement`): the seconds of every repeat, the work of
one repeat (cell updates, or bytes for a bandwidth probe) and the load.
Its ``rate`` is the median repeat's, its ``spread`` the interquartile
range of the repeats' rates relative to the median.  A machine can also be
slowed by what no process of it shows and the host need not count as
steal (a virtual machine's host and its other guests sharing a core, the
memory and the last cache level): where a *pace* probe is given (a
callable returning a :class:`PaceReading`: a short reference run's rate
over the best this machine has given it, or a bare number), it runs before
and after, and the lower of the two is kept.  The reference run must be
bound by what bounds the measured run, or it reads the wrong machine
(BENCHMARKS.md, "the pace probe reads the wrong bound": a memory probe
that missed a shared vCPU).  On the CPU
:func:`~diamondlab.engine.measure.cpumodel.pace_reading` has three kinds,
each thread timed on its own (one shared vCPU slows the call):
``"compute"`` (every thread's own arithmetic in L1) for runs whose grid a
core's own caches hold or whose bound the CPU model puts in the cores,
``"cache"`` (``b += a`` in the shared last cache) for grids that level
holds, ``"memory"`` (``b += a`` past it) for runs the model calls
memory-bound.  The caller passes the kind, decided once per run from the
CPU model (:func:`~diamondlab.engine.measure.cpumodel.pace_kind`;
:func:`~diamondlab.engine.measure.bench.pace_kinds`).

A measurement is *flagged* (:attr:`Measurement.flag`) when the spread is
wider than :data:`WIDE_SPREAD`, other processes took more than
:data:`BUSY_SHARE` of the machine, the pace was below :data:`SLOW_PACE`
or the host stole more than :data:`STOLEN_SHARE`: a figure, a panel or a
bench line that shows a flagged measurement says so
(:attr:`Measurement.note`) instead of drawing a conclusion from it.

:func:`measure_backend` times a backend's DiamondTorre sweeps or stepwise
steps (no physics, no Python bookkeeping between sweeps).
"""

from __future__ import annotations

import math
import os
import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from diamondlab.engine.run.interrupts import held_while_compiling

__all__ = [
    "BUSY_SHARE", "MAX_REPEATS", "MIN_REPEATS", "MIN_SECONDS", "SLOW_PACE", "STOLEN_SHARE", "WIDE_SPREAD",
    "LoadProbe", "Measurement", "PaceReading",
    "cpu_seconds", "flagged", "measure", "measure_alternated", "measure_backend", "stolen_seconds",
    "time_repeats",
]

#: The timed repeats of a measurement last this many seconds together at least ...
MIN_SECONDS = 0.2
#: ... and are at least this many (the interquartile range needs four).
MIN_REPEATS = 5
#: The most repeats a measurement takes, however short each is.
MAX_REPEATS = 2000
#: A measurement whose interquartile range of rates exceeds this fraction of the median is "wide".
WIDE_SPREAD = 0.10
#: A measurement during which other processes took more than this share of the machine's CPU time
#: (all its cores) is "busy".
BUSY_SHARE = 0.15
#: A measurement whose machine ran a reference run below this fraction of its best there is "slowed".
SLOW_PACE = 0.8
#: A measurement during which the host took more than this share of the machine's CPU time from its
#: virtual CPUs (``/proc/stat``'s steal) had "time stolen by the host".
STOLEN_SHARE = 0.05


def _cpu_line(stat: str | None) -> list[int] | None:
    """The first 8 numbers of ``/proc/stat``'s ``cpu`` line (``stat``: the file's text), None without it."""
    if stat is None:
        try:
            with open("/proc/stat") as fh:
                stat = fh.readline()
        except OSError:
            return None
    for line in stat.splitlines():
        fields = line.split()
        if fields and fields[0] == "cpu" and len(fields) >= 5:
            return [int(v) for v in fields[1:9]]
    return None


def cpu_seconds(stat: str | None = None) -> float | None:
    """CPU seconds all cores of this machine spent busy since boot, from ``/proc/stat`` (None without it).

    Busy is every field of the ``cpu`` line but idle and iowait (user, nice,
    system, irq, softirq and steal: a VM's host taking the core counts); the
    guest fields are inside user already.  ``stat`` is the file's text (tests).

    >>> cpu_seconds("cpu  100 0 50 800 10 0 0 50 0 0\\n") * os.sysconf("SC_CLK_TCK")
    200.0
    >>> cpu_seconds("intr 5\\n") is None
    True
    """
    values = _cpu_line(stat)
    if values is None:
        return None
    return (sum(values) - values[3] - values[4]) / os.sysconf("SC_CLK_TCK")  # less idle and iowait


def stolen_seconds(stat: str | None = None) -> float | None:
    """CPU seconds the host of this virtual machine took from its vCPUs since boot (``/proc/stat``'s
    steal, the ``cpu`` line's 8th number; 0 on a machine of its own), None without ``/proc/stat``.

    A vCPU the host deschedules to run another guest counts here; a vCPU
    slowed by the guest on its core's other hardware thread (SMT) or by
    shared memory does not: :data:`SLOW_PACE`'s probe is what sees those.

    >>> stolen_seconds("cpu  100 0 50 800 10 0 0 50 0 0\\n") * os.sysconf("SC_CLK_TCK")
    50.0
    >>> stolen_seconds("cpu  100 0 50 800\\n"), stolen_seconds("intr 5\\n")
    (0.0, None)
    """
    values = _cpu_line(stat)
    if values is None:
        return None
    return (values[7] if len(values) > 7 else 0) / os.sysconf("SC_CLK_TCK")


class LoadProbe:
    """Other processes' share of this machine's CPU time between :meth:`start` and :meth:`stop`, and the
    host's.

    ``share = (machine busy seconds - stolen seconds - this process's CPU seconds) / (wall seconds x
    cores)``, at least 0; None where the machine's busy time is unknown (no ``/proc/stat``).  After
    :meth:`stop`, :attr:`stolen` is the host's share of the same (:func:`stolen_seconds`; None: unknown).

    >>> probe = LoadProbe().start()
    >>> share = probe.stop()
    >>> share is None or 0.0 <= share <= 1.0
    True
    >>> probe.stolen is None or 0.0 <= probe.stolen <= 1.0
    True
    """

    def __init__(self, busy: Callable[[], float | None] = cpu_seconds, cores: int | None = None,
                 stolen: Callable[[], float | None] | None = None):
        self._busy = busy
        # the host's time is asked of /proc/stat with the machine's busy time (tests give both, or neither)
        self._stolen = stolen or (stolen_seconds if busy is cpu_seconds else _nothing)
        self.cores = cores or os.cpu_count() or 1
        self.stolen: float | None = None

    @staticmethod
    def _own() -> float:
        t = os.times()
        return t.user + t.system

    def start(self) -> LoadProbe:
        self._t0, self._own0, self._busy0 = time.perf_counter(), self._own(), self._busy()
        self._stolen0 = self._stolen()
        return self

    def stop(self) -> float | None:
        wall = time.perf_counter() - self._t0
        own = self._own() - self._own0
        busy1, stolen1 = self._busy(), self._stolen()
        stolen = None if self._stolen0 is None or stolen1 is None else max(0.0, stolen1 - self._stolen0)
        self.stolen = None if stolen is None or wall <= 0 else min(1.0, stolen / (wall * self.cores))
        if self._busy0 is None or busy1 is None or wall <= 0:
            return None
        return min(1.0, max(0.0, (busy1 - self._busy0 - (stolen or 0.0) - own) / (wall * self.cores)))


@dataclass(frozen=True)
class PaceReading:
    """What a pace probe read: its ``kind`` of bound (``"compute"``, ``"memory"``), the ``pace`` the rule
    keeps (1.0 at its best), the probe's ``rate`` now and its ``best`` here (its units: cell updates or
    bytes a second of one thread), and its ``balance``, the fastest thread's time over the slowest's
    (1.0: every thread as fast as the others).

    >>> PaceReading("compute", 0.5, 2e9, 4e9, 0.55).describe()
    'a compute reference run at 50 % of its best here'
    """

    kind: str
    pace: float
    rate: float = math.nan
    best: float = math.nan
    balance: float = 1.0

    def describe(self) -> str:
        """The reading in words, as a flag says it."""
        return f"a {self.kind} reference run at {self.pace:.0%} of its best here".replace("%", " %")


@dataclass(frozen=True)
class Measurement:
    """Seconds of timed repeats of ``work`` units each (cell updates; bytes for a bandwidth probe).

    ``busy``: other processes' share of the machine's CPU time over the
    measurement (:class:`LoadProbe`; None: unknown).  ``pace``: the
    machine's pace around it (a reference run's rate over its best on this
    machine, the lower of before and after; None: not probed), ``pace_kind``
    the bound of that reference run (:class:`PaceReading`; None: not said).
    ``stolen``: the host's share of the machine's CPU time over it
    (:attr:`LoadProbe.stolen`; None: unknown).

    >>> m = Measurement((2.0, 1.0, 4.0, 2.0, 2.0), 8e9, busy=0.02)
    >>> m.seconds_median, m.rate / 1e9, m.spread, m.flag
    (2.0, 4.0, 0.0, '')
    >>> w = Measurement((1.0, 2.0, 3.0, 4.0, 5.0), 6e9, busy=0.5)
    >>> round(w.spread, 2), w.wide, w.busy_machine
    (0.75, True, True)
    >>> w.note
    '2 G/s, spread 75 % (wide), machine busy (others 50 % of its CPU): not a steady measurement'
    >>> Measurement((1.0,) * 5, 1e9, busy=0.0, pace=0.6).note
    '1 G/s, spread 0 %, machine slowed (a reference run at 60 % of its best here): not a steady measurement'
    >>> for part in Measurement((1.0,) * 5, 1e9, 0.0, 0.5, "compute", stolen=0.2).flag.split(", "):
    ...     print(part)
    machine slowed (a compute reference run at 50 % of its best here)
    time stolen by the host (20 % of its CPU)
    """

    seconds: tuple[float, ...]
    work: float
    busy: float | None = None
    pace: float | None = None
    pace_kind: str | None = None
    stolen: float | None = None

    @property
    def cell_updates(self) -> float:
        """The work of one repeat, in cell updates."""
        return self.work

    @property
    def repeats(self) -> int:
        return len(self.seconds)

    @property
    def seconds_median(self) -> float:
        return statistics.median(self.seconds)

    @property
    def rate(self) -> float:
        """Work (cell updates) per second of the median repeat."""
        return self.work / self.seconds_median

    @property
    def gcells(self) -> float:
        return self.rate / 1e9

    @property
    def spread(self) -> float:
        """Interquartile range of the repeats' rates / the median rate (0 for fewer than 2 repeats)."""
        if len(self.seconds) < 2:
            return 0.0
        rates = [self.work / s for s in self.seconds]
        q1, _, q3 = statistics.quantiles(rates, n=4, method="inclusive")
        return (q3 - q1) / self.rate

    @property
    def wide(self) -> bool:
        """Whether the spread is wider than :data:`WIDE_SPREAD`."""
        return self.spread > WIDE_SPREAD

    @property
    def busy_machine(self) -> bool:
        """Whether other processes took more than :data:`BUSY_SHARE` of the machine meanwhile."""
        return self.busy is not None and self.busy > BUSY_SHARE

    @property
    def slowed(self) -> bool:
        """Whether the machine ran a reference run below :data:`SLOW_PACE` of its best meanwhile."""
        return self.pace is not None and self.pace < SLOW_PACE

    @property
    def robbed(self) -> bool:
        """Whether the host took more than :data:`STOLEN_SHARE` of the machine's CPU time meanwhile."""
        return self.stolen is not None and self.stolen > STOLEN_SHARE

    @property
    def trusted(self) -> bool:
        """Neither wide nor busy nor slowed nor robbed (an unknown load is not held against it, but
        :attr:`flag` says so)."""
        return not (self.wide or self.busy_machine or self.slowed or self.robbed)

    def _slowed_text(self) -> str:
        kind = f"{self.pace_kind} " if self.pace_kind else ""
        text = f"machine slowed (a {kind}reference run at {self.pace:.0%} of its best here)"
        return text.replace("%", " %")

    def _stolen_text(self) -> str:
        return f"time stolen by the host ({self.stolen:.0%} of its CPU)".replace("%", " %")

    @property
    def flag(self) -> str:
        """What is wrong with it, or '' for a steady measurement on a quiet machine.

        >>> Measurement((1.0, 1.0), 1.0).flag
        'machine load unknown'
        """
        parts = []
        if self.wide:
            parts.append(f"spread {self.spread:.0%} (wide)".replace("%", " %"))
        if self.busy_machine:
            parts.append(f"machine busy (others {self.busy:.0%} of its CPU)".replace("%", " %"))
        if self.slowed:
            parts.append(self._slowed_text())
        if self.robbed:
            parts.append(self._stolen_text())
        if self.busy is None:
            parts.append("machine load unknown")
        return ", ".join(parts)

    @property
    def note(self) -> str:
        """One line for a figure or a readout: the rate (G/s), the spread and what the flag says."""
        text = f"{self.gcells:.3g} G/s, spread {self.spread:.0%}".replace("%", " %")
        if self.wide:
            text += " (wide)"
        if self.busy_machine:
            text += f", machine busy (others {self.busy:.0%} of its CPU)".replace("%", " %")
        elif self.busy is None:
            text += ", machine load unknown"
        if self.slowed:
            text += ", " + self._slowed_text()
        if self.robbed:
            text += ", " + self._stolen_text()
        if not self.trusted:
            text += ": not a steady measurement"
        return text


def flagged(measurements) -> list[str]:
    """The :attr:`Measurement.note` of each untrusted one of ``measurements`` (labels kept: a mapping
    gives ``"label: note"``), for a figure's or a text's warning.

    >>> flagged({"a": Measurement((1.0,) * 5, 1e9, 0.0), "b": Measurement((1.0,) * 5, 1e9, 0.9)})
    ['b: 1 G/s, spread 0 %, machine busy (others 90 % of its CPU): not a steady measurement']
    """
    items = measurements.items() if isinstance(measurements, Mapping) else ((None, m) for m in measurements)
    return [f"{k}: {m.note}" if k is not None else m.note for k, m in items if not m.trusted]


def time_repeats(run: Callable[[], object], synchronize: Callable[[], None], repeats: int,
                 cuda_events: bool = False, warmup: bool = True) -> tuple[float, ...]:
    """Seconds of ``repeats`` calls of ``run`` after one warm-up call: the timing primitive of
    :func:`measure_alternated` (call that, which applies the rule).

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


def _nothing() -> None:
    return None


def measure_alternated(runs: Mapping[str, Callable[[], object]], work, synchronize=None, *,
                       min_seconds: float = MIN_SECONDS, min_repeats: int = MIN_REPEATS,
                       max_repeats: int = MAX_REPEATS, cuda_events: bool = False,
                       warmup: bool = True, pace: Callable[[], PaceReading | float | None] | None = None,
                       ) -> dict[str, Measurement]:
    """Measure several runs by the rule (module contract), alternately: one :class:`Measurement` each.

    ``work``: the work of one call (one number for all, or a mapping by
    name); ``synchronize()`` waits for the device (default: nothing to wait
    for).  Each run is called once to warm up, then the runs are called in
    turn until every one has :data:`MIN_REPEATS` repeats lasting
    :data:`MIN_SECONDS` together (``min_repeats``, ``min_seconds``), at most
    ``max_repeats``.  The load is sampled over the whole interval; ``pace()``
    (module contract), where given, is asked before and after it: a
    :class:`PaceReading` (or a bare pace, a number), the lower kept.

    >>> ms = measure_alternated({"a": lambda: None, "b": lambda: None}, 1.0, min_seconds=0, min_repeats=3)
    >>> [(name, m.repeats) for name, m in ms.items()]
    [('a', 3), ('b', 3)]
    """
    min_repeats, max_repeats = int(min_repeats), int(max_repeats)
    if min_repeats < 1 or max_repeats < min_repeats:
        raise ValueError(f"min_repeats must be >= 1 and max_repeats >= min_repeats; got {min_repeats} and "
                         f"{max_repeats}")
    if not math.isfinite(min_seconds) or min_seconds < 0:
        raise ValueError(f"min_seconds must be a finite number >= 0; got {min_seconds}")
    sync = synchronize or _nothing
    if warmup:
        for run in runs.values():
            time_repeats(run, sync, 0, cuda_events)
    seconds: dict[str, list[float]] = {name: [] for name in runs}
    paces = [pace()] if pace is not None else []
    probe = LoadProbe().start()
    while True:
        done = min(len(s) for s in seconds.values())
        long_enough = min(sum(s) for s in seconds.values()) >= min_seconds
        if done >= max_repeats or (done >= min_repeats and long_enough):
            break
        for name, run in runs.items():
            seconds[name] += time_repeats(run, sync, 1, cuda_events, warmup=False)
    busy = probe.stop()
    readings = [p for p in (*paces, pace() if pace is not None else None) if p is not None]
    slowest = min(readings, key=lambda r: getattr(r, "pace", r), default=None)
    value, kind = getattr(slowest, "pace", slowest), getattr(slowest, "kind", None)
    works = work if isinstance(work, Mapping) else dict.fromkeys(runs, work)
    return {name: Measurement(tuple(s), float(works[name]), busy, value, kind, probe.stolen)
            for name, s in seconds.items()}


def measure(run: Callable[[], object], work: float, synchronize=None, **rule) -> Measurement:
    """Measure one run by the rule (:func:`measure_alternated` with one run; the same ``rule`` keywords).

    >>> m = measure(lambda: sum(range(1000)), 1000.0, min_seconds=0.01)
    >>> m.repeats >= 5 and sum(m.seconds) >= 0.01 and m.rate > 0
    True
    """
    return measure_alternated({"run": run}, work, synchronize, **rule)["run"]


def measure_backend(backend, algorithm: str, steps: int, repeats: int = MIN_REPEATS,
                    warmup: bool = True, min_seconds: float = MIN_SECONDS) -> Measurement:
    """Measure ``steps`` steps of ``backend`` (DiamondTorre: whole sweeps of its Nt, at least one) a repeat,
    by the rule (:func:`measure`; ``repeats`` at least, ``min_seconds`` together).

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
    return measure(run, float(steps) * float(np.prod(backend.shape)), backend.synchronize,
                   min_repeats=repeats, min_seconds=min_seconds, cuda_events=backend.name == "cuda",
                   warmup=warmup)
