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
"""

from __future__ import annotations

import functools
import math
import os
from dataclasses import dataclass, field

import numpy as np

from diamondlab import caches
from diamondlab.engine.measure.timing import MIN_SECONDS, Measurement, measure
from diamondlab.geometry.locality import locality
from diamondlab.geometry.tiles import DiamondTile
from diamondlab.numerics import validate_order

__all__ = [
    "BYTES_PER_UPDATE", "VARIANTS", "CPUNumbers", "CPUPrediction", "Level", "cache_sizes", "cpu_numbers",
    "compute_rate", "machine_key", "machine_pace", "measure_levels", "predict_cpu", "torre_columns",
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


#: The pace probe (:func:`machine_pace`): bytes of its two arrays (past the last cache level, in the memory
#: that a virtual machine's neighbours share too) and its timed calls (the fastest counts).
PACE_BYTES = 2.0**26
PACE_CALLS = 5


def machine_pace(threads: int | None = None) -> float:
    """This machine's pace now, for the measurement rule's ``pace`` probe
    (:func:`~diamondlab.engine.measure.timing.measure_alternated`): ``b += a`` over :data:`PACE_BYTES` on
    ``threads`` threads (default: Numba's), the fastest of :data:`PACE_CALLS` calls, over the fastest this
    machine has given it (kept in the cache folder beside its numbers; a faster one raises it).

    1.0 at its best; less where something slows the machine that no process of it shows (a virtual
    machine's host and its other guests: BENCHMARKS.md, "diamondlab bench on the CPU five times").  The
    first call on a machine is its own reference.

    >>> 0.0 < machine_pace() <= 1.0
    True
    """
    import time

    threads = int(threads or _threads())
    n = max(64, int(PACE_BYTES // 8 // threads)) * threads
    a, b = np.ones(n, dtype=np.float32), np.zeros(n, dtype=np.float32)
    kernel = _repeat_add_parallel()
    kernel(a, b, threads, 1)  # compiled, the pages touched
    fastest = math.inf
    for _ in range(PACE_CALLS):
        t0 = time.perf_counter()
        kernel(a, b, threads, 1)
        fastest = min(fastest, time.perf_counter() - t0)
    rate = 12.0 * n / max(fastest, 1e-9)
    key = machine_key(threads).replace("|machine|", "|pace|", 1)
    path = caches.cache_root() / caches.TUNINGS

    def stored(data: dict) -> float:
        entry = data.get(key)
        value = entry.get("best") if isinstance(entry, dict) else None
        return float(value) if isinstance(value, (int, float)) and value > 0 else 0.0

    best = stored(caches.read_json(path))
    if rate > best:
        caches.record_entry(path, "tunings")
        caches.update_json(path, lambda data: data.__setitem__(key, {"best": max(rate, stored(data))}))
        best = rate
    return min(1.0, rate / best)


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
