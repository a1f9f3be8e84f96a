"""Numba's CUDA simulator, made to let its simulated threads run while it waits for them.

The simulator (``NUMBA_ENABLE_CUDASIM=1``, how CI runs the CUDA kernels) runs a block's threads as
Python threads, and a manager that polls them in a loop (is each one blocked in ``syncthreads``,
still alive?) to release a barrier once all have reached it.  The loop never gives the GIL away, so
the simulated threads spend most of their time waiting for it: profiled on one of CI's simulator
cases (NO=2, 15x13x4, model, points, bands of 3), 32 of its 33 seconds went to the manager's polls.
:func:`yield_while_waiting` makes each of those polls give the GIL away first (``time.sleep(0)``):
the same barriers in the same order, the same results; that case ran in 5 s.

:mod:`diamondlab.kernels` applies it on import when the simulator is on; nothing changes on a GPU.
"""

from __future__ import annotations

import time

__all__ = ["yield_while_waiting"]


def yield_while_waiting() -> bool:
    """Make the simulator's block manager give the GIL away at each poll of a thread (idempotent).

    Returns whether the simulator's thread class was found (False: a Numba-CUDA whose simulator is
    built otherwise, left as it is).

    >>> import os
    >>> os.environ.get("NUMBA_ENABLE_CUDASIM") != "1" or yield_while_waiting()
    True
    """
    try:
        from numba.cuda.simulator.kernel import BlockThread
    except ImportError:
        return False
    polled = getattr(BlockThread, "is_alive", None)
    if polled is None:
        return False
    if getattr(polled, "yields", False):
        return True

    def is_alive(thread) -> bool:
        time.sleep(0)  # the GIL to the simulated threads: the manager asks again soon enough
        return polled(thread)

    is_alive.yields = True
    BlockThread.is_alive = is_alive
    return True
