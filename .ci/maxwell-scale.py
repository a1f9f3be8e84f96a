"""Maxwell at scale: the calculation window against the in-memory run on one GPU, and MPI ranks (x split).

    python .ci/maxwell-scale.py window [SHAPE] [--window W] [--orders 2 4] [--fill 0.8] ...
    mpiexec -n K python .ci/maxwell-scale.py mpi [SHAPE] [--orders 2 4] [--fill 0.8] ...

``window``: per order, the in-memory DiamondTorre run and the same run through a
calculation window of ``W`` x rows (default nx / 4), the same steps from the
same start: one JSON line each with the median rate (G Yee cell updates/s over
``repeats`` timed runs of ``sweeps`` sweeps after a warm-up run), the backend
that ran (``path``: ``StreamedYeeCUDABackend``, the sweep streamed through a
ring on the GPU, which every DiamondTorre scene here takes; ``WindowBackend``,
window by window, for stepwise or periodic faces), the window's bus traffic
and the rate the bus allows, its rate over the in-memory rate (target: at least
0.8) and whether the two runs' ``E`` and ``H`` are equal bit for bit (by a
SHA-256 of each component: no copy of the whole fields is kept).

``mpi``: every rank builds the same ``Simulation(equation="maxwell",
comm=MPI.COMM_WORLD)`` (one GPU a rank); rank 0 prints a JSON line per order
with the median rate of the whole grid and the ghost-row path.  Run with
``-n 1`` (the one-GPU baseline, no split) and ``-n 2`` (target: at least
1.8x).

``SHAPE`` (``NXxNYxNZ``) defaults to a grid that fills ``--fill`` of the
first GPU's free memory with ny = nz = ``--cross`` (256): the whole state
(E, H and the material index) on the card for the in-memory run.  Every run
has a CPML (``--pml``) and a dipole, so the kernels are those of a real run.
"""

import argparse
import hashlib
import json
import math
import statistics
import time
import warnings

import numpy as np

from diamondlab import Simulation
from diamondlab.maxwell import Dipole, GaussianPulse

parser = argparse.ArgumentParser()
parser.add_argument("mode", choices=("window", "mpi"))
parser.add_argument("shape", nargs="?")
parser.add_argument("--orders", type=int, nargs="+", default=[2, 4])
parser.add_argument("--window", type=int, default=None)
parser.add_argument("--fill", type=float, default=0.8)
parser.add_argument("--cross", type=int, default=256)
parser.add_argument("--pml", type=int, default=8)
parser.add_argument("--sweeps", type=int, default=6)
parser.add_argument("--repeats", type=int, default=3)
parser.add_argument("--nt", type=int, default=None)
parser.add_argument("--halo", default="auto")
parser.add_argument("--backend", default="cuda")
parser.add_argument("--plain", action="store_true",
                    help="media only (vacuum, no CPML, no dipole): the register-tile sweep's scene")
args = parser.parse_args()
warnings.simplefilter("ignore")

BYTES_PER_CELL = 2 * 12 + 3  # E and H (float32, 3 components each) and the material index (1 byte each)


def grid() -> tuple[int, int, int]:
    if args.shape:
        parts = [int(p) for p in args.shape.split("x")]
        return tuple(parts * 3) if len(parts) == 1 else tuple(parts)
    from diamondlab.engine.backends.cuda import device_memory

    free = device_memory()[0]
    nx = int(args.fill * free / (BYTES_PER_CELL * args.cross**2))
    return nx, args.cross, args.cross


def settings(shape) -> dict:
    """The run's arguments beside the grid, the order and the scale."""
    nx, ny, nz = shape
    center = (nx // 2, ny // 2, nz // 2)
    if args.plain:
        scene = {"pml": 0}  # vacuum: each cell still reads its medium index
    else:
        scene = {"sources": [Dipole(center, "Ez", GaussianPulse(0.1, 0.05))], "pml": args.pml}
    return {"backend": args.backend, "algorithm": "diamondtorre", "nt": args.nt, **scene}


def build(shape, order: int, **scale) -> Simulation:
    return Simulation(shape, order, equation="maxwell", **settings(shape), **scale)


def rate(sim: Simulation, barrier=lambda: None, steps: int | None = None) -> tuple[float, int]:
    """Median G cell updates/s of runs of ``steps`` (default: ``sweeps`` sweeps), after a warm-up run of as
    many; the steps run."""
    steps = steps or sim.nt * args.sweeps
    sim.run(steps)
    rates = []
    for _ in range(args.repeats):
        barrier()
        t0 = time.perf_counter()
        sim.run(steps)
        sim.backend.synchronize()
        barrier()
        rates.append(sim.cells * steps / (time.perf_counter() - t0) / 1e9)
    return statistics.median(rates), steps * (1 + args.repeats)


def digest(sim: Simulation) -> list[str]:
    """SHA-256 of each of the six components (host views where the state is on the host, else one component
    copied at a time)."""
    views = sim.backend.field_views()
    parts = [views[c // 3][c % 3] if views[0] is not None else sim.backend.component_view(name)
             for c, name in enumerate(("Ex", "Ey", "Ez", "Hx", "Hy", "Hz"))]
    return [hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest() for a in parts]


def window_mode(shape) -> None:
    from diamondlab.engine.equations.maxwell_plan import MaxwellPlan

    window = args.window or shape[0] // 4
    for order in args.orders:
        # both runs the same steps (a streamed window takes a taller Nt by default): E and H then compare
        nts = [MaxwellPlan.build(shape, order, **settings(shape), window=w).nt for w in (None, window)]
        rows, medians = {}, {}
        for w in (None, window):
            sim = build(shape, order, window=w)
            median, steps = rate(sim, steps=args.sweeps * math.lcm(*nts))
            medians[w] = median
            rows[w] = {"mode": "window" if w else "in-memory", "order": order, "shape": shape, "window": w,
                       "plain": args.plain, "nt": sim.nt, "size": sim.size, "rate_gcells": round(median, 3),
                       "steps": steps, "backend": sim.backend.name, "path": type(sim.backend).__name__}
            if w:
                from diamondlab.engine.scale.window import describe_traffic

                rows[w]["traffic"] = sim.backend.traffic()
                rows[w]["bus"] = describe_traffic(rows[w]["traffic"], sim.nt)
            rows[w]["fields"] = digest(sim)
            del sim
        whole, windowed = rows[None], rows[window]
        windowed["bit_equal"] = whole.pop("fields") == windowed.pop("fields")
        windowed["of_in_memory"] = round(medians[window] / medians[None], 3)
        for row in (whole, windowed):
            print(json.dumps(row), flush=True)


def mpi_mode(shape) -> None:
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    for order in args.orders:
        sim = build(shape, order, comm=comm if comm.size > 1 else None, halo=args.halo)
        median, steps = rate(sim, comm.Barrier)
        if comm.rank == 0:
            print(json.dumps({"mode": "mpi", "ranks": comm.size, "order": order, "shape": shape, "nt": sim.nt,
                              "size": sim.size, "rate_gcells": round(median, 3), "steps": steps,
                              "halo": getattr(sim.backend, "halo_path", None), "plain": args.plain,
                              "backend": sim.backend.name}), flush=True)
        del sim


if __name__ == "__main__":
    (window_mode if args.mode == "window" else mpi_mode)(grid())
