"""The Maxwell CUDA kernels under Numba's CUDA simulator on tiny grids (a script, not a test module).

``tests/engine/test_maxwell_simulation.py`` runs this file in a subprocess with
``NUMBA_ENABLE_CUDASIM=1`` (the pytest process stays out of simulator mode).
Per case: DiamondTorre equals stepwise bit for bit on the (simulated) GPU,
with a Drude sphere, a PEC box, a CPML, a dipole and probes (or, in the
plane-wave cases, two TFSF plane waves: corrections on E and H components;
in the periodic case, y and z periodic, CPML on x, the sphere and the
dipole across the y face), and both agree with the CPU engine to float32
rounding; then the monitors' case (:func:`run_dft_case`): a DFT plane, a
flux plane and a flux box summed on the device equal bit for bit between
the GPU's two algorithms and the CPU's to float32 rounding; then a GPU run
saved and resumed equals the straight run bit for bit.  Prints one line per
case and exits non-zero on the first mismatch.
"""

from __future__ import annotations

import sys

#: (order, DTS, Nt, shape, pml, steps, plane waves[, periodic y and z])
CASES = [(2, 1, 2, (8, 7, 6), 2, 3, False), (4, 1, 2, (10, 9, 6), 2, 3, False),
         (2, 1, 2, (7, 7, 7), 0, 6, True), (4, 1, 2, (8, 8, 8), 0, 3, True),
         (4, 1, 2, (10, 8, 5), 2, 3, False, True)]


def run_case(order, size, nt, shape, pml, steps, waves=False, periodic=False, groups=False,
             split=True, z_only=False, periodic_y=False) -> str:
    import numpy as np

    from diamondlab import Simulation
    from diamondlab.engine.backends import planes_of
    from diamondlab.engine.backends.yee_cuda import YeeCUDABackend
    from diamondlab.maxwell import (
        CPML,
        PEC,
        Box,
        ContinuousWave,
        Dipole,
        Drude,
        PlaneWave,
        Probe,
        Ricker,
        Sphere,
    )

    c = tuple(n // 2 for n in shape)
    scene = dict(materials=[Sphere(c, 1.5, Drude(1.0, 1.0, 0.1)), Box((1, 1, 1), (2, 2, 2), PEC)],
                 sources=[Dipole((pml + 1, c[1], c[2]), "Ez", Ricker(0.2), amplitude=100.0)],
                 probes=[Probe(c, "Ez"), Probe((c[0] + 1, c[1], c[2]), "Hy")], pml=pml)
    if waves:  # the smallest box the grid allows (its corrections overlap), the wave on from the first step
        edge = order // 2 + 1
        box = ((edge,) * 3, tuple(n - 1 - edge for n in shape))
        scene.update(materials=[], sources=[PlaneWave("+x", "z", ContinuousWave(0.2, ramp=0), box, 100.0),
                                            PlaneWave("-z", "y", ContinuousWave(0.15, ramp=0), box, -50.0)])
    if periodic:  # the sphere and the dipole across the y face, the PEC box across the z face
        scene.update(materials=[Sphere((c[0], 0, c[2]), 1.5, Drude(1.0, 1.0, 0.1)),
                                Box((1, 1, 0), (2, 2, 1), PEC)],
                     sources=[Dipole((pml + 1, 0, c[2]), "Ez", Ricker(0.2), amplitude=100.0)],
                     probes=[Probe((c[0], shape[1] - 1, 0), "Ez"), Probe((c[0] + 1, 0, c[2]), "Hy")],
                     pml=CPML(pml, axes="x"), periodic="yz")
    if periodic_y:  # periodic y only, the CPML on x and z: the boxes between the z layers span y whole
        scene.update(periodic="y", pml=CPML(pml, axes="xz"))
    if z_only:  # the CPML on the z faces only (every column a box's), the sphere across the low z layer
        scene.update(materials=[Sphere((c[0], c[1], 1), 1.5, Drude(1.0, 1.0, 0.1))], pml=CPML(pml, axes="z"))
    rng = np.random.default_rng(order)
    start = [rng.standard_normal((3, *shape)).astype(np.float32) for _ in range(2)]
    runs = {}
    YeeCUDABackend.SAMPLE_RING = 2  # fewer buffers than sweeps (6 steps of Nt 2): the samples' ring wraps
    YeeCUDABackend.stepwise_groups = groups  # stepwise by column groups, the points after them
    YeeCUDABackend.split_z_layers = split  # the groups' columns split at the z layers, or whole
    for backend in ("cuda", "cpu"):
        for algorithm in ("stepwise", "diamondtorre"):
            sim = Simulation(shape, order, equation="maxwell", size=size, nt=nt, backend=backend,
                             algorithm=algorithm, **scene)
            sim.reset(start)  # every cell busy from the first step (the dipole's pulse comes later)
            sim.run(steps)
            b = sim.backend
            if backend == "cuda" and groups and split and pml and order == 4 and not (z_only or periodic):
                names = {name for _, name, *_ in b._stepwise}  # boxes without Drude: the 32-bit kernel,
                want = {"stepwise_box_yx", "stepwise_slabs"}  # but on a periodic y (no images written)
                lean = "stepwise_plain_box_yx"
                if not want <= names or (lean in names) == periodic_y:
                    raise SystemExit(f"order 4 split groups launched {sorted(names)}")
            extra = [b._d_j.copy_to_host(), *(p.copy_to_host() for p in b._d_psi)] if backend == "cuda" else [
                b._j, *b._psi]
            runs[backend, algorithm] = [*sim.fields, sim.traces.copy(), *extra]
            planes = b.planes((shape[0] - 2, 1, shape[2] // 2), (2, 3, 1))  # gathered on the device
            host = planes_of(b.current_view(), (shape[0] - 2, 1, shape[2] // 2), (2, 3, 1))
            if not all(np.array_equal(a, h) for a, h in zip(planes, host, strict=True)):
                raise SystemExit(f"order {order}: {backend} planes differ from the field's")
    if waves:  # the incident wave reached the box: corrections on H (and E) points were not all zero
        ph = sim.physics
        samples = ph.source_samples(0, steps, sim.params.dt)
        for on_h in (True, False):
            rows = sorted({p.row for p in ph.source_points.points if (p.component[0] == "H") == on_h})
            if not np.abs(samples[rows]).max() > 0:
                raise SystemExit(f"order {order}: the plane waves corrected no {'H' if on_h else 'E'} point")
    gpu_s, gpu_d = runs["cuda", "stepwise"], runs["cuda", "diamondtorre"]
    for a, b in zip(gpu_s, gpu_d, strict=True):
        if not np.array_equal(a, b):
            raise SystemExit(f"order {order}: GPU DiamondTorre differs from GPU stepwise")
    if not np.abs(gpu_s[0]).max() > 0:
        raise SystemExit(f"order {order}: nothing happened")
    for a, b in zip(gpu_s[:3], runs["cpu", "stepwise"][:3], strict=True):
        scale = max(float(np.abs(b).max()), 1e-30)
        if not np.allclose(a, b, rtol=1e-4, atol=1e-5 * scale):
            raise SystemExit(f"order {order}: GPU and CPU differ beyond float32 rounding")
    YeeCUDABackend.stepwise_groups, YeeCUDABackend.split_z_layers = None, True
    kind = " plane waves" if waves else " periodic y, z" if periodic else ""
    kind += " CPML on z, Drude in it" if z_only else ""
    kind += " periodic y, CPML on x and z" if periodic_y else ""
    kind += (", stepwise by column groups" + ("" if split else " (whole columns)")) if groups else ""
    return f"order {order} DTS {size} Nt {nt} {shape}{kind}: ok"


def register_case(order, size, nt, shape, steps=3, physics=False, prefetch=0, specialize=False) -> str:
    """A plain scene (a dielectric sphere, a PEC box; with ``physics`` a Drude sphere, a CPML, a dipole and
    a probe too): the sweep with its tile in registers, with interior and boundary torres, equals stepwise
    bit for bit (``prefetch``: its interior torres prefetch that many tiers ahead, each element checked to
    lie in its array; ``specialize``: the sweep compiled for the grid, its sizes constants)."""
    import numpy as np

    from diamondlab import Simulation
    from diamondlab.engine.backends.yee_cuda import YeeCUDABackend
    from diamondlab.kernels.yee_cuda_source import interior_torres
    from diamondlab.maxwell import CPML, PEC, Box, Dielectric, Dipole, Drude, Probe, Ricker, Sphere

    c = tuple(n // 2 for n in shape)
    scene = dict(materials=[Sphere(c, 2.5, Dielectric(4.0)), Box((1, 1, 1), (3, 2, 2), PEC)])
    YeeCUDABackend.prefetch = prefetch
    YeeCUDABackend.specialize_shape = specialize
    if physics:  # the register-tile sweep with the physics compiled in (off by default: slower there)
        YeeCUDABackend.registers_for_physics = True
        scene = dict(materials=[Sphere(c, 2.5, Drude(1.0, 1.0, 0.1)), Box((1, 1, 1), (3, 2, 2), PEC)],
                     pml=CPML(2, axes="xy"),
                     sources=[Dipole((c[0] - 3, c[1], 1), "Ez", Ricker(0.2), amplitude=100.0)],
                     probes=[Probe(c, "Ez"), Probe((c[0] + 1, c[1], 2), "Hy")])
    start = [np.random.default_rng(order + size).standard_normal((3, *shape)).astype(np.float32)
             for _ in range(2)]
    fields = {}
    for algorithm in ("stepwise", "diamondtorre"):
        sim = Simulation(shape, order, equation="maxwell", size=size, nt=nt, backend="cuda",
                         algorithm=algorithm, **scene)
        sim.reset(start)
        sim.run(steps)
        fields[algorithm] = [*sim.fields, sim.traces.copy()]
    b = sim.backend
    s = b.schedule(nt)
    inner = interior_torres(order, size, 2 * nt, s.torre_x0, s.torre_yc, shape[0], shape[1])
    if not (b.plain != physics and b.tile_in_registers and inner.any() and not inner.all()):
        raise SystemExit(f"register case {order, size, shape}: not the scene asked for, or not both kinds "
                         "of torre")
    grid = "_" + "x".join(map(str, shape)) + "_"
    if specialize and not any(grid in name for name in sys.modules if name.startswith("diamondlab_yee")):
        raise SystemExit(f"register case {order, size, shape}: the sweep was not compiled for the grid")
    if physics and not (np.abs(fields["stepwise"][2]).max() > 0 and b._features["drude"]):
        raise SystemExit(f"register case {order, size, shape}: the probes recorded nothing")
    if not all(np.array_equal(a, d) for a, d in zip(fields["stepwise"], fields["diamondtorre"], strict=True)):
        raise SystemExit(f"register case {order, size, shape}: DiamondTorre differs from stepwise")
    YeeCUDABackend.registers_for_physics = False
    YeeCUDABackend.prefetch = None
    YeeCUDABackend.specialize_shape = False
    kind = " with Drude, CPML, dipole, probes" if physics else ""
    return (f"order {order} DTS {size} {shape}{kind} tile in registers ({int(inner.sum())} interior "
            f"torres, prefetch {prefetch}{', compiled for the grid' if specialize else ''}): ok")


def lean_case(order, shape=(9, 7, 6), steps=3) -> str:
    """The stepwise kernels' variants equal the general kernel, x fastest, bit for bit (E, H and the probes'
    records): on a plain scene (a magnetic, conducting dielectric sphere, its surface cells averaged per
    component; a PEC box) the kernel with 32-bit offsets (``stepwise_plain``) and the general one, each with
    its blocks x or y fastest; on a physics scene (a Drude sphere, a CPML, a dipole, a probe) the general
    kernel y fastest.  The engine's defaults are checked too: on a plain scene y fastest, the 32-bit
    kernel at order 4 only; on a physics scene x fastest."""
    import numpy as np

    from diamondlab import Simulation
    from diamondlab.engine.backends.yee_cuda import YeeCUDABackend
    from diamondlab.maxwell import PEC, Box, Dielectric, Dipole, Drude, Probe, Ricker, Sphere

    c = tuple(n // 2 for n in shape)
    sphere = Sphere(c, 2.5, Dielectric(4.0, mu=2.0, sigma=0.3))
    plain = dict(materials=[sphere, Box((1, 1, 1), (3, 2, 2), PEC)])
    physics = dict(materials=[Sphere(c, 1.5, Drude(1.0, 1.0, 0.1))], pml=2, probes=[Probe(c, "Ez")],
                   sources=[Dipole((3, c[1], c[2]), "Ez", Ricker(0.2), amplitude=100.0)])
    start = [np.random.default_rng(order + 7).standard_normal((3, *shape)).astype(np.float32)
             for _ in range(2)]
    kernels = {(True, "yx"): "stepwise_plain_yx", (True, "xy"): "stepwise_plain",
               (False, "yx"): "stepwise_yx", (False, "xy"): "stepwise",
               (None, None): "stepwise_plain_yx" if order == 4 else "stepwise_yx"}

    def run(scene, lean, block_order):
        YeeCUDABackend.lean_stepwise, YeeCUDABackend.block_order = lean, block_order
        sim = Simulation(shape, order, equation="maxwell", backend="cuda", algorithm="stepwise", **scene)
        sim.reset(start)
        sim.run(steps)
        return [name for _, name, *_ in sim.backend._stepwise], [*sim.fields, sim.traces.copy()]

    try:
        _, general = run(plain, False, "xy")
        for (lean, block_order), kernel in kernels.items():
            names, fields = run(plain, lean, block_order)
            if names != [kernel]:
                raise SystemExit(f"lean case: a plain scene with {lean, block_order} launched {names}")
            if not all(np.array_equal(a, b) for a, b in zip(general, fields, strict=True)):
                raise SystemExit(f"lean case order {order}: {kernel} differs from the general kernel")
        _, general = run(physics, None, "xy")
        for block_order, kernel in (("yx", "stepwise_yx"), (None, "stepwise")):
            names, fields = run(physics, None, block_order)
            if names != [kernel]:
                raise SystemExit(f"lean case: a physics scene with {block_order} launched {names}")
            if not all(np.array_equal(a, b) for a, b in zip(general, fields, strict=True)):
                raise SystemExit(f"lean case order {order}: the physics scene y fastest differs")
    finally:
        YeeCUDABackend.lean_stepwise = YeeCUDABackend.block_order = None
    return (f"order {order} {shape} stepwise: 32-bit offsets and blocks y fastest equal to the general "
            "kernel: ok")


def calm_case(order=2, size=1, nt=2, shape=(22, 14, 12), steps=2) -> str:
    """A physics scene whose register-tile sweep has calm torres (no CPML layer across x or y, no Drude
    medium, points on a few z planes: a z layer and the points left to their threads) beside physics ones:
    equal to stepwise bit for bit."""
    import numpy as np

    from diamondlab import Simulation
    from diamondlab.engine.backends.yee_cuda import YeeCUDABackend
    from diamondlab.maxwell import CPML, Dipole, Drude, GaussianPulse, PlaneWave, Probe, Ricker, Sphere

    nx, ny, nz = shape
    drude = Sphere((6.5 + order // 2, ny // 2, nz // 2), 1.0, Drude(1.0, 1.0, 0.1))
    scene = dict(materials=[drude], pml=CPML(2),
                 sources=[Dipole((nx // 2, ny // 2, 5), "Ez", Ricker(0.2), amplitude=100.0),
                          PlaneWave("+x", "z", GaussianPulse(0.2, 0.1),
                                    box=((5, 5, 4), (nx - 5, ny - 5, nz - 3 - order // 2)))],
                 probes=[Probe((nx // 2 - 2, ny // 2, 6), "Ex")])
    start = [np.random.default_rng(order + 11).standard_normal((3, *shape)).astype(np.float32)
             for _ in range(2)]
    YeeCUDABackend.registers_for_physics = True
    runs = {}
    try:
        for algorithm in ("stepwise", "diamondtorre"):
            sim = Simulation(shape, order, equation="maxwell", size=size, nt=nt, backend="cuda",
                             algorithm=algorithm, **scene)
            sim.reset(start)
            sim.run(steps)
            runs[algorithm] = [*sim.fields, *sim.backend.state()[2:], sim.traces.copy()]
    finally:
        YeeCUDABackend.registers_for_physics = False
    calm, planes = (a.copy_to_host() for a in sim.backend._calm_tables(nt))
    if not (0 < calm.sum() < len(calm) and (planes[calm.astype(bool)] >= 0).any()):
        raise SystemExit(f"calm case: {int(calm.sum())} of {len(calm)} torres calm, none with point planes")
    if not all(np.array_equal(a, b) for a, b in zip(runs["stepwise"], runs["diamondtorre"], strict=True)):
        raise SystemExit("calm case: DiamondTorre differs from stepwise")
    return f"order {order} DTS {size} {shape} physics with {int(calm.sum())} calm torres of {len(calm)}: ok"


def resume_case() -> str:
    """The GPU's state (E, H, J, psi) saved and resumed: run(2), save, resume, run(2) is run(4) bitwise."""
    import tempfile

    import numpy as np

    from diamondlab import Simulation
    from diamondlab.engine.outputs.io import load_run, save_run
    from diamondlab.maxwell import Dipole, Drude, Probe, Ricker, Sphere

    shape = (8, 7, 6)
    scene = dict(materials=[Sphere((4, 3, 3), 1.5, Drude(1.0, 1.0, 0.1))], pml=2,
                 sources=[Dipole((3, 3, 3), "Ez", Ricker(0.2), amplitude=100.0)],
                 probes=[Probe((4, 3, 3), "Ez")])
    start = [np.random.default_rng(3).standard_normal((3, *shape)).astype(np.float32) for _ in range(2)]

    def sim(initial):
        return Simulation(shape, 2, equation="maxwell", size=1, nt=2, backend="cuda", initial=initial,
                          **scene)

    whole, first = sim(start), sim(start)
    whole.run(4)
    first.run(2)
    resumed = sim(load_run(save_run(tempfile.mkdtemp() + "/a.npz", first)))
    resumed.run(2)
    mine, theirs = resumed.state(), whole.state()
    if sorted(mine) != ["E", "H", "J", "psi_x", "psi_y", "psi_z", "step"] or not all(
            np.array_equal(mine[k], theirs[k]) for k in mine):
        raise SystemExit("the GPU run resumed from its record differs from the straight run")
    return "GPU record resumed: ok"


def run_dft_case(order=2, shape=(8, 7, 6), steps=5) -> str:
    """The monitors on the GPU: the device's DFT sums (and the probes' slots gathered beside them)."""
    import numpy as np

    from diamondlab import Simulation
    from diamondlab.maxwell import DFTPlane, Dipole, FluxBox, FluxPlane, Probe, Ricker

    freqs = [0.1, 0.23]
    scene = dict(sources=[Dipole((3, 3, 3), "Ez", Ricker(0.2), amplitude=100.0)], pml=0,
                 probes=[Probe((4, 3, 2), "Hy")],
                 monitors=[DFTPlane("z", 2, freqs, components=("Ex", "Hz"), region=((1, 6), (2, 5))),
                           FluxPlane("x", 5, freqs[:1], region=((1, 5), (1, 4))),
                           FluxBox(((2, 2, 2), (5, 5, 4)), freqs)])
    rng = np.random.default_rng(order)
    start = [rng.standard_normal((3, *shape)).astype(np.float32) for _ in range(2)]
    runs = {}
    for backend in ("cuda", "cpu"):
        for algorithm in ("stepwise", "diamondtorre"):
            sim = Simulation(shape, order, equation="maxwell", size=1, nt=2, backend=backend,
                             algorithm=algorithm, **scene)
            sim.reset(start)
            sim.run(steps)
            runs[backend, algorithm] = [sim.traces.copy(), *sim.backend.dft_sums(), sim.flux(2), sim.flux(1)]
            if backend == "cuda":  # the flux summed on the device == the host's sum of the same sums
                lay, sums = sim.physics.monitor_layout, sim.backend.dft_sums()
                for m in (1, 2):
                    if not np.allclose(sim.flux(m), lay.flux(m, sums[m]), rtol=1e-12, atol=0):
                        raise SystemExit(f"order {order}: monitor {m}'s flux on the GPU != on the host")
    gpu_s, gpu_d, cpu = runs["cuda", "stepwise"], runs["cuda", "diamondtorre"], runs["cpu", "stepwise"]
    if not all(np.array_equal(a, b) for a, b in zip(gpu_s, gpu_d, strict=True)):
        raise SystemExit(f"order {order}: GPU DiamondTorre's DFT sums differ from GPU stepwise")
    if not all(np.abs(a).max() > 0 for a in gpu_s):
        raise SystemExit(f"order {order}: a monitor summed nothing")
    for a, b in zip(gpu_s, cpu, strict=True):
        if not np.allclose(a, b, rtol=1e-4, atol=1e-5 * float(np.abs(b).max())):
            raise SystemExit(f"order {order}: GPU and CPU DFT sums differ beyond float32 rounding")
    return f"order {order} {shape} monitors (DFT plane, flux plane, flux box): ok"


def run_kept_launches_case() -> str:
    """The stepwise launches prepared once are kept from call to call while their arguments are the same
    objects (the points' launch with each call's samples and records swapped in), and prepared again when
    one is replaced: a field array swapped for a copy between two calls gives the fields of the run without
    the swap (a kept launch would write into the old array)."""
    import numpy as np

    from diamondlab import Simulation
    from diamondlab.engine.backends.yee_cuda import YeeCUDABackend
    from diamondlab.maxwell import Dipole, Drude, Probe, Ricker, Sphere

    shape = (8, 7, 6)
    scene = dict(materials=[Sphere((4, 3, 3), 1.5, Drude(1.0, 1.0, 0.1))],
                 sources=[Dipole((3, 3, 3), "Ez", Ricker(0.2), amplitude=100.0)],
                 probes=[Probe((4, 3, 3), "Ez")], pml=2)
    start = [np.random.default_rng(3).standard_normal((3, *shape)).astype(np.float32) for _ in range(2)]
    YeeCUDABackend.stepwise_groups = True
    try:
        runs = []
        for swap in (False, True):
            sim = Simulation(shape, 2, equation="maxwell", size=1, nt=2, algorithm="stepwise", backend="cuda",
                             **scene)
            sim.reset(start)
            b = sim.backend
            sim.run(2)
            first = {i: kept[-1] for i, kept in b._prepared.items()}
            records = b._prepared[len(first) - 1][2][10]  # the points' launch, last: its records
            sim.run(2)
            again = {i: kept[-1] for i, kept in b._prepared.items()}
            points = len(first) - 1
            if any(again[i] is not first[i] for i in range(points + 1)):
                raise SystemExit("the column groups' launches were not kept")
            if again[points].args[10] is records or again[points].args[10] is not b._prepared[points][2][10]:
                raise SystemExit("the points' launch kept the records of the call before")
            if swap:  # the same values in a new array: every launch that takes it is prepared again
                b._e = b._cuda.to_device(b._e.copy_to_host())
            sim.run(2)
            if swap and any(b._prepared[i][-1] is again[i] for i in range(points + 1)):
                raise SystemExit("a launch was kept after its field array was replaced")
            runs.append(sim.fields)
    finally:
        YeeCUDABackend.stepwise_groups = None
    if not all(np.array_equal(a, c) for a, c in zip(*runs, strict=True)):
        raise SystemExit("a field array replaced between two calls changed the run")
    return "stepwise launches kept between calls, prepared again for a new array: ok"


def auto_groups_case() -> str:
    """``stepwise_groups`` None: one kernel where the grid has fewer than ``GROUP_CELLS`` cells a launch of
    the column groups, the groups where it has as many (the threshold lowered to this grid); the same
    fields."""
    import numpy as np

    from diamondlab import Simulation
    from diamondlab.engine.backends.yee_cuda import YeeCUDABackend
    from diamondlab.maxwell import Dipole, Drude, Probe, Ricker, Sphere

    shape = (8, 7, 6)
    scene = dict(materials=[Sphere((4, 3, 3), 1.5, Drude(1.0, 1.0, 0.1))],
                 sources=[Dipole((3, 3, 3), "Ez", Ricker(0.2), amplitude=100.0)],
                 probes=[Probe((4, 3, 3), "Ez")], pml=2)
    start = [np.random.default_rng(4).standard_normal((3, *shape)).astype(np.float32) for _ in range(2)]
    runs, launches = [], []
    default = YeeCUDABackend.GROUP_CELLS
    try:
        for cells in (default, 1):  # 336 cells: one kernel, then every grid counts as large
            YeeCUDABackend.GROUP_CELLS = cells
            sim = Simulation(shape, 2, equation="maxwell", algorithm="stepwise", backend="cuda", **scene)
            sim.reset(start)
            sim.run(3)
            launches.append(len(sim.backend._stepwise))
            runs.append([*sim.fields, sim.traces.copy()])
    finally:
        YeeCUDABackend.GROUP_CELLS = default
    if launches[0] != 1 or launches[1] < 3:
        raise SystemExit(f"stepwise_groups None launched {launches} kernels a half step (1, then the groups)")
    YeeCUDABackend.GROUP_CELLS = 1
    try:  # a plain scene has nothing to group: its one kernel, y fastest, whatever the threshold
        plain = Simulation(shape, 2, equation="maxwell", algorithm="stepwise", backend="cuda")
        names = [name for _, name, *_ in plain.backend._stepwise]
    finally:
        YeeCUDABackend.GROUP_CELLS = default
    if names != ["stepwise_yx"]:
        raise SystemExit(f"a plain scene with stepwise_groups None launched {names}")
    # x wider than a launch's second axis takes: one kernel x fastest, plain or layered, groups or not
    from diamondlab.kernels.yee_cuda import MAX_GRID_Y
    from diamondlab.maxwell import CPML

    wide = (MAX_GRID_Y + 5, 3, 4)
    YeeCUDABackend.stepwise_groups = True
    try:
        for layers in (0, CPML(1, axes="y")):
            sim = Simulation(wide, 2, equation="maxwell", algorithm="stepwise", backend="cuda", pml=layers)
            plan = [(name, grid) for _, name, grid, *_ in sim.backend._stepwise]
            if plan != [("stepwise", wide[:2])]:
                raise SystemExit(f"x wider than {MAX_GRID_Y} blocks launched {plan}")
    finally:
        YeeCUDABackend.stepwise_groups = None
    if not all(np.array_equal(a, b) for a, b in zip(*runs, strict=True)):
        raise SystemExit("the column groups chosen by the cells a launch changed the fields")
    return "stepwise groups by the cells a launch (one kernel, then the groups): ok"


if __name__ == "__main__":
    import warnings

    warnings.simplefilter("ignore")  # the dipole's pulse peaks after these few steps: said, and meant
    only_dft = sys.argv[1:] == ["dft"]
    for case in [] if only_dft else CASES:
        print(run_case(*case), flush=True)
    # CPML, Drude, dipole, probes (orders 2 and 4: the columns split at the z layers; order 2 again whole);
    # two plane waves and probes (TFSF points on E and H, several a cell); periodic y and z; then a CPML on z
    # only
    grouped = ((CASES[0], True), (CASES[1], True), (CASES[0], False), (CASES[2], True), (CASES[4], True))
    for case, split in [] if only_dft else grouped:
        print(run_case(*case[:7], periodic=len(case) > 7, groups=True, split=split), flush=True)
    if not only_dft:  # the z layers only, a Drude medium in them: the slabs with the Drude current
        print(run_case(*CASES[0][:7], groups=True, z_only=True), flush=True)
        # periodic y, the CPML on x and z: the boxes take the general kernel, which writes the images
        print(run_case(4, 1, 2, (10, 8, 8), 2, 3, groups=True, periodic_y=True), flush=True)
    print(run_dft_case(), flush=True)
    if not only_dft:
        print(run_kept_launches_case(), flush=True)
        print(auto_groups_case(), flush=True)
    import numpy as np

    from diamondlab import Simulation

    # no CPML, points or Drude: the kernels compiled without them give the CPU's fields to rounding
    start = [np.random.default_rng(5).standard_normal((3, 8, 7, 6)).astype(np.float32) for _ in range(2)]
    bare = {}
    for backend, algorithm in (("cuda", "stepwise"), ("cuda", "diamondtorre"), ("cpu", "stepwise")):
        sim = Simulation((8, 7, 6), 4, equation="maxwell", backend=backend, algorithm=algorithm, size=1, nt=2)
        sim.reset(start)
        sim.run(3)
        bare[backend, algorithm] = sim.fields
    if not all(np.array_equal(a, b) for a, b in zip(bare["cuda", "stepwise"], bare["cuda", "diamondtorre"],
                                                     strict=True)):
        raise SystemExit("bare kernels: GPU DiamondTorre differs from GPU stepwise")
    if not all(np.allclose(a, b, rtol=1e-4, atol=1e-5) for a, b in zip(bare["cuda", "stepwise"],
                                                                       bare["cpu", "stepwise"], strict=True)):
        raise SystemExit("bare kernels: GPU and CPU differ beyond float32 rounding")
    print("bare kernels (no CPML, points, Drude): ok", flush=True)
    print(lean_case(2), flush=True)
    print(lean_case(4), flush=True)
    print(register_case(2, 2, 2, (14, 10, 4), prefetch=1, specialize=True), flush=True)
    print(register_case(4, 1, 2, (16, 11, 4), physics=True, prefetch=2), flush=True)
    print(calm_case(), flush=True)
    plain = Simulation((6, 6, 6), 2, equation="maxwell", backend="cuda").plan
    physics = Simulation((8, 8, 8), 2, equation="maxwell", backend="cuda", pml=2).plan
    if (plain.algorithm, physics.algorithm, physics.algorithm_reason.split(":")[0]) != (
            "diamondtorre", "stepwise", "stepwise"):
        raise SystemExit(f"algorithm 'auto' on the GPU ran {plain.algorithm} on a plain scene, "
                         f"{physics.algorithm} with a CPML ({physics.algorithm_reason})")
    print("auto on the GPU: DiamondTorre on a plain scene, stepwise with a CPML, the faster of each",
          flush=True)
    print(resume_case(), flush=True)
    sys.exit(0)
