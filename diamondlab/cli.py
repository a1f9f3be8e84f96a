"""Command line: ``diamondlab run``, ``diamondlab bench`` and ``diamondlab cache``.

``run`` advances one problem with a progress bar and prints its throughput;
``--save FILE.npz`` writes, atomically, the initial and final layers and the
parameters.  ``run --equation maxwell`` runs Maxwell's equations on the Yee
grid (a scene from ``--scene FILE.json`` and flags; :mod:`diamondlab.maxwell.scene`)
through the same outputs: probes' traces, snapshots of one component, the
manifest, and ``--save`` (``E``, ``H``, the Drude current, the CPML's ``psi``
and the step: :func:`~diamondlab.engine.outputs.io.save_run`), which ``--initial FILE``
continues with the same scene, bit for bit.  ``bench`` times DiamondTorre against stepwise time stepping on
one grid in one process (medians of ``--repeats`` runs) and prints a table.
``cache info`` says where the kernel and tuning cache is and what it holds,
``cache clear`` empties it (:mod:`diamondlab.caches`).

Outputs of ``run`` (:class:`RunOutputs`): planned before any work (names
within the file system's limits, sizes against the free space and the
memory), ``--out`` locked for the run, written atomically and verified,
each attempted when another fails, and under ``--overwrite`` moved over the
earlier run's only once written.  Exit statuses: :data:`EXIT_STATUSES`.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import json
import math
import os
import re
import shutil
import sys
import traceback
import warnings
from pathlib import Path

import numpy as np

from diamondlab.numerics import SUPPORTED_ORDERS

__all__ = ["main"]

#: The grid when --shape is not given.
DEFAULT_SHAPE = (128, 128, 128)

#: Files a run writes in --out (what --overwrite replaces).
OUTPUT_PATTERNS = ("snapshot_*.npz", "snapshot_*.vti", "traces.npz", "monitors.npz", "manifest.json")

#: The lock file of a run in --out (removed at its end) and the folder where --overwrite stages the new run.
LOCK_NAME, STAGING_NAME = ".diamondlab.lock", ".diamondlab-staging"

EXIT_OK, EXIT_BLEW_UP, EXIT_BAD_INPUT = 0, 1, 2
#: An output could not be written after the work began (sysexits EX_IOERR); the others were.
EXIT_OUTPUT_FAILED = 74
#: An unexpected error: a bug in diamondlab (sysexits EX_SOFTWARE).
EXIT_INTERNAL = 70

#: What each exit status of ``diamondlab`` means (130/143: 128 + the signal).
EXIT_STATUSES = {
    EXIT_OK: "done, every output written",
    EXIT_BLEW_UP: "the field blew up (stopped, naming the step and where)",
    EXIT_BAD_INPUT: "bad input, or the run refused before any work (outputs that cannot be made or do not "
    "fit, not enough memory, --out in use by another run)",
    EXIT_INTERNAL: "internal error (a bug: please report the traceback printed)",
    EXIT_OUTPUT_FAILED: "an output failed after the work began; the others were written (the message names "
    "each)",
    130: "stopped by Ctrl-C (SIGINT), outputs written at the level reached",
    143: "stopped by SIGTERM, outputs written at the level reached",
}


class OutputError(OSError):
    """One or more outputs of a run failed; the message names each and what was written."""


def _shape(text: str) -> tuple[int, int, int]:
    parts = text.lower().replace(",", "x").split("x")
    try:
        shape = tuple(int(p) for p in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must look like 128x128x128 or 128; got {text!r}") from None
    if len(shape) == 1:
        shape = shape * 3
    if len(shape) != 3 or min(shape) < 1:
        raise argparse.ArgumentTypeError(f"needs three positive sizes NXxNYxNZ; got {text!r}")
    return shape


def _count(least: int):
    """An argparse type: a whole number >= ``least``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a whole number >= {least}; got {text!r}") from None
        if value < least:
            raise argparse.ArgumentTypeError(f"must be >= {least}; got {value}")
        return value

    return parse


def _positive(text: str) -> float:
    """An argparse type: a finite number > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number > 0; got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0; got {text!r}")
    return value


def _count_or_auto(text: str):
    return text if text == "auto" else _count(1)(text)


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
        from diamondlab.engine.measure.memory import CELL_BYTES, check_host_memory
        from diamondlab.media import example_model

        check_host_memory(shape, 2 * CELL_BYTES * int(np.prod(shape, dtype=np.int64)))  # the model, its copy
        return example_model(text, shape)
    try:
        return np.load(text, allow_pickle=False)
    except (OSError, ValueError) as err:
        raise ValueError(
            f"--velocity must be a number, FILE.npy or 'layered'/'anomaly'; cannot read {text!r} ({err})"
        ) from None


def _periodic_axes(text: str) -> str:
    """``--periodic``: axes as ``y,z`` (or ``yz``), checked by the plan."""
    return "".join(a.strip() for a in text.split(","))


def _cell_component(text: str) -> tuple[tuple[int, int, int], str | None]:
    """``X,Y,Z[,COMPONENT]``: a cell of the grid (whole numbers) and a field component (``Ez``) or None."""
    parts = [p.strip() for p in text.split(",")]
    component = parts.pop() if len(parts) == 4 else None
    try:
        cell = tuple(int(p) for p in parts)
    except ValueError:
        cell = ()
    if len(cell) != 3:
        raise argparse.ArgumentTypeError(f"must look like X,Y,Z or X,Y,Z,COMPONENT (cells: whole numbers, "
                                         f"e.g. 12,12,12,Ez); got {text!r}")
    return cell, component


def _backend_option(text: str) -> tuple[str, int | bool | str]:
    """``KEY=VALUE``: an integer, true/false, or a word (e.g. ``launch=per-stage``); the backend checks it."""
    key, sep, value = text.partition("=")
    if not sep or not key.isidentifier():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE (e.g. band=32); got {text!r}")
    low = value.strip().lower()
    if low in ("true", "false"):
        return key, low == "true"
    try:
        return key, int(value)
    except ValueError:
        if value.strip():
            return key, value.strip()
        raise argparse.ArgumentTypeError(f"{key}: expected a value; got none") from None


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--shape", type=_shape, default=None, metavar="NXxNYxNZ",
        help="grid size in cells, NXxNYxNZ or N for a cube (default 128)",
    )  # fmt: skip
    p.add_argument(
        "--backend", default="auto", choices=["auto", "cpu", "cuda"],
        help="where to run: cuda where a GPU is present with 'auto' (default auto)",
    )  # fmt: skip
    p.add_argument(
        "--courant", type=_positive, default=None,
        help="Courant number c_max dt / h (default: half the stability limit of the order)",
    )  # fmt: skip
    p.add_argument(
        "--backend-option",
        type=_backend_option,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a speed option of the backend, e.g. pipelined=1 band=32 chunk=2 or launch=per-stage for cuda "
        "(repeatable)",
    )


def _subdomain(p: argparse.ArgumentParser) -> None:
    """The options of runs beyond one device's memory or one process (``run`` and ``bench``)."""
    p.add_argument(
        "--halo", choices=("auto", "host", "peer"), default="auto", help="under mpiexec, how ranks exchange "
        "ghost rows: peer (GPU to GPU over CUDA IPC), host (through host memory), auto (peer where every "
        "neighbour's GPU is reachable; default)"
    )  # fmt: skip
    p.add_argument(
        "--window", type=_count(1), default=None, metavar="ROWS", help="calculation window: the device "
        "holds ROWS x rows at a time, the fields stay in (pinned) host memory and every sweep streams "
        "through it, copies overlapped with the torres on the GPU (for grids larger than the GPU's memory; "
        "take Nt >= 64; default: the whole grid)"
    )  # fmt: skip
    p.add_argument(
        "--window-dir", default=None, metavar="DIR", help="with --window: keep the fields in files in DIR "
        "(for grids larger than host memory; no file remains) instead of host memory"
    )  # fmt: skip


#: The options of ``run --equation maxwell`` alone (their defaults: the value when not given).
_MAXWELL_FLAGS = (
    ("--scene", {"default": None, "metavar": "FILE.json", "help": "materials (sphere, box, slab, cylinder of "
     "a dielectric, drude or pec medium), sources, probes, pml and the waveform, as JSON (or TOML): see "
     "diamondlab.maxwell.scene"}),
    ("--dipole", {"type": _cell_component, "action": "append", "default": [], "metavar": "X,Y,Z[,COMPONENT]",
     "help": "a point current on Ex, Ey or Ez (default Ez) at a cell, playing the Gaussian pulse of "
     "--frequency/--fwidth or the scene's waveform (repeatable; replaces the scene's sources)"}),
    ("--fwidth", {"type": _positive, "default": None, "help": "bandwidth of the Gaussian pulse in c / h "
     "(default --frequency / 2)"}),
    ("--probe", {"type": _cell_component, "action": "append", "default": [], "metavar": "X,Y,Z[,COMPONENT]",
     "help": "record a component (Ex .. Hz, default Ez) at a cell every step into OUT/traces.npz "
     "(repeatable; replaces the scene's probes)"}),
    ("--pml", {"type": _count(0), "default": None, "metavar": "W", "help": "CPML width in cells on every "
     "face of the axes that are not periodic (default: the scene's, else 0: perfect conductor walls)"}),
    ("--periodic", {"type": _periodic_axes, "default": None, "metavar": "AXES", "help": "periodic axes, y "
     "and/or z (e.g. y,z: a slab's cell; default: the scene's, else none)"}),
    ("--view", {"default": None, "choices": ["Ex", "Ey", "Ez", "Hx", "Hy", "Hz"], "help": "the component the "
     "snapshots show (default: the scene's, else Ez)"}),
)  # fmt: skip


def _parser() -> argparse.ArgumentParser:
    from diamondlab import __version__

    parser = argparse.ArgumentParser(
        prog="diamondlab",
        description="DiamondTorre (LRnLA) and stepwise solvers for the 3D acoustic wave equation and "
        "Maxwell's equations (run --equation maxwell).",
        epilog="Units: positions, --spacing, --velocity and --frequency in one consistent system "
        "(e.g. m, m/s and Hz); positions are physical (cell i at i * spacing).",
    )
    parser.add_argument("--version", action="version", version=f"diamondlab {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser(
        "run", help="run one problem and print its throughput",
        description="Run one problem with a progress bar and print its throughput. Exit status: 0 done, "
        "1 the field blew up, 2 bad input or refused before any work (a source whose wavelet peaks after "
        "the last step is one, unless --save keeps the run to be continued; outputs that cannot be made or "
        "do not fit; --out in use by another run), 74 an output failed (the others written), 70 internal "
        "error, 130/143 stopped by Ctrl-C/SIGTERM (the record and the outputs are written at the level "
        "reached).",
        epilog="A negative coordinate needs the '=' form: --source=-1,16,16 (or is joined for you). "
        "--equation maxwell takes --shape, --order 2|4, --steps, --backend, --algorithm, --dts, --nt, "
        "--courant, --spacing, --frequency and the Maxwell options; the acoustic ones are refused.",
    )  # fmt: skip
    run.add_argument(
        "--equation", default="acoustic", choices=["acoustic", "maxwell"],
        help="the equation: acoustic (the scalar wave equation, default) or maxwell (the Yee grid, in Meep's "
        "units: c = 1, lengths in cells)",
    )  # fmt: skip
    _common(run)
    run.add_argument(
        "--order", "--no", type=int, default=None,
        help="stencil order NO: 2, 4, 6 or 8 (Maxwell: 2 or 4; default 2)",
    )  # fmt: skip
    run.add_argument(
        "--dts", type=_count_or_auto, default=None,
        help="diamond tile size DTS >= 1, or 'auto' (measured once per grid, then cached; default: the "
        "backend's for the order)",
    )  # fmt: skip
    run.add_argument(
        "--nt", type=_count_or_auto, default=None, help="torre height Nt >= 1 in steps, or 'auto' (default: "
        "the backend's)"
    )  # fmt: skip
    run.add_argument("--steps", type=_count(0), default=None, help="time steps to run (default 100)")
    _subdomain(run)
    run.add_argument(
        "--algorithm", default="auto", choices=["auto", "diamondtorre", "stepwise"],
        help="default auto: diamondtorre unless the backend measured stepwise faster for this run "
        "(the GPU at NO=8 on a z column over 256 cells; it says why); both give the same fields bit for bit",
    )  # fmt: skip
    run.add_argument(
        "--initial",
        default=None,
        help="'gaussian' (a pulse at rest), 'zero' (rest), or FILE from --save (continues it with its "
        "medium, sources, receivers, sponge and clock). Default: zero with sources or receivers, "
        "else gaussian. Maxwell: 'zero' (default) or FILE from --save, continued with the same scene "
        "(given again: its shape, order, dt, CPML and materials must match) and its clock",
    )
    run.add_argument(
        "--pulse-width", type=_positive, default=None, help="width of the Gaussian pulse in cells "
        "(default max(2, min(shape) / 12))"
    )  # fmt: skip
    run.add_argument("--save", default=None, metavar="FILE.npz", help="write layers and parameters (atomic; "
                     "Maxwell: E, H, the Drude current, the CPML's psi and the step)")
    run.add_argument(
        "--spacing", type=_positive, default=None, help="grid spacing h in length units (default 1)"
    )
    run.add_argument(
        "--velocity",
        default=None,
        help="wave speed in length units per time unit (default 1): a number, FILE.npy (per-cell "
        "model), or 'layered' (1500/2000/2500) / 'anomaly' (2000 with a 1500 sphere)",
    )
    run.add_argument(
        "--source",
        type=_point,
        action="append",
        default=[],
        metavar="X,Y,Z",
        help="point source at physical position X,Y,Z (length units; repeatable)",
    )
    run.add_argument(
        "--wavelet", default="ricker", choices=["ricker", "gaussian_derivative"],
        help="source wavelet (default ricker), delayed by 1.5 / frequency",
    )  # fmt: skip
    run.add_argument(
        "--frequency", type=_positive, default=None,
        help="peak frequency of the wavelet in 1 / time unit (Hz with m and m/s; default: 8 grid points "
        "per shortest wavelength, c_min / (20 h))",
    )  # fmt: skip
    run.add_argument(
        "--receiver", type=_point, action="append", default=[], metavar="X,Y,Z",
        help="receiver at physical position X,Y,Z: a trace of every step goes to OUT/traces.npz "
        "(repeatable)",
    )  # fmt: skip
    run.add_argument(
        "--sponge", type=_count(0), default=None,
        help="absorbing layer width in cells; 0: zero (reflecting) boundary (default 16 with sources, "
        "else 0)",
    )  # fmt: skip
    run.add_argument(
        "--snapshot-every", type=_count(1), default=None, metavar="K",
        help="write the field every K steps to OUT (default: no snapshots)",
    )  # fmt: skip
    run.add_argument(
        "--snapshot-format", default="npz", help="comma list of npz, vti (vti needs pyvista; default npz)"
    )
    run.add_argument(
        "--out", default="diamondlab-out", metavar="DIR",
        help="folder for snapshots, traces and manifest.json (default diamondlab-out)",
    )  # fmt: skip
    run.add_argument(
        "--overwrite", action="store_true", help="replace the outputs of an earlier run found in --out (once "
        "this run has written its own)"
    )
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    maxwell = run.add_argument_group(
        "Maxwell's equations (--equation maxwell)",
        "positions in cells (whole numbers), frequencies in c / h; a flag replaces the --scene file's value",
    )  # fmt: skip
    for flag, options in _MAXWELL_FLAGS:
        maxwell.add_argument(flag, **options)

    bench = sub.add_parser(
        "bench", help="DiamondTorre against stepwise on one grid, one process",
        description="DiamondTorre against stepwise time stepping on one grid in one process, measured "
        "alternately (medians, spreads, the machine's load), with the model's prediction: the acoustic "
        "equation (G cell updates/s) or, with --equation maxwell, the Yee scheme (G Yee cell updates/s).",
        epilog="--equation maxwell takes --shape/--shapes, --orders 2 4, --backend, --courant, --dts, --nt, "
        "--steps, --repeats, --medium vacuum|physics, the window and MPI options, --json, --no-model; the "
        "acoustic options (--velocity, --sponge, --backend-option, --matrix) are refused.",
    )  # fmt: skip
    bench.add_argument(
        "--equation", default="acoustic", choices=list(BENCH_MEDIA),
        help="the equation: acoustic (default) or maxwell (the Yee scheme, orders 2 and 4)",
    )  # fmt: skip
    _common(bench)
    bench.add_argument(
        "--orders", type=int, nargs="+", default=None, choices=SUPPORTED_ORDERS,
        help="stencil orders (default 2 4 6 8; Maxwell: 2 4)",
    )
    bench.add_argument(
        "--dts", type=_count(1), nargs="+", default=None,
        help="DTS for every order (default per order); with --matrix, the tile sizes to try",
    )  # fmt: skip
    bench.add_argument(
        "--nt", "--nts", type=_count(1), nargs="+", default=None,
        help="Nt for every order (default per order); with --matrix, the heights to try (default 8 16 32)",
    )  # fmt: skip
    bench.add_argument(
        "--steps", type=_count(1), default=None,
        help="steps per timed run (default: whole sweeps, at least 2, for DiamondTorre runs of 0.2 s)",
    )
    bench.add_argument(
        "--repeats", type=_count(1), default=5,
        help="fewest timed runs of each algorithm (more until they last 0.2 s); medians (default 5)"
    )
    bench.add_argument(
        "--velocity", default=None, help="a number, FILE.npy, 'layered' or 'anomaly' (cost of a model; "
        "default 1.0)"
    )  # fmt: skip
    bench.add_argument(
        "--sponge", type=_count(0), default=None, help="absorbing layer width in cells (default 0)"
    )
    bench.add_argument(
        "--shapes", type=_shape, nargs="+", default=None, metavar="NXxNYxNZ",
        help="a size sweep: one table per grid, e.g. --shapes 128 256 384 512x512x256 (instead of --shape)",
    )  # fmt: skip
    bench.add_argument(
        "--medium", default=None, choices=[m for media in BENCH_MEDIA.values() for m in media],
        help="acoustic: constant (no physics), sources (a source at the centre, a receiver and a 16-cell "
        "sponge) or model (the layered model and a 16-cell sponge; default: --velocity and --sponge); "
        "maxwell: vacuum (default) or physics (a Drude sphere, a 12-cell CPML, a TFSF plane wave, a dipole "
        "and a probe)",
    )  # fmt: skip
    _subdomain(bench)
    bench.add_argument("--json", default=None, metavar="FILE", help="write every row (atomic)")
    bench.add_argument("--no-model", action="store_true", help="skip the bandwidth probe and the model")
    bench.add_argument("--no-progress", action="store_true", help="no progress bar")
    matrix = bench.add_argument_group(
        "kernel matrix (--matrix, GPU only)",
        "time the CUDA kernels themselves (no physics, CUDA events) for every combination of the options "
        "below and of --dts and --nt; one line per run, --json keeps them all",
    )  # fmt: skip
    matrix.add_argument("--matrix", action="store_true", help="run the kernel matrix instead")
    matrix.add_argument("--maxreg", type=_count(0), nargs="+", default=[0],
                        help="register caps of the sweep kernel to try (0: the default)")
    matrix.add_argument("--specialize", type=int, nargs="+", default=[-1], choices=(-1, 0, 1),
                        help="1: the sweep compiled for the grid's (ny, nz); 0: generic; -1: by grid size")
    matrix.add_argument("--left", type=int, nargs="+", default=[0], choices=(0, 1),
                        help="1: left neighbours re-read from L2; 0: kept in registers")
    matrix.add_argument("--pipelined", type=int, nargs="+", default=[-1], choices=(-1, 0, 1),
                        help="1: tier-level waits; 0: whole-torre waits; -1: the default per (NO, DTS)")
    matrix.add_argument("--bands", type=int, nargs="+", default=[-1],
                        help="launch order of pipelined sweeps: 0 stage by stage, B bands of B torres; -1: "
                        "the default")
    matrix.add_argument("--chunks", type=_count(0), nargs="+", default=[0],
                        help="tiers between two waits of a pipelined sweep (0: the default)")
    matrix.add_argument("--compile-only", action="store_true",
                        help="only build the kernels of each combination (fills the disk cache)")

    cache = sub.add_parser(
        "cache", help="the kernel and tuning cache: where it is and what it holds, or clear it",
        description="The cache folder ($DIAMONDLAB_CACHE, else the platform's user cache folder) holds the "
        "generated kernels with their compiled code and the auto-tuner's choices.",
    )  # fmt: skip
    cache.add_argument(
        "action", choices=["info", "clear"], help="info: folder, size and entries; clear: remove them"
    )
    return parser


def _join_negative_positions(argv: list[str]) -> list[str]:
    """``--source -1,2,3`` as ``--source=-1,2,3`` (argparse would take ``-1,2,3`` for an option)."""
    out = list(argv)
    for i, token in enumerate(out[:-1]):
        if token in ("--source", "--receiver") and re.fullmatch(r"-[\d.][\d.eE+-]*(,[^,]*){2}", out[i + 1]):
            out[i], out[i + 1] = f"{token}={out[i + 1]}", None
    return [t for t in out if t is not None]


#: run options that describe the problem: a record given to --initial carries its own
_RECORD_OPTIONS = {
    "velocity": "--velocity", "source": "--source", "receiver": "--receiver", "sponge": "--sponge",
    "frequency": "--frequency", "pulse_width": "--pulse-width",
}  # fmt: skip


def _continue_from(args):
    """The record of a saved run (``--initial FILE``); its settings fill the options not given.

    Options that describe another problem (a medium, sources, receivers, a
    sponge, another grid) are an error; a different order, Courant number or
    spacing is used, with a note.
    """
    from diamondlab.engine.outputs.io import load_run

    try:
        record = load_run(args.initial)
    except ValueError as err:
        raise ValueError(
            f"--initial {err} (--initial takes 'gaussian', 'zero' or a FILE written by --save)"
        ) from None
    if record["equation"] != "acoustic":
        raise ValueError(f"--initial {args.initial}: a record of a {record['equation']} run; continue it "
                         f"with --equation {record['equation']} (and its scene)")
    if args.shape is not None and tuple(args.shape) != record["shape"]:
        raise ValueError(
            f"--shape {'x'.join(map(str, args.shape))} conflicts with --initial {args.initial} "
            f"(a {'x'.join(map(str, record['shape']))} grid): drop --shape to continue the run"
        )
    given = [flag for key, flag in _RECORD_OPTIONS.items() if getattr(args, key) not in (None, [])]
    given += ["--wavelet"] if args.wavelet != "ricker" else []
    if given:
        raise ValueError(
            f"{', '.join(given)} cannot be given with --initial {args.initial}: the record carries its own "
            "medium, sources, receivers and sponge; drop them to continue the run, or start a new run"
        )
    for option, key in (("order", "order"), ("courant", "courant"), ("spacing", "spacing")):
        if getattr(args, option) is None:
            setattr(args, option, record[key])
        elif getattr(args, option) != record[key]:
            print(f"note: {args.initial} was made with {option} {record[key]}; using {getattr(args, option)}")
    return record


#: run options of the acoustic equation alone: dest -> (flag, its value when not given)
_ACOUSTIC_OPTIONS = {
    "velocity": ("--velocity", None), "sponge": ("--sponge", None), "source": ("--source", []),
    "receiver": ("--receiver", []), "pulse_width": ("--pulse-width", None),
    "wavelet": ("--wavelet", "ricker"), "initial": ("--initial", None), "save": ("--save", None),
    "backend_option": ("--backend-option", []),
}  # fmt: skip
#: run options of Maxwell's equations alone
_MAXWELL_OPTIONS = {flag[2:]: (flag, options["default"]) for flag, options in _MAXWELL_FLAGS}


def _check_equation_options(args) -> None:
    """Refuse, naming them, the options of the other equation (a silently ignored flag is a wrong run)."""
    maxwell = args.equation == "maxwell"
    options = _ACOUSTIC_OPTIONS if maxwell else _MAXWELL_OPTIONS
    given = [flag for dest, (flag, unset) in options.items() if getattr(args, dest) != unset
             and flag not in ("--save", "--initial")]  # both equations': a record of the run's state
    if not given:
        return
    if not maxwell:
        raise ValueError(f"{', '.join(given)} need{'s' if len(given) == 1 else ''} --equation maxwell "
                         "(options of Maxwell's equations)")
    raise ValueError(f"{', '.join(given)} do{'es' if len(given) == 1 else ''} not apply to --equation "
                     "maxwell (acoustic options; Maxwell takes --scene, --dipole, --probe, --frequency, "
                     "--fwidth, --pml, --periodic, --view, --save, --initial, and --window, --window-dir and "
                     "--halo as the acoustic run does)")


def _maxwell_waveform(args, scene: dict):
    """The Gaussian pulse of --frequency and --fwidth (the scene's frequency where only --fwidth is given), or
    None without them."""
    from diamondlab.maxwell import GaussianPulse

    if args.frequency is None and args.fwidth is None:
        return None
    frequency = args.frequency if args.frequency is not None else getattr(scene.get("waveform"), "frequency",
                                                                          None)
    if frequency is None:
        raise ValueError("--fwidth needs --frequency (or a waveform with a frequency in --scene)")
    return GaussianPulse(frequency, args.fwidth if args.fwidth is not None else frequency / 2)


def _maxwell_points(flags, kind, option: str, waveform=None) -> list:
    """Dipoles or probes of ``--dipole``/``--probe`` flags (``(cell, component)`` each)."""
    out = []
    for cell, component in flags:
        text = ",".join(map(str, cell)) + (f",{component}" if component else "")
        extra = () if waveform is None else (waveform,)
        try:
            out.append(kind(cell, component or "Ez", *extra))
        except (ValueError, TypeError) as err:
            raise ValueError(f"{option} {text}: {err}") from None
    return out


def _maxwell_problem(args, comm=None):
    """A Maxwell run from ``--scene`` and the flags (flags first), checked as its plan (no field allocated):
    ``{"plan": MaxwellPlan, "view": component}``; ``args.steps``, ``order`` and ``courant`` filled in."""
    from dataclasses import replace

    from diamondlab.engine.equations.maxwell_plan import MaxwellPlan
    from diamondlab.maxwell import CPML, Dipole, Probe
    from diamondlab.maxwell.scene import parse_scene, read_scene

    scene = {}
    if args.scene is not None:
        try:
            raw = read_scene(args.scene)
            scene = parse_scene(raw)
            wave = _maxwell_waveform(args, scene)
            if wave is not None:  # the flags' pulse for the scene's dipoles without their own waveform
                scene = parse_scene(raw, wave)
        except ValueError as err:
            raise ValueError(f"--scene {args.scene}: {err}") from None
    record = _maxwell_record(args)
    if record is not None:  # the saved run's grid and scheme, where neither the flags nor the scene give them
        args.shape = args.shape or ([] if "shape" in scene else list(record["shape"]))
        args.order = args.order if args.order is not None else scene.get("order", record["order"])
        if args.order == record["order"]:  # (another order: refused below, naming the order)
            scene.setdefault("courant", record["courant"])
        args.spacing = record["spacing"] if args.spacing is None else args.spacing
    wave = _maxwell_waveform(args, scene) or scene.get("waveform")
    if args.dipole and wave is None:
        raise ValueError("--dipole needs a waveform: --frequency F (and --fwidth W) for a Gaussian pulse, "
                         "or a waveform in --scene")
    if args.order is None:
        args.order = scene.get("order", 2)
    if args.order not in (2, 4):
        given = "--order" if args.order != scene.get("order") else f"--scene {args.scene}: order"
        raise ValueError(f"{given} must be 2 or 4 with --equation maxwell (the Yee scheme's order in space); "
                         f"got {args.order}")
    for name in ("dts", "nt"):
        if getattr(args, name) == "auto":
            raise ValueError(f"--{name} auto is not available with --equation maxwell: give a number or "
                             "leave it out (the backend's default)")
    args.steps = args.steps if args.steps is not None else scene.get("steps", 100)
    args.courant = args.courant if args.courant is not None else scene.get("courant")
    pml = scene.get("pml", CPML(0))
    pml = pml if args.pml is None else replace(pml, width=args.pml)
    sources = scene.get("sources", [])
    sources = _maxwell_points(args.dipole, Dipole, "--dipole", wave) if args.dipole else sources
    probes = _maxwell_points(args.probe, Probe, "--probe") if args.probe else scene.get("probes", [])
    try:
        plan = MaxwellPlan.build(
            args.shape or scene.get("shape") or DEFAULT_SHAPE, args.order, size=args.dts, nt=args.nt,
            courant=args.courant, spacing=1.0 if args.spacing is None else args.spacing, backend=args.backend,
            algorithm=args.algorithm, materials=scene.get("materials", ()), sources=sources, probes=probes,
            pml=pml, periodic=args.periodic if args.periodic is not None else scene.get("periodic", ""),
            monitors=scene.get("monitors", ()),
            eps_averaging=scene.get("eps_averaging", True),
            comm=comm, window=args.window, window_dir=args.window_dir, halo=args.halo,
        )  # fmt: skip
    except ValueError as err:  # a point or the CPML the plan refuses: from the flags or the scene?
        from_scene = f"--scene {args.scene}"
        origin = {"sources": "--dipole" if args.dipole else from_scene, "probes": "--probe" if args.probe
                  else from_scene, "pml": "--pml" if args.pml is not None else from_scene,
                  "periodic": "--periodic" if args.periodic is not None else from_scene,
                  "monitors": from_scene}  # fmt: skip
        key = next((k for k in origin if str(err).startswith(k) and k in scene), None)
        key = key or next((k for k in origin if str(err).startswith(k) and origin[k] != from_scene), None)
        if key is None:
            raise
        raise ValueError(f"{origin[key]}: {err}") from None
    ph = plan.physics
    problem = {"plan": plan, "view": args.view or scene.get("view", "Ez"), "shape": plan.shape,
               "order": args.order, "sources": ph.sources, "receivers": ph.receivers,
               "monitors": ph.monitors}
    if record is not None:
        from diamondlab.engine.outputs.io import check_maxwell_state

        problem["initial"] = check_maxwell_state(record, plan, f"--initial {args.initial}")
        problem["step"] = record["step"]  # the clock goes on from the saved run
    return problem


def _maxwell_record(args):
    """The record of a saved Maxwell run (``--initial FILE``), or None (``--initial zero`` or none)."""
    from diamondlab.engine.outputs.io import load_run

    if args.initial in (None, "zero"):
        return None
    if args.initial == "gaussian":
        raise ValueError("--initial gaussian is the acoustic equation's pulse: a Maxwell run starts at rest "
                         "('zero', the default) or from a FILE written by --save")
    try:
        record = load_run(args.initial)
    except ValueError as err:
        raise ValueError(f"--initial {err} (with --equation maxwell --initial takes 'zero' or a FILE "
                         "written by --save)") from None
    if record["equation"] != "maxwell":
        raise ValueError(f"--initial {args.initial}: a record of an {record['equation']} run cannot continue "
                         "a Maxwell run: drop --equation maxwell to continue it")
    return record


def _problem(args, comm=None):
    """Keyword arguments of the Simulation for ``args`` (and the record it continues, or None);
    for --equation maxwell its checked plan (:func:`_maxwell_problem`)."""
    from diamondlab.engine.equations.acoustic import Physics

    _check_equation_options(args)
    if args.equation == "maxwell":
        return _maxwell_problem(args, comm), None
    args.steps = 100 if args.steps is None else args.steps
    if args.initial in (None, "gaussian", "zero"):
        record = None
        shape = args.shape or DEFAULT_SHAPE
        velocity = _velocity("1.0" if args.velocity is None else args.velocity, shape)
        spacing = 1.0 if args.spacing is None else args.spacing
        sources = []
        if args.source:
            from diamondlab.sources import Source

            # default frequency: 8 points per shortest wavelength (2.5 f) at the slowest velocity
            vmin = float(np.min(velocity))
            frequency = args.frequency if args.frequency is not None else vmin / (2.5 * 8 * spacing)
            sources = [Source(p, args.wavelet, frequency=frequency) for p in args.source]
        problem = {
            "initial": args.initial, "velocity": velocity, "sources": sources, "receivers": args.receiver,
            "sponge": args.sponge, "pulse_width": args.pulse_width,
        }  # fmt: skip
    else:
        record = _continue_from(args)
        shape = record["shape"]
        problem = Physics.from_record(record)
        problem["initial"] = (record["final_prev"], record["final_curr"])
        problem["step"] = record["first_step"] + record["steps"]  # the clock goes on from the saved run
    problem.update(shape=shape, order=2 if args.order is None else args.order)
    problem["spacing"] = 1.0 if args.spacing is None else args.spacing
    return problem, record


def _snapshot_count(first_step: int, steps: int, every: int) -> int:
    """Snapshots a run of ``steps`` from ``first_step`` takes (the multiples of ``every``, both ends in).

    >>> _snapshot_count(0, 16, 8), _snapshot_count(5, 10, 4)
    (3, 2)
    """
    return (first_step + steps) // every - (first_step + every - 1) // every + 1


def _plan(args, problem, formats) -> tuple[list, dict]:
    """The outputs of a run, ``(label, path, bytes)`` each, and the host memory it holds by part."""
    from diamondlab.engine.measure.memory import CELL_BYTES, run_host_bytes

    shape = problem["shape"]
    field = CELL_BYTES * int(np.prod(shape, dtype=np.int64))
    velocity = problem.get("velocity")
    model = np.ndim(velocity) == 3
    sponge = bool(problem.get("sponge"))
    nrec, nsrc = len(problem.get("receivers") or []), len(problem.get("sources") or [])
    first = int(problem.get("step", 0))
    out = Path(args.out)
    planned = []
    if args.snapshot_every is not None:
        count = _snapshot_count(first, args.steps, args.snapshot_every)
        sizes = {"npz": field + 2048, "vti": field * 4 // 3 + field // 100 + 8192}  # vti: base64 at worst
        for fmt in formats:
            planned.append((f"{count} .{fmt} snapshots", out / "snapshot.x", count * sizes.get(fmt, field)))
    if nrec:
        rows = (args.steps + int(problem.get("traces_before", 0)))
        planned.append(("traces.npz", out / "traces.npz", 4 * rows * nrec + 8 * rows + 24 * nrec + 4096))
    plan = problem.get("plan")  # Maxwell's: its state is not the acoustic fields
    monitors = [] if plan is None else plan.physics.monitors
    if monitors:  # the DFT fields (the flux planes' interpolated: fewer points than the sums) and fluxes
        lay = plan.physics.monitor_layout
        size = lay.accumulator_bytes() + 64 * 1024 * len(monitors)
        planned.append(("monitors.npz", out / "monitors.npz", size))
    if args.snapshot_every is not None or nrec or monitors:
        planned.append(("manifest.json", out / "manifest.json", 64 * 1024))
    plan = problem.get("plan")  # Maxwell's: its state is not the acoustic fields
    saved_bytes = None
    if args.save and plan is not None:  # E, H, J and psi, the probes' traces
        from diamondlab.engine.outputs.io import maxwell_record_bytes

        saved_bytes = maxwell_record_bytes(plan)
        size = saved_bytes + 4 * args.steps * nrec + 256 * 1024
        planned.append((f"--save {args.save}", Path(args.save), size))
    elif args.save:
        size = 4 * field + (2 * field if model or sponge else 0)  # the layers; K and damping per cell
        size += field * np.dtype(velocity.dtype).itemsize // 4 if model else 0  # the model
        size += 4 * args.steps * (nrec + 8 * nsrc) + 256 * 1024
        planned.append((f"--save {args.save}", Path(args.save), size))
    backend = "cuda" if args.backend == "cuda" else "cpu"  # 'auto': the CPU's count, the larger
    memory = run_host_bytes(
        shape, problem["order"], backend, velocity_model=model, sponge=sponge, steps=args.steps,
        receivers=nrec, sources=nsrc, saved=bool(args.save),
        snapshot_formats=formats if args.snapshot_every is not None else (),
        # Nt not chosen yet (default or 'auto'): 64, above every backend's default height
        fields=args.window_dir is None, window=args.window, nt=args.nt if isinstance(args.nt, int) else 64,
        state_bytes=None if plan is None else plan.host_bytes,
        points="--receiver" if plan is None else "--probe", saved_bytes=saved_bytes,
    )  # fmt: skip
    if plan is not None and isinstance(problem.get("initial"), dict):  # kept for reset(), as acoustic pairs
        memory["--initial's state"] = sum(a.nbytes for a in problem["initial"].values() if np.ndim(a))
    return planned, memory


class RunOutputs:
    """The outputs of one ``diamondlab run``: planned, locked, staged under ``--overwrite``, reported.

    :meth:`prepare` checks every output before any work (names, free space,
    memory), takes ``--out``'s lock and finds an earlier run's outputs:
    refused without ``--overwrite``, else the new run writes into a staging
    folder in ``--out`` (same file system) and :meth:`commit` moves its files
    over the earlier ones only once they are written.  :meth:`close` removes
    the staging folder and the lock, and ``--out`` when this run made it and
    left it empty.  ``written`` and ``failed`` list what happened to each file.
    """

    def __init__(self, args, writes_out: bool):
        self.args = args
        self.writes_out = writes_out
        self.out = Path(args.out)
        self.folder = self.out  # where this run writes its files of --out
        self.lock = None
        self.made_out = False
        self.staging: Path | None = None
        self.earlier: list[Path] = []
        self.written: list[Path] = []
        self.failed: list[tuple[Path, str]] = []

    def prepare(self, planned, memory: dict, shape) -> None:
        """Check names, space and memory; lock --out; refuse or stage over an earlier run's outputs."""
        from diamondlab.engine.measure.memory import check_host_memory
        from diamondlab.engine.outputs.io import check_free_space, check_output_dir, check_output_file
        from diamondlab.files import FolderLock

        args = self.args
        if args.save:
            check_output_file(args.save, f"--save {args.save}")
        if self.writes_out:
            check_output_dir(args.out, f"--out {args.out}")
        check_host_memory(shape, sum(memory.values()), parts=memory)
        check_free_space(planned)
        if not self.writes_out:
            return
        self.made_out = not self.out.exists()
        self.out.mkdir(parents=True, exist_ok=True)
        self.lock = FolderLock(self.out, LOCK_NAME, f"--out {args.out}").acquire()
        leftover = self.out / STAGING_NAME
        if leftover.exists():  # a run killed while staging: ours to remove (the lock is ours now)
            shutil.rmtree(leftover, ignore_errors=True)
        stale = sorted(p for pattern in OUTPUT_PATTERNS for p in self.out.glob(pattern))
        if stale and not args.overwrite:
            names = ", ".join(p.name for p in stale[:3]) + (", ..." if len(stale) > 3 else "")
            raise ValueError(
                f"--out {args.out} holds the outputs of an earlier run ({len(stale)} files: {names}): give "
                "another --out folder, or --overwrite to replace them"
            )
        if stale:
            self.earlier = stale
            self.staging = leftover
            self.staging.mkdir()
            self.folder = self.staging

    def attempt(self, path, write) -> Path | None:
        """``write()`` one output; note it as written, or (an OSError or MemoryError) as failed."""
        try:
            done = Path(write())
        except (OSError, MemoryError) as err:
            reason = getattr(err, "strerror", None) or str(err) or type(err).__name__
            if isinstance(err, MemoryError):
                reason = f"out of memory: {reason}"
            self.failed.append((Path(path), reason))
            print(f"diamondlab: could not write {path}: {reason}", file=sys.stderr, flush=True)
            return None
        self.written.append(done)
        return done

    def commit(self) -> None:
        """Under --overwrite: move this run's files into --out, then remove the earlier run's others."""
        if self.staging is None:
            return
        new = sorted(self.staging.iterdir(), key=lambda p: (p.name == "manifest.json", p.name))
        if not new:
            return  # nothing written: the earlier run stays as it was
        names = {p.name for p in new}
        moved = {}
        for p in new:
            if p.name != "manifest.json":
                moved[p] = self.out / p.name
                os.replace(p, moved[p])
        for p in self.earlier:
            if p.name not in names:
                with contextlib.suppress(FileNotFoundError):
                    p.unlink()
        if "manifest.json" in names:  # last: the folder is whole when its manifest appears
            moved[self.staging / "manifest.json"] = self.out / "manifest.json"
            os.replace(self.staging / "manifest.json", self.out / "manifest.json")
        self.written = [moved.get(p, p) for p in self.written]
        self.staging.rmdir()
        self.staging, self.folder = None, self.out

    def close(self) -> None:
        """Remove the staging folder (an earlier run kept), the lock, and an empty --out this run made."""
        if self.staging is not None:
            shutil.rmtree(self.staging, ignore_errors=True)
            self.staging = None
        if self.lock is not None:
            self.lock.release()
            self.lock = None
        if self.made_out:
            with contextlib.suppress(OSError):
                self.out.rmdir()  # only when empty

    def report(self) -> None:
        """Print what was written; raise :class:`OutputError` naming what failed and what was kept."""
        if self.written:
            print("written: " + ", ".join(_describe(self.written)))
        if self.failed:
            failed = "; ".join(f"{p} ({why})" for p, why in self.failed)
            kept = ", ".join(_describe(self.written)) or "nothing"
            raise OutputError(f"outputs failed: {failed}; written: {kept}")


def _describe(paths) -> list[str]:
    """File names, snapshots counted together."""
    snaps = [p for p in paths if Path(p).name.startswith("snapshot_")]
    out = [str(p) for p in paths if not Path(p).name.startswith("snapshot_")]
    if snaps:
        out.append(f"{len(snaps)} snapshot files in {Path(snaps[0]).parent}")
    return out


def _write_outputs(args, sim, snapshots, first, first_step, interrupted: bool, outputs: RunOutputs) -> None:
    """The traces, the record (--save) and the manifest, each atomically and each attempted; then commit."""
    from diamondlab.engine.outputs.io import save_run, write_atomically
    from diamondlab.files import npz_verifier

    folder = outputs.folder
    if snapshots is not None:
        outputs.written += snapshots.files
        if snapshots.failed is not None:
            path, err = snapshots.failed
            outputs.failed.append((outputs.out / path.name, err.strerror or str(err)))
        print(f"{len(snapshots.files)} snapshot files in {args.out}")
    if sim.receivers:
        points, record = _trace_record(sim)
        path = folder / "traces.npz"
        if outputs.attempt(outputs.out / "traces.npz", lambda: write_atomically(
                path, lambda fh: np.savez(fh, **record), verify=npz_verifier(record))):
            print(f"traces of {len(sim.receivers)} {points} ({len(sim.traces)} steps) in {outputs.out}")
    monitors = getattr(sim, "monitors", ())
    if monitors:
        record = _monitor_record(sim)
        path = folder / "monitors.npz"
        if outputs.attempt(outputs.out / "monitors.npz", lambda: write_atomically(
                path, lambda fh: np.savez(fh, **record), verify=npz_verifier(record))):
            print(f"DFT fields and fluxes of {len(monitors)} monitors in {outputs.out}")
    if args.save and outputs.attempt(args.save, lambda: save_run(args.save, sim, first, first_step)):
        print(f"saved {args.save}")
    in_out = [p for p in outputs.written if Path(p).parent == folder]
    if in_out or snapshots is not None or sim.receivers or monitors:
        manifest = {
            "equation": sim.equation, "shape": list(sim.shape), "order": sim.order, "first_step": first_step,
            "last_step": sim.time_step, "interrupted": interrupted, "files": sorted(p.name for p in in_out),
            "record": None if not args.save or any(Path(p) == Path(args.save) for p, _ in outputs.failed)
            else str(args.save),
            "failed": {Path(p).name: why for p, why in outputs.failed},
        }  # fmt: skip
        if sim.equation == "maxwell":
            manifest["view"] = sim.view  # the component of the snapshots
        text = json.dumps(manifest, indent=1)
        outputs.attempt(outputs.out / "manifest.json", lambda: write_atomically(
            folder / "manifest.json", lambda fh: fh.write(text), mode="w", verify=_json_verifier))
    outputs.commit()


def _trace_record(sim) -> tuple[str, dict]:
    """What the traces' points are called and the arrays of ``traces.npz``: ``traces`` (steps, points),
    ``times``, and the points (acoustic: ``receivers``, positions; Maxwell: ``positions``, cells, and
    ``components``; an ``H`` component's row is half a step before its time)."""
    record = {"traces": sim.traces, "times": sim.trace_times}
    positions = np.array([r.position for r in sim.receivers])
    if sim.equation == "maxwell":
        return "probes", {**record, "positions": positions,
                          "components": np.array([p.component for p in sim.receivers])}
    return "receivers", {**record, "receivers": positions}


def _monitor_record(sim) -> dict:
    """The arrays of ``monitors.npz``, per monitor ``i``: ``m{i}_type`` (``DFTPlane``, ``FluxPlane``,
    ``FluxBox``), ``m{i}_frequencies``, its DFT fields ``m{i}_{component}`` (complex, ``(nf, n1, n2)``;
    a box's ``m{i}_{face}_{component}``, faces ``mx px my py mz pz`` for ``-x +x ..``) and a flux monitor's
    ``m{i}_flux`` (a box's net outward flux; ``m{i}_{face}_flux`` per face); ``dt`` and ``steps`` (the
    steps summed)."""
    record = {"dt": np.float64(sim.params.dt), "steps": np.int64(sim.time_step - sim._first_step)}
    for i, mon in enumerate(sim.monitors):
        kind = type(mon).__name__
        record[f"m{i}_type"], record[f"m{i}_frequencies"] = np.array(kind), np.array(mon.frequencies)
        fields = sim.dft(i)
        if kind == "FluxBox":
            for face, comps in fields.items():
                tag = ("m" if face[0] == "-" else "p") + face[1]
                record.update({f"m{i}_{tag}_{c}": v for c, v in comps.items()})
                record[f"m{i}_{tag}_flux"] = sim.flux(i, face)
        else:
            record.update({f"m{i}_{c}": v for c, v in fields.items()})
        if kind != "DFTPlane":
            record[f"m{i}_flux"] = sim.flux(i)
    return record


def _json_verifier(path: Path) -> None:
    json.loads(path.read_text())


#: Environment variables in which an MPI launcher gives each process the number of processes
#: (MPICH's Hydra and Intel MPI: PMI_SIZE; Open MPI: OMPI_COMM_WORLD_SIZE).
MPI_SIZE_VARIABLES = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE")


def _mpi_world():
    """``MPI.COMM_WORLD`` when ``mpiexec`` started this process as one of several, else None."""
    sizes = [int(os.environ[v]) for v in MPI_SIZE_VARIABLES if os.environ.get(v, "").isdigit()]
    if not sizes or max(sizes) <= 1:
        return None
    try:
        from mpi4py import MPI
    except ImportError as err:
        raise RuntimeError(f"mpiexec started {max(sizes)} processes but mpi4py is not installed: "
                           "pip install 'diamondlab[mpi]'") from err
    return MPI.COMM_WORLD if MPI.COMM_WORLD.size > 1 else None


def _run(args, comm=None) -> int:
    """``diamondlab run``; ``comm``: the MPI ranks that share the grid (rank 0 prints and writes)."""
    from diamondlab.engine.outputs.snapshots import Snapshots
    from diamondlab.engine.run.interrupts import on_ending_now, raise_if_stopped

    root = comm is None or comm.rank == 0
    problem, record = _problem(args, comm)
    writes_out = (args.snapshot_every is not None or bool(problem["receivers"])
                  or bool(problem.get("monitors")))
    formats = tuple(f.strip() for f in args.snapshot_format.split(",") if f.strip())
    Snapshots(args.snapshot_every or 1, args.out, formats)  # checks the cadence and the formats first
    outputs = RunOutputs(args, writes_out)
    # a second stop signal while compiling ends the process at once: the lock goes with it
    with on_ending_now(outputs.close):
        try:
            if comm is None:
                raise_if_stopped()  # one process: a stop before the outputs are planned writes nothing
            if root:
                outputs.prepare(*_plan(args, problem, formats), problem["shape"])
            if comm is not None:
                comm.Barrier()  # outputs checked (an error there aborts every rank) before any rank starts
            # the folder is made at the first snapshot (under --overwrite: the staging folder)
            snapshots = None if args.snapshot_every is None else Snapshots(
                args.snapshot_every, outputs.folder, formats, component=problem.get("view"))
            return _run_checked(args, comm, problem, snapshots, outputs)
        finally:
            outputs.close()


def _run_checked(args, comm, problem, snapshots, outputs: RunOutputs) -> int:
    """``diamondlab run`` once its outputs are planned (and --out locked)."""
    from diamondlab.engine.run.interrupts import deferred_interrupts, take_stop
    from diamondlab.engine.run.simulation import Simulation, SourceTimingWarning

    root = comm is None or comm.rank == 0
    if "auto" in (args.dts, args.nt):
        print("tuning DTS and Nt on this grid (each candidate is measured once; the choice is cached)...",
              flush=True)
    if "plan" in problem:  # Maxwell's equations: the plan checked before the outputs were planned
        from diamondlab.engine.equations.maxwell_simulation import MaxwellSimulation

        sim = MaxwellSimulation.from_plan(problem["plan"], initial=problem.get("initial", "zero"),
                                          step=problem.get("step", 0))
        sim.view = problem["view"]
    else:
        from diamondlab.engine.run.plan import RunPlan

        start = {k: problem[k] for k in ("initial", "pulse_width", "step") if k in problem}
        plan = RunPlan.build(
            size=args.dts, nt=args.nt, courant=args.courant, backend=args.backend, algorithm=args.algorithm,
            backend_options=dict(args.backend_option) or None, comm=comm, window=args.window,
            window_dir=args.window_dir, halo=args.halo,
            **{k: v for k, v in problem.items() if k not in start},
        )  # fmt: skip
        if not args.save and args.steps:  # a source the run never shows is refused before anything is said
            for message in plan.physics.quiet_sources(start.get("step", 0), args.steps, plan.params.dt):
                raise ValueError(message)
        sim = Simulation.from_plan(plan, **start)
    print(sim if comm is None else
          f"{sim} on {comm.size} MPI ranks ({'xyz'[sim.backend.axis]} split: {sim.backend.name})")
    if getattr(sim.plan, "swap_xz", False):
        swapped = "x".join(map(str, sim.plan.device_shape))
        print(f"z column of {sim.shape[2]} cells, taller than a {sim.backend_name} block holds: the device "
              f"runs the grid as {swapped} (x and z swapped; fields, planes and traces in your axes)")
    if sim.plan.window is not None:
        from diamondlab.engine.scale.window import describe_traffic

        print(f"window: {sim.plan.window} of {sim.shape[0]} x rows on the device, "
              f"{describe_traffic(sim.backend.traffic(), sim.nt)}")
    first = sim.fields if args.save and sim.equation == "acoustic" else None  # Maxwell's record: its end
    first_step = sim.time_step
    interrupted = False
    with warnings.catch_warnings():
        # a source that peaks after the end is never seen unless the run is saved to be continued
        warnings.simplefilter("always" if args.save else "error", SourceTimingWarning)
        try:
            stats = sim.run(args.steps, progress=root and not args.no_progress, snapshots=snapshots)
        except KeyboardInterrupt:
            interrupted = True
            stats = sim.last_run  # set by run() even when stopped while compiling
            print(f"interrupted at step {sim.time_step}: fields consistent at that level; writing outputs")
        except OSError as err:
            if snapshots is None or snapshots.failed is None:
                raise
            stats = sim.last_run
            print(f"diamondlab: snapshot {snapshots.failed[0].name} failed ({err.strerror or err}): the run "
                  f"stops at step {sim.time_step}; writing the other outputs", file=sys.stderr, flush=True)
    try:
        with deferred_interrupts():  # a stop from here on waits until every output is complete
            if stats is not None:
                rate = stats.gcells_per_second
                ranks = "" if comm is None else (f", {comm.size} MPI ranks: {rate / comm.size:.3f} a rank, "
                                                 f"ghost rows by {sim.backend.halo_path}")
                print(
                    f"{stats.steps} steps of {sim.shape[0]}x{sim.shape[1]}x{sim.shape[2]} in "
                    f"{stats.seconds:.3f} s: {rate:.3f} G {_CELLS[sim.equation]} updates/s ({sim.algorithm}, "
                    f"{sim.backend_name}"
                    f"{ranks})"
                )
            if root:
                _write_outputs(args, sim, snapshots, first, first_step, interrupted, outputs)
            else:  # rank 0 gathers what it writes: every rank takes part, in its order (monitors, fields)
                if getattr(sim, "monitors", ()):
                    _monitor_record(sim)
                if args.save:  # the final layers (Maxwell's: the whole state)
                    sim.state() if sim.equation == "maxwell" else sim.fields  # noqa: B018
        # the stop that ended the run, or one during the writes (recorded: the block raised nothing)
        interrupted = take_stop() or interrupted
    except KeyboardInterrupt:
        interrupted = True  # the outputs are complete: stop now
    if root:
        outputs.report()  # raises OutputError when one failed
    return _interrupt_status() if interrupted else EXIT_OK


#: What one update of a run's cell is called, by equation.
_CELLS = {"acoustic": "cell", "maxwell": "Yee cell"}


def _interrupt_status() -> int:
    from diamondlab.engine.run import interrupts

    return 128 + int(interrupts.last_signal)


def _bench_matrix(args) -> int:
    """``diamondlab bench --matrix``: the CUDA kernels timed per combination (engine.perfmodel.benchmark)."""
    import json

    from diamondlab.engine.measure import perfmodel
    from diamondlab.engine.outputs.io import write_atomically
    from diamondlab.kernels.cuda import SUPPORTED_SIZES

    if args.backend == "cpu":
        raise ValueError("--matrix times the CUDA kernels: use --backend cuda (or auto on a GPU machine)")
    sizes = {o: tuple(d for d in SUPPORTED_SIZES[o] if args.dts is None or d in args.dts)
             or SUPPORTED_SIZES[o][-1:] for o in SUPPORTED_SIZES}  # fmt: skip
    if args.compile_only:
        for order in args.orders:
            for size in sizes[order]:
                for maxreg, spec, lfm, pipe in itertools.product(args.maxreg, args.specialize, args.left,
                                                                  args.pipelined):
                    yz = tuple(args.shape[1:]) if spec == 1 else None
                    res = perfmodel.compile_only(order, size, maxreg or None, yz, bool(lfm),
                                                 None if pipe < 0 else bool(pipe))
                    print(f"compiled NO={order} DTS={size} cap={maxreg} spec={spec} left={lfm} pipe={pipe}: "
                          f"{res}", flush=True)
        return 0
    results = perfmodel.benchmark(
        tuple(args.shape), tuple(args.orders), tuple(args.nt or (8, 16, 32)), args.steps or 64, args.repeats,
        sizes=sizes, maxregs=[m or None for m in args.maxreg],
        specialize=[None if x < 0 else bool(x) for x in args.specialize], left=[bool(x) for x in args.left],
        pipelined=[None if x < 0 else bool(x) for x in args.pipelined],
        bands=[None if b < 0 else b for b in args.bands], chunks=[c or None for c in args.chunks],
        log=lambda text: print(text, flush=True),
    )  # fmt: skip
    if args.json:
        from diamondlab.devices import H100, current_gpu

        arch = current_gpu() or H100
        record = {"shape": list(args.shape), "device": arch.name, "fp32_rate": arch.fp32_rate,
                  "results": results}
        write_atomically(args.json, lambda fh: json.dump(record, fh, indent=1), mode="w")
    return 0


#: The media of ``bench --medium`` by equation (the first: a Maxwell bench's default).
BENCH_MEDIA = {"acoustic": ("constant", "sources", "model"), "maxwell": ("vacuum", "physics")}

#: bench options of the acoustic equation alone: dest -> (flag, its value when not given)
_BENCH_ACOUSTIC_OPTIONS = {
    "velocity": ("--velocity", None), "sponge": ("--sponge", None),
    "backend_option": ("--backend-option", []), "matrix": ("--matrix", False),
}  # fmt: skip


def _check_bench_options(args) -> None:
    """Refuse, before any work, what ``bench --equation`` cannot take; fill in the equation's orders."""
    from diamondlab.maxwell.scheme import YEE_ORDERS

    maxwell = args.equation == "maxwell"
    if args.medium is not None and args.medium not in BENCH_MEDIA[args.equation]:
        other = "maxwell" if not maxwell else "acoustic"
        media = BENCH_MEDIA[args.equation]
        raise ValueError(f"--medium {args.medium} is a medium of --equation {other}: --equation "
                         f"{args.equation} takes --medium {', '.join(media[:-1])} or {media[-1]}")
    if not maxwell:
        args.orders = args.orders or list(SUPPORTED_ORDERS)
        return
    given = [flag for dest, (flag, unset) in _BENCH_ACOUSTIC_OPTIONS.items() if getattr(args, dest) != unset]
    if given:
        raise ValueError(f"{', '.join(given)} do{'es' if len(given) == 1 else ''} not apply to bench "
                         "--equation maxwell (acoustic options; its scene is --medium vacuum or physics)")
    bad = [o for o in args.orders or () if o not in YEE_ORDERS]
    if bad:
        raise ValueError("--orders must be 2 or 4 with --equation maxwell (the Yee scheme's order in "
                         f"space); got {bad[0]}")
    args.orders = args.orders or list(YEE_ORDERS)


def _bench(args, comm=None) -> int:
    """``diamondlab bench``; ``comm``: the MPI ranks that share each grid (rank 0 prints and writes)."""
    _check_bench_options(args)
    args.shape = args.shape or DEFAULT_SHAPE
    if args.matrix:
        if comm is not None or args.window is not None:
            raise ValueError("--matrix times the kernels on one whole grid: not under mpiexec or --window")
        return _bench_matrix(args)
    for name in ("dts", "nt"):
        values = getattr(args, name)
        if values is not None and len(values) > 1:
            raise ValueError(f"--{name} takes one value without --matrix; got {values}")
        setattr(args, name, values[0] if values else None)
    rows = []
    for shape in args.shapes or [args.shape]:
        rows += _bench_shape(args, shape, comm)
    if args.json and (comm is None or comm.rank == 0):
        from diamondlab.engine.outputs.io import write_atomically

        write_atomically(args.json, lambda fh: json.dump({"rows": rows}, fh, indent=1), mode="w")
    return 0


def _bench_medium(args, shape) -> tuple[str, dict]:
    """The physics of a bench run (``--medium``, else ``--velocity`` and ``--sponge``) and its description."""
    if args.equation == "maxwell":
        from diamondlab.engine.measure.bench import yee_bench_scene

        if args.medium in (None, "vacuum"):
            return "vacuum, perfect conductor walls", {}
        return ("a Drude sphere, a 12-cell CPML, a TFSF plane wave, a dipole and a probe",
                yee_bench_scene(shape))
    if args.medium is None or args.medium == "constant":
        velocity = _velocity("1.0" if args.medium is not None or args.velocity is None else args.velocity,
                             shape)
        sponge = (args.sponge or 0) if args.medium is None else 0  # --medium constant: no sponge
        what = "constant velocity" if np.ndim(velocity) == 0 else f"velocity model {args.velocity}"
        return f"{what}, sponge {sponge}", {"velocity": velocity, "sponge": sponge}
    sponge = min(16, (min(shape) - 1) // 2)
    if args.medium == "model":
        return f"layered model, sponge {sponge}", {"velocity": _velocity("layered", shape), "sponge": sponge}
    from diamondlab.sources import Receiver, Source

    centre = tuple(n // 2 for n in shape)
    source = Source(centre, frequency=1.0 / 20, units="grid")  # 8 points per shortest wavelength at c = 1
    receiver = Receiver(tuple(max(sponge, n // 4) for n in shape), units="grid")
    physics = {"velocity": 1.0, "sponge": sponge, "sources": [source], "receivers": [receiver]}
    return f"a source, a receiver, sponge {sponge}", physics


def _bench_shape(args, shape, comm=None) -> list[dict]:
    """Time and print one grid of ``diamondlab bench``; return its rows."""
    from diamondlab.engine.measure.bench import UPDATE_UNITS, bench_models, compare_algorithms
    from diamondlab.engine.measure.timing import MIN_SECONDS
    from diamondlab.engine.run.simulation import SourceTimingWarning

    maxwell = args.equation == "maxwell"
    medium, physics = _bench_medium(args, shape)
    physics.update(window=args.window, window_dir=args.window_dir)
    if comm is not None:
        physics.update(comm=comm, halo=args.halo)
    if args.backend_option:
        physics.update(backend_options=dict(args.backend_option))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SourceTimingWarning)  # a timed run is shorter than the wavelet
        rows = compare_algorithms(
            shape, args.orders, args.backend, args.courant, args.dts, args.nt, args.steps, args.repeats,
            progress=not args.no_progress, equation=args.equation, **physics,
        )  # fmt: skip
    nx, ny, nz = shape
    for r in rows:
        r.update(shape=[nx, ny, nz], medium=medium)
    split = _bench_split(args, shape, rows, comm)
    # one process, one device, the whole grid: the model applies (not to a window's copies or to ranks)
    backend = rows[0]["backend"]
    skip = args.no_model or split is not None
    device = _device_numbers(backend, skip) if backend == "cuda" else None
    cpu = None if skip or backend != "cpu" or maxwell else _cpu_numbers()
    print(f"grid {nx}x{ny}x{nz}, backend {backend}, {medium}; medians of at least {args.repeats} runs "
          f"lasting {MIN_SECONDS:g} s together, spread = interquartile range / median"
          + (f"; {split}" if split else ""))
    if device is not None:
        print(f"device {device.name}: bandwidth {device.bandwidth / 1e9:.1f} GB/s measured now")
    if cpu is not None:
        levels = ", ".join(f"{lv.name} {lv.bandwidth / 1e9:.0f} GB/s" for lv in cpu.levels)
        print(f"CPU model ({cpu.name}): {levels} (measured once on this machine, kept in the cache folder)"
              + (f"; NOT STEADY, its probes: {'; '.join(cpu.flags)} (measured again on a quiet machine)"
                 if cpu.flags else ""))
    head = (f"{'NO':>3} {'DTS':>4} {'Nt':>4} {'DiamondTorre':>13} {'spread':>6} {'stepwise':>9} "
            f"{'spread':>6} {'ratio':>6} {'equal':>6}")
    modelled = device is not None or cpu is not None or (maxwell and not skip)
    if modelled:
        head += f" {'DT model':>9} {'of it':>5} {'SW model':>9} {'of it':>5}"
        head += f" {'B/update':>11}" if maxwell else ""
        head += "  bound (DT / SW)"
    print(head)
    for r in rows:
        spreads = [r.get("spreads", {}).get(a, r.get("spread", 0.0)) for a in ("diamondtorre", "stepwise")]
        line = (
            f"{r['order']:>3} {r['dts']:>4} {r['nt']:>4} {r['diamondtorre']:>13.4g} {spreads[0]:>6.0%} "
            f"{r['stepwise']:>9.4g} {spreads[1]:>6.0%} {r['ratio']:>6.2f} {str(r['bit_equal']):>6}"
        )
        if modelled:
            line += _bench_model_columns(r, bench_models(r, shape, device), maxwell)
        print(line)
    print(f"(G {UPDATE_UNITS[args.equation]} per second)")
    for r in rows:
        if r.get("flag"):
            print(f"NO={r['order']}: not a steady measurement ({r['flag']}): compare these rates with "
                  "nothing until a run on a quiet machine agrees")
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
    if maxwell and modelled:
        print("model: " + ("the roofline prediction (engine.measure.perfmodel.predict_yee) from" if device
                           else "no model on the CPU (the CPU model has no Yee scheme); B/update:")
              + " the bytes a Yee cell update moves, from the tile geometry (DiamondTorre's torre row, "
              "stepwise's layers; the Drude current's with a Drude medium)")
    elif device is not None:
        print("model: the roofline prediction from the row-of-torres locality and the stepwise 12 bytes an "
              "update (engine.measure.perfmodel); its bound is the roof its counts reach, DRAM bytes with no "
              "reuse in the L2: a row well below its model is held by what the model leaves out (on the H100 "
              "and H200 the NO=2 and 4 sweeps move 1.4-2 of the model's 4.1 bytes an update and wait on "
              "latency: Nsight Compute, BENCHMARKS.md)")
    elif cpu is not None:
        print("model: the CPU model (engine.measure.cpumodel): the working set (stepwise: the grid's two "
              "fields; DiamondTorre: the torre's tile) picks the cache level; the in-cache rate plus the "
              "traffic from beyond a core's L2 (L3, memory) gives the time, the largest part names the bound")
    return rows


def _bench_model_columns(row: dict, models: dict, maxwell: bool) -> str:
    """The model's columns of a bench line (rate, share of it, bound; bytes an update for Maxwell); the
    row gains the models' keys (``model`` None where there is none, ``bound`` saying so)."""

    def rate(m) -> float | None:
        return m.gcells if math.isfinite(m.rate) else None

    dt, sw = models["diamondtorre"], models["stepwise"]
    row.update(model=rate(dt), stepwise_model=rate(sw), bound=dt.bound, stepwise_bound=sw.bound)
    text = ""
    for alg, m in models.items():
        text += (f" {m.gcells:>9.4g} {row[alg] / m.gcells:>5.0%}" if rate(m) is not None
                 else f" {'-':>9} {'-':>5}")
    if maxwell:
        row.update(model_bytes=dt.bytes_per_update, stepwise_model_bytes=sw.bytes_per_update)
        text += f" {f'{dt.bytes_per_update:.1f} / {sw.bytes_per_update:.0f}':>11}"
    return text + (f"  {dt.bound}" if rate(dt) is None else f"  {dt.bound} / {sw.bound}")


def _cpu_numbers():
    from diamondlab.engine.measure.cpumodel import cpu_numbers

    return cpu_numbers()


def _bench_split(args, shape, rows, comm) -> str | None:
    """What a bench under mpiexec or with a window adds to its rows and says: None for neither."""
    if comm is not None:
        for r in rows:
            r.update(ranks=comm.size, diamondtorre_per_rank=r["diamondtorre"] / comm.size,
                     stepwise_per_rank=r["stepwise"] / comm.size)
        return (f"{comm.size} MPI ranks (y split): the rates are the whole grid's, "
                f"DiamondTorre {rows[0]['diamondtorre'] / comm.size:.4g} a rank")
    if args.window is None or args.window >= shape[0]:
        return None
    from diamondlab.engine.scale.window import describe_traffic

    parts = [f"NO={r['order']}: {describe_traffic(r['window_traffic'], r['nt'])}" for r in rows]
    return f"window of {args.window} x rows (" + "; ".join(parts) + ")"


def _device_numbers(backend: str, skip: bool):
    if skip:
        return None
    from diamondlab.engine.measure import perfmodel

    return perfmodel.cuda_device_numbers() if backend == "cuda" else perfmodel.cpu_device_numbers()


def _cache(args) -> int:
    """``diamondlab cache info|clear``."""
    from diamondlab import caches

    def size(n: int) -> str:
        return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n / 2**10:.1f} KiB" if n >= 2**10 else f"{n} B"

    info = caches.clear_cache() if args.action == "clear" else caches.cache_info()
    entries = (
        f"{info['kernel_modules']} kernel modules, {info['compiled']} compiled-code files, "
        f"{info['tunings']} tunings"
    )
    examples = ", ".join(info["foreign_examples"])
    others = f"{info['foreign']} files not written by diamondlab (e.g. {examples})" if info["foreign"] else ""
    if args.action == "clear":
        print(f"removed {entries} ({size(info['bytes'])}) from {info['folder']}")
        if others:
            print(f"kept {others}")
        return 0
    print(f"folder:  {info['folder']} ({info['source']})")
    print(f"size:    {size(info['bytes'])}")
    print(f"entries: {entries}")
    if others:
        print(f"others:  {others}; `diamondlab cache clear` leaves them")
    return 0


def _show_warning(message, category, filename, lineno, file=None, line=None):
    print(f"diamondlab: warning: {message}", file=sys.stderr)


def _fail(err, status: int, comm) -> int:
    """Print the error; under MPI stop every rank now (the others would wait for this one forever)."""
    where = "" if comm is None else f" (MPI rank {comm.rank} of {comm.size}: stopping every rank)"
    print(f"diamondlab: error{where}: {err}", file=sys.stderr, flush=True)
    if comm is not None:
        comm.Abort(status)
    return status


def main(argv=None) -> int:
    """Run the command line; return the exit status (:data:`EXIT_STATUSES`).

    Stop signals (SIGINT, SIGTERM) are recorded from the entry point on
    (:mod:`diamondlab._entry`; here, for a call from Python) and acted on at
    the command's safe points: never raised inside an import or a write.
    """
    from diamondlab.engine.run.interrupts import stop_signals_recorded

    with stop_signals_recorded():
        return _main(argv)


def _main(argv) -> int:
    from diamondlab.engine.run.interrupts import raise_if_stopped, take_stop
    from diamondlab.engine.run.simulation import NonFiniteFieldError

    argv = _join_negative_positions(sys.argv[1:] if argv is None else argv)
    comm = None
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        try:
            raise_if_stopped()  # a stop while Python started (the imports) ends here, before any work
            args = _parser().parse_args(argv)
            if args.command == "cache":
                return _cache(args)
            command = _run if args.command == "run" else _bench
            comm = _mpi_world()
            if comm is not None and comm.rank:
                warnings.showwarning = lambda *a, **k: None  # rank 0 speaks for the run
                with contextlib.redirect_stdout(io.StringIO()):
                    status = command(args, comm)
            else:
                status = command(args, comm)
            # a stop after the command's last safe point (its outputs complete) is never lost
            return _interrupt_status() if status == EXIT_OK and take_stop() else status
        except NonFiniteFieldError as err:
            return _fail(err, EXIT_BLEW_UP, comm)
        except OutputError as err:
            return _fail(err, EXIT_OUTPUT_FAILED, comm)
        except (ValueError, TypeError, RuntimeError, OSError, MemoryError, Warning) as err:
            return _fail(err, EXIT_BAD_INPUT, comm)
        except KeyboardInterrupt:
            print("diamondlab: interrupted before the run started: nothing was written", file=sys.stderr)
            return _interrupt_status()
        except Exception as err:  # a bug: never reported as 1 (the field blew up) or 2 (bad input)
            traceback.print_exc(file=sys.stderr)
            return _fail(f"internal error (a bug in diamondlab; please report the traceback above): "
                         f"{type(err).__name__}: {err}", EXIT_INTERNAL, comm)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
