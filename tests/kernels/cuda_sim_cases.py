"""Run the CUDA kernels under Numba's CUDA simulator on tiny grids (a script, not a test module).

``tests/kernels/test_cuda.py`` runs this file in a subprocess with
``NUMBA_ENABLE_CUDASIM=1`` (the main pytest process must stay out of
simulator mode).  For every (NO, DTS) case it checks, through
:class:`~diamondlab.engine.backends.cuda.CUDABackend`, that DiamondTorre
sweeps equal stepwise steps bit for bit, and that both match the CPU backend
to float32 rounding.  It prints one line per case and exits non-zero on the
first mismatch.  Importing it does nothing.
"""

from __future__ import annotations

import contextlib
import os
import sys

#: (NO, DTS, Nt, shape, sweep heights): every built pair, interior and boundary torres,
#: odd and even heights, several sweeps in a row.
CASES = [
    (2, 1, 3, (7, 6, 5), (3, 2)),
    (2, 2, 4, (12, 10, 5), (4, 3)),
    (2, 3, 3, (13, 11, 4), (3,)),
    (2, 4, 2, (11, 10, 3), (2, 1)),
    (4, 1, 2, (12, 10, 4), (2, 1)),
    (4, 2, 2, (12, 10, 3), (2,)),
    (6, 1, 2, (14, 12, 3), (2,)),
    (8, 1, 2, (18, 15, 3), (2,)),
    (2, 2, 3, (12, 9, 5), (3, 1), True, True),
    (4, 2, 3, (14, 13, 3), (3, 2), True, True),
    (6, 1, 3, (14, 12, 3), (3,), False, True),
    (2, 2, 4, (13, 11, 4), (4, 3, 4), False, False, True),  # tier-level waits
    (4, 2, 3, (14, 13, 3), (3, 1), True, False, True),
    (2, 1, 3, (11, 13, 3), (3, 2), False, False, True, 2),  # tier-level waits, diagonal bands of 2
    (4, 1, 5, (14, 15, 3), (5, 3), False, False, True, 2, 2),  # ... waiting every second tier
    (6, 2, 3, (32, 24, 3), (3, 2)),  # level n-1 in shared memory, z exchanged in 4 segments
    (6, 2, 3, (32, 24, 4), (3, 1), True, False, True, 2, 2),
    # a tall column (over 4 cells here): NO=8 keeps level n-1 in shared memory (TALL_COLUMN_SEGMENTS)
    (8, 1, 2, (18, 15, 5), (2, 1), True, False, None, None, None, 4),
]


@contextlib.contextmanager
def tall_columns_from(nz):
    """The tuning's ``full_register_nz`` made ``nz`` (None: as it is), so that a tiny grid's column is a tall
    one (:func:`diamondlab.kernels.cuda.sweep_segments`)."""
    import dataclasses

    from diamondlab.kernels import cuda as kernels

    if nz is None:
        yield
        return
    tuning = kernels.cuda_tuning
    kernels.cuda_tuning = lambda gpu: dataclasses.replace(tuning(gpu), full_register_nz=nz)
    try:
        yield
    finally:
        kernels.cuda_tuning = tuning


def run_case(order, size, nt, shape, heights, specialize=False, left_from_memory=False,
             pipelined=None, band=None, chunk=None, tall_from=None) -> str:
    with tall_columns_from(tall_from):
        return _run_case(order, size, nt, shape, heights, specialize, left_from_memory, pipelined, band,
                         chunk)


def _run_case(order, size, nt, shape, heights, specialize, left_from_memory, pipelined, band, chunk) -> str:
    import numpy as np

    from diamondlab.engine.backends.cpu import CPUBackend
    from diamondlab.engine.backends.cuda import CUDABackend
    from diamondlab.numerics import WaveParameters

    params = WaveParameters(order=order)
    rng = np.random.default_rng(order * 10 + size)
    prev = rng.standard_normal(shape).astype(np.float32)
    curr = rng.standard_normal(shape).astype(np.float32)
    nsteps = sum(heights)
    dt = CUDABackend(params, shape, size, nt, specialize=specialize,
                     left_from_memory=left_from_memory, pipelined=pipelined, band=band,
                     chunk=chunk)
    dt.compile()
    dt.set_fields(prev, curr)
    for h in heights:
        dt.sweep(h)
    sw = CUDABackend(params, shape, size, nt)
    sw.set_fields(prev, curr)
    sw.step(nsteps)
    cpu = CPUBackend(params, shape, size, nt)
    cpu.set_fields(prev, curr)
    cpu.step(nsteps)
    a, b, c = dt.fields(), sw.fields(), cpu.fields()
    for name, x, y in (("prev", a[0], b[0]), ("curr", a[1], b[1])):
        if not np.array_equal(x, y):
            raise AssertionError(
                f"NO={order} DTS={size}: DiamondTorre != stepwise in {name}: max diff {np.abs(x - y).max()}"
            )
    rel = max(float(np.abs(x - y).max() / np.abs(y).max()) for x, y in zip(b, c, strict=True))
    if rel > 1e-5:
        raise AssertionError(f"NO={order} DTS={size}: CUDA vs CPU max relative diff {rel}")
    return (f"ok NO={order} DTS={size} Nt={nt} shape={shape} heights={heights} "
            f"specialized={specialize} left_from_memory={left_from_memory} pipelined={dt.pipelined} "
            f"band={dt.band} chunk={dt.chunk} segments={dt.segments} cpu_rel={rel:.1e}")


#: (NO, DTS, Nt, shape, sweep heights) run with a velocity model, a sponge, sources and receivers.
PHYSICS_CASES = [
    (2, 2, 3, (13, 11, 5), (3, 2)),
    # one K everywhere: the sponge-only kernel, its boundary torres' x and y damping factors loaded at use
    (4, 1, 2, (12, 11, 4), (2, 1), "sponge", True, None, None, None, "sweep", None, "at_use"),
    (8, 1, 2, (18, 16, 3), (2,)),
    (2, 1, 3, (9, 8, 4), (3, 1), None, True),  # points only (constant K, no sponge)
    (2, 1, 2, (8, 9, 4), (2, 1), "model", False),  # medium only
    # tier waits; the z exchange waiting for the neighbouring warps (named barriers: the block's here)
    (2, 2, 3, (13, 12, 4), (3, 2), "sponge", True, True, None, None, "sweep", None, "x_at_use", None,
     "neighbours"),
    # diagonal bands of 3, chunks of 2; the next tier's level n and K prefetched (each element checked)
    (2, 1, 3, (15, 13, 4), (3, 2), "model", True, True, 3, 2, "sweep", None, None, None, None, 1),
    (6, 2, 2, (30, 23, 3), (2, 1), "model", True, True, 2, 1),  # level n-1 in shared memory
    (2, 1, 3, (11, 10, 4), (3, 2), "model", True, False, None, None, "per-stage"),  # a launch per stage
    (2, 2, 3, (13, 11, 5), (3, 2), "layered"),  # K per depth (== the per-cell model kernel, bit for bit)
    (2, 1, 2, (14, 12, 4), (2, 1), "sponge", False),  # calm torres: interior, no x or y damping
    # K kept in registers; level n two tiers ahead prefetched
    (4, 1, 3, (12, 11, 4), (3, 1), "model", True, None, None, None, "sweep", True, None, None, None, 2),
    (6, 1, 2, (16, 14, 3), (2, 1), "model", False, None, None, None, "sweep", True),  # rows narrower than ShS
    (8, 1, 2, (18, 16, 5), (2, 1), "sponge", True, None, None, None, "sweep", None, None, 4),  # a tall column
]


def physics_inputs(shape, params, seed):
    """A random velocity model and sponge, sources (two in one cell) and receivers (one on a source)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    nx, ny, nz = shape
    kappa = (params.courant**2 * rng.uniform(0.4, 1.0, shape)).astype(np.float32)
    damp = np.zeros(shape, np.float32)
    damp[:2] = damp[-2:] = 0.05
    damp[:, :2] = 0.08
    damp[:, :, :1] = np.maximum(damp[:, :, :1], 0.03)  # a z face too: calm torres damp by their z factors
    sources = [(1, 2, 1), (nx // 2, ny // 2, nz // 2), (nx // 2, ny // 2, nz // 2), (nx - 1, ny - 2, nz - 1)]
    receivers = [(nx // 2, ny // 2, nz // 2), (2, ny - 1, 0), (nx - 3, 1, nz - 1)]
    return kappa, damp, sources, receivers, rng


def run_physics_case(order, size, nt, shape, heights, medium="model", points=True, pipelined=None,
                     band=None, chunk=None, launch="sweep", kappa_in_registers=None,
                     boundary_profiles=None, tall_from=None, exchange_barrier=None, prefetch=None) -> str:
    """With K per cell, a sponge, sources and receivers: DT == stepwise bit for bit, == CPU to rounding.

    ``medium="layered"``: K per depth on the GPU and the CPU, the stepwise reference given the same K
    per cell (the model kernel), so the layered kernels equal the model kernels bit for bit.
    """
    import numpy as np

    from diamondlab.engine.backends.cpu import CPUBackend
    from diamondlab.engine.backends.cuda import CUDABackend
    from diamondlab.numerics import WaveParameters

    params = WaveParameters(order=order)
    kappa, damp, sources, receivers, rng = physics_inputs(shape, params, order + size)
    prev = rng.standard_normal(shape).astype(np.float32)
    curr = rng.standard_normal(shape).astype(np.float32)
    options = {"pipelined": pipelined, "band": band, "chunk": chunk, "launch": launch,
               "kappa_in_registers": kappa_in_registers, "boundary_profiles": boundary_profiles,
               "exchange_barrier": exchange_barrier, "prefetch": prefetch}
    with tall_columns_from(tall_from):
        backends = [CUDABackend(params, shape, size, nt, **options),
                    CUDABackend(params, shape, size, nt), CPUBackend(params, shape, size, nt)]
    if not points:
        sources, receivers = [], []
    from diamondlab.media import Medium, damping_profiles

    values = [None] * 3
    if medium == "layered":
        profile = kappa[0, 0]
        values = [Medium(k, damping_profiles(damp), shape)
                  for k in (profile, np.broadcast_to(profile, shape), profile)]
    elif medium:
        k = kappa if medium == "model" else params.courant**2
        values = [Medium(k, damping_profiles(damp), shape)] * 3
    for b, value in zip(backends, values, strict=True):
        b.set_physics(value, sources, receivers)
        b.set_fields(prev, curr)
    with tall_columns_from(tall_from):  # the kernel module is built on first use
        backends[0].compile()
    traces = [[], [], []]
    for h in heights:  # DiamondTorre's traces are taken once, after all its sweeps are queued
        samples = rng.standard_normal((max(len(sources), 1), h)).astype(np.float32)
        backends[0].sweep(h, samples)
        backends[1].step(h, samples)
        backends[2].step(h, samples)
        traces[1].append(backends[1].take_traces())
        traces[2].append(backends[2].take_traces())
    traces[0].append(backends[0].take_traces())
    (dt, sw, cpu) = ([*b.fields(), np.concatenate(t)] for b, t in zip(backends, traces, strict=True))
    for name, x, y in zip(("prev", "curr", "receivers"), dt, sw, strict=True):
        if not np.array_equal(x, y):
            raise AssertionError(f"NO={order} DTS={size} physics: DiamondTorre != stepwise in {name}: "
                                 f"max diff {np.abs(x - y).max()}")
    rows = sum(heights) if receivers else 0
    if dt[2].shape != (rows, len(receivers)) or (receivers and not np.abs(dt[2]).max() > 0):
        raise AssertionError(f"NO={order} DTS={size} physics: receiver values {dt[2].shape} look empty")
    rel = max(float(np.abs(x - y).max() / np.abs(y).max()) for x, y in zip(sw, cpu, strict=True) if y.size)
    if rel > 1e-5:
        raise AssertionError(f"NO={order} DTS={size} physics: CUDA vs CPU max relative diff {rel}")
    return (f"ok physics NO={order} DTS={size} Nt={nt} shape={shape} heights={heights} medium={medium} "
            f"points={points} pipelined={backends[0].pipelined} band={backends[0].band} "
            f"chunk={backends[0].chunk} launch={backends[0].launch} "
            f"kappa_in_registers={backends[0].kappa_in_registers} "
            f"boundary_profiles={backends[0].boundary_profiles} segments={backends[0].segments} "
            f"exchange_barrier={backends[0].exchange_barrier} prefetch={backends[0].prefetch} "
            f"cpu_rel={rel:.1e}")


def run_simulation() -> str:
    """``Simulation(backend='cuda')`` (DiamondTorre) against ``backend='cpu'`` (stepwise)."""
    import numpy as np

    from diamondlab import Simulation

    out = []
    runs = (("cuda", "diamondtorre", None), ("cpu", "stepwise", None),
            ("cuda", "diamondtorre", {"pipelined": True, "band": 1, "chunk": 2}))
    for backend, algorithm, options in runs:
        sim = Simulation((12, 10, 6), order=2, size=2, nt=3, backend=backend, algorithm=algorithm,
                         backend_options=options)
        sim.run(7)
        out.append(sim.field)
        if options and (sim.backend.pipelined, sim.backend.band, sim.backend.chunk) != (True, 1, 2):
            raise AssertionError("Simulation did not hand backend_options to the CUDA backend")
        if backend == "cuda" and not options:  # the live view's planes, gathered on the device
            u = sim.field
            for index, strides in (((5, 7, 3), (2, 3, 4)), ((11, 0, 5), (1, 1, 1))):
                (ix, iy, iz), (sx, sy, sz) = index, strides
                want = (u[ix % sx::sx, iy % sy::sy, iz], u[ix % sx::sx, iy, iz % sz::sz],
                        u[ix, iy % sy::sy, iz % sz::sz])
                got = sim.current_planes(index, strides)
                if not all(np.array_equal(a, b) for a, b in zip(got, want, strict=True)):
                    raise AssertionError(f"current_planes{index, strides} on the GPU != slices of the field")
    rel = float(np.abs(out[0] - out[1]).max() / np.abs(out[1]).max())
    if rel > 1e-5:
        raise AssertionError(f"Simulation(backend='cuda') vs cpu: max relative diff {rel}")
    try:  # options given by hand that the GPU cannot take are an error, not a quiet move to the CPU
        Simulation((12, 10, 6), order=2, size=2, nt=1, backend="auto",
                   backend_options={"pipelined": True, "chunk": 2})
    except ValueError as err:
        if "chunk must be an int in 1..nt=1" not in str(err):
            raise
    else:
        raise AssertionError("backend='auto' with impossible backend_options did not raise")
    if not np.array_equal(out[0], out[2]):
        raise AssertionError("Simulation(backend='cuda'): pipelined backend_options changed the result")
    # sources, receivers, a layered model and the default sponge run on the (simulated) GPU
    from diamondlab.kernels import cuda as kernels
    from diamondlab.media import anomaly_model, layered_model
    from diamondlab.sources import Receiver, Source

    selected, select = [], kernels.cuda_kernels
    kernels.cuda_kernels = lambda *a, **k: selected.append(k) or select(*a, **k)
    runs = []
    for backend in ("auto", "cpu"):
        sim = Simulation((14, 12, 12), order=2, size=2, nt=3, backend=backend, initial="zero",
                         velocity=layered_model((14, 12, 12), (1.0, 1.5)), sponge=3,
                         sources=[Source((6.5, 5.2, 4.0), frequency=0.05)],
                         receivers=[Receiver((3.0, 4.0, 7.5)), Receiver((6, 5, 4))])
        sim.run(8)
        runs.append((sim.backend_name, sim.field, sim.traces))
    kernels.cuda_kernels = select
    if len(selected) != 1 or (selected[0]["medium"], selected[0]["points"]) != ("layered", True):
        raise AssertionError(f"a layered model + sponge + points run selected kernel variants {selected}, "
                             "not one")
    if runs[0][0] != "cuda":
        raise AssertionError(f"backend='auto' with sources chose {runs[0][0]!r}, not the (simulated) GPU")
    prel = max(float(np.abs(a - b).max() / np.abs(b).max())
               for a, b in zip(runs[0][1:], runs[1][1:], strict=True))
    if prel > 1e-5:
        raise AssertionError(f"Simulation with physics: cuda vs cpu max relative diff {prel}")
    # more sweeps queued than the sample ring holds (a ring of 2 here: 5 sweeps wrap it twice), receiver rows
    # flushed every two sweeps
    from diamondlab.engine.backends.cuda import PointQueue

    PointQueue.RECEIVER_BYTES, PointQueue.RING, traces = 4 * 2 * 5, 2, []
    for backend in ("cuda", "cpu"):
        sim = Simulation((9, 8, 4), order=2, size=1, nt=2, backend=backend,
                         sources=[Source((4, 4, 2), frequency=0.1, delay=2.0, units="grid")],
                         receivers=[Receiver((5, 4, 2), units="grid"), Receiver((4, 3, 1), units="grid")])
        sim.run(3)
        sim.run(7)
        traces.append(sim.traces)
    PointQueue.RECEIVER_BYTES, PointQueue.RING = 16 * 2**20, 8
    qrel = float(np.abs(traces[0] - traces[1]).max() / np.abs(traces[1]).max())
    if traces[0].shape != (10, 2) or not np.abs(traces[1]).max() > 0 or not qrel <= 1e-5:
        raise AssertionError(f"queued receiver rows: shape {traces[0].shape}, cuda vs cpu {qrel}")
    # the calculation window on the (simulated) GPU: a sweep streamed through a ring of 10 of 20 x rows
    # (rows outside it NaN to the kernels), the fields in files (through pinned buffers), bit for bit the
    # in-memory run, with every kind of physics; no file remains
    import tempfile

    windowed, folder = [], tempfile.mkdtemp()
    for window in (10, None):
        shape = (20, 6, 5)
        sim = Simulation(shape, order=2, size=1, nt=2, backend="cuda", window=window, initial="gaussian",
                         window_dir=folder if window else None,
                         velocity=anomaly_model(shape, 1.5, 1.0), sponge=1,
                         sources=[Source((6, 3, 2), units="grid", frequency=0.1, delay=2.0)],
                         receivers=[Receiver((2, 3, 2), units="grid"), Receiver((15, 4, 1), units="grid")])
        sim.run(4)
        windowed.append((*sim.fields, sim.traces, type(sim.backend).__name__))
    same = all(np.array_equal(a, b) for a, b in zip(windowed[0][:3], windowed[1][:3], strict=True))
    if windowed[0][3] != "StreamedCUDABackend" or not same or not np.abs(windowed[1][2]).max() > 0:
        raise AssertionError(f"a streamed window run on the GPU ({windowed[0][3]}) != the in-memory GPU run")
    if os.listdir(folder):
        raise AssertionError(f"files left in the window's folder: {os.listdir(folder)}")
    return (f"ok Simulation backend='cuda' vs 'cpu' rel={rel:.1e}; "
            f"with physics on 'auto' (cuda) rel={prel:.1e}; 5 queued sweeps rel={qrel:.1e}; "
            "streamed through 10 of 20 rows, fields in files == in memory")


PARTS = ("bare", "physics", "simulation")


def main(argv: list[str]) -> int:
    """``[PART] [NO ...]``: one part (:data:`PARTS`; default: all three), the cases of those orders."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
        print("set NUMBA_ENABLE_CUDASIM=1 before running this script", file=sys.stderr)
        return 2
    parts = [argv.pop(0)] if argv and argv[0] in PARTS else list(PARTS)
    wanted = {int(a) for a in argv} or {c[0] for c in CASES}
    for case in CASES if "bare" in parts else ():
        if case[0] in wanted:
            print(run_case(*case), flush=True)
    for case in PHYSICS_CASES if "physics" in parts else ():
        if case[0] in wanted:
            print(run_physics_case(*case), flush=True)
    if "simulation" in parts and not argv:
        print(run_simulation(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
