"""CUDA backend: the two fields on the GPU, advanced by :mod:`diamondlab.kernels.cuda`.

Contract: see :mod:`diamondlab.engine.backends`.  The fields are flat
float32 device arrays of exactly ``nx * ny * nz`` cells each (no halo); they
stay on the device between calls and are copied to the host only by
:meth:`CUDABackend.fields`.  Besides them the backend holds only the stage
schedules (a few ints per torre) and the sweep's completion flags, far under
one percent of the fields; with physics also the sponge's 1D profiles, the
source and receiver events and, for a velocity model only, one more field
(``K`` per cell).

Everything the backend cannot run raises ``ValueError`` in the constructor,
before any device memory is taken: an (NO, DTS) pair the engine does not
build, ``nz`` above :data:`~diamondlab.kernels.cuda.MAX_NZ`, a shape whose two
fields do not fit the GPU's free memory.  Without a usable GPU the
constructor raises ``RuntimeError`` with :meth:`CUDABackend.unavailable_reason`.

Importing this module does not import numba.cuda; the first method that needs
the GPU does.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from diamondlab.devices import cuda_tuning, current_gpu
from diamondlab.engine.backends import Backend
from diamondlab.geometry import DiamondTile, DiamondTorre, StageSchedule
from diamondlab.kernels.cuda_source import MEDIUM_VALUES
from diamondlab.kernels.points import point_tables
from diamondlab.media import Medium, damped_counts
from diamondlab.numerics import WaveParameters, bare_weights

__all__ = ["CUDABackend", "PointQueue", "SampleRing", "device_memory", "whole_torre_waits_starve"]

#: Whole-torre waits are the default only while the launch model keeps at least this share of the
#: resident blocks busy with them (on small grids a stage has fewer torres than the GPU has slots).
STARVED_LAUNCH = 0.75

#: Device memory kept free beside the two fields (schedules, flags, the CUDA context's needs).
MEMORY_MARGIN_BYTES = 256 * 2**20


@functools.lru_cache(maxsize=64)
def whole_torre_waits_starve(order: int, size: int, nt: int, shape, max_registers: int | None = None) -> bool:
    """Whether whole-torre waits leave the GPU idle on ``shape`` where tier-level waits would not.

    The launch model (:func:`~diamondlab.engine.measure.launchmodel.sweep_efficiency`) replays one
    sweep on the blocks the device holds (from the kernel's register cap and shared memory):
    True when whole-torre waits keep less than :data:`STARVED_LAUNCH` of them busy and
    tier-level waits (stage by stage, a wait every tier) keep a fifth more.  At 256^3, NO=8
    DTS=1 whole-torre waits keep 25 % busy and ran at 40 G/s, tier-level waits 97 % and 155
    G/s (H100, BENCHMARKS.md); on the 2 GiB grid both keep all busy.

    >>> starve = whole_torre_waits_starve
    >>> starve(8, 1, 16, (256, 256, 256)), starve(8, 1, 16, (128, 2048, 256))
    (True, False)
    """
    from diamondlab.devices import H100
    from diamondlab.engine.measure.launchmodel import resident_blocks, sweep_efficiency
    from diamondlab.kernels.cuda import sweep_block, sweep_register_cap, sweep_shared_bytes

    nz = int(shape[2])
    cap = sweep_register_cap(order, size, nz, max_registers) or 255
    slots = resident_blocks(cap, sweep_block(nz), sweep_shared_bytes(order, size, nz) + 16,
                            arch=current_gpu() or H100)
    radius = order // 2 * size
    if slots == 0 or int(shape[1]) // (2 * radius) >= STARVED_LAUNCH * slots:
        return False  # a stage alone fills the slots: no replay needed (it costs seconds on big grids)
    whole = sweep_efficiency(order, size, nt, shape, slots)
    tiered = sweep_efficiency(order, size, nt, shape, slots, True, None, 1)
    return whole < STARVED_LAUNCH and tiered > 1.2 * whole


class SampleRing:
    """Source samples of queued launches, copied up without stopping the GPU.

    Samples go up through a ring of ``ring`` pinned host buffers, each
    copied asynchronously on ``stream`` (None: the default stream), the
    stream the kernels that read them run on, so each copy is ordered before
    its launch.  A buffer is refilled only once its previous copy has run, so
    at most ``ring`` launches queue ahead of the host.  A copy from pageable
    memory (``cuda.to_device`` of a NumPy array) would instead wait for every
    launch queued before it, and the GPU would idle while the host queues the
    next one.
    """

    def __init__(self, cuda, nsources: int, width: int, stream=None, ring: int = 8):
        self._cuda = cuda
        self._stream = cuda.default_stream() if stream is None else stream
        self._nsources, self._ring = nsources, ring
        self._events = [cuda.event() for _ in range(ring)]
        self._next, self._used = 0, []
        self._allocate(width)

    def _allocate(self, width: int) -> None:
        """(Re)allocate the ring for launches of up to ``width`` steps."""
        cuda = self._cuda
        if any(self._used):
            cuda.synchronize()
        self._width = width
        self._pinned = cuda.pinned_array((self._ring, self._nsources, width), dtype=np.float32)
        ring = cuda.device_array((self._ring, self._nsources, width), dtype=np.float32)
        self._device = [ring[j] for j in range(self._ring)]
        self._used = [False] * self._ring

    def probe(self):
        """A buffer of the right type for compiling (nothing is copied or reserved)."""
        return self._device[0]

    def upload(self, height: int, samples: np.ndarray | None):
        """Queue the copy of ``(n, height)`` samples (None: zeros; rows past ``n`` are zeros, and a ring
        of fewer rows grows to ``n``); their device buffer ``(rows, width)``, valid for the launches queued
        after this call on the ring's stream."""
        rows = 0 if samples is None else len(samples)
        if height > self._width or rows > self._nsources:
            self._nsources = max(self._nsources, rows)
            self._allocate(max(height, self._width))
        j, self._next = self._next, (self._next + 1) % self._ring
        if self._used[j]:
            self._events[j].synchronize()  # the copy queued a ring ago has run: its buffer is free
        host = self._pinned[j]
        host[rows:, :height] = 0.0
        if rows:
            host[:rows, :height] = samples
        self._device[j].copy_to_device(host, stream=self._stream)
        self._events[j].record(self._stream)
        self._used[j] = True
        return self._device[j]


class PointQueue:
    """Source samples and receiver values of queued sweeps, moved without stopping the GPU.

    Samples go up through a :class:`SampleRing` of :data:`RING` pinned host
    buffers.  Receiver values fill consecutive rows of one device buffer and
    come back only when :meth:`take` is called or the buffer is full: one
    copy for many sweeps instead of a wait per sweep.
    """

    RING = 8
    #: Device bytes for receiver rows before they are copied back (at least one sweep's rows).
    RECEIVER_BYTES = 16 * 2**20

    def __init__(self, cuda, nsources: int, nreceivers: int, width: int, stream=None):
        self._cuda = cuda
        self._nreceivers = nreceivers
        self._samples = SampleRing(cuda, nsources, width, stream, self.RING)
        # without receivers the kernels write no row: one buffer serves every sweep
        rows = max(width, min(16384, self.RECEIVER_BYTES // (4 * nreceivers))) if nreceivers else width
        self._rec = cuda.device_array((rows, max(nreceivers, 1)), dtype=np.float32)
        self._fill = 0
        self._taken: list[np.ndarray] = []

    def probe(self, height: int) -> tuple:
        """Buffers of the right types for compiling (nothing is copied or reserved)."""
        return self._samples.probe(), self._rec[:height]

    def queue(self, height: int, samples: np.ndarray | None) -> tuple:
        """Copy ``(nsources, height)`` samples (None: zeros) up; return them and ``height`` receiver rows."""
        if self._fill + height > len(self._rec):
            self._flush()
            if height > len(self._rec):
                self._rec = self._cuda.device_array((height, max(self._nreceivers, 1)), dtype=np.float32)
        src = self._samples.upload(height, samples)
        rec = self._rec[self._fill : self._fill + height]
        if self._nreceivers:
            self._fill += height
        return src, rec

    def _flush(self) -> None:
        if self._fill:
            self._taken.append(self._rec[: self._fill].copy_to_host())
            self._fill = 0

    def take(self) -> np.ndarray:
        """Every receiver row queued since the last call, ``(steps, nreceivers)`` (waits for the GPU)."""
        self._flush()
        rows, self._taken = self._taken, []
        return np.concatenate(rows) if rows else np.zeros((0, self._nreceivers), dtype=np.float32)


def device_memory() -> tuple[int, int]:
    """``(free, total)`` bytes of the current CUDA device."""
    from numba import cuda

    free, total = cuda.current_context().get_memory_info()
    return int(free), int(total)


#: How a sweep is launched: ``"sweep"`` one launch per sweep, torres waiting for their dependencies
#: (the default); ``"per-stage"`` one launch per stage, synchronised after whole stages (paper 000,
#: section 6: the teaching baseline).
LAUNCH_SCHEMES = ("sweep", "per-stage")


class CUDABackend(Backend):
    """Fields in GPU memory; stepwise and one-launch DiamondTorre sweeps in Numba-CUDA."""

    name = "cuda"
    OPTIONS = ("max_registers", "specialize", "left_from_memory", "pipelined", "band", "chunk", "launch",
               "kappa_in_registers", "boundary_profiles", "exchange_barrier", "prefetch")
    PEER_HALO = True

    @staticmethod
    def tuning():
        """The tuning tables of this machine's GPU (:func:`diamondlab.devices.cuda_tuning`)."""
        return cuda_tuning(current_gpu())

    @classmethod
    def launch_band(cls, order: int, size: int) -> int:
        """Torres per diagonal band of the tuned sweep of (``order``, ``size``) (0: stage by stage), as
        :meth:`check` takes it for a sweep with tier-level waits (no GPU needed: the stage explorer
        shows it).

        >>> CUDABackend.launch_band(2, 4), CUDABackend.launch_band(8, 1)
        (32, 0)
        """
        return (cls.tuning().pipelined.get((int(order), int(size))) or (0, 1))[0]

    @classmethod
    def default_tiling(cls, order: int, shape=None, medium: str = "constant") -> tuple[int, int]:
        """Default (DTS, Nt) for stencil order ``order``; with ``shape``, a DTS whose block holds nz;
        ``medium`` (a :attr:`~diamondlab.media.Medium.variant`): the tuning's tile for K per cell
        (``model_tiling``) or for any damped medium in the generic sweep (``damped_tiling``; a grid of
        ``specialise_min_cells`` or more runs the specialised sweep) where it has one; a grid smaller
        than the tuning's ``small_grid_nt`` threshold for the order runs its Nt."""
        tuning = cls.tuning()
        table = tuning.tiling
        cells = None if shape is None else math.prod(map(int, shape))
        specialised = cells is not None and cells >= tuning.specialise_min_cells
        if medium == "model" and order in tuning.model_tiling:
            table = tuning.model_tiling
        elif medium != "constant" and order in tuning.damped_tiling and not specialised:
            table = tuning.damped_tiling
        size, nt = table[order]
        if cells is not None and order in tuning.small_grid_nt and cells < tuning.small_grid_nt[order][0]:
            nt = tuning.small_grid_nt[order][1]
        return (size if shape is None else cls.fit_size(order, size, shape)), nt

    @classmethod
    def choose_algorithm(cls, order: int, shape, medium: str = "constant") -> tuple[str, str]:
        """Stepwise for K per cell (``medium="model"``) at the orders where the model sweep measured
        slower (the tuning's ``stepwise_with_model``), for NO=8 on a column taller than the tuning's
        ``tall_column_nz`` (its one tile, DTS=1, spills under the register cap of a block that large, even
        with level n-1 in shared memory: :data:`~diamondlab.kernels.cuda.TALL_COLUMN_SEGMENTS`) and for
        NO=8 with K per cell on any column over ``full_register_nz``; else DiamondTorre (ahead from 128^3
        up, and at NO=8 on columns of 512 cells with level n-1 in shared memory: BENCHMARKS.md).
        ``shape`` is what the device runs (x and z swapped for a tall column)."""
        from diamondlab.kernels.cuda import sweep_register_cap

        tallest = cls.tuning().tall_column_nz
        if order == 8 and int(shape[2]) > tallest:
            return "stepwise", (
                f"on this GPU a z column of {shape[2]} cells (over {tallest}) leaves the NO=8 sweep at most "
                f"{sweep_register_cap(8, 1, int(shape[2]))} registers a thread, which its tile overflows; "
                "algorithm='diamondtorre' runs it anyway"
            )
        if order == 8 and medium == "model" and int(shape[2]) > cls.tuning().full_register_nz:
            return "stepwise", (
                f"on this GPU the NO=8 sweep on a z column of {shape[2]} cells, with level n-1 in shared "
                "memory and K per cell, ran 0.88x stepwise (512x512x1280); algorithm='diamondtorre' runs it "
                "anyway"
            )
        if medium == "model" and order in cls.tuning().stepwise_with_model:
            return "stepwise", (
                f"on this GPU DiamondTorre with a velocity model runs slower than stepwise at NO={order} "
                "(the tuning's stepwise_with_model); algorithm='diamondtorre' runs it anyway"
            )
        return "diamondtorre", "DiamondTorre measured faster than stepwise on the GPU for this run"

    @classmethod
    def tuning_candidates(cls, order: int) -> list[tuple[int, int]]:
        """(DTS, Nt) pairs the auto-tuner measures: every built DTS with Nt = 16, 32, 64."""
        from diamondlab.kernels.cuda import SUPPORTED_SIZES

        return [(size, nt) for size in SUPPORTED_SIZES[order] for nt in (16, 32, 64)]

    @classmethod
    def tuning_options(cls, order: int, size: int) -> list[dict]:
        """Constructor options the auto-tuner tries per (DTS, Nt): whole-torre waits, and tier-level
        waits every 2 tiers stage by stage or in diagonal bands of 16 and 32 torres (the tuning's)."""
        return [dict(o) for o in cls.tuning().tuning_options]

    @staticmethod
    def available() -> bool:
        """Whether an NVIDIA GPU with a working driver (or Numba's CUDA simulator) is present."""
        try:
            from numba import cuda
        except ImportError:
            return False
        try:
            return bool(cuda.is_available())
        except Exception:  # noqa: BLE001 - any driver failure means "not available"
            return False

    @staticmethod
    def unavailable_reason() -> str:
        try:
            import numba.cuda  # noqa: F401
        except ImportError:
            return (
                "backend='cuda' needs numba-cuda (pip install 'diamondlab[cuda]') and an NVIDIA "
                "GPU; use backend='cpu' or 'auto'"
            )
        return (
            "backend='cuda' needs an NVIDIA GPU with a working CUDA driver; none was found: "
            "use backend='cpu' or 'auto'"
        )

    @classmethod
    def swaps_xz(cls, order: int, shape) -> bool:
        """A z column taller than a block of DTS=1 holds, and an x axis that fits one: swap them (the block's
        limit without the tall columns' layout, :func:`~diamondlab.kernels.cuda.sweep_segments`: a shorter
        column keeps more registers a thread)."""
        from diamondlab.kernels.cuda import max_nz

        limit = max_nz(order, 1, tall=False)
        return int(shape[2]) > limit >= int(shape[0])

    @classmethod
    def claim_device(cls, comm) -> None:
        """Select the GPU of this MPI rank: its rank among the ranks of its node, modulo the node's GPUs
        (ranks beyond the GPU count share them); call before any CUDA context exists."""
        from mpi4py import MPI
        from numba import cuda

        from diamondlab.kernels.cuda import simulator_enabled

        if not cls.available():
            raise RuntimeError(cls.unavailable_reason())
        if simulator_enabled():
            return
        node = comm.Split_type(MPI.COMM_TYPE_SHARED)
        try:
            cuda.select_device(node.rank % len(cuda.gpus))
        finally:
            node.Free()

    @classmethod
    def fit_size(cls, order: int, size: int, shape) -> int:
        """The largest DTS up to ``size`` whose block suits the z column of ``shape``."""
        from diamondlab.kernels.cuda import preferred_size

        return preferred_size(order, size, int(shape[2]))

    @classmethod
    def _check(cls, params: WaveParameters, shape, size: int, nt: int, options: dict) -> dict:
        """The sweep options with their defaults, the (NO, DTS) pair, nz and the GPU's free memory.

        ``max_registers`` overrides the sweep kernel's register cap;
        ``specialize=True`` compiles the sweep for this grid's (ny, nz) (constant
        offsets, fewer registers, faster; one compile per shape, cached on disk;
        default: for grids of at least the tuning's ``specialise_min_cells``);
        ``left_from_memory=True`` re-reads the tile's left neighbours from L2
        each tier instead of keeping them in registers; ``pipelined=True``
        lets a torre run tier ``k`` as soon as the two torres it depends on
        finished tier ``k`` (instead of their whole torre; proven safe in
        :meth:`~diamondlab.geometry.StageSchedule.pipeline_violations`).
        ``band=B`` (pipelined only) hands torres out in diagonal bands of ``B``
        (:meth:`~diamondlab.geometry.StageSchedule.launch_order`; 0: stage by
        stage), so that a torre reads what its dependency wrote a tier earlier
        from L2 rather than from memory; ``chunk`` (pipelined only) is the
        number of tiers between two waits (fewer waits, a longer lag).  Left
        at None, the three come from the tuning's ``pipelined`` table
        (pipelined where it measured faster, else whole-torre waits).
        ``kappa_in_registers`` (a velocity model that is not layered): the
        sweep keeps the tile's ``K`` in registers and loads only the entering
        cells' each tier, instead of every cell's ``K`` every tier (default: the
        tuning's ``kappa_in_registers`` pairs; not for tiles whose level n-1
        lives in shared memory).  ``boundary_profiles`` (a medium): where the
        boundary torres keep their damping factors, ``"held"`` in registers or
        loaded at use (``"x_at_use"``, ``"at_use"``:
        :class:`~diamondlab.kernels.cuda_source.TorreVariant`; default: the
        tuning's ``boundary_profiles`` table, else ``"held"``).  ``exchange_barrier``:
        what a tier's z exchange waits for, ``"block"`` (every warp of the
        torre's block) or ``"neighbours"`` (the warps above and below, on named
        barriers; columns of at most 512 cells; default: the tuning's
        ``exchange_barrier``).  ``prefetch``: tiers ahead (0, 1 or 2) whose loads
        each tier of an interior torre prefetches into L2 (default: the tuning's
        ``prefetch`` table, else 0; the values are the same either way).
        """
        from diamondlab.kernels import cuda as kernels
        from diamondlab.kernels.cuda_source import (
            BOUNDARY_PROFILES,
            EXCHANGE_BARRIERS,
            NEIGHBOUR_BARRIER_WARPS,
            PIPELINE_FLAG_STRIDE,
            PREFETCH_TIERS,
        )

        # geometry checks (DTS >= 1, Nt >= 1, the domain holds one tile) before anything else
        StageSchedule.check(DiamondTorre(DiamondTile(params.order, size), nt), *shape[:2])
        pipelined, band, chunk = (options.get(k) for k in ("pipelined", "band", "chunk"))
        launch = options.get("launch", "sweep")
        if launch not in LAUNCH_SCHEMES:
            raise ValueError(f"launch must be one of {LAUNCH_SCHEMES}; got {launch!r}")
        boundary_profiles = options.get("boundary_profiles")
        if boundary_profiles is not None and boundary_profiles not in BOUNDARY_PROFILES:
            raise ValueError(f"boundary_profiles must be one of {BOUNDARY_PROFILES}; "
                             f"got {boundary_profiles!r}")
        exchange_barrier = options.get("exchange_barrier")
        if exchange_barrier is not None and exchange_barrier not in EXCHANGE_BARRIERS:
            raise ValueError(f"exchange_barrier must be one of {EXCHANGE_BARRIERS}; got {exchange_barrier!r}")
        prefetch = options.get("prefetch")
        if prefetch is not None and (isinstance(prefetch, bool) or prefetch not in PREFETCH_TIERS):
            raise ValueError(f"prefetch must be one of {PREFETCH_TIERS} (tiers ahead); got {prefetch!r}")
        if launch == "per-stage":
            if pipelined or band or chunk not in (None, 1):
                raise ValueError("launch='per-stage' synchronises after whole stages: it takes no "
                                 "pipelined, band or chunk")
            pipelined = False
        tuning = cls.tuning()
        preset = tuning.pipelined.get((params.order, size))
        if pipelined is None:
            pipelined = nt < PIPELINE_FLAG_STRIDE and (
                preset is not None or whole_torre_waits_starve(params.order, size, nt, shape,
                                                               options.get("max_registers"))
            )
        if pipelined:
            if nt >= PIPELINE_FLAG_STRIDE:
                raise ValueError(f"a pipelined sweep needs nt < {PIPELINE_FLAG_STRIDE}; got nt={nt}")
            band = cls.launch_band(params.order, size) if band is None else band
            chunk = min((preset or (0, 1))[1], nt) if chunk is None else chunk
        elif band not in (None, 0) or chunk not in (None, 1):
            raise ValueError("band and chunk need pipelined=True (with whole-torre waits a band "
                             "runs one stage at a time)")
        else:
            band, chunk = 0, 1
        if isinstance(band, bool) or not isinstance(band, (int, np.integer)) or band < 0:
            raise ValueError(f"band must be an int >= 0 (0: stage by stage); got {band!r}")
        if isinstance(chunk, bool) or not isinstance(chunk, (int, np.integer)) or not 1 <= chunk <= nt:
            raise ValueError(f"chunk must be an int in 1..nt={nt} (tiers between two waits); got {chunk!r}")
        kernels.check_pair(params.order, size)
        kernels.check_nz(shape[2], params.order, size)
        if exchange_barrier is None:
            exchange_barrier = tuning.exchange_barrier
        if exchange_barrier == "neighbours" and kernels.sweep_block(shape[2]) > 32 * NEIGHBOUR_BARRIER_WARPS:
            if options.get("exchange_barrier") == "neighbours":
                raise ValueError(f"exchange_barrier='neighbours' needs columns of at most "
                                 f"{32 * NEIGHBOUR_BARRIER_WARPS} cells; got nz={shape[2]}")
            exchange_barrier = "block"  # the tuning's default where it applies
        if not cls.available():
            raise RuntimeError(cls.unavailable_reason())
        ncells = int(np.prod(shape, dtype=np.int64))
        need = 2 * 4 * ncells
        if not kernels.simulator_enabled():
            free, total = device_memory()
            if need + MEMORY_MARGIN_BYTES > free:
                raise ValueError(
                    f"shape {shape} needs {need / 2**30:.2f} GiB of GPU memory for its two "
                    f"float32 fields but the GPU has {free / 2**30:.2f} GiB free of "
                    f"{total / 2**30:.2f} GiB: use a smaller shape or backend='cpu'"
                )
        specialize = options.get("specialize")
        kappa_in_registers = options.get("kappa_in_registers")
        previous_in_shared = kernels.sweep_segments(params.order, size, shape[2]) > 0
        if kappa_in_registers is None:
            kappa_in_registers = (params.order, size) in tuning.kappa_in_registers and not previous_in_shared
        elif kappa_in_registers and previous_in_shared:
            raise ValueError(f"kappa_in_registers does not apply to NO={params.order} DTS={size} on "
                             f"columns of {shape[2]} cells: its sweep "
                             "keeps level n-1 in shared memory (use another DTS or leave it out)")
        return {
            "max_registers": options.get("max_registers"),
            "specialize": ncells >= tuning.specialise_min_cells if specialize is None else bool(specialize),
            "left_from_memory": bool(options.get("left_from_memory", False)),
            "pipelined": bool(pipelined), "band": int(band), "chunk": int(chunk), "launch": launch,
            "kappa_in_registers": bool(kappa_in_registers),
            "boundary_profiles": boundary_profiles or tuning.boundary_profiles.get((params.order, size),
                                                                                   "held"),
            "exchange_barrier": exchange_barrier,
            "prefetch": int(tuning.prefetch.get((params.order, size), 0) if prefetch is None else prefetch),
        }  # fmt: skip

    def _build(self, params: WaveParameters, shape, size: int, nt: int, options: dict) -> None:
        """See the module contract; ``options`` as :meth:`_check` returns them."""
        from numba import cuda

        from diamondlab.kernels import cuda as kernels

        self.params = params
        self.shape = shape
        self.size = size
        self.nt = nt
        self.band = options["band"]
        self.chunk = options["chunk"]
        self.pipelined = options["pipelined"]
        self.launch = options["launch"]
        self.specialized = options["specialize"]
        self._kernels_api = kernels
        self._cuda = cuda
        self._max_registers = options["max_registers"]  # the cap follows the medium (see kernels)
        self._left_from_memory = options["left_from_memory"]
        self.kappa_in_registers = options["kappa_in_registers"]
        self.boundary_profiles = options["boundary_profiles"]
        self.exchange_barrier = options["exchange_barrier"]
        self.prefetch = options["prefetch"]
        self.segments = kernels.sweep_segments(params.order, size, shape[2])  # where level n-1 lives
        self._kernels = None  # the variant's module, selected on first use (after set_physics)
        self._coeffs = cuda.to_device(np.ascontiguousarray(params.coefficients, dtype=np.float32))
        self._bare = cuda.to_device(np.ascontiguousarray(bare_weights(params.order), dtype=np.float32))
        self._medium: dict | None = None  # the kernels' medium values by name (MEDIUM_VALUES)
        self._medium_variant: str | None = None  # the kernels' medium: None, sponge, layered or model
        self._points = None
        self._point_arrays: tuple | None = None
        self._point_io: PointQueue | None = None
        self._events: dict[int, tuple] = {}
        self._stream = None  # the stream the kernels run on (None: the default stream)
        self._prev, self._curr = self._allocate_fields()
        self._schedules: dict[int, tuple] = {}
        self._rows: dict[tuple[int, int], tuple] = {}  # halo buffers per row range (MPI ranks)
        self._done = None
        self._counter = cuda.to_device(np.zeros(1, dtype=np.int64))
        self._tickets = 0
        self._epoch = 0
        self.last_sweep_kernel = None

    def _allocate_fields(self) -> tuple:
        """The two levels on the device, zero."""
        ncells = int(np.prod(self.shape, dtype=np.int64))
        return self._zeros(ncells), self._zeros(ncells)

    def _device_kappa(self, kappa: np.ndarray):
        """A velocity model's ``K`` per cell where the kernels read it (the device)."""
        return self._cuda.to_device(np.ascontiguousarray(kappa, dtype=np.float32).ravel())

    def _zeros(self, n: int):
        cuda = self._cuda
        if self._kernels_api.simulator_enabled():
            return cuda.to_device(np.zeros(n, dtype=np.float32))
        from numba.cuda.cudadrv.driver import device_memset

        arr = cuda.device_array(n, dtype=np.float32)
        device_memset(arr, 0, arr.nbytes)
        return arr

    # ------------------------------------------------------------------ fields
    def _host(self, a, name: str) -> np.ndarray:
        a = np.asarray(a)
        if a.shape != self.shape:
            raise ValueError(f"{name} must have shape {self.shape}; got {a.shape}")
        return np.ascontiguousarray(a, dtype=np.float32).ravel()

    def set_fields(self, prev: np.ndarray, curr: np.ndarray) -> None:
        self._prev.copy_to_device(self._host(prev, "prev"))
        self._curr.copy_to_device(self._host(curr, "curr"))

    def fields(self) -> tuple[np.ndarray, np.ndarray]:
        prev = self._prev.copy_to_host().reshape(self.shape)
        curr = self._curr.copy_to_host().reshape(self.shape)
        return prev, curr

    def current_view(self) -> np.ndarray:
        """The current level on the host (a copy: the fields live on the device)."""
        return self._curr.copy_to_host().reshape(self.shape)

    def pack_rows(self, y0: int, y1: int, out) -> None:
        """Queue rows ``[y0, y1)`` of both levels into the flat device buffer ``out``
        (:func:`~diamondlab.kernels.cuda.pack_rows`: the halo for a neighbour on another GPU)."""
        self._kernels_api.pack_rows(self._prev, self._curr, self.shape, y0, y1, out)

    def unpack_rows(self, y0: int, y1: int, rows) -> None:
        """Queue the flat device buffer ``rows`` (as :meth:`pack_rows` fills it) into rows ``[y0, y1)``."""
        self._kernels_api.unpack_rows(self._prev, self._curr, self.shape, y0, y1, rows)

    def _row_buffers(self, y0: int, y1: int) -> tuple:
        """A device buffer and a pinned host buffer for rows ``[y0, y1)``, allocated once per range."""
        key = (y0, y1)
        if key not in self._rows:
            shape = (2, self.shape[0], y1 - y0, self.shape[2])
            self._rows[key] = (self._cuda.device_array(int(np.prod(shape)), dtype=np.float32),
                               self._cuda.pinned_array(shape, dtype=np.float32))
        return self._rows[key]

    def get_rows(self, y0: int, y1: int) -> np.ndarray:
        """Rows ``[y0, y1)`` of both levels on the host (packed on the GPU; one pinned buffer per range)."""
        device, host = self._row_buffers(y0, y1)
        self.pack_rows(y0, y1, device)
        device.copy_to_host(host.reshape(-1))
        return host

    def set_rows(self, y0: int, y1: int, rows) -> None:
        """Write host ``rows`` (as :meth:`get_rows` returns them) into rows ``[y0, y1)`` of both levels."""
        device, _ = self._row_buffers(y0, y1)
        device.copy_to_device(np.ascontiguousarray(rows, dtype=np.float32).reshape(-1))
        self.unpack_rows(y0, y1, device)

    def planes(self, index, strides) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Strided planes ``(xy, xz, yz)`` of the current level through ``index``: only they are copied."""
        return self._kernels_api.gather_planes(self._curr, self.shape, index, strides)

    # ----------------------------------------------------------------- physics
    def set_physics(self, medium: Medium | None = None, sources=(), receivers=()) -> None:
        """The medium (:class:`~diamondlab.media.Medium`; None: the bare scheme) and the integer
        ``(x, y, z)`` cells of the source and receiver points (see kernels.points), on the device.

        A constant ``K`` stays a number and the sponge three pairs of 1D
        profiles (:meth:`~diamondlab.media.Medium.factors`), a layered model's
        ``K`` a depth profile; only ``K`` per cell (any other velocity model)
        takes one more field of GPU memory (``ValueError`` before anything is
        copied if it does not fit).  The kernel variant is selected once, here.
        """
        cuda = self._cuda
        held = self._medium_variant == "model"  # a model's K, freed below
        self._medium = self._medium_variant = None
        if medium is not None and medium.variant != "constant":
            if medium.variant == "model":
                self._check_model_memory(held)
                k = self._device_kappa(medium.kappa)
            elif medium.variant == "layered":
                k = cuda.to_device(np.ascontiguousarray(medium.kappa, dtype=np.float32))
            else:
                k = np.float32(medium.kappa)
            factors = medium.factors()  # (ax, ay, az, rx, ry, rz); the sweep's calm torres by DX, DY
            counts = (damped_counts(factors[0], factors[3]), damped_counts(factors[1], factors[4]))
            arrays = (cuda.to_device(np.ascontiguousarray(f)) for f in (*factors, *counts))
            self._medium = dict(zip(MEDIUM_VALUES, (k, *arrays), strict=True))
            self._medium_variant = medium.variant
        t = point_tables(self.shape, 0, sources, receivers)
        self._events = {}
        if len(t.pt_z) == 0:
            self._points = self._point_arrays = self._point_io = None
        else:
            _, ny, nz = self.shape
            index = (t.columns[:, 0] * ny + t.columns[:, 1]) * nz + t.pt_z
            self._points = t
            self._point_arrays = tuple(
                cuda.to_device(np.ascontiguousarray(a, dtype=np.int64)) for a in (index, t.pt_kind, t.pt_slot)
            )
            self._point_io = PointQueue(cuda, max(t.nsources, 1), t.nreceivers, self.nt, self._stream)
        self._kernels = None  # selected on first use: one variant per run

    @property
    def kernels(self):
        """The generated kernel module of this backend's variant (medium, points, waits), imported once."""
        if self._kernels is None:
            api, order, medium = self._kernels_api, self.params.order, self._medium_variant
            cap = api.sweep_register_cap(order, self.size, self.shape[2], self._max_registers,
                                         self.specialized, medium=medium is not None)
            self._kernels = api.cuda_kernels(
                order, self.size, cap, self.shape[1:] if self.specialized else None, self._left_from_memory,
                medium=medium, points=self._points is not None, pipelined=self.pipelined,
                kappa_in_registers=self.kappa_in_registers and medium == "model",
                boundary_profiles=self.boundary_profiles if medium else "held", segments=self.segments,
                exchange_barrier=self.exchange_barrier, prefetch=self.prefetch,
            )
        return self._kernels

    def _check_model_memory(self, held: bool) -> None:
        """Raise ``ValueError`` if ``K`` per cell (one more field) does not fit the GPU's free memory
        (``held``: a previous model's, being freed, counts as free)."""
        if self._kernels_api.simulator_enabled():
            return
        ncells = len(self._curr)  # K per cell of what the device holds of a field
        free, _ = device_memory()
        if 4 * ncells + MEMORY_MARGIN_BYTES > free + 4 * ncells * held:
            raise ValueError(
                f"a velocity model on shape {self.shape} needs {4 * ncells / 2**30:.2f} GiB more "
                f"GPU memory (K per cell) but {free / 2**30:.2f} GiB are free: use a smaller "
                "shape or backend='cpu'"
            )

    def _point_buffers(self, height: int, src_samples):
        """Queue ``height`` steps' source samples and reserve their receiver rows (device arrays)."""
        t = self._points
        if src_samples is not None and src_samples.shape != (max(t.nsources, 1), height):
            raise ValueError(
                f"src_samples must have shape {(max(t.nsources, 1), height)}; got {src_samples.shape}"
            )
        return self._point_io.queue(height, src_samples)

    def _sweep_events(self, height: int) -> tuple:
        cached = self._events.get(height)
        if cached is None:
            t = self._points
            _, _, s, rank = self._schedule(height)

            def owner(x, y, k):  # the ticket of the torre that computes a vertex
                torre, cell = s.owner(x, y, k)
                return rank[torre], cell

            ev_ptr, events = self._kernels_api.sweep_events(
                owner, s.ntorres, height, t.columns, t.pt_z, t.pt_kind, t.pt_slot
            )
            cached = self._events[height] = (self._cuda.to_device(ev_ptr), self._cuda.to_device(events))
        return cached

    def take_traces(self) -> np.ndarray:
        """The receiver values ``(steps, nreceivers)`` recorded since the last call (waits for the GPU)."""
        if self._points is None:
            return np.zeros((0, 0), dtype=np.float32)
        return self._point_io.take()[:, : self._points.nreceivers]

    # ---------------------------------------------------------------- stepping
    def _medium_args(self) -> tuple:
        """The weights the kernels take and the medium's values by name (none: the bare scheme)."""
        return (self._bare, self._medium) if self._medium is not None else (self._coeffs, {})

    def step(self, nsteps: int, src_samples: np.ndarray | None = None) -> None:
        """Queue ``nsteps`` stepwise steps (receiver values: :meth:`take_traces`)."""
        nsteps = int(nsteps)
        api = self._kernels_api
        coeffs, medium = self._medium_args()
        rec = None
        if self._points is not None:
            samples, rec = self._point_buffers(nsteps, src_samples)
        for k in range(nsteps):
            api.launch_stepwise(self.kernels, self._curr, self._prev, self.shape, coeffs, medium=medium)
            if rec is not None:
                api.launch_points(self.kernels, self._prev, k, self._point_arrays, samples, rec)
            self._prev, self._curr = self._curr, self._prev

    def _schedule(self, height: int) -> tuple:
        cached = self._schedules.get(height)
        if cached is None:
            cuda = self._cuda
            tile = DiamondTile(self.params.order, self.size)
            s = StageSchedule(DiamondTorre(tile, height), self.shape[0], self.shape[1])
            # ticket t runs torre perm[t]; flags and dependencies are kept by ticket
            perm = s.launch_order(self.band or None)
            rank = np.argsort(perm)
            deps = s.dependencies()[perm]
            deps = np.where(deps >= 0, rank[np.maximum(deps, 0)], -1)
            arrays = tuple(
                cuda.to_device(np.ascontiguousarray(a, dtype=np.int64))
                for a in (s.torre_x0[perm], s.torre_yc[perm], deps)
            )
            cached = self._schedules[height] = (s.ntorres, arrays, s, rank)
            if self._done is None or len(self._done) < s.ntorres:
                self._done = cuda.to_device(np.zeros(s.ntorres, dtype=np.int64))
        return cached

    def _sweep_values(self, height: int, points: tuple = ()) -> dict:
        """The sweep's values beyond the grid and schedule, by name (the kernel module takes those
        its variant reads); ``points``: the ``(samples, rec)`` device buffers."""
        values = dict(self._medium or {}, chunk=np.int64(self.chunk))
        if self._points is not None:
            ev_ptr, events = self._sweep_events(height)
            src_samples, rec_vals = points
            values.update(ev_ptr=ev_ptr, events=events, src_samples=src_samples, rec_vals=rec_vals)
        return values

    def compile(self) -> None:
        """Compile (or load from the disk cache) this backend's kernels for this grid; launches nothing."""
        api = self._kernels_api
        coeffs, medium = self._medium_args()
        api.launch_stepwise(self.kernels, self._curr, self._prev, self.shape, coeffs,
                            compile_only=True, medium=medium)
        points = () if self._points is None else self._point_io.probe(self.nt)
        values = self._sweep_values(self.nt, points)
        if points:
            api.launch_points(self.kernels, self._prev, 0, self._point_arrays, *points, compile_only=True)
        _, arrays, *_ = self._schedule(self.nt)
        kernel = api.launch_sweep(
            self.kernels, self.params.order, self.size, self._curr, self._prev, self.shape,
            self.nt, arrays, (self._done, self._counter), self._tickets, self._epoch + 1,
            coeffs, compile_only=True, values=values,
        )
        self.last_sweep_kernel = kernel or self.last_sweep_kernel
        from diamondlab.kernels.generated import record_compiled

        record_compiled()  # the digests of Numba's files, checked before the next import

    def sweep(self, height: int, src_samples: np.ndarray | None = None) -> None:
        """Queue one DiamondTorre sweep (receiver values: :meth:`take_traces`)."""
        if not 1 <= height <= self.nt:
            raise ValueError(f"sweep height must be between 1 and nt={self.nt}; got {height}")
        ntorres, arrays, schedule, _ = self._schedule(height)
        points = () if self._points is None else self._point_buffers(height, src_samples)
        values = self._sweep_values(height, points)
        self._epoch += 1
        # one launch for the sweep (blocks wait for their dependencies), or the paper's scheme: one
        # launch per stage, the stages apart by the launches' order (every wait is met at once)
        for blocks in ([ntorres] if self.launch == "sweep" else np.diff(schedule.stage_start)):
            self.last_sweep_kernel = self._kernels_api.launch_sweep(
                self.kernels, self.params.order, self.size, self._curr, self._prev, self.shape,
                height, arrays, (self._done, self._counter), self._tickets, self._epoch,
                self._medium_args()[0], values=values, blocks=int(blocks),
            )
        self._tickets += ntorres
        if height % 2:
            self._prev, self._curr = self._curr, self._prev

    @property
    def options(self) -> dict:
        """The sweep options in force (after the tuning's defaults)."""
        return {"pipelined": self.pipelined, "band": self.band, "chunk": self.chunk, "launch": self.launch,
                "kappa_in_registers": self.kappa_in_registers, "boundary_profiles": self.boundary_profiles,
                "exchange_barrier": self.exchange_barrier, "prefetch": self.prefetch}

    def synchronize(self) -> None:
        self._cuda.synchronize()

    def resources(self) -> dict[str, int] | None:
        """Registers, local bytes and shared bytes of the last sweep kernel (None before one)."""
        if self.last_sweep_kernel is None:
            return None
        return self._kernels_api.kernel_resources(self.last_sweep_kernel)
