"""The kernel floor: Numba kernels generated per (NO, DTS), for the CPU and for CUDA; no widgets.

:mod:`~diamondlab.kernels.cpu`, :mod:`~diamondlab.kernels.cuda` (with its
source printer :mod:`~diamondlab.kernels.cuda_source`),
:mod:`~diamondlab.kernels.points` (source and receiver tables) and
:mod:`~diamondlab.kernels.generated` (where generated modules are written
and imported from).  Import what you use from its module.
"""

__all__: list[str] = []
