"""The host's cost of a TFSF plane wave's samples (issue 28): the 1D incident grid's step in Numba against the
NumPy one, the samples of 300 steps against the NumPy expressions (the dense product with the window), and a
host round's ``source_samples`` (4 steps) of the bench's physics scene at 128^3, orders 2 and 4.

    python .ci/tfsf-host-cost.py
"""

import copy
import time
import warnings

import numpy as np

from diamondlab import Simulation
from diamondlab.engine.measure.bench import yee_bench_scene

warnings.simplefilter("ignore")  # the dipole's pulse comes after these steps: said, and meant
shape = (128, 128, 128)
for order in (2, 4):
    sim = Simulation(shape, order, equation="maxwell", backend="cpu", algorithm="stepwise",
                     **yee_bench_scene(shape))
    physics = sim.physics
    tfsf = next(iter(physics.tfsf.values()))
    ref = copy.deepcopy(tfsf)
    fast = tfsf.samples(0, 300)
    pairs = [ref._advance_numpy() for _ in range(300)]
    e, h = (np.array([p[i] for p in pairs]) for i in (0, 1))
    dense = ref._matrix[0] @ e.T + ref._matrix[1] @ h.T
    rel = float(np.abs(fast - dense).max() / np.abs(dense).max())
    same32 = bool(np.array_equal(fast.astype(np.float32), dense.astype(np.float32)))
    t = time.perf_counter()
    tfsf._advance_steps(400)
    numba_us = 1e6 * (time.perf_counter() - t) / 400
    t = time.perf_counter()
    for _ in range(400):
        ref._advance_numpy()
    numpy_us = 1e6 * (time.perf_counter() - t) / 400
    for k in range(8):
        physics.source_samples(4 * k, 4, sim.params.dt)
    t = time.perf_counter()
    for k in range(8, 208):
        physics.source_samples(4 * k, 4, sim.params.dt)
    round_us = 1e6 * (time.perf_counter() - t) / 200
    print(f"order {order}: a 1D step {numba_us:.1f} us (NumPy {numpy_us:.1f}); samples of 300 steps within "
          f"{rel:.1e} of the dense product, float32 equal {same32}; source_samples a round of 4 steps "
          f"{round_us:.0f} us", flush=True)
