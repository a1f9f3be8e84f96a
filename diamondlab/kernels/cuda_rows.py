"""The halo kernels: rows ``[y0, y0 + h)`` of both levels packed into one flat buffer and back.

Imported by :func:`diamondlab.kernels.cuda.pack_rows` on first use, so that
importing :mod:`diamondlab.kernels.cuda` stays free of numba.cuda.  The
buffer holds ``u^{n-1}`` then ``u^n``, each as ``(nx, h, nz)`` in C order
(contiguous along z: the loads and stores coalesce).
"""

from numba import cuda

__all__ = ["pack_rows_kernel", "unpack_rows_kernel"]


@cuda.jit
def pack_rows_kernel(prev, curr, ny, nz, y0, h, out):
    """``out = [prev[:, y0:y0+h], curr[:, y0:y0+h]]`` flattened."""
    i = cuda.grid(1)
    n = out.size // 2
    if i < n:
        x = i // (h * nz)
        src = (x * ny + y0) * nz + (i - x * h * nz)
        out[i] = prev[src]
        out[n + i] = curr[src]


@cuda.jit
def unpack_rows_kernel(prev, curr, ny, nz, y0, h, rows):
    """The inverse of :func:`pack_rows_kernel`: the rows written back into both levels."""
    i = cuda.grid(1)
    n = rows.size // 2
    if i < n:
        x = i // (h * nz)
        dst = (x * ny + y0) * nz + (i - x * h * nz)
        prev[dst] = rows[i]
        curr[dst] = rows[n + i]
