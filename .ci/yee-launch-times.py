"""Where a stepwise Yee half step's time goes on the GPU: every launch of it timed alone (CUDA events).

    python .ci/yee-launch-times.py --grids 512x512x256 --orders 2 4 [--repeats 20]

Per grid and order, three scenes run stepwise on the CUDA backend: the vacuum, and the bench's physics
scene (:func:`diamondlab.engine.measure.bench.yee_bench_scene`: a Drude sphere, a 12-cell CPML, a TFSF
plane wave, a dipole and a probe) in each of its launch plans: one kernel for every cell (the default),
the column groups whose columns are whole (``split_z_layers`` off) and the column groups split at the z
layers.  After two steps (compiled, the arguments of a launch captured), each launch of each half step is
launched ``--repeats`` times in a row between two CUDA events; one JSON line a launch (its kernel, grid,
threads a block, the cells it updates, microseconds a launch on the GPU and on the host, which only queues
it, each prepared once as ``step`` prepares it) and a line a half step with their sum and the rate it
allows in G Yee cell updates/s.  The fields are whatever the repeats leave: times only.
"""

import argparse
import gc
import json
import time

import numpy as np

from diamondlab import Simulation
from diamondlab.engine.backends.yee_cuda import YeeCUDABackend
from diamondlab.engine.measure.bench import random_start, yee_bench_scene

PLANS = {"vacuum": None, "one kernel": (False, True), "groups, whole columns": (True, False),
         "groups, split at z": (True, True)}


_resources: dict = {}  # a kernel's registers and local (spilled) bytes a thread, by its name


def _registers(dispatcher) -> tuple:
    """Registers and local bytes a thread of ``dispatcher``'s compiled kernel (its largest overload)."""
    try:
        regs, local = dispatcher.get_regs_per_thread(), dispatcher.get_local_mem_per_thread()
    except Exception:  # noqa: BLE001 - the simulator has no such numbers
        return (None, None)
    one = lambda v: max(v.values()) if isinstance(v, dict) and v else v  # noqa: E731 - the largest overload
    return (one(regs), one(local))


def _launches(b, half: int, args: tuple):
    """``(name, grid, threads, cells, call)`` for each launch of half step ``half`` as ``step`` makes them
    (:meth:`~diamondlab.engine.backends.yee_cuda.YeeCUDABackend._step_launches`, prepared once)."""
    prepared = b._step_launches(args)
    for (kernels, name, grid, threads, where), launch in zip(b._stepwise, prepared, strict=False):
        _resources[name] = _registers(getattr(kernels, name))
        blocks = grid if isinstance(grid, int) else int(np.prod(grid))
        if name == "stepwise_slabs":  # its idle threads left out
            cells = int(where[2]) * int(grid[1]) * int(where[3] + where[4])
        else:
            cells = blocks * threads
        yield name, grid, threads, cells, (lambda p=launch: p(half, 0))
    if b._point_lists is not None:  # the cells with points of this half step
        bounds = b._point_lists[0][0].copy_to_host()
        n = int(bounds[half + 1] - bounds[half])
        yield "points_after", b._point_lists[1], 128, n, (lambda p=prepared[-1]: p(half, 0))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--grids", nargs="+", default=["512x512x256"])
    ap.add_argument("--orders", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--plans", nargs="+", choices=tuple(PLANS), default=list(PLANS))
    ap.add_argument("--only", nargs="+", default=None,
                    help="time only these kernels (the others neither compiled nor run; no step before)")
    ap.add_argument("--cap", default=None,
                    help="the register cap of the kernels with a CPML, the listed columns' too (or none)")
    ap.add_argument("--slab-threads", type=int, default=None, help="YeeCUDABackend.SLAB_THREADS")
    ap.add_argument("--plain-cap", default=None, help="the 32-bit plain kernels' register cap (or none)")
    args = ap.parse_args()
    import diamondlab.kernels.yee_cuda as kernels  # its caps are read when the kernels are made

    if args.cap is not None:
        kernels.STEPWISE_PML_REGISTERS = None if args.cap == "none" else int(args.cap)
        kernels.STEPWISE_LISTED_REGISTERS = kernels.STEPWISE_PML_REGISTERS
    if args.plain_cap is not None:
        kernels.STEPWISE_PLAIN_REGISTERS = None if args.plain_cap == "none" else int(args.plain_cap)
    caps = dict(cap=kernels.STEPWISE_PML_REGISTERS, listed_cap=kernels.STEPWISE_LISTED_REGISTERS,
                plain_cap=kernels.STEPWISE_PLAIN_REGISTERS)  # the caps in force
    if args.slab_threads:
        YeeCUDABackend.SLAB_THREADS = args.slab_threads
    from numba import cuda

    for grid in args.grids:
        shape = tuple(int(n) for n in grid.split("x"))
        start = random_start(shape, "maxwell")
        for order in args.orders:
            for plan in args.plans:
                groups = PLANS[plan]
                if groups is not None:
                    YeeCUDABackend.stepwise_groups, YeeCUDABackend.split_z_layers = groups
                scene = {} if groups is None else yee_bench_scene(shape)
                sim = Simulation(shape, order, equation="maxwell", backend="cuda", algorithm="stepwise",
                                 **scene)
                sim.reset(start)
                b, kept = sim.backend, []
                if args.only:  # these launches alone, with the arguments of a one-step call
                    b._stepwise = [e for e in b._stepwise if e[1] in args.only]
                    if "points_after" not in args.only:
                        b._point_lists = None
                    kept.append(b._device_args(1, None))
                else:
                    b._keep = lambda a, keep=b._keep, kept=kept: (kept.append(a), keep(a))
                    sim.run(2)
                cuda.synchronize()
                total = 0.0
                for half in (0, 1):
                    half_us = 0.0
                    for name, launch_grid, threads, cells, call in _launches(b, half, kept[-1]):
                        call()
                        cuda.synchronize()
                        t0, t1 = cuda.event(), cuda.event()
                        t0.record()
                        h0 = time.perf_counter()
                        for _ in range(args.repeats):
                            call()
                        host_us = 1e6 * (time.perf_counter() - h0) / args.repeats
                        t1.record()
                        t1.synchronize()
                        us = 1e3 * t0.elapsed_time(t1) / args.repeats
                        half_us += us
                        print(json.dumps(dict(grid=shape, order=order, plan=plan, half="HE"[half],
                                              kernel=name, launch_grid=launch_grid, threads=threads,
                                              cells=cells, us=round(us, 2), host_us=round(host_us, 2),
                                              **caps, slab_threads=YeeCUDABackend.SLAB_THREADS,
                                              registers=_resources.get(name, (None,))[0],
                                              local_bytes=_resources.get(name, (None, None))[1],
                                              gcells=round(cells / max(us, 1e-9) / 1e3, 2))), flush=True)
                    total += half_us
                    print(json.dumps(dict(grid=shape, order=order, plan=plan, half="HE"[half],
                                          half_us=round(half_us, 1))), flush=True)
                rate = float(np.prod(shape)) / max(total, 1e-9) / 1e3
                print(json.dumps(dict(grid=shape, order=order, plan=plan, step_us=round(total, 1),
                                      gcells=round(rate, 2))), flush=True)
                YeeCUDABackend.stepwise_groups, YeeCUDABackend.split_z_layers = None, True
                del sim, b, kept
                gc.collect()


if __name__ == "__main__":
    main()
