"""The running DFT of recorded field values, per sweep: Numba on the CPU, a Numba-CUDA kernel on the GPU.

Contract
--------
``rec`` holds a sweep's recorded values, ``(height, slots)`` float32 (row
``s``: the sweep's step ``s``), as the Yee kernels write them; a monitor owns
the ``npoints`` slots from ``first``.  ``w`` is ``(2, nf, height)``: the
factors ``exp(-2 pi i f t) dt`` at the ``E`` (row 0) and ``H`` (row 1) sample
times (:func:`~diamondlab.maxwell.monitors.dft_phases`), ``half (npoints,)``
picks the row of each point.  :func:`dft_accumulate` adds, point by point and
frequency by frequency, ``w[half[p], f, s] * rec[s, first + p]`` in step order
to the float64 sums ``acc (nf, npoints)``: the same additions in the same
order whatever the sweep heights, so a run cut into other sweeps sums the
same numbers.  On the GPU (:func:`dft_cuda_kernels`) one thread sums one point
(its real and imaginary parts in two float64 arrays): the recorded values stay
on the device; ``take_columns`` copies the probes' first slots of ``rec`` into
a compact array (only those cross the bus).
"""

from __future__ import annotations

import functools
from types import SimpleNamespace

import numpy as np
from numba import njit, prange

__all__ = ["dft_accumulate", "dft_cuda_kernels"]

#: numba.cuda, imported by the first :func:`dft_cuda_kernels` call
cuda = None
#: threads a block of the ``plane_flux`` kernel (a power of two: its sums halve in shared memory)
FLUX_THREADS = 128


@njit(parallel=True, nogil=True, cache=True)
def dft_accumulate(rec, first, half, w, acc):  # pragma: no cover - compiled
    """``acc[f, p] += sum_s w[half[p], f, s] * rec[s, first + p]``, the terms added in step order."""
    nf, npoints = acc.shape
    height = rec.shape[0]
    for p in prange(npoints):
        k = half[p]
        for f in range(nf):
            re = acc[f, p].real
            im = acc[f, p].imag
            for s in range(height):
                v = np.float64(rec[s, first + p])
                re += w[k, f, s].real * v
                im += w[k, f, s].imag * v
            acc[f, p] = complex(re, im)


@functools.cache
def dft_cuda_kernels() -> SimpleNamespace:
    """The CUDA kernels: ``accumulate[blocks, threads](rec, first, half, w_re, w_im, acc_re, acc_im)`` (a
    thread a point), ``take_columns[blocks, threads](rec, out)`` (``out = rec[:, :out.shape[1]]``) and
    ``plane_flux[(blocks, nf), FLUX_THREADS](acc_re, acc_im, table, n2, nfaces, out)`` (a flux plane's
    :func:`~diamondlab.maxwell.monitors.plane_flux_sum` from its sums on the device, a thread a face: the
    ``(nf, blocks)`` partial sums ``out`` then summed along their blocks)."""
    global cuda  # a module global, as the CUDA simulator expects to find it in a kernel's globals
    from numba import cuda

    @cuda.jit
    def accumulate(rec, first, half, w_re, w_im, acc_re, acc_im):
        p = cuda.grid(1)
        if p >= acc_re.shape[1]:
            return
        k = half[p]
        for f in range(acc_re.shape[0]):
            re = acc_re[f, p]
            im = acc_im[f, p]
            for s in range(rec.shape[0]):
                v = np.float64(rec[s, first + p])
                re += w_re[k, f, s] * v
                im += w_im[k, f, s] * v
            acc_re[f, p] = re
            acc_im[f, p] = im

    @cuda.jit
    def take_columns(rec, out):
        s, j = cuda.grid(2)
        if s < out.shape[0] and j < out.shape[1]:
            out[s, j] = rec[s, j]

    @cuda.jit(device=True)
    def face_value(acc_re, acc_im, f, row, base):
        """A component at a face centre from its block's sums (a row of ``_Plane.face_table``)."""
        i0, i1 = base + row[4], base + row[5]
        re = 0.5 * (acc_re[f, i0] + acc_re[f, i1])
        im = 0.5 * (acc_im[f, i0] + acc_im[f, i1])
        if row[3] == 4:
            i2, i3 = base + row[6], base + row[7]
            re = 0.5 * (re + 0.5 * (acc_re[f, i2] + acc_re[f, i3]))
            im = 0.5 * (im + 0.5 * (acc_im[f, i2] + acc_im[f, i3]))
        return re, im

    @cuda.jit
    def plane_flux(acc_re, acc_im, table, n2, nfaces, out):
        """``out[f, b] = sum Re(E_b conj(H_c) - E_c conj(H_b))`` over block ``b``'s faces ``k < nfaces``
        (grid x) at frequency ``f`` (grid y), summed in shared memory in a fixed order (no atomics: the
        same sums give the same numbers, run after run)."""
        part = cuda.shared.array(FLUX_THREADS, np.float64)
        k = cuda.grid(1)
        f = cuda.blockIdx.y
        t = cuda.threadIdx.x
        value = 0.0
        if k < nfaces:
            i = k // n2
            j = k - i * n2
            vals = cuda.local.array(8, np.float64)
            for r in range(4):
                vals[2 * r], vals[2 * r + 1] = face_value(acc_re, acc_im, f, table[r],
                                                          table[r, 0] + i * table[r, 1] + j * table[r, 2])
            # Re(E_b conj(H_c)) - Re(E_c conj(H_b))
            value = (vals[0] * vals[6] + vals[1] * vals[7]) - (vals[2] * vals[4] + vals[3] * vals[5])
        part[t] = value
        cuda.syncthreads()
        step = FLUX_THREADS // 2
        while step > 0:
            if t < step:
                part[t] += part[t + step]
            cuda.syncthreads()
            step //= 2
        if t == 0:
            out[f, cuda.blockIdx.x] = part[0]

    return SimpleNamespace(accumulate=accumulate, take_columns=take_columns, plane_flux=plane_flux)
