"""Maxwell through a calculation window and by MPI rows on the CUDA backend, under Numba's CUDA simulator.

A script, not a test module: ``tests/engine/test_maxwell_scale.py`` runs it in a subprocess with
``NUMBA_ENABLE_CUDASIM=1``.  Per case, a run whose state (``E``, ``H``, the Drude current, ``psi``)
streams window by window through the (simulated) GPU equals the in-memory GPU run bit for bit; and the
x rows an MPI rank sends (:meth:`~diamondlab.engine.backends.yee_cuda.YeeCUDABackend.get_rows`: copied as
they lie on the device) land where they came from.  Prints one line per case; exits non-zero on a mismatch.
"""

from __future__ import annotations

import os
import sys

SHAPE = (14, 9, 8)
#: (order, Nt, window, steps, plane wave): windows of Nt order ghost rows a side (CPML, Drude sphere and a
#: dipole; or a TFSF plane wave)
CASES = [(2, 1, 7, 4, False), (4, 1, 9, 3, True)]


def landed(source, target, lo, hi, what) -> None:
    """Exit unless ``target``'s state equals ``source``'s in x rows ``[lo, hi)`` and is zero elsewhere."""
    import numpy as np

    from diamondlab.engine.scale.subdomain import rows_index

    for a, got, want in zip(source.state_layout(), target.state(), source.state(), strict=True):
        index = rows_index(a, 0, lo, hi)
        mask = np.zeros(a.shape, dtype=bool)
        if index is not None:
            mask[index] = True
        if not (np.array_equal(got[mask], want[mask]) and not got[~mask].any()):
            raise SystemExit(f"{what}: x rows {lo}..{hi} of {a.name} did not land where they were")


def run_case(order, nt, window, steps, wave) -> str:
    import numpy as np

    from diamondlab import Simulation
    from diamondlab.maxwell import (
        ContinuousWave,
        DFTPlane,
        Dipole,
        Drude,
        FluxPlane,
        PlaneWave,
        Probe,
        Ricker,
        Sphere,
    )

    pml = 2
    scene = dict(materials=[Sphere((7, 4, 4), 1.5, Drude(1.0, 1.0, 0.1))],
                 sources=[Dipole((4, 4, 4), "Ez", Ricker(0.2), amplitude=100.0)],
                 probes=[Probe((8, 4, 4), "Ez"), Probe((11, 5, 3), "Hy")], pml=pml,
                 # across the windows' edges, and one that only the first window holds
                 monitors=[DFTPlane("z", 4, [0.1, 0.2], ("Ez", "Hx")), FluxPlane("x", 3, [0.1])])
    if wave:  # the largest box the grid allows, no CPML, no objects near its faces
        edge = order // 2 + 1
        box = ((edge,) * 3, tuple(n - 1 - edge for n in SHAPE))
        scene.update(materials=[], pml=0,
                     sources=[PlaneWave("+x", "z", ContinuousWave(0.2, ramp=0), box, 100.0)])
    rng = np.random.default_rng(order)
    start = [rng.standard_normal((3, *SHAPE)).astype(np.float32) for _ in range(2)]
    sims = [Simulation(SHAPE, order, equation="maxwell", size=1, nt=nt, backend="cuda", window=w,
                       algorithm="stepwise", **scene)  # window by window (a DiamondTorre window streams)
            for w in (window, None)]
    for sim in sims:
        sim.reset(start)
        sim.run(steps)
    windowed, whole = sims
    if len(windowed.backend.chunks) < 2:
        raise SystemExit(f"order {order}: one window only")
    got = [*windowed.fields, windowed.traces, *windowed.backend.dft_sums()]
    for a, b in zip(got, [*whole.fields, whole.traces, *whole.backend.dft_sums()], strict=True):
        if not np.array_equal(a, b):
            raise SystemExit(f"order {order}: the window run differs from the in-memory run")
    if not (np.abs(whole.traces).max() > 0 and (wave or np.abs(windowed.backend.state()[3]).max() > 0)):
        raise SystemExit(f"order {order}: nothing reached the probes or the CPML")
    # the rows an MPI rank sends: x rows of every state array, from one backend into a fresh one, through
    # the host (get_rows, set_rows) and device to device (pack_rows, unpack_rows: the GPU-to-GPU halo)
    from numba import cuda

    source = whole.backend
    lo, hi = 1, 5  # rows of the low CPML layer and beyond it
    sent = source.get_rows(lo, hi)
    if source.rows_size(lo, hi) != sent.size:
        raise SystemExit(f"order {order}: rows_size is not the size of get_rows")
    packed = cuda.device_array(sent.size, np.float32)
    source.pack_rows(lo, hi, packed)
    if not np.array_equal(packed.copy_to_host(), sent):
        raise SystemExit(f"order {order}: pack_rows differs from get_rows")
    for how in ("host", "device"):
        target = Simulation(SHAPE, order, equation="maxwell", size=1, nt=nt, backend="cuda", **scene).backend
        if how == "host":
            target.set_rows(lo, hi, sent)
        else:
            target.unpack_rows(lo, hi, packed)
        landed(source, target, lo, hi, f"order {order}, {how}")
    return f"order {order} Nt {nt} window {window}{' plane wave' if wave else ''}: ok"


#: (order, Nt, window, shape, Drude sphere, CPML and points, state in files): media (a PEC box, a Drude
#: sphere whose current streams with the fields), or a CPML (psi_x whole on the device, psi_y and psi_z
#: streamed) with a dipole, probes and monitors (their tables whole on the device), through a ring of
#: ``window`` x rows on the (simulated) GPU
STREAMED_CASES = [(2, 2, 14, (16, 4, 3), False, True, True), (4, 1, 21, (22, 4, 2), True, False, False)]


def run_streamed_case(order, nt, window, shape, drude, physics, in_files) -> str:
    """A scene's sweeps streamed through a ring (rows outside it NaN to the kernels) equal the in-memory GPU
    run bit for bit (the state, the probes' traces, the monitors' sums), over two ``run`` calls (sweeps of
    two heights)."""
    import tempfile

    import numpy as np

    from diamondlab import Simulation
    from diamondlab.maxwell import PEC, Box, DFTPlane, Dipole, Drude, FluxPlane, Probe, Ricker, Sphere

    nx = shape[0]
    scene = {"materials": [Box((5, 1, 1), (7, 2, 2), PEC)]}
    if drude:
        scene["materials"].append(Sphere((nx - 8, 2, 1), 1.5, Drude(1.0, 1.0, 0.1)))
    if physics:  # the dipole and a probe where the first groups run, the other probe and the monitors later
        scene.update(pml=1, sources=[Dipole((nx - 5, 2, 1), "Ez", Ricker(0.2), amplitude=100.0)],
                     probes=[Probe((8, 2, 1), "Ez"), Probe((nx - 3, 1, 1), "Hy")],
                     monitors=[DFTPlane("z", 1, [0.1, 0.2], ("Ez", "Hx")), FluxPlane("x", 3, [0.1])])
    rng = np.random.default_rng(order)
    start = [rng.standard_normal((3, *shape)).astype(np.float32) for _ in range(2)]
    folder = tempfile.mkdtemp() if in_files else None
    runs = []
    for w in (window, None):
        sim = Simulation(shape, order, equation="maxwell", size=1, nt=nt, backend="cuda", window=w,
                         algorithm="diamondtorre", window_dir=folder if w else None, **scene)
        sim.reset(start)
        sim.run(nt)
        sim.run(1)  # a run that goes on, with a sweep of another height
        runs.append((sim.backend, [*sim.backend.state(), sim.traces, *sim.backend.dft_sums()]))
    (streamed, got), (_, want) = runs
    name = type(streamed).__name__
    groups = streamed.traffic()["groups"]
    moves = sum(g.move is not None for g in streamed._plans[nt])
    if name != "StreamedYeeCUDABackend" or groups < 2 or not moves:
        raise SystemExit(f"order {order}: {name} in {groups} groups, {moves} moves: not a streamed sweep")
    if len(got) != 6 + drude + 2 * physics or not all(np.array_equal(a, b) for a, b in zip(got, want,
                                                                                              strict=True)):
        raise SystemExit(f"order {order}: the streamed window run differs from the in-memory run")
    ran = np.isfinite(got[0]).all() and np.abs(got[0]).max() > 0
    damped = all(np.abs(p).max() > 0 for p in got[2 + drude:5 + drude])
    if not (ran and (not drude or np.abs(got[2]).max() > 0) and (not physics or damped)):
        raise SystemExit(f"order {order}: nothing ran, or nothing reached the Drude sphere or the CPML")
    if physics and not (np.abs(got[5]).max() > 0 and all(np.abs(a).max() > 0 for a in got[6:])):
        raise SystemExit(f"order {order}: nothing reached the probes or the monitors")
    moved = streamed.bytes_per_sweep() / np.prod(shape)  # E, H (and J) in and out, with their y and z halo
    if not moved >= 48 + 24 * drude:
        raise SystemExit(f"order {order}: {moved} bytes a cell a sweep")
    if in_files and os.listdir(folder):
        raise SystemExit(f"order {order}: files left in the window's folder")
    said = ((" Drude", drude), (" CPML, points", physics), (" in files", in_files))
    what = "".join(w for w, on in said if on)
    return f"streamed order {order} Nt {nt} window {window}{what} ({groups} groups, {moved:.0f} B a cell): ok"


if __name__ == "__main__":
    import warnings

    warnings.simplefilter("ignore")
    streamed = sys.argv[1:] == ["streamed"]
    for case in STREAMED_CASES if streamed else CASES:
        print((run_streamed_case if streamed else run_case)(*case), flush=True)
    sys.exit(0)
