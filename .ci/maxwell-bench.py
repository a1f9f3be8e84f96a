"""Maxwell: DiamondTorre against stepwise, one process, same grid, medians (BENCHMARKS.md).

    python .ci/maxwell-bench.py --backend cpu --shape 128 --orders 2 4 --steps 32 --repeats 5
    python .ci/maxwell-bench.py --backend cuda --shape 512 512 352 --dts 1 2 --nt 8 16
    python .ci/maxwell-bench.py --backend cuda --grids 512x32x256 512x64x256 --orders 2 --dts 2 --nt 4 \
        --algorithms diamondtorre

Yee cell updates per second (a cell's six components advanced one step), one JSON line a row. With
``--physics``: a Drude sphere, a 12-cell CPML, a TFSF plane wave, a dipole and a probe.
"""

import argparse
import json
import statistics
import sys
import time

from diamondlab import Simulation
from diamondlab.engine.measure.perfmodel import cpu_device_numbers, cuda_device_numbers, predict_yee
from diamondlab.maxwell import Dipole, Drude, GaussianPulse, PlaneWave, Probe, Sphere

PARTS = ("drude", "pml", "tfsf", "dipole")


def _scene(shape, parts=PARTS) -> dict:
    """The issue's physics: a Drude sphere, a 12-cell CPML, a TFSF plane wave around it, a dipole and a probe
    (``parts``: a subset, to see what each costs)."""
    c = tuple(n // 2 for n in shape)
    box = ((16, 16, 16), tuple(n - 17 for n in shape))
    scene = dict(materials=[], sources=[], pml=12 if "pml" in parts else 0)
    if "drude" in parts:
        scene["materials"] = [Sphere(c, min(shape) // 6, Drude(1.0, 1.0, 0.05))]
    if "dipole" in parts:
        scene["sources"].append(Dipole((c[0] - min(shape) // 4, *c[1:]), "Ez", GaussianPulse(0.1, 0.05)))
        scene["probes"] = [Probe(c, "Ez")]
    if "tfsf" in parts:
        scene["sources"].append(PlaneWave("+x", "z", GaussianPulse(0.08, 0.04), box))
    return scene


def _rate(sim, steps: int, repeats: int) -> dict:
    sim.run(sim.nt)  # compile and warm up
    rates = []
    for _ in range(repeats):
        sim.backend.synchronize()
        t0 = time.perf_counter()
        sim.run(steps)
        sim.backend.synchronize()
        rates.append(sim.cells * steps / (time.perf_counter() - t0) / 1e9)
    return dict(median=statistics.median(rates), min=min(rates), max=max(rates))


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
    ap.add_argument("--algorithms", nargs="+", choices=("stepwise", "diamondtorre"),
                    default=["stepwise", "diamondtorre"])
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
    args = ap.parse_args()
    shapes = ([tuple(int(n) for n in g.split("x")) for g in args.grids] if args.grids else
              [tuple(args.shape * 3 if len(args.shape) == 1 else args.shape)])
    parts = tuple(args.parts or (PARTS if args.physics else ()))
    device = cuda_device_numbers() if args.backend == "cuda" else cpu_device_numbers()
    for shape in shapes:
        try:
            _bench(args, shape, parts, device)
        except Exception as err:  # noqa: BLE001 - one grid that cannot run: say so, measure the others
            if len(shapes) == 1:
                raise
            print(f"{shape}: {type(err).__name__}: {err}", file=sys.stderr, flush=True)


def _bench(args, shape, parts, device) -> None:
    """One grid's rows: per order, stepwise and each DiamondTorre configuration asked for."""
    kw = _scene(shape, parts) if parts else {}
    for order in args.orders:
        runs = [("stepwise", None, None, None, None, "registers", "on")] + [
            ("diamondtorre", d, n, c, b, t, calm) for d in args.dts for n in args.nt for c in args.chunk
            for b in args.band for t in args.tile for calm in (args.calm if t == "registers" else ["on"])]
        runs = [r for r in runs if r[0] in args.algorithms]
        for algorithm, size, nt, chunk, band, tile, calm in runs:
            sim = Simulation(shape, order, equation="maxwell", algorithm=algorithm, backend=args.backend,
                             size=size, nt=nt, **kw)
            for name, value in (("chunk", chunk), ("band", band), ("tile_in_registers", tile == "registers"),
                                ("registers_for_physics", tile == "registers"),
                                ("calm_torres", calm == "on" if args.backend == "cuda" else None)):
                if value is not None:
                    setattr(sim.backend, name, value or None if name == "band" else value)
            model = predict_yee(algorithm, order, sim.size, sim.nt, device, drude="drude" in parts)
            row = dict(backend=args.backend, order=order, algorithm=algorithm, shape=shape, size=sim.size,
                       nt=sim.nt,
                       chunk=getattr(sim.backend, "chunk", None), band=getattr(sim.backend, "band", None),
                       tile=tile if algorithm == "diamondtorre" and args.backend == "cuda" else None,
                       physics=",".join(parts), **_rate(sim, args.steps, args.repeats),
                       calm=_calm_share(sim),
                       model_bytes=round(model.bytes_per_update, 1), model=model.rate / 1e9)
            print(json.dumps(row), flush=True)
            del sim


if __name__ == "__main__":
    main()
