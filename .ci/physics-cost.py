"""Where the time of a run with physics goes: one term at a time, DiamondTorre and stepwise, on one grid.

    python .ci/physics-cost.py [cuda|cpu] [SHAPE ...] [--orders 2 8] [--sweeps 8] [--repeats 3]
        [--cases constant sponge ...] [--size DTS] [--dt-options JSON]

For each grid and order it times (``Simulation.run``, medians, both algorithms
alternated in one process) the constant medium, the sponge alone, one source,
one receiver, a source and a receiver (no sponge), and all three; then, for the
DiamondTorre backend with all three, the sweep kernel alone (one
``backend.sweep`` per sweep, without the run loop's books).  Used for
BENCHMARKS.md ("Physics at full speed").
"""

import argparse
import json
import statistics
import time
import warnings

import numpy as np

from diamondlab import Simulation
from diamondlab.engine.run.simulation import SourceTimingWarning
from diamondlab.sources import Receiver, Source

parser = argparse.ArgumentParser()
parser.add_argument("backend", nargs="?", default="cuda")
parser.add_argument("shapes", nargs="*", default=["256"])
parser.add_argument("--orders", type=int, nargs="+", default=[2, 8])
parser.add_argument("--sweeps", type=int, default=8, help="sweeps of Nt steps per timed run")
parser.add_argument("--repeats", type=int, default=3)
parser.add_argument("--cases", nargs="+", default=None)
parser.add_argument("--size", type=int, default=None, help="DiamondTorre's DTS (default: the engine's)")
parser.add_argument("--dt-options", type=json.loads, default=None,
                    help='DiamondTorre backend_options, JSON (e.g. \'{"max_registers": 168}\')')
args = parser.parse_args()
warnings.simplefilter("ignore", SourceTimingWarning)


def shape_of(text):
    parts = [int(p) for p in text.split("x")]
    return tuple(parts * 3) if len(parts) == 1 else tuple(parts)


def cases(shape):
    centre = tuple(n // 2 for n in shape)
    src = [Source(centre, frequency=1 / 20, units="grid")]
    rec = [Receiver(tuple(n // 4 for n in shape), units="grid")]
    return {  # sources alone would bring the default sponge: sponge=0 keeps the terms apart
        "constant": {},
        "sponge": {"sponge": 16},
        "source": {"sources": src, "sponge": 0},
        "receiver": {"receivers": rec},
        "src+rec": {"sources": src, "receivers": rec, "sponge": 0},
        "src+rec+sponge": {"sources": src, "receivers": rec, "sponge": 16},
    }


for text in args.shapes:
    shape = shape_of(text)
    rng = np.random.default_rng(0)
    initial = tuple(rng.standard_normal(shape, dtype=np.float32) * 1e-3 for _ in range(2))
    for order in args.orders:
        base = None
        for name, physics in cases(shape).items():
            if args.cases and name not in args.cases:
                continue
            sims = {alg: Simulation(shape, order, backend=args.backend, algorithm=alg, initial=initial,
                                    backend_options=args.dt_options if alg == "diamondtorre" else None,
                                    size=args.size if alg == "diamondtorre" else None,
                                    **physics) for alg in ("diamondtorre", "stepwise")}
            steps = args.sweeps * sims["diamondtorre"].nt
            for sim in sims.values():
                sim.run(sims["diamondtorre"].nt)  # compile, warm up
            seconds = {alg: [] for alg in sims}
            for _ in range(args.repeats):
                for alg, sim in sims.items():
                    seconds[alg].append(sim.run(steps).seconds)
            rate = {alg: steps * np.prod(shape) / statistics.median(s) / 1e9 for alg, s in seconds.items()}
            be = sims["diamondtorre"].backend
            kernel = []
            for _ in range(args.repeats):
                be.synchronize()
                t0 = time.perf_counter()
                for _ in range(args.sweeps):
                    be.sweep(be.nt)
                be.synchronize()
                kernel.append(time.perf_counter() - t0)
            krate = steps * np.prod(shape) / statistics.median(kernel) / 1e9
            base = base or rate
            dt, sw = rate["diamondtorre"], rate["stepwise"]
            print(f"{text} NO={order} DTS={be.size} Nt={be.nt} {name:>15}: "
                  f"DT {dt:7.1f} ({dt / base['diamondtorre'] - 1:+.0%})"
                  f"  SW {sw:7.1f} ({sw / base['stepwise'] - 1:+.0%})  ratio {dt / sw:5.2f}"
                  f"  | DT sweeps alone {krate:7.1f}  {be.options} {be.resources()}", flush=True)
            del sims, be
