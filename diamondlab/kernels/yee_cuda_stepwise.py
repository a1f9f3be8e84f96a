"""The stepwise Yee kernels: a block marches along x with its (y, z) tile (2.5D blocking).

Contract
--------
:func:`marching_stepwise_kernels` returns ``h_half`` and ``e_half``, one half
step of every cell each (``H`` from ``E``, then ``E`` from ``H``), on the
arrays of :mod:`diamondlab.kernels.yee_cuda` (flat padded ``E``, ``H`` and
``J`` with their zero halo, the material index and table, the CPML's layer
maps, profiles and ``psi``, the points' column tables), with the CPML,
the source and probe points and the Drude current compiled in where a run
has them; scenes with a periodic face run the general kernel
(:func:`~diamondlab.kernels.yee_cuda.yee_cuda_kernels`' ``stepwise``). A
cell's arithmetic is ``h_cell``'s and ``e_cell``'s on the same values in
the same order (the CPML's ``damp``, ``e_comp`` and ``cell_points`` are
that module's own device functions), so the two kernels agree bit for bit.

Why it exists: the general kernel gives a thread one cell and reads each
neighbour where it lies, about 20 loads a cell of which the x and y
neighbours come from other blocks' columns through L2; measured at 54-67 %
of its bandwidth bound on an H100 (BENCHMARKS.md). Here a block of ``(tz,
ty)`` threads holds a ``(y, z)`` tile and steps through ``X_CHUNK`` x planes
(the launch's third grid dimension splits x): each thread keeps the two
components differentiated along x in a register queue of ``2M`` planes (the
scheme's reach ``M``), the current plane of all three components goes to
shared memory with a halo of ``M`` rows in y and z, and the y and z
differences read it there. Per cell and half step the DRAM then moves what
the bound counts, the read field once (plus the halo's ``2M / ty`` share),
the updated field read and written, the material bytes.
"""

from __future__ import annotations

import functools
from types import SimpleNamespace

import numpy as np

__all__ = ["BLOCK", "SIMULATOR_BLOCK", "X_CHUNK", "marching_stepwise_kernels", "marching_stepwise_launch"]

#: numba.cuda, imported by the first :func:`marching_stepwise_kernels` call
cuda = None

#: Threads of a block along z and along y on a GPU (a warp along z: coalesced rows)
BLOCK = (32, 8)
#: ... and under Numba's CUDA simulator (every thread a Python thread)
SIMULATOR_BLOCK = (8, 2)
#: x planes a block steps through (the first ``M`` planes of its queue are loaded again by the next block)
X_CHUNK = 64


def marching_stepwise_launch(shape, block=BLOCK, x_chunk: int = X_CHUNK) -> tuple[tuple, tuple]:
    """``(grid, block)`` of a half step on ``shape`` (x, y, z): z tiles, y tiles, x chunks.

    >>> marching_stepwise_launch((256, 256, 256))
    ((8, 32, 4), (32, 8))
    >>> marching_stepwise_launch((10, 9, 13), (8, 2), 4)
    ((2, 5, 3), (8, 2))
    """
    nx, ny, nz = (int(n) for n in shape)
    tz, ty = block
    return (-(-nz // tz), -(-ny // ty), -(-nx // x_chunk)), (tz, ty)


@functools.cache
def marching_stepwise_kernels(order: int, block=BLOCK, pml: bool = False, points: bool = False,  # noqa: C901
                              drude: bool = False) -> SimpleNamespace:
    """The two half-step kernels of ``order`` (2 or 4) for blocks of ``block = (tz, ty)`` threads, with the
    features a run has compiled in (``pml``, ``points``, ``drude``, as
    :func:`~diamondlab.kernels.yee_cuda.yee_cuda_kernels`, whose device functions they call).

    ``h_half`` and ``e_half`` take ``(F, G, J, drude, mat, table, step, nx, ny, nz, x_chunk, lx, ly, lz,
    pb, pa, psix, psiy, psiz, colstart, colcount, pt_z, pt_comp, pt_kind, pt_slot, pt_cell, src, rec)``:
    ``G`` updated from ``F`` (``H`` from ``E``, then ``E`` from ``H``), the CPML's profiles of the half
    step (``pb``, ``pa``), and run on :func:`marching_stepwise_launch`'s grid.
    """
    global cuda  # a module global, as the CUDA simulator expects to find it in a kernel's globals
    from numba import cuda

    from diamondlab.kernels.yee_cuda import yee_cuda_kernels

    general = yee_cuda_kernels(order, pml=pml, points=points, drude=drude)
    damp, e_comp, cell_points = general.damp, general.e_comp, general.cell_points
    PML, POINTS = bool(pml), bool(points)  # noqa: N806 - compile-time constants
    M = order // 2  # noqa: N806 - the reach, a compile-time constant
    TZ, TY = (int(b) for b in block)  # noqa: N806
    SY, SZ = TY + 2 * M, TZ + 2 * M  # noqa: N806 - the shared plane with its halo
    w1 = np.float32(1.0 if order == 2 else 9.0 / 8.0)
    w2 = np.float32(0.0 if order == 2 else -1.0 / 24.0)
    zero = np.float32(0.0)  # the unread ends of an order-2 difference (float32: no float64 in any branch)

    def make(forward: bool):  # noqa: C901 - the device functions of one half step
        # the queue holds planes x + LO .. x + LO + 2M - 1; the plane x is slot CUR
        LO = -(M - 1) if forward else -M  # noqa: N806
        CUR = -LO  # noqa: N806
        K = 2 if forward else 0  # noqa: N806 - the psi slots of the half step
        A = 1 if forward else 0  # noqa: N806 - offsets of a difference: w1 (a[+A] - a[A-1]),
        # w2 (a[A+1] - a[A-2]) (forward: a[+1] - a[0], a[+2] - a[-1]; backward: a[0] - a[-1], a[+1] - a[-2])

        @cuda.jit(device=True)
        def diff(a0, a1, a2, a3):
            """The difference of ``h_cell``'s ``fwd`` / ``e_cell``'s ``bwd`` from the values they read, in
            their order: ``w1 (a2 - a1)`` (+ ``w2 (a3 - a0)`` at order 4)."""
            v = w1 * (a2 - a1)
            if M == 2:
                v += w2 * (a3 - a0)
            return v

        @cuda.jit(device=True)
        def along_x(a0, a1, a2, a3):
            """The queue's difference (order 2: its first two planes)."""
            if M == 2:
                return diff(a0, a1, a2, a3)
            return diff(zero, a0, a1, zero)

        @cuda.jit(device=True)
        def along_y(sh, c, yy, zz):
            if M == 2:
                return diff(sh[c, yy + A - 2, zz], sh[c, yy + A - 1, zz], sh[c, yy + A, zz],
                            sh[c, yy + A + 1, zz])
            return diff(zero, sh[c, yy + A - 1, zz], sh[c, yy + A, zz], zero)

        @cuda.jit(device=True)
        def along_z(sh, c, yy, zz):
            if M == 2:
                return diff(sh[c, yy, zz + A - 2], sh[c, yy, zz + A - 1], sh[c, yy, zz + A],
                            sh[c, yy, zz + A + 1])
            return diff(zero, sh[c, yy, zz + A - 1], sh[c, yy, zz + A], zero)

        @cuda.jit(device=True)
        def fill_plane(sh, F, p, n, yp, zp, py, pz, ty, tz, yy, zz, b, c):
            """The cell's three components of the plane into the shared plane (its queue's for 1 and 2),
            and the halo rows of the tile's edge threads."""
            sh[0, yy, zz] = F[p]
            sh[1, yy, zz], sh[2, yy, zz] = b, c
            if ty < M:  # the y halo below the tile, then above it
                for k in range(3):
                    sh[k, ty, zz] = F[k * n + p - M * pz]
            if ty >= TY - M and yp + M < py:
                for k in range(3):
                    sh[k, yy + M, zz] = F[k * n + p + M * pz]
            if tz < M:
                for k in range(3):
                    sh[k, yy, tz] = F[k * n + p - M]
            if tz >= TZ - M and zp + M < pz:
                for k in range(3):
                    sh[k, yy, zz + M] = F[k * n + p + M]

        @cuda.jit(device=True)
        def update(G, J, drude, mat, table, p, n, q, nu, d2y, d1z, d0z, d2x, d1x, d0y):
            """``h_cell``'s update (forward: ``H <- H - dh curl E``) or ``e_cell``'s (``e_comp``: ``E <- ca E
            + cb (curl H - J)``, the Drude current first), component by component."""
            if forward:
                G[p] = G[p] - table[mat[q] * 8 + 4] * (d2y - d1z)
                G[n + p] = G[n + p] - table[mat[nu + q] * 8 + 4] * (d0z - d2x)
                G[2 * n + p] = G[2 * n + p] - table[mat[2 * nu + q] * 8 + 4] * (d1x - d0y)
            else:
                e_comp(G, J, p, mat[q], table, d2y - d1z, drude)
                e_comp(G, J, n + p, mat[nu + q], table, d0z - d2x, drude)
                e_comp(G, J, 2 * n + p, mat[2 * nu + q], table, d1x - d0y, drude)

        @cuda.jit
        def half(F, G, J, drude, mat, table, step, nx, ny, nz, x_chunk, lx, ly, lz, pb, pa, psix, psiy, psiz,
                 colstart, colcount, pt_z, pt_comp, pt_kind, pt_slot, pt_cell, src, rec):
            """``G`` from ``F`` on the block's tile through its x chunk (``H`` from ``E``: forward)."""
            sh = cuda.shared.array((3, SY, SZ), dtype=np.float32)
            tz, ty = cuda.threadIdx.x, cuda.threadIdx.y
            w = cuda.blockIdx.x * TZ + tz
            v = cuda.blockIdx.y * TY + ty
            x_lo = cuda.blockIdx.z * x_chunk
            x_hi = min(nx, x_lo + x_chunk)
            pz = nz + 2 * M
            py = ny + 2 * M
            sx = py * pz
            n = F.size // 3
            nu = nx * ny * nz
            yp, zp = v + M, w + M  # padded indices
            held = yp < py and zp < pz  # a cell of the padded plane: its value goes to the shared plane
            inside = v < ny and w < nz  # a cell of the domain: it is updated
            yy, zz = ty + M, tz + M
            col = yp * pz + zp
            # the register queue of components 1 and 2 (the ones differentiated along x)
            b0 = b1 = b2 = b3 = zero
            c0 = c1 = c2 = c3 = zero
            if held:
                base = (x_lo + M + LO) * sx + col
                b0, c0 = F[n + base], F[2 * n + base]
                if M == 2:
                    b1, c1 = F[n + base + sx], F[2 * n + base + sx]
                    b2, c2 = F[n + base + 2 * sx], F[2 * n + base + 2 * sx]
            for x in range(x_lo, x_hi):
                p = (x + M) * sx + col
                ahead = p + (LO + 2 * M - 1) * sx
                if held:  # the queue's last plane
                    if M == 2:
                        b3, c3 = F[n + ahead], F[2 * n + ahead]
                    else:
                        b1, c1 = F[n + ahead], F[2 * n + ahead]
                cuda.syncthreads()  # the plane before is read
                if held:
                    if CUR == 0:
                        fill_plane(sh, F, p, n, yp, zp, py, pz, ty, tz, yy, zz, b0, c0)
                    elif CUR == 1:
                        fill_plane(sh, F, p, n, yp, zp, py, pz, ty, tz, yy, zz, b1, c1)
                    else:
                        fill_plane(sh, F, p, n, yp, zp, py, pz, ty, tz, yy, zz, b2, c2)
                cuda.syncthreads()
                if inside:
                    q = (x * ny + v) * nz + w
                    d2y, d1z, d0z = along_y(sh, 2, yy, zz), along_z(sh, 1, yy, zz), along_z(sh, 0, yy, zz)
                    d2x, d1x, d0y = along_x(c0, c1, c2, c3), along_x(b0, b1, b2, b3), along_y(sh, 0, yy, zz)
                    if PML:  # h_cell's and e_cell's CPML (their psi slots 2 and 3, 0 and 1)
                        d2x, d1x, d2y, d0y, d1z, d0z = damp(x, v, w, lx, ly, lz, pb, pa, psix, psiy, psiz, K,
                                                            d2x, d1x, d2y, d0y, d1z, d0z)
                    update(G, J, drude, mat, table, p, n, q, nu, d2y, d1z, d0z, d2x, d1x, d0y)
                    if POINTS and pt_cell[q]:  # this cell's sources add to the new values, its probes read
                        if forward:
                            cell_points(F, G, 0, step, x + M, yp, zp, colstart, colcount, pt_z, pt_comp,
                                        pt_kind, pt_slot, src, rec, pz, sx)
                        else:
                            cell_points(G, F, 1, step, x + M, yp, zp, colstart, colcount, pt_z, pt_comp,
                                        pt_kind, pt_slot, src, rec, pz, sx)
                # the queue moves one plane on
                if M == 2:
                    b0, b1, b2 = b1, b2, b3
                    c0, c1, c2 = c1, c2, c3
                else:
                    b0, c0 = b1, c1

        return half

    return SimpleNamespace(order=order, block=(TZ, TY), h_half=make(True), e_half=make(False))
