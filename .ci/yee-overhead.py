"""Where the time of a Maxwell GPU run goes: the backend's steps alone against Simulation.run (one process).

    python .ci/yee-overhead.py 2
"""

import sys
import time

from diamondlab import Simulation

order = int(sys.argv[1]) if len(sys.argv) > 1 else 2
sim = Simulation((256, 256, 256), order, equation="maxwell", backend="cuda", algorithm="stepwise")
sim.run(16)
b = sim.backend


def clock(fn, repeats=3):
    best = []
    for _ in range(repeats):
        b.synchronize()
        t0 = time.perf_counter()
        fn()
        b.synchronize()
        best.append(time.perf_counter() - t0)
    return min(best)


steps = 16
for name, fn in (("backend.step(16)", lambda: b.step(steps)), ("sim.run(16)", lambda: sim.run(steps)),
                 ("planes", lambda: b.planes((128, 128, 128), (1, 1, 1))),
                 ("take_traces", b.take_traces)):
    t = clock(fn)
    rate = sim.cells * steps / t / 1e9 if "16" in name else 0.0
    print(f"{name}: {t * 1e3:.2f} ms ({rate:.2f} G Yee cell updates/s)")
