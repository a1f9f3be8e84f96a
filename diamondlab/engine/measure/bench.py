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
    "ALGORITHMS", "UPDATE_UNITS", "YEE_SCENE_PARTS", "BlockLevel", "ThreadLevel", "TuningRow", "best",
    "bench_models", "block_sweep", "compare_algorithms", "measure_simulation", "pace_kinds", "random_start",
    "thread_sweep", "tuning_sweep", "yee_bench_scene",
]


def measure_simulation(sim, steps: int, repeats: int = MIN_REPEATS, warmup: bool = True,
                       min_seconds: float = MIN_SECONDS, *, pace_kind: str | None = None) -> Measurement:
    """Measure calls of ``sim.run(steps)`` by the rule (at least ``repeats``, lasting ``min_seconds``
    together) after a warm-up of one sweep (or ``steps``); on the CPU with the machine's pace around it,
    measured by the probe of the run's own bound (``pace_kind``; default :func:`pace_kinds` of ``sim``)."""
    if warmup:
        sim.run(min(int(steps), sim.nt))
    kinds = (pace_kind,) if pace_kind is not None else pace_kinds(sim)
    return measure(lambda: sim.run(steps), float(steps) * sim.cells, min_repeats=repeats,
                   min_seconds=min_seconds, warmup=False, pace=_pace_probe(sim.backend_name, kinds=kinds))


def pace_kinds(*sims) -> tuple[str, ...]:
    """The pace probes (:data:`~diamondlab.engine.measure.cpumodel.PACE_KINDS`) that runs of ``sims``
    measured together take: each CPU run's bound as the CPU model gives it
    (:func:`~diamondlab.engine.measure.cpumodel.pace_kind`: ``"compute"`` with the grid in a core's own
    caches, ``"cache"`` in the shared last cache, ``"memory"`` where the model calls it memory-bound),
    once each; ``()`` for runs on another backend (a GPU's rate does not follow the host's cores).

    >>> sims = [Simulation((16, 16, 8), 2, backend="cpu", algorithm=a) for a in ALGORITHMS]
    >>> pace_kinds(*sims)  # a grid in cache: both in the cores, one probe
    ('compute',)
    """
    from diamondlab.engine.measure.cpumodel import pace_kind

    kinds = []
    for sim in sims:
        if sim.backend_name != "cpu":
            continue
        maxwell = getattr(sim, "equation", "acoustic") == "maxwell"
        variant = "constant" if maxwell else sim.physics.medium_variant
        kinds.append(pace_kind(sim.algorithm, sim.params.order, sim.shape, sim.size, sim.nt, variant,
                               cell_bytes=24.0 if maxwell else None))  # E and H: six floats a cell
    return tuple(dict.fromkeys(kinds))


def _pace_probe(backend: str, threads: int | None = None, kinds=("compute",)):
    """The rule's ``pace`` probe for runs on ``backend`` bound by ``kinds``: on the CPU the lowest of
    :func:`~diamondlab.engine.measure.cpumodel.pace_reading` of each kind, else None (a GPU's rate does
    not follow the host's cores)."""
    if backend != "cpu" or not kinds:
        return None
    from diamondlab.engine.measure.cpumodel import pace_reading

    def pace():
        return min((pace_reading(kind, threads) for kind in kinds), key=lambda r: r.pace)

    return pace


#: Seconds a timed DiamondTorre run lasts at least when ``steps`` is not given (a run of 2 sweeps of a
#: 256^3 grid on a GPU takes 2-3 ms, where the books of a run, its last wait and its checks weigh).
MIN_RUN_SECONDS = 0.2

#: Most sweeps a timed run takes to last :data:`MIN_RUN_SECONDS`.
MAX_RUN_SWEEPS = 64


#: The two algorithms a bench compares, in the order of their columns.
ALGORITHMS = ("diamondtorre", "stepwise")

#: What a cell update is called in each equation's rates ("G cell updates/s", "G Yee cell updates/s").
UPDATE_UNITS = {"acoustic": "cell updates", "maxwell": "Yee cell updates"}

#: The parts of :func:`yee_bench_scene`, all of them by default.
YEE_SCENE_PARTS = ("drude", "pml", "tfsf", "dipole")


def yee_bench_scene(shape, parts=YEE_SCENE_PARTS) -> dict:
    """Keyword arguments of a Maxwell :class:`~diamondlab.engine.run.simulation.Simulation`: the bench's
    physics scene (``diamondlab bench --equation maxwell --medium physics``, ``.ci/maxwell-bench.py
    --physics``): a Drude sphere, a 12-cell CPML, a TFSF plane wave around it, a dipole and a probe;
    ``parts`` a subset of :data:`YEE_SCENE_PARTS`, to see what each costs.

    >>> scene = yee_bench_scene((48, 48, 48))
    >>> scene["pml"], len(scene["materials"]), len(scene["sources"]), len(scene["probes"])
    (12, 1, 2, 1)
    >>> yee_bench_scene((48, 48, 48), ("pml",))
    {'materials': [], 'sources': [], 'pml': 12}
    """
    from diamondlab.maxwell import Dipole, Drude, GaussianPulse, PlaneWave, Probe, Sphere

    unknown = [p for p in parts if p not in YEE_SCENE_PARTS]
    if unknown:
        raise ValueError(f"parts must be some of {YEE_SCENE_PARTS}; got {unknown[0]!r}")
    c = tuple(n // 2 for n in shape)
    box = ((16, 16, 16), tuple(n - 17 for n in shape))
    scene = dict(materials=[], sources=[], pml=12 if "pml" in parts else 0)
    if "drude" in parts:
        scene["materials"] = [Sphere(c, min(shape) // 6, Drude(1.0, 1.0, 0.05))]
    if "dipole" in parts:
        scene["sources"].append(Dipole((c[0] - min(shape) // 4, *c[1:]), "Ez", GaussianPulse(0.1, 0.05)))
        scene["probes"] = [Probe(c, "Ez")]
    if "tfsf" in parts:
        scene["sources"].append(PlaneWave("+x", "z", GaussianPulse(0.08, 0.04), box))
    return scene


def random_start(shape, equation: str = "acoustic", rng=None) -> tuple[np.ndarray, np.ndarray]:
    """Random float32 fields, standard normal, to start a run from: ``(u^{n-1}, u^n)`` of the acoustic
    equation, ``(E, H)`` (``(3, nx, ny, nz)`` each) of Maxwell's (cheap on any grid, and a strong test
    of the bit-for-bit check).

    >>> [a.shape for a in random_start((4, 3, 2), "maxwell")], random_start((4, 3, 2))[0].dtype
    ([(3, 4, 3, 2), (3, 4, 3, 2)], dtype('float32'))
    """
    rng = np.random.default_rng(0) if rng is None else rng
    layer = tuple(shape) if equation == "acoustic" else (3, *shape)
    return tuple(rng.standard_normal(layer, dtype=np.float32) for _ in range(2))


def _check_bench(equation: str, orders, algorithms) -> None:
    """Refuse, before any work, an equation, order or algorithm a bench cannot run."""
    from diamondlab.engine.equations import EQUATIONS
    from diamondlab.maxwell.scheme import YEE_ORDERS
    from diamondlab.numerics import SUPPORTED_ORDERS

    if equation not in EQUATIONS:
        raise ValueError(f"equation must be one of {EQUATIONS}; got {equation!r}")
    allowed = YEE_ORDERS if equation == "maxwell" else SUPPORTED_ORDERS
    bad = [o for o in orders if o not in allowed]
    if bad or not orders:
        raise ValueError(f"orders must be some of {allowed} for equation={equation!r}; got {list(orders)}")
    if not algorithms or len(set(algorithms)) != len(algorithms) or not set(algorithms) <= set(ALGORITHMS):
        raise ValueError(f"algorithms must be one or both of {ALGORITHMS}; got {algorithms!r}")


def compare_algorithms(shape, orders, backend="auto", courant=None, size=None, nt=None, steps=None,
                       repeats=MIN_REPEATS, progress=False, *, equation="acoustic", algorithms=ALGORITHMS,
                       configure=None, initial=None, **physics) -> list[dict]:
    """DiamondTorre against stepwise per order on one grid in this process: one dict row per order.

    Both start from the same random fields (:func:`random_start`) and are
    measured alternately by the rule
    (:func:`~diamondlab.engine.measure.timing.measure_alternated`,
    at least ``repeats`` runs each), runs of ``steps``
    steps (default: whole sweeps, at least 2, as many as make a DiamondTorre
    run last :data:`MIN_RUN_SECONDS`, at most :data:`MAX_RUN_SWEEPS`, from a
    timed sweep after the warm-up; 2 sweeps for MPI ranks); ``physics``
    (acoustic: ``velocity``, ``sponge``, ``sources``, ``receivers``, ``backend_options``; Maxwell: the
    scene's ``materials``, ``sources``, ``probes``, ``pml``, ... e.g. :func:`yee_bench_scene`; both:
    ``comm``/``halo`` for MPI ranks or ``window`` for a calculation window)
    goes to both simulations; ``progress=True`` shows a tqdm bar.  Under MPI
    every rank calls it (the runs and the bit-for-bit check are collective).

    ``equation="maxwell"``: Maxwell's equations on the Yee grid, orders 2 and 4, rates in G Yee cell
    updates/s (:data:`UPDATE_UNITS`).  ``algorithms``: one of :data:`ALGORITHMS` alone times only it (no
    ratio, no bit-for-bit check: None).  ``configure(sim)`` is called on each simulation once built,
    before any run (e.g. a backend's speed attributes).  ``initial``: the starting fields (default
    :func:`random_start`; one made once serves several calls on one grid).

    A row holds per algorithm its median rate (G/s, under the algorithm's name), ``"rate_range"`` (the
    slowest and fastest repeat's), ``"seconds"`` (the repeats) and ``"spreads"``; ``"spread"`` the wider
    spread, ``"busy"`` the machine's load, ``"pace"`` its pace (CPU runs; else None) and ``"pace_kind"``
    the bound of its probe (:func:`pace_kinds`, the lower reading's), ``"stolen"`` the host's share of the
    CPU (None: unknown), ``"flag"`` what is wrong with either measurement ('' for none), ``"ratio"``
    DiamondTorre over stepwise and ``"bit_equal"`` whether their fields agree bit for bit.  Bad
    ``equation``, ``orders`` or ``algorithms``: a ValueError before any work.

    >>> rows = compare_algorithms((12, 12, 12), [2], "cpu", steps=4, repeats=1, equation="maxwell")
    >>> r = rows[0]
    >>> r["equation"], r["bit_equal"], r["diamondtorre"] > 0, r["stepwise"] > 0, r["variant"]
    ('maxwell', True, True, True, 'plain')
    """
    from tqdm.auto import tqdm

    from diamondlab.kernels.cuda import simulator_enabled

    algorithms = tuple(algorithms)
    _check_bench(equation, orders, algorithms)
    initial = random_start(shape, equation) if initial is None else initial
    bar = tqdm(total=len(orders) * (repeats + 1), unit="run", desc="bench", disable=not progress)
    rows = []
    for order in orders:
        bar.set_postfix_str(f"NO={order}: setting up")
        sims = {
            alg: Simulation(shape, order, size=size, nt=nt, courant=courant, backend=backend, algorithm=alg,
                            initial=initial, equation=equation, **physics)
            for alg in algorithms
        }  # fmt: skip
        for sim in sims.values():
            if configure is not None:
                configure(sim)
        ref = sims.get("diamondtorre") or sims["stepwise"]
        n = steps or 2 * ref.nt
        bar.set_postfix_str(f"NO={order}: compiling, warming up")
        for sim in sims.values():
            sim.run(min(n, ref.nt))
        if steps is None and ref.plan.ranks == 1:  # long enough that a run's fixed costs do not weigh
            sweep = ref.run(ref.nt).seconds
            for sim in sims.values():  # all at one level again, for the bit-for-bit check
                if sim is not ref:
                    sim.run(ref.nt)
            n = ref.nt * min(MAX_RUN_SWEEPS, max(2, math.ceil(MIN_RUN_SECONDS / max(sweep, 1e-9))))
        bar.update()
        bar.set_postfix_str(f"NO={order}: timing")
        runs = {alg: functools.partial(sim.run, n) for alg, sim in sims.items()}
        # MPI ranks run collectively: each takes exactly ``repeats`` (one stopping early would hang the rest)
        collective = {} if ref.plan.ranks == 1 else {"min_seconds": 0.0, "max_repeats": repeats}
        kinds = pace_kinds(*sims.values())  # decided once: the bounds the CPU model gives these runs
        measured = measure_alternated(runs, float(n) * ref.cells, min_repeats=repeats, warmup=False,
                                      pace=_pace_probe(ref.backend_name, kinds=kinds), **collective)
        bar.update(repeats)
        first = measured[algorithms[0]]
        flag = "; ".join(f"{alg}: {m.flag}" for alg, m in measured.items() if not m.trusted) or (
            first.flag if first.busy is None else "")
        both = len(sims) == 2
        same = both and all(np.array_equal(a, b) for a, b in zip(
            sims["stepwise"].fields, sims["diamondtorre"].fields, strict=True))
        launch = None
        if equation == "acoustic" and "diamondtorre" in sims and ref.plan.device_shape == ref.plan.shape and (
                ref.plan.ranks == 1 and ref.backend_name == "cuda" and not simulator_enabled()):
            launch = cuda_backend_efficiency(ref.backend)  # the whole grid in one launch
        physics_of = ref.physics
        variant = (physics_of.medium_variant if equation == "acoustic"
                   else "drude" if physics_of.drude else "plain")
        rows.append({
            "equation": equation, "order": order, "dts": ref.size, "nt": ref.nt, "steps": n,
            **{alg: m.gcells for alg, m in measured.items()},
            "ratio": measured["diamondtorre"].rate / measured["stepwise"].rate if both else None,
            "spread": max(m.spread for m in measured.values()),
            "spreads": {alg: m.spread for alg, m in measured.items()},
            "repeats": min(m.repeats for m in measured.values()),
            "busy": first.busy, "pace": first.pace, "pace_kind": first.pace_kind, "stolen": first.stolen,
            "flag": flag, "variant": variant,
            "seconds": {alg: list(m.seconds) for alg, m in measured.items()},
            "rate_range": {alg: [m.work / max(m.seconds) / 1e9, m.work / min(m.seconds) / 1e9]
                           for alg, m in measured.items()},
            "bit_equal": same if both else None,
            "backend": ref.backend_name, "options": dict(getattr(ref.backend, "options", {})),
            "launch": launch,
        })  # fmt: skip
        if ref.plan.window is not None:  # what DiamondTorre's sweeps move across the bus
            rows[-1].update(window=ref.plan.window, window_traffic=ref.backend.traffic())
    bar.close()
    return rows


def bench_models(row: dict, shape, device=None) -> dict:
    """The model of each algorithm of a :func:`compare_algorithms` row (a
    :class:`~diamondlab.engine.measure.perfmodel.Model` each, in the row's units).

    The GPU's roofline on ``device`` (:class:`~diamondlab.engine.measure.perfmodel.DeviceNumbers`,
    measured): :func:`~diamondlab.engine.measure.perfmodel.predict`, or for Maxwell
    :func:`~diamondlab.engine.measure.perfmodel.predict_yee` (bytes a Yee cell update from the tile
    geometry, the Drude current's with a Drude medium); without a device the CPU model
    (:func:`~diamondlab.engine.measure.perfmodel.model_for`), which has no Yee scheme: a Maxwell row's
    models then are NaN, named "no model", with the bytes of the tile geometry still given.

    >>> row = {"equation": "maxwell", "order": 2, "dts": 1, "nt": 4, "backend": "cpu", "variant": "plain"}
    >>> m = bench_models(row, (12, 12, 12))["stepwise"]
    >>> m.bound, m.bytes_per_update
    ('no model: the CPU model has no Yee scheme', 78.0)
    """
    from diamondlab.engine.measure.perfmodel import Model, model_for, predict, predict_yee

    out = {}
    maxwell = row.get("equation", "acoustic") == "maxwell"
    for alg in ALGORITHMS:
        if maxwell:
            drude = row.get("variant") == "drude"
            p = predict_yee(alg, row["order"], row["dts"], row["nt"], drude=drude,
                            **({} if device is None else {"device": device}))
            out[alg] = (Model(p.rate, f"{p.bound}-bound", p.bytes_per_update) if device is not None else
                        Model(float("nan"), "no model: the CPU model has no Yee scheme", p.bytes_per_update))
        elif device is not None:
            p = predict(alg, row["order"], row["dts"], row["nt"], device)
            out[alg] = Model(p.rate, f"{p.bound}-bound", p.bytes_per_update)
        else:
            out[alg] = model_for(alg, row["order"], shape, row["dts"], row["nt"], row["backend"],
                                 row.get("variant", "constant"))
    return out


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
    kinds = pace_kinds(*sims.values())  # the grid's bounds, decided once for every thread count
    before = numba.get_num_threads()
    rows = []
    try:
        for count in counts:
            numba.set_num_threads(count)
            for sim in sims.values():  # warm up (compile) at this thread count
                sim.run(n)
            ms = measure_alternated({a: functools.partial(sim.run, n) for a, sim in sims.items()},
                                    float(n) * sims["stepwise"].cells, min_repeats=repeats, warmup=False,
                                    pace=_pace_probe("cpu", count, kinds))
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
