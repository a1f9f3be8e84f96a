"""Numba CPU kernels: stepwise time stepping and DiamondTorre sweeps.

Contract
--------
Kernels take plain arrays and ints.  A field is a C-contiguous float32 array
of shape ``(nx + 2h, ny + 2h, nz + 2h)`` with ``h = ShS`` cells of zeros
around the domain (the fixed zero boundary); domain cell ``(x, y, z)`` is
element ``[x + h, y + h, z + h]``.  ``F`` holds level ``n`` and ``G`` level
``n - 1``; a step overwrites ``G`` with level ``n + 1`` (then the caller
swaps the roles).  A DiamondTorre sweep of height ``nt`` performs ``nt``
steps in place; tier ``k`` reads ``F`` and writes ``G`` when ``k`` is even and
the other way round when it is odd, so after an odd ``nt`` the roles swap.

Both kernels of one order call the same generated per-column update, which
computes the float32 formula of :mod:`diamondlab.numerics` in its fixed
order, without ``fastmath``: DiamondTorre equals stepwise bit for bit.

Every parallel iteration first puts its thread in flush-to-zero,
denormals-are-zero mode (:func:`flush_subnormals`, x86-64): a wave absorbed
by the sponge decays into subnormal floats, which x86 cores compute 30 times
slower (a run left going in the lab fell from 1.5 to 0.045 G cell updates/s,
BENCHMARKS.md); flushed, the field reaches zero instead.  Values below
``1.2e-38`` become zero, the same in both algorithms.  The iteration ends
by putting back the thread's own mode (:func:`restore_float_control`): after
a kernel no thread, the caller's, Numba's or one they start later, computes
differently from before.

Kernels are generated per stencil order ``NO`` by :func:`cpu_kernels` (the
neighbour sums are unrolled), written to a module in the user cache folder
and compiled with Numba's on-disk cache, so a second process does not
compile again.
"""

from __future__ import annotations

import functools
import platform
from types import ModuleType

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from diamondlab.kernels.generated import load_generated
from diamondlab.numerics import validate_order

__all__ = ["cpu_kernels", "float_control", "flush_subnormals", "generate_source", "restore_float_control"]

#: MXCSR's flush-to-zero (bit 15) and denormals-are-zero (bit 6) flags
_FTZ_DAZ = 0x8040


def _on_x86_64() -> bool:
    return platform.machine().lower() in ("x86_64", "amd64")


def _mxcsr_functions(builder):
    """LLVM's ``stmxcsr`` and ``ldmxcsr`` (store MXCSR to, and load it from, a pointer)."""
    fnty = ir.FunctionType(ir.VoidType(), [ir.IntType(8).as_pointer()])
    stmxcsr = cgutils.get_or_insert_function(builder.module, fnty, "llvm.x86.sse.stmxcsr")
    ldmxcsr = cgutils.get_or_insert_function(builder.module, fnty, "llvm.x86.sse.ldmxcsr")
    return stmxcsr, ldmxcsr


@intrinsic
def float_control(typingctx):
    """In a Numba function: this thread's MXCSR (x86-64's float control and status word; 0 elsewhere)."""

    def codegen(context, builder, signature, args):
        i32 = ir.IntType(32)
        if not _on_x86_64():
            return ir.Constant(i32, 0)
        stmxcsr, _ = _mxcsr_functions(builder)
        slot = cgutils.alloca_once(builder, i32)
        builder.call(stmxcsr, [builder.bitcast(slot, ir.IntType(8).as_pointer())])
        return builder.load(slot)

    return types.uint32(), codegen


@intrinsic
def flush_subnormals(typingctx):
    """In a Numba function: this thread's float results and operands below ``1.2e-38`` become zero
    (x86-64's MXCSR flags FTZ and DAZ; elsewhere nothing).

    Returns the thread's MXCSR from before (0 elsewhere), which the caller
    hands to :func:`restore_float_control` when its work is done: the flags
    must not outlive the kernel, in the caller's thread or in Numba's.
    """

    def codegen(context, builder, signature, args):
        i32 = ir.IntType(32)
        if not _on_x86_64():
            return ir.Constant(i32, 0)
        stmxcsr, ldmxcsr = _mxcsr_functions(builder)
        ptr = ir.IntType(8).as_pointer()
        slot = cgutils.alloca_once(builder, i32)
        builder.call(stmxcsr, [builder.bitcast(slot, ptr)])
        saved = builder.load(slot)
        builder.store(builder.or_(saved, ir.Constant(i32, _FTZ_DAZ)), slot)
        builder.call(ldmxcsr, [builder.bitcast(slot, ptr)])
        return saved

    return types.uint32(), codegen


@intrinsic
def restore_float_control(typingctx, saved):
    """In a Numba function: put back the MXCSR ``saved`` by :func:`flush_subnormals` (x86-64; elsewhere nothing)."""
    if not isinstance(saved, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        if not _on_x86_64():
            return context.get_dummy_value()
        i32 = ir.IntType(32)
        value = context.cast(builder, args[0], signature.args[0], types.uint32)
        _, ldmxcsr = _mxcsr_functions(builder)
        slot = cgutils.alloca_once(builder, i32)
        builder.store(value, slot)
        builder.call(ldmxcsr, [builder.bitcast(slot, ir.IntType(8).as_pointer())])
        return context.get_dummy_value()

    return types.void(saved), codegen


_TEMPLATE = """\
\"\"\"Generated by diamondlab.kernels.cpu for NO={order}. Do not edit.\"\"\"
import numpy as np
from numba import njit, prange, uint64

from diamondlab.kernels.cpu import flush_subnormals, restore_float_control
from diamondlab.kernels.tile_rows import tile_row_cpu as tile_row

SHS = {shs}


@njit(cache=True, nogil=True)
def column_constant(a, b, base, sx, sy, nzh, {coeff_args}):
    \"\"\"Column at flat offset ``base``: b <- level n+1 from a (level n) and b (level n-1).

    ``a`` and ``b`` are the flat padded fields; unsigned offsets keep the z
    loop free of wrap-around checks so that LLVM vectorises it.  The
    coefficients carry K = (c dt / h)^2.
    \"\"\"
    for z in range(uint64(SHS), nzh):
        p = base + z
        f0 = a[p]
        lap = c0 * f0
{lap_lines}
        b[p] = ((f0 + f0) - b[p]) + lap


{medium_columns}

@njit(cache=True, nogil=True)
def column_points(b, x, y, base, k, colstart, colcount, pt_z, pt_kind, pt_slot, src_samples, rec_vals):
    \"\"\"After column (x, y) reached its new level at tier/step k: inject sources, then record receivers.\"\"\"
    start = colstart[x, y]
    for j in range(start, start + colcount[x, y]):
        p = base + uint64(pt_z[j])
        if pt_kind[j] == 0:
            b[p] += src_samples[pt_slot[j], k]
        else:
            rec_vals[k, pt_slot[j]] = b[p]
{variants}
"""

# the flat views, strides and coefficients every kernel starts with
_PREAMBLE = """\
    {coeff_unpack}
    f = F.reshape(F.size)
    g = G.reshape(G.size)
    {extra_flat}
    sx = uint64(F.shape[1] * F.shape[2])
    sy = uint64(F.shape[2])
    nzh = uint64(F.shape[2] - SHS)
"""

_LOOPS = """

@njit(cache=True, parallel=True, nogil=True)
def stepwise_{variant}(F, G, nsteps, coeffs, {extra}xcount, colstart, colcount, pt_z, pt_kind, pt_slot, src_samples, rec_vals):
    \"\"\"Advance ``nsteps`` steps: x planes in parallel, y columns in order, z vectorised.\"\"\"
{preamble}    nxh = F.shape[0] - SHS
    nyh = F.shape[1] - SHS
    for step in range(nsteps):
        if step % 2 == 0:
            a, b = f, g
        else:
            a, b = g, f
        for x in prange(SHS, nxh):
            saved = flush_subnormals()  # the thread's own mode comes back at the end of the iteration
            for y in range(SHS, nyh):
                base = uint64(x) * sx + uint64(y) * sy
                column_{variant}(a, b, {extra_call_step}base, sx, sy, nzh, {coeff_args})
                if colstart[x, y] >= 0:
                    column_points(
                        b, x, y, base, step, colstart, colcount, pt_z, pt_kind, pt_slot, src_samples, rec_vals
                    )
            restore_float_control(saved)


@njit(cache=True, parallel=True, nogil=True)
def diamondtorre_{variant}(F, G, nt, radius, torre_x0, torre_yc, stage_start, coeffs, {extra}xcount, colstart, colcount, pt_z, pt_kind, pt_slot, src_samples, rec_vals):
    \"\"\"One sweep of height ``nt``: stages in order, the torres of a stage in parallel.\"\"\"
{preamble}    nx = F.shape[0] - 2 * SHS
    ny = F.shape[1] - 2 * SHS
    for s in range(len(stage_start) - 1):
        for i in prange(stage_start[s], stage_start[s + 1]):
            saved = flush_subnormals()  # the thread's own mode comes back at the end of the iteration
            x0 = torre_x0[i]
            yc = torre_yc[i]
            for k in range(nt):
                if k % 2 == 0:
                    a, b = f, g
                else:
                    a, b = g, f
                ax = x0 + SHS * k
                # the tile column by column: the y cells of a column are neighbours in memory
                for u in range(1 - radius, radius + 1):
                    x = ax + u
                    if x < 0 or x >= nx:
                        continue
                    lo, hi = tile_row(u, radius, yc, ny)
                    col = uint64(x + SHS) * sx
                    for y in range(lo, hi + 1):
                        base = col + uint64(y + SHS) * sy
                        column_{variant}(a, b, {extra_call_dt}base, sx, sy, nzh, {coeff_args})
                    if xcount[x + SHS] > 0:  # points act after the column: a tier's cells are independent
                        for y in range(lo, hi + 1):
                            if colstart[x + SHS, y + SHS] >= 0:
                                column_points(
                                    b, x + SHS, y + SHS, col + uint64(y + SHS) * sy, k, colstart,
                                    colcount, pt_z, pt_kind, pt_slot, src_samples, rec_vals
                                )
            restore_float_control(saved)
"""


# the medium variants' columns: K one number (sponge) or per cell (model), damped with per-axis profiles
_MEDIUM_COLUMN = """\
@njit(cache=True, nogil=True)
def column_{variant}(a, b, {k}, az, rz, axy, rxy, base, sx, sy, nzh, {coeff_args}):
    \"\"\"As ``column_constant`` with {what} and a damping layer ``s = eta dt / 2``.

    The damped update of ``u_tt + eta u_t = c^2 lap u`` is
    ``u+ = ((2u - a u-) + K lap) r`` with ``a = 1 - s`` and ``r = 1 / (1 + s)``,
    each the minimum of per-axis profiles (``axy``, ``rxy``: this column's x
    and y minimum; ``az``, ``rz``: the z profiles), as on the GPU.  The
    coefficients are the bare weights.
    \"\"\"
    for z in range(uint64(SHS), nzh):
        p = base + z
        f0 = a[p]
        lap = c0 * f0
{lap_lines}
        b[p] = (((f0 + f0) - min(axy, az[z]) * b[p]) + {k_cell} * lap) * min(rxy, rz[z])
"""

# the medium variants' arguments: K, then the per-axis profiles of 1 - s (A) and 1 / (1 + s) (R)
_PROFILE_ARGS = "{k}, AX, AY, AZ, RX, RY, RZ, "
_PROFILE_CALL = "{k}, AZ, RZ, min(AX[{x}], AY[{y}]), min(RX[{x}], RY[{y}]), "


def generate_source(order: int) -> str:
    """Python source of the kernel module for stencil order ``order``.

    >>> "a[p - uint64(2) * sx]" in generate_source(4)
    True
    """
    shs = validate_order(order) // 2
    coeff_args = ", ".join(f"c{i}" for i in range(shs + 1))
    lap = []
    for i in range(1, shs + 1):
        d = f"uint64({i})"
        ring = (
            f"((a[p - {d} * sx] + a[p + {d} * sx]) + (a[p - {d} * sy] + a[p + {d} * sy]))"
            f" + (a[p - {d}] + a[p + {d}])"
        )
        lap.append(f"        lap = lap + c{i} * ({ring})")
    unpack = "; ".join(f"c{i} = coeffs[{i}]" for i in range(shs + 1))
    variants = "".join(
        _LOOPS.replace("{preamble}", _PREAMBLE).format(
            variant=variant,
            coeff_args=coeff_args,
            coeff_unpack=unpack,
            extra=extra,
            extra_flat=flat,
            extra_call_step=call.format(x="x", y="y"),
            extra_call_dt=call.format(x="x + SHS", y="y + SHS"),
        )
        for variant, extra, flat, call in (
            ("constant", "", "", ""),
            ("sponge", _PROFILE_ARGS.format(k="kap"), "", _PROFILE_CALL.format(k="kap", x="{x}", y="{y}")),
            (
                "model",
                _PROFILE_ARGS.format(k="Kappa"),
                "kappa = Kappa.reshape(Kappa.size)",
                _PROFILE_CALL.format(k="kappa", x="{x}", y="{y}"),
            ),
        )
    )
    return _TEMPLATE.format(
        order=order,
        shs=shs,
        coeff_args=coeff_args,
        lap_lines="\n".join(lap),
        variants=variants,
        medium_columns="\n\n".join(
            _MEDIUM_COLUMN.format(variant=variant, k=k, k_cell=k_cell, what=what, coeff_args=coeff_args,
                                  lap_lines="\n".join(lap))
            for variant, k, k_cell, what in (("sponge", "kap", "kap", "one K (``kap``)"),
                                             ("model", "kappa", "kappa[p]", "K per cell (``kappa``)"))
        ),
    )


@functools.cache
def cpu_kernels(order: int) -> ModuleType:
    """The compiled kernel module for stencil order ``order`` (built once per process).

    Its kernels, each in a ``constant`` variant (K folded into ``coeffs``),
    a ``sponge`` one (bare weights, one float32 ``kap`` and the padded
    per-axis damping profiles ``AX, AY, AZ`` of ``1 - s`` and ``RX, RY, RZ`` of
    ``1 / (1 + s)``) and a ``model`` one (the same with a per-cell ``Kappa``)::

        stepwise_<variant>(F, G, nsteps, coeffs, [K, AX, AY, AZ, RX, RY, RZ,] *tables)
        diamondtorre_<variant>(F, G, nt, radius, torre_x0, torre_yc, stage_start,
                               coeffs, [K, AX, AY, AZ, RX, RY, RZ,] *tables)

    where ``tables`` is :meth:`diamondlab.kernels.points.PointTables.kernel_args`.
    """
    return load_generated(generate_source(order), f"diamondlab_cpu_no{order}")
