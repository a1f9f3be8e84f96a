"""Does a pace probe read between a measurement's repeats follow it better than one read before it (issue 29)?
Rounds of: five probe calls (the "before" reading, their median), then six pairs of one probe call and one
repeat of DiamondTorre NO=2 DTS=1 Nt=8 on 64^3 (16 steps; notebook 07's sweep point), for SECONDS; one JSON
line a round (the probe's call rate before, its median between the repeats, the point's median G/s), then
the correlations and the rounds slow or fast against flagged.  KIND: cache or compute.

    python .ci/pace-interleave.py 100 cache > interleave.jsonl
"""

import json
import statistics
import sys
import time

import numpy as np

from diamondlab import Simulation
from diamondlab.engine.measure import cpumodel

THREADS = 2
CALL_SECONDS = 0.02


def _probe(kind: str):
    """One call of ``kind``'s probe on every thread, its rate (1 / the slowest thread's seconds)."""
    kernels = cpumodel._pace_kernels()
    if kind == "compute":
        n, kernel, reps = cpumodel.PACE_L1_FLOATS, kernels["compute"], 64
    else:
        n = int(max(lv.capacity for lv in cpumodel._capacity_levels()[:-1]) / 2 // 8 // THREADS)
        kernel, reps = kernels["stream"], 1
    arrays = [(np.ones(n, np.float32), np.ones(n, np.float32)) for _ in range(THREADS)]
    cpumodel._threads_seconds(kernel, arrays, reps)
    reps = max(1, round(reps * CALL_SECONDS / max(cpumodel._threads_seconds(kernel, arrays, reps))))
    return lambda: 1.0 / max(cpumodel._threads_seconds(kernel, arrays, reps))


def _flags(point, probe) -> str:
    slow, flagged = point < 0.8 * np.percentile(point, 90), probe < 0.8 * np.percentile(probe, 90)
    return (f"slow and flagged {(slow & flagged).sum()}, slow and not {(slow & ~flagged).sum()}, "
            f"fast and flagged {(~slow & flagged).sum()}, fast and not {(~slow & ~flagged).sum()}")


def main(seconds: float, kind: str) -> None:
    start = np.random.default_rng(0).standard_normal((64, 64, 64), dtype=np.float32) * np.float32(1e-3)
    sim = Simulation((64, 64, 64), 2, size=1, nt=8, backend="cpu", algorithm="diamondtorre", initial=start)
    sim.run(16)
    call = _probe(kind)

    def repeat() -> float:
        t0 = time.perf_counter()
        sim.run(16)
        return 16 * 64**3 / (time.perf_counter() - t0) / 1e9

    rows = []
    end = time.time() + seconds
    while time.time() < end:
        before = statistics.median(call() for _ in range(5))
        pairs = [(call(), repeat()) for _ in range(6)]
        rows.append(dict(before=before, between=statistics.median(p for p, _ in pairs),
                         point=statistics.median(r for _, r in pairs)))
        print(json.dumps(rows[-1]), flush=True)
    point = np.array([r["point"] for r in rows])
    for name in ("before", "between"):
        probe = np.array([r[name] for r in rows])
        print(f"# {kind} {name}: corr {np.corrcoef(point, probe)[0, 1]:.2f}; {_flags(point, probe)}",
              file=sys.stderr)


if __name__ == "__main__":
    main(float(sys.argv[1]), sys.argv[2])
