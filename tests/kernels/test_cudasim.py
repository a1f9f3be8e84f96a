"""diamondlab.kernels.cudasim: under Numba's CUDA simulator the block manager yields while it polls, and
kernels with barriers still give the right values."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

_CODE = """
import numpy as np
import diamondlab.kernels
from numba import cuda
from numba.cuda.simulator.kernel import BlockThread

assert getattr(BlockThread.is_alive, "yields", False), "the simulator's polls do not yield"

@cuda.jit
def rotate(a, out, rounds):
    s = cuda.shared.array(8, dtype=np.float32)
    i = cuda.threadIdx.x
    v = a[cuda.blockIdx.x * 8 + i]
    for _ in range(rounds):  # each round: write, barrier, read the neighbour's, barrier
        s[i] = v
        cuda.syncthreads()
        v = s[(i + 1) % 8]
        cuda.syncthreads()
    out[cuda.blockIdx.x * 8 + i] = v

a = np.arange(24, dtype=np.float32)
out = np.zeros_like(a)
rotate[3, 8](a, out, 11)
expected = np.concatenate([np.roll(b, -11) for b in a.reshape(3, 8)])
assert np.array_equal(out, expected), (out, expected)
from diamondlab.kernels.cudasim import yield_while_waiting
assert yield_while_waiting() and BlockThread.is_alive.yields  # idempotent: not wrapped twice
print("ok")
"""


def test_the_simulator_yields_while_it_polls_and_barriers_hold():
    pytest.importorskip("numba.cuda")
    out = subprocess.run([sys.executable, "-c", _CODE], env=dict(os.environ, NUMBA_ENABLE_CUDASIM="1"),
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stdout + out.stderr
