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

Kernels are compiled per order (the derivative's terms unrolled) on first
use in a process.
"""

from __future__ import annotations

import functools
from types import SimpleNamespace

import numpy as np
from numba import njit, prange

__all__ = ["yee_cpu_kernels"]


@functools.cache
def yee_cpu_kernels(order: int) -> SimpleNamespace:  # noqa: C901 - one closure per order, read as one scheme
    """The kernels of the Yee scheme of ``order`` (2 or 4): ``stepwise`` and ``diamondtorre``."""
    M = order // 2  # noqa: N806 - the scheme's reach, a compile-time constant of the closures
    w1 = np.float32(1.0 if order == 2 else 9.0 / 8.0)
    w2 = np.float32(0.0 if order == 2 else -1.0 / 24.0)

    # forward differences (at H points: i + 1/2) and backward ones (at E points: i) along x, y, z
    @njit(nogil=True)
    def fx(a, x, y, z):
        v = w1 * (a[x + 1, y, z] - a[x, y, z])
        if M == 2:
            v += w2 * (a[x + 2, y, z] - a[x - 1, y, z])
        return v

    @njit(nogil=True)
    def fy(a, x, y, z):
        v = w1 * (a[x, y + 1, z] - a[x, y, z])
        if M == 2:
            v += w2 * (a[x, y + 2, z] - a[x, y - 1, z])
        return v

    @njit(nogil=True)
    def fz(a, x, y, z):
        v = w1 * (a[x, y, z + 1] - a[x, y, z])
        if M == 2:
            v += w2 * (a[x, y, z + 2] - a[x, y, z - 1])
        return v

    @njit(nogil=True)
    def bx(a, x, y, z):
        v = w1 * (a[x, y, z] - a[x - 1, y, z])
        if M == 2:
            v += w2 * (a[x + 1, y, z] - a[x - 2, y, z])
        return v

    @njit(nogil=True)
    def by(a, x, y, z):
        v = w1 * (a[x, y, z] - a[x, y - 1, z])
        if M == 2:
            v += w2 * (a[x, y + 1, z] - a[x, y - 2, z])
        return v

    @njit(nogil=True)
    def bz(a, x, y, z):
        v = w1 * (a[x, y, z] - a[x, y, z - 1])
        if M == 2:
            v += w2 * (a[x, y, z + 1] - a[x, y, z - 2])
        return v

    @njit(nogil=True)
    def h_column(E, H, mat, table, X, Y, pml, psi_x, psi_y, psi_z):
        """H of column (X, Y) (padded indices) from E: ``H <- H - dh curl E`` with the CPML terms."""
        lx, ly, lz, bx_h, ax_h, by_h, ay_h, bz_h, az_h = pml
        ex, ey, ez = E[0], E[1], E[2]
        hx, hy, hz = H[0], H[1], H[2]
        u, v = X - M, Y - M
        ix, iy = lx[u], ly[v]
        for Z in range(M, ex.shape[2] - M):
            w = Z - M
            dez_dy = fy(ez, X, Y, Z)
            dey_dz = fz(ey, X, Y, Z)
            dex_dz = fz(ex, X, Y, Z)
            dez_dx = fx(ez, X, Y, Z)
            dey_dx = fx(ey, X, Y, Z)
            dex_dy = fy(ex, X, Y, Z)
            if ix >= 0:
                psi_x[2, ix, v, w] = bx_h[u] * psi_x[2, ix, v, w] + ax_h[u] * dez_dx
                psi_x[3, ix, v, w] = bx_h[u] * psi_x[3, ix, v, w] + ax_h[u] * dey_dx
                dez_dx += psi_x[2, ix, v, w]
                dey_dx += psi_x[3, ix, v, w]
            if iy >= 0:
                psi_y[2, u, iy, w] = by_h[v] * psi_y[2, u, iy, w] + ay_h[v] * dez_dy
                psi_y[3, u, iy, w] = by_h[v] * psi_y[3, u, iy, w] + ay_h[v] * dex_dy
                dez_dy += psi_y[2, u, iy, w]
                dex_dy += psi_y[3, u, iy, w]
            iz = lz[w]
            if iz >= 0:
                psi_z[2, u, v, iz] = bz_h[w] * psi_z[2, u, v, iz] + az_h[w] * dey_dz
                psi_z[3, u, v, iz] = bz_h[w] * psi_z[3, u, v, iz] + az_h[w] * dex_dz
                dey_dz += psi_z[2, u, v, iz]
                dex_dz += psi_z[3, u, v, iz]
            hx[X, Y, Z] = hx[X, Y, Z] - table[mat[0, u, v, w], 4] * (dez_dy - dey_dz)
            hy[X, Y, Z] = hy[X, Y, Z] - table[mat[1, u, v, w], 4] * (dex_dz - dez_dx)
            hz[X, Y, Z] = hz[X, Y, Z] - table[mat[2, u, v, w], 4] * (dey_dx - dex_dy)

    @njit(nogil=True)
    def e_cell(e, j, m, table, X, Y, Z, curl, drude):
        """One E component: the Drude current first (``J <- kj J + bj E``), then
        ``E <- ca E + cb (curl - J)``."""
        old = e[X, Y, Z]
        if drude:
            cur = table[m, 2] * j[X, Y, Z] + table[m, 3] * old
            j[X, Y, Z] = cur
            curl = curl - cur
        e[X, Y, Z] = table[m, 0] * old + table[m, 1] * curl

    @njit(nogil=True)
    def e_column(E, H, J, drude, mat, table, X, Y, pml, psi_x, psi_y, psi_z):
        """E of column (X, Y) from H: ``E <- ca E + cb (curl H - J)`` with the CPML terms."""
        lx, ly, lz, bx_e, ax_e, by_e, ay_e, bz_e, az_e = pml
        hx, hy, hz = H[0], H[1], H[2]
        u, v = X - M, Y - M
        ix, iy = lx[u], ly[v]
        for Z in range(M, hx.shape[2] - M):
            w = Z - M
            dhz_dy = by(hz, X, Y, Z)
            dhy_dz = bz(hy, X, Y, Z)
            dhx_dz = bz(hx, X, Y, Z)
            dhz_dx = bx(hz, X, Y, Z)
            dhy_dx = bx(hy, X, Y, Z)
            dhx_dy = by(hx, X, Y, Z)
            if ix >= 0:
                psi_x[0, ix, v, w] = bx_e[u] * psi_x[0, ix, v, w] + ax_e[u] * dhz_dx
                psi_x[1, ix, v, w] = bx_e[u] * psi_x[1, ix, v, w] + ax_e[u] * dhy_dx
                dhz_dx += psi_x[0, ix, v, w]
                dhy_dx += psi_x[1, ix, v, w]
            if iy >= 0:
                psi_y[0, u, iy, w] = by_e[v] * psi_y[0, u, iy, w] + ay_e[v] * dhz_dy
                psi_y[1, u, iy, w] = by_e[v] * psi_y[1, u, iy, w] + ay_e[v] * dhx_dy
                dhz_dy += psi_y[0, u, iy, w]
                dhx_dy += psi_y[1, u, iy, w]
            iz = lz[w]
            if iz >= 0:
                psi_z[0, u, v, iz] = bz_e[w] * psi_z[0, u, v, iz] + az_e[w] * dhy_dz
                psi_z[1, u, v, iz] = bz_e[w] * psi_z[1, u, v, iz] + az_e[w] * dhx_dz
                dhy_dz += psi_z[0, u, v, iz]
                dhx_dz += psi_z[1, u, v, iz]
            e_cell(E[0], J[0], mat[0, u, v, w], table, X, Y, Z, dhz_dy - dhy_dz, drude)
            e_cell(E[1], J[1], mat[1, u, v, w], table, X, Y, Z, dhx_dz - dhz_dx, drude)
            e_cell(E[2], J[2], mat[2, u, v, w], table, X, Y, Z, dhy_dx - dhx_dy, drude)

    @njit(nogil=True)
    def column_points(E, H, half, step, X, Y, points, src, rec):
        """After column (X, Y)'s half step ``half`` (0: H, 1: E) of step ``step``: dipoles add to E, then
        the probes of the field just updated record."""
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
    def column(E, H, J, drude, mat, table, X, Y, half, step, pml_h, pml_e, psi, points, src, rec):
        if half == 0:
            h_column(E, H, mat, table, X, Y, pml_h, psi[0], psi[1], psi[2])
        else:
            e_column(E, H, J, drude, mat, table, X, Y, pml_e, psi[0], psi[1], psi[2])
        column_points(E, H, half, step, X, Y, points, src, rec)

    @njit(parallel=True, nogil=True)
    def stepwise(E, H, J, drude, mat, table, nsteps, pml_h, pml_e, psi, points, src, rec):
        """``nsteps`` steps: per half step, x planes in parallel, y columns in order, z innermost."""
        nx, ny = E.shape[1] - 2 * M, E.shape[2] - 2 * M
        for k in range(2 * nsteps):
            for X in prange(M, nx + M):
                for Y in range(M, ny + M):
                    column(E, H, J, drude, mat, table, X, Y, k % 2, k // 2, pml_h, pml_e, psi, points, src,
                           rec)

    @njit(parallel=True, nogil=True)
    def diamondtorre(E, H, J, drude, mat, table, radius, torre_x0, torre_yc, stage_start, ntiers,
                     pml_h, pml_e, psi, points, src, rec):
        """One sweep of ``ntiers`` half steps (even): stages in order, the torres of a stage in parallel."""
        nx, ny = E.shape[1] - 2 * M, E.shape[2] - 2 * M
        for s in range(len(stage_start) - 1):
            for i in prange(stage_start[s], stage_start[s + 1]):
                x0 = torre_x0[i]
                yc = torre_yc[i]
                for k in range(ntiers):
                    ax = x0 + M * k
                    for du in range(1 - radius, radius + 1):
                        x = ax + du
                        if x < 0 or x >= nx:
                            continue
                        hw = radius - du if du >= 1 else radius - 1 + du  # |y - yc| <= hw
                        for y in range(max(yc - hw, 0), min(yc + hw, ny - 1) + 1):
                            column(E, H, J, drude, mat, table, x + M, y + M, k % 2, k // 2, pml_h, pml_e,
                                   psi, points, src, rec)

    return SimpleNamespace(order=order, reach=M, stepwise=stepwise, diamondtorre=diamondtorre)
