"""A reflection-spectrum harness for the Fresnel tests: a slab in a periodic y, z cell lit along +x by a TFSF
plane-wave pulse, its reflectance and transmittance from flux planes, and the Airy formula to hold them to.

The cell is ``nx`` long and ``width`` cells across, periodic in y and z (a plane wave through an infinite
slab), a CPML on the two x faces.  The TFSF box spans y and z whole (no corrections on those faces), so the
region before its entry face holds the scattered field alone: the slab's reflection.  Two runs: without the
slab, the incident flux through a plane inside the box; with it, the flux toward ``-x`` through a plane before
the box (the reflected power) and toward ``+x`` through a plane inside the box behind the slab (the
transmitted).  ``R = P_refl / P_inc``, ``T = P_trans / P_inc``.

A :class:`~diamondlab.maxwell.Drude` slab is a staircase (Drude media are not averaged): ``Ez`` at the
integer ``x`` takes the metal when ``lo <= x <= hi``; with ``lo`` and ``hi`` half-integers, the ``Ez`` points
``lo + 1/2 .. hi - 1/2`` are metal and each stands for the cell around it, so the slab's faces lie exactly at
``lo`` and ``hi`` (an ``H`` plane) and its thickness is ``hi - lo``.

Used by tests/maxwell/test_maxwell_mie.py and .ci/maxwell-fresnel.py.
"""

from __future__ import annotations

import time as _time
from dataclasses import replace

import numpy as np

from diamondlab import Simulation
from diamondlab.maxwell import CPML, FluxPlane, GaussianPulse, PlaneWave, Slab


def slab_spectrum(medium, freqs, *, thickness: float = 20.0, order: int = 2, pulse=None, time: float = 1000.0,
                  width: int = 4, pml: int = 12, gap: int = 20, backend: str = "cpu", algorithm: str = "auto",
                  cells_per_unit: float = 1.0) -> dict:
    """``R(f)`` and ``T(f)`` of a slab of ``medium`` and ``thickness`` (see the module), at ``freqs``.

    ``cells_per_unit`` scales the grid: lengths (``thickness``, ``gap``, ``pml``) are in units, each
    ``cells_per_unit`` cells; frequencies and ``medium``'s rates in cycles (radians) per unit time.  The run
    itself is in cells: it gets the medium and frequencies rescaled.  ``time``: how long it runs, in units.
    Returns ``R``, ``T``, the ``steps``, ``shape``, ``dt`` (in cells), the slab's faces (in cells) and the
    seconds of the two runs.
    """
    s = float(cells_per_unit)
    freqs = np.asarray(freqs, dtype=np.float64)
    fc = freqs / s  # cycles per cell of time
    pulse = pulse or GaussianPulse(0.5 * (freqs[0] + freqs[-1]), 0.3 * (freqs[-1] - freqs[0]))
    pulse = GaussianPulse(pulse.frequency / s, pulse.fwidth / s, pulse.cutoff)
    scaled = replace(medium, **{k: getattr(medium, k) / s for k in ("wp", "gamma", "sigma")
                                if hasattr(medium, k)})
    p, g, d = int(round(pml * s)), int(round(gap * s)), int(round(thickness * s))
    reach = order // 2
    x_refl = p + g // 2                 # the reflection plane, in the scattered field before the box
    x0 = x_refl + g // 2 + reach + 2    # the box's entry face
    lo = x0 + g + 0.5                   # the slab's faces, on H planes
    hi = lo + d
    x_trans = int(hi) + g               # the transmission plane, in the box behind the slab
    x1 = x_trans + g // 2               # the box's exit face
    nx = x1 + reach + 2 + p + g // 2
    shape = (nx, width, width)
    box = ((x0, 0, 0), (x1, width - 1, width - 1))
    wave = PlaneWave("+x", "z", pulse, box)
    monitors = [FluxPlane("x", x_refl, fc, direction=-1), FluxPlane("x", x0 + g // 2, fc),
                FluxPlane("x", x_trans, fc)]
    flux = {}
    start = _time.perf_counter()
    for slab in (False, True):
        sim = Simulation(shape, order, equation="maxwell", backend=backend, algorithm=algorithm,
                         pml=CPML(p, axes="x"), periodic="yz", sources=[wave], monitors=monitors,
                         materials=[Slab("x", lo, hi, scaled)] if slab else [])
        steps = int(np.ceil(time * s / sim.params.dt))
        sim.run(steps)
        flux[slab] = [sim.flux(i) for i in range(len(monitors))]
    incident = flux[False][1]
    return {"freqs": freqs, "R": flux[True][0] / incident, "T": flux[True][2] / incident,
            "leak": np.abs(flux[False][0] / incident).max(), "steps": steps, "shape": shape,
            "dt": sim.params.dt, "faces": (lo, hi), "seconds": _time.perf_counter() - start}
