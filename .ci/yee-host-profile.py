"""Where a Maxwell run's host time goes on the GPU (issue 28): ``sim.run(steps)`` of the bench's physics scene
(or a part of it) timed by call, then profiled (cProfile, the top functions by their own time and by
cumulative time), beside the GPU's time of the same calls (CUDA events around them).

    python .ci/yee-host-profile.py --grid 128x128x128 --order 2 --steps 32 --calls 20 [--parts pml tfsf]
"""

import argparse
import cProfile
import io
import pstats
import time

import numpy as np

from diamondlab import Simulation
from diamondlab.engine.measure.bench import YEE_SCENE_PARTS, random_start, yee_bench_scene


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--grid", default="128x128x128")
    ap.add_argument("--order", type=int, default=2)
    ap.add_argument("--steps", type=int, default=32)
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--algorithm", default="stepwise")
    ap.add_argument("--parts", nargs="+", default=list(YEE_SCENE_PARTS))
    ap.add_argument("--top", type=int, default=30)
    args = ap.parse_args()
    from numba import cuda

    shape = tuple(int(n) for n in args.grid.split("x"))
    scene = yee_bench_scene(shape, tuple(args.parts)) if args.parts != ["none"] else {}
    sim = Simulation(shape, args.order, equation="maxwell", backend="cuda", algorithm=args.algorithm, **scene)
    sim.reset(random_start(shape, "maxwell"))
    sim.run(args.steps)
    cuda.synchronize()
    walls = []
    t0, t1 = cuda.event(), cuda.event()
    t0.record()
    for _ in range(args.calls):
        w = time.perf_counter()
        sim.run(args.steps)
        walls.append(time.perf_counter() - w)
    t1.record()
    t1.synchronize()
    gpu = t0.elapsed_time(t1) / 1e3
    cells = float(np.prod(shape)) * args.steps
    print(f"{args.grid} order {args.order} {args.algorithm} parts {args.parts}: a call of {args.steps} steps "
          f"{1e3 * np.median(walls):.2f} ms host (median), {1e3 * gpu / args.calls:.2f} ms between the "
          "events; "
          f"{cells * args.calls / gpu / 1e9:.2f} G/s", flush=True)
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(args.calls):
        sim.run(args.steps)
    cuda.synchronize()
    prof.disable()
    for key in ("tottime", "cumulative"):
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats(key).print_stats(args.top)
        print("\n".join(s.getvalue().splitlines()[:args.top + 12]), flush=True)


if __name__ == "__main__":
    main()
