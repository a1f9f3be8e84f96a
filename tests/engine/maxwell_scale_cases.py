"""Maxwell runs through the calculation window and MPI ranks: the scene, and the MPI case script.

``mpiexec -n K python -m mpi4py maxwell_scale_cases.py ORDER [cpu|cuda]``: every rank builds the same
x-split simulation of the case of ``ORDER``; rank 0 also runs the single-process reference and prints an
``ok`` line
(tests/engine/test_maxwell_scale.py).  Importing it runs nothing.
"""

import sys
import warnings

import numpy as np

SHAPE = (40, 22, 20)
#: (order, nt, steps of each run, window): a second run goes on from the first; windows of 6 and 9 owned
#: rows between 6 and 8 ghost rows a side
CASES = ((2, 3, (9, 7), 18), (4, 2, (7, 6), 25))


def scene(shape=SHAPE) -> dict:
    """A Drude sphere, a CPML, a dipole and two TFSF plane waves (along x and against y), probes."""
    from diamondlab.maxwell import (
        Box,
        ContinuousWave,
        DFTPlane,
        Dielectric,
        Dipole,
        Drude,
        FluxBox,
        FluxPlane,
        GaussianPulse,
        PlaneWave,
        Probe,
        Sphere,
    )

    nx, ny, nz = shape
    hi_y, hi_z = ny - 6, nz - 6
    return {
        "materials": [Box((12, 8, 8), (16, 11, 11), Dielectric(2.0)),
                      Sphere((nx // 2, 10.5, 9.5), 2, Drude(1.0, 1.0, 0.1))],
        "sources": [PlaneWave("+x", "z", ContinuousWave(0.1, ramp=1), box=((6, 5, 5), (nx - 6, hi_y, hi_z))),
                    PlaneWave("-y", "x", ContinuousWave(0.08, ramp=1), box=((7, 5, 5), (nx - 7, hi_y, hi_z))),
                    Dipole((nx // 3, ny // 2, nz // 2), "Ey", GaussianPulse(0.12, 0.1, cutoff=1.0))],
        "probes": [Probe((nx // 2 + 4, ny // 2, nz // 2), "Ez"), Probe((3, 5, 6), "Hy"),
                   Probe((nx - 2, ny // 2, 4), "Ex")],
        "pml": 3,
        # across the x split and the windows' edges: a DFT plane, a flux plane, a flux box
        "monitors": [DFTPlane("z", nz // 2, [0.08, 0.1], ("Ez", "Hy")), FluxPlane("x", 25, [0.1, 0.12]),
                     FluxBox(((8, 6, 6), (nx - 9, ny - 7, nz - 7)), [0.08, 0.1])],
    }


def same(a, b) -> list[bool]:
    """E, H, the probe traces and the monitors' DFT sums of two simulations equal bit for bit (and the
    traces and sums not all zero)."""
    out = [np.array_equal(x, y) for x, y in zip(a.fields, b.fields, strict=True)]
    return out + [np.array_equal(a.traces, b.traces) and a.traces.shape == b.traces.shape,
                  float(np.abs(b.traces).max()) > 0, same_sums(a.backend.dft_sums(), b.backend.dft_sums())]


def same_sums(got, want) -> bool:
    """The monitors' DFT sums equal bit for bit, every monitor's not all zero."""
    pairs = zip(got, want, strict=True)
    return len(got) == len(want) == 3 and all(
        x.shape == y.shape and np.array_equal(x, y) and np.abs(y).max() > 0 for x, y in pairs)


def main() -> int:
    from mpi4py import MPI

    from diamondlab import Simulation

    comm = MPI.COMM_WORLD
    order = int(sys.argv[1])
    backend = (sys.argv[2:] or ["cpu"])[0]
    warnings.simplefilter("ignore")
    failures = 0
    for order, nt, runs, _ in [c for c in CASES if c[0] == order]:
        kw = {"backend": backend, "size": 1, "nt": nt, "equation": "maxwell", **scene()}
        sim = Simulation(SHAPE, order, comm=comm, **kw)
        for steps in runs:
            sim.run(steps)
        planes = sim.current_planes((21, 7, 5), (2, 3, 2))
        sim.view = "Hy"
        hy = sim.field
        fields, traces, sums = sim.fields, sim.traces, sim.backend.dft_sums()  # collective
        flux, state = sim.flux(2), sim.state()
        # a run that goes on from the whole state, split again (each rank keeps its slab's rows)
        again = Simulation(SHAPE, order, comm=comm, initial=state, **kw)
        again.run(3)
        went_on = again.fields
        if comm.rank:
            continue
        ref = Simulation(SHAPE, order, **kw)
        ref.run(sum(runs))
        ok = [np.array_equal(x, y) for x, y in zip(fields, ref.fields, strict=True)]
        ok.append(np.array_equal(traces, ref.traces) and float(np.abs(traces).max()) > 0)
        ok.append(all(np.array_equal(x, y) for x, y in zip(planes, ref.current_planes((21, 7, 5), (2, 3, 2)),
                                                            strict=True)))
        ref.view = "Hy"
        ok.append(np.array_equal(hy, ref.field))
        # the sums bit for bit; the flux from them: one GPU sums it on the device, ranks on the host (its
        # terms added in another order: to float64 rounding)
        same_flux = (np.array_equal(flux, ref.flux(2)) if backend == "cpu" else
                     np.allclose(flux, ref.flux(2), rtol=1e-12, atol=0))
        ok.append(same_sums(sums, ref.backend.dft_sums()) and same_flux)
        want = ref.state()
        ok.append(sorted(state) == sorted(want) and all(np.array_equal(state[k], want[k]) for k in want))
        ref.run(3)
        ok.append(all(np.array_equal(x, y) for x, y in zip(went_on, ref.fields, strict=True)))
        if all(ok):
            print(f"ok maxwell order={order} ranks={comm.size} slab rows={sim.backend.rows} "
                  f"halo={sim.backend.halo_path}", flush=True)
        else:
            failures += 1
            print(f"FAIL maxwell order={order} ranks={comm.size}: E, H, traces, planes, Hy, monitors, "
                  f"state, going on equal {ok}", flush=True)
    return 1 if comm.allreduce(failures) else 0


if __name__ == "__main__":
    sys.exit(main())
