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
    thread a point) and ``take_columns[blocks, threads](rec, out)`` (``out = rec[:, :out.shape[1]]``)."""
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

    return SimpleNamespace(accumulate=accumulate, take_columns=take_columns)
