"""A stepwise Maxwell run's rate against the steps it queues a host round (Nt) at 128^3 on the GPU (issue 28):
the bench's dipole and probe, the whole physics scene and the vacuum, ``sim.run(64)`` five times a row,
medians in G Yee cell updates/s; each row also inside ``numba.cuda.defer_cleanup()`` (is Numba's deferred
freeing of each round's record array a stall?).

    python .ci/yee-stepwise-chunks.py
"""

import time
import warnings

import numpy as np
from numba import cuda

from diamondlab import Simulation
from diamondlab.engine.measure.bench import random_start, yee_bench_scene

warnings.simplefilter("ignore")  # the dipole's pulse comes after these steps: said, and meant
shape = (128, 128, 128)
start = random_start(shape, "maxwell")
for parts in (("dipole",), ("drude", "pml", "tfsf", "dipole"), ()):
    for nt in (4, 8, 16, 32):
        for defer in (False, True):
            scene = yee_bench_scene(shape, parts) if parts else {}
            sim = Simulation(shape, 2, equation="maxwell", backend="cuda", algorithm="stepwise", nt=nt,
                             **scene)
            sim.reset(start)
            sim.run(64)
            rates = []
            for _ in range(5):
                cuda.synchronize()
                t = time.perf_counter()
                if defer:
                    with cuda.defer_cleanup():
                        sim.run(64)
                        cuda.synchronize()
                else:
                    sim.run(64)
                    cuda.synchronize()
                rates.append(64 * np.prod(shape) / (time.perf_counter() - t) / 1e9)
            print(parts, "nt", nt, "defer" if defer else "", round(float(np.median(rates)), 2), flush=True)
