"""Which pace probe tracks an in-cache figure point (issue 29)?  Rounds of: each probe once (2 threads),
then 0.2 s of DiamondTorre NO=2 DTS=1 Nt=8 on 64^3 (notebook 07's sweep point; the median repeat), with the
other processes' share and the host's steal over it; one JSON line a round, for SECONDS.

    python .ci/pace-track.py 150 > track.jsonl
"""

import json
import statistics
import sys
import time

import numpy as np

from diamondlab import Simulation
from diamondlab.engine.measure.cpumodel import PACE_KINDS, pace_reading
from diamondlab.engine.measure.timing import LoadProbe


def main(seconds: float) -> None:
    start = np.random.default_rng(0).standard_normal((64, 64, 64), dtype=np.float32) * np.float32(1e-3)
    sim = Simulation((64, 64, 64), 2, size=1, nt=8, backend="cpu", algorithm="diamondtorre", initial=start)
    sim.run(16)
    for kind in PACE_KINDS:  # compiled
        pace_reading(kind, 2)
    end = time.time() + seconds
    while time.time() < end:
        row = {"t": time.time()}
        for kind in PACE_KINDS:
            r = pace_reading(kind, 2)
            row.update({kind: r.pace, f"{kind}_rate": r.rate, f"{kind}_balance": r.balance})
        probe = LoadProbe().start()
        times = []
        t_end = time.perf_counter() + 0.2
        while time.perf_counter() < t_end or len(times) < 5:
            t0 = time.perf_counter()
            sim.run(16)
            times.append(time.perf_counter() - t0)
        row["busy"] = probe.stop()
        row.update(gcells=16 * 64**3 / statistics.median(times) / 1e9, stolen=probe.stolen)
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main(float(sys.argv[1]))
