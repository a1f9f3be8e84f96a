"""How well each pace probe flags an in-cache point's slow rounds (issue 29), from `.ci/pace-track.py`'s
lines: the correlation of the point's rate with each probe's pace, and the rounds slow (below 0.8x the 90th
percentile) or fast against flagged (pace < 0.8) or not, per probe.

    python .ci/pace-flag-analysis.py track.jsonl
"""

import json
import sys

import numpy as np


def main(path: str) -> None:
    with open(path) as fh:
        rows = [json.loads(line) for line in fh]
    rate = np.array([r["gcells"] for r in rows])
    kinds = [k for k in ("compute", "cache", "memory") if k in rows[0]]
    pace = {k: np.array([r[k] for r in rows]) for k in kinds}
    balance = np.array([r.get("compute_balance", r.get("balance", 1.0)) for r in rows])
    stolen = np.array([r["stolen"] or 0.0 for r in rows])
    print(f"n {len(rows)}, G/s min/median/max {rate.min():.2f} {np.median(rate):.2f} {rate.max():.2f}")
    for k in kinds:
        p = pace[k]
        print(f"corr(rate, {k} pace) {np.corrcoef(rate, p)[0, 1]:.2f}; {k} pace min/median/max "
              f"{p.min():.2f} {np.median(p):.2f} {p.max():.2f}")
    print(f"corr(rate, compute balance) {np.corrcoef(rate, balance)[0, 1]:.2f}")
    print(f"steal: rounds > 0: {(stolen > 0).sum()}, most {stolen.max():.3f}")
    fast = np.percentile(rate, 90)
    slow = rate < 0.8 * fast
    print(f"slow rounds (rate < 0.8 x the 90th percentile, {fast:.2f}): {slow.sum()} of {rate.size}")
    for k in kinds:
        flagged = pace[k] < 0.8
        print(f"{k}: slow and flagged {(slow & flagged).sum()}, slow and not {(slow & ~flagged).sum()}, "
              f"fast and flagged {(~slow & flagged).sum()}, fast and not {(~slow & ~flagged).sum()}")


if __name__ == "__main__":
    main(sys.argv[1])
