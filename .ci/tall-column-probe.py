"""Tall columns: the sweep with level n-1 in shared memory where the register file caps a tall block.

    python .ci/tall-column-probe.py --shape 512x512x1280 --order 8 --segments 0 4 2 8 [--compile-only]

Issue 30: on 512x512x1280 (x and z swapped: a z column of 512 cells) the NO=8 sweep, DTS=1, runs in blocks of
512 threads, so a thread gets at most 128 registers and the tile spills (ptxas offline: 1408 bytes a thread
at 128 registers; 255 without a cap).  Keeping level n-1 in shared memory (the NO=6 DTS=2 layout,
``TALL_COLUMN_SEGMENTS``, z exchanged in ``S`` segments) leaves 692 bytes spilled at 128 (none from
about 165).  This measures each ``S`` (0: level n-1 in registers, as built) against stepwise, alternated in
one process (``compare_algorithms``, medians), one ``S`` after another (the table is global: a backend
launched with another ``S`` set would get the wrong shared memory size), with the registers and spilled bytes
the device's compiler gave.  ``--compile-only`` builds the kernels (run one process per ``S`` at once first).
One JSON line per row.
"""

from __future__ import annotations

import argparse
import json

import diamondlab.kernels.cuda as kernels
from diamondlab import Simulation
from diamondlab.engine.measure.bench import compare_algorithms


def use_segments(order: int, size: int, segments: int) -> None:
    """Set the pair's layout on tall columns (0: level n-1 in registers) and forget the kernel modules built
    before.  (First run, 2026-11-28, before the layout was built in: the same through
    ``SHARED_PREVIOUS_SEGMENTS``, for every column.)"""
    if segments:
        kernels.TALL_COLUMN_SEGMENTS[order, size] = segments
    else:
        kernels.TALL_COLUMN_SEGMENTS.pop((order, size), None)
    kernels.cuda_kernels.cache_clear()


def resources(sim) -> dict | None:
    """Registers, local and shared bytes of the sweep kernel (through the swapped axes' wrapper)."""
    return getattr(sim.backend, "inner", sim.backend).resources()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", default="512x512x1280")
    ap.add_argument("--order", type=int, default=8)
    ap.add_argument("--size", type=int, default=1)
    ap.add_argument("--nt", type=int, default=None)
    ap.add_argument("--segments", type=int, nargs="+", default=[0, 4])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--compile-only", action="store_true")
    args = ap.parse_args()
    shape = tuple(int(n) for n in args.shape.split("x"))
    for segments in args.segments:
        use_segments(args.order, args.size, segments)
        if args.compile_only:
            sim = Simulation(shape, args.order, size=args.size, nt=args.nt, backend="cuda",
                             algorithm="diamondtorre")
            sim.backend.compile()
            print(json.dumps({"segments": segments, "compiled": resources(sim)}), flush=True)
            continue
        sims: list = []
        row = compare_algorithms(shape, [args.order], "cuda", size=args.size, nt=args.nt,
                                 repeats=args.repeats, configure=sims.append)[0]
        torres = next(s for s in sims if s.algorithm == "diamondtorre")
        keep = ("order", "dts", "nt", "diamondtorre", "stepwise", "ratio", "spreads", "bit_equal", "options")
        print(json.dumps({"shape": args.shape, "segments": segments, **{k: row[k] for k in keep},
                          "resources": resources(torres)}), flush=True)
        del sims, torres


if __name__ == "__main__":
    main()
