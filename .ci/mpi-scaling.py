"""Strong and weak scaling of DiamondTorre over MPI ranks (one GPU or CPU engine per rank).

    mpiexec -n K python .ci/mpi-scaling.py SHAPE [SHAPE ...] [--backend cuda] [--orders 2]
        [--sweeps 8] [--repeats 3] [--halo auto|host|peer] [--nt NT]

Every rank builds the same ``Simulation(comm=MPI.COMM_WORLD)``; rank 0 prints
one JSON line per (shape, order): the median rate (G cell updates/s of the
whole grid) over ``repeats`` timed runs of ``sweeps`` sweeps, each run
between two barriers after a warm-up run, with the ghost-row path used.  Run
it with ``-n 1`` for the one-device baseline (no split) and ``-n 2`` for two.
Used for BENCHMARKS.md ("MPI on GPUs").
"""

import argparse
import json
import statistics
import time
import warnings

from mpi4py import MPI

from diamondlab import Simulation

parser = argparse.ArgumentParser()
parser.add_argument("shapes", nargs="+")
parser.add_argument("--backend", default="cuda")
parser.add_argument("--orders", type=int, nargs="+", default=[2])
parser.add_argument("--sweeps", type=int, default=8)
parser.add_argument("--repeats", type=int, default=3)
parser.add_argument("--halo", default="auto")
parser.add_argument("--nt", type=int, default=None)
parser.add_argument("--size", type=int, default=None)
args = parser.parse_args()
comm = MPI.COMM_WORLD
warnings.simplefilter("ignore")


def shape_of(text):
    parts = [int(p) for p in text.split("x")]
    return tuple(parts * 3) if len(parts) == 1 else tuple(parts)


for text in args.shapes:
    shape = shape_of(text)
    for order in args.orders:
        sim = Simulation(shape, order, backend=args.backend, algorithm="diamondtorre", nt=args.nt,
                         size=args.size, initial="gaussian", comm=comm if comm.size > 1 else None,
                         halo=args.halo)
        steps = sim.nt * args.sweeps
        t0 = time.perf_counter()
        sim.run(steps)  # compile and warm up
        warm = time.perf_counter() - t0
        rates = []
        for _ in range(args.repeats):
            comm.Barrier()
            t0 = time.perf_counter()
            sim.run(steps)
            sim.backend.synchronize()
            comm.Barrier()
            rates.append(sim.cells * steps / (time.perf_counter() - t0) / 1e9)
        if comm.rank == 0:
            print(json.dumps({
                "ranks": comm.size, "shape": list(shape), "order": order, "size": sim.size, "nt": sim.nt,
                "steps": steps, "gcells_per_s": round(statistics.median(rates), 2),
                "rates": [round(r, 2) for r in rates], "warmup_s": round(warm, 1),
                "halo": getattr(sim.backend, "halo_path", None), "backend": sim.backend.name,
            }), flush=True)
        del sim
