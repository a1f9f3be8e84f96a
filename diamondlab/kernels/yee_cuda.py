"""Numba-CUDA kernels of the Yee scheme: stepwise and DiamondTorre, one cell update.

Contract
--------
The arrays are those of :mod:`diamondlab.kernels.yee_cpu` on the device,
flat: ``E``, ``H``, ``J`` hold ``(3, nx + 2M, ny + 2M, nz + 2M)`` float32
(zero halo of the scheme's reach ``M``) in C order, the material index
``(3, nx, ny, nz)`` uint8 and its float32 table (8 numbers a medium); a
cell's neighbours are one addition away (no 4D index arithmetic per load);
the CPML's per-axis layer maps and ``(b, a)`` profiles and its ``psi``
arrays, the column tables of the dipoles and probes.  One thread updates
one cell, ``z`` across the threads of a block (a block holds a whole
column: ``nz <= 1024``):

- ``stepwise``: one half step (``half`` 0: ``H``, 1: ``E``) of every cell, a
  block per ``(x, y)`` column;
- ``diamondtorre``: a whole sweep in one launch, a block per torre; blocks
  take tickets in the schedule's launch order, and each runs its torre's
  ``ntiers`` half steps (tile columns in the geometry's order), a
  ``syncthreads`` between tiers (the z neighbours of the next tier are
  other threads'), waiting every ``chunk`` tiers on the two torres it
  depends on (published progress flags, as the acoustic sweep of
  :mod:`diamondlab.kernels.cuda_source` does).  Stages overlap: a torre
  starts as soon as its neighbours are a chunk ahead, so the GPU holds
  many stages at once instead of one stage of ``ny / 2R`` torres.

Both call the same device functions ``h_cell`` and ``e_cell`` (no
``fastmath``), so the two algorithms agree bit for bit on the GPU, as on
the CPU; CPU and GPU agree to float32 rounding.

Periodic y and z (``wy``, ``wz``) as on the CPU (:mod:`diamondlab.kernels.yee_cpu`):
a cell's thread writes the value it stored (after its points) into its
images in the halo at once (``mirror``, before the progress flag that
publishes it), and ``diamondtorre`` takes the ``periodic_y`` schedule
(its dependencies wrap modulo ``ny``) and wraps a tile's rows modulo
``ny``.  Importing this module does not import numba.cuda;
:func:`yee_cuda_kernels` does, once per order.
"""

from __future__ import annotations

import functools
from types import SimpleNamespace

import numpy as np

from diamondlab.kernels.tile_rows import tile_row_wrapped, wrap_y

__all__ = ["MAX_GRID_Y", "MAX_NZ", "plain_offsets", "point_lists", "point_range", "segment_copy_kernels",
           "stepwise_launches", "yee_cuda_kernels", "yee_register_sweep", "yee_shared_bytes", "z_slabs"]

#: The tallest z column a block holds (one thread a cell).
MAX_NZ = 1024
#: The most blocks a launch takes along its grid's second axis (CUDA's limit): the stepwise launches put one
#: horizontal extent there (y fastest: x; x fastest: y)
MAX_GRID_Y = 65535

#: numba.cuda, imported by the first :func:`yee_cuda_kernels` or :func:`segment_copy_kernels` call
cuda = None


@functools.cache
def point_range():
    """The device function ``cell_points_range(colstart, colcount, pt_z, X, Y, Z) -> (first, end)``: the
    points of padded cell (X, Y, Z) are ``first .. end - 1`` (a column's points are sorted by z: two
    bisections).  Both Yee sweeps and the stepwise kernel call it."""
    from numba import cuda as numba_cuda

    @numba_cuda.jit(device=True)
    def cell_points_range(colstart, colcount, pt_z, X, Y, Z):  # noqa: N803 - padded indices
        start = colstart[X, Y]
        end = start + colcount[X, Y]
        lo, hi = start, end
        while lo < hi:  # the first point at z >= Z
            mid = (lo + hi) // 2
            if pt_z[mid] < Z:
                lo = mid + 1
            else:
                hi = mid
        first, hi = lo, end
        while lo < hi:  # the first point at z > Z
            mid = (lo + hi) // 2
            if pt_z[mid] <= Z:
                lo = mid + 1
            else:
                hi = mid
        return first, lo

    return cell_points_range


#: The register cap of the stepwise kernels with a CPML (see :func:`yee_cuda_kernels`)
STEPWISE_PML_REGISTERS = 48
#: The register cap of ``stepwise_listed`` (the columns an x or y layer crosses, a block of a whole column
#: each): 40 holds six blocks of 256 a multiprocessor against five at 48, with no spill; on the H200 at
#: 512x512x256 its half steps took 305 -> 279 us a step at order 2 and 324 -> 306 at order 4 (BENCHMARKS.md,
#: "The physics scene's stepwise launches under Nsight Compute")
STEPWISE_LISTED_REGISTERS = 40
#: The register cap of the plain scene's 32-bit kernels (``stepwise_plain*``; None: none).  At order 4 they
#: hold 40 registers uncapped: six blocks of 256 a multiprocessor; at 36 (8 bytes spilled) seven, and on the
#: H200 the vacuum's step at 512x512x256 took 2302 -> 2261 us (32: 16 bytes spilled, 2551 us).  The engine
#: runs them at order 4 (``lean_stepwise``); BENCHMARKS.md, "The physics scene's stepwise launches under
#: Nsight Compute"
STEPWISE_PLAIN_REGISTERS = 36


@functools.cache
def yee_cuda_kernels(order: int, pml: bool = True, points: bool = True,  # noqa: C901 - one closure per scheme
                     drude: bool = True, pml_xy: bool = True) -> SimpleNamespace:
    """The CUDA kernels of the Yee scheme of ``order`` (2 or 4) with the features a run has compiled in.

    ``pml``, ``points``, ``drude``: whether the CPML's layers, source and probe points, and Drude currents
    are handled at all (a run without one gets kernels without its loads and branches; the arithmetic of
    every cell is the same either way, so the results are too); ``pml_xy``: whether the CPML's x and y
    layers are (False: only its z layers, for columns no x or y layer crosses).
    """
    global cuda  # a module global, as the CUDA simulator expects to find it in a kernel's globals
    from numba import config, cuda, int64, uint32, uint64

    M = order // 2  # noqa: N806 - the reach, a compile-time constant
    PML, POINTS, DRUDE = bool(pml), bool(points), bool(drude)  # noqa: N806 - compile-time constants
    # The type of every field, table and layer index: unsigned, so no access compares with zero and selects a
    # wrapped index (the same values: no index is negative).  Measured on the H200 with every load of a cell
    # before its first store, the plain order-2 kernel: 5-11 % faster than with signed indices at 256^3 and
    # 512x512x256 (7 % slower at 128^3); the physics scene's kernels: 12-16 % faster (BENCHMARKS.md, "The Yee
    # stepwise kernel's instructions" and "Loads before stores").
    U = uint64  # noqa: N806
    PML_XY = bool(pml_xy)  # noqa: N806
    w1 = np.float32(1.0 if order == 2 else 9.0 / 8.0)
    w2 = np.float32(0.0 if order == 2 else -1.0 / 24.0)
    ZERO = np.float32(0.0)  # noqa: N806 - a compile-time constant

    def capped(registers):
        """``cuda.jit`` with at most ``registers`` a thread (None: no cap; the simulator takes none)."""
        return cuda.jit(max_registers=registers) if registers and not config.ENABLE_CUDASIM else cuda.jit

    row = cuda.jit(device=True)(tile_row_wrapped)
    wrap = cuda.jit(device=True)(wrap_y)
    points_of = point_range()

    # derivatives of flat field ``a`` at flat offset p along stride s: forward (H points), backward (E points)
    @cuda.jit(device=True)
    def fwd(a, p, s):
        v = w1 * (a[U(p + s)] - a[U(p)])
        if M == 2:
            v += w2 * (a[U(p + 2 * s)] - a[U(p - s)])
        return v

    @cuda.jit(device=True)
    def bwd(a, p, s):
        v = w1 * (a[U(p)] - a[U(p - s)])
        if M == 2:
            v += w2 * (a[U(p + s)] - a[U(p - 2 * s)])
        return v

    @cuda.jit(device=True)
    def layer(psi, k, i, j, m, b, a, d):
        """A derivative ``d`` in the CPML: ``psi <- b psi + a d`` (this cell's own), then ``d + psi`` (``a d``
        fused, as before the loads moved: see :func:`e_comp`)."""
        at = (U(k), U(i), U(j), U(m))
        psi[at] = cuda.fma(a, d, b * psi[at])
        return d + psi[at]

    @cuda.jit(device=True)
    def damp(x, y, z, lx, ly, lz, pb, pa, psix, psiy, psiz, k, d20, d10, d21, d01, d12, d02):
        """The six differences of cell (x, y, z) (``dca``: component ``c`` along axis ``a``), damped where
        the cell lies in a layer of each axis: the ``psi`` slots ``k`` and ``k + 1`` (2 and 3 in the H half
        step, 0 and 1 in the E half step)."""
        # the three layer indices are loaded before any branch: a load issued after the x and y layers'
        # branches waits alone, which cost the physics scene's order-4 half step 6-14 % (BENCHMARKS.md)
        iz = lz[U(z)]
        if PML_XY:
            ix, iy = lx[U(x)], ly[U(y)]
            if ix >= 0:
                d20 = layer(psix, k, ix, y, z, pb[0, U(x)], pa[0, U(x)], d20)
                d10 = layer(psix, k + 1, ix, y, z, pb[0, U(x)], pa[0, U(x)], d10)
            if iy >= 0:
                d21 = layer(psiy, k, x, iy, z, pb[1, U(y)], pa[1, U(y)], d21)
                d01 = layer(psiy, k + 1, x, iy, z, pb[1, U(y)], pa[1, U(y)], d01)
        if iz >= 0:
            d12 = layer(psiz, k, x, y, iz, pb[2, U(z)], pa[2, U(z)], d12)
            d02 = layer(psiz, k + 1, x, y, iz, pb[2, U(z)], pa[2, U(z)], d02)
        return d20, d10, d21, d01, d12, d02

    @cuda.jit(device=True)
    def h_cell(E, H, mat, table, X, Y, Z, lx, ly, lz, pb, pa, psix, psiy, psiz):
        """``H <- H - dh curl E`` at padded (X, Y, Z), the CPML's psi where the cell is in a layer.

        Every load of the update comes before its first store: the compiler cannot tell that a store to
        ``H`` leaves ``mat`` and ``table`` alone, so a load after a store waits for it (three dependent
        index -> coefficient -> store chains a cell instead of one: BENCHMARKS.md, "Loads before stores")."""
        pz = lz.size + 2 * M  # the padded z extent (the y stride)
        ny, nz = ly.size, lz.size
        n = E.size // 3  # cells of one padded component
        sx = (ly.size + 2 * M) * pz
        p = X * sx + Y * pz + Z
        u, v, w = X - M, Y - M, Z - M
        q = (u * ny + v) * nz + w
        nu = lx.size * ny * nz
        ex, ey, ez = p, n + p, 2 * n + p
        dez_dy = fwd(E, ez, pz)
        dey_dz = fwd(E, ey, 1)
        dex_dz = fwd(E, ex, 1)
        dez_dx = fwd(E, ez, sx)
        dey_dx = fwd(E, ey, sx)
        dex_dy = fwd(E, ex, pz)
        c0 = table[U(mat[U(q)] * 8 + 4)]
        c1 = table[U(mat[U(nu + q)] * 8 + 4)]
        c2 = table[U(mat[U(2 * nu + q)] * 8 + 4)]
        h0, h1, h2 = H[U(p)], H[U(n + p)], H[U(2 * n + p)]
        if PML:
            damped = damp(u, v, w, lx, ly, lz, pb, pa, psix, psiy, psiz, 2, dez_dx, dey_dx, dez_dy, dex_dy,
                          dey_dz, dex_dz)
            dez_dx, dey_dx, dez_dy, dex_dy, dey_dz, dex_dz = damped
        H[U(p)] = h0 - c0 * (dez_dy - dey_dz)
        H[U(n + p)] = h1 - c1 * (dex_dz - dez_dx)
        H[U(2 * n + p)] = h2 - c2 * (dey_dx - dex_dy)

    @cuda.jit(device=True)
    def e_comp(E, J, p, old, ca, cb, ke, t, table, curl, drude):
        """``E[p] <- ca old + cb (curl - J)``, the Drude current ``J[p] <- table[t + 2] J[p] + ke old`` first
        in a Drude medium (``ke = table[t + 3] != 0``; elsewhere J stays 0 and adds 0).

        The product fused into each ``fma`` is named: NVVM contracts one product of ``a * b + c * d``, and
        which one follows the order its operands were defined in, so the loads' order would decide the
        rounding.  These are the products the kernel fused before its loads moved (PTX, offline); the sweeps
        name the same ones (:mod:`~diamondlab.kernels.yee_cuda_source`), so they stay bit for bit with this
        kernel on the GPU (``.ci/yee-gpu-exact.py``; the simulator rounds both ways alike)."""
        if DRUDE and drude and ke != 0:
            cur = cuda.fma(table[U(t + 2)], J[U(p)], ke * old)
            J[U(p)] = cur
            curl = curl - cur
        E[U(p)] = cuda.fma(ca, old, cb * curl)

    @cuda.jit(device=True)
    def e_cell(E, H, J, drude, mat, table, X, Y, Z, lx, ly, lz, pb, pa, psix, psiy, psiz):
        """``E <- ca E + cb (curl H - J)`` at padded (X, Y, Z), the Drude current first; every load of a
        plain cell's update before its first store, as in :func:`h_cell`."""
        pz = lz.size + 2 * M
        ny, nz = ly.size, lz.size
        n = E.size // 3
        sx = (ly.size + 2 * M) * pz
        p = X * sx + Y * pz + Z
        u, v, w = X - M, Y - M, Z - M
        q = (u * ny + v) * nz + w
        nu = lx.size * ny * nz
        hx, hy, hz = p, n + p, 2 * n + p
        dhz_dy = bwd(H, hz, pz)
        dhy_dz = bwd(H, hy, 1)
        dhx_dz = bwd(H, hx, 1)
        dhz_dx = bwd(H, hz, sx)
        dhy_dx = bwd(H, hy, sx)
        dhx_dy = bwd(H, hx, pz)
        t0, t1, t2 = mat[U(q)] * 8, mat[U(nu + q)] * 8, mat[U(2 * nu + q)] * 8
        ca0, cb0 = table[U(t0)], table[U(t0 + 1)]
        ca1, cb1 = table[U(t1)], table[U(t1 + 1)]
        ca2, cb2 = table[U(t2)], table[U(t2 + 1)]
        ke0 = table[U(t0 + 3)] if DRUDE else ZERO
        ke1 = table[U(t1 + 3)] if DRUDE else ZERO
        ke2 = table[U(t2 + 3)] if DRUDE else ZERO
        e0, e1, e2 = E[U(p)], E[U(n + p)], E[U(2 * n + p)]
        if PML:
            damped = damp(u, v, w, lx, ly, lz, pb, pa, psix, psiy, psiz, 0, dhz_dx, dhy_dx, dhz_dy, dhx_dy,
                          dhy_dz, dhx_dz)
            dhz_dx, dhy_dx, dhz_dy, dhx_dy, dhy_dz, dhx_dz = damped
        e_comp(E, J, p, e0, ca0, cb0, ke0, t0, table, dhz_dy - dhy_dz, drude)
        e_comp(E, J, n + p, e1, ca1, cb1, ke1, t1, table, dhx_dz - dhz_dx, drude)
        e_comp(E, J, 2 * n + p, e2, ca2, cb2, ke2, t2, table, dhy_dx - dhx_dy, drude)

    @cuda.jit(device=True)
    def cell_points(E, H, half, step, X, Y, Z, colstart, colcount, pt_z, pt_comp, pt_kind, pt_slot, src, rec,
                    pz, sx):
        """After cell (X, Y, Z)'s half step ``half``: its source points add to the field just updated (dipoles
        and TFSF corrections to E, TFSF corrections to H), then its probes record."""
        start = colstart[X, Y]
        if start < 0:
            return
        n = E.size // 3
        p = X * sx + Y * pz + Z
        lo, end = points_of(colstart, colcount, pt_z, X, Y, Z)
        for k in range(lo, end):
            c = pt_comp[k]
            if (c >= 3) != (half == 0):
                continue
            if c >= 3:
                if pt_kind[k] == 0:
                    H[(c - 3) * n + p] += src[pt_slot[k], step]
                else:
                    rec[step, pt_slot[k]] = H[(c - 3) * n + p]
            elif pt_kind[k] == 0:
                E[c * n + p] += src[pt_slot[k], step]
            else:
                rec[step, pt_slot[k]] = E[c * n + p]

    @cuda.jit(device=True)
    def mirror(F, X, Y, Z, ny, nz, pz, sx, wy, wz):
        """The three components of padded cell (X, Y, Z) of ``F``, just written, into their images in the
        halo of a periodic y and z (every halo cell is the image of one cell: one thread writes it)."""
        n = F.size // 3
        p = X * sx + Y * pz + Z
        v, w = Y - M, Z - M
        for g in range(M):
            if wz and (g - M + M * nz) % nz == w:
                for c in range(3):
                    F[c * n + p - Z + g] = F[c * n + p]
            if wz and g % nz == w:
                for c in range(3):
                    F[c * n + p - Z + M + nz + g] = F[c * n + p]
            if wy and (g - M + M * ny) % ny == v:
                for c in range(3):
                    F[c * n + p + (g - Y) * pz] = F[c * n + p]
            if wy and g % ny == v:
                for c in range(3):
                    F[c * n + p + (M + ny + g - Y) * pz] = F[c * n + p]

    @cuda.jit(device=True)
    def cell(E, H, J, drude, mat, table, X, Y, Z, half, step, lx, ly, lz, pbh, pah, pbe, pae, psix, psiy,
             psiz, colstart, colcount, pt_z, pt_comp, pt_kind, pt_slot, pt_cell, src, rec, wy, wz):
        if half == 0:
            h_cell(E, H, mat, table, X, Y, Z, lx, ly, lz, pbh, pah, psix, psiy, psiz)
        else:
            e_cell(E, H, J, drude, mat, table, X, Y, Z, lx, ly, lz, pbe, pae, psix, psiy, psiz)
        pz = lz.size + 2 * M
        sx = (ly.size + 2 * M) * pz
        if POINTS and pt_cell[U(((X - M) * ly.size + Y - M) * lz.size + Z - M)]:  # this cell has points
            cell_points(E, H, half, step, X, Y, Z, colstart, colcount, pt_z, pt_comp, pt_kind, pt_slot, src,
                        rec, pz, sx)
        if wy or wz:
            mirror(H if half == 0 else E, X, Y, Z, ly.size, lz.size, pz, sx, wy, wz)

    # The plain scene's half steps (no CPML, points, Drude current or periodic face) with 32-bit offsets into
    # the flat arrays: a load's address is one 32-bit add and one wide multiply-add from the array's base,
    # where the general kernel's 64-bit offsets take four instructions; the whole half step is 97 thread
    # instructions a cell at order 2 against 190 (ptxas 13.5 for sm_90, offline).  The same loads in the same
    # order, the same arithmetic and fused products as :func:`h_cell` and :func:`e_cell`: the same values.
    # The caller checks that every offset fits (:func:`plain_offsets`).  Half the instructions did not make it
    # faster at order 2 (the loads' latency bounds it), 4-5 % at order 4 (BENCHMARKS.md, "The Yee stepwise
    # kernel: columns launched in memory order"); ``stepwise_plain`` launches its blocks x fastest, as
    # :func:`stepwise` does, ``stepwise_plain_yx`` y fastest, as :func:`stepwise_yx` does.
    @cuda.jit(device=True, inline=True)
    def diff32(a, p, s, forward):
        """:func:`fwd` (``forward``) or :func:`bwd` with ``uint32`` offsets."""
        if forward:
            v = w1 * (a[uint32(p + s)] - a[p])
            if M == 2:
                v += w2 * (a[uint32(p + 2 * s)] - a[uint32(p - s)])
        else:
            v = w1 * (a[p] - a[uint32(p - s)])
            if M == 2:
                v += w2 * (a[uint32(p + s)] - a[uint32(p - 2 * s)])
        return v

    @cuda.jit(device=True, inline=True)
    def curl_terms32(F, px, py, pw, sx, pz, forward):
        """The six differences of a half step's curl of ``F`` (components at ``px``, ``py``, ``pw``), in the
        general kernel's order of loads: ``(dz/dy, dy/dz, dx/dz, dz/dx, dy/dx, dx/dy)``."""
        one = uint32(1)
        return (diff32(F, pw, pz, forward), diff32(F, py, one, forward), diff32(F, px, one, forward),
                diff32(F, pw, sx, forward), diff32(F, py, sx, forward), diff32(F, px, pz, forward))

    def plain_kernel(y_fastest: bool, box: bool = False):
        @capped(STEPWISE_PLAIN_REGISTERS)
        def stepwise_plain(E, H, mat, table, half, n, nu, sx, pz, ny, nz, x0, y0, z0):
            """Half step ``half`` (0: H, 1: E) of a plain scene: a block per (x, y) column, a thread a cell;
            ``n``, ``nu``: cells of one padded and one unpadded component; ``sx``, ``pz``: the padded x and y
            strides; all ``uint32``.  ``stepwise_plain_box_yx`` runs the box of columns from ``(x0, y0)``
            (its extent the launch's grid, y fastest), their cells from ``z0`` (``uint32``; the others take
            and ignore them): the cells of a physics scene that no CPML layer, point or Drude medium touches
            (:func:`stepwise_launches`)."""
            if y_fastest:  # consecutive blocks: neighbouring columns in memory
                X = uint32(cuda.blockIdx.y)  # noqa: N806
                Y = uint32(cuda.blockIdx.x)  # noqa: N806
            else:
                X = uint32(cuda.blockIdx.x)  # noqa: N806
                Y = uint32(cuda.blockIdx.y)  # noqa: N806
            Z = uint32(cuda.threadIdx.x)  # noqa: N806
            if box:
                X, Y, Z = uint32(X + x0), uint32(Y + y0), uint32(Z + z0)  # noqa: N806
            px = uint32((X + M) * sx + (Y + M) * pz + Z + M)
            py, pw = uint32(px + n), uint32(px + 2 * n)
            q0 = uint32((X * ny + Y) * nz + Z)
            q1, q2 = uint32(q0 + nu), uint32(q0 + 2 * nu)
            if half == 0:
                dez_dy, dey_dz, dex_dz, dez_dx, dey_dx, dex_dy = curl_terms32(E, px, py, pw, sx, pz, True)
                c0 = table[uint32(mat[q0] * 8 + 4)]
                c1 = table[uint32(mat[q1] * 8 + 4)]
                c2 = table[uint32(mat[q2] * 8 + 4)]
                h0, h1, h2 = H[px], H[py], H[pw]
                H[px] = h0 - c0 * (dez_dy - dey_dz)
                H[py] = h1 - c1 * (dex_dz - dez_dx)
                H[pw] = h2 - c2 * (dey_dx - dex_dy)
            else:
                dhz_dy, dhy_dz, dhx_dz, dhz_dx, dhy_dx, dhx_dy = curl_terms32(H, px, py, pw, sx, pz, False)
                t0, t1, t2 = uint32(mat[q0] * 8), uint32(mat[q1] * 8), uint32(mat[q2] * 8)
                ca0, cb0 = table[t0], table[uint32(t0 + 1)]
                ca1, cb1 = table[t1], table[uint32(t1 + 1)]
                ca2, cb2 = table[t2], table[uint32(t2 + 1)]
                e0, e1, e2 = E[px], E[py], E[pw]
                E[px] = cuda.fma(ca0, e0, cb0 * (dhz_dy - dhy_dz))
                E[py] = cuda.fma(ca1, e1, cb1 * (dhx_dz - dhz_dx))
                E[pw] = cuda.fma(ca2, e2, cb2 * (dhy_dx - dhx_dy))
        return stepwise_plain

    stepwise_plain_yx, stepwise_plain = plain_kernel(True), plain_kernel(False)
    stepwise_plain_box_yx = plain_kernel(True, box=True)

    # A kernel with the CPML's layers holds 54-56 registers uncapped; capped at 48 (no spill) a multiprocessor
    # keeps 40 warps in flight to hide its loads instead of 36 (blocks of 128) or 32 (blocks of 256): on the
    # H200 512x512x256 with the physics scene ran 22.2 -> 24.9 G/s at order 2 and 19.9 -> 21.3 at order 4
    # (BENCHMARKS.md, "... a register cap for the physics stepwise kernels").  The simulator takes no cap.
    launch = capped(STEPWISE_PML_REGISTERS if PML else None)

    @launch
    def stepwise(E, H, J, drude, mat, table, half, step, lx, ly, lz, pbh, pah, pbe, pae, psix, psiy, psiz,
                 colstart, colcount, pt_z, pt_comp, pt_kind, pt_slot, pt_cell, src, rec, wy, wz):
        """Half step ``half`` (0: H, 1: E) of step ``step`` of every cell: a block per (x, y) column."""
        X = cuda.blockIdx.x + M  # noqa: N806 - padded indices
        Y = cuda.blockIdx.y + M  # noqa: N806
        Z = cuda.threadIdx.x + M  # noqa: N806
        cell(E, H, J, drude, mat, table, X, Y, Z, half, step, lx, ly, lz, pbh, pah, pbe, pae, psix, psiy,
             psiz, colstart, colcount, pt_z, pt_comp, pt_kind, pt_slot, pt_cell, src, rec, wy, wz)

    @launch
    def stepwise_yx(E, H, J, drude, mat, table, half, step, lx, ly, lz, pbh, pah, pbe, pae, psix, psiy, psiz,
                    colstart, colcount, pt_z, pt_comp, pt_kind, pt_slot, pt_cell, src, rec, wy, wz):
        """As :func:`stepwise`, the launch's grid (ny, nx): consecutive blocks are neighbouring columns in
        memory."""
        X = cuda.blockIdx.y + M  # noqa: N806 - padded indices
        Y = cuda.blockIdx.x + M  # noqa: N806
        Z = cuda.threadIdx.x + M  # noqa: N806
        cell(E, H, J, drude, mat, table, X, Y, Z, half, step, lx, ly, lz, pbh, pah, pbe, pae, psix, psiy,
             psiz, colstart, colcount, pt_z, pt_comp, pt_kind, pt_slot, pt_cell, src, rec, wy, wz)

    @launch
    def stepwise_box_yx(E, H, J, drude, mat, table, half, step, x0, y0, z0, lx, ly, lz, pbh, pah, pbe, pae,
                        psix, psiy, psiz, colstart, colcount, pt_z, pt_comp, pt_kind, pt_slot, pt_cell, src,
                        rec, wy, wz):
        """As :func:`stepwise` on a box of (x, y) columns from ``(x0, y0)``, its extent the launch's grid
        ``(wy, wx)`` (consecutive blocks neighbouring columns in memory, as in :func:`stepwise_yx`), the cells
        from ``z0`` (a thread each)."""
        X = cuda.blockIdx.y + x0 + M  # noqa: N806 - padded indices
        Y = cuda.blockIdx.x + y0 + M  # noqa: N806
        Z = cuda.threadIdx.x + z0 + M  # noqa: N806
        cell(E, H, J, drude, mat, table, X, Y, Z, half, step, lx, ly, lz, pbh, pah, pbe, pae, psix, psiy,
             psiz, colstart, colcount, pt_z, pt_comp, pt_kind, pt_slot, pt_cell, src, rec, wy, wz)

    @launch
    def stepwise_slabs(E, H, J, drude, mat, table, half, step, x0, y0, wy_box, below, above, lx, ly, lz, pbh,
                       pah, pbe, pae, psix, psiy, psiz, colstart, colcount, pt_z, pt_comp, pt_kind, pt_slot,
                       pt_cell, src, rec, wy, wz):
        """As :func:`stepwise` on the z slabs of a box of (x, y) columns: the ``below`` lowest and ``above``
        highest cells of each column (the CPML's z layers).  A run of ``above + below`` consecutive threads
        takes the top of one column and the bottom of the next (y + 1), which lie next to each other in memory
        (only the padding between them), as do their ``psi``: ``wy_box + 1`` runs a row of the box from
        ``y0`` (the first without a top, the last without a bottom), as many whole runs a block as it holds,
        the launch's grid ``(blocks along y, wx)``."""
        per = below + above
        t = cuda.threadIdx.x
        c = t // per
        runs = cuda.blockDim.x // per
        v = cuda.blockIdx.x * runs + c  # the run: the top of column v - 1, the bottom of column v
        r = t - c * per
        if c >= runs or (r < above and v == 0) or (r >= above and v >= wy_box) or v > wy_box:
            return
        X = cuda.blockIdx.y + x0 + M  # noqa: N806 - padded indices
        if r < above:
            Y = v - 1 + y0 + M  # noqa: N806
            Z = lz.size - above + r + M  # noqa: N806
        else:
            Y = v + y0 + M  # noqa: N806
            Z = r - above + M  # noqa: N806
        cell(E, H, J, drude, mat, table, X, Y, Z, half, step, lx, ly, lz, pbh, pah, pbe, pae, psix, psiy,
             psiz, colstart, colcount, pt_z, pt_comp, pt_kind, pt_slot, pt_cell, src, rec, wy, wz)

    @capped(STEPWISE_LISTED_REGISTERS)
    def stepwise_listed(E, H, J, drude, mat, table, half, step, columns, lx, ly, lz, pbh, pah, pbe, pae,
                        psix, psiy, psiz, colstart, colcount, pt_z, pt_comp, pt_kind, pt_slot, pt_cell, src,
                        rec, wy, wz):
        """As :func:`stepwise` on the (x, y) columns ``columns`` (``(2, n)`` int32), a block a column."""
        c = cuda.blockIdx.x
        X = columns[0, c] + M  # noqa: N806 - padded indices
        Y = columns[1, c] + M  # noqa: N806
        Z = cuda.threadIdx.x + M  # noqa: N806
        cell(E, H, J, drude, mat, table, X, Y, Z, half, step, lx, ly, lz, pbh, pah, pbe, pae, psix, psiy,
             psiz, colstart, colcount, pt_z, pt_comp, pt_kind, pt_slot, pt_cell, src, rec, wy, wz)

    @cuda.jit
    def points_after(E, H, half, step, bounds, cells, first, where, code, src, rec, py, pz, wy, wz):
        """After a stepwise half step whose kernels left the points out: a thread a cell with points of half
        step ``half`` (:func:`point_lists`: cells ``bounds[half]`` to ``bounds[half + 1] - 1``) adds its
        sources to the field just updated and records its probes, in the order :func:`cell` takes them (the
        same additions, so the same values); the cell's periodic images are written again (``py``, ``pz``:
        the padded y and z extents)."""
        i = bounds[half] + cuda.grid(1)
        if i < bounds[half + 1]:
            F = H if half == 0 else E  # noqa: N806
            for k in range(first[i], first[i + 1]):
                s = code[k]
                if s >= 0:
                    F[where[k]] += src[s, step]
                else:
                    rec[step, -1 - s] = F[where[k]]
            if wy or wz:
                p = int64(cells[i])  # signed: the images' offsets below are differences
                sx = py * pz
                X = p // sx  # noqa: N806 - padded indices
                Y = (p - X * sx) // pz  # noqa: N806
                mirror(F, X, Y, p - X * sx - Y * pz, py - 2 * M, pz - 2 * M, pz, sx, wy, wz)

    @cuda.jit(device=True)
    def tier(E, H, J, drude, mat, table, radius, x0, yc, k, lx, ly, lz, pbh, pah, pbe, pae, psix, psiy, psiz,
             colstart, colcount, pt_z, pt_comp, pt_kind, pt_slot, pt_cell, src, rec, wy, wz):
        """Tier ``k`` (half step ``k % 2`` of step ``k // 2``) of the torre at ``(x0, yc)``: one z (rows
        wrapped modulo ny on a periodic y)."""
        nx = lx.size
        ny = ly.size
        Z = cuda.threadIdx.x + M  # noqa: N806
        ax = x0 + M * k
        for du in range(1 - radius, radius + 1):
            x = ax + du
            if x >= 0 and x < nx:
                lo, hi = row(du, radius, yc, ny, wy)
                for y in range(lo, hi + 1):
                    cell(E, H, J, drude, mat, table, x + M, wrap(y, ny) + M, Z, k % 2, k // 2, lx, ly, lz,
                         pbh, pah, pbe, pae, psix, psiy, psiz, colstart, colcount, pt_z, pt_comp, pt_kind,
                         pt_slot, pt_cell, src, rec, wy, wz)

    @cuda.jit(device=True)
    def wait_for(done, d, need):
        """Spin (one thread) until torre ``d``'s published progress reaches ``need`` (``d < 0``: none)."""
        if d >= 0:
            while cuda.atomic.max(done, d, 0) < need:
                pass

    @cuda.jit
    def diamondtorre(E, H, J, drude, mat, table, radius, torre_x0, torre_yc, order, deps, done, counter,
                     ticket_base, flag0, ntiers, chunk, lx, ly, lz, pbh, pah, pbe, pae, psix, psiy, psiz,
                     colstart, colcount, pt_z, pt_comp, pt_kind, pt_slot, pt_cell, src, rec, wy, wz):
        """A whole sweep in one launch: a block per torre, tickets in ``order``, tier-level waits.

        Thread 0 takes the next ticket from ``counter`` (minus ``ticket_base``, the tickets of earlier
        sweeps); before tiers ``0, chunk, 2 chunk, ...`` it publishes the tiers done (``done[i] = flag0 +
        k``) and waits until both :meth:`~diamondlab.geometry.StageSchedule.dependencies` have done
        ``min(k + chunk, ntiers)`` tiers (lag 0 of
        :meth:`~diamondlab.geometry.StageSchedule.pipelined_rounds`: what keeps the in-place update
        exact).  A block only waits on smaller tickets, held by resident or finished blocks.
        """
        slot = cuda.shared.array(1, dtype=np.int64)
        first = cuda.threadIdx.x == 0
        if first:
            slot[0] = cuda.atomic.add(counter, 0, 1) - ticket_base
        cuda.syncthreads()
        i = order[slot[0]]
        x0 = torre_x0[i]
        yc = torre_yc[i]
        d0 = deps[i, 0]
        d1 = deps[i, 1]
        for k in range(ntiers):
            if k % chunk == 0:
                if first:
                    if k > 0:
                        cuda.threadfence()
                        cuda.atomic.max(done, i, flag0 + k)
                    need = flag0 + min(k + chunk, ntiers)
                    wait_for(done, d0, need)
                    wait_for(done, d1, need)
                    cuda.threadfence()
                cuda.syncthreads()
            tier(E, H, J, drude, mat, table, radius, x0, yc, k, lx, ly, lz, pbh, pah, pbe, pae, psix, psiy,
                 psiz, colstart, colcount, pt_z, pt_comp, pt_kind, pt_slot, pt_cell, src, rec, wy, wz)
            cuda.syncthreads()
        if first:
            cuda.threadfence()
            cuda.atomic.max(done, i, flag0 + ntiers)

    @cuda.jit
    def gather_planes(F, base, py, pz, ix, iy, iz, sx, sy, sz, XY, XZ, YZ):
        """Planes of the component at flat offset ``base`` of padded field ``F`` (``py``, ``pz``: padded
        extents) through cell (ix, iy, iz), sampled every (sx, sy, sz) from the point's residues."""
        i, j = cuda.grid(2)
        xi, yi = ix % sx + i * sx + M, iy % sy + i * sy + M
        yj, zj = iy % sy + j * sy + M, iz % sz + j * sz + M
        X, Y, Z = ix + M, iy + M, iz + M  # noqa: N806 - padded indices
        if i < XY.shape[0] and j < XY.shape[1]:
            XY[i, j] = F[base + (xi * py + yj) * pz + Z]
        if i < XZ.shape[0] and j < XZ.shape[1]:
            XZ[i, j] = F[base + (xi * py + Y) * pz + zj]
        if i < YZ.shape[0] and j < YZ.shape[1]:
            YZ[i, j] = F[base + (X * py + yi) * pz + zj]

    return SimpleNamespace(order=order, reach=M, stepwise=stepwise, stepwise_box_yx=stepwise_box_yx,
                           stepwise_slabs=stepwise_slabs,
                           stepwise_listed=stepwise_listed, stepwise_plain=stepwise_plain,
                           stepwise_plain_box_yx=stepwise_plain_box_yx,
                           stepwise_plain_yx=stepwise_plain_yx, stepwise_yx=stepwise_yx,
                           points_after=points_after,
                           diamondtorre=diamondtorre,
                           gather_planes=gather_planes, damp=damp, e_comp=e_comp, cell_points=cell_points)


def plain_offsets(shape: tuple[int, int, int], order: int) -> tuple[np.uint32, ...] | None:
    """The ``uint32`` sizes :func:`yee_cuda_kernels`' ``stepwise_plain`` takes for a grid of ``shape`` (its
    cells, unpadded) at ``order``: ``(n, nu, sx, pz, ny, nz)``; None where an offset into the three padded
    components would not fit in 32 bits (more than 2**32 / 3 padded cells: the general kernel runs there).

    >>> plain_offsets((4, 5, 6), 2)
    (np.uint32(336), np.uint32(120), np.uint32(56), np.uint32(8), np.uint32(5), np.uint32(6))
    >>> plain_offsets((2048, 2048, 512), 2) is None
    True
    """
    m = order // 2
    nx, ny, nz = shape
    pz = nz + 2 * m
    sx = (ny + 2 * m) * pz
    n = (nx + 2 * m) * sx
    if 3 * n >= 2**32:
        return None
    return tuple(np.uint32(v) for v in (n, nx * ny * nz, sx, pz, ny, nz))


def stepwise_launches(x_layer, y_layer, drude_columns=None) -> list[tuple[bool, bool, tuple | np.ndarray]]:
    """The launches of a stepwise half step: which (x, y) columns each runs, with which kernel.

    ``x_layer``, ``y_layer``: booleans a row, whether the CPML has a layer there (at the faces);
    ``drude_columns``: an ``(nx, ny)`` boolean table of the columns holding a Drude medium (None: none
    does).  Returns ``[(layered, drude, columns)]``: the kernel checks the x and y layers only where
    ``layered`` and has a Drude current only where ``drude``; ``columns`` is a box ``(x0, y0, wx, wy)`` (a
    launch of ``wx * wy`` blocks from ``(x0, y0)``: no load to find a block's column) or, for the columns
    the x and y layers cross, an ``(2, n)`` int32 array of their ``(x, y)``, x fastest.  The box of the
    columns no layer crosses is split around the box of its Drude columns, so a Drude medium's branch runs
    only near it.  Every column is in exactly one launch.

    >>> stepwise_launches(np.array([1, 0, 0, 0, 1], bool), np.array([0, 0, 0], bool))[0]
    (False, False, (1, 0, 3, 3))
    >>> layered = stepwise_launches(np.array([1, 0, 0, 0, 1], bool), np.array([0, 0, 0], bool))[1]
    >>> layered[:2], layered[2].tolist()
    ((True, False), [[0, 4, 0, 4, 0, 4], [0, 0, 1, 1, 2, 2]])
    """
    x_layer, y_layer = np.asarray(x_layer, bool), np.asarray(y_layer, bool)
    nx, ny = x_layer.size, y_layer.size
    drude = np.zeros((nx, ny), bool) if drude_columns is None else np.asarray(drude_columns, bool)
    inner = [np.flatnonzero(~a) for a in (x_layer, y_layer)]
    if any(i.size == 0 for i in inner):  # every column is layered
        box = (0, 0, 0, 0)
    else:
        box = (int(inner[0][0]), int(inner[1][0]), int(inner[0][-1]) + 1, int(inner[1][-1]) + 1)
        if x_layer[box[0]:box[2]].any() or y_layer[box[1]:box[3]].any():
            raise ValueError("stepwise_launches: the CPML's layers must lie at the faces")
    x0, y0, x1, y1 = box
    launches = []
    where = np.argwhere(drude[x0:x1, y0:y1])
    if where.size:  # the box of the Drude columns, then the strips around it
        (dx0, dy0), (dx1, dy1) = where.min(axis=0) + (x0, y0), where.max(axis=0) + (x0 + 1, y0 + 1)
        parts = [(dx0, dy0, dx1, dy1, True), (x0, y0, dx0, y1, False), (dx1, y0, x1, y1, False),
                 (dx0, y0, dx1, dy0, False), (dx0, dy1, dx1, y1, False)]
    else:
        parts = [(x0, y0, x1, y1, False)]
    launches += [(False, d, (int(a), int(b), int(c - a), int(e - b))) for a, b, c, e, d in parts
                 if c > a and e > b]
    outside = np.ones((nx, ny), bool)
    outside[x0:x1, y0:y1] = False
    xs, ys = np.nonzero(outside.T)[::-1]  # x fastest
    if xs.size:
        launches.append((True, bool(drude[xs, ys].any()), np.stack([xs, ys]).astype(np.int32)))
    return launches


def point_lists(colstart, colcount, pt_z, pt_comp, pt_kind, pt_slot, padded) -> tuple[np.ndarray, ...]:
    """The points of a stepwise half step as ``points_after`` of :func:`yee_cuda_kernels` takes them, from
    the column tables (``colstart`` .. ``pt_slot``, of
    :func:`~diamondlab.engine.backends.yee_cpu._column_tables`; ``padded``: the padded grid's shape).

    Returns ``(bounds, cells, first, where, code)``: the cells with points of the H half step (their
    components 3 to 5), then those of the E half step (0 to 2), ``bounds`` ``[0, H cells, all cells]``
    (``uint32``); ``cells``: each cell's flat padded offset; its points are ``first[i]`` to
    ``first[i + 1] - 1``, in the tables' order (sources before probes within a cell); ``where``: the flat
    offset of the point's component in ``E`` or ``H``; ``code``: a source's row of the samples, or
    ``-1 - slot`` for a probe's record (``int32``).  Offsets are ``uint32`` where they fit, else ``int64``.
    A half step's thread reads 8 bytes a point and 8 a cell, where the column tables' bisection read
    about ten 8-byte values a cell, in both half steps.

    >>> colstart = np.full((3, 3), -1); colstart[1, 1] = 0
    >>> colcount = np.zeros((3, 3), int); colcount[1, 1] = 3
    >>> bounds, cells, first, where, code = point_lists(colstart, colcount, np.array([1, 1, 1]),
    ...     np.array([2, 5, 2]), np.array([0, 0, 1]), np.array([7, 8, 0]), (3, 3, 3))
    >>> bounds.tolist(), cells.tolist(), first.tolist(), where.tolist(), code.tolist()
    ([0, 1, 2], [13, 13], [0, 1, 3], [67, 67, 67], [8, 7, -1])
    >>> lists = point_lists(colstart, colcount, np.array([1, 1, 1]), np.array([2, 5, 2]), np.array([0, 0, 1]),
    ...                     np.array([7, 8, 0]), (1200, 1200, 1200))  # past 2**32 offsets: int64
    >>> lists[1].dtype, lists[3].dtype, lists[3].tolist()
    (dtype('int64'), dtype('int64'), [3457441201, 3457441201, 3457441201])
    """
    colstart, colcount = np.asarray(colstart), np.asarray(colcount)
    n = int(colcount.sum())
    xs, ys = np.nonzero(colstart >= 0)
    order = np.argsort(colstart[xs, ys], kind="stable")  # the columns in the tables' order
    xs, ys = xs[order], ys[order]
    counts = colcount[xs, ys]
    X, Y = np.repeat(xs, counts).astype(np.int64), np.repeat(ys, counts).astype(np.int64)  # noqa: N806
    Z, comp = np.asarray(pt_z[:n], np.int64), np.asarray(pt_comp[:n], np.int64)  # noqa: N806
    kind, slot = np.asarray(pt_kind[:n], np.int64), np.asarray(pt_slot[:n], np.int64)
    px, py, pz = padded
    cell = (X * py + Y) * pz + Z
    target = (comp % 3) * (px * py * pz) + cell
    code = np.where(kind == 0, slot, -1 - slot)
    parts = []
    for half in (0, 1):  # H points (components 3 to 5), then E points
        sel = np.flatnonzero((comp >= 3) == (half == 0))
        c = cell[sel]
        new = np.ones(sel.size, bool)
        new[1:] = c[1:] != c[:-1]
        parts.append((c[new], np.flatnonzero(new), target[sel], code[sel]))
    (c0, f0, w0, k0), (c1, f1, w1, k1) = parts
    fits = 3 * px * py * pz < 2**32
    offsets = np.uint32 if fits else np.int64
    bounds = np.array([0, c0.size, c0.size + c1.size], np.uint32)
    first = np.concatenate([f0, f1 + w0.size, [w0.size + w1.size]]).astype(np.uint32)
    return (bounds, np.concatenate([c0, c1]).astype(offsets), first,
            np.concatenate([w0, w1]).astype(offsets), np.concatenate([k0, k1]).astype(np.int32))


def z_slabs(z_layer) -> tuple[int, int]:
    """The CPML's z layers of a column as ``(below, above)``: its lowest and highest cells in a layer
    (``z_layer``: a boolean a cell of the column, whether it lies in a layer).

    >>> z_slabs(np.array([1, 1, 0, 0, 0, 1], bool)), z_slabs(np.zeros(4, bool))
    ((2, 1), (0, 0))
    """
    z_layer = np.asarray(z_layer, bool)
    inner = np.flatnonzero(~z_layer)
    if inner.size == 0:
        return int(z_layer.size), 0
    below, above = int(inner[0]), int(z_layer.size - 1 - inner[-1])
    if z_layer[below:z_layer.size - above].any():
        raise ValueError("z_slabs: the CPML's layers must lie at the faces")
    return below, above


@functools.cache
def segment_copy_kernels():
    """``copy_runs(src, src_starts, dst, dst_starts, length)``: run ``s`` of ``length`` values from
    ``src[src_starts[s]:]`` to ``dst[dst_starts[s]:]``, every run in one launch (``blockIdx.y``: the run).
    The ghost rows of the Yee state (three components of ``E``, ``H``, ``J``; the slots of a ``psi``) are
    such runs of a flat device array: a launch per array packs them for a neighbour's GPU, and unpacks them,
    instead of a copy per run."""
    global cuda  # a module global, as the CUDA simulator expects to find it in a kernel's globals
    from numba import cuda

    @cuda.jit
    def copy_runs(src, src_starts, dst, dst_starts, length):
        s = cuda.blockIdx.y
        a, b = src_starts[s], dst_starts[s]
        i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
        while i < length:
            dst[b + i] = src[a + i]
            i += cuda.gridDim.x * cuda.blockDim.x

    return SimpleNamespace(copy_runs=copy_runs)


@functools.cache
def yee_register_sweep(order: int, size: int, simulator: bool = False, max_registers: int | None = None,
                       pml: bool = False, points: bool = False, drude: bool = False, prefetch: int = 0,
                       shape: tuple[int, int, int] | None = None):
    """The module of the sweep kernel ``yee_sweep`` with its tile in registers for ``order`` and tile size
    ``size`` (DTS), with the features a run has (``pml``, ``points``, ``drude``; no periodic faces)
    (:mod:`diamondlab.kernels.yee_cuda_source`; launched by
    :func:`~diamondlab.kernels.cuda.launch_generated`).

    Its launch takes ``yee_shared_bytes(order, size, threads)`` bytes of dynamic shared memory;
    ``max_registers`` caps a thread's registers (:func:`yee_register_cap`: a block of a tall column must fit
    a multiprocessor's register file); ``prefetch``: tiers ahead whose first loads each tier prefetches
    into L2 (0: none); ``shape``: the grid compiled in (a module for that grid only; None: any grid).
    """
    from diamondlab.kernels.generated import load_generated
    from diamondlab.kernels.yee_cuda_source import generate_yee_source

    text = generate_yee_source(order, size, simulator, max_registers, pml, points, drude, prefetch, shape)
    variant = "".join(f"_{name}" for name, on in (("pml", pml), ("points", points), ("drude", drude),
                                                   ("sim", simulator)) if on)
    if shape is not None:
        variant += "_" + "x".join(str(int(n)) for n in shape)
    return load_generated(text, f"diamondlab_yee_no{order}_dts{size}{variant}")


#: Register caps of the register-tile sweep per (order, DTS) that measured fastest on an H100 (more resident
#: blocks against a few spilled bytes: order 2 DTS 1 56 registers (37.5 G/s at 768x512x256, 33.0 at
#: 512x512x352, against 17.7 with 112), DTS 2 128 (41.0 against 32.4 with 200); order 4 DTS 1 none (255:
#: each cap spilled and was slower); BENCHMARKS.md "Maxwell on the GPU: the tile in registers")
PREFERRED_REGISTERS = {(2, 1): 56, (2, 2): 128}

#: The same for the sweep with the physics compiled in (a CPML, points, Drude currents): its code needs more
#: registers than the plain tile's, and the plain cap spilled it (ptxas for sm_90, offline, order 2 DTS 1:
#: 848 bytes stored and 1596 loaded a thread under 56; 44 and 52 under 128, two blocks of 256 threads a
#: multiprocessor; none uncapped, 143 registers, one block; BENCHMARKS.md "Registers and spills of the Yee
#: register-tile sweep"). Not yet measured on a GPU.
PHYSICS_REGISTERS = {(2, 1): 128, (2, 2): 128}


def yee_register_cap(order: int, size: int, threads: int, registers_per_sm: int = 65536,
                     most: int = 255, physics: bool = False) -> int | None:
    """The register cap of the register-tile sweep for blocks of ``threads`` (a column): the preferred
    cap of :data:`PREFERRED_REGISTERS` (``physics``: of :data:`PHYSICS_REGISTERS`), lowered until one
    block launches (warps are allocated four at a time, registers eight a thread); ``None``: no cap (the
    hardware's ``most``).

    >>> yee_register_cap(4, 1, 256), yee_register_cap(4, 1, 352), yee_register_cap(2, 1, 1024)
    (None, 168, 56)
    >>> yee_register_cap(2, 1, 256, physics=True), yee_register_cap(2, 1, 1024, physics=True)
    (128, 64)
    """
    warps = -(-threads // 32)
    hard = registers_per_sm // (-(-warps // 4) * 4 * 32) // 8 * 8
    table = PHYSICS_REGISTERS if physics else PREFERRED_REGISTERS
    cap = min(table.get((order, size), most), hard, most)
    return cap if cap < most else None


def yee_shared_bytes(order: int, size: int, threads: int) -> int:
    """Dynamic shared memory of a :func:`yee_register_sweep` launch of ``threads`` threads a block: two
    exchange buffers of ``threads + order`` z rows.

    >>> yee_shared_bytes(2, 2, 256)
    35088
    """
    from diamondlab.kernels.yee_cuda_source import yee_shared_row

    return 2 * (threads + order) * yee_shared_row(order, size) * 4
