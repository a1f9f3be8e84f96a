"""Where two Maxwell ranks lose time: a sweep's exchange, its compute and the run loop, apart.

    mpiexec -n 2 python -m mpi4py .ci/maxwell-mpi-split.py [SHAPE] [--order 2] [--nt 4] [--sweeps 24]

Every rank builds the plain scene (vacuum, no CPML, no points) of ``SHAPE`` split along x; rank 0 prints one
JSON line with the median milliseconds (over ``--repeats``) of: ``sweeps`` exchanges alone (each waited
for), ``sweeps`` slab sweeps alone (the inner backend, no exchange, waited for at the end), both as the
slab backend runs them, and ``sim.run`` of as many steps (the run loop's agreements and checks on top);
and the one-GPU time of the same sweeps on a grid of the slab's rows (``--single``: run with ``-n 1``).
"""

import argparse
import json
import statistics
import time
import warnings

from mpi4py import MPI

from diamondlab import Simulation

parser = argparse.ArgumentParser()
parser.add_argument("shape", nargs="?", default="16384x256x256")
parser.add_argument("--order", type=int, default=2)
parser.add_argument("--nt", type=int, default=4)
parser.add_argument("--sweeps", type=int, default=24)
parser.add_argument("--repeats", type=int, default=3)
args = parser.parse_args()
warnings.simplefilter("ignore")
comm = MPI.COMM_WORLD
shape = tuple(int(n) for n in args.shape.split("x"))
sim = Simulation(shape, args.order, equation="maxwell", backend="cuda", algorithm="diamondtorre", nt=args.nt,
                 pml=0, comm=comm if comm.size > 1 else None)
backend, nt, n = sim.backend, sim.nt, args.sweeps
sim.run(nt * 2)  # compile, warm
inner = getattr(backend, "inner", backend)


def timed(work) -> float:
    times = []
    for _ in range(args.repeats):
        comm.Barrier()
        t0 = time.perf_counter()
        work()
        inner.synchronize()
        comm.Barrier()
        times.append(1e3 * (time.perf_counter() - t0))
    return round(statistics.median(times), 2)


def exchanges():
    for _ in range(n):
        backend._exchange()


def inner_sweeps():
    for _ in range(n):
        inner.sweep(nt)


def slab_sweeps():
    for _ in range(n):
        backend.sweep(nt)


def exchange_parts() -> dict:
    """A GPU-to-GPU exchange's parts, each waited for, summed over ``sweeps`` exchanges (ms): the packing
    of the rows to send, the copies into the neighbours' inboxes, the ranks' handshake, the unpacking."""
    from numba import cuda

    halo, parts = backend._halo, dict.fromkeys(("pack", "copy", "handshake", "unpack"), 0.0)
    if not hasattr(halo, "_outboxes"):
        return {}
    for _ in range(n):
        p = halo._parity
        t0 = time.perf_counter()
        for q, (lo, hi) in halo.sends:
            halo.backend.pack_rows(lo, hi, halo._outboxes[q])
        cuda.synchronize()
        t1 = time.perf_counter()
        for q, _ in halo.sends:
            halo._remote[q][p, :halo._outboxes[q].size].copy_to_device(halo._outboxes[q])
        cuda.synchronize()
        t2 = time.perf_counter()
        requests = [comm.Irecv(halo._ready[q], source=q, tag=7) for q, _ in halo.recvs]
        requests += [comm.Isend(halo._token, dest=q, tag=7) for q, _ in halo.sends]
        MPI.Request.Waitall(requests)
        t3 = time.perf_counter()
        for q, (lo, hi) in halo.recvs:
            halo.backend.unpack_rows(lo, hi, halo._inboxes[q][p, :halo._incoming[q]])
        cuda.synchronize()
        t4 = time.perf_counter()
        halo._parity = 1 - p
        for key, dt in zip(parts, (t1 - t0, t2 - t1, t3 - t2, t4 - t3), strict=True):
            parts[key] += 1e3 * dt
    return {f"exchange_{k}_ms": round(v, 2) for k, v in parts.items()}


row = {"ranks": comm.size, "shape": shape, "order": args.order, "nt": nt, "size": sim.size, "sweeps": n,
       "held": inner.shape, "backend": backend.name}
if comm.size > 1:
    row.update(halo=backend.halo_path, exchanges_ms=timed(exchanges), **exchange_parts())
row.update(inner_sweeps_ms=timed(inner_sweeps), slab_sweeps_ms=timed(slab_sweeps),
           run_ms=timed(lambda: sim.run(n * nt)))
row["run_gcells"] = round(sim.cells * n * nt / row["run_ms"] / 1e6, 2)
if comm.rank == 0:
    print(json.dumps(row), flush=True)
