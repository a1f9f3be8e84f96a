"""The TFSF plane wave: nothing leaks out of the total-field box (60 dB asked, float32 rounding found), the
box holds the 1D incident field, DiamondTorre equals stepwise bit for bit with a scatterer,
bad input refused."""

import numpy as np
import pytest

from diamondlab import Simulation
from diamondlab.maxwell import Box, ContinuousWave, Dielectric, Drude, GaussianPulse, PlaneWave, Probe, Sphere
from diamondlab.maxwell.tfsf import _OFFSETS

PULSE = GaussianPulse(0.05, 0.025)  # 20 cells a wavelength at the centre


def _inside(shape, box):
    """Per component (Ex .. Hz), whether its staggered points lie in the box."""
    lo, hi = box
    out = np.zeros((6, *shape), dtype=bool)
    grid = np.stack(np.meshgrid(*[np.arange(n) for n in shape], indexing="ij"))
    for c in range(6):
        pos = grid + _OFFSETS[c][:, None, None, None]
        out[c] = np.all([(pos[b] >= lo[b]) & (pos[b] <= hi[b]) for b in range(3)], axis=0)
    return out


def _setup(direction, polarization):
    a = "xyz".index(direction[1])
    shape = [24, 24, 24]
    shape[a] = 40
    lo, hi = [10, 10, 10], [13, 13, 13]
    lo[a], hi[a] = 12, 27
    return tuple(shape), (tuple(lo), tuple(hi))


@pytest.mark.filterwarnings("ignore::diamondlab.engine.run.simulation.SourceTimingWarning")
@pytest.mark.parametrize("order", [2, 4])
@pytest.mark.parametrize(("direction", "polarization"), [("+x", "z"), ("-x", "y"), ("+y", "x"), ("-y", "z"),
                                                         ("+z", "y"), ("-z", "x")])
def test_nothing_leaks_out_of_the_box_and_the_box_holds_the_incident_field(order, direction, polarization):
    _check_leakage(order, direction, polarization)


def _check_leakage(order, direction, polarization, background=None):
    """Below -60 dB outside the box (float32 rounding is about -135), the 1D incident field inside it."""
    shape, box = _setup(direction, polarization)
    wave = PlaneWave(direction, polarization, PULSE, box=box)
    materials = [Box((0, 0, 0), shape, background)] if background else []
    sim = Simulation(shape, order, equation="maxwell", pml=8, sources=[wave], backend="cpu",
                     algorithm="stepwise", materials=materials)
    tfsf = sim.physics.tfsf[0]
    inside = _inside(shape, box)
    a, p, hq = tfsf.axis, tfsf.e_comp, tfsf.h_comp
    leak = err = 0.0
    for _ in range(8):
        sim.run(25)
        e, h = sim.fields
        fields = np.concatenate([e, h])
        leak = max(leak, float(np.abs(fields[~inside]).max()))
        n = sim.time_step
        e_inc = tfsf.incident(n, 1)[0][0]  # E_inc^n and H_inc^{n-1/2} on the window of axial indices
        h_inc = tfsf.incident(n - 1, 1)[1][0]
        for comp, inc in ((p, e_inc), (hq, h_inc)):
            axial = np.arange(shape[a]) - tfsf.window0
            ok = (axial >= 0) & (axial < len(inc))
            expect = np.zeros(shape[a])
            expect[ok] = inc[axial[ok]]
            expect = np.moveaxis(np.broadcast_to(expect, (*np.delete(shape, a), shape[a])), -1, a)
            err = max(err, float(np.abs(np.where(inside[comp], fields[comp] - expect, 0)).max()))
            others = [c for c in range(6) if c not in (p, hq)]
            err = max(err, float(np.abs(fields[others][inside[others]]).max()))
    e_hist, h_hist = tfsf.incident(0, sim.time_step)  # the incident field at every step
    peak = float(np.abs(e_hist).max())
    entry, exit_ = (box[0][a], box[1][a]) if wave.sign > 0 else (box[1][a], box[0][a])
    col = lambda u: np.abs(e_hist[:, u - tfsf.window0])  # noqa: E731
    assert np.argmax(col(entry)) < np.argmax(col(exit_))  # it goes the way asked
    q = hq - 3  # and carries its energy that way: S_a = eps_{pqa} E_p H_q
    flux = np.sum(e_hist[1:] * h_hist[:-1], axis=0)[box[0][a] - tfsf.window0]
    assert flux * (1 if (q - p) % 3 == 1 else -1) * wave.sign > 0
    assert peak > 0.5  # the pulse went through the box
    db = 20 * np.log10(max(leak, 1e-30) / peak)
    print(f"order {order} {direction} E{polarization}: leakage {db:.1f} dB, inside error {err / peak:.2e}")
    assert db < -60
    assert err < 1e-5 * peak


@pytest.mark.filterwarnings("ignore::diamondlab.engine.run.simulation.SourceTimingWarning")
def test_a_lossy_dielectric_background_leaks_nothing_either():
    """The 1D grid takes the background's coefficients (eps, mu, sigma): the same recurrence again."""
    _check_leakage(4, "+y", "z", Dielectric(1.5, sigma=0.005))


@pytest.mark.parametrize(("order", "size", "nt", "steps"), [(2, 2, 5, 23), (4, 1, 3, 17)])
def test_diamondtorre_equals_stepwise_with_a_plane_wave_on_a_drude_sphere(order, size, nt, steps):
    shape = (28, 22, 22)
    scene = dict(materials=[Sphere((14, 11, 11), 3, Drude(1.0, 1.0, 0.1))],
                 sources=[PlaneWave("+x", "z", ContinuousWave(0.1, ramp=1), box=((8, 5, 5), (20, 16, 16)),
                                    amplitude=2.0),
                          PlaneWave("-y", "x", ContinuousWave(0.08, ramp=1), box=((6, 5, 5), (21, 16, 16)))],
                 probes=[Probe((14, 11, 15), "Ez"), Probe((3, 11, 10), "Hy")], pml=3)
    runs = []
    for algorithm in ("stepwise", "diamondtorre"):
        sim = Simulation(shape, order, equation="maxwell", size=size, nt=nt, algorithm=algorithm,
                         backend="cpu", **scene)
        sim.run(steps)
        runs.append((*sim.fields, sim.traces.copy(), sim.backend._j.copy()))
    assert np.abs(runs[0][0]).max() > 0 and np.abs(runs[0][3]).max() > 0  # the wave reached the sphere
    for x, y in zip(*runs, strict=True):
        assert np.array_equal(x, y)
    sim.reset()  # the 1D incident grid starts again with the clock; chunks ask for its steps in turn
    for n in (5, 7, steps - 12):
        sim.run(n)
    for x, y in zip(runs[1], (*sim.fields, sim.traces[-steps:], sim.backend._j), strict=True):
        assert np.array_equal(x, y)


@pytest.mark.parametrize(("kwargs", "match"), [
    (dict(box=((3, 10, 10), (30, 13, 13))), r"sources\[0\]: the PlaneWave box .* x in \[10, 29\]"),
    (dict(box=((12, 10, 10), (30, 13, 13))), r"x in \[10, 29\].*CPML of 8 cells"),
    (dict(box=((12, 10, 10), (27, 13, 40))), r"z in \[10, 13\]"),
    (dict(box=((12, 10, 10), (27, 13, 13)), polarization="x"), "perpendicular to its direction"),
    (dict(box=((12, 10, 10), (27, 13, 13)), direction="x"), "direction must be one of"),
    (dict(box=((12, 10, 10), (27, 13, 13)), polarization="Ez"), "polarization must be"),
    (dict(box=((12, 10, 10), (12, 13, 13))), "x0 < x1"),
    (dict(box=(12, 10)), "box must be two cells"),
    (dict(box=((12, 10, 10), (27, 13, 13)), waveform=None), "waveform must be"),
    (dict(box=((12, 10, 10), (27, 13, 13)), waveform=GaussianPulse(0.4, 0.1)), r"sources\[0\].*Nyquist"),
    (dict(box=((12, 10, 10), (27, 13, 13)), materials=[Sphere((12, 11, 11), 2, Drude(1.0, 1.0, 0.1))]),
     "one medium"),
])
def test_bad_plane_waves_are_refused(kwargs, match):
    kwargs = dict(kwargs)
    materials = kwargs.pop("materials", ())

    def build():
        wave = PlaneWave(**{"direction": "+x", "polarization": "z", "waveform": PULSE, **kwargs})
        return Simulation((40, 24, 24), 4, equation="maxwell", pml=8, sources=[wave], materials=materials,
                          backend="cpu")

    with pytest.raises((ValueError, TypeError), match=match):
        build()


@pytest.mark.parametrize("order", [2, 4])
def test_the_1d_grid_steps_as_numpy_computes_them(order):
    """The Numba loop of the 1D incident grid gives NumPy's values bit for bit: the window's history, and E, H
    and both psi after the steps (the hard source and the CPML at both ends included); a jump ahead and a
    rewind give the same history as stepping through."""
    import copy

    wave = PlaneWave("-y", "x", GaussianPulse(0.06, 0.03), box=((8, 8, 8), (15, 31, 15)), amplitude=2.0)
    sim = Simulation((24, 40, 24), order, equation="maxwell", pml=6, sources=[wave], backend="cpu")
    tfsf = sim.physics.tfsf[0]
    ref = copy.deepcopy(tfsf)
    e_fast, h_fast = tfsf.incident(0, 300)
    pairs = [ref._advance_numpy() for _ in range(300)]
    assert np.array_equal(e_fast, [p[0] for p in pairs]) and np.array_equal(h_fast, [p[1] for p in pairs])
    for name in ("e", "h", "psi_e", "psi_h"):
        assert np.array_equal(getattr(tfsf, name), getattr(ref, name)), name
    assert np.abs(e_fast).max() > 0.5  # the pulse went by
    late = tfsf.incident(250, 20)  # a rewind, then a jump of 250 steps
    assert all(np.array_equal(a, b[250:270]) for a, b in zip(late, (e_fast, h_fast), strict=True))
