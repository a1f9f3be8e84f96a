"""The register-tile Yee sweep on a tall column under several register caps (rate, registers, spills).

    python .ci/yee-cap-probe.py --shape 512 512 352 --order 2 --dts 1 --caps 0 88 64 56
"""

import argparse
import json
import statistics
import time

import diamondlab.engine.backends.yee_cuda as backend
from diamondlab import Simulation
from diamondlab.kernels.cuda import kernel_resources
from diamondlab.kernels.yee_cuda import yee_register_sweep


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", type=int, nargs=3, default=[512, 512, 352])
    ap.add_argument("--order", type=int, default=2)
    ap.add_argument("--dts", type=int, default=1)
    ap.add_argument("--nt", type=int, default=4)
    ap.add_argument("--caps", type=int, nargs="+", default=[0])
    ap.add_argument("--prefetch", type=int, default=None, help="tiers ahead (default: the engine's)")
    args = ap.parse_args()
    backend.YeeCUDABackend.prefetch = args.prefetch
    automatic = backend.yee_register_cap
    for cap in args.caps:
        backend.yee_register_cap = (lambda *a, c=cap: c) if cap else automatic
        sim = Simulation(tuple(args.shape), args.order, equation="maxwell", backend="cuda",
                         algorithm="diamondtorre", size=args.dts, nt=args.nt)
        sim.run(sim.nt)
        rates = []
        for _ in range(3):
            sim.backend.synchronize()
            t0 = time.perf_counter()
            sim.run(32)
            sim.backend.synchronize()
            rates.append(sim.cells * 32 / (time.perf_counter() - t0) / 1e9)
        used = backend.yee_register_cap(args.order, args.dts, args.shape[2])
        module = yee_register_sweep(args.order, args.dts, False, used, prefetch=sim.backend.tiers_prefetched)
        res = [kernel_resources(k) for k in module.compiled.values()]
        print(json.dumps(dict(shape=args.shape, order=args.order, dts=args.dts, nt=args.nt, cap=used,
                              median=statistics.median(rates), resources=res)), flush=True)
        del sim


if __name__ == "__main__":
    main()
