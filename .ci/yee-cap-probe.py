"""The register-tile Yee sweep on a tall column under several register caps (rate, registers, spills).

    python .ci/yee-cap-probe.py --shape 512 512 352 --order 2 --dts 1 --caps 0 88 64 56
"""

import argparse
import json
import statistics
import time

import diamondlab.engine.backends.yee_cuda as backend
import diamondlab.kernels.cuda as kernels
from diamondlab import Simulation
from diamondlab.kernels.cuda import kernel_resources

LAUNCHED = []  # the compiled sweep kernels, as launched


def _recording(launch):
    def launch_generated(*args, **kw):
        kernel = launch(*args, **kw)
        LAUNCHED.append(kernel)
        return kernel

    return launch_generated


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
    kernels.launch_generated = _recording(kernels.launch_generated)
    for cap in args.caps:
        backend.yee_register_cap = (lambda *a, c=cap: c) if cap else automatic
        backend._device_register_cap.cache_clear()  # asked once a process: ask again with this cap
        LAUNCHED.clear()
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
        res = [kernel_resources(k) for k in {id(k): k for k in LAUNCHED}.values()]
        print(json.dumps(dict(shape=args.shape, order=args.order, dts=args.dts, nt=args.nt, cap=used,
                              prefetch=sim.backend.tiers_prefetched,
                              median=statistics.median(rates), resources=res)), flush=True)
        del sim


if __name__ == "__main__":
    main()
