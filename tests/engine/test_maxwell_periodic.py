"""Periodic y and z faces of the Maxwell solver: DiamondTorre equals stepwise bit for bit, the wrap is the
infinite periodic grid's (a grid tiled three times in y and z, open, agrees inside the light cone), a plane
wave through a periodic cell stays uniform across it, objects wrap, the DTS rule, the CLI and scene keys."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from diamondlab import Simulation
from diamondlab.maxwell import CPML, Dielectric, Dipole, Drude, PlaneWave, Probe, Ricker, Slab, Sphere
from diamondlab.maxwell.sources import GaussianPulse


def _state(sim):
    b = sim.backend
    return [*sim.fields, sim.traces.copy(), b._j.copy(), *(p.copy() for p in b._psi)]


@pytest.mark.first  # compiles the Yee CPU kernels of its order (100 s) on a worker of its own
@pytest.mark.slow
@pytest.mark.parametrize("order", [2, 4])
def test_diamondtorre_equals_stepwise_with_periodic_y_and_z(order):
    """CPML on x, periodic y and z, a Drude sphere across the y and z faces, a dipole beside the y face and
    probes on both sides of it, every cell busy from the first step: the two algorithms agree bit for bit
    (fields, traces, Drude currents, psi), over several sweeps (the halo carried between them)."""
    m = order // 2
    shape = (14, 8 * m, 6)
    scene = dict(materials=[Sphere((7, 0, 0), 2.5, Drude(1.0, 1.0, 0.1))],
                 sources=[Dipole((7, 1, 3), "Ez", Ricker(0.2), amplitude=50.0)],
                 probes=[Probe((7, shape[1] - 1, 3), "Ez"), Probe((8, 0, 5), "Hy")],
                 pml=CPML(3, axes="x"), periodic=("y", "z"))
    rng = np.random.default_rng(order)
    start = [rng.standard_normal((3, *shape)).astype(np.float32) for _ in range(2)]
    runs = {}
    for algorithm in ("stepwise", "diamondtorre"):
        sim = Simulation(shape, order, equation="maxwell", backend="cpu", size=2, nt=2, algorithm=algorithm,
                         **scene)
        sim.reset(start)
        sim.run(6)
        runs[algorithm] = _state(sim)
    assert sim.backend.pml.axis_widths("yz") == (3, 0, 0) and sim.backend._psi[1].shape[2] == 1
    for a, b in zip(runs["stepwise"], runs["diamondtorre"], strict=True):
        assert np.array_equal(a, b)
    assert np.abs(runs["stepwise"][0]).max() > 0 and np.abs(runs["stepwise"][4]).max() > 0  # Drude current


@pytest.mark.parametrize("order", [2, 4])
def test_the_wrap_is_the_infinite_periodic_grid(order):
    """A periodic (nx, ny, nz) cell against an open grid three times as wide in y and z holding the same
    fields, spheres and dipoles in each of its nine tiles: while the open grid's walls cannot be felt (a step
    reaches 2M - 1 cells), its middle tile equals the periodic cell, bit for bit, DiamondTorre and stepwise;
    a pulse that leaves the cell across a face comes back on the other side."""
    m = order // 2
    ny, nz, steps = 8 * m, 12, 4
    shape = (12, ny, nz)
    big = (12, 3 * ny, 3 * nz)
    rng = np.random.default_rng(7)
    start = [rng.standard_normal((3, *shape)).astype(np.float32) for _ in range(2)]
    sphere = Sphere((6, 1, nz - 1), 2.5, Dielectric(3.0))
    dipole = Dipole((6, 1, 2), "Ey", Ricker(0.2), amplitude=20.0)
    periodic = Simulation(shape, order, equation="maxwell", backend="cpu", size=2, nt=2,
                          pml=CPML(2, axes="x"), periodic="yz", materials=[sphere], sources=[dipole])
    periodic.reset(start)
    periodic.run(steps)
    tiles = [Sphere((6, 1 + j * ny, nz - 1 + k * nz), 2.5, Dielectric(3.0)) for j in range(-1, 4)
             for k in range(-1, 4)]
    dipoles = [Dipole((6, 1 + j * ny, 2 + k * nz), "Ey", Ricker(0.2), amplitude=20.0) for j in range(3)
               for k in range(3)]
    for algorithm in ("stepwise", "diamondtorre"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = Simulation(big, order, equation="maxwell", backend="cpu", size=2, nt=2, algorithm=algorithm,
                             pml=CPML(2, axes="x"), materials=tiles, sources=dipoles)
        ref.reset([np.tile(a, (1, 1, 3, 3)) for a in start])
        ref.run(steps)
        middle = (slice(None), slice(None), slice(ny, 2 * ny), slice(nz, 2 * nz))
        for a, b in zip(periodic.fields, ref.fields, strict=True):
            assert np.array_equal(a, b[middle])
    # a pulse across the y face: from a dipole at y = 1, the cell at y = ny - 2 (3 cells away across the face)
    # hears it when the one at y = 4 (3 cells away inside) does, and the same
    sim = Simulation((12, ny, 8), order, equation="maxwell", backend="cpu", size=2, nt=2, periodic="yz",
                     pml=CPML(2, axes="x"), sources=[Dipole((6, 1, 4), "Ez", GaussianPulse(0.15, 0.1))],
                     probes=[Probe((6, 4, 4), "Ez"), Probe((6, ny - 2, 4), "Ez")])
    sim.run(40)
    inside, across = sim.traces.T
    assert np.abs(inside).max() > 1e-3
    np.testing.assert_allclose(across, inside, rtol=0, atol=1e-6 * np.abs(inside).max())


@pytest.mark.parametrize("order", [2, 4])
def test_plane_wave_through_a_periodic_slab_cell_stays_uniform(order):
    """Ez along +x through a dielectric slab in a periodic y, z cell with CPML on x (the Fresnel setup): the
    TFSF box spans y and z whole (no corrections on their faces), the fields stay uniform across y and z to
    float32 rounding, the wave crosses the slab, and the scattered-field side before the box holds only the
    slab's reflection (none without the slab: float32 rounding); stepwise gives the same bits."""
    shape = (64, 4 * order, 2 * order)
    ny, nz = shape[1:]
    box = ((14, 0, 0), (50, ny - 1, nz - 1))
    wave = PlaneWave("+x", "z", GaussianPulse(0.1, 0.05), box)
    out = {}
    for slab in (False, True):
        sim = Simulation(shape, order, equation="maxwell", backend="cpu", pml=10, periodic="yz",
                         sources=[wave], materials=[Slab("x", 20, 24, Dielectric(2.25))] if slab else [],
                         probes=[Probe((12, 1, 1), "Ez"), Probe((17, ny - 1, 0), "Ez")])
        assert sim.physics.pml_widths == (10, 0, 0) and sim.algorithm == "diamondtorre"
        sim.run(80)
        e, h = sim.fields
        peak = np.abs(e[2]).max()
        assert peak > 0.3
        for f in (*e, *h):
            spread = np.abs(f - f[:, :1, :1]).max()
            assert spread <= 1e-6 * peak, spread
        assert np.abs(e[0]).max() == 0 and np.abs(e[1]).max() == 0  # Ez only
        before, incident = np.abs(sim.traces).max(axis=0)  # before the box: the scattered field only
        out[slab] = before / incident
    assert out[False] < 1e-5 and 0.1 < out[True] < 0.3  # |r| = 0.2 at normal incidence on n = 1.5
    step = Simulation(shape, order, equation="maxwell", backend="cpu", pml=10, periodic="yz", sources=[wave],
                      materials=[Slab("x", 20, 24, Dielectric(2.25))], algorithm="stepwise")
    step.run(80)
    assert all(np.array_equal(a, b) for a, b in zip(step.fields, (e, h), strict=True))


def test_objects_wrap_across_a_periodic_face():
    """A sphere across the y face shows on both sides (its image), the faces of a periodic axis are no
    perfect conductor, and the dipole's source coefficient comes from the wrapped scene."""
    sim = Simulation((16, 8, 8), 2, equation="maxwell", backend="cpu", periodic="y",
                     materials=[Sphere((8, 0, 4), 2, Dielectric(4.0))],
                     sources=[Dipole((8, 7, 4), "Ez", Ricker(0.1))])
    t = sim.backend.table
    eps = t.coefficients[t.index, 5]
    assert eps[2, 8, 1, 4] == 4.0 and eps[2, 8, 7, 4] == 4.0 and eps[2, 8, 4, 4] == 1.0
    assert sim.physics.dipole_factors[0] == pytest.approx(-sim.params.dt / 4.0, rel=1e-6)
    pec = [i for i, m in enumerate(t.media) if type(m).__name__ == "PerfectConductor"]
    walls = np.isin(t.index, pec)
    assert walls[2, 0].all() and not walls[2, 1:-1, 0].any() and not walls[0, :, 0, 1:-1].any()


def test_the_dts_follows_a_periodic_y():
    """Under DiamondTorre a periodic y needs 2R | ny: DTS not given, the largest default that fits is taken;
    none fits, algorithm='auto' runs stepwise and says why; asked for, a DTS that does not fit is refused."""
    from diamondlab.engine.equations.maxwell_plan import MaxwellPlan

    plan = MaxwellPlan.build((32, 24, 8), 4, backend="cpu", periodic="y")  # default DTS 4: 2R = 16 > 24's
    assert plan.size == 3 and plan.algorithm == "diamondtorre"
    with pytest.warns(UserWarning, match=r"ny a multiple of 2R = 4 \* DTS.*ny=26 is not a multiple of 4"):
        plan = MaxwellPlan.build((32, 26, 8), 4, backend="cpu", periodic="y")
    assert plan.algorithm == "stepwise" and "periodic y" in plan.algorithm_reason
    assert MaxwellPlan.build((32, 26, 8), 4, backend="cpu", periodic="z").algorithm == "diamondtorre"
    with pytest.raises(ValueError, match=r"2R = 8 for DTS=2, got ny=12.*algorithm='stepwise'"):
        MaxwellPlan.build((32, 12, 8), 4, size=2, backend="cpu", periodic="y")


def test_scene_and_command_line_take_periodic(tmp_path, capsys):
    """The scene's "periodic" and pml "axes" keys and --periodic y,z reach the plan."""
    import json

    from diamondlab.cli import main
    from diamondlab.maxwell.scene import parse_scene

    s = parse_scene({"periodic": ["y", "z"], "pml": {"width": 4, "axes": "x"}})
    assert s["periodic"] == "yz" and s["pml"] == CPML(4, axes="x")
    with pytest.raises(ValueError, match=r"periodic must name axes among x, y, z"):
        parse_scene({"periodic": ["w"]})
    scene = tmp_path / "cell.json"
    scene.write_text(json.dumps({"shape": [20, 8, 4], "pml": {"width": 4, "axes": "x"}, "steps": 4,
                                 "probes": [{"position": [10, 0, 0]}]}))
    run = ["run", "--equation", "maxwell", "--scene", str(scene), "--backend", "cpu", "--no-progress"]
    assert main([*run, "--periodic", "y,z", "--out", str(tmp_path / "out")]) == 0
    assert "periodic yz" in capsys.readouterr().out
    assert main([*run, "--periodic", "x,y", "--out", str(tmp_path / "bad")]) == 2
    assert "--periodic: periodic: x cannot be periodic" in capsys.readouterr().err
