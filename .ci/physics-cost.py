"""Where the time of a run with physics goes: one term at a time, DiamondTorre and stepwise, on one grid.

    python .ci/physics-cost.py [cuda|cpu] [SHAPE ...] [--orders 2 8] [--sweeps 8] [--repeats 3]
        [--cases constant sponge ...] [--size DTS] [--dt-options JSON] [--against JSON]
        [--calm-only | --no-calm | --bare-boundary]     (probes of the CUDA sweep's torre functions)
        [--fma | --fma-medium]                          (probes of the cell update's form, both algorithms)

For each grid and order it times (``Simulation.run``, medians, both algorithms
alternated in one process) the constant medium, the sponge alone, one source,
one receiver, a source and a receiver (no sponge), and all three; the sponge of
the z faces alone (``sponge-z``: every torre calm, each cell damped by its thread's
z factors) and of the x and y faces alone (``sponge-xy``: the torres that touch those
layers damped, the others bare of damping but still running the medium's update),
which split the sponge's cost between the medium's update and the damped torres; then, for the
DiamondTorre backend with all three, the sweep kernel alone (one
``backend.sweep`` per sweep, without the run loop's books).  Used for
BENCHMARKS.md ("Physics at full speed", "where the acoustic sponge's cost is
not").  The probes change the generated CUDA sweep (see their help): they time
kernels that compute wrong values where their condition does not hold, so only
their rates and resources mean anything.  Every row says whether DiamondTorre
equalled stepwise bit for bit after the timed runs (``equal``).
"""

import argparse
import json
import re
import statistics
import time
import warnings

import numpy as np

from diamondlab import Simulation
from diamondlab.engine.run.simulation import SourceTimingWarning
from diamondlab.media import Medium
from diamondlab.sources import Receiver, Source

parser = argparse.ArgumentParser()
parser.add_argument("backend", nargs="?", default="cuda")
parser.add_argument("shapes", nargs="*", default=["256"])
parser.add_argument("--orders", type=int, nargs="+", default=[2, 8])
parser.add_argument("--sweeps", type=int, default=8, help="sweeps of Nt steps per timed run")
parser.add_argument("--repeats", type=int, default=3)
parser.add_argument("--cases", nargs="+", default=None)
parser.add_argument("--size", type=int, default=None, help="DiamondTorre's DTS (default: the engine's)")
parser.add_argument("--calm-only", action="store_true",
                    help="probe: the sweep's interior torres all run the calm torre (its damped interior "
                         "torre left out of the kernel); valid only where every torre is calm (sponge-z), "
                         "so it tells the damped torre's share of the kernel's registers from the calm "
                         "update's own cost")
parser.add_argument("--no-calm", action="store_true",
                    help="probe: no calm torre in the sweep (every interior torre damped), as the constant "
                         "medium's kernel has two torre functions")
parser.add_argument("--bare-boundary", action="store_true",
                    help="probe: the sweep's boundary torres run the constant medium's boundary torre (no "
                         "K, no damping: wrong values, the same loads, stores and guards), so that the "
                         "boundary torre's damped update is told from the calm torre's")
parser.add_argument("--fma", action="store_true",
                    help="probe: the constant medium's cell update as u+ = (c0 + 2) u - u- + sum c_d S_d "
                         "(one fused multiply-add a term, three instructions a cell fewer) in both "
                         "algorithms' kernels: values differ from the engine's by float32 rounding, "
                         "DT == SW still holds")
parser.add_argument("--fma-medium", action="store_true",
                    help="probe: --fma, and the medium's update as "
                         "u+ = ((K c0 + 2) u - a u- + sum K c_d S_d) r")
parser.add_argument("--dt-options", type=json.loads, default=None,
                    help='DiamondTorre backend_options, JSON (e.g. \'{"max_registers": 168}\')')
parser.add_argument("--against", type=json.loads, default=None,
                    help="a second DiamondTorre run with these backend_options (JSON) timed in the same "
                         "process, alternated with the first and stepwise: its rate, its ratio to the first "
                         "and whether it equalled stepwise")
args = parser.parse_args()
warnings.simplefilter("ignore", SourceTimingWarning)
if args.fma or args.fma_medium:
    import diamondlab.kernels.cuda as cuda_kernels_module

    generate_plain = cuda_kernels_module.generate_source

    def fma_source(*a, **k):
        """The generated kernels with the constant medium's update in fused form (probe)."""
        source = generate_plain(*a, **k)
        start = source.index("def cell_update(")
        end = source.index("def cell_update_medium(")
        body = source[start:end]
        fused = body.replace("    lap = c0 * f0\n", "    lap = (c0 + np.float32(2.0)) * f0 - g\n", 1)
        fused = fused.replace("    return ((f0 + f0) - g) + lap\n", "    return lap\n", 1)
        assert fused.count("lap = (c0 +") == 1 and "return lap" in fused, body
        source = source[:start] + fused + source[end:]
        if args.fma_medium:
            start = source.index("def cell_update_medium(")
            end = source.index("\n\n\n", start)
            body = source[start:end]
            fused = body.replace("    lap = c0 * f0\n",
                                 "    lap = (kap * c0 + np.float32(2.0)) * f0 - a * g\n", 1)
            fused = re.sub(r"lap = lap \+ (c\d) \*", r"lap = lap + (kap * \1) *", fused)
            fused = fused.replace("    return (((f0 + f0) - a * g) + kap * lap) * r", "    return lap * r", 1)
            assert "return lap * r" in fused and "(kap * c1)" in fused, body
            source = source[:start] + fused + source[end:]
        return source

    cuda_kernels_module.generate_source = fma_source
if args.calm_only or args.no_calm or args.bare_boundary:
    import diamondlab.kernels.cuda as cuda_kernels_module

    generate = cuda_kernels_module.generate_source

    def probed_source(*a, **k):
        """The generated kernels with the calm torre in place of the damped interior one, or none (probes)."""
        source = generate(*a, **k)
        if "def torre_calm" not in source:
            return source
        if args.no_calm:
            return source.replace("    if calm:\n        torre_calm", "    if False:\n        torre_calm")
        if args.bare_boundary:
            return bare_boundary(source, generate(*a, **{**k, "medium": None}))
        head, sep, tail = source.partition("    elif interior:\n        torre_interior")
        assert sep, "the sweep's call of the damped interior torre was not found"
        return head + "    elif interior:\n        torre_calm" + tail

    def bare_boundary(source, constant):
        """``source`` with its boundary torres run by the constant medium's boundary torre."""
        head = "@cuda.jit(device=True)\ndef torre_boundary("
        start = constant.index(head)
        end = constant.index("\n@cuda.jit", start + len(head))
        bare = constant[start:end].replace("def torre_boundary(", "def torre_boundary_bare(", 1)
        call = "        torre_boundary("
        line_start = source.index(call, source.index("def diamondtorre_sweep"))
        line_end = source.index("\n", line_start)
        constant_call = constant[constant.index(call, constant.index("def diamondtorre_sweep")):]
        constant_call = constant_call[:constant_call.index("\n")]
        kernel = source.rindex("@cuda.jit(", 0, source.index("def diamondtorre_sweep"))
        swapped = source[:line_start] + constant_call.replace("torre_boundary(", "torre_boundary_bare(") + \
            source[line_end:]
        return swapped[:kernel] + bare + "\n\n" + swapped[kernel:]

    cuda_kernels_module.generate_source = probed_source


def shape_of(text):
    parts = [int(p) for p in text.split("x")]
    return tuple(parts * 3) if len(parts) == 1 else tuple(parts)


def cases(shape):
    centre = tuple(n // 2 for n in shape)
    src = [Source(centre, frequency=1 / 20, units="grid")]
    rec = [Receiver(tuple(n // 4 for n in shape), units="grid")]
    return {  # sources alone would bring the default sponge: sponge=0 keeps the terms apart
        "constant": {},
        "sponge": {"sponge": 16},
        "source": {"sources": src, "sponge": 0},
        "receiver": {"receivers": rec},
        "src+rec": {"sources": src, "receivers": rec, "sponge": 0},
        "src+rec+sponge": {"sources": src, "receivers": rec, "sponge": 16},
        "sponge-z": {"sponge": 16},  # its x and y profiles zeroed below
        "sponge-xy": {"sponge": 16},  # its z profile zeroed below
    }


#: The axes whose sponge profile a case keeps (the others' are zeroed after the Simulation is built).
KEPT_AXES = {"sponge-z": (2,), "sponge-xy": (0, 1)}


def keep_sponge_axes(sim, axes) -> None:
    """Give ``sim``'s backend the run's sponge on ``axes`` only (the other profiles zero: no damping)."""
    medium = sim.plan.physics.medium(sim.params.dt)
    profiles = tuple(p if a in axes else np.zeros_like(p) for a, p in enumerate(medium.damping))
    sim.backend.set_physics(Medium(medium.kappa, profiles, medium.shape))


for text in args.shapes:
    shape = shape_of(text)
    rng = np.random.default_rng(0)
    initial = tuple(rng.standard_normal(shape, dtype=np.float32) * 1e-3 for _ in range(2))
    for order in args.orders:
        base = None
        for name, physics in cases(shape).items():
            if args.cases and name not in args.cases:
                continue
            runs = {"diamondtorre": ("diamondtorre", args.dt_options), "stepwise": ("stepwise", None)}
            if args.against is not None:
                runs["against"] = ("diamondtorre", args.against)
            sims = {key: Simulation(shape, order, backend=args.backend, algorithm=alg, initial=initial,
                                    backend_options=options, **physics,
                                    size=args.size if alg == "diamondtorre" else None)
                    for key, (alg, options) in runs.items()}
            if name in KEPT_AXES:
                for sim in sims.values():
                    keep_sponge_axes(sim, KEPT_AXES[name])
            if args.calm_only or args.no_calm or args.bare_boundary:  # a probe's wrong values may overflow
                for sim in sims.values():
                    sim._check_planes = lambda: None
            steps = args.sweeps * sims["diamondtorre"].nt
            for sim in sims.values():
                sim.run(sims["diamondtorre"].nt)  # compile, warm up
            seconds = {alg: [] for alg in sims}
            for _ in range(args.repeats):
                for alg, sim in sims.items():
                    seconds[alg].append(sim.run(steps).seconds)
            rate = {alg: steps * np.prod(shape) / statistics.median(s) / 1e9 for alg, s in seconds.items()}
            equal = np.array_equal(sims["diamondtorre"].field, sims["stepwise"].field)  # the same steps run
            be = sims["diamondtorre"].backend
            kernel = []
            for _ in range(args.repeats):
                be.synchronize()
                t0 = time.perf_counter()
                for _ in range(args.sweeps):
                    be.sweep(be.nt)
                be.synchronize()
                kernel.append(time.perf_counter() - t0)
            krate = steps * np.prod(shape) / statistics.median(kernel) / 1e9
            resources = be.resources() if hasattr(be, "resources") else ""
            base = base or rate
            dt, sw = rate["diamondtorre"], rate["stepwise"]
            print(f"{text} NO={order} DTS={be.size} Nt={be.nt} {name:>15}: "
                  f"DT {dt:7.1f} ({dt / base['diamondtorre'] - 1:+.0%})"
                  f"  SW {sw:7.1f} ({sw / base['stepwise'] - 1:+.0%})  ratio {dt / sw:5.2f}"
                  f"  equal {equal} | DT sweeps alone {krate:7.1f}  {be.options} {resources}", flush=True)
            if "against" in sims:
                b = sims["against"].backend
                print(f"{text} NO={order} DTS={b.size} Nt={b.nt} {name:>15}: against {rate['against']:7.1f}"
                      f" ({rate['against'] / dt - 1:+.1%} of DT)  equal "
                      f"{np.array_equal(sims['against'].field, sims['stepwise'].field)}"
                      f"  {b.options} {b.resources() if hasattr(b, 'resources') else ''}", flush=True)
            del sims, be
