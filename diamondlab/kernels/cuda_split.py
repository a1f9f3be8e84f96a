"""Split-tile DiamondTorre sweep: the module factory and the launch helper.

Contract
--------
:func:`split_kernels` generates (source in
:mod:`diamondlab.kernels.cuda_split_source`), writes to the user cache folder
and imports the module of one ``(NO, DTS, P)``; its ``split_sweep`` kernel is
compiled on first launch (Numba's disk cache).  :func:`launch_split_sweep`
mirrors :func:`diamondlab.kernels.cuda.launch_sweep` (same fields, schedule
and synchronisation arrays, tickets and epochs; the dependencies come from
:func:`diamondlab.kernels.cuda.sweep_dependencies` with the tile's radius),
with a block of ``(split_block(nz), P)`` threads and
:func:`split_shared_bytes` of dynamic shared memory.  A sweep of height ``nt``
leaves the fields exactly as ``nt`` steps of
``cuda_kernels(NO, 1).stepwise_step`` do (bit for bit).

Register budget: the tile's two levels and strips take about
``4 * 2 R^2 + 4 ShS (2R - 1)`` floats per z (NO=8, DTS=2: about 600), spread
over ``P`` threads; a multiprocessor's 65536 registers hold them for about
100 z cells, so the split sweep is meant for short columns (``nz <= 64``:
one block per multiprocessor, ``P * split_block(nz) * regs <= 65536``).
"""

from __future__ import annotations

import functools
from types import ModuleType

import numpy as np

from diamondlab.kernels.cuda import _allow_shared, _compiled, _launch, simulator_enabled
from diamondlab.kernels.cuda_split_source import SplitLayout, generate_split_source
from diamondlab.kernels.generated import load_generated

__all__ = [
    "launch_split_sweep",
    "split_block",
    "split_kernels",
    "split_register_cap",
    "split_shared_bytes",
]

#: Largest shared memory a block may ask for on an H100 (227 KiB).
MAX_SHARED_BYTES = 227 * 1024


def split_block(nz: int, simulator: bool | None = None) -> int:
    """Threads along z of a split block: ``nz`` rounded up to a warp (``nz`` in the simulator)."""
    if simulator is None:
        simulator = simulator_enabled()
    return nz if simulator else -(-nz // 32) * 32


def split_shared_bytes(order: int, size: int, parts: int, nz: int) -> int:
    """Dynamic shared memory of a split block: two buffers of ``NCP`` slots per z row (with pads).

    >>> split_shared_bytes(8, 2, 4, 64) == 2 * 205 * (64 + 8) * 4
    True
    """
    lay = _layout(order, size, parts)
    return 2 * lay.ncp * (split_block(nz, simulator=False) + 2 * lay.shs) * 4


def split_register_cap(nz: int, parts: int) -> int:
    """Largest register count that lets one ``(split_block(nz), parts)`` block fit a multiprocessor.

    >>> split_register_cap(64, 4), split_register_cap(128, 4)
    (255, 128)
    """
    return min(255, 65536 // (split_block(nz, simulator=False) * parts) // 8 * 8)


@functools.cache
def _layout(order: int, size: int, parts: int) -> SplitLayout:
    return SplitLayout(order, size, parts)


@functools.cache
def split_kernels(order: int, size: int, parts: int, max_registers: int | None = None,
                  yz: tuple[int, int] | None = None, left_from_memory: bool = False) -> ModuleType:
    """The generated split-sweep module for ``(NO, DTS, P)`` (built once per process)."""
    sim = simulator_enabled()
    source = generate_split_source(order, size, parts, max_registers=max_registers, simulator=sim,
                                   yz=yz, left_from_memory=left_from_memory)
    tag = f"diamondlab_cuda_split_no{order}_dts{size}_p{parts}{'_sim' if sim else ''}"
    module = load_generated(source, tag)
    module.compiled = {}
    module.order, module.size, module.parts = order, size, parts
    return module


def launch_split_sweep(module: ModuleType, F, G, shape, nt, schedule_arrays, sync_arrays,
                       ticket_base: int, epoch: int, coeffs, stream=0, compile_only: bool = False,
                       kernel=None):
    """Launch one split DiamondTorre sweep of height ``nt``; return the compiled kernel object.

    Arguments as :func:`diamondlab.kernels.cuda.launch_sweep` (``schedule_arrays
    = (torre_x0, torre_yc, deps)``, ``sync_arrays = (done, counter)``,
    ``ticket_base`` the counter's value before this launch, ``epoch`` larger
    than every value in ``done``); ``(NO, DTS, P)`` come from ``module``.
    ``kernel`` launches an already compiled (for example unpickled) kernel
    object instead of compiling ``module.split_sweep``.
    """
    nx, ny, nz = shape
    torre_x0, torre_yc, deps = schedule_arrays
    done, counter = sync_arrays
    ntorres = len(torre_x0)
    parts = module.parts
    bz = split_block(nz)
    shared = split_shared_bytes(module.order, module.size, parts, nz)
    if shared > MAX_SHARED_BYTES:
        raise ValueError(f"nz={nz} needs {shared} bytes of shared memory per block; "
                         f"at most {MAX_SHARED_BYTES}")
    args = (F, G, nx, ny, nz, nt, torre_x0, torre_yc, deps, done, counter,
            np.int64(ticket_base), np.int64(epoch), coeffs)
    if simulator_enabled():
        if not compile_only:
            lay = _layout(module.order, module.size, parts)
            sim_shared = 2 * lay.ncp * (bz + 2 * lay.shs) * 4
            module.split_sweep[ntorres, (bz, parts), stream, sim_shared](*args)
        return None
    if kernel is None:
        kernel = _compiled(module, "split_sweep", args)
    if shared > 48 * 1024:
        _allow_shared(kernel, shared)
    if not compile_only:
        _launch(kernel, args, (ntorres, 1, 1), (bz, parts, 1), stream, shared)
    return kernel
