"""The CPML: its profile, and what it sends back of a broadband pulse at normal incidence and by angle.

The reflection is measured as ``.ci/maxwell-cpml.py`` does (BENCHMARKS.md, "Maxwell CPML reflection"): an
``Ez`` dipole ``D`` cells from the +x face's layer, probes one cell in front of it, against the same run on
a grid extended along +x (its +x echo comes after the window; the other five faces are where they were, so
the difference is the +x face's reflection alone)."""

import numpy as np
import pytest

from diamondlab import Simulation
from diamondlab.maxwell import CPML, Dipole, GaussianPulse, Probe
from diamondlab.maxwell.scheme import YeeParameters, yee_frequency

PULSE = GaussianPulse(0.1, 0.05)  # within 20 dB from 0.01 to 0.27 cycles a cell at the probe


def _reflection_db(order, pml, distance=10, offsets=(0,), margin=5):
    """``20 log10(max |reflected| / max |incident|)`` at probes one cell in front of the +x layer, at these
    y offsets from the normal through the dipole."""
    w = pml.width if isinstance(pml, CPML) else pml
    src = w + margin
    shape = (src + distance + w, src + max(offsets) + margin + w, 2 * src + 1)
    window = 2 * PULSE.delay + distance + 2 * w + max(offsets) + 16
    probes = [Probe((src + distance - 1, src + s, src), "Ez") for s in offsets]

    def traces(nx):
        sim = Simulation((nx, *shape[1:]), order, equation="maxwell", pml=pml, backend="cpu",
                         sources=[Dipole((src, src, src), "Ez", PULSE)], probes=probes)
        sim.run(int(np.ceil(window / sim.params.dt)))
        return sim.traces.astype(np.float64)

    ref = traces(shape[0] + int(window / 2) + 2)
    reflected = np.abs(traces(shape[0]) - ref).max(axis=0)
    return 20 * np.log10(reflected / np.abs(ref).max(axis=0))


def test_the_default_profile():
    p = CPML(12)
    assert (p.grading, p.sigma_ratio, p.alpha_max) == (3.0, 0.75, 0.05)
    assert p.sigma_max == pytest.approx(0.75 * 0.8 * 4)
    prof = p.profiles(40, dt=0.5)
    # E derivatives at the cells (depths 0.5 ... 11.5 from the inner edge 11.5 cells off the face), H
    # derivatives half a cell further out (depths 0 ... 11): graded, the same on both faces
    sigma_e = -np.log(prof.b_e.astype(np.float64)) / 0.5
    assert np.all(np.diff(sigma_e[:12]) < 0) and np.all(sigma_e[12:28] == 0)
    assert np.allclose(sigma_e[:12], sigma_e[28:][::-1], rtol=1e-6)
    assert prof.b_h[11] == 1 and prof.a_h[11] == 0 and prof.b_h[28] < 1
    assert np.all(prof.a_e[:12] < 0) and np.all(prof.a_e[12:28] == 0)


@pytest.mark.parametrize("order", [2, 4])
def test_twelve_cells_send_a_broadband_pulse_back_60_db_down(order):
    """The issue's mark: 12 cells, normal incidence, at least 60 dB (measured -93 and -95 dB at orders 2
    and 4); a 4-cell layer (-39 dB) shows that the measurement sees a reflection."""
    (db,) = _reflection_db(order, 12)
    assert db < -60, db
    if order == 2:
        (db4,) = _reflection_db(order, 4)
        assert db4 > -50, db4


def test_oblique_incidence_stays_60_db_down_to_60_degrees():
    """Probes along the face at 0, 45 and 60 degrees from the normal (12 cells, order 2, ``E`` normal to the
    plane of incidence): measured -93, -93 and -95 dB here (BENCHMARKS.md has 0 to 70 degrees)."""
    db = _reflection_db(2, 12, offsets=(0, 11, 19))
    assert np.all(db < -60), db


def _plane_wave_db(width, m, theta, period=20, window=300.0):
    """The +x face's reflection (dB, order 2) of the plane wave ``cos(k_z z)``, ``k_z = 2 pi m / period``,
    ``E`` in the plane of incidence x-z, at the frequency where it travels at ``theta`` degrees to x on the
    Yee grid (0: f = 0.1), as ``.ci/maxwell-cpml.py --plane-waves`` measures it: a sheet of ``Ez`` dipoles
    of that profile filling the cross-section (y and z periodic, the layers on the x faces only), the
    mode's amplitude on a line of probes 3 cells in front of the +x layer, its DFT at that frequency (the
    window's last half under a cosine taper) against the reference's, a grid longer along +x."""
    mode = np.cos(2 * np.pi * m * (np.arange(period) + 0.5) / period)  # Ez sits at z = k + 1/2
    x0, dt, kz = width + 3, YeeParameters(2).dt, 2 * np.pi * m / period
    sources = [Dipole((x0, j, k), "Ez", PULSE, amplitude=float(a)) for j in (0, 1)
               for k, a in enumerate(mode)]
    probes = [Probe((x0 + 4, 0, k), "Ez") for k in range(period)]
    omega = 0.2 * np.pi if theta == 0 else yee_frequency([[kz / np.tan(np.radians(theta)), 0, kz]], 2, dt)[0]
    steps = int(np.ceil(window / dt))
    q = np.clip((np.arange(steps) - 0.5 * steps) / (0.5 * steps), 0, 1)
    kernel = 0.5 * (1 + np.cos(np.pi * q)) * np.exp(-1j * omega * dt * np.arange(steps))
    amplitude = []
    for nx in (x0 + 7 + width + int(window / 2) + 2, x0 + 7 + width):  # the reference, then the test
        sim = Simulation((nx, 2, period), 2, equation="maxwell", periodic="yz", pml=CPML(width, axes="x"),
                         backend="cpu", sources=sources, probes=probes)
        sim.run(steps)
        amplitude.append(sim.traces.astype(np.float64) @ mode)
    incident, reflected = amplitude[0], amplitude[1] - amplitude[0]
    return 20 * np.log10(abs(reflected @ kernel) / abs(incident @ kernel))


def test_plane_waves_twelve_cells_60_db_down_at_normal_incidence_and_at_45_degrees():
    """Plane waves (a periodic cross-section, one transverse mode): 12 cells at order 2 send back a normal
    incident wave of 10 cells a wavelength at -95 dB and one at 45 degrees at -95 dB (the back wall's
    continuum theory: -105 and -75 dB; BENCHMARKS.md, "Maxwell CPML reflection of plane waves against the
    angle"); a 3-cell layer, at -19 dB, shows that the measurement sees a reflection."""
    normal, oblique = _plane_wave_db(12, 0, 0), _plane_wave_db(12, 2, 45)
    assert normal < -60, normal
    assert oblique < -80, oblique
    control = _plane_wave_db(3, 0, 0)
    assert control > -40, control


@pytest.mark.parametrize("order", [2, 4])
def test_diamondtorre_equals_stepwise_with_a_twelve_cell_layer(order):
    shape, steps = (30, 28, 27), 40
    runs = []
    for algorithm in ("stepwise", "diamondtorre"):
        sim = Simulation(shape, order, equation="maxwell", pml=12, nt=4, algorithm=algorithm, backend="cpu",
                         sources=[Dipole((14, 13, 13), "Ez", GaussianPulse(0.1, 0.05, cutoff=2.0)),
                                  Dipole((15, 14, 12), "Ex", GaussianPulse(0.15, 0.05, cutoff=2.0))],
                         probes=[Probe((3, 13, 13), "Ez"), Probe((15, 25, 12), "Hy")])
        sim.run(steps)
        runs.append((*sim.fields, sim.traces.copy(), *(p.copy() for p in sim.backend._psi)))
    assert np.abs(runs[0][-1]).max() > 0  # the layers hold psi
    for a, b in zip(*runs, strict=True):
        assert np.array_equal(a, b)
