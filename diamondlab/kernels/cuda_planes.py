"""The live view's gather kernel: three strided planes of a flat device field (imports numba.cuda).

Imported by :func:`diamondlab.kernels.cuda.gather_planes` on first use, so
that importing :mod:`diamondlab.kernels.cuda` stays free of numba.cuda.
"""

from numba import cuda

__all__ = ["gather_planes_kernel"]


@cuda.jit
def gather_planes_kernel(U, ny, nz, ix, iy, iz, sx, sy, sz, XY, XZ, YZ):
    """The planes through (ix, iy, iz), sampled every (sx, sy, sz) cells from the point's residues."""
    i, j = cuda.grid(2)
    xi, yi = ix % sx + i * sx, iy % sy + i * sy  # sample i along x, along y
    yj, zj = iy % sy + j * sy, iz % sz + j * sz  # sample j along y, along z
    if i < XY.shape[0] and j < XY.shape[1]:
        XY[i, j] = U[(xi * ny + yj) * nz + iz]
    if i < XZ.shape[0] and j < XZ.shape[1]:
        XZ[i, j] = U[(xi * ny + iy) * nz + zj]
    if i < YZ.shape[0] and j < YZ.shape[1]:
        YZ[i, j] = U[(ix * ny + yi) * nz + zj]
