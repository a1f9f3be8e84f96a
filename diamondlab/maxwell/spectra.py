"""Spectra of a plane wave's run: the incident flux from the TFSF's own 1D grid, a slab's Fresnel curves.

Contract
--------
A flux plane measures ``P(f)`` (:class:`~diamondlab.maxwell.monitors.FluxPlane`);
to read it as a reflectance or a transmittance it is divided by the flux the
incident plane wave alone carries through the same faces.
:class:`IncidentFlux` follows that flux during a run without a second,
empty run: it advances a copy of the plane wave's own 1D incident grid
(:class:`~diamondlab.maxwell.tfsf.TFSF`, the 3D scheme's order, ``dt`` and
background medium, so it is the wave the 3D grid carries to float32
rounding) to the simulation's step and keeps the running DFT of its ``E``
and ``H`` at the box's entry plane, as the monitors do.  Its
:meth:`~IncidentFlux.intensity` is ``1/2 |Re E(f) conj H(f)|`` per face
(``dA = 1`` cell), so ``sim.flux(i) / (faces * intensity)`` is the fraction
of the incident flux through monitor ``i``.

:func:`slab_fresnel` is the reflectance and transmittance of a slab at
normal incidence (the Airy sum of the two interfaces' Fresnel
coefficients), for a :class:`~diamondlab.maxwell.materials.Dielectric`
(lossless or conducting), a :class:`~diamondlab.maxwell.materials.Drude`
metal (through its complex permittivity) or PEC.  NumPy only.
"""

from __future__ import annotations

import copy

import numpy as np

from diamondlab.maxwell.materials import PerfectConductor

__all__ = ["IncidentFlux", "airy", "slab_fresnel"]


def slab_fresnel(medium, thickness: float, frequencies) -> tuple[np.ndarray, np.ndarray]:
    """``(R, T)`` of a slab of ``medium`` and ``thickness`` cells in vacuum at normal incidence, per frequency
    (cycles per unit time, ``c / h``).

    ``r = r1 (1 - e^{2 i d}) / (1 - r1^2 e^{2 i d})``, ``t = (1 - r1^2) e^{i d} / (1 - r1^2 e^{2 i d})``
    with ``r1 = (1 - n) / (1 + n)``, ``d = 2 pi f n thickness``, ``n = sqrt(eps(2 pi f))``
    (``exp(-i omega t)``: a lossy medium has ``Im n > 0``).

    >>> from diamondlab.maxwell.materials import Dielectric
    >>> r, t = slab_fresnel(Dielectric(2.25), 4.0, [1 / 12])  # a half-wave slab (n d = lambda / 2)
    >>> round(float(r[0]), 6), round(float(t[0]), 6)
    (0.0, 1.0)
    >>> r, t = slab_fresnel(Dielectric(2.25), 4.0, [1 / 24])  # a quarter-wave slab: the largest R
    >>> round(float(r[0]), 4), round(float(r[0] + t[0]), 6)
    (0.1479, 1.0)
    """
    f = np.asarray(frequencies, dtype=np.float64)
    if not (np.isfinite(thickness) and thickness >= 0):
        raise ValueError(f"thickness must be a finite number of cells >= 0; got {thickness!r}")
    if isinstance(medium, PerfectConductor):
        return np.ones_like(f), np.zeros_like(f)
    return airy(medium.permittivity(2 * np.pi * f), f, thickness, medium.mu)


def airy(eps, frequencies, thickness: float, mu: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Reflectance and transmittance ``(R, T)`` of a slab of relative permittivity ``eps`` (complex, one per
    frequency, ``exp(-i omega t)``: ``Im eps >= 0`` absorbs) and ``thickness`` in vacuum at normal incidence:
    each face's Fresnel coefficient summed over the multiple reflections (Airy), as :func:`slab_fresnel`
    takes it from a medium (give ``eps`` yourself for, e.g., a scheme's discrete permittivity).

    >>> R, T = airy([2.25], [0.1], 0.0)                  # no slab: everything through
    >>> float(R[0]), float(T[0])
    (0.0, 1.0)
    >>> R, T = airy([2.25 + 1e-3j], [0.1], 1e5)          # thick and lossy: one face's reflection
    >>> round(float(R[0]), 4), bool(T[0] < 1e-15)        # ((1 - n) / (1 + n))^2
    (0.04, True)
    """
    f = np.asarray(frequencies, dtype=np.float64)
    n = np.sqrt(np.asarray(eps, dtype=np.complex128) * mu)
    n = np.where(n.imag < 0, -n, n)  # the root of a decaying wave
    r1 = (1 - n) / (1 + n)
    phase = np.exp(1j * 2 * np.pi * f * n * thickness)
    denominator = 1 - r1**2 * phase**2
    r = r1 * (1 - phase**2) / denominator
    t = (1 - r1**2) * phase / denominator
    return np.abs(r) ** 2, np.abs(t) ** 2


class IncidentFlux:
    """The running DFT of plane wave ``source`` (an index into ``sim.sources``) at its box's entry plane.

    Parameters
    ----------
    sim : MaxwellSimulation
        A run with a :class:`~diamondlab.maxwell.sources.PlaneWave` at ``sources[source]``.
    frequencies : sequence of float
        Where to transform (cycles per unit time), as the flux monitors'.
    source : int
        Which source.

    Examples
    --------
    >>> from diamondlab import Simulation
    >>> from diamondlab.maxwell import FluxPlane, GaussianPulse, PlaneWave
    >>> wave = PlaneWave("+x", "z", GaussianPulse(0.1, 0.05), box=((6, 0, 0), (26, 3, 3)))
    >>> sim = Simulation((32, 4, 4), 2, equation="maxwell", backend="cpu", pml=4, periodic="yz",
    ...                  sources=[wave], monitors=[FluxPlane("x", 20, [0.08, 0.1])])
    >>> _ = sim.run(160)
    >>> inc = IncidentFlux(sim, [0.08, 0.1])
    >>> faces = sim.dft(0)["Ez"][0].size
    >>> bool(np.allclose(sim.flux(0) / (faces * inc.update(sim)), 1.0, atol=1e-4))  # vacuum: all of it
    True
    """

    def __init__(self, sim, frequencies, source: int = 0):
        tfsf = sim.physics.tfsf.get(source)
        if tfsf is None:
            raise ValueError(f"source must be the index of a PlaneWave among the run's sources; got "
                             f"{source!r}")
        self.frequencies = np.asarray(frequencies, dtype=np.float64)
        self._grid = copy.deepcopy(tfsf)  # the run's own grid advances with the run: this one with the view
        self._grid.rewind()
        wave = tfsf.wave
        self._u = (wave.box[0] if wave.sign > 0 else wave.box[1])[tfsf.axis] - tfsf.window0
        self._dt = float(sim.params.dt)
        self._sums = np.zeros((2, len(self.frequencies)), dtype=np.complex128)
        self.step = 0

    def update(self, sim) -> np.ndarray:
        """Advance to ``sim.time_step`` (from the start again if it went back: a reset) and return
        :meth:`intensity`."""
        target = int(sim.time_step)
        if target < self.step:
            self._grid.rewind()
            self._sums[:] = 0
            self.step = 0
        if target > self.step:
            e_hist, h_hist = self._grid.incident(self.step, target - self.step)
            u = self._u
            ev = e_hist[:, u]
            hv = 0.5 * (h_hist[:, u] + h_hist[:, u - 1])
            n = np.arange(self.step, target, dtype=np.float64)
            w = 2j * np.pi * self.frequencies[:, None] * self._dt
            self._sums[0] += np.exp(w * n[None]) @ ev * self._dt
            self._sums[1] += np.exp(w * (n[None] + 0.5)) @ hv * self._dt
            self.step = target
        return self.intensity()

    def intensity(self) -> np.ndarray:
        """``1/2 |Re E(f) conj H(f)|`` of the incident wave per face, one a frequency (up to :attr:`step`)."""
        return 0.5 * np.abs(np.real(self._sums[0] * np.conj(self._sums[1])))
