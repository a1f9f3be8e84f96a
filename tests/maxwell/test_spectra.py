"""The incident flux of a plane wave's run and a slab's Fresnel curves (diamondlab.maxwell.spectra)."""

import numpy as np
import pytest

from diamondlab import Simulation
from diamondlab.maxwell import PEC, Dielectric, Dipole, Drude, FluxPlane, GaussianPulse, PlaneWave
from diamondlab.maxwell.spectra import IncidentFlux, slab_fresnel

FREQS = [0.06, 0.08, 0.1, 0.12]


def _cell(direction="+x"):
    wave = PlaneWave(direction, "z", GaussianPulse(0.1, 0.05), box=((6, 0, 0), (26, 3, 3)))
    return Simulation((32, 4, 4), 2, equation="maxwell", backend="cpu", pml=4, periodic="yz", sources=[wave],
                      monitors=[FluxPlane("x", 20, FREQS, direction=1 if direction == "+x" else -1)])


@pytest.mark.parametrize("direction", ["+x", "-x"])
def test_the_incident_flux_is_what_crosses_an_empty_cell_and_follows_the_run_in_pieces(direction):
    sim = _cell(direction)
    inc = IncidentFlux(sim, FREQS)
    sim.run(60)
    part = inc.update(sim).copy()
    sim.run(100)
    faces = sim.dft(0)["Ez"][0].size
    whole = inc.update(sim)
    np.testing.assert_allclose(sim.flux(0) / (faces * whole), 1.0, atol=1e-4)  # vacuum: all of it, both ways
    again = IncidentFlux(sim, FREQS)
    np.testing.assert_allclose(again.update(sim), whole, rtol=1e-10)  # in two pieces as in one
    assert not np.allclose(part, whole)
    sim.reset()  # back to step 0: the incident flux starts again with the run
    assert inc.update(sim).max() == 0 and inc.step == 0


def test_the_incident_flux_needs_a_plane_wave():
    sim = Simulation((16, 16, 16), 2, equation="maxwell", backend="cpu",
                     sources=[Dipole((8, 8, 8), "Ez", GaussianPulse(0.1, 0.05))])
    with pytest.raises(ValueError, match=r"source must be the index of a PlaneWave among the run's sources"):
        IncidentFlux(sim, FREQS)


def test_fresnel_conserves_energy_without_loss_and_absorbs_with_it():
    f = np.linspace(0.02, 0.2, 19)
    r, t = slab_fresnel(Dielectric(4.0), 5.0, f)
    np.testing.assert_allclose(r + t, 1.0, atol=1e-12)
    r, _ = slab_fresnel(Dielectric(4.0), 5.0, [0.025, 0.05])  # n d f = 1/4: ((n^2 - 1) / (n^2 + 1))^2; 1/2: 0
    np.testing.assert_allclose(r, [0.36, 0.0], atol=1e-12)
    f = np.linspace(0.02, 0.1, 9)  # below the plasma frequency (omega < wp = 1)
    r, t = slab_fresnel(Drude(1.0, 1.0, 0.1), 2.0, f)  # a metal film: it reflects, absorbs, passes a little
    assert ((r + t) < 1).all() and (r > 0.5).all() and (t < 0.5).all()
    r, t = slab_fresnel(PEC, 1.0, f)
    assert (r == 1).all() and (t == 0).all()
    r, t = slab_fresnel(Dielectric(2.25), 0.0, f)  # no slab
    np.testing.assert_allclose(t, 1.0)
