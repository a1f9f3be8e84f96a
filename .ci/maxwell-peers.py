"""Maxwell on the CPU against its peers: diamondlab (DiamondTorre, stepwise), gprMax (OpenMP) and ``fdtd``.

One problem that all three express (BENCHMARKS.md, "Maxwell on the CPU against gprMax and fdtd"):
an ``n^3`` Yee grid of order 2 in space, vacuum with a dielectric cube (eps_r = 4, a quarter of the
grid across, off centre), an ``Ez`` point source (a soft current source; gprMax's Hertzian dipole),
perfect-conductor outer faces (no PML: gprMax ``#pml_cells: 0``, fdtd with no boundary object,
diamondlab ``pml=0``), ``--steps`` steps.  Each tool runs in its own process with
``OMP_NUM_THREADS = NUMBA_NUM_THREADS = --threads``: a warm-up run (Numba's compile, gprMax's and
fdtd's first model), then ``--repeats`` timed runs of the time loop alone (gprMax: its solver's own
solve time; the model's build and the output file are outside it).  The rate is Yee cell updates per
second (a cell's six components advanced one step).  Precision: diamondlab float32, gprMax single
(``cpu_precision="single"``, its default), fdtd float64 (its numpy backend has no float32: numpy
elementwise operations, one thread whatever the thread count).

    python .ci/maxwell-peers.py --shapes 128 200 --threads 2 1 --out peers.jsonl
    python .ci/maxwell-peers.py --check            # the probe trace of diamondlab against fdtd

The peers are no dependency of diamondlab: they live in their own environment, given by
``--peers-python`` (default ``/work/peers-venv/bin/python``; ``pip install gprMax==4.0.1 fdtd==0.3.5``).
diamondlab runs under this script's interpreter.  One JSON line a row on stdout (and ``--out``), with
the tool's version, the threads, the machine's load (``os.getloadavg``) before and after the row.

On a machine without the registry (the 16-core device machine, Python 3.12): gprMax 4.0.1 ships
manylinux wheels (no build from source needed; its OpenMP runtime, libgomp, is inside the wheel).
Here, fetch the wheels that machine lacks (it has numpy, scipy, h5py, matplotlib, cython, jinja2,
psutil, tqdm, humanize, colorama, pillow, typing-extensions already), about 32 MiB::

    python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 \
        -d .whl/peers gprMax==4.0.1 fdtd==0.3.5 numpy-stl==4.1.1 python-utils==4.2.0 terminaltables==3.1.10

and there, before the script: ``python3 -m pip install -q --no-index --no-deps --target /tmp/peers
.whl/peers/*.whl`` and ``--peers-python`` a wrapper that sets ``PYTHONPATH=/tmp/peers`` (or one
interpreter for all: ``PYTHONPATH=/tmp/peers:$PYTHONPATH python3 .ci/maxwell-peers.py --peers-python
python3``; the peers still run in their own processes).
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PEERS_PYTHON = "/work/peers-venv/bin/python"
SPACING = 1e-3  # m: gprMax and fdtd take SI units, diamondlab cells (c = 1)
EPS_BOX = 4.0
FREQUENCY = 0.05  # c / h: 20 cells a wavelength in vacuum, 10 in the cube


def scene(n: int) -> dict:
    """The shared problem in cells: the cube (``lo <= i < hi``), the source and the probe cells."""
    q = n // 8
    return dict(box_lo=(n // 2 + q, n // 2 - q, n // 2 - q), box_hi=(n // 2 + 3 * q, n // 2 + q, n // 2 + q),
                source=(n // 2 - q, n // 2, n // 2), probe=(n // 2, n // 2, n // 2))


# ----------------------------------------------------------------------------------------- the workers
def run_diamondlab(n: int, steps: int, repeats: int, algorithms) -> list:
    import numpy as np

    import diamondlab
    from diamondlab import Simulation
    from diamondlab.maxwell import Box, Dielectric, Dipole, GaussianPulse, Probe

    s = scene(n)
    rows = []
    for spec in algorithms:  # "stepwise", "diamondtorre" (its default tiling) or "diamondtorre:DTS:NT"
        algorithm, *tiling = spec.split(":")
        tile = dict(zip(("size", "nt"), map(int, tiling), strict=False))
        sim = Simulation((n, n, n), 2, equation="maxwell", backend="cpu", algorithm=algorithm, **tile,
                         materials=[Box(s["box_lo"], tuple(h - 1 for h in s["box_hi"]), Dielectric(EPS_BOX))],
                         sources=[Dipole(s["source"], "Ez", GaussianPulse(FREQUENCY, FREQUENCY / 2))],
                         probes=[Probe(s["probe"], "Ez")])
        sim.run(sim.nt)  # compile and warm up
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            sim.run(steps)
            times.append(time.perf_counter() - t0)
        assert np.isfinite(sim.traces).all()
        rows.append(dict(tool="diamondlab", algorithm=algorithm, version=diamondlab.__version__,
                         precision="float32", size=sim.size, nt=sim.nt, asked=spec,
                         courant=round(sim.params.courant, 4), times=times, threads_seen=_numba_threads()))
    return rows


def _numba_threads() -> int:
    import numba

    return numba.get_num_threads()


def gprmax_input(n: int, steps: int, folder: Path) -> Path:
    """gprMax's input file of the problem (cells to metres at ``SPACING``)."""
    s = scene(n)
    m = [f"{c * SPACING:.6g}" for c in (*s["box_lo"], *s["box_hi"])]
    src = " ".join(f"{(c + 0.5) * SPACING:.6g}" if i == 2 else f"{c * SPACING:.6g}"
                   for i, c in enumerate(s["source"]))
    rx = " ".join(f"{(c + 0.5) * SPACING:.6g}" if i == 2 else f"{c * SPACING:.6g}"
                  for i, c in enumerate(s["probe"]))
    f_hz = FREQUENCY * 299792458.0 / SPACING
    text = "\n".join([
        "#title: diamondlab peers benchmark",
        f"#domain: {n * SPACING:.6g} {n * SPACING:.6g} {n * SPACING:.6g}",
        f"#dx_dy_dz: {SPACING} {SPACING} {SPACING}",
        f"#time_window: {steps}",
        "#pml_cells: 0",
        f"#material: {EPS_BOX} 0 1 0 cube",
        f"#box: {' '.join(m)} cube",
        f"#waveform: gaussian 1 {f_hz:.6g} pulse",
        f"#hertzian_dipole: z {src} pulse",
        f"#rx: {rx}",
    ]) + "\n"
    path = folder / f"peers_{n}_{steps}.in"
    path.write_text(text)
    return path


def run_gprmax(n: int, steps: int, repeats: int, warmup_steps: int) -> list:
    import gprMax
    import gprMax.config as config
    import gprMax.solvers as solvers

    solve_times = []
    original = solvers.Solver.solve

    def timed(self, iterator):
        original(self, iterator)
        solve_times.append(float(self.solvetime))

    solvers.Solver.solve = timed
    with tempfile.TemporaryDirectory() as tmp:
        warm = gprmax_input(n, warmup_steps, Path(tmp))
        gprMax.run(inputfile=str(warm), log_level=30, cpu_precision="single")
        path = gprmax_input(n, steps, Path(tmp))
        walls = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            gprMax.run(inputfile=str(path), log_level=30, cpu_precision="single")
            walls.append(time.perf_counter() - t0)
    dtype = str(config.sim_config.dtypes["float_or_double"].__name__) if config.sim_config else "?"
    threads = int(os.environ.get("OMP_NUM_THREADS", "0"))
    return [dict(tool="gprMax", algorithm="OpenMP (Cython)", version=gprMax.__version__, precision=dtype,
                 times=solve_times[1:], wall_with_build=walls, threads_seen=threads)]


def fdtd_grid(n: int, courant=None):
    import fdtd

    fdtd.set_backend("numpy")
    s = scene(n)
    grid = fdtd.Grid((n, n, n), grid_spacing=SPACING, courant_number=courant)
    lo, hi = s["box_lo"], s["box_hi"]
    grid[lo[0]:hi[0], lo[1]:hi[1], lo[2]:hi[2]] = fdtd.Object(permittivity=EPS_BOX, name="cube")
    return grid


class SampledSource:
    """A soft source for ``fdtd``: adds ``samples[q]`` to ``Ez`` at ``cell`` after the ``E`` update of step q
    (diamondlab's dipole: ``-cb J`` at the half step), and records ``Ez`` at ``probe`` after each step."""

    def __init__(self, grid, cell, samples, probe=None):
        self.grid, self.cell, self.samples, self.probe, self.trace = grid, cell, samples, probe, []

    def update_E(self):  # noqa: N802 - fdtd's name
        q = self.grid.time_steps_passed
        if q < len(self.samples):
            self.grid.E[(*self.cell, 2)] += self.samples[q]

    def update_H(self):  # noqa: N802 - fdtd's name
        if self.probe is not None:
            self.trace.append(float(self.grid.E[(*self.probe, 2)]))


def run_fdtd(n: int, steps: int, repeats: int, warmup_steps: int) -> list:
    import math

    import fdtd
    import numpy as np

    grid = fdtd_grid(n)
    t = np.arange(steps + warmup_steps) * grid.courant_number  # time in h / c
    width = 1 / (2 * math.pi * FREQUENCY / 2)
    pulse = np.sin(2 * math.pi * FREQUENCY * (t - 5 * width)) * np.exp(-((t - 5 * width) / width) ** 2 / 2)
    grid.sources.append(SampledSource(grid, scene(n)["source"], pulse, scene(n)["probe"]))
    grid.run(warmup_steps, progress_bar=False)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        grid.run(steps, progress_bar=False)
        times.append(time.perf_counter() - t0)
    assert np.isfinite(grid.E).all()
    return [dict(tool="fdtd", algorithm="numpy (vectorised)", version=fdtd.__version__,
                 precision=str(grid.E.dtype), courant=round(grid.courant_number, 4), times=times,
                 threads_seen=1)]


def worker(args) -> None:
    n, steps, repeats = args.shape, args.steps, args.repeats
    warm = min(steps, 16)
    if args.worker == "diamondlab":
        rows = run_diamondlab(n, steps, repeats, args.algorithms)
    elif args.worker == "gprmax":
        rows = run_gprmax(n, steps, repeats, warm)
    else:
        rows = run_fdtd(n, steps, repeats, warm)
    for row in rows:
        row["mcells_per_s"] = n**3 * steps / statistics.median(row["times"]) / 1e6
    print("ROWS " + json.dumps(rows), flush=True)


# ------------------------------------------------------------------------------------------ the check
def check(args) -> dict:
    """The probe trace of one dipole in vacuum, diamondlab against fdtd, the same samples injected."""
    import numpy as np

    n, steps, courant = args.check_shape, args.check_steps, 0.5
    with tempfile.TemporaryDirectory() as tmp:
        code = f"""
import numpy as np
from diamondlab import Simulation
from diamondlab.maxwell import Dipole, GaussianPulse, Probe
n, c = {n}, {n} // 2
sim = Simulation((n, n, n), 2, equation="maxwell", backend="cpu", courant={courant},
                 sources=[Dipole((c, c, c), "Ez", GaussianPulse({2 * FREQUENCY}, {FREQUENCY}))],
                 probes=[Probe((c + 6, c, c), "Ez"), Probe((c, c + 6, c), "Ez"),
                         Probe((c + 4, c + 3, c + 2), "Ez")])
sim.run({steps})
samples = sim.physics.source_samples(0, {steps}, sim.params.dt)[0]
np.savez(r"{tmp}/dl.npz", traces=sim.traces, samples=samples, dt=sim.params.dt)
"""
        subprocess.run([sys.executable, "-c", code], check=True, env=_env(1))
        code = f"""
import sys, numpy as np
sys.path.insert(0, r"{Path(__file__).parent}")
peers = __import__("maxwell-peers")
import fdtd
fdtd.set_backend("numpy")
n, c = {n}, {n} // 2
d = np.load(r"{tmp}/dl.npz")
grid = fdtd.Grid((n, n, n), grid_spacing={SPACING}, courant_number={courant})
probes = [(c + 6, c, c), (c, c + 6, c), (c + 4, c + 3, c + 2)]
srcs = [peers.SampledSource(grid, (c, c, c), d["samples"].astype(np.float64), probes[0])]
srcs += [peers.SampledSource(grid, (c, c, c), [], p) for p in probes[1:]]
grid.sources.extend(srcs)
grid.run({steps}, progress_bar=False)
np.save(r"{tmp}/fd.npy", np.array([s.trace for s in srcs]).T)
"""
        subprocess.run([args.peers_python, "-c", code], check=True, env=_env(1))
        dl = np.load(f"{tmp}/dl.npz")["traces"].astype(np.float64)
        fd = np.load(f"{tmp}/fd.npy")
    scale = np.abs(fd).max(axis=0)
    diff = np.abs(dl - fd).max(axis=0) / scale
    # before the first echo of the perfect-conductor faces can reach a probe: the nearest image source is
    # about n - 6 cells from the probes (light speed, c dt = courant cells a step; 6 cells kept spare)
    quiet = int((n - 12) / courant)
    early = np.abs(dl[:quiet] - fd[:quiet]).max(axis=0) / scale
    return dict(check="probe Ez traces, diamondlab (float32) against fdtd (float64), same Yee scheme and "
                "source samples, courant 0.5, PEC faces", shape=[n] * 3, steps=steps,
                max_rel_diff=diff.tolist(), max_rel_diff_before_echo=early.tolist(), steps_before_echo=quiet,
                correlation=[float(np.corrcoef(dl[:, i], fd[:, i])[0, 1]) for i in range(dl.shape[1])])


# ---------------------------------------------------------------------------------------- the driver
def _env(threads: int) -> dict:
    env = dict(os.environ)
    env.update(OMP_NUM_THREADS=str(threads), NUMBA_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS="1",
               MKL_NUM_THREADS="1")
    return env


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", type=int, nargs="+", default=[128, 200])
    ap.add_argument("--steps", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, nargs="+", default=[os.cpu_count() or 1])
    ap.add_argument("--tools", nargs="+", default=["diamondlab", "gprmax", "fdtd"],
                    choices=["diamondlab", "gprmax", "fdtd"])
    ap.add_argument("--algorithms", nargs="+", default=["stepwise", "diamondtorre"],
                    help="stepwise, diamondtorre (the default tiling for the threads) or diamondtorre:DTS:NT")
    ap.add_argument("--peers-python", default=PEERS_PYTHON)
    ap.add_argument("--out", default=None, help="also append the JSON lines to this file")
    ap.add_argument("--check", action="store_true", help="only the probe-trace check against fdtd")
    ap.add_argument("--check-shape", type=int, default=64)
    ap.add_argument("--check-steps", type=int, default=200)
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--shape", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args)
    out = open(args.out, "a") if args.out else None  # noqa: SIM115 - closed below

    def emit(row: dict) -> None:
        line = json.dumps(row)
        print(line, flush=True)
        if out:
            out.write(line + "\n")
            out.flush()

    machine = dict(cpu=_cpu(), cores=os.cpu_count(), python=platform.python_version(),
                   date=time.strftime("%F"))
    if args.check:
        emit({**check(args), **machine})
        return None
    for n in args.shapes:
        for threads in args.threads:
            for tool in args.tools:
                python = sys.executable if tool == "diamondlab" else args.peers_python
                cmd = [python, __file__, "--worker", tool, "--shape", str(n), "--steps", str(args.steps),
                       "--repeats", str(args.repeats), "--algorithms", *args.algorithms]
                load = os.getloadavg()
                t0 = time.perf_counter()
                done = subprocess.run(cmd, env=_env(threads), capture_output=True, text=True)
                if done.returncode:
                    emit(dict(tool=tool, shape=[n] * 3, threads=threads, error=done.stderr[-2000:]))
                    continue
                rows = json.loads(next(x for x in done.stdout.splitlines() if x.startswith("ROWS "))[5:])
                for row in rows:
                    emit(dict(shape=[n] * 3, steps=args.steps, threads=threads, order=2, **row,
                              load_before=[round(x, 2) for x in load],
                              load_after=[round(x, 2) for x in os.getloadavg()],
                              process_seconds=round(time.perf_counter() - t0, 1), **machine))
    return None


if __name__ == "__main__":
    main()
