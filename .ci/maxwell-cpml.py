"""How much of a pulse the Maxwell CPML sends back: per order and width, at normal incidence and by angle.

    python .ci/maxwell-cpml.py                 # the table of BENCHMARKS.md "Maxwell CPML reflection"
    python .ci/maxwell-cpml.py --angles        # and the reflection by incidence angle (12 cells)
    python .ci/maxwell-cpml.py --plane-waves   # only plane waves' reflection against the angle (8, 12 cells)

The standard measurement, on the CPU engine: a dipole ``Ez`` (a broadband Gaussian pulse) ``D`` cells from
the layer of the +x face, probes one cell in front of that layer; the same run on a grid extended along +x
far enough that its +x face sends nothing back within the window is the reference.  Everything else (the
other five faces, their distances, the corner regions) is the same in the two runs, so their difference at
a probe is the +x face's reflection alone, and the window can hold the whole reflected pulse.  Reported:
``20 log10(max |reflected| / max |incident|)`` at the probe, and the worst spectral ratio
``|FFT reflected| / |FFT incident|`` over the band where the incident spectrum is within 20 dB of its peak.
Probes along y at lateral offsets ``s`` from the normal see the wave that left the dipole at
``atan(s / (D + 1))`` to the normal at the mirror point (the specular path, ``E`` perpendicular to the plane
of incidence); along z, ``E`` lies in the plane of incidence.  A dipole's wave is spherical, with a near
field at the low frequencies of the pulse: at the point nearest the dipole it meets the face at normal
incidence, it is not a plane wave.

``--plane-waves`` measures plane waves (BENCHMARKS.md, "Maxwell CPML reflection of plane waves against the
angle"): y and z periodic, the layers on the x faces only, a sheet of dipoles ``cos(k_z z)`` filling the
cross-section (:func:`plane_wave`); every frequency of the pulse leaves it at its own angle,
``k_x = k_z / tan(theta)`` on the order's Yee dispersion (:func:`plane_angle_frequency`), and the same
reference-and-difference gives the reflection of each.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from diamondlab import Simulation
from diamondlab.maxwell import CPML, Dipole, GaussianPulse, Probe
from diamondlab.maxwell.scheme import YeeParameters, yee_frequency

PULSE = GaussianPulse(0.1, 0.05)  # at the probe (d/dt of the current): 0.01 to 0.27 cycles a cell, 20 dB
OLD = GaussianPulse(0.15, 0.1)  # the first measurement's pulse: to 0.45 (2.2 cells a wavelength)
FREQS = (0.05, 0.1, 0.15, 0.2, 0.25, 0.3)


def reflection(order, pml, *, distance=10, offsets=(0,), axis="y", pulse=PULSE, window=None, margin=6,
               lateral=None, curve=False):
    """``(peak_db, spectral_db, seconds)`` per probe offset: the +x face's reflection (see the module doc)."""
    cpml = pml if isinstance(pml, CPML) else CPML(pml)
    w = cpml.width
    if window is None:  # the pulse, the way there and back through the layer, the tail
        window = pulse.delay * 2 + distance + 4 * w + 2 * max(offsets) + 40
    lateral = max(offsets) + margin + 8 if lateral is None else lateral
    src = w + margin  # the dipole: margin cells off the -x, -y, -z layers
    nx = src + distance + w
    ny = nz = src + lateral + w
    if axis == "y":
        ny = src + lateral + w
        nz = 2 * src + 1
        pos = [(src + distance - 1, src + s, src) for s in offsets]
    else:
        nz = src + lateral + w
        ny = 2 * src + 1
        pos = [(src + distance - 1, src, src + s) for s in offsets]
    t0 = time.perf_counter()

    def traces(nx):
        sim = Simulation((nx, ny, nz), order, equation="maxwell", pml=cpml,
                         sources=[Dipole((src, src, src), "Ez", pulse)], probes=[Probe(p, "Ez") for p in pos])
        dt = sim.plan.params.dt
        steps = int(np.ceil(window / dt))
        sim.run(steps)
        return sim.traces.astype(np.float64), dt

    test, ref, dt = _echo(traces, nx, window)
    refl = test - ref
    out = []
    for k in range(len(pos)):
        inc, r = ref[:, k], refl[:, k]
        peak = 20 * np.log10(np.abs(r).max() / np.abs(inc).max())
        freqs, ratio, band = spectral_ratio(inc, r, dt)
        spectral = ratio[band].max()
        out.append((peak, spectral) if not curve else (peak, spectral, freqs, ratio, band))
    return out, time.perf_counter() - t0


def _echo(traces, nx, window):
    """``(test, reference, dt)``: ``traces(nx)`` (``(traces, dt)`` of a run on ``nx`` cells along x) and the
    same on a grid longer along +x by half the window (its +x face's echo comes after the window)."""
    test, dt = traces(nx)
    ref, _ = traces(nx + int(np.ceil(window / 2)) + 2)
    return test, ref, dt


def spectral_ratio(inc, r, dt, taper=0.25):
    """``(freqs, 20 log10 |FFT r| / |FFT inc|, band)`` of two traces of step ``dt``, both under a cosine taper
    on the last ``taper`` of the window (no leakage from the cut); ``band``: within 20 dB of the incident
    peak."""
    n, m = 8 * len(inc), int(len(inc) * taper)
    taper = np.ones(len(inc))
    taper[-m:] = 0.5 * (1 + np.cos(np.pi * np.arange(1, m + 1) / m))
    fi, fr = np.abs(np.fft.rfft(inc * taper, n)), np.abs(np.fft.rfft(r * taper, n))
    return np.fft.rfftfreq(n, dt), 20 * np.log10(fr / np.maximum(fi, 1e-300)), fi > fi.max() * 0.1


PERIOD = 60  # cells along the periodic z of the plane-wave runs: one period of cos(2 pi m z / PERIOD)
ANGLES = (0, 20, 30, 45, 60, 70, 80)
F0 = 0.1  # the plane-wave table's frequency (10 cells a wavelength), as near as an integer m allows
POLARIZATIONS = {"s": "Ey", "p": "Ez"}  # the sheet's and probes' component: E normal to the x-z plane, in it


def plane_wave(order, pml, m, polarization="s", *, period=PERIOD, window=1000.0, margin=5, gap=6, front=3,
               pulse=PULSE):
    """``(freqs, ratio_db, band, dt)``: the +x face's reflection of the plane waves ``k_z = 2 pi m / period``.

    A sheet of dipoles at ``x0 = width + margin`` fills the cross-section, ``amplitude = cos(k_z z)`` (z of
    the component: ``Ey`` at ``k``, ``Ez`` at ``k + 1/2``), y and z periodic, the CPML on the x faces only;
    every frequency ``f`` of the pulse leaves it at its own angle to x (:func:`plane_angle_frequency`).  The
    probes fill a line along z ``gap`` cells past the sheet, ``front`` cells in front of the +x layer; their
    traces' projection on ``cos(k_z z)`` is the mode's amplitude (the grid is invariant along z, so the mode
    stays alone), the reference's is the incident wave, the difference the reflected one.  ``ny`` is
    ``order`` (2R, the fewest cells DiamondTorre's tile allows: nothing varies along y); z is the
    kernels' inner loop, so the long periodic axis is z and the plane of incidence x-z.  The window's last
    half is under a cosine taper: the mode rings at its cutoff frequency (``k_x = 0``) long after the pulse
    (an ``Ey`` sheet's field has a pole there), and a shorter taper leaks that ringing into the angles
    measured (:func:`plane_wave_window`).
    """
    cpml = CPML(pml, axes="x") if not isinstance(pml, CPML) else pml
    w, comp = cpml.width, POLARIZATIONS[polarization]
    x0 = w + margin
    mode = np.cos(2 * np.pi * m * (np.arange(period) + (comp == "Ez") / 2) / period)
    sources = [Dipole((x0, j, k), comp, pulse, amplitude=float(a)) for j in range(order)
               for k, a in enumerate(mode) if a]
    probes = [Probe((x0 + gap, 0, k), comp) for k in range(period)]

    def traces(nx):
        sim = Simulation((nx, order, period), order, equation="maxwell", periodic="yz", pml=cpml,
                         sources=sources, probes=probes)
        dt = sim.plan.params.dt
        sim.run(int(np.ceil(window / dt)))
        return sim.traces.astype(np.float64) @ mode, dt

    test, ref, dt = _echo(traces, x0 + gap + front + w, window)
    return (*spectral_ratio(ref, test - ref, dt, taper=0.5), dt)


def plane_angle_frequency(order, m, theta, *, period=PERIOD, f0=F0):
    """The frequency at which the mode ``m`` travels at ``theta`` degrees to x on the order's Yee grid (its
    numerical dispersion, the default time step): ``k_x = k_z / tan(theta)``; ``f0`` at normal incidence."""
    if theta == 0:
        return f0
    kz = 2 * np.pi * m / period
    k = [kz / np.tan(np.radians(theta)), 0.0, kz]
    return float(yee_frequency([k], order, YeeParameters(order).dt)[0] / (2 * np.pi))


def back_wall_db(cpml, theta, f, dt=None):
    """The CPML's plane-wave reflection (dB) off its perfect conductor at ``theta`` degrees, frequency ``f``:
    ``exp(-2 k_x int Im s dd)`` with ``k_x = 2 pi f cos(theta)`` (``c = eta = 1``), the integral over the
    layer's depth to its wall, ``width - 1/2`` cells (the profile of :class:`CPML`).  ``dt`` None: the
    continuum stretch ``s = 1 + sigma / (alpha + i w)`` (``kappa = 1``), ``exp(-2 cos(theta) int sigma
    w^2 / (w^2 + alpha^2) dd)``; ``alpha = 0`` and ``width`` give the textbook ``R(0)^cos(theta)``,
    ``R(0) = exp(-2 sigma_max width / (grading + 1))``.  ``dt`` given: the stretch of the kernels'
    recursion ``psi <- b psi + a dF; dF + psi`` at that step, ``1 / s = 1 + a / (1 - b exp(-i w dt))``
    (at low frequency ``sigma`` becomes ``(exp(sigma dt) - 1) / dt``: 1.9 times ``sigma`` at the wall of a
    12-cell layer at order 2, ``sigma dt = 1.16``); space stays continuous."""
    w, om = cpml.width, 2 * np.pi * f
    d = np.linspace(0.0, w - 0.5, 4001)
    sigma = cpml.sigma_max * (d / w) ** cpml.grading
    alpha = cpml.alpha_max * (1 - d / w)
    if dt is None:
        stretch = 1 + sigma / (alpha + 1j * om)
    else:
        b = np.exp(-(sigma + alpha) * dt)
        a = np.where(sigma > 0, sigma / np.maximum(sigma + alpha, 1e-300) * (b - 1), 0.0)
        stretch = 1 / (1 + a / (1 - b * np.exp(-1j * om * dt)))
    nepers = 2 * om * np.cos(np.radians(theta)) * np.trapezoid(np.abs(stretch.imag), d)
    return -20 * np.log10(np.e) * nepers


def plane_wave_window(order, m, angles, *, period=PERIOD, f0=F0, base=1200.0):
    """The window of mode ``m``'s runs: ``base``, or 4 periods of the beat between its cutoff frequency
    (``k_x = 0``) and the lowest frequency measured (the most grazing of ``angles``), where longer."""
    kz = 2 * np.pi * m / period
    cutoff = yee_frequency([[0.0, 0.0, kz]], order, YeeParameters(order).dt)[0] / (2 * np.pi)
    f = min(plane_angle_frequency(order, m, t, period=period, f0=f0) for t in angles)
    return max(base, 4 / (f - cutoff)) if m else base


def plane_wave_table(orders, widths, *, angles=ANGLES, period=PERIOD, f0=F0):
    """Print the table of BENCHMARKS.md "Maxwell CPML reflection of plane waves against the angle": per angle
    the mode ``m = round(period f0 sin(theta))`` (0 at normal incidence) at the frequency where it travels at
    that angle, for each width, order and polarisation, under the back wall's theory (continuum, and the
    kernels' recursion at each order's step and frequency)."""
    ms = [0 if t == 0 else max(1, round(period * f0 * np.sin(np.radians(t)))) for t in angles]
    pairs = list(zip(angles, ms, strict=True))
    freq = {o: [plane_angle_frequency(o, m, t, period=period, f0=f0) for t, m in pairs] for o in (2, 4)}
    windows = {o: {m: plane_wave_window(o, m, [t for t, k in pairs if k == m], period=period, f0=f0)
                   for m in set(ms)} for o in orders}
    print(f"{CPML(12, axes='x')!r} (widths vary), pulse {PULSE}, z period {period}: the +x face's spectral "
          "reflection of the mode m at the frequency f where it travels at the angle (order 2's f, order 4's "
          "in brackets)")
    cols = [f"{t} deg (m={m}, f={f2:.4f} [{f4:.4f}])" for (t, m), f2, f4 in zip(pairs, *freq.values(),
                                                                                   strict=True)]
    print("| width | order | E | " + " | ".join(cols) + " | seconds |")
    print("|---|---|---|" + "---|" * (len(angles) + 1))
    for w in widths:
        for o, name, dt in ((2, "continuum", None), *((o, f"recursion, order {o}", YeeParameters(o).dt)
                                                         for o in orders)):
            theory = [back_wall_db(CPML(w), t, f, dt) for t, f in zip(angles, freq[o], strict=True)]
            print(f"| {w} | theory | {name} | " + " | ".join(f"{v:.1f}" for v in theory) + " | |")
        for o in orders:
            for pol in POLARIZATIONS:
                t0 = time.perf_counter()
                curves = {m: plane_wave(o, w, m, pol, period=period, window=windows[o][m]) for m in set(ms)}
                row = [np.interp(f, *curves[m][:2]) for f, m in zip(freq[o], ms, strict=True)]
                print(f"| {w} | {o} | {pol} | " + " | ".join(f"{v:.1f}" for v in row)
                      + f" | {time.perf_counter() - t0:.0f} |", flush=True)


def _spectrum(res):
    peak, worst, f, ratio, band = res
    return [ratio[np.argmin(abs(f - x))] for x in FREQS]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--angles", action="store_true")
    ap.add_argument("--plane-waves", action="store_true", help="only the plane-wave table (widths 8,12)")
    ap.add_argument("--orders", default="2,4")
    ap.add_argument("--widths", default=None, help="6,8,12,16 (8,12 with --plane-waves)")
    args = ap.parse_args()
    orders = [int(o) for o in args.orders.split(",")]
    widths = [int(w) for w in (args.widths or ("8,12" if args.plane_waves else "6,8,12,16")).split(",")]
    if args.plane_waves:
        plane_wave_table(orders, widths)
        return
    print(f"{CPML(12)!r} (widths vary), pulse {PULSE}, dipole 10 cells from the layer, normal incidence")
    print("| order | width | peak (dB) | " + " | ".join(f"f={f:g}" for f in FREQS) + " | seconds |")
    print("|---|---|---|" + "---|" * (len(FREQS) + 1))
    for o in orders:
        for w in widths:
            (res,), sec = reflection(o, w, curve=True)
            print(f"| {o} | {w} | {res[0]:.1f} | " + " | ".join(f"{v:.1f}" for v in _spectrum(res))
                  + f" | {sec:.1f} |", flush=True)
        (res,), sec = reflection(o, 12, curve=True, pulse=OLD)
        print(f"| {o} | 12, {OLD} | {res[0]:.1f} | " + " | ".join(f"{v:.1f}" for v in _spectrum(res))
              + f" | {sec:.1f} |", flush=True)
    if args.angles:
        d, offsets = 10, (0, 4, 8, 11, 16, 22, 30)
        print(f"\nBy angle (12 cells, dipole {d} cells from the layer, probes one cell in front): peak dB")
        angles = [f"{np.degrees(np.arctan2(s, d + 1)):.0f} deg" for s in offsets]
        print("| order | E | " + " | ".join(angles) + " |")
        print("|---|---|" + "---|" * len(offsets))
        for o in orders:
            for axis, pol in (("y", "s (E normal to the plane of incidence)"), ("z", "p (E in it)")):
                res, sec = reflection(o, 12, distance=d, offsets=offsets, axis=axis)
                print(f"| {o} | {pol} | " + " | ".join(f"{p:.1f}" for p, _ in res) + " |", flush=True)


if __name__ == "__main__":
    main()
