"""Maxwell on the CPU: DiamondTorre against stepwise, one process, same grid, medians (BENCHMARKS.md).

    python .ci/maxwell-bench.py --shape 128 --orders 2 4 --steps 32 --repeats 5

Yee cell updates per second (a cell's six components advanced one step). With ``--physics``: a Drude
sphere, a 12-cell CPML, a dipole and a probe.
"""

import argparse
import json
import statistics
import time

from diamondlab import Simulation
from diamondlab.maxwell import Dipole, Drude, GaussianPulse, Probe, Sphere


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", type=int, nargs="+", default=[128])
    ap.add_argument("--orders", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--steps", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--physics", action="store_true")
    args = ap.parse_args()
    shape = tuple(args.shape * 3 if len(args.shape) == 1 else args.shape)
    rows = []
    for order in args.orders:
        kw = {}
        if args.physics:
            c = tuple(n // 2 for n in shape)
            kw = dict(materials=[Sphere(c, min(shape) // 6, Drude(1.0, 1.0, 0.05))], pml=12,
                      sources=[Dipole((c[0] - min(shape) // 4, *c[1:]), "Ez", GaussianPulse(0.1, 0.05))],
                      probes=[Probe(c, "Ez")])
        for algorithm in ("diamondtorre", "stepwise"):
            sim = Simulation(shape, order, equation="maxwell", algorithm=algorithm, backend="cpu", **kw)
            sim.run(sim.nt)  # compile and warm up
            rates = []
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                sim.run(args.steps)
                rates.append(sim.cells * args.steps / (time.perf_counter() - t0) / 1e9)
            rows.append(dict(order=order, algorithm=algorithm, shape=shape, size=sim.size, nt=sim.nt,
                             physics=args.physics, median=statistics.median(rates), min=min(rates),
                             max=max(rates)))
            print(json.dumps(rows[-1]), flush=True)


if __name__ == "__main__":
    main()
