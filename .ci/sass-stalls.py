"""Where a kernel's warps wait, instruction by instruction: Nsight Compute's source page (SASS) as CSV.

    ncu -i report.ncu-rep --page source --csv --print-source sass > sass.csv
    python .ci/sass-stalls.py sass.csv [--top 12]

Prints the share of executed instructions and of stall samples per opcode (``IADD3``, ``LDG``, ``STL``, ...),
the samples per stall reason, and the hottest stall locations with the instructions before them (a spill
store ``STL`` waiting on ``long_sb`` is a loaded value spilled as soon as it arrives).
``.ci/yee-sweep-profile`` with ``SASS=1`` writes such a CSV for the Yee register-tile sweep.
"""

import argparse
import collections
import csv
import gzip
import re


def _number(text: str) -> float:
    return float(text.replace(",", "")) if text not in ("-", "") else 0.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", help="the source page as CSV (.gz read as well)")
    ap.add_argument("--top", type=int, default=12, help="stall locations to show")
    args = ap.parse_args()
    opener = gzip.open if args.csv.endswith(".gz") else open
    with opener(args.csv, "rt") as f:
        rows = list(csv.reader(f))
    start = next((i for i, r in enumerate(rows) if r[:2] == ["Address", "Source"]), None)
    if start is None:
        raise SystemExit(f"{args.csv}: no 'Address,Source' header: not ncu's source page "
                         "(--page source --csv --print-source sass)")
    head, data = rows[start], [r for r in rows[start + 1:] if len(r) == len(rows[start])]
    col = {k: i for i, k in enumerate(head)}
    executed = [_number(r[col["Instructions Executed"]]) for r in data]
    samples = [_number(r[col["Warp Stall Sampling (All Samples)"]]) for r in data]
    total_exec, total_samples = sum(executed), sum(samples) or 1.0
    by_exec, by_stall, reasons = collections.Counter(), collections.Counter(), collections.Counter()
    for r, n, s in zip(data, executed, samples, strict=True):
        op = re.match(r"(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)", r[col["Source"]].strip())
        name = op.group(1) if op else "?"
        by_exec[name] += n
        by_stall[name] += s
        for k in head:
            if k.startswith("stall_") and "Not Issued" not in k:
                reasons[k[6:]] += _number(r[col[k]])
    print(f"{len(data)} instructions, {total_exec:.4g} executed (warp-level), {total_samples:.0f} samples")
    print("opcode        executed  stall samples")
    for name, n in by_exec.most_common(24):
        print(f"  {name:10s} {100 * n / total_exec:7.2f} % {100 * by_stall[name] / total_samples:7.2f} %")
    top = reasons.most_common(8)
    print("stall reasons:", ", ".join(f"{k} {100 * v / total_samples:.1f} %" for k, v in top))
    for i in sorted(range(len(data)), key=lambda j: -samples[j])[:args.top]:
        print(f"--- {100 * samples[i] / total_samples:.2f} % at {data[i][col['Source']].strip()}")
        for j in range(max(0, i - 4), i):
            print(f"      {data[j][col['Source']].strip()[:96]}")


if __name__ == "__main__":
    main()
