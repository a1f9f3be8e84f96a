"""The calculation window on the GPU against the in-memory run: rates, the bus, the model (BENCHMARKS.md).

    python .ci/window-bench.py --shape 4096x1024x256 --order 2 --dts 4 --nt 64 128 --window 1024 [--in-memory]

Prints one JSON line per run: the window's rate (G cell updates/s, median of ``--repeats`` runs of
``--sweeps`` sweeps), the in-memory rate on the same grid with the same Nt where ``--in-memory`` is
given (it must fit the GPU), the pinned host<->device bandwidth measured now (each way alone and
both at once) and the bus's cap ``B * Nt / 8`` (each field in and out once a sweep, both ways at once).
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np


def bus_bandwidth(nbytes: int = 1 << 30) -> dict:
    """Pinned host <-> device bytes/s: in alone, out alone, and each way while the other runs."""
    from numba import cuda

    host_in, host_out = cuda.pinned_array(nbytes // 4, np.float32), cuda.pinned_array(nbytes // 4, np.float32)
    dev_in, dev_out = cuda.device_array(nbytes // 4, np.float32), cuda.device_array(nbytes // 4, np.float32)
    s_in, s_out = cuda.stream(), cuda.stream()

    def timed(both: bool, which: str) -> float:
        best = 0.0
        for _ in range(3):
            cuda.synchronize()
            t = time.perf_counter()
            if both or which == "in":
                dev_in.copy_to_device(host_in, stream=s_in)
            if both or which == "out":
                dev_out.copy_to_host(host_out, stream=s_out)
            cuda.synchronize()
            best = max(best, nbytes * (2 if both else 1) / (time.perf_counter() - t))
        return best

    return {"in": timed(False, "in"), "out": timed(False, "out"), "both_total": timed(True, "")}


def rate(shape, order, size, nt, window, sweeps, repeats, options, initial="gaussian") -> tuple:
    import cProfile
    import pstats

    from diamondlab import Simulation
    from diamondlab.engine.measure.bench import measure_simulation

    t = time.perf_counter()
    with cProfile.Profile() as prof:
        sim = Simulation(shape, order, backend="cuda", algorithm="diamondtorre", size=size, nt=nt,
                         window=window, initial=initial, backend_options=options)
    setup = time.perf_counter() - t
    if setup > 10:  # where a slow set-up went
        pstats.Stats(prof).sort_stats("cumulative").print_stats(12)
    m = measure_simulation(sim, sweeps * nt, repeats)
    return m.gcells, sim, setup


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shape", required=True)
    p.add_argument("--order", type=int, default=2)
    p.add_argument("--dts", type=int, default=None)
    p.add_argument("--nt", type=int, nargs="+", required=True)
    p.add_argument("--window", type=int, required=True)
    p.add_argument("--sweeps", type=int, default=2)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--in-memory", action="store_true", help="time the grid in memory too (it must fit)")
    p.add_argument("--in-memory-shape", default=None, help="time this grid in memory instead (one that fits)")
    p.add_argument("--initial", default="gaussian", help="the fields' start ('zero' on grids of 10^10 cells)")
    a = p.parse_args()
    shape = tuple(int(n) for n in a.shape.split("x"))
    bus = bus_bandwidth()
    print(json.dumps({"bus_GBs": {k: round(v / 1e9, 2) for k, v in bus.items()}}), flush=True)
    for nt in a.nt:
        row = {"shape": a.shape, "order": a.order, "nt": nt, "window": a.window}
        if a.in_memory or a.in_memory_shape:
            ref = tuple(int(n) for n in a.in_memory_shape.split("x")) if a.in_memory_shape else shape
            mem, sim, _ = rate(ref, a.order, a.dts, nt, None, a.sweeps, a.repeats, None, a.initial)
            row.update(in_memory=round(mem, 2), in_memory_shape=list(ref), options=dict(sim.backend.options))
            del sim
        win, sim, setup = rate(shape, a.order, a.dts, nt, a.window, a.sweeps, a.repeats, None, a.initial)
        traffic = sim.backend.traffic()
        one_way = min(bus["in"], bus["out"])
        cap = one_way * nt / (traffic["bytes_per_cell_sweep"] / 2) / 1e9
        row.update(dts=sim.size, window_rate=round(win, 2), groups=traffic["groups"], setup_s=round(setup, 1),
                   bus_cap=round(cap, 1), window_options=dict(sim.backend.options))
        if "in_memory" in row:
            row["of_in_memory"] = round(win / row["in_memory"], 3)
        print(json.dumps(row), flush=True)
        del sim


if __name__ == "__main__":
    main()
