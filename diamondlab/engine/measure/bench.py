"""Benchmarks of whole runs: simulations timed as a user runs them, algorithms compared, tuning sweeps.

Contract
--------
Everything here times :class:`~diamondlab.engine.run.simulation.Simulation`
runs by the one measurement rule (:mod:`diamondlab.engine.measure.timing`:
repeats until a minimum time and count, the median, the spread and the
machine's load, a flag where they do not hold still):
``diamondlab bench`` (:func:`compare_algorithms`), the lab's Tuning panel
(:func:`tuning_sweep`), the parallel levels of paper 000's Fig. 10
(:func:`thread_sweep`, :func:`block_sweep`) and the watch-cost benchmark
(:mod:`diamondlab.widgets.bench`).  :func:`measure_simulation` times whole
:meth:`Simulation.run <diamondlab.engine.run.simulation.Simulation.run>`
calls (what a user gets, sources, receivers and the finite check included);
every row keeps its :class:`~diamondlab.engine.measure.timing.Measurement`, so that what shows it
can say when it is flagged.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from diamondlab.engine.measure.launchmodel import cuda_backend_efficiency
from diamondlab.engine.measure.timing import (
    MIN_REPEATS,
    MIN_SECONDS,
    Measurement,
    measure,
    measure_alternated,
)
from diamondlab.engine.run.plan import RunPlan
from diamondlab.engine.run.simulation import Simulation

__all__ = [
    "BlockLevel", "ThreadLevel", "TuningRow", "best", "block_sweep", "compare_algorithms",
    "measure_simulation", "thread_sweep", "tuning_sweep",
]


def measure_simulation(sim, steps: int, repeats: int = MIN_REPEATS, warmup: bool = True,
                       min_seconds: float = MIN_SECONDS) -> Measurement:
    """Measure calls of ``sim.run(steps)`` by the rule (at least ``repeats``, lasting ``min_seconds``
    together) after a warm-up of one sweep (or ``steps``)."""
    if warmup:
        sim.run(min(int(steps), sim.nt))
    return measure(lambda: sim.run(steps), float(steps) * sim.cells, min_repeats=repeats,
                   min_seconds=min_seconds, warmup=False)


#: Seconds a timed DiamondTorre run lasts at least when ``steps`` is not given (a run of 2 sweeps of a
#: 256^3 grid on a GPU takes 2-3 ms, where the books of a run, its last wait and its checks weigh).
MIN_RUN_SECONDS = 0.2

#: Most sweeps a timed run takes to last :data:`MIN_RUN_SECONDS`.
MAX_RUN_SWEEPS = 64


def compare_algorithms(shape, orders, backend="auto", courant=None, size=None, nt=None, steps=None,
                       repeats=MIN_REPEATS, progress=False, **physics) -> list[dict]:
    """DiamondTorre against stepwise per order on one grid in this process: one dict row per order.

    Both start from the same random fields (cheap to make on any grid, and a
    strong test of the bit-for-bit check) and are measured alternately by
    the rule (:func:`~diamondlab.engine.measure.timing.measure_alternated`,
    at least ``repeats`` runs each), runs of ``steps``
    steps (default: whole sweeps, at least 2, as many as make a DiamondTorre
    run last :data:`MIN_RUN_SECONDS`, at most :data:`MAX_RUN_SWEEPS`, from a
    timed sweep after the warm-up; 2 sweeps for MPI ranks); ``physics``
    (``velocity``, ``sponge``, ``sources``, ``receivers``, ``backend_options``,
    and ``comm``/``halo`` for MPI ranks or ``window`` for a calculation window)
    goes to both simulations; ``progress=True`` shows a tqdm bar.  Under MPI
    every rank calls it (the runs and the bit-for-bit check are collective).
    A row's ``"seconds"`` holds the two measurements' repeats, its
    ``"spread"`` the wider spread, ``"busy"`` the machine's load and ``"flag"`` what is
    wrong with either ('' for none).
    """
    from tqdm.auto import tqdm

    from diamondlab.kernels.cuda import simulator_enabled

    rng = np.random.default_rng(0)
    initial = tuple(rng.standard_normal(tuple(shape), dtype=np.float32) for _ in range(2))
    bar = tqdm(total=len(orders) * (repeats + 1), unit="run", desc="bench", disable=not progress)
    rows = []
    for order in orders:
        bar.set_postfix_str(f"NO={order}: setting up")
        sims = {
            alg: Simulation(shape, order, size=size, nt=nt, courant=courant, backend=backend, algorithm=alg,
                            initial=initial, **physics)
            for alg in ("diamondtorre", "stepwise")
        }  # fmt: skip
        dt_sim = sims["diamondtorre"]
        n = steps or 2 * dt_sim.nt
        bar.set_postfix_str(f"NO={order}: compiling, warming up")
        for sim in sims.values():
            sim.run(min(n, dt_sim.nt))
        if steps is None and dt_sim.plan.ranks == 1:  # long enough that a run's fixed costs do not weigh
            sweep = dt_sim.run(dt_sim.nt).seconds
            sims["stepwise"].run(dt_sim.nt)  # both at one level again, for the bit-for-bit check
            n = dt_sim.nt * min(MAX_RUN_SWEEPS, max(2, math.ceil(MIN_RUN_SECONDS / max(sweep, 1e-9))))
        bar.update()
        bar.set_postfix_str(f"NO={order}: timing")
        runs = {alg: functools.partial(sim.run, n) for alg, sim in sims.items()}
        # MPI ranks run collectively: each takes exactly ``repeats`` (one stopping early would hang the rest)
        collective = {} if dt_sim.plan.ranks == 1 else {"min_seconds": 0.0, "max_repeats": repeats}
        measured = measure_alternated(runs, float(n) * dt_sim.cells, min_repeats=repeats, warmup=False,
                                      **collective)
        bar.update(repeats)
        dt, sw = measured["diamondtorre"], measured["stepwise"]
        flag = "; ".join(f"{alg}: {m.flag}" for alg, m in measured.items() if not m.trusted) or (
            dt.flag if dt.busy is None else "")
        same = all(np.array_equal(a, b) for a, b in zip(sims["stepwise"].fields, dt_sim.fields, strict=True))
        launch = None
        if dt_sim.plan.device_shape == dt_sim.plan.shape and dt_sim.plan.ranks == 1 and (
                dt_sim.backend_name == "cuda" and not simulator_enabled()):  # the whole grid in one launch
            launch = cuda_backend_efficiency(dt_sim.backend)
        rows.append({
            "order": order, "dts": dt_sim.size, "nt": dt_sim.nt, "steps": n, "diamondtorre": dt.gcells,
            "stepwise": sw.gcells, "ratio": dt.rate / sw.rate, "spread": max(dt.spread, sw.spread),
            "spreads": {alg: m.spread for alg, m in measured.items()}, "repeats": min(dt.repeats, sw.repeats),
            "busy": dt.busy, "flag": flag, "variant": dt_sim.physics.medium_variant,
            "seconds": {alg: list(m.seconds) for alg, m in measured.items()}, "bit_equal": same,
            "backend": dt_sim.backend_name, "options": dict(dt_sim.backend.options),
            "launch": launch,
        })  # fmt: skip
        if dt_sim.plan.window is not None:  # what DiamondTorre's sweeps move across the bus
            rows[-1].update(window=dt_sim.plan.window, window_traffic=dt_sim.backend.traffic())
    bar.close()
    return rows


@dataclass(frozen=True)
class TuningRow:
    """One measured configuration: rates in G cell updates per second, and the spread of the repeats."""

    algorithm: str
    order: int
    size: int
    nt: int
    measured: float
    model: float
    note: str = ""
    spread: float = 0.0
    measurement: Measurement | None = None

    @property
    def label(self) -> str:
        """What was run, in words: stepwise has no tile.

        >>> TuningRow("stepwise", 2, 0, 0, 1.0, 2.0).label, TuningRow("diamondtorre", 4, 2, 8, 1.0, 2.0).label
        ('stepwise NO=2', 'DiamondTorre NO=4 DTS=2 Nt=8')
        """
        if self.algorithm == "stepwise":
            return f"stepwise NO={self.order}"
        return f"DiamondTorre NO={self.order} DTS={self.size} Nt={self.nt}"

    @property
    def flag(self) -> str:
        """What is wrong with its measurement ('' for a steady one, or none kept)."""
        return "" if self.measurement is None or self.measurement.trusted else self.measurement.flag


def tuning_sweep(shape, orders: Iterable[int] = (2,), sizes: Iterable[int] = (1, 2, 4),
                 nts: Iterable[int] = (4, 8, 16), backend: str = "cpu", steps: int | None = None,
                 repeats: int = MIN_REPEATS, progress: Callable[[str], None] | None = None,
                 stop: Callable[[], bool] | None = None,
                 model: Callable[[str, int, int, int, str], float] | None = None,
                 equation: str = "acoustic") -> list[TuningRow]:
    """Stepwise once per NO, then DiamondTorre per (DTS, Nt), on one grid: one :class:`TuningRow` each.

    Each is :func:`measure_simulation` of ``max(Nt, steps)`` steps (default:
    one sweep), at least ``repeats`` times (the rule), from the same small random fields.
    ``model(algorithm, order, size, nt, backend, shape=shape)`` gives a row's model rate
    (G/s; default 0, e.g. :func:`diamondlab.engine.measure.perfmodel.predicted_rate`).
    Combinations the backend refuses are skipped with their reason
    (``progress`` is told); ``stop()`` returning True ends the sweep early
    (what was measured is returned).  ``equation="maxwell"``: Maxwell runs of the Yee order (vacuum, no
    boundary layer, from small random ``E`` and ``H``), rates in G Yee cell updates/s.
    """

    from diamondlab.engine.equations import EQUATIONS

    if equation not in EQUATIONS:  # before any run: a refused Simulation is a skipped row below
        raise ValueError(f"equation must be one of {EQUATIONS}; got {equation!r}")
    rows: list[TuningRow] = []
    say = progress or (lambda text: None)
    rng = np.random.default_rng(0)
    if equation == "maxwell":
        init = tuple(rng.standard_normal((3, *shape), dtype=np.float32) * np.float32(1e-3) for _ in "EH")
    else:
        init = rng.standard_normal(tuple(shape), dtype=np.float32) * np.float32(1e-3)
    for order in orders:
        jobs = [("stepwise", 1, max(nts))] + [("diamondtorre", s, t) for s in sizes for t in nts]
        for algorithm, size, nt in jobs:
            if stop is not None and stop():
                return rows
            try:
                sim = Simulation(shape, order, size=size, nt=nt, backend=backend, algorithm=algorithm,
                                 initial=init, equation=equation)
            except (ValueError, RuntimeError, TypeError) as err:
                say(f"NO={order} DTS={size} Nt={nt}: skipped ({err})")
                continue
            m = measure_simulation(sim, max(nt, steps or nt), repeats)
            dt = algorithm == "diamondtorre"
            rate = model(algorithm, order, size, nt, sim.backend_name, shape=tuple(shape)) if model else 0.0
            row = TuningRow(algorithm, order, size if dt else 0, nt if dt else 0, m.gcells, rate,
                            spread=m.spread, measurement=m)
            rows.append(row)
            say(f"{row.label}: {m.note}; model {rate:.3g}")
    return rows


class ThreadLevel(NamedTuple):
    """One point of :func:`thread_sweep`: G cell updates/s of both algorithms at a thread count."""

    threads: int
    diamondtorre: float
    stepwise: float
    flag: str = ""  # what is wrong with either measurement ('' for steady ones on a quiet machine)


def thread_sweep(shape, order: int = 2, size: int | None = None, nt: int | None = None,
                 threads: Iterable[int] | None = None, steps: int | None = None,
                 repeats: int = MIN_REPEATS) -> list[ThreadLevel]:
    """The CPU engine's rate against its parallel level, the number of threads (paper 000, Fig. 10).

    For each thread count (default 1, 2, 4, ... up to Numba's), both algorithms run ``steps`` (default
    two sweeps) on ``shape`` from the same random fields, measured alternately by the rule (at least
    ``repeats`` times); returns :class:`ThreadLevel` rows.  Numba's thread count is restored afterwards.

    >>> rows = thread_sweep((16, 16, 8), size=1, nt=2, threads=[1], repeats=1)
    >>> [(n, dt > 0, sw > 0) for n, dt, sw, flag in rows]
    [(1, True, True)]
    """
    import numba


    most = numba.config.NUMBA_NUM_THREADS
    counts = sorted({min(n, most) for n in (threads or [2**k for k in range(most.bit_length())] + [most])})
    if counts[0] < 1:
        raise ValueError(f"threads must be >= 1; got {counts[0]}")
    init = np.random.default_rng(0).standard_normal(tuple(shape), dtype=np.float32) * np.float32(1e-3)
    sims = {a: Simulation(shape, order, size=size, nt=nt, backend="cpu", algorithm=a, initial=init)
            for a in ("diamondtorre", "stepwise")}
    n = steps or 2 * sims["diamondtorre"].nt
    before = numba.get_num_threads()
    rows = []
    try:
        for count in counts:
            numba.set_num_threads(count)
            for sim in sims.values():  # warm up (compile) at this thread count
                sim.run(n)
            ms = measure_alternated({a: functools.partial(sim.run, n) for a, sim in sims.items()},
                                    float(n) * sims["stepwise"].cells, min_repeats=repeats, warmup=False)
            flag = "; ".join(f"{a}: {m.flag}" for a, m in ms.items() if not m.trusted)
            rows.append(ThreadLevel(count, ms["diamondtorre"].gcells, ms["stepwise"].gcells, flag))
    finally:
        numba.set_num_threads(before)
    return rows


@dataclass(frozen=True)
class BlockLevel:
    """One point of :func:`block_sweep`: a grid whose stages hold ``torres`` blocks of ``threads``."""

    shape: tuple[int, int, int]
    torres: int  # torres of a stage, ny / 2R: blocks in flight under one launch per stage (every other
    #              stage holds one more, a boundary torre)
    threads: int  # threads of a block (one z each; warps = threads / 32)
    diamondtorre: float  # G cell updates/s, medians
    stepwise: float


def block_sweep(order: int = 2, size: int | None = None, nt: int | None = None, torres=None,
                depths=(64, 256, 512), nx: int = 256, steps: int | None = None,
                repeats: int = MIN_REPEATS) -> list[BlockLevel]:
    """The CUDA engine's rate against its parallel level, blocks and threads (paper 000, Fig. 10, as the
    paper ran it on the GPU).

    The sweep runs the paper's scheme, one launch per stage
    (``backend_options={"launch": "per-stage"}``), so that the blocks in flight
    are the torres of one stage, ``ny / (2 R)`` (every other stage holds one
    more, cut by the boundary), and a block holds the
    z column, one thread a cell.  For each column depth ``nz`` in ``depths``
    (threads a block, from 2 warps up) and each count of torres a stage in
    ``torres`` (default 1, 2, 4, ... up to twice the multiprocessors), a grid of
    ``nx x (torres 2 R) x nz`` runs both algorithms (stepwise as the same
    grid's reference), ``repeats`` timed runs of ``steps`` (default two sweeps).
    DTS and Nt default to the engine's for a ``nx x 64 x nz`` grid.
    """
    from diamondlab.devices import current_gpu

    gpu = current_gpu()
    if torres is None:
        most = 2 * (gpu.multiprocessors if gpu else 4)
        torres = sorted({2**k for k in range(most.bit_length())} | {most // 2, most})
    rows = []
    for nz in depths:
        plan = RunPlan.build((nx, 64, nz), order, size=size, nt=nt, backend="cuda", algorithm="diamondtorre")
        for count in torres:
            shape = (nx, int(count) * plan.params.order * plan.size, int(nz))  # 2 R = NO DTS rows a torre
            init = np.random.default_rng(0).standard_normal(shape, dtype=np.float32) * np.float32(1e-3)
            rates = {}
            for algorithm in ("diamondtorre", "stepwise"):
                options = {"launch": "per-stage"} if algorithm == "diamondtorre" else {}
                sim = Simulation(shape, order, size=plan.size, nt=plan.nt, backend="cuda",
                                 algorithm=algorithm, initial=init, backend_options=options)
                rates[algorithm] = measure_simulation(sim, steps or 2 * plan.nt, repeats).gcells
            rows.append(BlockLevel(shape, int(count), int(nz), rates["diamondtorre"], rates["stepwise"]))
    return rows


def best(rows: list[TuningRow]) -> TuningRow | None:
    """The fastest measured DiamondTorre row (None when there is none)."""
    dt = [r for r in rows if r.algorithm == "diamondtorre"]
    return max(dt, key=lambda r: r.measured) if dt else None
