"""The kernel floor: Numba kernels generated per (NO, DTS), for the CPU and for CUDA; no widgets.

:mod:`~diamondlab.kernels.cpu`, :mod:`~diamondlab.kernels.cuda` (with its
source printer :mod:`~diamondlab.kernels.cuda_source`),
:mod:`~diamondlab.kernels.points` (source and receiver tables) and
:mod:`~diamondlab.kernels.generated` (where generated modules are written
and imported from).  Import what you use from its module.  Under Numba's CUDA simulator the
package first makes the simulator let its threads run
(:mod:`~diamondlab.kernels.cudasim`).
"""

import os

if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
    from diamondlab.kernels.cudasim import yield_while_waiting

    yield_while_waiting()

__all__: list[str] = []
