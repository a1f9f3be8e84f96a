"""The flags of `.ci/bench-beside-browser.py`'s figure points, run by run (issue 29): per notebook and run,
the points flagged and why; then, for the points flagged "slowed" in some runs and not in others, their
rate when flagged over their rate when not (below 1: the flag marks the slow runs).

    python .ci/pace-beside-browser-runs.py beside-browser.log
"""

import json
import re
import statistics
import sys
from collections import defaultdict

SWEEP = "sweep DiamondTorre NO=2 DTS=1 Nt=8"


def main(path: str) -> None:
    rows = []
    with open(path) as fh:
        for line in fh:
            _, _, rest = line.partition(" ")
            if rest.startswith("{"):
                rows.append(json.loads(rest))
    runs, points = defaultdict(list), defaultdict(list)
    for r in rows:
        runs[r["notebook"], r["run"]].append(r)
        points[r["notebook"], r["point"]].append(r)
    print("| notebook | run | points flagged | slowed | stolen | wide | busy | DT NO=2 DTS=1 Nt=8 "
          "| DT 2 threads | DT 1 thread | the probes' readings (%) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for (notebook, run), ps in sorted(runs.items()):
        by = {p["point"]: p["gcells"] for p in ps}

        def count(word, ps=ps):
            return sum(word in p["flag"] for p in ps)

        paces = [int(x) for p in ps for x in re.findall(r"at (\d+) % of its best", p["flag"])]
        dt = " | ".join(f"{by[k]:.2f}" if k in by else "" for k in
                        (SWEEP, "2 threads diamondtorre", "1 threads diamondtorre"))
        flagged = sum(bool(p["flag"]) for p in ps)
        print(f"| {notebook} | {run + 1} | {flagged} of {len(ps)} | {count('slowed')} | {count('stolen')} "
              f"| {count('wide')} | {count('busy')} | {dt} | {paces} |")
    ratios = []
    for ds in points.values():
        slow = [d["gcells"] for d in ds if "slowed" in d["flag"]]
        other = [d["gcells"] for d in ds if "slowed" not in d["flag"]]
        if slow and other:
            ratios.append(statistics.mean(slow) / statistics.mean(other))
    if ratios:
        below = sum(r < 1 for r in ratios)
        print(f"\npoints flagged 'slowed' in some runs and not in others: {len(ratios)}; their rate when "
              f"flagged over when not: median {statistics.median(ratios):.2f}, below 1 for {below}")


if __name__ == "__main__":
    main(sys.argv[1])
