"""A Drude slab's reflection spectrum against Fresnel (BENCHMARKS.md, "Maxwell physics: a Drude slab against
Fresnel").

    NUMBA_NUM_THREADS=1 python .ci/maxwell-fresnel.py                  # every case, a JSON line each
    python .ci/maxwell-fresnel.py --orders 4 --resolutions 2 --table  # one case, R and T per frequency

A slab of a Drude metal (eps_inf 1, ``wp = 2 pi / 40``: a plasma wavelength of 40 units, gamma 0.02) 20
units thick in a periodic y, z cell (4 cells across), lit along +x by a TFSF plane-wave pulse; ``R(f)`` and
``T(f)`` from flux planes (tests/maxwell/fresnel_slab.py), against the Airy formula (the Fresnel coefficient
of each face and the multiple reflections) with the Drude permittivity ``eps(omega)`` at the frequency.
Over ``f`` in [0.005, 0.1] cycles per unit (vacuum wavelength 200 to 10 units) at ``--resolutions`` cells a
unit: the error is reported over the band the grid resolves (20 cells a vacuum wavelength or more, the
issue's band) and beyond it (10 to 20 cells).  ``err_discrete`` holds the run to the same formula with the
leapfrog's own permittivity instead: ``omega`` replaced by ``Omega = 2 sin(omega dt / 2) / dt`` and gamma by
``gamma cos(omega dt / 2)`` (the discrete ADE's eps, the time step's share of the error).
"""

import argparse
import json
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests" / "maxwell"))

from fresnel_slab import slab_spectrum  # noqa: E402

from diamondlab.maxwell import Drude  # noqa: E402
from diamondlab.maxwell.spectra import airy  # noqa: E402

METAL = Drude(1.0, 2 * np.pi / 40, 0.02)
THICKNESS = 20.0


def discrete_eps(medium, freqs, dt: float) -> tuple[np.ndarray, np.ndarray]:
    """The leapfrog's Drude permittivity at ``freqs`` (cycles per unit) and the frequency it holds at:
    ``eps(Omega)`` with gamma ``gamma cos(omega dt / 2)``, and ``Omega / 2 pi``."""
    w = 2 * np.pi * np.asarray(freqs, dtype=np.float64)
    big = 2 * np.sin(w * dt / 2) / dt
    eps = medium.eps_inf - medium.wp**2 / (big**2 + 1j * medium.gamma * np.cos(w * dt / 2) * big)
    return eps, big / (2 * np.pi)


def case(order: int, resolution: float, time: float, nf: int) -> dict:
    f = np.linspace(0.005, 0.1, nf)
    r = slab_spectrum(METAL, f, thickness=THICKNESS, order=order, time=time, cells_per_unit=resolution)
    lo, hi = r["faces"]
    d = (hi - lo) / resolution
    R, T = airy(METAL.permittivity(2 * np.pi * f), f, d)  # noqa: N806
    eps_d, f_d = discrete_eps(METAL, f, r["dt"] / resolution)
    Rd, Td = airy(eps_d, f_d, d)  # noqa: N806
    cells = resolution / f  # cells a vacuum wavelength
    band = cells >= 20
    out = {"order": order, "cells_per_unit": resolution, "shape": r["shape"], "steps": r["steps"],
           "seconds": round(r["seconds"], 1), "thickness_cells": hi - lo,
           "leak": float(f"{r['leak']:.2e}")}
    for name, sel in (("resolved", band), ("beyond", ~band)):
        if sel.any():
            out[name] = {"cells_per_wavelength": [round(float(cells[sel].min()), 1),
                                                  round(float(cells[sel].max()), 1)],
                         "max_err_R": round(float(np.abs(r["R"] - R)[sel].max()), 5),
                         "max_err_T": round(float(np.abs(r["T"] - T)[sel].max()), 5),
                         "max_err_R_discrete": round(float(np.abs(r["R"] - Rd)[sel].max()), 5),
                         "max_err_T_discrete": round(float(np.abs(r["T"] - Td)[sel].max()), 5)}
    rows = zip(f, cells, r["R"], R, r["T"], T, strict=True)
    out["table"] = [[round(float(v), 5) for v in row] for row in rows]
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--orders", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--resolutions", type=float, nargs="+", default=[1, 2, 4],
                    help="cells a unit (1: the CI test's grid)")
    ap.add_argument("--time", type=float, default=800.0, help="run time, in units")
    ap.add_argument("--frequencies", type=int, default=96)
    ap.add_argument("--table", action="store_true", help="print R and T per frequency")
    args = ap.parse_args(argv)
    for order in args.orders:
        for resolution in args.resolutions:
            out = case(order, resolution, args.time, args.frequencies)
            table = out.pop("table")
            print(json.dumps(out), flush=True)
            if args.table:
                print(f"{'f':>7} {'cells/wl':>8} {'R':>8} {'R_Fresnel':>9} {'dR':>8} {'T':>8} "
                      f"{'T_Fresnel':>9} {'dT':>8}")
                for f, c, r, rf, t, tf in table:
                    print(f"{f:7.4f} {c:8.1f} {r:8.4f} {rf:9.4f} {r - rf:+8.4f} {t:8.4f} {tf:9.4f} "
                          f"{t - tf:+8.4f}")


if __name__ == "__main__":
    import warnings

    warnings.filterwarnings("ignore", message=".*delayed to t=")
    main()
