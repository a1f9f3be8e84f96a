"""Command line: ``diamondlab run`` and ``diamondlab bench``.

``run`` advances one problem with a progress bar and prints its throughput;
``--save FILE.npz`` writes, atomically, the initial and final layers and the
parameters.  ``bench`` times DiamondTorre against stepwise time stepping on
one grid in one process (medians of ``--repeats`` runs) and prints a table.
"""

from __future__ import annotations

import argparse
import statistics
import sys

import numpy as np

from diamondlab.numerics import SUPPORTED_ORDERS

__all__ = ["main"]


def _shape(text: str) -> tuple[int, int, int]:
    parts = text.lower().replace(",", "x").split("x")
    try:
        shape = tuple(int(p) for p in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shape must look like 128x128x128; got {text!r}") from None
    if len(shape) == 1:
        shape = shape * 3
    if len(shape) != 3 or min(shape) < 1:
        raise argparse.ArgumentTypeError(f"--shape needs three positive sizes NXxNYxNZ; got {text!r}")
    return shape


def _int_or_auto(text: str):
    if text == "auto":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number or 'auto'; got {text!r}") from None


def _point(text: str) -> tuple[float, float, float]:
    try:
        point = tuple(float(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"a position must look like X,Y,Z; got {text!r}") from None
    if len(point) != 3:
        raise argparse.ArgumentTypeError(f"a position needs three numbers X,Y,Z; got {text!r}")
    return point


def _velocity(text: str, shape):
    try:
        return float(text)
    except ValueError:
        pass
    if text in ("layered", "anomaly"):
        from diamondlab.media import example_model

        return example_model(text, shape)
    try:
        return np.load(text)
    except (OSError, ValueError) as err:
        raise ValueError(
            f"--velocity must be a number, FILE.npy or 'layered'/'anomaly'; cannot read {text!r} ({err})"
        ) from None


def _backend_option(text: str) -> tuple[str, int]:
    key, sep, value = text.partition("=")
    if not sep or not key.isidentifier():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE (e.g. band=32); got {text!r}")
    low = value.strip().lower()
    if low in ("true", "false"):
        return key, low == "true"
    try:
        return key, int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{key}: expected an integer or true/false; got {value!r}") from None


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--shape", type=_shape, default=(128, 128, 128), help="grid NXxNYxNZ or N (default 128)")
    p.add_argument("--backend", default="auto", choices=["auto", "cpu", "cuda"])
    p.add_argument("--courant", type=float, default=None, help="c dt / h (default: half the stability limit)")
    p.add_argument(
        "--backend-option",
        type=_backend_option,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a speed option of the backend, e.g. pipelined=1 band=32 chunk=2 for cuda (repeatable)",
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="diamondlab",
        description="DiamondTorre (LRnLA) and stepwise solvers for the 3D acoustic wave equation.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run one problem and print its throughput")
    _common(run)
    run.add_argument(
        "--order", "--no", type=int, default=None, help="stencil order NO: 2, 4, 6 or 8 (default 2)"
    )
    run.add_argument(
        "--dts", type=_int_or_auto, default=None, help="diamond tile size DTS, or 'auto' (backend default)"
    )
    run.add_argument("--nt", type=_int_or_auto, default=None, help="torre height Nt, or 'auto'")
    run.add_argument("--steps", type=int, default=100)
    run.add_argument("--algorithm", default="diamondtorre", choices=["diamondtorre", "stepwise"])
    run.add_argument(
        "--initial",
        default="gaussian",
        help="'gaussian' (pulse at rest), 'zero', or FILE.npz from --save (continues its final layers)",
    )
    run.add_argument("--pulse-width", type=float, default=None, help="Gaussian width in cells")
    run.add_argument("--save", default=None, metavar="FILE.npz", help="write layers and parameters")
    run.add_argument("--spacing", type=float, default=None, help="grid spacing h (default 1)")
    run.add_argument(
        "--velocity",
        default=None,
        help="wave speed (default 1): a number, FILE.npy (per-cell model), or 'layered'/'anomaly'",
    )
    run.add_argument(
        "--source",
        type=_point,
        action="append",
        default=[],
        metavar="X,Y,Z",
        help="point source at physical position X,Y,Z (repeatable)",
    )
    run.add_argument("--wavelet", default="ricker", choices=["ricker", "gaussian_derivative"])
    run.add_argument("--frequency", type=float, default=None, help="peak frequency of the wavelet")
    run.add_argument(
        "--receiver", type=_point, action="append", default=[], metavar="X,Y,Z", help="receiver (repeatable)"
    )
    run.add_argument(
        "--sponge", type=int, default=None, help="absorbing layer width in cells; 0: zero boundary"
    )
    run.add_argument("--snapshot-every", type=int, default=None, metavar="K", help="snapshot every K steps")
    run.add_argument("--snapshot-format", default="npz", help="comma list of npz, vti (default npz)")
    run.add_argument("--out", default="diamondlab-out", metavar="DIR", help="snapshots and traces go here")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")

    bench = sub.add_parser("bench", help="DiamondTorre against stepwise on one grid, one process")
    _common(bench)
    bench.add_argument("--orders", type=int, nargs="+", default=list(SUPPORTED_ORDERS))
    bench.add_argument("--dts", type=int, default=None, help="DTS for every order (default per order)")
    bench.add_argument("--nt", type=int, default=None, help="Nt for every order (default per order)")
    bench.add_argument("--steps", type=int, default=None, help="steps per timed run (default 2 Nt)")
    bench.add_argument("--repeats", type=int, default=5, help="timed runs of each algorithm")
    bench.add_argument(
        "--velocity", default="1.0", help="a number, FILE.npy, 'layered' or 'anomaly' (cost of a model)"
    )
    bench.add_argument("--sponge", type=int, default=0, help="absorbing layer width (default 0)")
    bench.add_argument("--no-model", action="store_true", help="skip the bandwidth probe and the model")
    bench.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser


def _initial_from(args):
    """The initial layers, and the record of a saved run whose settings fill the options not given."""
    if args.initial in ("gaussian", "zero"):
        return args.initial, None
    if not args.initial.endswith(".npz"):
        raise ValueError(
            f"--initial must be 'gaussian', 'zero' or a FILE.npz from --save; got {args.initial!r}"
        )
    from diamondlab.engine.io import load_run

    try:
        record = load_run(args.initial)
    except (OSError, KeyError) as err:
        raise ValueError(f"--initial {args.initial}: not a run record written by --save ({err!r})") from None
    for option, key in (("order", "order"), ("courant", "courant"), ("spacing", "spacing")):
        if getattr(args, option) is None:
            setattr(args, option, record[key])
        elif getattr(args, option) != record[key]:
            print(f"note: {args.initial} was made with {option} {record[key]}; using {getattr(args, option)}")
    if args.velocity is None:
        args.velocity = "model" if "velocity_model" in record else str(record["velocity"])
    return (record["final_prev"], record["final_curr"]), record


def _run(args) -> int:
    from diamondlab.engine.io import save_run
    from diamondlab.engine.simulation import Simulation

    initial, record = _initial_from(args)
    args.order = 2 if args.order is None else args.order
    args.spacing = 1.0 if args.spacing is None else args.spacing
    shape = initial[0].shape if isinstance(initial, tuple) else args.shape
    if record is not None and args.velocity == "model":
        velocity = record["velocity_model"]
    else:
        velocity = _velocity("1.0" if args.velocity is None else args.velocity, shape)
    sources = []
    if args.source:
        from diamondlab.sources import Source

        vmin = float(np.min(velocity))
        frequency = args.frequency or vmin / (2.5 * 8 * args.spacing)  # 8 points per shortest wavelength
        sources = [Source(p, args.wavelet, frequency=frequency) for p in args.source]
    sim = Simulation(
        shape,
        args.order,
        size=args.dts,
        nt=args.nt,
        courant=args.courant,
        backend=args.backend,
        algorithm=args.algorithm,
        initial=initial,
        pulse_width=args.pulse_width,
        spacing=args.spacing,
        velocity=velocity,
        sources=sources,
        receivers=args.receiver,
        sponge=args.sponge,
        backend_options=dict(args.backend_option) or None,
    )
    if record is not None:
        sim.time_step = record["first_step"] + record["steps"]  # the clock goes on from the saved run
    print(sim)
    first = sim.fields if args.save else None
    first_step = sim.time_step
    snapshots = None
    if args.snapshot_every is not None:
        from diamondlab.engine.snapshots import Snapshots

        formats = tuple(f.strip() for f in args.snapshot_format.split(",") if f.strip())
        snapshots = Snapshots(args.snapshot_every, args.out, formats)
    try:
        stats = sim.run(args.steps, progress=not args.no_progress, snapshots=snapshots)
    except KeyboardInterrupt:
        stats = sim.last_run  # set by run() even when stopped while compiling
        print(f"interrupted at step {sim.time_step}: fields are consistent at that level")
    print(
        f"{stats.steps} steps of {sim.shape[0]}x{sim.shape[1]}x{sim.shape[2]} in {stats.seconds:.3f} s: "
        f"{stats.gcells_per_second:.3f} G cell updates/s ({sim.algorithm}, {sim.backend_name})"
    )
    if args.save:
        path = save_run(args.save, sim, first, first_step)
        print(f"saved {path}")
    if snapshots is not None:
        print(f"{len(snapshots.files)} snapshot files in {args.out}")
    if sim.receivers:
        from pathlib import Path

        from diamondlab.engine.io import write_atomically

        record = {
            "traces": sim.traces,
            "times": sim.trace_times,
            "receivers": np.array([r.position for r in sim.receivers]),
        }
        path = write_atomically(Path(args.out) / "traces.npz", lambda fh: np.savez(fh, **record))
        print(f"traces of {len(sim.receivers)} receivers ({len(sim.traces)} steps) in {path}")
    return 130 if stats.interrupted else 0


def bench_rows(
    shape, orders, backend="auto", courant=None, size=None, nt=None, steps=None, repeats=5,
    progress=False, **physics
):
    """Time both algorithms per order on one grid in this process; return a list of dict rows.

    Both start from the same random fields (cheap to make on any grid, and a
    strong test of the bit-for-bit check); ``physics`` (``velocity``,
    ``sponge``, ``sources``, ``receivers``, ``backend_options``) goes to both
    simulations; ``progress=True`` shows a tqdm bar over the timed runs.
    """
    from diamondlab.engine.simulation import Simulation

    rng = np.random.default_rng(0)
    initial = tuple(rng.standard_normal(tuple(shape), dtype=np.float32) for _ in range(2))
    from tqdm.auto import tqdm

    bar = tqdm(total=len(orders) * (repeats + 1), unit="run", desc="bench", disable=not progress)
    rows = []
    for order in orders:
        bar.set_postfix_str(f"NO={order}: setting up")
        sims = {
            alg: Simulation(
                shape, order, size=size, nt=nt, courant=courant, backend=backend, algorithm=alg,
                initial=initial, **physics,
            )
            for alg in ("diamondtorre", "stepwise")
        }
        dt_sim = sims["diamondtorre"]
        n = steps or 2 * dt_sim.nt
        rates = {alg: [] for alg in sims}
        bar.set_postfix_str(f"NO={order}: compiling, warming up")
        for sim in sims.values():
            sim.run(min(n, dt_sim.nt))  # compile and warm up
        bar.update()
        bar.set_postfix_str(f"NO={order}: timing")
        for _ in range(repeats):
            for alg, sim in sims.items():
                rates[alg].append(sim.run(n).gcells_per_second)
            bar.update()
        dt_rate = statistics.median(rates["diamondtorre"])
        sw_rate = statistics.median(rates["stepwise"])
        same = all(np.array_equal(a, b) for a, b in zip(sims["stepwise"].fields, dt_sim.fields, strict=True))
        launch = _launch_efficiency(dt_sim)
        rows.append(
            {
                "order": order,
                "dts": dt_sim.size,
                "nt": dt_sim.nt,
                "diamondtorre": dt_rate,
                "stepwise": sw_rate,
                "ratio": dt_rate / sw_rate if sw_rate else float("nan"),
                "bit_equal": same,
                "backend": dt_sim.backend_name,
                "options": dict(getattr(dt_sim.backend, "options", {})),
                "launch": launch,
            }
        )
    bar.close()
    return rows


def _launch_efficiency(sim):
    """``(slots, efficiency)`` of a GPU simulation's sweep (engine.launchmodel), else None."""
    if sim.backend_name != "cuda":
        return None
    from diamondlab.engine.launchmodel import cuda_backend_efficiency

    try:
        return cuda_backend_efficiency(sim.backend)
    except Exception:  # a report, not the benchmark: the CUDA simulator has no multiprocessors to count
        return None


def _bench(args) -> int:
    velocity = _velocity(args.velocity, args.shape)
    rows = bench_rows(
        args.shape, args.orders, args.backend, args.courant, args.dts, args.nt, args.steps, args.repeats,
        progress=not args.no_progress, velocity=velocity, sponge=args.sponge,
        backend_options=dict(args.backend_option) or None,
    )  # fmt: skip
    nx, ny, nz = args.shape
    medium = "constant velocity" if np.ndim(velocity) == 0 else f"velocity model {args.velocity}"
    device = _device_numbers(rows[0]["backend"], args.no_model)
    print(
        f"grid {nx}x{ny}x{nz}, backend {rows[0]['backend']}, {medium}, sponge {args.sponge}, "
        f"medians of {args.repeats} runs"
    )
    head = f"{'NO':>3} {'DTS':>4} {'Nt':>4} {'DiamondTorre':>13} {'stepwise':>9} {'ratio':>6} {'equal':>6}"
    if device is not None:
        head += f" {'model':>8} {'of model':>8} {'ceiling':>8}"
        print(f"device {device.name}: bandwidth {device.bandwidth / 1e9:.1f} GB/s measured now")
    print(head)
    for r in rows:
        line = (
            f"{r['order']:>3} {r['dts']:>4} {r['nt']:>4} {r['diamondtorre']:>13.4g} "
            f"{r['stepwise']:>9.4g} {r['ratio']:>6.2f} {str(r['bit_equal']):>6}"
        )
        if device is not None:
            from diamondlab.engine.perfmodel import predict

            model = r["model"] = predict("diamondtorre", r["order"], r["dts"], r["nt"], device).rate / 1e9
            line += f" {model:>8.4g} {r['diamondtorre'] / model:>8.0%} {device.bandwidth / 12e9:>8.4g}"
        print(line)
    print("(G cell updates per second)")
    for r in rows:
        if r["options"]:
            text = ", ".join(f"{k}={v}" for k, v in r["options"].items())
            if r["launch"] is not None:
                slots, eff = r["launch"]
                text += f"; {slots} resident blocks, launch efficiency {eff:.0%}"
                if "model" in r:
                    model = r["model"]
                    share = r["diamondtorre"] / (model * eff)
                    text += f" (model x launch {model * eff:.4g}: measured {share:.0%})"
            print(f"NO={r['order']} DiamondTorre sweep: {text}")
    if device is not None:
        print(
            "model: the roofline prediction of DiamondTorre from the row-of-torres locality "
            "(engine.perfmodel); ceiling: the stepwise bound, bandwidth / 12 bytes"
        )
    return 0


def _device_numbers(backend: str, skip: bool):
    if skip:
        return None
    from diamondlab.engine import perfmodel

    return perfmodel.cuda_device_numbers() if backend == "cuda" else perfmodel.cpu_device_numbers()


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "run":
            return _run(args)
        return _bench(args)
    except (ValueError, TypeError, RuntimeError, OSError) as err:
        print(f"diamondlab: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
