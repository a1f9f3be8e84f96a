"""The CPU performance model: this machine's cache levels measured once, the working set deciding the bound.

Contract
--------
:class:`CPUNumbers` are this machine's numbers, measured once per machine
and software (:func:`cpu_numbers`) by the measurement rule
(:mod:`diamondlab.engine.measure.timing`) and kept in the tunings file of
the cache folder beside the auto-tuner's choices (key
``cpu|machine|<digest of the fingerprint>``, :mod:`diamondlab.caches`);
numbers whose measurement was flagged (a busy machine, a wide spread:
:attr:`CPUNumbers.flags`) are used, and said to be not steady, until a
later process finds the machine quiet and measures them anew:

- per level (L1, L2, L3 from the operating system's cache sizes, then
  memory) its capacity and the bandwidth of ``b += a`` on every thread
  with each thread's two arrays filling half of its share of the level
  (one parallel call repeating the pass, so no thread waits for another
  between passes);
- the in-cache rate of the update, per order and column depth ``nz``:
  every thread advancing its own small grid with the generated column
  update, the grid's two fields filling half of one core's L2 (the
  update's arithmetic and loads with every operand in cache), measured
  when a question first needs it;
- the time of one parallel region (threads started and joined): a
  stepwise step is one, a DiamondTorre stage one.

Each probe is measured by the rule and, while flagged, again (at most
:data:`PROBE_TRIES` times, the fastest kept: other processes only slow a
probe down).

:func:`predict_cpu` puts them together for a run (:class:`CPUPrediction`):

- **working set.**  Stepwise: both fields of the whole grid, streamed every
  step.  DiamondTorre: the torre's tile working set per thread, the z
  columns of two successive tiers and the stencil's reach around them
  (:func:`torre_columns`, from the tile's cells), both fields.  The level
  that bounds it is the first whose capacity (a private level's per core,
  a shared one's divided among the threads) holds it.
- **rates.**  ``compute``: the in-cache rate (DiamondTorre: the
  stages' torres dealt to the threads in contiguous blocks, as ``prange``
  does, so an uneven stage costs its longest block).  ``level``: that
  level's bandwidth over the 12 bytes an update moves there.  DiamondTorre
  also moves ``4 / locality`` bytes an update between sweeps from the
  level holding the whole grid (paper 000, section 5).  The time of an
  update is the largest of the parts that overlap in a core
  (:data:`IN_CORE`: the in-cache rate, whose probe has its operands in L1
  and L2, and the traffic of those levels) plus the time of the traffic
  from beyond a core's L2 (L3, memory), which does not overlap: the core
  stalls on those misses, as in the execution-cache-memory (ECM) model.
  Stepwise at 256^3, NO=2, on the 2-core EPYC VM of BENCHMARKS.md: the
  update's 6.8 G/s in cache and 12 bytes at 50 GB/s give 2.58 G/s,
  measured 2.52 (taking the slower part alone gave 4.2).  Then one
  parallel region a step (stepwise) or a stage (DiamondTorre).
- **bound.**  The name of the largest part: ``"compute-bound"``,
  ``"L2-bound"``, ``"L3-bound"``, ``"memory-bound"``.

A machine whose cache sizes the operating system does not give falls back
to 32 KiB, 1 MiB and 8 MiB (said in :attr:`CPUNumbers.source`).

The measurement rule's *pace* probes (:func:`pace_reading`) are here too,
one a kind of bound, every thread timed on its own: ``"compute"`` (each
thread's own stencil in L1), ``"cache"`` (``b += a`` in the shared last
cache) and ``"memory"`` (``b += a`` past it).  :func:`pace_kind` gives a
run the kind of the level its grid lives in, and past the caches of its
bound by the model above; each kind's highest rates on this machine are
kept in the tunings file (:func:`pace_key`).
"""

from __future__ import annotations

import functools
import math
import os
from dataclasses import dataclass, field

import numpy as np

from diamondlab import caches
from diamondlab.engine.measure.timing import MIN_SECONDS, Measurement, PaceReading, measure
from diamondlab.geometry.locality import locality
from diamondlab.geometry.tiles import DiamondTile
from diamondlab.numerics import validate_order

__all__ = [
    "BYTES_PER_UPDATE", "PACE_KINDS", "VARIANTS", "CPUNumbers", "CPUPrediction", "Level", "cache_sizes",
    "compute_rate", "cpu_numbers", "machine_key", "machine_pace", "measure_levels", "pace_key", "pace_kind",
    "pace_reading", "predict_cpu", "torre_columns",
]

#: The parts of a run's time that overlap (the largest counts): the in-cache rate's, measured with the
#: operands in a core's L1 and L2, and those levels' traffic.  Traffic from beyond a core's L2 (L3,
#: memory) adds to it: a core stalls on those misses (module contract).
IN_CORE = ("compute", "L1", "L2")
#: Bytes a cell update moves at the level holding its data: read F, read and write G.
BYTES_PER_UPDATE = 12.0
#: The probes: bytes one call of a level's probe moves, bytes of the memory probe's arrays, cell updates
#: of one call of the in-cache probe, and the rule's least time (tests shrink them).
PROBE_TRAFFIC = 4e8
PROBE_MEMORY = 2.0**28
PROBE_UPDATES = 2e7
PROBE_SECONDS = MIN_SECONDS
#: Times a probe is measured while its measurement is flagged (other processes only ever slow a probe
#: down: the fastest of the tries is kept).
PROBE_TRIES = 2


def _probe(run, work: float) -> Measurement:
    """A probe measured by the rule, again while flagged (at most :data:`PROBE_TRIES`), the fastest kept."""
    best = None
    for _ in range(PROBE_TRIES):
        m = measure(run, work, min_seconds=PROBE_SECONDS)
        best = m if best is None or m.rate > best.rate else best
        if m.trusted:
            return m
    return best


@dataclass(frozen=True)
class Level:
    """One level of the hierarchy: capacity (bytes; per core where ``private``) and bandwidth (bytes/s of
    all the threads together)."""

    name: str
    capacity: float
    bandwidth: float
    private: bool = True


@dataclass
class CPUNumbers:
    """This machine's measured numbers (module contract); ``compute`` maps ``"NO,nz"`` to updates/s of
    all the threads in cache."""

    name: str
    threads: int
    levels: tuple[Level, ...]
    region_seconds: float
    compute: dict = field(default_factory=dict)
    source: str = "measured"
    flags: tuple[str, ...] = ()  # what was wrong with a probe's measurement (busy machine, wide spread)

    def level_for(self, nbytes: float, per_thread: bool) -> Level:
        """The first level that holds ``nbytes`` (one thread's share where ``per_thread``)."""
        for level in self.levels[:-1]:
            room = level.capacity if level.private else level.capacity / (self.threads if per_thread else 1)
            if nbytes <= room:
                return level
        return self.levels[-1]

    def to_json(self) -> dict:
        return {"name": self.name, "threads": self.threads, "region_seconds": self.region_seconds,
                "levels": [[lv.name, lv.capacity, lv.bandwidth, lv.private] for lv in self.levels],
                "compute": dict(self.compute), "source": self.source, "flags": list(self.flags)}

    @classmethod
    def from_json(cls, data: dict) -> CPUNumbers:
        levels = tuple(Level(str(n), float(c), float(b), bool(p)) for n, c, b, p in data["levels"])
        if len(levels) < 2 or any(lv.bandwidth <= 0 for lv in levels):
            raise ValueError("fewer than two levels, or a bandwidth <= 0")
        return cls(str(data["name"]), int(data["threads"]), levels, float(data["region_seconds"]),
                   {str(k): float(v) for k, v in data.get("compute", {}).items()},
                   str(data.get("source", "measured")), tuple(data.get("flags", ())))


@dataclass(frozen=True)
class CPUPrediction:
    """A predicted rate (cell updates/s), the bound that set it, and its parts (updates/s each)."""

    rate: float
    bound: str
    working_set: float
    level: str
    parts: dict

    def describe(self) -> str:
        """``"4.1 G/s, L2-bound (working set 690 KiB in L2)"``.

        >>> CPUPrediction(4.1e9, "compute-bound", 7.1e5, "L2", {}).describe()
        '4.1 G/s, compute-bound (working set 693 KiB, in L2)'
        """
        ws = self.working_set
        size = f"{ws / 2**20:.3g} MiB" if ws >= 2**20 else f"{ws / 2**10:.0f} KiB"
        return f"{self.rate / 1e9:.3g} G/s, {self.bound} (working set {size}, in {self.level})"


def cache_sizes() -> tuple[dict[str, tuple[float, bool]], str]:
    """``({"L1": (bytes, private), "L2": ..., "L3": ...}, source)`` of this machine's data caches.

    From ``/sys/devices/system/cpu/cpu0/cache`` (a level shared by more than
    one CPU counts as shared), else the fallback of the module contract.
    """
    found: dict[str, tuple[float, bool]] = {}
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        for entry in sorted(e for e in os.listdir(base) if e.startswith("index")):
            path = os.path.join(base, entry)
            with open(os.path.join(path, "type")) as fh:
                kind = fh.read().strip()
            if kind not in ("Data", "Unified"):
                continue
            with open(os.path.join(path, "level")) as fh:
                level = int(fh.read())
            with open(os.path.join(path, "size")) as fh:
                text = fh.read().strip()
            with open(os.path.join(path, "shared_cpu_list")) as fh:
                cpus = fh.read()
            shared = "," in cpus or "-" in cpus
            scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:], 1)
            found[f"L{level}"] = (float(int(text.rstrip("KMG")) * scale), not shared)
    except (OSError, ValueError):
        found = {}
    if all(f"L{i}" in found for i in (1, 2, 3)):
        return found, "measured; cache sizes from /sys"
    return ({"L1": (32.0 * 2**10, True), "L2": (2.0**20, True), "L3": (8.0 * 2**20, False)},
            "measured; cache sizes unknown here, 32 KiB, 1 MiB and 8 MiB assumed")


@functools.cache
def _repeat_add_parallel():
    from numba import njit, prange, uint64

    @njit(parallel=True, cache=False)
    def add_into(a, b, threads, reps):
        chunk = uint64(a.size // threads)
        for t in prange(threads):
            lo = uint64(t) * chunk
            for _ in range(reps):
                for i in range(lo, lo + chunk):  # unsigned: no wrap-around check, the loop vectorises
                    b[i] += a[i]

    return add_into


@functools.cache
def _region():
    from numba import njit, prange

    @njit(parallel=True, cache=False)
    def touch(out):
        for t in prange(out.size):
            out[t] += 1.0

    return touch


def measure_levels(sizes: dict[str, tuple[float, bool]], threads: int, traffic: float | None = None,
                   memory_bytes: float | None = None) -> tuple[list[Level], list[Measurement]]:
    """Each level's bandwidth: ``b += a`` on ``threads`` threads, each thread's arrays half its share.

    ``traffic``: bytes a call moves (passes repeated within the call; default :data:`PROBE_TRAFFIC`);
    memory: ``memory_bytes`` in all (default :data:`PROBE_MEMORY`).
    """
    traffic, memory_bytes = traffic or PROBE_TRAFFIC, memory_bytes or PROBE_MEMORY
    kernel = _repeat_add_parallel()
    out, probes = [], []
    for name, (capacity, private) in [*sizes.items(), ("memory", (math.inf, False))]:
        share = capacity if private else capacity / threads
        per_thread = memory_bytes / threads if math.isinf(capacity) else share / 2
        n = max(64, int(per_thread // 8)) * threads  # two float32 arrays: 8 bytes an element
        a, b = np.ones(n, dtype=np.float32), np.zeros(n, dtype=np.float32)
        reps = max(1, int(traffic / (12 * n)))
        m = _probe(functools.partial(kernel, a, b, threads, reps), 12.0 * n * reps)
        out.append(Level(name, capacity, m.rate, private))
        probes.append(m)
    return out, probes


#: The pace probes (:func:`pace_reading`), one a kind of bound (:data:`PACE_KINDS`): the ``"compute"``
#: probe's arrays per thread (float32 elements, two of them: 16 KiB, in any core's L1), the ``"memory"``
#: probe's two arrays in all (bytes: past the last cache level, in the memory that a virtual machine's
#: neighbours share too; the ``"cache"`` probe's fill half the largest cache level), the timed calls of
#: a probe (the median counts), the seconds of one call, and how many of the highest rates a probe has
#: given here are kept (the lowest of them is its best: one lucky reading does not raise it).
PACE_KINDS = ("compute", "cache", "memory")
PACE_L1_FLOATS = 2048
PACE_BYTES = 2.0**26
PACE_CALLS = 5
PACE_CALL_SECONDS = 0.04
PACE_TOP = 2


@functools.cache
def _pace_kernels():
    """One thread's work of each pace probe, compiled without the GIL (each probe thread times its own)."""
    from numba import njit, uint64

    half, quarter = np.float32(0.5), np.float32(0.25)

    @njit(nogil=True, cache=False)
    def compute(x, y, reps):  # a 3-point stencil there and back in L1: loads, FMAs, stores; ones stay ones
        n = uint64(x.size - 1)
        for _ in range(reps):
            for i in range(uint64(1), n):
                y[i] = half * x[i] + quarter * (x[i - 1] + x[i + 1])
            for i in range(uint64(1), n):
                x[i] = half * y[i] + quarter * (y[i - 1] + y[i + 1])

    @njit(nogil=True, cache=False)
    def memory(a, b, reps):  # b += a over this thread's share of the arrays
        for _ in range(reps):
            for i in range(uint64(a.size)):
                b[i] += a[i]

    return {"compute": compute, "stream": memory}


def _threads_seconds(kernel, arrays, reps: int) -> list[float]:
    """Each thread's own seconds of ``kernel(*arrays[t], reps)``, all started together (one a thread)."""
    import threading
    import time

    n = len(arrays)
    seconds = [0.0] * n
    start = threading.Barrier(n)

    def work(t: int) -> None:
        start.wait()
        t0 = time.perf_counter()
        kernel(*arrays[t], reps)
        seconds[t] = time.perf_counter() - t0

    pool = [threading.Thread(target=work, args=(t,), daemon=True) for t in range(n)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    return seconds


def _capacity_levels() -> tuple[Level, ...]:
    """This machine's levels from the operating system's cache sizes alone (no bandwidth measured: 0)."""
    sizes, _ = cache_sizes()
    return (*(Level(name, capacity, 0.0, private) for name, (capacity, private) in sizes.items()),
            Level("memory", math.inf, 0.0, False))


def pace_key(kind: str, threads: int) -> str:
    """The tunings file's key of the highest rates ``kind``'s pace probe has given on ``threads`` here.

    >>> pace_key("compute", 2).startswith("cpu|pace-compute|")
    True
    """
    return machine_key(threads).replace("|machine|", f"|pace-{kind}|", 1)


def _best_rates(entry) -> list[float]:
    """The highest rates kept in a pace record (a damaged one: none)."""
    top = entry.get("top") if isinstance(entry, dict) else None
    if not isinstance(top, list):
        return []
    return sorted((float(v) for v in top if isinstance(v, (int, float)) and v > 0), reverse=True)[:PACE_TOP]


def pace_reading(kind: str = "compute", threads: int | None = None) -> PaceReading:
    """This machine's pace now for runs bound by ``kind`` (:data:`PACE_KINDS`), on ``threads`` threads
    (default: Numba's): a :class:`~diamondlab.engine.measure.timing.PaceReading` for the measurement
    rule's ``pace`` probe (:func:`~diamondlab.engine.measure.timing.measure_alternated`).

    Every thread does the same fixed work, started together, and times it
    itself: ``"compute"`` a 3-point stencil over its own two arrays of
    :data:`PACE_L1_FLOATS` (in L1: the arithmetic, loads and stores of an
    in-cache update, nothing from beyond a core), ``"cache"`` ``b += a``
    over its share of half the largest cache level (the shared L3 that a
    virtual machine's neighbours on the same chip fill too), ``"memory"``
    ``b += a`` over its share of :data:`PACE_BYTES`.  A call's rate is its
    slowest thread's (a parallel region waits for it): one vCPU that the
    host shares out makes the whole call slow, as it does the measured
    run.  The call's *balance* is its fastest thread's time over its
    slowest's: it needs no record, so it holds on a machine's first probe
    too.  It counts for the compute probe alone: threads that share a
    cache or the memory are uneven on a quiet machine too (0.6-0.9 on the
    2-core EPYC VM), threads each in their own core's L1 are not.

    There are :data:`PACE_CALLS` timed calls of about
    :data:`PACE_CALL_SECONDS` (the work sized from warm-up calls), 0.2 s
    in all, as long as the rule's repeats; the *median* call counts, not
    the fastest.  A host that shares a vCPU gives it slices of some
    milliseconds: the fastest of several calls is the one that fell
    between them and reads the machine at its best while the runs beside
    it are slow (BENCHMARKS.md, "the pace probe reads the wrong bound");
    the median is slow when most of the time is.

    ``pace`` is the lower of the median call's rate over this kind's best
    here and (compute) the median balance.  The best is the lowest of the
    :data:`PACE_TOP` highest medians this kind of probe has given on as
    many threads (kept in the cache folder: :func:`pace_key`; fewer kept:
    the highest), so that one reading at a lucky moment does not make
    every later one read slow; the first call on a machine is its own
    reference.

    >>> r = pace_reading("compute", 1)
    >>> r.kind, 0.0 < r.pace <= 1.0, r.balance
    ('compute', True, 1.0)
    """
    if kind not in PACE_KINDS:
        raise ValueError(f"kind must be one of {PACE_KINDS}; got {kind!r}")
    threads = int(threads or _threads())
    if kind == "compute":
        arrays = [(np.ones(PACE_L1_FLOATS, np.float32), np.ones(PACE_L1_FLOATS, np.float32))
                  for _ in range(threads)]
        work, reps = 2.0 * (PACE_L1_FLOATS - 2), 64  # cell updates of one rep
    else:
        total = PACE_BYTES if kind == "memory" else max(lv.capacity for lv in _capacity_levels()[:-1]) / 2
        n = max(64, int(total // 8 // threads))
        arrays = [(np.ones(n, np.float32), np.zeros(n, np.float32)) for _ in range(threads)]
        work, reps = 12.0 * n, 1  # bytes of one rep
    kernel = _pace_kernels()["compute" if kind == "compute" else "stream"]
    _threads_seconds(kernel, arrays, 1)  # compiled, the pages touched
    warm = max(_threads_seconds(kernel, arrays, reps))
    while warm < PACE_CALL_SECONDS / 8:  # the threads' start weighs nothing in a call of this length
        reps = reps * min(64, max(2, math.ceil(PACE_CALL_SECONDS / 4 / max(warm, 1e-9))))
        warm = max(_threads_seconds(kernel, arrays, reps))
    reps = max(1, round(reps * PACE_CALL_SECONDS / warm))
    rates, balances = [], []
    for _ in range(PACE_CALLS):
        seconds = _threads_seconds(kernel, arrays, reps)
        rates.append(work * reps / max(max(seconds), 1e-9))
        balances.append(min(seconds) / max(max(seconds), 1e-9))
    rate, balance = float(np.median(rates)), float(np.median(balances))
    key = pace_key(kind, threads)
    path = caches.cache_root() / caches.TUNINGS
    top = _best_rates(caches.read_json(path).get(key))
    if len(top) < PACE_TOP or rate > top[-1]:
        caches.record_entry(path, "tunings")

        def update(data: dict) -> None:
            data[key] = {"top": sorted([*_best_rates(data.get(key)), rate], reverse=True)[:PACE_TOP]}

        top = _best_rates(caches.update_json(path, update).get(key)) or [rate]
    best = top[-1] if len(top) >= PACE_TOP else top[0]  # fewer kept: the highest
    held = balance if kind == "compute" else 1.0  # threads sharing a cache or memory are uneven anyway
    return PaceReading(kind, min(1.0, rate / best, held), rate, best, balance)


def machine_pace(threads: int | None = None, kind: str = "memory") -> float:
    """This machine's pace now (:func:`pace_reading`'s ``pace``): 1.0 at its best; less where something
    slows it that no process of it shows (a virtual machine's host and its other guests: BENCHMARKS.md,
    "diamondlab bench on the CPU five times").

    >>> 0.0 < machine_pace(kind="compute") <= 1.0
    True
    """
    return pace_reading(kind, threads).pace


def pace_kind(algorithm: str, order: int, shape, size: int = 1, nt: int = 1, variant: str = "constant",
              cell_bytes: float | None = None, numbers: CPUNumbers | None = None) -> str:
    """Which pace probe (:data:`PACE_KINDS`) a run's measurement takes: the level its grid lives in, and
    past the caches the bound the CPU model gives it.

    The grid's fields (``cell_bytes`` a cell with the stencil's halo: 8,
    F and G, or 12 with a model's K; a Maxwell grid's fields give their
    own) in a core's own levels (L1, L2): ``"compute"``, the core's
    arithmetic and its own caches.  In the shared last level (L3):
    ``"cache"``.  The model calls such runs compute-bound (the tile, or
    the grid, is in cache), but on a virtual machine the L3 is the chip's,
    shared with the host's other guests, and the runs' rate follows it:
    on the 2-core EPYC VM a 64^3 DiamondTorre run followed the L3 probe
    more than the L1 one (correlations 0.36 and 0.23 against 0.25 and
    0.10 over 150 s, issue 29), though neither closely.  Past the
    last cache the model decides (:func:`predict_cpu`, the measured
    ``numbers``; default :func:`cpu_numbers`): ``"memory"`` where it names
    the run memory-bound (stepwise over a large grid), else ``"compute"``
    (DiamondTorre's tile in cache, its sweeps' traffic to memory small).
    A Maxwell run (``cell_bytes`` given: the model has no Yee scheme) past
    the caches is ``"memory"``.  Within the caches the capacities alone
    decide (:func:`cache_sizes`), so these runs measure nothing here.

    >>> n = CPUNumbers("test", 2, (Level("L1", 32e3, 400e9), Level("L2", 1e6, 200e9),
    ...                Level("L3", 32e6, 100e9, private=False), Level("memory", math.inf, 30e9, False)),
    ...                region_seconds=0.0, compute={"2,256,constant": 6e9})
    >>> [pace_kind("stepwise", 2, (n_, n_, n_), numbers=n) for n_ in (16, 64, 256)]
    ['compute', 'cache', 'memory']
    >>> pace_kind("diamondtorre", 2, (256, 256, 256), 12, 48, numbers=n)
    'compute'
    """
    shape = tuple(int(v) for v in shape)
    h = validate_order(order) // 2
    variant = "model" if variant == "layered" else variant
    per_cell = float(cell_bytes) if cell_bytes is not None else 12.0 if variant == "model" else 8.0
    grid_bytes = per_cell * math.prod(v + 2 * h for v in shape)
    levels = numbers.levels if numbers is not None else _capacity_levels()
    room = CPUNumbers("capacities", 1, levels, 0.0)  # the whole grid: a shared level's whole capacity
    level = room.level_for(grid_bytes, per_thread=False)
    if level.name != levels[-1].name:
        return "compute" if level.private else "cache"
    if cell_bytes is not None:
        return "memory"
    bound = predict_cpu(algorithm, order, shape, size, nt, numbers or cpu_numbers(), variant=variant).bound
    return "memory" if bound == "memory-bound" else "compute"


#: The kernels' media the in-cache rate is measured for (a layered model runs as ``"model"`` on the CPU).
VARIANTS = ("constant", "sponge", "model")


@functools.cache
def _in_cache_kernel(order: int, variant: str):
    """Every thread advancing its own small grid (``F[t]``, ``G[t]``) ``steps`` steps with the generated
    column update of ``variant``, in one parallel region: the update's rate with every operand in each
    core's cache.  ``K``: the sponge's one number, or the model's per-cell values (``K[t]``); the damping
    profiles are ones, so a constant field stays constant."""
    from numba import njit, prange, uint64

    from diamondlab.kernels.cpu import cpu_kernels

    column = getattr(cpu_kernels(order), f"column_{variant}")
    shs = validate_order(order) // 2

    def flat(F, t):
        return F[t].reshape(F[t].size)

    flat = njit(flat)

    if variant == "constant":
        @njit(parallel=True, cache=False)
        def run(F, G, K, profile, steps, coeffs):
            for t in prange(F.shape[0]):
                f, g = flat(F, t), flat(G, t)
                sx, sy, nzh = uint64(F.shape[2] * F.shape[3]), uint64(F.shape[3]), uint64(F.shape[3] - shs)
                for s in range(steps):
                    a, b = (f, g) if s % 2 == 0 else (g, f)
                    for x in range(shs, F.shape[1] - shs):
                        for y in range(shs, F.shape[2] - shs):
                            column(a, b, uint64(x) * sx + uint64(y) * sy, sx, sy, nzh, *coeffs)
    elif variant == "sponge":
        @njit(parallel=True, cache=False)
        def run(F, G, K, profile, steps, coeffs):
            for t in prange(F.shape[0]):
                f, g, one = flat(F, t), flat(G, t), profile[0]
                sx, sy, nzh = uint64(F.shape[2] * F.shape[3]), uint64(F.shape[3]), uint64(F.shape[3] - shs)
                for s in range(steps):
                    a, b = (f, g) if s % 2 == 0 else (g, f)
                    for x in range(shs, F.shape[1] - shs):
                        for y in range(shs, F.shape[2] - shs):
                            column(a, b, K[0, 0, 0, 0], profile, profile, one, one,
                                   uint64(x) * sx + uint64(y) * sy, sx, sy, nzh, *coeffs)
    else:
        @njit(parallel=True, cache=False)
        def run(F, G, K, profile, steps, coeffs):
            for t in prange(F.shape[0]):
                f, g, k, one = flat(F, t), flat(G, t), flat(K, t), profile[0]
                sx, sy, nzh = uint64(F.shape[2] * F.shape[3]), uint64(F.shape[3]), uint64(F.shape[3] - shs)
                for s in range(steps):
                    a, b = (f, g) if s % 2 == 0 else (g, f)
                    for x in range(shs, F.shape[1] - shs):
                        for y in range(shs, F.shape[2] - shs):
                            column(a, b, k, profile, profile, one, one,
                                   uint64(x) * sx + uint64(y) * sy, sx, sy, nzh, *coeffs)

    return run


def _in_cache_rate(order: int, nz: int, l2: float, threads: int, variant: str = "constant") -> Measurement:
    """The update's rate on ``threads`` cores with every operand in cache (module contract)."""
    from diamondlab.numerics import WaveParameters, bare_weights

    h = validate_order(order) // 2
    per_cell = 12 if variant == "model" else 8
    side = max(2, min(32, int(math.sqrt(l2 / 2 / ((nz + 2 * h) * per_cell))) - 2 * h))
    fields = np.ones((threads, side + 2 * h, side + 2 * h, int(nz) + 2 * h), np.float32)  # stays constant
    other, kappa = fields.copy(), fields.copy() * np.float32(0.1)
    profile = np.ones(int(nz) + 2 * h, np.float32)
    weights = WaveParameters(order=order).coefficients if variant == "constant" else bare_weights(order)
    coeffs = tuple(np.float32(c) for c in weights)
    steps = max(2, int(PROBE_UPDATES // (side * side * nz)))  # ~10 ms a call: a region's start weighs nothing
    run = _in_cache_kernel(order, variant)
    return _probe(functools.partial(run, fields, other, kappa, profile, steps, coeffs),
                  float(threads * side * side * nz * steps))


def machine_key(threads: int) -> str:
    """The tunings file's key of this machine's numbers (fingerprint digest and threads)."""
    record = caches.fingerprint("cpumodel-1")
    record["threads"] = int(threads)
    return f"cpu|machine|{caches.digest(record)}"


_numbers: dict[int, CPUNumbers] = {}


def _threads() -> int:
    import numba

    return int(numba.get_num_threads())


def _store(numbers: CPUNumbers) -> None:
    key = machine_key(numbers.threads)
    path = caches.cache_root() / caches.TUNINGS
    caches.record_entry(path, "tunings")

    def update(data: dict) -> None:
        data[key] = {"numbers": numbers.to_json(), "fingerprint": caches.fingerprint("cpumodel-1")}

    caches.update_json(path, update)


def _quiet_now(seconds: float = 0.2) -> bool:
    """Whether other processes leave the machine quiet now (this one idles ``seconds`` to see)."""
    import time

    from diamondlab.engine.measure.timing import BUSY_SHARE, LoadProbe

    probe = LoadProbe().start()
    time.sleep(seconds)
    share = probe.stop()
    return share is not None and share <= BUSY_SHARE


def cpu_numbers(refresh: bool = False, threads: int | None = None) -> CPUNumbers:
    """This machine's numbers for ``threads`` (default: Numba's): from this process, the cache folder,
    or measured now and stored there (module contract).  ``refresh`` measures anew."""
    threads = int(threads or _threads())
    if not refresh and threads in _numbers:
        return _numbers[threads]
    numbers = None
    if not refresh:
        entry = caches.read_json(caches.cache_root() / caches.TUNINGS).get(machine_key(threads))
        try:
            numbers = CPUNumbers.from_json(entry["numbers"])
        except (KeyError, TypeError, ValueError):
            numbers = None
        if numbers is not None and numbers.flags and _quiet_now():  # measured when busy, quiet now: anew
            numbers = None
    if numbers is None:
        sizes, source = cache_sizes()
        levels, probes = measure_levels(sizes, threads)
        touch = _region()
        out = np.zeros(threads)
        region = _probe(functools.partial(touch, out), 1.0)
        probes.append(region)
        name = f"{os.cpu_count()}-core {caches.cpu_description().get('model') or 'CPU'}, {threads} threads"
        flags = tuple(sorted({m.flag for m in probes if not m.trusted}))
        numbers = CPUNumbers(name, threads, tuple(levels), region.seconds_median, {}, source, flags)
        _store(numbers)
    _numbers[threads] = numbers
    return numbers


def compute_rate(numbers: CPUNumbers, order: int, nz: int, variant: str = "constant") -> float:
    """The in-cache rate of the update on all the threads at this order, column depth and medium
    variant (updates/s; measured once per machine, kept with its numbers)."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}; got {variant!r}")
    key = f"{order},{int(nz)},{variant}"
    if key not in numbers.compute:
        l2 = next((lv.capacity for lv in numbers.levels if lv.name == "L2"), numbers.levels[0].capacity)
        m = _in_cache_rate(order, nz, l2, numbers.threads, variant)
        numbers.compute[key] = m.rate
        if not m.trusted:
            numbers.flags = tuple(sorted({*numbers.flags, m.flag}))
        if numbers.source.startswith("measured"):
            _store(numbers)
    return numbers.compute[key]


def torre_columns(order: int, size: int) -> int:
    """z columns one DiamondTorre touches over two successive tiers: both tiles (the second ``ShS``
    further in x) and the stencil's reach of ``ShS`` around them.

    >>> torre_columns(2, 1)  # two 2-cell tiles one apart: 3 cells in a row, 5 + 2 x 3 with the reach
    11
    """
    tile = DiamondTile(order, size)
    shs = tile.shs
    x, y = tile.cells()
    cells = set(zip(x.tolist(), y.tolist(), strict=True)) | {(a + shs, b) for a, b in zip(x, y, strict=True)}
    reach = set(cells)
    for a, b in cells:
        for d in range(1, shs + 1):
            reach |= {(a + d, b), (a - d, b), (a, b + d), (a, b - d)}
    return len(reach)


@functools.cache
def _stage_blocks(order: int, size: int, nt: int, nx: int, ny: int, threads: int) -> tuple[int, int, int]:
    """``(cells x tiers of the whole sweep, sum over stages of the longest thread's block, stages)``."""
    from diamondlab.geometry import DiamondTorre, StageSchedule

    sched = StageSchedule(DiamondTorre(DiamondTile(order, size), nt), nx, ny)
    work = sched.tier_cells().sum(axis=1)
    longest = 0
    for s in range(sched.nstages):
        torres = work[sched.stage_start[s]:sched.stage_start[s + 1]]
        longest += max((int(b.sum()) for b in np.array_split(torres, threads) if b.size), default=0)
    return int(work.sum()), longest, sched.nstages


def predict_cpu(algorithm: str, order: int, shape, size: int = 1, nt: int = 1,
                numbers: CPUNumbers | None = None, compute: float | None = None,
                variant: str = "constant") -> CPUPrediction:
    """Predicted rate of a run on this machine's cores (module contract).

    ``variant``: the kernels' medium (:data:`VARIANTS`; ``"layered"`` runs as ``"model"`` here): a
    model's per-cell ``K`` is 4 more bytes a cell in the working sets and an update (stepwise), or a
    cell and sweep (DiamondTorre).

    ``compute``: the in-cache rate of all the threads (updates/s) instead of measuring it (tests).

    >>> n = CPUNumbers("test", 2, (Level("L1", 32e3, 400e9), Level("L2", 1e6, 200e9),
    ...                Level("L3", 32e6, 100e9, private=False), Level("memory", math.inf, 30e9, False)),
    ...                region_seconds=0.0)
    >>> p = predict_cpu("stepwise", 2, (256, 256, 256), numbers=n, compute=6e9)
    >>> p.bound, round(p.rate / 1e9, 2)  # 134 MB of fields: 12 B at 30 GB/s added to 6 G/s in cache
    ('memory-bound', 1.76)
    >>> predict_cpu("diamondtorre", 2, (256, 256, 256), 12, 48, n, compute=6e9).bound
    'compute-bound'
    """
    shape = tuple(int(v) for v in shape)
    h = validate_order(order) // 2
    numbers = numbers or cpu_numbers()
    threads = numbers.threads
    nx, ny, nz = shape
    variant = "model" if variant == "layered" else variant
    in_cache = compute if compute is not None else compute_rate(numbers, order, nz, variant)
    per_cell = 12.0 if variant == "model" else 8.0  # bytes of a cell in the working set: F, G (and K)
    grid_bytes = per_cell * math.prod(v + 2 * h for v in shape)
    grid_level = numbers.level_for(grid_bytes, per_thread=False)
    cells = float(math.prod(shape))
    if algorithm == "stepwise":
        working_set, level = grid_bytes, grid_level
        seconds = {"compute": cells / in_cache,
                   level.name: cells * (BYTES_PER_UPDATE + per_cell - 8.0) / level.bandwidth}
        overhead = numbers.region_seconds  # a step is one parallel region
        updates = cells
    elif algorithm == "diamondtorre":
        working_set = per_cell * torre_columns(order, size) * (nz + 2 * h)
        level = numbers.level_for(working_set, per_thread=True)
        total, longest, stages = _stage_blocks(order, size, nt, nx, ny, threads)
        updates = float(total) * nz  # a sweep
        seconds = {"compute": float(longest) * threads * nz / in_cache,
                   level.name: updates * BYTES_PER_UPDATE / level.bandwidth}
        outer = 4.0 / locality("torre_row", order=order, size=size, nt=nt) + (per_cell - 8.0) / nt
        between = updates * outer / grid_level.bandwidth  # the sweep's traffic to the level of the grid
        seconds[grid_level.name] = max(seconds.get(grid_level.name, 0.0), between)
        overhead = stages * numbers.region_seconds
    else:
        raise ValueError(f"algorithm must be 'stepwise' or 'diamondtorre'; got {algorithm!r}")
    part = max(seconds, key=seconds.get)
    inside = max(v for k, v in seconds.items() if k in IN_CORE)  # overlapped: the in-cache probe's own
    rate = updates / (inside + sum(v for k, v in seconds.items() if k not in IN_CORE) + overhead)
    parts = {k: updates / v for k, v in seconds.items() if v > 0}
    bound = "compute-bound" if part == "compute" else f"{part}-bound"
    return CPUPrediction(rate, bound, working_set, level.name, parts)
