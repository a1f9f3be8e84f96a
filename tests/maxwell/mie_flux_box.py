"""A scattering harness for the Mie and plasmon tests: a sphere lit by a TFSF plane-wave pulse, the
scattered power through a closed box in the scattered-field region, DFT'd in NumPy.

Until the DFT monitors land (branch ``dft``), the box reads the six faces' tangential ``E`` and ``H``
from ``sim.fields`` after every step (``run(1)``); :class:`FluxBox` keeps the Yee geometry (on the face
``x = x0``, ``Ey`` and ``Ez`` lie in it, ``Hy`` and ``Hz`` half a cell either side: their mean meets
``Ey`` / ``Ez`` point for point) and the leapfrog's time offset (``H`` half a step behind).  Swap
:meth:`FluxBox.record` for the monitors' API and the rest stays.

Used by tests/maxwell/test_maxwell_mie.py and .ci/maxwell-mie.py.
"""

from __future__ import annotations

import numpy as np

from diamondlab import Simulation
from diamondlab.maxwell import Dielectric, GaussianPulse, PlaneWave, Sphere


class FluxBox:
    """Outward Poynting flux through the box ``[lo, hi]^3`` (integer corners), per frequency in ``freqs``.

    >>> box = FluxBox((2, 2, 2), (6, 6, 6), [0.1], dt=0.5)
    >>> e = np.zeros((3, 9, 9, 9), np.float32); h = np.zeros_like(e)
    >>> box.record(e, h, 1); float(box.flux()[0])
    0.0
    """

    def __init__(self, lo, hi, freqs, dt: float, chunk: int = 64):
        self.lo, self.hi = tuple(int(v) for v in lo), tuple(int(v) for v in hi)
        self.freqs = np.asarray(freqs, dtype=np.float64)
        self.dt, self.chunk = float(dt), chunk
        self._buf, self._steps = [], []
        self._acc_e = self._acc_h = None

    def _faces(self, e, h):
        """Per face (axis a, side s), the tangential pairs ``(E_p, H_q mean)`` with the sign of ``S_a``
        and the trapezoid weights, flattened: one vector of E values and one of H values."""
        lo, hi = self.lo, self.hi
        es, hs = [], []
        for a in range(3):
            p, q = (a + 1) % 3, (a + 2) % 3  # S_a = E_p H_q - E_q H_p
            for x0 in (lo[a], hi[a]):
                for ec, hc in ((p, q), (q, p)):
                    # E_ec lies at the face plane, offset 1/2 along ec; H_hc at 1/2 along a and along ec
                    sl = [slice(None)] * 3
                    sl[a] = x0
                    sl[ec] = slice(lo[ec], hi[ec])  # points lo+1/2 .. hi-1/2
                    o = 3 - a - ec
                    sl[o] = slice(lo[o], hi[o] + 1)  # points lo .. hi (trapezoid ends)
                    ev = e[(ec, *sl)]
                    sl_m = list(sl)
                    sl_m[a] = x0 - 1
                    hv = 0.5 * (h[(hc, *sl)] + h[(hc, *sl_m)])
                    es.append(ev.ravel())
                    hs.append(hv.ravel())
        return np.concatenate(es), np.concatenate(hs)

    def _weights(self):
        lo, hi = self.lo, self.hi
        ws = []
        for a in range(3):
            p, q = (a + 1) % 3, (a + 2) % 3
            for side in (-1.0, 1.0):
                for ec, sign in ((p, 1.0), (q, -1.0)):
                    o = 3 - a - ec
                    w_o = np.ones(hi[o] - lo[o] + 1)
                    w_o[[0, -1]] = 0.5
                    w_ec = np.ones(hi[ec] - lo[ec])
                    w = (w_ec[:, None] * w_o[None, :]) if ec < o else (w_o[:, None] * w_ec[None, :])
                    ws.append(side * sign * w.ravel())
        return np.concatenate(ws)

    def record(self, e, h, step: int) -> None:
        """``e`` at ``t = step dt``, ``h`` at ``(step - 1/2) dt`` (what ``sim.fields`` holds at ``step``)."""
        ev, hv = self._faces(e, h)
        self._buf.append((ev.astype(np.float64), hv.astype(np.float64)))
        self._steps.append(step)
        if len(self._buf) >= self.chunk:
            self._flush()

    def _flush(self) -> None:
        if not self._buf:
            return
        n = np.array(self._steps, dtype=np.float64)
        w = 2j * np.pi * self.freqs[:, None] * self.dt
        pe, ph = np.exp(w * n[None]), np.exp(w * (n[None] - 0.5))
        ev = np.stack([b[0] for b in self._buf])
        hv = np.stack([b[1] for b in self._buf])
        de, dh = pe @ ev * self.dt, ph @ hv * self.dt
        self._acc_e = de if self._acc_e is None else self._acc_e + de
        self._acc_h = dh if self._acc_h is None else self._acc_h + dh
        self._buf, self._steps = [], []

    def flux(self) -> np.ndarray:
        """Outward flux ``Re sum E x conj(H) . n dA`` per frequency (the DFT's units)."""
        self._flush()
        if self._acc_e is None:
            return np.zeros(len(self.freqs))
        return np.real(self._acc_e * np.conj(self._acc_h)) @ self._weights()


def incident_intensity(tfsf, steps: int, freqs, dt: float) -> np.ndarray:
    """The plane wave's intensity ``|Re E conj(H)|`` per frequency at the box's entry plane, from the
    TFSF's own 1D grid (``E`` at the axial index ``u``, ``H`` at ``u +- 1/2`` averaged), DFT'd as
    :class:`FluxBox` does."""
    e_hist, h_hist = tfsf.incident(0, steps)  # row n: E^n, H^{n+1/2}
    u = tfsf.wave.box[0][tfsf.axis] - tfsf.window0
    ev = e_hist[:, u]
    hv = 0.5 * (h_hist[:, u] + h_hist[:, u - 1])
    n = np.arange(steps, dtype=np.float64)
    w = 2j * np.pi * np.asarray(freqs, dtype=np.float64)[:, None] * dt
    ef = np.exp(w * n[None]) @ ev * dt
    hf = np.exp(w * (n[None] + 0.5)) @ hv * dt
    return np.abs(np.real(ef * np.conj(hf)))


def scattering_efficiency(radius: float, medium, freqs, *, order: int = 2, eps_averaging: bool = True,
                          pulse=None, time: float = 800.0, gap: int = 3, pml: int = 10,
                          offset=(0.3, 0.2, 0.1),
                          backend: str = "cpu", progress=None) -> dict:
    """``Q_sca(f)`` of a sphere of ``radius`` cells and ``medium`` lit along +x (``Ez``), by the flux box.

    The sphere sits ``offset`` off the grid's centre (no symmetry of the grid helps it); the TFSF box
    clears it by ``gap`` cells, the flux box the TFSF box by ``gap``, the CPML (``pml`` cells) the flux
    box by ``gap`` + the scheme's reach.  ``time``: how long it runs (in ``c / h``).  Returns ``freqs``,
    ``q`` (Q_sca), ``steps``, ``shape`` and the seconds the run took.
    """
    import time as _time

    reach = order // 2
    half_tf = int(np.ceil(radius)) + gap
    half_fx = half_tf + gap
    n = 2 * (half_fx + gap + reach + pml + 1) + 1
    shape = (n, n, n)
    c = n // 2
    center = tuple(c + o for o in offset)
    pulse = pulse or GaussianPulse(0.03, 0.02)
    box = ((c - half_tf,) * 3, (c + half_tf,) * 3)
    wave = PlaneWave("+x", "z", pulse, box=box)
    start = _time.perf_counter()
    sim = Simulation(shape, order, equation="maxwell", backend=backend, algorithm="stepwise", pml=pml,
                     materials=[Sphere(center, radius, medium)], sources=[wave], eps_averaging=eps_averaging)
    dt = sim.params.dt
    steps = int(np.ceil(time / dt))
    fb = FluxBox((c - half_fx,) * 3, (c + half_fx,) * 3, freqs, dt)
    for k in range(steps):
        sim.run(1)
        e, h = sim.fields
        fb.record(e, h, sim.time_step)
        if progress and k % 200 == 0:
            progress(k, steps)
    power = fb.flux()
    intensity = incident_intensity(sim.physics.tfsf[0], steps + 1, freqs, dt)
    q = power / (intensity * np.pi * radius**2)
    return {"freqs": np.asarray(freqs), "q": q, "steps": steps, "shape": shape, "dt": dt,
            "seconds": _time.perf_counter() - start}


def mie_qsca(radius: float, medium, freqs) -> np.ndarray:
    """Mie's ``Q_sca`` (miepython) of the sphere at ``freqs`` (``c = 1``, lengths in cells)."""
    import miepython

    freqs = np.asarray(freqs, dtype=np.float64)
    eps = np.asarray(medium.permittivity(2 * np.pi * freqs), dtype=np.complex128) \
        if not isinstance(medium, Dielectric) or medium.sigma else np.full(len(freqs), medium.eps, complex)
    m = np.sqrt(eps)
    x = 2 * np.pi * freqs * radius
    return np.array([miepython.efficiencies_mx(mi, xi)[1] for mi, xi in zip(m, x, strict=True)])


def plasmon_peak(freqs, q) -> float:
    """The frequency of the peak of ``q`` on the grid ``freqs``: the vertex of the parabola through the top
    sample and its two neighbours.

    >>> f = np.linspace(0.9, 1.1, 21)
    >>> round(plasmon_peak(f, -(f - 1.013) ** 2), 6)
    1.013
    """
    freqs, q = np.asarray(freqs, dtype=np.float64), np.asarray(q, dtype=np.float64)
    k = int(np.clip(np.argmax(q), 1, len(q) - 2))
    a, b, c = q[k - 1], q[k], q[k + 1]
    shift = 0.5 * (a - c) / (a - 2 * b + c) if a - 2 * b + c else 0.0
    return float(freqs[k] + shift * (freqs[k + 1] - freqs[k]))
