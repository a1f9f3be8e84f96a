"""Maxwell: DiamondTorre against stepwise, one process, same grid, medians (BENCHMARKS.md).

    python .ci/maxwell-bench.py --backend cpu --shape 128 --orders 2 4 --steps 32 --repeats 5
    python .ci/maxwell-bench.py --backend cuda --shape 512 512 352 --dts 1 2 --nt 8 16
    python .ci/maxwell-bench.py --backend cuda --grids 512x32x256 512x64x256 --orders 2 --dts 2 --nt 4 \
        --algorithms diamondtorre

Yee cell updates per second (a cell's six components advanced one step), one JSON line a row. With
``--physics``: a Drude sphere, a 12-cell CPML, a TFSF plane wave, a dipole and a probe
(:func:`diamondlab.engine.measure.bench.yee_bench_scene`).  The runs, the measurement rule and the model
are ``diamondlab bench --equation maxwell``'s (:func:`diamondlab.engine.measure.bench.compare_algorithms`,
:func:`~diamondlab.engine.measure.bench.bench_models`): per order stepwise and the first DiamondTorre
configuration are measured alternately, each further configuration alone; this script adds the CUDA
sweep's variants (``--chunk``, ``--band``, ``--tile``, ``--calm``), the stepwise kernels by column groups
(``--stepwise-groups``) and a row per algorithm.  A row's
``median``, ``min`` and ``max`` are the median, slowest and fastest repeat's rate (G/s), ``model`` the
roofline's (None on the CPU: no model), ``model_bytes`` the bytes a Yee cell update moves.
"""

import argparse
import json
import sys

from diamondlab.engine.measure.bench import (
    ALGORITHMS,
    YEE_SCENE_PARTS,
    bench_models,
    compare_algorithms,
    random_start,
    yee_bench_scene,
)
from diamondlab.engine.measure.perfmodel import cuda_device_numbers

PARTS = YEE_SCENE_PARTS


def _calm_share(sim):
    """The share of a CUDA register-tile physics sweep's torres that ran its calm path (None elsewhere)."""
    tables = getattr(sim.backend, "_calm", {}).get(sim.nt)
    if tables is None:
        return None
    calm = tables[0].copy_to_host()
    return round(float(calm.mean()), 3)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--shape", type=int, nargs="+", default=[128])
    ap.add_argument("--grids", nargs="+", default=None, help="several grids, NXxNYxNZ (instead of --shape)")
    ap.add_argument("--algorithms", nargs="+", choices=ALGORITHMS, default=["stepwise", "diamondtorre"])
    ap.add_argument("--orders", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--dts", type=int, nargs="+", default=[None])
    ap.add_argument("--nt", type=int, nargs="+", default=[None])
    ap.add_argument("--steps", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--physics", action="store_true")
    ap.add_argument("--parts", nargs="+", choices=PARTS, help="only these parts of the physics scene")
    ap.add_argument("--chunk", type=int, nargs="+", default=[None], help="CUDA sweep: tiers between waits")
    ap.add_argument("--band", type=int, nargs="+", default=[None],
                    help="CUDA sweep: diagonal bands (0: stage by stage)")
    ap.add_argument("--calm", nargs="+", choices=("on", "off"), default=["on"],
                    help="CUDA register-tile physics sweep: calm torres with the plain tile's code")
    ap.add_argument("--tile", nargs="+", choices=("registers", "caches"), default=["registers"],
                    help="CUDA sweep: the tile in registers (physics scenes too), or read through the caches")
    ap.add_argument("--stepwise-groups", nargs="?", const="on", choices=("on", "off", "auto"), default=None,
                    help="CUDA stepwise: a kernel per group of columns, the points after them, or one "
                         "kernel, or the engine's choice by the cells a launch "
                         "(YeeCUDABackend.stepwise_groups; default: auto)")
    ap.add_argument("--split-z-layers", choices=("on", "off"), default=None,
                    help="CUDA stepwise by column groups: the columns split at the CPML's z layers "
                         "(YeeCUDABackend.split_z_layers; default: on)")
    ap.add_argument("--lean-stepwise", choices=("on", "off"), default=None,
                    help="CUDA stepwise on plain scenes: the kernel with 32-bit offsets or the general one "
                         "(YeeCUDABackend.lean_stepwise; default: the engine's choice by order)")
    ap.add_argument("--block-order", choices=("xy", "yx"), default=None,
                    help="CUDA stepwise: the launch's block order (YeeCUDABackend.block_order; default: the "
                         "engine's choice by scene)")
    ap.add_argument("--prefetch", type=int, choices=(0, 1, 2), default=None,
                    help="CUDA register-tile sweep: L2 prefetch, tiers ahead (YeeCUDABackend.prefetch; "
                         "default: the engine's per order)")
    ap.add_argument("--specialize", choices=("on", "off"), default=None,
                    help="CUDA register-tile sweep: compiled for the grid, its sizes constants "
                         "(YeeCUDABackend.specialize_shape; default: off)")
    args = ap.parse_args()
    groups = {"on": True, "off": False, "auto": None}
    stepwise = {"block_order": args.block_order,
                "lean_stepwise": None if args.lean_stepwise is None else args.lean_stepwise == "on",
                "prefetch": args.prefetch,
                "specialize_shape": None if args.specialize is None else args.specialize == "on",
                "split_z_layers": None if args.split_z_layers is None else args.split_z_layers == "on"}
    if any(v is not None for v in stepwise.values()) or args.stepwise_groups:  # the CUDA options asked for
        from diamondlab.engine.backends.yee_cuda import YeeCUDABackend

        for name, value in stepwise.items():
            if value is not None:
                setattr(YeeCUDABackend, name, value)
        if args.stepwise_groups:
            YeeCUDABackend.stepwise_groups = groups[args.stepwise_groups]
    shapes = ([tuple(int(n) for n in g.split("x")) for g in args.grids] if args.grids else
              [tuple(args.shape * 3 if len(args.shape) == 1 else args.shape)])
    parts = tuple(args.parts or (PARTS if args.physics else ()))
    device = cuda_device_numbers() if args.backend == "cuda" else None  # the CPU has no Yee model
    for shape in shapes:
        try:
            _bench(args, shape, parts, device)
        except Exception as err:  # noqa: BLE001 - one grid that cannot run: say so, measure the others
            if len(shapes) == 1:
                raise
            print(f"{shape}: {type(err).__name__}: {err}", file=sys.stderr, flush=True)


def _configure(sims: list, chunk, band, tile, calm, cuda: bool):
    """The hook of :func:`compare_algorithms`: a DiamondTorre sweep's variant set on its backend (every
    simulation kept in ``sims`` for the rows)."""

    def configure(sim):
        sims.append(sim)
        if sim.algorithm != "diamondtorre":
            return
        for name, value in (("chunk", chunk), ("band", band), ("tile_in_registers", tile == "registers"),
                            ("registers_for_physics", tile == "registers"),
                            ("calm_torres", calm == "on" if cuda else None)):
            if value is not None:
                setattr(sim.backend, name, value or None if name == "band" else value)

    return configure


def _launches(sim) -> int:
    """The CUDA stepwise half step's launches: its kernels and the points' after them."""
    return len(sim.backend._stepwise) + (sim.backend._point_lists is not None)


def _bench(args, shape, parts, device) -> None:
    """One grid's rows: per order, stepwise and each DiamondTorre configuration asked for."""
    kw = yee_bench_scene(shape, parts) if parts else {}
    initial = random_start(shape, "maxwell")  # made once: every configuration starts from these fields
    cuda = args.backend == "cuda"
    for order in args.orders:
        configs = [(d, n, c, b, t, calm) for d in args.dts for n in args.nt for c in args.chunk
                   for b in args.band for t in args.tile
                   for calm in (args.calm if t == "registers" else ["on"])]
        if "diamondtorre" not in args.algorithms:
            configs = configs[:1]
        for i, (size, nt, chunk, band, tile, calm) in enumerate(configs):
            # stepwise once an order, alternated with the first DiamondTorre configuration
            algorithms = tuple(a for a in args.algorithms if a == "diamondtorre" or i == 0)
            sims = []
            (row,) = compare_algorithms(shape, [order], args.backend, size=size, nt=nt, steps=args.steps,
                                        repeats=args.repeats, equation="maxwell", algorithms=algorithms,
                                        configure=_configure(sims, chunk, band, tile, calm, cuda),
                                        initial=initial, **kw)
            models = bench_models(row, shape, device)
            for sim in sims:
                alg = sim.algorithm
                lo, hi = row["rate_range"][alg]
                model = models[alg]
                out = dict(backend=args.backend, order=order, algorithm=alg, shape=shape, size=sim.size,
                           nt=sim.nt, chunk=getattr(sim.backend, "chunk", None),
                           band=getattr(sim.backend, "band", None),
                           prefetch=(getattr(sim.backend, "tiers_prefetched", None)
                                     if alg == "diamondtorre" else None),
                           specialized=(getattr(sim.backend, "specialize_shape", None)
                                        if alg == "diamondtorre" and cuda else None),
                           tile=tile if alg == "diamondtorre" and cuda else None, physics=",".join(parts),
                           stepwise_groups=getattr(sim.backend, "stepwise_groups", None),
                           stepwise_launches=_launches(sim) if alg == "stepwise" and cuda else None,
                           split_z_layers=getattr(sim.backend, "split_z_layers", None),
                           median=row[alg], min=lo, max=hi, spread=row["spreads"][alg], flag=row["flag"],
                           bit_equal=row["bit_equal"], calm=_calm_share(sim),
                           model_bytes=round(model.bytes_per_update, 1),
                           model=model.gcells if device is not None else None)
                print(json.dumps(out), flush=True)
            del sims


if __name__ == "__main__":
    main()
