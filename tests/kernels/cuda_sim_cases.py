"""Run the CUDA kernels under Numba's CUDA simulator on tiny grids (a script, not a test module).

``tests/kernels/test_cuda.py`` runs this file in a subprocess with
``NUMBA_ENABLE_CUDASIM=1`` (the main pytest process must stay out of
simulator mode).  For every (NO, DTS) case it checks, through
:class:`~diamondlab.engine.cuda_backend.CUDABackend`, that DiamondTorre
sweeps equal stepwise steps bit for bit, and that both match the CPU backend
to float32 rounding.  It prints one line per case and exits non-zero on the
first mismatch.  Importing it does nothing.
"""

from __future__ import annotations

import os
import sys

#: (NO, DTS, Nt, shape, sweep heights): every built pair, interior and boundary torres,
#: odd and even heights, several sweeps in a row.
CASES = [
    (2, 1, 3, (7, 6, 5), (3, 2)),
    (2, 2, 4, (12, 10, 5), (4, 3)),
    (2, 3, 3, (13, 11, 4), (3,)),
    (2, 4, 2, (11, 10, 3), (2, 1)),
    (4, 1, 2, (12, 10, 4), (2, 1)),
    (4, 2, 2, (12, 10, 3), (2,)),
    (6, 1, 2, (14, 12, 3), (2,)),
    (8, 1, 2, (18, 15, 3), (2,)),
    (2, 2, 3, (12, 9, 5), (3, 1), True, True),
    (4, 2, 3, (14, 13, 3), (3, 2), True, True),
    (6, 1, 3, (14, 12, 3), (3,), False, True),
]


def run_case(order, size, nt, shape, heights, specialize=False, left_from_memory=False) -> str:
    import numpy as np

    from diamondlab.engine.cpu_backend import CPUBackend
    from diamondlab.engine.cuda_backend import CUDABackend
    from diamondlab.numerics import WaveParameters

    params = WaveParameters(order=order)
    rng = np.random.default_rng(order * 10 + size)
    prev = rng.standard_normal(shape).astype(np.float32)
    curr = rng.standard_normal(shape).astype(np.float32)
    nsteps = sum(heights)
    dt = CUDABackend(params, shape, size, nt, specialize=specialize,
                     left_from_memory=left_from_memory)
    dt.compile()
    dt.set_fields(prev, curr)
    for h in heights:
        dt.sweep(h)
    sw = CUDABackend(params, shape, size, nt)
    sw.set_fields(prev, curr)
    sw.step(nsteps)
    cpu = CPUBackend(params, shape, size, nt)
    cpu.set_fields(prev, curr)
    cpu.step(nsteps)
    a, b, c = dt.fields(), sw.fields(), cpu.fields()
    for name, x, y in (("prev", a[0], b[0]), ("curr", a[1], b[1])):
        if not np.array_equal(x, y):
            raise AssertionError(
                f"NO={order} DTS={size}: DiamondTorre != stepwise in {name}: max diff {np.abs(x - y).max()}"
            )
    rel = max(float(np.abs(x - y).max() / np.abs(y).max()) for x, y in zip(b, c, strict=True))
    if rel > 1e-5:
        raise AssertionError(f"NO={order} DTS={size}: CUDA vs CPU max relative diff {rel}")
    return (f"ok NO={order} DTS={size} Nt={nt} shape={shape} heights={heights} "
            f"specialized={specialize} left_from_memory={left_from_memory} cpu_rel={rel:.1e}")


def run_simulation() -> str:
    """``Simulation(backend='cuda')`` (DiamondTorre) against ``backend='cpu'`` (stepwise)."""
    import numpy as np

    from diamondlab import Simulation

    out = []
    for backend, algorithm in (("cuda", "diamondtorre"), ("cpu", "stepwise")):
        sim = Simulation((12, 10, 6), order=2, size=2, nt=3, backend=backend, algorithm=algorithm)
        sim.run(7)
        out.append(sim.field)
    rel = float(np.abs(out[0] - out[1]).max() / np.abs(out[1]).max())
    if rel > 1e-5:
        raise AssertionError(f"Simulation(backend='cuda') vs cpu: max relative diff {rel}")
    # "auto" finds the (simulated) GPU, which has no sources: it must fall back to the CPU
    import warnings

    from diamondlab.sources import Source

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        auto = Simulation((12, 10, 6), order=2, backend="auto", sources=[Source((5, 5, 3), frequency=0.05)])
    if auto.backend_name != "cpu" or not any("using the CPU" in str(w.message) for w in caught):
        raise AssertionError(f"backend='auto' with sources chose {auto.backend_name!r}")
    return f"ok Simulation backend='cuda' vs 'cpu' rel={rel:.1e}; 'auto' with sources falls back to the CPU"


def main(argv: list[str]) -> int:
    if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
        print("set NUMBA_ENABLE_CUDASIM=1 before running this script", file=sys.stderr)
        return 2
    wanted = {int(a) for a in argv} or {c[0] for c in CASES}
    for case in CASES:
        if case[0] in wanted:
            print(run_case(*case), flush=True)
    if not argv:
        print(run_simulation(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
