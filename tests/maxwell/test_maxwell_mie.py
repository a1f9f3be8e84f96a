"""Maxwell physics against analytic results: a dielectric sphere's scattering efficiency and a Drude sphere's
plasmon resonance against Mie (miepython), by a TFSF plane-wave pulse and a flux box
(tests/maxwell/mie_flux_box.py); a Drude slab's reflection and transmission spectra against Fresnel (the Airy
formula), by a plane wave through a periodic cell and flux planes (tests/maxwell/fresnel_slab.py).

CI cases are small (a glass sphere of radius 5, a Drude sphere of radius 6, a slab on the coarsest grid the
band allows); the 30-cell spheres run in .ci/maxwell-mie.py (BENCHMARKS.md, "Maxwell physics: Mie and
plasmon"), finer slabs in .ci/maxwell-fresnel.py ("Maxwell physics: a Drude slab against Fresnel").
"""

import numpy as np
import pytest
from fresnel_slab import slab_spectrum
from mie_flux_box import mie_qsca, plasmon_peak, scattering_efficiency

from diamondlab import Simulation
from diamondlab.maxwell import Dielectric, Drude, GaussianPulse, PlaneWave, Sphere
from diamondlab.maxwell.spectra import airy

pytestmark = pytest.mark.filterwarnings("ignore::diamondlab.engine.run.simulation.SourceTimingWarning")


@pytest.mark.parametrize("order", [2, 4])
def test_drude_slab_reflection_spectrum_against_fresnel(order):
    """A Drude slab (eps_inf 1, a plasma wavelength of 40 cells, gamma 0.02) 20 cells thick in a periodic
    4x4 cell, lit along +x: R(f) and T(f) within 0.02 of the Airy formula with the Drude permittivity
    eps(omega) at the frequency (R, T off by 0.0024, 0.0020 at order 2; 0.0017, 0.0013 at order 4), over f in
    [0.005, 0.05] (200 to 20 cells a vacuum wavelength; the skin depth below the plasma frequency 6.4 cells or
    more), across the metal's cut-off (R from 0.78 down to 0.002 at f = 0.035, where the slab is half a wave
    thick inside, and the fringes above).  The region before the TFSF box holds the reflection alone (nothing
    without the slab)."""
    metal = Drude(1.0, 2 * np.pi / 40, 0.02)
    f = np.linspace(0.005, 0.05, 46)
    r = slab_spectrum(metal, f, thickness=20, order=order, time=800)
    lo, hi = r["faces"]
    assert hi - lo == 20
    R, T = airy(metal.permittivity(2 * np.pi * f), f, hi - lo)  # noqa: N806
    assert np.abs(r["R"] - R).max() < 0.02, np.abs(r["R"] - R).max()
    assert np.abs(r["T"] - T).max() < 0.02, np.abs(r["T"] - T).max()
    assert r["R"][0] > 0.75 and r["R"].min() < 0.01 and r["T"].max() > 0.8  # the spectrum's shape
    assert r["leak"] < 1e-6


def test_glass_sphere_scattering_efficiency_against_mie_and_averaging_beats_the_staircase():
    """Radius 5 (10 cells across), eps 2.25, f in [0.0125, 0.05] (x from 0.4 to 1.6, 13+ cells a wavelength
    in the glass): Q_sca within 3 % of Mie with subpixel averaging (about 2 % found); the staircase is
    off by more (about 5 %)."""
    pytest.importorskip("miepython")
    glass, radius = Dielectric(2.25), 5.0
    f = np.linspace(0.0125, 0.05, 7)
    mie = mie_qsca(radius, glass, f)
    errors = {}
    for averaging in (True, False):
        q = scattering_efficiency(radius, glass, f, eps_averaging=averaging, time=300, pml=8)["q"]
        errors[averaging] = np.abs(q / mie - 1)
    assert errors[True].max() < 0.03, errors
    assert errors[False].max() > 1.5 * errors[True].max(), errors


def test_drude_sphere_plasmon_resonance_wavelength_against_mie():
    """A Drude sphere of radius 6 (eps_inf 1, eps = -2 at a wavelength of 60 cells, gamma 0.01): the peak of
    Q_sca within 2 % of Mie's peak wavelength (about 0.4 % found), and the peak sits off the quasi-static
    60 cells (Mie's shift, which the run must see).  The staircase metal's peak depends on where the sphere
    sits in its cell: this one centred on a node is +7.5 % off, radius 8 and 9 at this offset -4 and -6 %;
    at 16 cells of radius it is within 1 % (BENCHMARKS.md, "Why the Drude sphere's plasmon misses")."""
    pytest.importorskip("miepython")
    f0 = 1 / 60
    metal, radius = Drude(1.0, np.sqrt(3) * 2 * np.pi * f0, 0.01), 6.0
    f = np.linspace(0.7 * f0, 1.1 * f0, 121)
    q = scattering_efficiency(radius, metal, f, time=600, pulse=GaussianPulse(f0, 0.008), pml=6)["q"]
    lam, lam_mie = 1 / plasmon_peak(f, q), 1 / plasmon_peak(f, mie_qsca(radius, metal, f))
    assert abs(lam / lam_mie - 1) < 0.02, (lam, lam_mie)
    assert lam_mie > 1.05 / f0 and lam > 1.05 / f0


@pytest.mark.parametrize("order", [2, 4])
def test_averaged_sphere_diamondtorre_equals_stepwise_bit_for_bit(order):
    shape = (28, 26, 26)
    wave = PlaneWave("+x", "z", GaussianPulse(0.08, 0.04), box=((6, 6, 6), (20, 17, 16)))
    runs = []
    for algorithm in ("stepwise", "diamondtorre"):
        sim = Simulation(shape, order, equation="maxwell", algorithm=algorithm, backend="cpu", nt=3, pml=3,
                         materials=[Sphere((13.3, 11.6, 11.2), 2.6, Dielectric(4.0))], sources=[wave])
        sim.run(19)
        runs.append(sim.fields)
    assert len(sim.backend.table.media) > 3  # averaged rows in the table
    assert np.abs(runs[0][0]).max() > 0
    for a, b in zip(*runs, strict=True):
        assert np.array_equal(a, b)
