"""Run under ``mpiexec -n K``: a y-split run equals the single-process run bit for bit.

``mpi_cases.py [cpu|cuda] [halo]``: the backend (default cpu; cuda runs one GPU per rank, or the
CUDA simulator where ``NUMBA_ENABLE_CUDASIM=1``) and the ghost-row path (default auto).
Every rank builds the same simulations; rank 0 also runs the single-process
reference and prints one ``ok`` line per case (tests/engine/test_mpi.py).
Importing it runs nothing.
"""

import os
import sys
import warnings

import numpy as np

SHAPE = (20, 23, 12)
#: the CUDA simulator runs a Python thread per GPU thread: one smaller case, DiamondTorre only
SIMULATOR_SHAPE, SIMULATOR_RUNS = (14, 18, 8), (3, 2)


def cases(shape=SHAPE) -> dict:
    """Keyword arguments of each case's Simulation (besides shape, backend, size, algorithm)."""
    from diamondlab.media import layered_model
    from diamondlab.sources import Receiver, Source

    return {
        "bare": {"order": 4, "nt": 3},
        "physics": {
            "order": 2, "nt": 4, "initial": "gaussian", "velocity": layered_model(shape, (1.0, 1.5)),
            "sponge": 3,
            "sources": [Source((8.5, 3.2, 5.0), frequency=0.08, delay=4.0),
                        Source((10, 15.6, 6), frequency=0.08, delay=2.0)],
            "receivers": [Receiver((3.0, 4.0, 7.5)), Receiver((6, 15, 4)), Receiver((10, 11.5, 6))],
        },
    }


def compare(name: str, algorithm: str, comm, kw: dict, backend: str = "cpu", halo: str = "auto",
            shape=SHAPE, runs=(7, 6)) -> bool:
    """Run the case on every rank; on rank 0 compare with one process and print the outcome."""
    from diamondlab import Simulation

    sim = Simulation(shape, backend=backend, size=1, algorithm=algorithm, comm=comm, halo=halo, **kw)
    for steps in runs:  # a second run: the exchange and the traces go on
        sim.run(steps)
    fields, traces, planes = sim.fields, sim.traces, sim.current_planes((9, 11, 5))
    strided = sim.current_planes((5, 10, 3), (2, 3, 2))
    if comm.rank:
        return True
    ref = Simulation(shape, backend=backend, size=1, algorithm=algorithm, **kw)
    ref.run(sum(runs))
    same = [np.array_equal(a, b) for a, b in zip(fields, ref.fields, strict=True)]
    same.append(np.array_equal(traces, ref.traces) and traces.shape == ref.traces.shape)
    same.append(all(np.array_equal(a, b)
                    for a, b in zip(planes, ref.current_planes((9, 11, 5)), strict=True)))
    same.append(all(np.array_equal(a, b) and a.shape == b.shape
                    for a, b in zip(strided, ref.current_planes((5, 10, 3), (2, 3, 2)), strict=True)))
    seen = float(np.abs(ref.field).max()) > 0
    seen = seen and (not ref.traces.size or float(np.abs(ref.traces).max()) > 0)
    if all(same) and seen:
        print(f"ok {name} {algorithm} {backend} ranks={comm.size} slab rows={sim.backend.rows} "
              f"halo={sim.backend.halo_path}", flush=True)
        return True
    print(f"FAIL {name} {algorithm} ranks={comm.size}: fields, traces, planes equal {same}; "
          f"nonzero {seen}", flush=True)
    return False


def main() -> int:
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    backend, halo = (sys.argv[1:] + ["cpu", "auto"][len(sys.argv) - 1:])[:2]
    warnings.simplefilter("ignore")
    if backend == "cuda" and os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        from diamondlab.sources import Receiver, Source

        kw = cases(SIMULATOR_SHAPE)["physics"] | {
            "nt": 2, "sources": [Source((6.5, 3.2, 3.0), frequency=0.1, delay=1.0)],
            "receivers": [Receiver((3.0, 4.0, 4.5)), Receiver((6, 15, 4)), Receiver((10, 9.5, 2))],
        }
        failures = not compare("physics", "diamondtorre", comm, kw, backend, halo, SIMULATOR_SHAPE,
                               SIMULATOR_RUNS)
    else:
        failures = sum(not compare(name, algorithm, comm, kw, backend, halo)
                       for name, kw in cases().items() for algorithm in ("diamondtorre", "stepwise"))
    return 1 if comm.allreduce(failures) else 0


if __name__ == "__main__":
    sys.exit(main())
