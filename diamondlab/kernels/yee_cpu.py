"""Numba CPU kernels of the Yee scheme (Maxwell's equations): stepwise and DiamondTorre, one cell update.

Contract
--------
Fields are float32 arrays ``E``, ``H`` (and the Drude current ``J``) of
shape ``(3, nx + 2M, ny + 2M, nz + 2M)``, ``M`` = the scheme's reach (1 at
order 2, 2 at order 4), zero beyond the grid; component ``c`` of cell
``(x, y, z)`` is ``F[c, x + M, y + M, z + M]`` (staggering:
:mod:`diamondlab.maxwell.scheme`).  A half step ``k`` updates ``H`` from
``E`` (``k`` even) or ``E`` from ``H`` (``k`` odd), a column of z at a time,
by :func:`yee_cpu_kernels`' ``h_column`` and ``e_column``: the material table
(:mod:`diamondlab.maxwell.materials`), the CPML's ``psi`` of the layer cells
(:mod:`diamondlab.maxwell.boundaries`) and the points of the column (dipoles
add to ``E`` after its update, probes record after their field's update).
Every array a cell's update writes (its field, ``psi``, ``J``) is that cell's
own, so the two arrays are leapfrogged in place exactly as the acoustic
scheme's two time levels (tier = half step, the tile of the acoustic stencil
of order ``2M``): ``diamondtorre`` runs the stages of a
:class:`~diamondlab.geometry.StageSchedule` of ``2 nsteps`` tiers and equals
``stepwise`` bit for bit (one update function, no ``fastmath``).

Periodic y and z (``wrap = (periodic y, periodic z)``): the halo is then no
longer zero but the image of the other side.  Every column write is
mirrored at once (:func:`mirror`, after the column's points): the column's
z ends into its own z halo, a column within ``M`` of a y face into the ghost
column that is its image.  A read of the halo therefore sees what the
infinite periodic grid holds there, provided that grid's schedule is run:
``diamondtorre`` takes a ``periodic_y`` schedule (one torre per class of
``yc`` modulo ny, ``ny`` a multiple of ``2R``) and wraps its rows modulo
``ny`` (:func:`~diamondlab.kernels.tile_rows.tile_row_wrapped`), so a torre
across the face runs as one, as it and its images would.

Every parallel iteration puts its thread in flush-to-zero mode and back
(:func:`~diamondlab.kernels.cpu.flush_subnormals`, as the acoustic kernels:
fields absorbed by the CPML decay into subnormals otherwise).

Kernels are generated per order (the derivative's terms unrolled), written
to the cache folder and compiled there with Numba's ``cache=True`` on first
use: later processes load the compiled code (:func:`yee_cpu_kernels`).
"""

from __future__ import annotations

import functools
import itertools
from types import SimpleNamespace

import numpy as np

__all__ = ["column_materials", "generate_source", "yee_cpu_kernels"]


def edge_width(lz) -> int:
    """Cells at each end of a z column updated by the general (edge) loop: the CPML's z layer, at least one
    (the PEC planes), at most the column."""
    lo = 0
    while lo < len(lz) and lz[lo] >= 0:
        lo += 1
    return min(max(lo, 1), len(lz))


def column_materials(index, lz) -> np.ndarray:
    """Per component and column ``(3, nx, ny)`` int16: the material of the column's interior z range (between
    the edges of :func:`edge_width`) where it is one material, ``-1`` otherwise."""
    nz = index.shape[3]
    lo = edge_width(lz)
    sub = index[..., lo:max(nz - lo, lo)]
    if sub.shape[3] == 0:
        return np.full(index.shape[:3], -1, dtype=np.int16)
    uniform = (sub == sub[..., :1]).all(axis=3)
    return np.where(uniform, sub[..., 0].astype(np.int16), np.int16(-1)).astype(np.int16)


def _diff(a: str, forward: bool, s: str, s2: str, order: int) -> str:
    """The float32 derivative of ``a`` at flat offset ``p`` along the axis of stride ``s`` (``s2`` = 2 s)."""
    if forward:
        v = f"(w1 * ({a}[p + {s}] - {a}[p]))"
        if order == 4:
            v += f" + (w2 * ({a}[p + {s2}] - {a}[p - {s}]))"
    else:
        v = f"(w1 * ({a}[p] - {a}[p - {s}]))"
        if order == 4:
            v += f" + (w2 * ({a}[p + {s}] - {a}[p - {s2}]))"
    return v


_AX = {"x": ("sx", "sx2"), "y": ("sy", "sy2"), "z": ("one", "two")}


def _range_fn(field: str, order: int, px: str, py: str, pz: bool, uni: bool, dr: bool) -> str:  # noqa: C901
    """Source of one z range loop of a column: ``px``/``py`` ``'c'`` (in the x/y layer), ``'n'`` (not) or
    ``'r'`` (checked), ``pz`` the z layer checked per cell, ``uni`` one material per component (``m0..m2``),
    ``dr`` the Drude current (E only)."""
    name = f"{field}_{px}{py}{'z' if pz else ''}{'u' if uni else 'g'}{'d' if dr else ''}"
    h = field == "h"
    s = "e" if h else "h"
    names = [f"d{s}z_dy", f"d{s}y_dz", f"d{s}x_dz", f"d{s}z_dx", f"d{s}y_dx", f"d{s}x_dy"]
    lines = [f"def {name}(ex, ey, ez, hx, hy, hz, jx, jy, jz, mx, my, mz, table, m0, m1, m2, base, mb,",
             "        z0, z1, sx, sy, psx, pxb, pxs, bxu, axu, ix, psy, pyb, pys, byv, ayv, iy,",
             "        psz, pzb, pzs, lz, bz, az):",
             "    one = uint64(1)",
             "    two = uint64(2)",
             "    sx2 = sx + sx",
             "    sy2 = sy + sy",
             "    m = uint64(M)"]
    if uni:
        if h:
            lines += ["    c0 = table[m0, 4]", "    c1 = table[m1, 4]", "    c2 = table[m2, 4]"]
        else:
            for c in range(3):
                lines += [f"    ca{c} = table[m{c}, 0]", f"    cb{c} = table[m{c}, 1]",
                          f"    kj{c} = table[m{c}, 2]", f"    bj{c} = table[m{c}, 3]"]
    lines += ["    for Z in range(z0, z1):", "        p = base + Z", "        w = Z - m"]
    for n in names:
        lines.append(f"        {n} = {_diff(s + n[2], h, *_AX[n[-1]], order)}")
    k0 = 2 if h else 0
    # psi terms: x layer (d?z_dx, d?y_dx), y layer (d?z_dy, d?x_dy), z layer (d?y_dz, d?x_dz)
    layers = (("x", px, (f"d{s}z_dx", f"d{s}y_dx")), ("y", py, (f"d{s}z_dy", f"d{s}x_dy")))
    for axis, flag, (d0, d1) in layers:
        if flag == "n":
            continue
        ind = "        "
        if flag == "r":
            lines.append(f"        if i{axis} >= 0:")
            ind += "    "
        b, a = ("bxu", "axu") if axis == "x" else ("byv", "ayv")
        lines += [f"{ind}i0 = p{axis}b + uint64({k0}) * p{axis}s + w", f"{ind}i1 = i0 + p{axis}s",
                  f"{ind}ps{axis}[i0] = {b} * ps{axis}[i0] + {a} * {d0}",
                  f"{ind}ps{axis}[i1] = {b} * ps{axis}[i1] + {a} * {d1}",
                  f"{ind}{d0} += ps{axis}[i0]", f"{ind}{d1} += ps{axis}[i1]"]
    if pz:
        d0, d1 = f"d{s}y_dz", f"d{s}x_dz"
        lines += ["        iz = lz[w]", "        if iz >= 0:",
                  f"            i0 = pzb + uint64({k0}) * pzs + uint64(iz)", "            i1 = i0 + pzs",
                  f"            psz[i0] = bz[w] * psz[i0] + az[w] * {d0}",
                  f"            psz[i1] = bz[w] * psz[i1] + az[w] * {d1}",
                  f"            {d0} += psz[i0]", f"            {d1} += psz[i1]"]
    curls = [f"d{s}z_dy - d{s}y_dz", f"d{s}x_dz - d{s}z_dx", f"d{s}y_dx - d{s}x_dy"]
    for c, comp in enumerate("xyz"):
        if h:
            coef = f"c{c}" if uni else f"table[m{comp}[mb + w], 4]"
            lines.append(f"        h{comp}[p] = h{comp}[p] - {coef} * ({curls[c]})")
            continue
        lines += [f"        old = e{comp}[p]", f"        curl = {curls[c]}"]
        if uni:
            ca, cb, kj, bj = f"ca{c}", f"cb{c}", f"kj{c}", f"bj{c}"
        else:
            lines.append(f"        mm = m{comp}[mb + w]")
            ca, cb, kj, bj = "table[mm, 0]", "table[mm, 1]", "table[mm, 2]", "table[mm, 3]"
        if dr:
            lines += [f"        cur = {kj} * j{comp}[p] + {bj} * old", f"        j{comp}[p] = cur",
                      "        curl = curl - cur"]
        lines.append(f"        e{comp}[p] = {ca} * old + {cb} * curl")
    return "@njit(nogil=True)\n" + "\n".join(lines) + "\n"


_COLUMN = """
@njit(nogil=True)
def {field}_column(ctx, X, Y, pml):
    \"\"\"{field_up} of column (X, Y) (padded indices): the edge ranges of z (the CPML's z layer, the PEC
    planes) cell by cell, the interior in a loop without branches: no psi_z, the x/y layer terms only where
    the column lies in them, the coefficients hoisted where the column's interior is one material.\"\"\"
    (ex, ey, ez, hx, hy, hz, jx, jy, jz, mx, my, mz, colmat, table, drude, sx, sy, nz, nyz, zlo, zhi, zend,
     psx, psy, psz, pxs, pys, pzs, w2y, w2z) = ctx
    lx, ly, lz, bxp, axp, byp, ayp, bz, az = pml
    u, v = X - M, Y - M
    ix, iy = lx[u], ly[v]
    base = uint64(X) * sx + uint64(Y) * sy
    mb = uint64(u) * nyz + uint64(v) * nz
    pxb = uint64(ix) * nyz + uint64(v) * nz if ix >= 0 else uint64(0)
    pyb = (uint64(u) * w2y + uint64(iy)) * nz if iy >= 0 else uint64(0)
    pzb = (uint64(u) * (nyz // nz) + uint64(v)) * w2z
    bxu, axu, byv, ayv = bxp[u], axp[u], byp[v], ayp[v]
    m0, m1, m2 = colmat[0, u, v], colmat[1, u, v], colmat[2, u, v]
    uni = m0 >= 0 and m1 >= 0 and m2 >= 0
    fields = (ex, ey, ez, hx, hy, hz, jx, jy, jz, mx, my, mz, table, m0, m1, m2, base, mb)
    tail = (sx, sy, psx, pxb, pxs, bxu, axu, ix, psy, pyb, pys, byv, ayv, iy, psz, pzb, pzs, lz, bz, az)
{dr_line}
{dispatch}
"""


def _dispatch(field: str) -> str:
    """The if-tree choosing the interior variant, then the two edge calls."""
    lines = []
    drs = (False, True) if field == "e" else (False,)
    for uni in (True, False):
        lines.append(f"    {'if uni' if uni else 'else'}:")
        for px in "cn":
            lines.append(f"        {'if ix >= 0' if px == 'c' else 'else'}:")
            for py in "cn":
                lines.append(f"            {'if iy >= 0' if py == 'c' else 'else'}:")
                for dr in drs:
                    name = f"{field}_{px}{py}{'u' if uni else 'g'}{'d' if dr else ''}"
                    call = f"{name}(*fields, zlo, zhi, *tail)"
                    if len(drs) == 1:
                        lines.append(f"                {call}")
                    else:
                        lines.append(f"                {'if dr' if dr else 'if not dr'}:")
                        lines.append(f"                    {call}")
    for dr in drs:
        name = f"{field}_rrzg{'d' if dr else ''}"
        ind = "    "
        if len(drs) > 1:
            lines.append(f"    {'if drude' if dr else 'if not drude'}:")
            ind += "    "
        lines.append(f"{ind}{name}(*fields, uint64(M), zlo, *tail)")
        lines.append(f"{ind}{name}(*fields, zhi, zend, *tail)")
    return "\n".join(lines)


_TAIL = '''

@njit(nogil=True)
def column_points(E, H, half, step, X, Y, points, src, rec):
    """After column (X, Y)'s half step ``half`` (0: H, 1: E) of step ``step``: the source points of the field
    just updated add their samples (dipoles and TFSF corrections on E, TFSF corrections on H), then its
    probes record."""
    colstart, colcount, pt_z, pt_comp, pt_kind, pt_slot = points
    start = colstart[X, Y]
    if start < 0:
        return
    for p in range(start, start + colcount[X, Y]):
        c = pt_comp[p]
        if (c >= 3) != (half == 0):
            continue
        field = H[c - 3] if c >= 3 else E[c]
        if pt_kind[p] == 0:
            field[X, Y, pt_z[p]] += src[pt_slot[p], step]
        else:
            rec[step, pt_slot[p]] = field[X, Y, pt_z[p]]


@njit(nogil=True)
def mirror(F, X, Y, wy, wz):
    """After column (X, Y) (padded) of ``F`` is written: its copies in the halo of a periodic z (the column's
    own ends) and a periodic y (the ghost columns that are images of this one), written at once."""
    ny, nz = F.shape[2] - 2 * M, F.shape[3] - 2 * M
    if wz:
        for c in range(3):
            for g in range(M):
                F[c, X, Y, g] = F[c, X, Y, M + (g - M + M * nz) % nz]
                F[c, X, Y, M + nz + g] = F[c, X, Y, M + g % nz]
    v = Y - M
    if wy and (v < M or v >= ny - M):
        for g in range(M):
            below, above = (g - M + M * ny) % ny == v, g % ny == v  # ghost columns g, M + ny + g
            # element by element: a slice copy compiles its shape checks and messages (seconds an order)
            for c in range(3):
                for z in range(F.shape[3]):
                    if below:
                        F[c, X, g, z] = F[c, X, Y, z]
                    if above:
                        F[c, X, M + ny + g, z] = F[c, X, Y, z]


@njit(nogil=True)
def column(E, H, ctx, X, Y, half, step, pml_h, pml_e, points, src, rec, wrap):
    if half == 0:
        h_column(ctx, X, Y, pml_h)
    else:
        e_column(ctx, X, Y, pml_e)
    column_points(E, H, half, step, X, Y, points, src, rec)
    if wrap[0] or wrap[1]:
        mirror(H if half == 0 else E, X, Y, wrap[0], wrap[1])


@njit(nogil=True)
def flat(a):
    return a.reshape(a.size)


@njit(nogil=True)
def context(E, H, J, drude, mat, table, pml_h, psi):
    """Flat views and strides (unsigned offsets: no wrap-around checks, z loops LLVM vectorises)."""
    index, colmat = mat
    lz = pml_h[2]
    nx, ny, nz = index.shape[1], index.shape[2], index.shape[3]
    lo = 0
    while lo < nz and lz[lo] >= 0:
        lo += 1
    lo = min(max(lo, 1), nz)
    zlo = uint64(M + lo)
    zhi = max(uint64(M + nz - lo), zlo)
    zend = uint64(M + nz)
    w2x, w2y, w2z = psi[0].shape[1], psi[1].shape[2], psi[2].shape[3]
    return (flat(E[0]), flat(E[1]), flat(E[2]), flat(H[0]), flat(H[1]), flat(H[2]), flat(J[0]), flat(J[1]),
            flat(J[2]), flat(index[0]), flat(index[1]), flat(index[2]), colmat, table, drude,
            uint64(E.shape[2] * E.shape[3]), uint64(E.shape[3]), uint64(nz), uint64(ny * nz), zlo, zhi, zend,
            flat(psi[0]), flat(psi[1]), flat(psi[2]), uint64(w2x * ny * nz), uint64(nx * w2y * nz),
            uint64(nx * ny * w2z), uint64(w2y), uint64(w2z))


@njit(parallel=True, nogil=True)
def stepwise(E, H, J, drude, mat, table, nsteps, pml_h, pml_e, psi, points, src, rec, wrap):
    """``nsteps`` steps: per half step, x planes in parallel, y columns in order, z innermost."""
    nx, ny = E.shape[1] - 2 * M, E.shape[2] - 2 * M
    ctx = context(E, H, J, drude, mat, table, pml_h, psi)
    for k in range(2 * nsteps):
        for X in prange(M, nx + M):
            saved = flush_subnormals()  # as the acoustic kernels: the thread's own mode back at the end
            for Y in range(M, ny + M):
                column(E, H, ctx, X, Y, k % 2, k // 2, pml_h, pml_e, points, src, rec, wrap)
            restore_float_control(saved)


@njit(parallel=True, nogil=True)
def diamondtorre(E, H, J, drude, mat, table, radius, torre_x0, torre_yc, stage_start, ntiers,
                 pml_h, pml_e, psi, points, src, rec, wrap):
    """One sweep of ``ntiers`` half steps (even): stages in order, the torres of a stage in parallel; on a
    periodic y (``wrap[0]``) a tile's rows wrap modulo ny."""
    nx, ny = E.shape[1] - 2 * M, E.shape[2] - 2 * M
    ctx = context(E, H, J, drude, mat, table, pml_h, psi)
    for s in range(len(stage_start) - 1):
        for i in prange(stage_start[s], stage_start[s + 1]):
            saved = flush_subnormals()
            x0 = torre_x0[i]
            yc = torre_yc[i]
            for k in range(ntiers):
                ax = x0 + M * k
                for du in range(1 - radius, radius + 1):
                    x = ax + du
                    if x < 0 or x >= nx:
                        continue
                    lo, hi = tile_row(du, radius, yc, ny, wrap[0])
                    for y in range(lo, hi + 1):
                        column(E, H, ctx, x + M, wrap_y(y, ny) + M, k % 2, k // 2, pml_h, pml_e, points, src,
                               rec, wrap)
            restore_float_control(saved)
'''


def generate_source(order: int) -> str:
    """Python source of the kernels of ``order`` (run with ``M``, ``w1``, ``w2``, Numba in its namespace)."""
    parts = []
    for field in "he":
        drs = (False, True) if field == "e" else (False,)
        for px, py, uni, dr in itertools.product("cn", "cn", (True, False), drs):
            parts.append(_range_fn(field, order, px, py, False, uni, dr))
        for dr in drs:
            parts.append(_range_fn(field, order, "r", "r", True, False, dr))
        dr_line = ("    dr = drude and ((not uni) or table[m0, 2] != 0 or table[m0, 3] != 0"
                   " or table[m1, 2] != 0 or table[m1, 3] != 0 or table[m2, 2] != 0 or table[m2, 3] != 0)"
                   if field == "e" else "")
        parts.append(_COLUMN.format(field=field, field_up=field.upper(), dr_line=dr_line,
                                    dispatch=_dispatch(field)))
    return "\n\n".join(parts) + _TAIL


#: The generated module's opening: its imports and the order's constants (``M``, ``w1``, ``w2``).
_HEADER = """\
\"\"\"Generated by diamondlab.kernels.yee_cpu for order {order}. Do not edit.\"\"\"
import numpy as np
from numba import njit, prange, uint64

from diamondlab.kernels.cpu import flush_subnormals, restore_float_control
from diamondlab.kernels.tile_rows import tile_row_wrapped_cpu as tile_row
from diamondlab.kernels.tile_rows import wrap_y_cpu as wrap_y

M = {reach}
w1 = np.float32({w1})
w2 = np.float32({w2})
"""


@functools.cache
def yee_cpu_kernels(order: int) -> SimpleNamespace:
    """The kernels of the Yee scheme of ``order`` (2 or 4): ``stepwise`` and ``diamondtorre``, both taking
    ``mat = (index, column_materials(index, lz))``.

    The source is written to the cache folder and imported from there
    (:func:`~diamondlab.kernels.generated.load_generated`), every function with Numba's ``cache=True``:
    a process after the first loads the compiled code instead of compiling it again (about a minute of
    one core per order).
    """
    from diamondlab.kernels.generated import load_generated

    header = _HEADER.format(order=order, reach=order // 2, w1="1.0" if order == 2 else "9.0 / 8.0",
                            w2="0.0" if order == 2 else "-1.0 / 24.0")
    text = header + "\n\n" + generate_source(order).replace("@njit(", "@njit(cache=True, ")
    module = load_generated(text, f"diamondlab_yee_cpu_no{order}")
    return SimpleNamespace(order=order, reach=order // 2, stepwise=module.stepwise, functions=vars(module),
                           diamondtorre=module.diamondtorre)
