"""What a velocity model costs DiamondTorre and stepwise on one grid, per (NO, DTS) and kernel variant.

    python .ci/model-cost.py SHAPE [--configs 2 4:2 8:1] [--media constant sources layered anomaly ...]
        [--sweeps 8] [--repeats 3] [--compile-only] [--dt-options JSON] [--json FILE]

Configs are ``NO`` (the engine's default tile for the medium) or ``NO:DTS``.  Media: ``constant`` (no
physics), ``sources`` (a source at the centre, a receiver, the 16-cell sponge), and with a 16-cell
sponge: ``sponge`` (constant velocity), ``layered`` (:func:`~diamondlab.media.layered_model`: K per
depth, one register a GPU thread), ``anomaly`` (:func:`~diamondlab.media.anomaly_model`: K per cell),
with ``+kreg`` / ``+loads`` forcing ``kappa_in_registers`` on / off (the tile's K shifted in registers,
only entering cells loaded / every cell's K loaded every tier).
Each line: DiamondTorre and stepwise with the same medium, alternated in one process
(``Simulation.run``, medians), their ratio, and the sweep kernel's registers and local bytes.
``--compile-only`` builds the kernels (fills the disk cache; run one process per config in parallel
before timing one config after the other).  Used for BENCHMARKS.md ("A velocity model at full speed").
"""

import argparse
import json
import statistics
import warnings

import numpy as np

from diamondlab import Simulation
from diamondlab.engine.run.simulation import SourceTimingWarning
from diamondlab.media import anomaly_model, layered_model
from diamondlab.sources import Receiver, Source

warnings.simplefilter("ignore", SourceTimingWarning)

parser = argparse.ArgumentParser()
parser.add_argument("shape")
parser.add_argument("--configs", nargs="+", default=["2", "4", "6", "8"], help="NO or NO:DTS")
parser.add_argument("--media", nargs="+", default=["constant", "sponge", "sources", "layered", "anomaly"])
parser.add_argument("--sweeps", type=int, default=8, help="sweeps of Nt steps per timed run")
parser.add_argument("--repeats", type=int, default=3)
parser.add_argument("--compile-only", action="store_true")
parser.add_argument("--dt-options", type=json.loads, default={},
                    help='more DiamondTorre backend_options, JSON (e.g. \'{"max_registers": 168}\')')
parser.add_argument("--json", default=None)
args = parser.parse_args()
parts = [int(p) for p in args.shape.split("x")]
shape = tuple(parts * 3) if len(parts) == 1 else tuple(parts)
sponge = min(16, (min(shape) - 1) // 2)
centre = tuple(n // 2 for n in shape)
physics = {
    "constant": lambda: {"sponge": 0},
    "sponge": lambda: {"sponge": sponge},
    "sources": lambda: {"sponge": sponge, "sources": [Source(centre, frequency=1 / 20, units="grid")],
                        "receivers": [Receiver(tuple(n // 4 for n in shape), units="grid")]},
    "layered": lambda: {"sponge": sponge, "velocity": layered_model(shape, (1.0, 1.3, 1.6))},
    "anomaly": lambda: {"sponge": sponge, "velocity": anomaly_model(shape, 1.6, 1.0)},
}
initial = "zero"
if not args.compile_only:
    rng = np.random.default_rng(0)
    initial = tuple(rng.standard_normal(shape, dtype=np.float32) * 1e-3 for _ in range(2))
rows = []
for config in args.configs:
    order, size = (int(p) for p in (config + ":0").split(":")[:2])
    for medium in args.media:
        name, _, option = medium.partition("+")
        options = dict(args.dt_options)
        if option:
            options["kappa_in_registers"] = option == "kreg"
        run = physics[name]()
        sims = {alg: Simulation(shape, order, size=size or None, backend="cuda", algorithm=alg,
                                initial=initial, **run,
                                backend_options=(options or None) if alg == "diamondtorre" else None)
                for alg in ("diamondtorre", "stepwise")}
        size_used = sims["diamondtorre"].size
        dt_backend = sims["diamondtorre"].backend
        if args.compile_only:
            for sim in sims.values():
                sim.backend.compile()
            print(f"compiled NO={order} DTS={size_used} {medium}: {dt_backend.resources()}", flush=True)
            continue
        nt = dt_backend.nt
        steps = args.sweeps * nt
        for sim in sims.values():
            sim.run(nt)  # compile (or load), warm up
        seconds = {alg: [] for alg in sims}
        for _ in range(args.repeats):
            for alg, sim in sims.items():
                seconds[alg].append(sim.run(steps).seconds)
        rate = {alg: steps * np.prod(shape) / statistics.median(s) / 1e9 for alg, s in seconds.items()}
        same = all(np.array_equal(a, b) for a, b in zip(*(s.fields for s in sims.values()), strict=True))
        res = dt_backend.resources() or {}
        row = {"shape": list(shape), "order": order, "size": size_used, "nt": nt, "medium": medium,
               "dt_options": args.dt_options,
               "diamondtorre": rate["diamondtorre"], "stepwise": rate["stepwise"],
               "ratio": rate["diamondtorre"] / rate["stepwise"], "equal": same,
               "options": dt_backend.options, "resources": res}
        rows.append(row)
        print(f"{args.shape} NO={order} DTS={size_used} Nt={nt} {medium:>13}: DT {row['diamondtorre']:7.1f}  "
              f"SW {row['stepwise']:7.1f}  ratio {row['ratio']:5.2f}  fields equal {same}  "
              f"regs {res.get('registers')} local {res.get('local_bytes')}  "
              f"{'pipelined' if dt_backend.pipelined else 'whole-torre'} {args.dt_options or ''}", flush=True)
        del sims, dt_backend
if args.json:
    with open(args.json, "w") as f:
        json.dump(rows, f, indent=1)
