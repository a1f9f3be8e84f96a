"""How much of a pulse the Maxwell CPML sends back: per order and width, at normal incidence and by angle.

    python .ci/maxwell-cpml.py                 # the table of BENCHMARKS.md "Maxwell CPML reflection"
    python .ci/maxwell-cpml.py --angles        # and the reflection by incidence angle (12 cells)

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
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from diamondlab import Simulation
from diamondlab.maxwell import CPML, Dipole, GaussianPulse, Probe

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

    test, dt = traces(nx)
    ext = int(np.ceil(window / 2)) + 2  # the reference's +x face: its echo comes after the window
    ref, _ = traces(nx + ext)
    refl = test - ref
    out = []
    for k in range(len(pos)):
        inc, r = ref[:, k], refl[:, k]
        peak = 20 * np.log10(np.abs(r).max() / np.abs(inc).max())
        n, m = 8 * len(inc), len(inc) // 4  # a cosine taper on the last quarter: no leakage from the cut
        taper = np.ones(len(inc))
        taper[-m:] = 0.5 * (1 + np.cos(np.pi * np.arange(1, m + 1) / m))
        fi, fr = np.abs(np.fft.rfft(inc * taper, n)), np.abs(np.fft.rfft(r * taper, n))
        band = fi > fi.max() * 0.1
        ratio = 20 * np.log10(fr / np.maximum(fi, 1e-300))
        spectral = ratio[band].max()
        freqs = np.fft.rfftfreq(n, dt)
        out.append((peak, spectral) if not curve else (peak, spectral, freqs, ratio, band))
    return out, time.perf_counter() - t0


def _spectrum(res):
    peak, worst, f, ratio, band = res
    return [ratio[np.argmin(abs(f - x))] for x in FREQS]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--angles", action="store_true")
    ap.add_argument("--orders", default="2,4")
    ap.add_argument("--widths", default="6,8,12,16")
    args = ap.parse_args()
    orders = [int(o) for o in args.orders.split(",")]
    widths = [int(w) for w in args.widths.split(",")]
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
