"""A one-hour live run in the lab: resident memory and rate over time (issue 17's soak; a benchmark, not CI).

    python .ci/soak.py [--seconds 3600] [--interval 60] [--shape 64] [--order 2] [--backend cpu]
        [--receivers 2] [--json FILE]

Builds the :class:`~diamondlab.widgets.lab.Lab` as notebook 03 does (a source at the centre,
``--receivers`` receivers, the default sponge) with the view unpaced (full speed, refreshed under
its budget), runs it until paused for ``--seconds``, and every ``--interval`` seconds prints the
step, the resident set size, the bytes the receivers' traces hold (the run's product: they grow with
the steps by design), the records the run keeps and the readout's rates.  "Flat" means resident
memory less the traces stays within a few percent of its value after the first interval.
In this process (no Jupyter kernel: the widgets' messages go nowhere; `widgets.bench` measures the
sending).  Used for BENCHMARKS.md ("A live run for an hour").
"""

import argparse
import gc
import json
import os
import time

from diamondlab.widgets.lab import Lab


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


parser = argparse.ArgumentParser()
parser.add_argument("--seconds", type=float, default=3600.0)
parser.add_argument("--interval", type=float, default=60.0)
parser.add_argument("--shape", type=int, default=64)
parser.add_argument("--order", type=int, default=2)
parser.add_argument("--backend", default="cpu")
parser.add_argument("--receivers", type=int, default=2)
parser.add_argument("--json", default=None)
args = parser.parse_args()
n = args.shape
receivers = [(n // 4 + i, n // 2, n // 2) for i in range(args.receivers)]
lab = Lab(shape=(n, n, n), order=args.order, backend=args.backend, paced=False,
          sources=[(n // 2, n // 2, n // 2, "ricker", 0.05, 1.0)], receivers=receivers)
sim = lab.sim
print(f"{args.backend} {sim.shape} NO={sim.order} DTS={sim.size} Nt={sim.nt}, {sim.physics.summary()}",
      flush=True)
rows, t0 = [], time.perf_counter()
assert lab.run(0), lab.runner.message  # until paused
try:
    while (elapsed := time.perf_counter() - t0) < args.seconds:
        time.sleep(min(args.interval, args.seconds - elapsed))
        gc.collect()
        traces = sim.traces.nbytes  # the rows recorded (the record's spare capacity is not yet resident)
        rec = lab.runner.history[-1] if lab.runner.history else None
        row = {"seconds": round(time.perf_counter() - t0, 1), "step": sim.time_step, "rss_mib": rss_mib(),
               "traces_mib": traces / 2**20, "records": len(lab.runner.history),
               "refreshes": lab.live.refreshes, "current": rec.current if rec else None,
               "average": rec.average if rec else None, "state": lab.runner.state}
        rows.append(row)
        print(f"{row['seconds']:7.0f} s  step {row['step']:9d}  RSS {row['rss_mib']:7.1f} MiB  traces "
              f"{row['traces_mib']:6.2f} MiB  records {row['records']:6d}  refreshes {row['refreshes']:6d}  "
              f"rate {row['current'] or 0:.3f} / {row['average'] or 0:.3f} G/s  {row['state']}", flush=True)
finally:
    lab.runner.pause(wait=True, timeout=120)
    lab.close()
if rows:
    base, last = (r["rss_mib"] - r["traces_mib"] for r in (rows[0], rows[-1]))
    print(f"resident memory less the traces: {base:.1f} MiB after {rows[0]['seconds']:.0f} s, {last:.1f} MiB "
          f"after {rows[-1]['seconds']:.0f} s ({100 * (last / base - 1):+.1f} %)")
if args.json:
    with open(args.json, "w") as f:
        json.dump({"args": vars(args), "rows": rows}, f, indent=1)
