"""Cost of the per-sweep blow-up check (three sampled planes, Simulation._check_planes) against a sweep.

    python .ci/finite-check-cost.py [cpu|cuda]

Prints, per grid: the median sweep time (DiamondTorre, the backend's default
tiling), the median time of one check, and their ratio.  Used for
BENCHMARKS.md ("Blow-up detection").
"""

import statistics
import sys
import time

from diamondlab import Simulation

backend = sys.argv[1] if len(sys.argv) > 1 else "cuda"
grids = [((256, 256, 256), 2), ((256, 256, 256), 8), ((512, 2048, 256), 2)]
if backend == "cpu":
    grids = [((128, 128, 128), 2), ((256, 256, 256), 2)]
for shape, order in grids:
    sim = Simulation(shape, order, backend=backend)
    sim.run(2 * sim.nt)  # compile, warm up
    sweeps, checks = [], []
    for _ in range(7):
        t0 = time.perf_counter()
        sim.backend.sweep(sim.nt)
        sim.backend.synchronize()
        sweeps.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        sim._check_planes()
        checks.append(time.perf_counter() - t0)
    sweep, check = statistics.median(sweeps), statistics.median(checks)
    print(f"{backend} {shape} NO={order} DTS={sim.size} Nt={sim.nt}: sweep {sweep * 1e3:.2f} ms, "
          f"check {check * 1e3:.3f} ms, {check / sweep:.2%} of a sweep", flush=True)
    del sim
