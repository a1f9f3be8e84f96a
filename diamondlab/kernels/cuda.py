"""Numba-CUDA kernels: a stepwise kernel and a one-launch DiamondTorre sweep per (NO, DTS).

Contract
--------
Kernels take plain arrays and ints.  A field is a flat C-ordered float32
device array of ``nx * ny * nz`` cells, cell ``(x, y, z)`` at
``(x * ny + y) * nz + z``, with no halo: values outside the domain are zero
(the kernels check).  ``F`` holds level ``n`` and ``G`` level ``n - 1``; a
step overwrites ``G`` (the caller swaps the roles); a sweep of height ``nt``
runs tier ``k`` from ``F`` into ``G`` when ``k`` is even and the other way
round when odd, exactly like :mod:`diamondlab.kernels.cpu`.

:func:`cuda_kernels` generates the module for one ``(NO, DTS)`` (source in
:mod:`diamondlab.kernels.cuda_source`), writes it to the user cache folder
and imports it; its kernels are compiled on first launch with Numba's disk
cache (``cache=True``), so a second process reuses them.  The pairs built are
:data:`SUPPORTED_SIZES` (the DTS values whose tile level n fits the register
file, and level n-1 too or else shared memory:
:data:`SHARED_PREVIOUS_SEGMENTS`, and :data:`TALL_COLUMN_SEGMENTS` on tall
columns: :func:`sweep_segments`); :func:`check_pair` raises ``ValueError``
for the rest.  A DiamondTorre block holds one whole z column, one z per
thread: ``nz <= MAX_NZ`` and its shared memory within the device's limit
(:func:`max_nz`, :func:`check_nz`); the sweep's register cap
(:func:`sweep_register_cap`) drops with the block size so that one block
always fits a multiprocessor (tall columns spill and run slower).  With
``yz = (ny, nz)`` the sweep is compiled for one grid's y and z sizes (every
offset a literal; the backend does this for large grids).

The launch helpers (:func:`launch_stepwise`, :func:`launch_sweep`) compile
once per argument types, raise the block's dynamic shared-memory limit where
the double-buffered z exchange needs more than 48 KiB, and launch through the
compiled kernel object (no per-launch typing; a device array's launch words
marshalled once).  numba.cuda is imported only
when a kernel module is built or launched.
"""

from __future__ import annotations

import functools
import sys
import weakref
from collections.abc import Mapping
from types import ModuleType

import numpy as np

from diamondlab.devices import H100, cuda_tuning, current_gpu
from diamondlab.kernels.cuda_source import generate_source, shared_layout
from diamondlab.kernels.generated import load_generated
from diamondlab.numerics import validate_order

__all__ = [
    "MAX_NZ",
    "SUPPORTED_SIZES",
    "PreparedLaunch",
    "check_nz",
    "check_pair",
    "cuda_kernels",
    "kernel_resources",
    "gather_planes",
    "kernel_arguments",
    "launch_points",
    "launch_stepwise",
    "launch_sweep",
    "pack_rows",
    "simulator_enabled",
    "sweep_block",
    "sweep_register_cap",
    "sweep_events",
    "sweep_segments",
    "sweep_shared_bytes",
    "unpack_rows",
]

#: DTS values built per NO: the tile's level n with its ShS-wide side strips
#: (``2 R^2 + 2 ShS (2R - 1)`` floats) must stay in registers, and level n-1
#: (``2 R^2``) too unless the pair is in :data:`SHARED_PREVIOUS_SEGMENTS`.
#: NO=8 DTS=2 (248 + 128 floats) spills even with level n-1 in shared memory
#: and ran at half the speed of DTS=1 (BENCHMARKS.md).
SUPPORTED_SIZES: dict[int, tuple[int, ...]] = {2: (1, 2, 3, 4), 4: (1, 2), 6: (1, 2), 8: (1,)}

#: Pairs whose tile keeps level n-1 in shared memory (its two levels would not
#: fit in registers), with the number of z exchanges per tier (see
#: :func:`~diamondlab.kernels.cuda_source.shared_layout`).
SHARED_PREVIOUS_SEGMENTS: dict[tuple[int, int], int] = {(6, 2): 4}

#: Pairs whose tile keeps level n-1 in shared memory on a column taller than the tuning's
#: ``full_register_nz`` only (:func:`sweep_segments`): a block of more than 256 threads leaves a thread at
#: most 128 registers, and NO=8 DTS=1's two levels spill there (1408 bytes a thread; 692 with level n-1 in
#: shared memory; ptxas 13.5 offline).  512x512x1280 on an H100: 181.6 G/s against 85.4 with level n-1 in
#: registers, stepwise 118.9 (1.53x); 2, 4 and 8 segments gave 161.9, 181.6, 175.5 (BENCHMARKS.md).
TALL_COLUMN_SEGMENTS: dict[tuple[int, int], int] = {(8, 1): 4}

#: Dynamic shared memory one block may use where no device can be asked (an H100's).
MAX_SHARED_BYTES = H100.shared_per_block - 64

#: Python recursion limit while Numba compiles a sweep (its control-flow walks recurse once per
#: block; the generated torres of the big tiles, points variants above all, have hundreds).
COMPILE_RECURSION_LIMIT = 20000

#: Most z cells a DiamondTorre block holds (one z per thread, 1024 threads).
MAX_NZ = 1024

#: Stepwise launch shape: threads along z and y per block, x planes per thread.
STEPWISE_BLOCK = (32, 8)
STEPWISE_XCHUNK = 32


def simulator_enabled() -> bool:
    """Whether Numba runs CUDA kernels in its simulator (``NUMBA_ENABLE_CUDASIM=1``)."""
    from numba.core import config

    return bool(config.ENABLE_CUDASIM)


def check_pair(order: int, size: int) -> None:
    """Raise ``ValueError`` unless the CUDA engine builds ``(NO, DTS)``.

    >>> check_pair(2, 3)
    >>> check_pair(8, 2)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: the CUDA DiamondTorre engine is built for NO=8 with DTS in (1,); got DTS=2 ...
    """
    order = validate_order(order)
    sizes = SUPPORTED_SIZES[order]
    if size not in sizes:
        raise ValueError(
            f"the CUDA DiamondTorre engine is built for NO={order} with DTS in {sizes}; "
            f"got DTS={size} (its tile would not fit in registers)"
        )


def check_nz(nz: int, order: int = 2, size: int = 1) -> None:
    """Raise ``ValueError`` if a z column is taller than one block of ``(NO, DTS)`` holds.

    >>> check_nz(2048)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: the CUDA DiamondTorre engine keeps a whole z column ... got nz=2048 ...
    >>> check_nz(544, 6, 2)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: ... NO=6 DTS=2 ... nz must be <= 512; got nz=544 (use a smaller DTS, backend='cpu', ...
    """
    if nz > MAX_NZ:
        raise ValueError(
            "the CUDA DiamondTorre engine keeps a whole z column in one block (one z per "
            f"thread): nz must be <= {MAX_NZ}; got nz={nz} (use backend='cpu', or put the "
            "longest axis along x or y)"
        )
    limit = max_nz(order, size)
    if nz > limit:
        hint = "a smaller DTS, " if size > 1 else ""
        raise ValueError(
            f"the CUDA DiamondTorre block of NO={order} DTS={size} keeps its whole z column in "
            f"shared memory ({shared_limit()} bytes on this device): nz must be <= {limit}; got "
            f"nz={nz} (use {hint}backend='cpu', or put the longest axis along x or y)"
        )


#: Threads a block's z is rounded up to under the simulator, which runs every thread as a Python thread: 8,
#: not a warp (the threads beyond the column, which load and store nothing, are still there).
SIMULATOR_WARP = 8


def sweep_block(nz: int) -> int:
    """Threads per DiamondTorre block: ``nz`` rounded up to a whole warp (to :data:`SIMULATOR_WARP` under
    the simulator)."""
    warp = SIMULATOR_WARP if simulator_enabled() else 32
    return -(-nz // warp) * warp


def sweep_segments(order: int, size: int, nz: int, tall: bool = True) -> int:
    """The z-exchange segments of the sweep of ``(NO, DTS)`` on columns of ``nz`` cells: 0 where its tile's
    level n-1 lives in registers, else the number of segments
    (:func:`~diamondlab.kernels.cuda_source.shared_layout`): :data:`SHARED_PREVIOUS_SEGMENTS` on every
    column, :data:`TALL_COLUMN_SEGMENTS` (with ``tall``) on a column taller than the tuning's
    ``full_register_nz``.  The kernel module, its launch and every model of its block take this one value.

    >>> [sweep_segments(*case) for case in ((6, 2, 64), (8, 1, 256), (8, 1, 512), (2, 4, 512))]
    [4, 0, 4, 0]
    """
    pair = (order, size)
    if pair in SHARED_PREVIOUS_SEGMENTS:
        return SHARED_PREVIOUS_SEGMENTS[pair]
    if tall and pair in TALL_COLUMN_SEGMENTS and nz > cuda_tuning(current_gpu()).full_register_nz:
        return TALL_COLUMN_SEGMENTS[pair]
    return 0


def sweep_shared_bytes(order: int, size: int, nz: int, tall: bool = True, segments: int | None = None) -> int:
    """Dynamic shared memory of a sweep block: two z-exchange buffers (and level n-1: ``segments``, by
    default :func:`sweep_segments`, whose ``tall`` it takes).

    >>> sweep_shared_bytes(2, 3, 256), sweep_shared_bytes(6, 2, 256), sweep_shared_bytes(8, 1, 512)
    (39216, 114576, 105024)
    """
    segments = sweep_segments(order, size, nz, tall) if segments is None else segments
    nsp, ncg = shared_layout(order, size, segments)
    block = sweep_block(nz)
    return (2 * nsp * (block + order) + ncg * block) * 4


@functools.cache
def shared_limit() -> int:
    """Dynamic shared memory a sweep block may use on this machine's GPU.

    The device's opt-in limit per block less the sweep's static shared memory
    (the ticket slot, 64 bytes); :data:`MAX_SHARED_BYTES` (an H100's) without
    a GPU or under the simulator.
    """
    gpu = current_gpu()
    return MAX_SHARED_BYTES if gpu is None else gpu.shared_per_block - 64


def max_nz(order: int, size: int, limit: int | None = None, tall: bool = True) -> int:
    """Tallest z column a DiamondTorre block of ``(NO, DTS)`` holds (shared memory ``limit``; ``tall=False``:
    without the tall columns' layout, :func:`sweep_segments`).

    >>> max_nz(2, 3, MAX_SHARED_BYTES), max_nz(2, 4, MAX_SHARED_BYTES), max_nz(6, 2, MAX_SHARED_BYTES)
    (1024, 864, 512)
    >>> max_nz(8, 1, MAX_SHARED_BYTES), max_nz(8, 1, MAX_SHARED_BYTES, tall=False)
    (1024, 864)
    """
    limit = shared_limit() if limit is None else limit
    nz = MAX_NZ
    while nz > 32 and sweep_shared_bytes(order, size, nz, tall) > limit:
        nz -= 32
    return nz


def preferred_size(order: int, size: int, nz: int) -> int:
    """The largest DTS up to ``size`` whose block suits a column of ``nz`` cells.

    It must hold the column (:func:`max_nz`); a kernel with level n-1 in shared
    memory also runs only up to the tuning's ``shared_previous_nz``
    (:func:`diamondlab.devices.cuda_tuning`: above it the register cap of a
    taller block costs more than the smaller tile).

    >>> preferred_size(6, 2, 384), preferred_size(6, 2, 416), preferred_size(2, 4, 1000)
    (2, 1, 3)
    """
    tallest = cuda_tuning(current_gpu()).shared_previous_nz
    while size > 1 and (nz > max_nz(order, size)
                        or ((order, size) in SHARED_PREVIOUS_SEGMENTS and nz > tallest)):
        size -= 1
    return size


def _element_pointer(context, builder, sig, args):
    """The address of ``array[index]`` in an intrinsic's code (no negative-index wrap)."""
    from numba.core import types as nbtypes
    from numba.cuda import cgutils

    array_type, index_type = sig.args
    ary, idx = args
    idx = context.cast(builder, idx, index_type, nbtypes.intp)
    struct = context.make_array(array_type)(context, builder, value=ary)
    return cgutils.get_item_pointer(context, builder, array_type, struct, [idx], wraparound=False)


@functools.cache
def ldcg_intrinsic():
    """``ldcg(array, i)``: an ``ld.global.cg`` load of a 1D array without the negative-index check.

    Numba's own ``cuda.ldcg`` wraps negative indices (a compare and a select
    per load); the sweep's indices are never negative.  Built on first use
    (imports numba.cuda); the generated kernel modules import it.
    """
    from llvmlite import ir
    from numba.core import types as nbtypes
    from numba.cuda.extending import intrinsic

    @intrinsic
    def ldcg(typingctx, array, index):
        if not (isinstance(array, nbtypes.Array) and array.ndim == 1
                and isinstance(index, nbtypes.Integer) and array.dtype.bitwidth == 32):
            return None
        signature = array.dtype(array, index)

        def codegen(context, builder, sig, args):
            ptr = _element_pointer(context, builder, sig, args)
            value_type = context.get_value_type(sig.args[0].dtype)
            fn = ir.FunctionType(value_type, [value_type.as_pointer()])
            asm = ir.InlineAsm(fn, "ld.global.cg.b32 $0, [$1];", "=r,l")
            return builder.call(asm, [ptr])

        return signature, codegen

    return ldcg


@functools.cache
def prefetch_l2_intrinsic():
    """``prefetch_l2(array, i)``: PTX ``prefetch.global.L2`` of element ``i`` of a 1D array (no value, no
    register held: the line is on its way to L2 when a later ``ld.global.cg`` asks for it).

    The register-tile sweeps load each tier's entering cells at the tier's start
    and wait for DRAM before the tier's barrier; a prefetch issued a tier ahead
    leaves them an L2 hit.  L2 is the device's point of coherence, so a line
    fetched before its writer stores is replaced by the store: a prefetch never
    changes a value read.  Built on first use (imports numba.cuda).
    """
    from llvmlite import ir
    from numba.core import types as nbtypes
    from numba.cuda.extending import intrinsic

    @intrinsic
    def prefetch_l2(typingctx, array, index):
        if not (isinstance(array, nbtypes.Array) and array.ndim == 1 and isinstance(index, nbtypes.Integer)):
            return None
        signature = nbtypes.void(array, index)

        def codegen(context, builder, sig, args):
            ptr = _element_pointer(context, builder, sig, args)
            fn = ir.FunctionType(ir.VoidType(), [ptr.type])
            builder.call(ir.InlineAsm(fn, "prefetch.global.L2 [$0];", "l", side_effect=True), [ptr])
            return context.get_dummy_value()

        return signature, codegen

    return prefetch_l2


@functools.cache
def bar_sync_intrinsic():
    """``bar_sync(barrier, count)``: PTX ``bar.sync barrier, count`` (a named barrier of ``count`` threads).

    Numba has only the block's barrier (``cuda.syncthreads``, barrier 0).  The
    sweep's neighbour exchange (:class:`~diamondlab.kernels.cuda_source.TorreVariant`
    ``exchange_barrier="neighbours"``) syncs pairs of warps on barriers
    ``1..15``; every thread of a warp calls it with the same values.  The
    call clobbers memory, so the compiler moves no shared load or store
    across it.
    """
    from llvmlite import ir
    from numba.core import types as nbtypes
    from numba.cuda.extending import intrinsic

    @intrinsic
    def bar_sync(typingctx, barrier, count):
        if not (isinstance(barrier, nbtypes.Integer) and isinstance(count, nbtypes.Integer)):
            return None
        signature = nbtypes.void(barrier, count)

        def codegen(context, builder, sig, args):
            values = [context.cast(builder, v, t, nbtypes.int32) for v, t in zip(args, sig.args, strict=True)]
            i32 = ir.IntType(32)
            asm = ir.InlineAsm(ir.FunctionType(ir.VoidType(), [i32, i32]), "bar.sync $0, $1;",
                               "r,r,~{memory}", side_effect=True)
            builder.call(asm, values, attrs=("convergent",))
            return context.get_dummy_value()

        return signature, codegen

    return bar_sync


def sweep_register_cap(order: int, size: int, nz: int, requested: int | None = None,
                       specialised: bool = False, medium: bool = False) -> int | None:
    """Register cap of the sweep kernel for columns of ``nz`` cells.

    The preferred cap (``requested``, else the tuning's register caps,
    :func:`diamondlab.devices.cuda_tuning`: with a ``medium`` its
    ``medium_max_registers``, or ``specialised_medium_max_registers``, where it
    has one) lowered so that one block of ``sweep_block(nz)`` threads fits the
    registers of a multiprocessor (tall columns spill, but launch).

    >>> sweep_register_cap(2, 3, 256), sweep_register_cap(2, 1, 1024), sweep_register_cap(8, 1, 64)
    (128, 64, None)
    >>> sweep_register_cap(4, 2, 256), sweep_register_cap(4, 2, 256, medium=True)
    (128, 255)
    >>> sweep_register_cap(4, 2, 256, specialised=True, medium=True)
    128
    """
    gpu = current_gpu() or H100
    tuning = cuda_tuning(gpu)
    if specialised:
        table, medium_table = tuning.specialised_max_registers, tuning.specialised_medium_max_registers
    else:
        table, medium_table = tuning.max_registers, tuning.medium_max_registers
    if medium:
        table = {**table, **medium_table}
    cap = requested if requested is not None else table.get((order, size))
    hard = min(gpu.max_registers_per_thread, gpu.registers_per_sm // sweep_block(nz) // 8 * 8)
    if hard < gpu.max_registers_per_thread and (cap is None or cap > hard):
        cap = hard
    return cap


def sweep_events(owner, ntorres: int, nt: int, columns, point_z, point_kind, point_slot):
    """Source and receiver events of one sweep, grouped by torre: ``(ev_ptr, events)``.

    ``owner(x, y, k) -> (torre, cell)`` is the schedule's
    :meth:`~diamondlab.geometry.StageSchedule.owner` (``ntorres`` torres,
    height ``nt``); the points (``columns`` ``(n, 2)`` of ``(x, y)``, with
    ``point_z``, ``point_kind`` 0 source / 1 receiver and ``point_slot``)
    come in the order of :class:`~diamondlab.kernels.points.PointTables` (by
    column, sources before receivers).  ``events`` is an int64 array
    ``(nevents, 5)`` of ``(tier, z, tile cell, kind, slot)`` sorted by torre,
    tier and point order; ``ev_ptr[t] : ev_ptr[t + 1]`` are torre ``t``'s
    rows.  ``events`` has at least one row (kernels take no empty arrays).

    >>> from diamondlab.geometry import stage_schedule
    >>> s = stage_schedule(order=2, size=1, nt=2, nx=4, ny=4)
    >>> ptr, ev = sweep_events(s.owner, s.ntorres, 2, [[1, 2]], [3], [0], [0])
    >>> ev[:, [0, 1, 3, 4]].tolist(), int(ptr[-1])
    ([[0, 3, 0, 0], [1, 3, 0, 0]], 2)
    """
    columns = np.asarray(columns, dtype=np.int64).reshape(-1, 2)
    npts = len(columns)
    k = np.tile(np.arange(nt, dtype=np.int64), npts)
    j = np.repeat(np.arange(npts, dtype=np.int64), nt)
    if npts:
        torre, cell = owner(columns[j, 0], columns[j, 1], k)
    else:
        torre = cell = np.zeros(0, dtype=np.int64)
    order = np.lexsort((j, k, torre))  # by torre, then tier, then point order
    events = np.stack([k, np.asarray(point_z, np.int64)[j], cell, np.asarray(point_kind, np.int64)[j],
                       np.asarray(point_slot, np.int64)[j]], axis=1)[order]
    ev_ptr = np.zeros(ntorres + 1, dtype=np.int64)
    np.add.at(ev_ptr, torre + 1, 1)
    np.cumsum(ev_ptr, out=ev_ptr)
    if not len(events):
        events = np.zeros((1, 5), dtype=np.int64)
    return ev_ptr, np.ascontiguousarray(events)


def gather_planes(U, shape, index, strides) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Three strided planes of the flat device field ``U`` through ``index``, copied to the host.

    Returns ``(xy, xz, yz)``: ``u[ox::sx, oy::sy, iz]``, ``u[ox::sx, iy, oz::sz]``,
    ``u[ix, oy::sy, oz::sz]`` with ``(ox, oy, oz) = index % strides`` (the
    samples go through the point), gathered on the device so that only the
    planes cross the bus (a few KiB instead of the whole field).
    """
    from numba import cuda

    nx, ny, nz = shape
    ix, iy, iz = (int(i) for i in index)
    sx, sy, sz = (int(s) for s in strides)
    ax, ay, az = (-(-(n - i % s) // s) for n, i, s in ((nx, ix, sx), (ny, iy, sy), (nz, iz, sz)))
    out = [cuda.device_array(dims, dtype=np.float32) for dims in ((ax, ay), (ax, az), (ay, az))]
    rows, cols = max(ax, ay), max(ay, az)
    block = (16, 16)
    grid = (-(-rows // 16), -(-cols // 16))
    from diamondlab.kernels.cuda_planes import gather_planes_kernel

    gather_planes_kernel[grid, block](U, ny, nz, ix, iy, iz, sx, sy, sz, *out)
    return tuple(a.copy_to_host() for a in out)


#: Threads per block of the halo kernels (:func:`pack_rows`, :func:`unpack_rows`).
ROWS_BLOCK = 256


def pack_rows(prev, curr, shape, y0: int, y1: int, out) -> None:
    """Queue a copy of rows ``[y0, y1)`` (along y) of both flat device levels into the flat device
    buffer ``out`` of ``2 * nx * (y1 - y0) * nz`` floats: ``u^{n-1}`` then ``u^n``, each ``(nx, y1 - y0, nz)``
    (the halo an MPI neighbour needs, contiguous so that it crosses in one copy)."""
    from diamondlab.kernels.cuda_rows import pack_rows_kernel

    _, ny, nz = shape
    pack_rows_kernel[-(-(out.size // 2) // ROWS_BLOCK), ROWS_BLOCK](prev, curr, ny, nz, y0, y1 - y0, out)


def unpack_rows(prev, curr, shape, y0: int, y1: int, rows) -> None:
    """Queue the inverse of :func:`pack_rows`: the buffer ``rows`` written into rows ``[y0, y1)``."""
    from diamondlab.kernels.cuda_rows import unpack_rows_kernel

    _, ny, nz = shape
    unpack_rows_kernel[-(-(rows.size // 2) // ROWS_BLOCK), ROWS_BLOCK](prev, curr, ny, nz, y0, y1 - y0, rows)


@functools.cache
def cuda_kernels(order: int, size: int, max_registers: int | None = None,
                 yz: tuple[int, int] | None = None, left_from_memory: bool = False,
                 medium: str | None = None, points: bool = False, pipelined: bool = False,
                 kappa_in_registers: bool = False, boundary_profiles: str = "held",
                 segments: int | None = None, exchange_barrier: str = "block",
                 prefetch: int = 0) -> ModuleType:
    """The generated kernel module for ``(NO, DTS)`` (built once per process).

    ``max_registers`` caps the sweep kernel's registers (default: the
    tuning's, :func:`diamondlab.devices.cuda_tuning`); ``yz = (ny, nz)`` specialises the sweep
    for one grid's y and z sizes (see :func:`~diamondlab.kernels.cuda_source.generate_source`);
    ``medium`` (``"sponge"``: one K and a separable damping; ``"layered"``: K
    per depth and the damping; ``"model"``: K per cell and the damping, with
    ``kappa_in_registers`` shifted in registers with the tile) and ``points``
    (source and receiver events) select the physics variant; ``pipelined`` the
    sweep with tier-level waits; ``boundary_profiles`` where a boundary torre keeps its damping factors
    (:class:`~diamondlab.kernels.cuda_source.TorreVariant`); ``segments`` where the tile's level n-1 lives
    (:func:`sweep_segments` of the grid's nz; default: the pair's :data:`SHARED_PREVIOUS_SEGMENTS`);
    ``exchange_barrier`` what a tier's z exchange waits for (the block, or the neighbouring warps);
    ``prefetch`` the tiers ahead whose loads each tier prefetches into L2 (0: none).

    Its kernels: ``stepwise_step``, ``apply_points`` and ``diamondtorre_sweep``, whose parameters
    it records by name (``STEPWISE_PARAMETERS``, ``POINTS_PARAMETERS``, ``SWEEP_PARAMETERS``;
    the launch helpers pass values by these names); see :mod:`diamondlab.kernels.cuda_source`.
    """
    check_pair(order, size)
    if max_registers is None:
        max_registers = cuda_tuning(current_gpu()).max_registers.get((order, size))
    sim = simulator_enabled()
    preset = SHARED_PREVIOUS_SEGMENTS.get((order, size), 0)
    segments = preset if segments is None else int(segments)
    source = generate_source(order, size, max_registers=max_registers, simulator=sim, yz=yz,
                             left_from_memory=left_from_memory, medium=medium, points=points,
                             pipelined=pipelined, segments=segments,
                             kappa_in_registers=kappa_in_registers, boundary_profiles=boundary_profiles,
                             exchange_barrier=exchange_barrier, prefetch=prefetch)
    variant = (f"_{medium}" if medium else "") + ("_kreg" if kappa_in_registers else "")
    variant += "" if segments == preset else f"_s{segments}"
    variant += "" if boundary_profiles == "held" else f"_b{boundary_profiles.replace('_', '')}"
    variant += "_points" if points else ""
    variant += "_nbar" if exchange_barrier == "neighbours" else ""
    variant += f"_pf{prefetch}" if prefetch else ""
    variant += ("_pipelined" if pipelined else "") + ("_sim" if sim else "")
    module = load_generated(source, f"diamondlab_cuda_no{order}_dts{size}{variant}")
    module.compiled = {}
    module.segments = segments  # its launches size the block's shared memory by it (launch_sweep)
    return module


#: Numba type and marshalled launch words of each device array seen, by identity (held weakly).
_ARRAY_WORDS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
#: Numba type of a scalar argument, by its Python type (every int here is an int64).
_SCALAR_TYPES: dict[type, object] = {}


def _arg_types(dispatcher, args: tuple) -> tuple:
    """Numba types of ``args``; a device array is typed once, a scalar once per Python type.

    Typing every argument on every launch costs about 2 us an argument (30 us
    for a stepwise launch with a medium, more than the kernel on small grids).
    """
    types = []
    for a in args:
        key = type(a)
        if key in _SCALARS:
            ty = _SCALAR_TYPES.get(key)
            if ty is None:
                ty = _SCALAR_TYPES[key] = dispatcher.typeof_pyval(a)
        else:
            hit = _cached_words(a)
            ty = dispatcher.typeof_pyval(a) if hit is None else hit[0]
        types.append(ty)
    return tuple(types)


#: the Python types of scalar arguments (typed once per type; never held by :data:`_ARRAY_WORDS`)
_SCALARS = (int, float, bool, np.int64, np.int32, np.float32, np.float64)


def _cached_words(value):
    """The cached Numba type and launch words of a device array (None where not cached, or not an array).

    Looked up by identity first: ``hasattr(value, "__cuda_array_interface__")`` builds the interface's
    dictionary (a Numba device array's is a property), several microseconds an argument and a launch."""
    try:
        return _ARRAY_WORDS.get(value)
    except TypeError:  # not weakly referenceable: not a device array of ours
        return None


def _compiled(module: ModuleType, kernel_name: str, args: tuple):
    """The compiled kernel object of ``module.kernel_name`` for the types of ``args``."""
    dispatcher = getattr(module, kernel_name)
    types = _arg_types(dispatcher, args)
    key = (kernel_name, types)
    kernel = module.compiled.get(key)
    if kernel is None:
        # Numba walks the control-flow graph recursively: a big tile's source and receiver
        # events (an elif per cell) go deeper than Python's default limit
        sys.setrecursionlimit(max(sys.getrecursionlimit(), COMPILE_RECURSION_LIMIT))
        kernel = dispatcher.compile(types)
        module.compiled[key] = kernel
    return kernel


_SHARED_LIMITS: dict[tuple[int, int], int] = {}


def _allow_shared(kernel, nbytes: int) -> None:
    """Raise the kernel's dynamic shared-memory limit to ``nbytes`` (above the 48 KiB default)."""
    from numba.cuda.cudadrv.driver import binding, driver

    cufunc = kernel._codelibrary.get_cufunc()
    key = (id(cufunc), cufunc.device.id)
    if _SHARED_LIMITS.get(key, 0) >= nbytes:
        return
    attr = binding.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    driver.cuKernelSetAttribute(attr, int(nbytes), cufunc.handle, cufunc.device.id)
    _SHARED_LIMITS[key] = nbytes


@functools.cache
def _core_stream(stream):
    from numba.cuda.cudadrv import driver

    return driver._to_core_stream(stream)


def _launch_words(kernel, args, stream, writeback: list, starts: list | None = None) -> list:
    """The launch words of ``args`` for ``kernel`` (Numba's own marshalling; a device array's marshalled once
    and cached by identity); a host array handed in is copied up, its copy back appended to ``writeback``;
    ``starts`` (where given) gets the index of each argument's first word, then the words' count."""
    words: list = []
    for ty, value in zip(kernel.argument_types, args, strict=True):
        if starts is not None:
            starts.append(len(words))
        hit = None if type(value) in _SCALARS else _cached_words(value)
        if hit is None:
            start = len(words)
            kernel._prepare_args(ty, value, stream, writeback, words)
            if hasattr(value, "__cuda_array_interface__"):
                _ARRAY_WORDS[value] = (ty, words[start:])
        else:
            words.extend(hit[1])
    if starts is not None:
        starts.append(len(words))
    return words


def _launch(kernel, args, grid, block, stream, shared) -> None:
    """Launch a compiled kernel object directly: no per-call typing by the dispatcher, and the
    launch words of a device array marshalled once (Numba's own marshalling, cached by identity).

    ``kernel.launch`` marshals every argument on every call (about 5 us a device
    array); a stepwise step on a 256^3 grid with a sponge spent 160 us of host time
    in it against 80 us of GPU time, so the stepwise engine ran at half its speed.
    """
    from cuda.core import launch

    stream = _core_stream(stream)
    writeback: list = []  # a host array handed in is copied up and back, as by ``kernel.launch``
    words = _launch_words(kernel, args, stream, writeback)
    config = _launch_config(tuple(grid), tuple(block), int(shared))
    launch(stream, config, kernel._codelibrary.get_cufunc().kernel, *words)
    for copy_back in writeback:
        copy_back()


class PreparedLaunch:
    """A launch of ``module.kernel_name`` made ready once and repeated with new values of a few scalar
    arguments: ``PreparedLaunch(module, name, args, blocks, threads, varying=(6, 7))(half, step)`` launches
    it with ``args[6] = half`` and ``args[7] = step``, as :func:`launch_generated` would.

    :func:`launch_generated` types and marshals every argument at every call: about 65 us of host time for a
    Yee stepwise kernel's 36 arguments on the H200's host, more than a small launch's GPU time, so a half
    step cut into several launches waited for the host (BENCHMARKS.md, "The Maxwell physics scene's stepwise
    half step, launch by launch").  Here the words are built once; a call replaces the varying ones and
    launches.  The arguments must be device arrays and scalars (no host array to copy back), and a varying
    argument keeps the Python type it was prepared with.  :meth:`swap` replaces device arrays (a source's
    samples, a record: a new buffer each call) by arrays of the same type, their words marshalled once per
    array.  Under the simulator a call launches the kernel with the arguments replaced.
    """

    def __init__(self, module: ModuleType, kernel_name: str, args: tuple, blocks: int | tuple, threads: int,
                 varying: tuple[int, ...] = (), shared: int = 0, stream=0):
        self._module, self._name, self._args = module, kernel_name, tuple(args)
        self._blocks, self._threads, self._shared, self._stream = blocks, threads, shared, stream
        self._varying = tuple(int(i) for i in varying)
        for i in self._varying:
            if not 0 <= i < len(self._args) or type(self._args[i]) not in _SCALARS:
                raise ValueError(f"PreparedLaunch: varying must name scalar arguments of {kernel_name} (0 to "
                                 f"{len(self._args) - 1}); got {i}")
        self._starts: list[int] = []
        if simulator_enabled():
            self._kernel = None
            return
        kernel = launch_generated(module, kernel_name, self._args, blocks, threads, shared, stream,
                                  compile_only=True)
        stream = _core_stream(stream)
        writeback: list = []
        starts = self._starts
        words = _launch_words(kernel, self._args, stream, writeback, starts)
        self._slots: list[tuple[int, type]] = []
        for i in self._varying:
            if starts[i + 1] != starts[i] + 1:
                raise ValueError(f"PreparedLaunch: argument {i} of {kernel_name} is not a scalar")
            self._slots.append((starts[i], type(words[starts[i]])))
        if writeback:
            raise ValueError(f"PreparedLaunch: {kernel_name} was given a host array; give device arrays")
        grid = (*blocks, 1, 1)[:3] if isinstance(blocks, tuple) else (blocks, 1, 1)
        self._words, self._kernel = words, kernel
        self._cufunc = kernel._codelibrary.get_cufunc().kernel
        self._config = _launch_config(tuple(grid), (threads, 1, 1), int(shared))
        self._core = stream
        from cuda.core import launch

        self._launch = launch

    @property
    def args(self) -> tuple:
        """The arguments the launch runs with (the varying ones as prepared)."""
        return self._args

    def swap(self, arrays: dict[int, object]) -> None:
        """Run with the device array ``arrays[i]`` as argument ``i`` from now on (the same Numba type as the
        array it replaces: its words have the same places); a scalar argument is refused."""
        args = list(self._args)
        for i, array in arrays.items():
            if type(args[i]) in _SCALARS:
                raise ValueError(f"PreparedLaunch.swap: argument {i} of {self._name} is not a device array")
            args[i] = array
        if self._kernel is not None:
            words = list(self._words)
            for i, array in arrays.items():
                hit = _cached_words(array)
                if hit is None:
                    new: list = []
                    self._kernel._prepare_args(self._kernel.argument_types[i], array, self._core, [], new)
                    hit = _ARRAY_WORDS[array] = (self._kernel.argument_types[i], new)
                if hit[0] != self._kernel.argument_types[i]:
                    raise ValueError(f"PreparedLaunch.swap: argument {i} of {self._name} is {hit[0]}, not "
                                     f"{self._kernel.argument_types[i]}")
                words[self._starts[i]:self._starts[i + 1]] = hit[1]
            self._words = words
        self._args = tuple(args)

    def __call__(self, *values) -> None:
        if len(values) != len(self._varying):
            raise TypeError(f"PreparedLaunch: {len(self._varying)} values expected; got {len(values)}")
        if self._kernel is None:  # the simulator: the kernel with the arguments replaced
            args = list(self._args)
            for i, v in zip(self._varying, values, strict=True):
                args[i] = v
            launch_generated(self._module, self._name, tuple(args), self._blocks, self._threads, self._shared,
                             self._stream)
            return
        words = list(self._words)
        for (w, make), v in zip(self._slots, values, strict=True):
            words[w] = make(v)
        self._launch(self._core, self._config, self._cufunc, *words)


@functools.lru_cache(maxsize=256)
def _launch_config(grid: tuple, block: tuple, shared: int):
    from cuda.core import LaunchConfig

    return LaunchConfig(grid=grid, block=block, shmem_size=shared)


def kernel_resources(kernel) -> dict[str, int]:
    """Registers per thread, local (spill) bytes per thread and static shared bytes of a kernel."""
    return {
        "registers": int(kernel.regs_per_thread),
        "local_bytes": int(kernel.local_mem_per_thread),
        "shared_bytes": int(kernel.shared_mem_per_block),
    }


def kernel_arguments(parameters: tuple[str, ...], values: Mapping[str, object]) -> tuple:
    """The values a generated kernel takes, in the order of its ``parameters`` (the module's
    ``STEPWISE_PARAMETERS``, ``SWEEP_PARAMETERS`` or ``POINTS_PARAMETERS``).

    Values the kernel does not take are left out: a caller gives what it has by
    name (the medium's ``K`` and profiles, events, ``chunk``) and the module's
    variant decides which it reads.

    >>> kernel_arguments(("A", "K", "chunk"), {"chunk": 2, "A": "a", "K": 0.5, "AX": None})
    ('a', 0.5, 2)
    >>> kernel_arguments(("A", "K"), {"A": "a"})
    Traceback (most recent call last):
    ...
    ValueError: the kernel takes K, which was not given (given: A)
    """
    missing = [p for p in parameters if p not in values]
    if missing:
        raise ValueError(f"the kernel takes {', '.join(missing)}, which was not given "
                         f"(given: {', '.join(values)})")
    return tuple(values[p] for p in parameters)


def launch_stepwise(module: ModuleType, A, B, shape, coeffs, stream=0,
                    compile_only: bool = False, medium: Mapping[str, object] | None = None) -> None:
    """One stepwise step on device arrays: ``B <- level n+1`` from ``A`` (level n) and ``B``.

    ``medium`` holds the values of a module built with a medium by name
    (:data:`~diamondlab.kernels.cuda_source.MEDIUM_VALUES`: ``K``, a float32 for
    ``"sponge"``, the per-cell array for ``"model"``, then the profiles).
    """
    nx, ny, nz = shape
    bz, by = STEPWISE_BLOCK
    grid = (-(-nz // bz), -(-ny // by), -(-nx // STEPWISE_XCHUNK))
    args = kernel_arguments(module.STEPWISE_PARAMETERS, {
        "A": A, "B": B, "nx": nx, "ny": ny, "nz": nz, "xchunk": STEPWISE_XCHUNK, "coeffs": coeffs,
        **(medium or {}),
    })
    if simulator_enabled():
        if not compile_only:
            module.stepwise_step[grid, (bz, by), stream](*args)
        return
    kernel = _compiled(module, "stepwise_step", args)
    module.last_stepwise_kernel = kernel
    if not compile_only:
        _launch(kernel, args, grid, (bz, by, 1), stream, 0)


def launch_points(module: ModuleType, B, k: int, point_arrays, src_samples, rec_vals, stream=0,
                  compile_only: bool = False) -> None:
    """After stepwise step ``k``: add the source samples and record the receivers, in point order.

    ``point_arrays = (pt_index, pt_kind, pt_slot)`` (flat cell, 0 source / 1
    receiver, slot) are device arrays in :class:`~diamondlab.kernels.points.PointTables` order.
    """
    pt_index, pt_kind, pt_slot = point_arrays
    args = kernel_arguments(module.POINTS_PARAMETERS, {
        "B": B, "k": np.int64(k), "pt_index": pt_index, "pt_kind": pt_kind, "pt_slot": pt_slot,
        "src_samples": src_samples, "rec_vals": rec_vals,
    })
    if simulator_enabled():
        if not compile_only:
            module.apply_points[1, 1, stream](*args)
        return
    kernel = _compiled(module, "apply_points", args)
    if not compile_only:
        _launch(kernel, args, (1, 1, 1), (1, 1, 1), stream, 0)


def launch_sweep(module: ModuleType, order: int, size: int, F, G, shape, nt, schedule_arrays,
                 sync_arrays, ticket_base: int, epoch: int, coeffs, stream=0,
                 compile_only: bool = False, values: Mapping[str, object] | None = None,
                 blocks: int | None = None):
    """Launch one DiamondTorre sweep of height ``nt``; return the compiled kernel object.

    ``schedule_arrays = (torre_x0, torre_yc, deps)`` and ``sync_arrays =
    (done, counter)`` are device arrays; ``ticket_base`` is the value of
    ``counter`` before this launch and ``epoch`` a number larger than every
    value in ``done``.  ``compile_only=True`` compiles (or loads from the disk
    cache) and prepares the kernel without launching it (both helpers).
    ``values`` are the variant's further values by name (:func:`kernel_arguments`):
    ``K`` and the profiles of a ``medium``
    (:data:`~diamondlab.kernels.cuda_source.MEDIUM_VALUES`), ``ev_ptr, events,
    src_samples, rec_vals`` with ``points``, ``chunk`` (tiers between two waits, an
    int64) for a ``pipelined`` module; the module takes those its variant reads.
    ``blocks`` (default: every torre) launches that many blocks: the next ``blocks`` tickets (one
    stage of a per-stage sweep).
    """
    nx, ny, nz = shape
    torre_x0, torre_yc, deps = schedule_arrays
    done, counter = sync_arrays
    ntorres = len(torre_x0) if blocks is None else blocks
    block = sweep_block(nz)
    shared = sweep_shared_bytes(order, size, nz, segments=module.segments)
    args = kernel_arguments(module.SWEEP_PARAMETERS, {
        "F": F, "G": G, "nx": nx, "ny": ny, "nz": nz, "nt": nt, "torre_x0": torre_x0, "torre_yc": torre_yc,
        "deps": deps, "done": done, "counter": counter, "ticket_base": np.int64(ticket_base),
        "epoch": np.int64(epoch), "coeffs": coeffs, **(values or {}),
    })
    return launch_generated(module, "diamondtorre_sweep", args, ntorres, block, shared, stream, compile_only)


def launch_generated(module: ModuleType, kernel_name: str, args: tuple, blocks: int | tuple, threads: int,
                     shared: int = 0, stream=0, compile_only: bool = False):
    """Launch ``module.kernel_name`` of a generated module
    (:func:`~diamondlab.kernels.generated.load_generated`, or any object holding CUDA kernels) on
    ``blocks`` blocks (a count, or a grid of up to three extents) of ``threads`` threads with ``shared``
    bytes of dynamic shared memory (above 48 KiB the kernel's limit is raised first); return the compiled
    kernel object (None under the simulator).

    The kernel is compiled once per argument types and launched directly (:func:`_launch`: no typing or
    marshalling of the same device arrays on every call).  ``compile_only`` compiles and prepares it.
    """
    if simulator_enabled():
        if not compile_only:
            getattr(module, kernel_name)[blocks, threads, stream, shared](*args)
        return None
    if not hasattr(module, "compiled"):
        module.compiled = {}
    kernel = _compiled(module, kernel_name, args)
    if shared > 48 * 1024:
        _allow_shared(kernel, shared)
    if not compile_only:
        grid = (*blocks, 1, 1)[:3] if isinstance(blocks, tuple) else (blocks, 1, 1)
        _launch(kernel, args, grid, (threads, 1, 1), stream, shared)
    return kernel
