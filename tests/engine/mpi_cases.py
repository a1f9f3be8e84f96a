"""Run under ``mpiexec -n K``: a y-split run equals the single-process run bit for bit.

Every rank builds the same simulations; rank 0 also runs the single-process
reference and prints one ``ok`` line per case (tests/engine/test_mpi.py).
Importing it runs nothing.
"""

import sys
import warnings

import numpy as np

SHAPE = (20, 23, 12)


def cases() -> dict:
    """Keyword arguments of each case's Simulation (besides shape, backend, size, algorithm)."""
    from diamondlab.media import layered_model
    from diamondlab.sources import Receiver, Source

    return {
        "bare": {"order": 4, "nt": 3},
        "physics": {
            "order": 2, "nt": 4, "initial": "gaussian", "velocity": layered_model(SHAPE, (1.0, 1.5)),
            "sponge": 3,
            "sources": [Source((8.5, 3.2, 5.0), frequency=0.08, delay=4.0),
                        Source((10, 15.6, 6), frequency=0.08, delay=6.0)],
            "receivers": [Receiver((3.0, 4.0, 7.5)), Receiver((6, 15, 4)), Receiver((10, 11.5, 6))],
        },
    }


def compare(name: str, algorithm: str, comm, kw: dict) -> bool:
    """Run the case on every rank; on rank 0 compare with one process and print the outcome."""
    from diamondlab import Simulation

    sim = Simulation(SHAPE, backend="cpu", size=1, algorithm=algorithm, comm=comm, **kw)
    sim.run(7)
    sim.run(6)  # a second run: the exchange and the traces go on
    fields, traces, planes = sim.fields, sim.traces, sim.current_planes((9, 11, 5))
    if comm.rank:
        return True
    ref = Simulation(SHAPE, backend="cpu", size=1, algorithm=algorithm, **kw)
    ref.run(13)
    same = [np.array_equal(a, b) for a, b in zip(fields, ref.fields, strict=True)]
    same.append(np.array_equal(traces, ref.traces) and traces.shape == ref.traces.shape)
    same.append(all(np.array_equal(a, b)
                    for a, b in zip(planes, ref.current_planes((9, 11, 5)), strict=True)))
    seen = float(np.abs(ref.field).max()) > 0
    seen = seen and (not ref.traces.size or float(np.abs(ref.traces).max()) > 0)
    if all(same) and seen:
        print(f"ok {name} {algorithm} ranks={comm.size} slab rows={sim.backend.rows}", flush=True)
        return True
    print(f"FAIL {name} {algorithm} ranks={comm.size}: fields, traces, planes equal {same}; "
          f"nonzero {seen}", flush=True)
    return False


def main() -> int:
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    warnings.simplefilter("ignore")
    failures = sum(not compare(name, algorithm, comm, kw)
                   for name, kw in cases().items() for algorithm in ("diamondtorre", "stepwise"))
    return 1 if comm.allreduce(failures) else 0


if __name__ == "__main__":
    sys.exit(main())
