"""Maxwell's equations through Simulation: DiamondTorre equals stepwise bit for bit with every feature on,
an exact PEC-cavity mode (the Yee dispersion relation to float32 rounding), energy conservation, the CPML."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from diamondlab import Simulation
from diamondlab.engine.equations.maxwell_simulation import MaxwellSimulation
from diamondlab.maxwell import (
    PEC,
    Box,
    Dielectric,
    Dipole,
    Drude,
    GaussianPulse,
    Probe,
    Ricker,
    Sphere,
    yee_frequency,
)


def _scene(shape, pml):
    nx, ny, nz = shape
    c = (nx // 2, ny // 2, nz // 2)
    return dict(
        materials=[Sphere(c, 4, Drude(1.5, 1.0, 0.1)), Box((2, 2, 2), (6, 7, 8), Dielectric(3.0, sigma=0.05)),
                   Box((nx - 8, 3, 3), (nx - 6, 6, 6), PEC)],
        sources=[Dipole((pml + 2, pml + 3, nz // 2), "Ez", GaussianPulse(0.12, 0.06, cutoff=1.5)),
                 Dipole((nx - pml - 3, ny // 2, pml + 2), "Ey", Ricker(0.2), amplitude=-2.0)],
        probes=[Probe((c[0] + 5, c[1], c[2]), "Ez"), Probe((3, 4, 5), "Hx"), Probe(c, "Ex")],
        pml=pml,
    )


@pytest.mark.parametrize(("order", "size", "nt", "steps"), [(2, 2, 5, 23), (2, 3, 4, 16), (4, 1, 3, 17),
                                                             (4, 2, 6, 20)])
def test_diamondtorre_equals_stepwise_bit_for_bit(order, size, nt, steps):
    shape = (26, 22, 18)
    runs = []
    for algorithm in ("stepwise", "diamondtorre"):
        sim = Simulation(shape, order, equation="maxwell", size=size, nt=nt, algorithm=algorithm,
                         backend="cpu", **_scene(shape, 4))
        sim.run(steps)
        runs.append((*sim.fields, sim.traces.copy(), sim.backend._j.copy(),
                     *(p.copy() for p in sim.backend._psi)))
    assert isinstance(sim, MaxwellSimulation) and sim.time_step == steps
    assert np.abs(runs[0][0]).max() > 0 and np.abs(runs[0][2]).max() > 0
    for a, b in zip(*runs, strict=True):
        assert np.array_equal(a, b)


@pytest.mark.filterwarnings("ignore::diamondlab.engine.run.simulation.SourceTimingWarning")
def test_a_run_split_in_chunks_is_the_straight_run():
    shape = (24, 20, 16)
    sims = [Simulation(shape, 4, equation="maxwell", nt=4, **_scene(shape, 3)) for _ in range(2)]
    sims[0].run(18)
    assert np.abs(sims[0].traces).max() > 0
    for n in (5, 6, 7):
        sims[1].run(n)
    for a, b in zip(sims[0].fields, sims[1].fields, strict=True):
        assert np.array_equal(a, b)
    assert np.array_equal(sims[0].traces, sims[1].traces)


def _tm_mode(shape, m, n):
    """Ez of the PEC box's TM_mn0 mode on the Yee grid (walls on the outer planes), its k."""
    nx, ny, nz = shape
    kx, ky = m * np.pi / (nx - 1), n * np.pi / (ny - 1)
    x, y = np.arange(nx)[:, None, None], np.arange(ny)[None, :, None]
    e = np.zeros((3, *shape))
    e[2] = np.sin(kx * x) * np.sin(ky * y) * np.ones(nz)
    return e, np.array([kx, ky, 0.0])


def _half_step_back(e, dt):
    """H^{-1/2} = (dt / 2) curl E^0 (order 2, forward differences, zero beyond the grid): a standing
    mode E^n = cos(w n dt) E^0 has H^{n+1/2} = -sin(w (n + 1/2) dt) dt curl E^0 / (2 sin(w dt / 2))."""
    ez = np.pad(e[2], ((0, 1), (0, 1), (0, 0)))
    h = np.zeros_like(e)
    h[0] = ez[:-1, 1:] - ez[:-1, :-1]  # Hx: dEz/dy
    h[1] = -(ez[1:, :-1] - ez[:-1, :-1])  # Hy: -dEz/dx
    return dt / 2 * h


def test_pec_cavity_mode_follows_the_yee_dispersion_relation():
    shape, steps = (21, 17, 4), 300
    e0, k = _tm_mode(shape, 2, 1)
    sim = Simulation(shape, 2, equation="maxwell", courant=0.5)
    dt = sim.params.dt
    sim.reset((e0, _half_step_back(e0, dt)))
    sim.run(steps)
    w_yee = yee_frequency(k[None], 2, dt)[0]
    expected = np.cos(w_yee * steps * dt) * e0[2]
    err = np.abs(sim.E[2] - expected).max()
    assert err < 2e-5  # float32 rounding over 300 steps
    # the continuous frequency |k| would be off by far more: the test sees the scheme's dispersion
    assert np.abs(np.cos(np.linalg.norm(k) * steps * dt) * e0[2] - expected).max() > 100 * err


def test_energy_of_a_lossless_cavity_is_conserved():
    rng = np.random.default_rng(1)
    shape = (16, 14, 12)
    sim = Simulation(shape, 4, equation="maxwell", materials=[Sphere((8, 7, 6), 3, Dielectric(2.0))])
    e = rng.standard_normal((3, *shape)).astype(np.float32)
    sim.reset((e, np.zeros_like(e)))
    sim.run(1)  # the PEC faces zero the walls' tangential E after a step

    def conserved():
        # W^n = 1/2 sum eps |E^n|^2 + 1/2 sum mu H^{n-1/2} . H^{n+1/2}: constant for the leapfrog
        e, h_before = (a.astype(np.float64) for a in sim.fields)
        eps = sim.backend.table.coefficients[sim.backend.table.index, 5]
        sim.run(1)
        h_after = sim.H.astype(np.float64)
        return 0.5 * (eps * e**2).sum() + 0.5 * (h_before * h_after).sum()

    first = conserved()
    sim.run(400)
    assert conserved() == pytest.approx(first, rel=2e-5)


def test_cpml_absorbs_what_the_bare_box_reflects():
    """A pulse from a dipole: the probe near the face sees the reference run of a box 3x larger (no echo
    yet) within -36 dB with a 10-cell CPML (-38.8 dB; this pulse reaches 0.45 cycles a cell, 2.2 cells a
    wavelength, where no profile absorbs well: tests/maxwell/test_maxwell_boundaries.py measures a resolved
    one); the bare PEC box echoes about -12 dB."""
    pulse = GaussianPulse(0.15, 0.1)
    steps, n, pml = 110, 40, 10

    def probe_trace(size, pml):
        c = size // 2
        sim = Simulation((size, size, size), 2, equation="maxwell", pml=pml, nt=8,
                         sources=[Dipole((c, c, c), "Ez", pulse)], probes=[Probe((c + 8, c, c), "Ez")])
        sim.run(steps)
        return sim.traces[:, 0].astype(np.float64)

    reference = probe_trace(3 * n, 0)
    peak = np.abs(reference).max()
    absorbed = np.abs(probe_trace(n, pml) - reference).max() / peak
    reflected = np.abs(probe_trace(n, 0) - reference).max() / peak
    assert 20 * np.log10(absorbed) < -36
    assert 20 * np.log10(reflected) > -20  # the bare box: about -12 dB


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"equation": "elastic"}, "equation must be one of"),
        ({"order": 6}, "order must be one of"),
        ({"courant": 0.6}, "courant must be > 0 and at most"),
        ({"pml": 8}, "pml must leave at least one cell"),
        ({"pml": -1}, "pml must be a width"),
        ({"sources": [Dipole((40, 2, 2), "Ez", Ricker(0.1))]}, r"sources\[0\] at \(40, 2, 2\) lies outside"),
        ({"sources": [Dipole((1, 8, 8), "Ez", Ricker(0.1))], "pml": 3}, "lies in the CPML"),
        ({"sources": [Dipole((0, 8, 8), "Ez", Ricker(0.1))]}, "outer plane"),
        ({"sources": [Dipole((8, 8, 8), "Ez", GaussianPulse(0.45, 0.1))]}, "Nyquist"),
        ({"probes": [Probe((8, 8, 16), "Hz")]}, r"probes\[0\] at \(8, 8, 16\) lies outside"),
        ({"probes": ["here"]}, r"probes\[0\] must be a Probe"),
        ({"backend": "metal"}, "backend must be one of"),
        ({"nt": 0}, "nt"),
        ({"algorithm": "fast"}, "algorithm must be one of"),
    ],
)
def test_bad_input_is_refused_before_allocation(kwargs, match):
    kwargs = {"equation": "maxwell", **kwargs}
    with pytest.raises((ValueError, TypeError), match=match):
        Simulation((16, 16, 16), kwargs.pop("order", 2), **kwargs)


def test_bad_components():
    with pytest.raises(ValueError, match="Dipole component must be one of"):
        Dipole((1, 1, 1), "Hz", Ricker(0.1))
    with pytest.raises(ValueError, match="Probe component"):
        Probe((1, 1, 1), "Bz")
    with pytest.raises(TypeError, match="waveform must be"):
        Dipole((1, 1, 1), "Ez", None)


@pytest.mark.slow
def test_cuda_kernels_under_the_simulator():
    """DiamondTorre equals stepwise bit for bit on the (simulated) GPU with every feature (plane waves and
    periodic faces and monitors too), and the GPU agrees with the CPU to float32 rounding
    (tests/engine/yee_cuda_sim_cases.py)."""
    script = Path(__file__).with_name("yee_cuda_sim_cases.py")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout + out.stderr
    # four cases (two with plane waves), the periodic one, seven stepwise by column groups (six with the
    # columns split at the z layers, one of them with two plane waves, one with a CPML on z only, one with a
    # periodic y and a CPML on x and z; one whole), the bare kernels, the
    # monitors, the stepwise kernels' variants at orders 2 and 4, two register-tile sweeps (prefetching 1 and
    # 2 tiers ahead; the first compiled for its grid), one with calm torres, the stepwise launches kept
    # between calls, the groups chosen by the cells a launch (and one kernel x fastest where x is wider than a
    # launch's second axis takes), a resumed GPU run
    assert out.stdout.count(": ok") == 22, out.stdout
    assert out.stdout.count("equal to the general kernel: ok") == 2, out.stdout
    assert out.stdout.count("stepwise by column groups: ok") == 6, out.stdout
    assert out.stdout.count("stepwise by column groups (whole columns): ok") == 1, out.stdout
    assert "GPU record resumed: ok" in out.stdout, out.stdout
    assert "prepared again for a new array: ok" in out.stdout, out.stdout
    assert "stepwise groups by the cells a launch (one kernel, then the groups): ok" in out.stdout, out.stdout
    assert "prefetch 1, compiled for the grid): ok" in out.stdout, out.stdout
    assert "prefetch 2): ok" in out.stdout, out.stdout


@pytest.mark.gpu
@pytest.mark.parametrize("order", [2, 4])
@pytest.mark.parametrize("scene", ["plain", "physics"])
def test_gpu_diamondtorre_equals_stepwise_bit_for_bit(order, scene):
    """On a real GPU, where the compiler fuses products into ``fma``: the stepwise half-step kernels and the
    sweeps (the register tile for a plain scene, the cache-read sweep with a CPML, Drude media, dipoles and
    probes) round alike.  The simulator cannot tell an ``fma`` from two roundings; this test can."""
    shape = (48, 64, 32)
    start = [np.random.default_rng(3).standard_normal((3, *shape)).astype(np.float32) for _ in range(2)]
    runs = []
    for algorithm in ("stepwise", "diamondtorre"):
        media = [Sphere((24, 32, 16), 9, Dielectric(4.0)), Box((4, 4, 4), (12, 16, 10), PEC)]
        kwargs = dict(materials=media) if scene == "plain" else _scene(shape, 6)
        sim = Simulation(shape, order, equation="maxwell", backend="cuda", algorithm=algorithm, nt=4,
                         **kwargs)
        if scene == "plain":
            sim.reset(start)
        if algorithm == "diamondtorre":
            assert sim.backend.plain == (scene == "plain")  # plain: the register tile (the default)
        sim.run(24)
        runs.append((*sim.fields, sim.traces.copy()))
    assert np.abs(runs[0][0]).max() > 0
    for a, b in zip(*runs, strict=True):
        assert np.array_equal(a, b)


def test_the_gpu_memory_check_counts_the_monitors_and_the_cpml(monkeypatch):
    """The plan refuses a GPU run whose fields fit but whose CPML psi and monitors' sums do not, before any
    allocation, naming what needs the memory; without the monitors the same run fits."""
    import diamondlab.engine.backends.yee_cuda as yee_cuda
    from diamondlab.engine.backends.cuda import MEMORY_MARGIN_BYTES
    from diamondlab.engine.equations.maxwell_plan import MaxwellPlan
    from diamondlab.maxwell import FluxBox

    shape = (64, 64, 64)
    cells = 68 ** 3
    fields = 3 * 4 * cells * 3 + 4 * 64 ** 3
    monkeypatch.setattr(yee_cuda.YeeCUDABackend, "available", staticmethod(lambda: True))
    monkeypatch.setattr(yee_cuda, "device_memory", lambda: (fields + MEMORY_MARGIN_BYTES + 2**20, 2**40))
    MaxwellPlan.build(shape, 4, backend="cuda", algorithm="stepwise")
    box = FluxBox(((8, 8, 8), (56, 56, 56)), np.linspace(0.01, 0.2, 400).tolist())
    with pytest.raises(ValueError, match=r"the fields, the CPML's psi and the monitors' sums need .* GiB of "
                                         r"GPU memory"):
        MaxwellPlan.build(shape, 4, backend="cuda", algorithm="stepwise", pml=4, monitors=[box])


def test_auto_leaves_a_gpu_that_cannot_run_the_problem_for_the_cpu(monkeypatch):
    """backend='auto' picks the GPU where there is one; a problem it refuses (a column over a block) runs on
    the CPU with a warning that says why, as the acoustic plan does; asked for by name, the refusal stands."""
    from diamondlab.engine.backends.yee_cuda import YeeCUDABackend
    from diamondlab.engine.equations.maxwell_plan import MaxwellPlan

    monkeypatch.setattr(YeeCUDABackend, "available", staticmethod(lambda: True))
    with pytest.warns(UserWarning, match=r"backend 'auto': the GPU cannot run this \(shape: nz=1100 exceeds"):
        plan = MaxwellPlan.build((16, 16, 1100), 2)
    assert plan.backend == "cpu"
    with pytest.raises(ValueError, match="nz=1100 exceeds 1024"):
        MaxwellPlan.build((16, 16, 1100), 2, backend="cuda")


@pytest.mark.parametrize(("threads", "algorithm"), [(1, "diamondtorre"), (4, "diamondtorre"), (8, "stepwise"),
                                                    (16, "stepwise")])
def test_auto_on_the_cpu_follows_the_threads(monkeypatch, threads, algorithm):
    """On a 16-core Xeon the CPU's DiamondTorre ran ahead of stepwise on up to 4 threads and behind on 8 and
    16: ``algorithm="auto"`` runs the faster, and says why where it is stepwise; asked for, each runs."""
    import numba

    from diamondlab.engine.equations.maxwell_plan import MaxwellPlan

    monkeypatch.setattr(numba, "get_num_threads", lambda: threads)
    if algorithm == "stepwise":
        with pytest.warns(UserWarning, match=rf"'auto' runs stepwise: stepwise: on {threads} threads"):
            plan = MaxwellPlan.build((32, 32, 16), 2, backend="cpu")
    else:
        plan = MaxwellPlan.build((32, 32, 16), 2, backend="cpu")
    assert plan.algorithm == algorithm
    asked = MaxwellPlan.build((32, 32, 16), 2, backend="cpu", algorithm="diamondtorre")
    assert asked.algorithm == "diamondtorre"


@pytest.mark.parametrize(("threads", "ny", "tiling"), [(1, 128, (8, 16)), (2, 128, (8, 16)), (2, 24, (6, 12)),
                                                        (16, 128, (4, 8)), (16, 200, (6, 12))])
def test_the_cpu_tile_gives_every_thread_a_torre(monkeypatch, threads, ny, tiling):
    """On 16 threads the 128^3 grid's stages held 8 torres of DTS 8, so half the cores waited and
    DiamondTorre ran at 0.60x stepwise: the default DTS (and Nt = 2R with it) now leaves a torre a thread."""
    import numba

    from diamondlab.engine.equations.maxwell_plan import MaxwellPlan

    monkeypatch.setattr(numba, "get_num_threads", lambda: threads)
    plan = MaxwellPlan.build((64, ny, 16), 2, backend="cpu")
    assert (plan.size, plan.nt) == tiling
    assert ny // (2 * plan.size) >= threads or plan.size == 1
    assert (MaxwellPlan.build((64, ny, 16), 2, backend="cpu", size=8).size,
            MaxwellPlan.build((64, ny, 16), 2, backend="cpu", nt=5).nt) == (8, 5)  # asked for: as asked
