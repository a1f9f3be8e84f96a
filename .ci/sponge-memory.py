# Peak host memory of a 1024x1024x512 constant-velocity run with a sponge (BENCHMARKS.md, issue 12).
import resource
import sys
import time

from diamondlab.engine.run.simulation import Simulation
from diamondlab.sources import Source

t0 = time.perf_counter()
sim = Simulation((1024, 1024, 512), 2, backend="cpu", algorithm="stepwise", sponge=16,
                 sources=[Source((512, 512, 256), frequency=0.05, units="grid")])
built = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
sim.run(1)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
fields = 2 * 4 * 1026 * 1026 * 514 / 2**30
print(f"{sys.argv[1]}: peak RSS after construction {built:.2f} GiB, after one step {peak:.2f} GiB; "
      f"two padded fields {fields:.2f} GiB; {time.perf_counter() - t0:.1f} s")
