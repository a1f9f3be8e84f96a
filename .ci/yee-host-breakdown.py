"""Where a stepwise Maxwell run's host time goes a host round (4 steps) at 128^3 on the GPU (issue 28): the
bench's dipole and probe, then its whole physics scene; the host's microseconds a round in each part of
``Simulation._advance`` and the backend's ``step`` (each wrapped in a timer; the parts nest: ``upload`` and
``PreparedLaunch.__init__`` are inside ``_device_args`` and ``_step_launches``), and the wall time a round.

    python .ci/yee-host-breakdown.py
"""

import functools
import time
import warnings

from numba import cuda

import diamondlab.kernels.cuda as kc
from diamondlab import Simulation
from diamondlab.engine.backends.cuda import SampleRing
from diamondlab.engine.measure.bench import random_start, yee_bench_scene

warnings.simplefilter("ignore")  # the dipole's pulse comes after these steps: said, and meant
shape = (128, 128, 128)
start = random_start(shape, "maxwell")
T = {}
def timed(obj, name, label):
    f = getattr(obj, name)
    @functools.wraps(f)
    def g(*a, **k):
        t = time.perf_counter()
        try:
            return f(*a, **k)
        finally:
            T[label] = T.get(label, 0.0) + time.perf_counter() - t
    setattr(obj, name, g)
for parts in (("dipole",), ("drude", "pml", "tfsf", "dipole")):
    sim = Simulation(shape, 2, equation="maxwell", backend="cuda", algorithm="stepwise", nt=4,
                     **yee_bench_scene(shape, parts))
    sim.reset(start)
    sim.run(64)
    b = sim.backend
    timed(sim.physics, "source_samples", "source_samples")
    timed(b, "_device_args", "_device_args")
    timed(SampleRing, "upload", "  upload")
    timed(b, "_step_launches", "_step_launches")
    timed(kc.PreparedLaunch, "__init__", "  PreparedLaunch.__init__")
    timed(kc.PreparedLaunch, "__call__", "PreparedLaunch.__call__")
    timed(b, "_keep", "_keep")
    timed(b, "step", "step (all)")
    timed(sim, "_advance", "_advance (all)")
    timed(b, "take_traces", "take_traces")
    timed(sim, "_check_planes", "_check_planes")
    timed(b, "synchronize", "synchronize")
    T.clear()
    cuda.synchronize()
    t = time.perf_counter()
    for _ in range(5):
        sim.run(64)
    cuda.synchronize()
    wall = time.perf_counter() - t
    chunks = 5 * 64 / 4
    print(parts, f"wall per chunk {1e6 * wall / chunks:.0f} us")
    for k, v in T.items():
        print(f"   {k:30s} {1e6 * v / chunks:8.1f} us a chunk")
