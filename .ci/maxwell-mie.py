"""Maxwell physics against Mie (BENCHMARKS.md, "Maxwell physics: Mie and plasmon").

    NUMBA_NUM_THREADS=1 python .ci/maxwell-mie.py              # all cases, a JSON line each
    python .ci/maxwell-mie.py --only mie --radii 16

Mie: a dielectric sphere (eps 2.25) of radius 8, 12 and 16 cells lit for 600 time units by a TFSF
plane-wave pulse (+x, Ez; order 2, CPU, stepwise), ``Q_sca(f)`` from the scattered power through a
closed box in the scattered-field region over ``f`` in [0.0125, 0.05] (vacuum wavelength 20 to 80
cells: at least 13 cells a wavelength in the glass), against ``miepython``, with and
without subpixel averaging.

Plasmon: a Drude sphere (eps_inf 1, ``wp`` putting the quasi-static Froehlich resonance eps = -2 at a
wavelength of 60 cells, gamma 0.01) of radius 6 to 10 cells (900 time units, no subpixel averaging: see
diamondlab.maxwell.materials): the wavelength of the peak of
``Q_sca`` (parabola through the top three of 241 frequencies) against Mie's peak on the same grid
of frequencies, refined the same way.  ``--offset`` moves the sphere within its cell (default 0.3 0.2
0.1 cells off the grid's centre), ``--scale`` refines the grid (radius, wavelengths and time ``scale`` times
as many cells, ``wp`` and gamma divided by it: the same physical sphere; BENCHMARKS.md, "Why the Drude
sphere's plasmon misses").
"""

import argparse
import json
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests" / "maxwell"))

from mie_flux_box import mie_qsca, plasmon_peak, scattering_efficiency  # noqa: E402

from diamondlab.maxwell import Dielectric, Drude, GaussianPulse  # noqa: E402

F0 = 1 / 60  # the Froehlich resonance of the Drude sphere (eps = -2), a wavelength of 60 cells
DRUDE = Drude(1.0, np.sqrt(3) * 2 * np.pi * F0, 0.01)


def mie_case(radius: float, averaging: bool, order: int, time: float = 600) -> dict:
    glass = Dielectric(2.25)
    f = np.linspace(0.0125, 0.05, 16)
    r = scattering_efficiency(radius, glass, f, order=order, eps_averaging=averaging, time=time)
    mie = mie_qsca(radius, glass, f)
    err = r["q"] / mie - 1
    return {"case": "mie", "radius": radius, "eps": 2.25, "order": order, "eps_averaging": averaging,
            "shape": r["shape"], "steps": r["steps"], "seconds": round(r["seconds"], 1),
            "band": [0.0125, 0.05], "x": [round(2 * np.pi * radius * v, 3) for v in (f[0], f[-1])],
            "max_abs_err": round(float(np.abs(err).max()), 4), "mean_err": round(float(err.mean()), 4),
            "q_fdtd": np.round(r["q"], 4).tolist(), "q_mie": np.round(mie, 4).tolist()}


def plasmon_case(radius: float, order: int, offset=(0.3, 0.2, 0.1), scale: float = 1.0) -> dict:
    f0, metal = F0 / scale, Drude(DRUDE.eps_inf, DRUDE.wp / scale, DRUDE.gamma / scale)
    f = np.linspace(0.7 * f0, 1.1 * f0, 241)
    r = scattering_efficiency(radius * scale, metal, f, order=order, time=900 * scale,
                              pulse=GaussianPulse(f0, 0.008 / scale), pml=8, offset=tuple(offset))
    mie = mie_qsca(radius * scale, metal, f)
    lam, lam_mie = 1 / plasmon_peak(f, r["q"]), 1 / plasmon_peak(f, mie)
    return {"case": "plasmon", "radius": radius * scale, "order": order, "offset": list(offset),
            "scale": scale, "wp": round(metal.wp, 6), "gamma": metal.gamma,
            "shape": r["shape"], "steps": r["steps"], "seconds": round(r["seconds"], 1),
            "lambda_peak": round(lam, 3), "lambda_mie": round(lam_mie, 3), "lambda_quasistatic": 1 / F0,
            "err": round(lam / lam_mie - 1, 4), "q_peak": round(float(r["q"].max()), 3),
            "q_peak_mie": round(float(mie.max()), 3)}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=("mie", "plasmon"))
    ap.add_argument("--radii", type=float, nargs="+")
    ap.add_argument("--order", type=int, default=2)
    ap.add_argument("--averaging", choices=("both", "on", "off"), default="both")
    ap.add_argument("--offset", type=float, nargs=3, default=(0.3, 0.2, 0.1),
                    help="plasmon: the sphere's centre off the grid's centre, in cells")
    ap.add_argument("--scale", type=float, default=1.0,
                    help="plasmon: cells per cell of the default case (the same physical sphere, finer)")
    args = ap.parse_args(argv)
    if args.only in (None, "mie"):
        for radius in args.radii or (8, 12, 16):
            for averaging in {"both": (True, False), "on": (True,), "off": (False,)}[args.averaging]:
                print(json.dumps(mie_case(radius, averaging, args.order)), flush=True)
    if args.only in (None, "plasmon"):
        for radius in args.radii or (6, 7, 8, 9, 10):
            print(json.dumps(plasmon_case(radius, args.order, args.offset, args.scale)), flush=True)


if __name__ == "__main__":
    import warnings

    warnings.filterwarnings("ignore", message=".*delayed to t=")
    main()
