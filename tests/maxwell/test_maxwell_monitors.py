"""Maxwell monitors: DFT planes equal a DFT of probe traces, DiamondTorre equals stepwise bit for bit, a run
cut into calls equals the straight run, and the flux of a dipole out of a box is conserved and near the
analytic radiated power."""

import numpy as np
import pytest

from diamondlab import Simulation
from diamondlab.maxwell import (
    COMPONENTS,
    PEC,
    Box,
    DFTPlane,
    Dielectric,
    Dipole,
    FluxBox,
    FluxPlane,
    GaussianPulse,
    Probe,
)
from diamondlab.maxwell.monitors import FACES, dft_phases, monitor_layout

pytestmark = pytest.mark.filterwarnings("ignore::diamondlab.engine.run.simulation.SourceTimingWarning")

SHAPE = (20, 18, 16)
FREQS = [0.06, 0.11, 0.17]


def _sim(monitors, order=2, probes=(), **kw):
    return Simulation(SHAPE, order, equation="maxwell", backend="cpu", pml=4, probes=probes,
                      materials=[Box((11, 4, 4), (14, 9, 8), Dielectric(2.5, sigma=0.02)),
                                 Box((5, 11, 5), (7, 13, 7), PEC)],
                      sources=[Dipole((9, 8, 7), "Ez", GaussianPulse(0.15, 0.1, cutoff=2)),
                               Dipole((6, 10, 9), "Ex", GaussianPulse(0.1, 0.05, cutoff=2))],
                      monitors=monitors, **kw)


def _monitors():
    return [DFTPlane("y", 6, FREQS, region=((3, 15), (2, 13))),
            FluxBox(((6, 5, 4), (13, 12, 11)), FREQS[:2]),
            FluxPlane("z", 10, FREQS, direction=-1, region=((2, 17), (5, 12)))]


def test_a_dft_plane_is_the_dft_of_probe_traces_at_its_cells():
    region = ((5, 9), (4, 10))
    plane = DFTPlane("y", 6, FREQS, region=region)
    cells = [(x, 6, z) for x in range(*region[0]) for z in range(*region[1])]
    probes = [Probe(cell, comp) for comp in COMPONENTS for cell in cells]
    sim = _sim([plane], probes=probes, nt=5)
    sim.run(37)  # sweeps of 5 steps and a last of 2
    dt, traces = sim.params.dt, sim.traces.astype(np.float64)
    n = np.arange(37)
    got = sim.dft(0)
    assert set(got) == set(COMPONENTS)
    for c, comp in enumerate(COMPONENTS):
        t = (n + (1.0 if comp[0] == "E" else 0.5)) * dt  # E at (n + 1) dt, H at (n + 1/2) dt
        w = np.exp(-2j * np.pi * np.outer(FREQS, t)) * dt
        want = (w @ traces[:, c * len(cells) : (c + 1) * len(cells)]).reshape(len(FREQS), 4, 6)
        assert got[comp].shape == want.shape and np.abs(want).max() > 0
        np.testing.assert_allclose(got[comp], want, rtol=0, atol=1e-12 * np.abs(want).max())


@pytest.mark.parametrize(("order", "size", "nt"), [(2, 2, 5), (4, 1, 4)])
def test_diamondtorre_equals_stepwise_bit_for_bit_with_monitors(order, size, nt):
    runs = []
    for algorithm in ("stepwise", "diamondtorre"):
        sim = _sim(_monitors(), order, probes=[Probe((8, 8, 8), "Hy")], size=size, nt=nt, algorithm=algorithm)
        sim.run(23)
        runs.append((*sim.fields, sim.traces.copy(), *sim.backend.dft_sums()))
    assert all(np.abs(a).max() > 0 for a in runs[0])
    for a, b in zip(*runs, strict=True):
        assert np.array_equal(a, b)


def test_a_run_cut_into_calls_sums_the_same_numbers_and_a_reset_starts_again():
    straight = _sim(_monitors(), nt=6)
    straight.run(20)
    want = straight.backend.dft_sums()
    cut = _sim(_monitors(), nt=6)
    for steps in (10, 3, 7):
        cut.run(steps)
    for a, b in zip(want, cut.backend.dft_sums(), strict=True):
        assert np.array_equal(a, b)
    cut.reset()
    assert all(not a.any() for a in cut.backend.dft_sums())
    cut.run(20)
    for a, b in zip(want, cut.backend.dft_sums(), strict=True):
        assert np.array_equal(a, b)
    # the box's faces add up to its net flux; the flux plane has one value a frequency
    assert np.array_equal(cut.flux(1), sum(cut.flux(1, face) for face in FACES))
    assert cut.flux(2).shape == (3,) and np.abs(cut.flux(2)).max() > 0


def test_sample_times_follow_the_initial_step():
    """A simulation started at step 5: the phases of its first sweep are those of steps 5, 6, ..."""
    plane = DFTPlane("z", 7, [0.1], components=("Ez", "Hx"), region=((8, 10), (7, 9)))
    cells = [(x, y, 7) for x in (8, 9) for y in (7, 8)]
    sim = _sim([plane], probes=[Probe(c, comp) for comp in ("Ez", "Hx") for c in cells], step=5)
    sim.run(12)
    w = dft_phases([0.1], 5, 12, sim.params.dt)
    tr = sim.traces.astype(np.float64)
    np.testing.assert_allclose(sim.dft(0)["Ez"].ravel(), (w[0] @ tr[:, :4]).ravel(), rtol=1e-12)
    np.testing.assert_allclose(sim.dft(0)["Hx"].ravel(), (w[1] @ tr[:, 4:]).ravel(), rtol=1e-12)


def test_flux_of_a_dipole_is_conserved_and_near_the_radiated_power():
    """An Ez dipole in vacuum, CPML: the net flux out of two boxes agrees (conservation) and is near
    ``P = (2 pi f)^2 |J(f)|^2 / (12 pi)`` (the grid's dispersion: a few % at 11 cells a wavelength)."""
    n, c, freqs = 32, 16, [0.05, 0.08, 0.11]
    src = Dipole((c, c, c), "Ez", GaussianPulse(0.08, 0.04))
    sim = Simulation((n, n, n), 2, equation="maxwell", backend="cpu", pml=6, sources=[src],
                     monitors=[FluxBox(((c - 4,) * 3, (c + 4,) * 3), freqs),
                               FluxBox(((c - 9,) * 3, (c + 9,) * 3), freqs)])
    sim.run(200)
    small, big = sim.flux(0), sim.flux(1)
    assert (small > 0).all()
    np.testing.assert_allclose(big, small, rtol=2e-3)  # measured: 5e-4 at most
    k = np.arange(200)
    t = (k + 0.5) * sim.params.dt  # the current's half steps
    jf = np.exp(-2j * np.pi * np.outer(freqs, t)) @ src.current(k, sim.params.dt) * sim.params.dt
    power = (2 * np.pi * np.array(freqs)) ** 2 * np.abs(jf) ** 2 / (12 * np.pi)
    np.testing.assert_allclose(small, power, rtol=0.05)  # measured: +1.1 %, +1.8 %, +3.2 %
    # the Ez dipole radiates alike through the -x and +x faces
    np.testing.assert_allclose(sim.flux(0, "-x"), sim.flux(0, "+x"), rtol=1e-2)  # measured: 0.4 %


def test_layout_interpolates_a_flux_plane_to_the_face_centres():
    """Fields constant on each component's cells: the interpolated DFT is that constant, the flux
    ``1/2 (Ey Hz* - Ez Hy*)`` times the faces."""
    lay = monitor_layout([FluxPlane("x", 4, [0.1], region=((1, 5), (2, 5)))], (8, 8, 8), spacing=0.5)
    values = {"Ey": 2.0, "Ez": 1j, "Hy": 3.0, "Hz": 0.5 - 1j}
    acc = np.array([[values[COMPONENTS[c]] for c in lay.components]], dtype=np.complex128)
    fields = lay.dft(0, acc)
    assert {k: v.shape for k, v in fields.items()} == {k: (1, 4, 3) for k in values}
    assert all(np.allclose(fields[k], v) for k, v in values.items())
    want = 0.5 * (2.0 * np.conj(0.5 - 1j) - 1j * 3.0).real * 12 * 0.25
    np.testing.assert_allclose(lay.flux(0, acc), [want])


def test_scene_file_monitors():
    from diamondlab.maxwell.scene import parse_scene

    scene = parse_scene({"dft_planes": [
        {"type": "dft", "axis": "z", "index": 3, "frequencies": [0.1], "components": ["Ez"]},
        {"type": "flux", "axis": "x", "index": 4, "frequencies": {"center": 0.1, "width": 0.04, "count": 3},
         "direction": -1, "region": [[1, 5], [2, 6]]},
        {"type": "fluxbox", "box": [[2, 2, 2], [6, 6, 6]], "frequencies": [0.1, 0.2]}]})
    a, b, c = scene["monitors"]
    assert (a.axis, a.index, a.components) == ("z", 3, ("Ez",))
    assert np.allclose(b.frequencies, [0.08, 0.1, 0.12])
    assert b.direction == -1 and b.region == ((1, 5), (2, 6))
    assert c.box == ((2, 2, 2), (6, 6, 6))
    with pytest.raises(ValueError, match=r"monitors\[0\].type must be one of dft, flux, fluxbox"):
        parse_scene({"monitors": [{"type": "probe"}]})
    with pytest.raises(ValueError, match="two names of one list"):
        parse_scene({"monitors": [], "dft_planes": []})


def test_the_plan_counts_the_monitors_memory():
    """16 bytes a point and frequency (the DFT sums) and 4 a point and step of a sweep (its values)."""
    from diamondlab.engine.equations.maxwell_plan import MaxwellPlan

    box = FluxBox(((4, 4, 4), (40, 40, 40)), np.linspace(0.05, 0.2, 8))
    bare, watched = (MaxwellPlan.build((48, 48, 48), 2, backend="cpu", nt=10, monitors=m)
                     for m in ((), [box]))
    points = watched.physics.monitor_layout.npoints
    assert points > 6 * 36 * 36 * 4  # four components on each face, the H ones on two planes
    assert watched.host_bytes - bare.host_bytes == points * (16 * 8 + 4 * 10)
