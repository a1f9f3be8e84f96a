"""The measurement rule's pace probes (issue 29) on a quiet machine and beside one busy-loop process: five
readings of each kind (compute, cache, memory) on two threads, quiet, with a busy loop pinned to cpu1, with
one not pinned, and quiet again; one Markdown table row a reading (pace, rate, best, thread balance,
seconds, steal seconds, the other processes' share).

    DIAMONDLAB_CACHE=/tmp/pace-cache python .ci/pace-probe-readings.py
"""

import multiprocessing
import os
import time

from diamondlab.engine.measure.cpumodel import PACE_KINDS, pace_reading
from diamondlab.engine.measure.timing import LoadProbe, stolen_seconds


def spin() -> None:
    while True:
        pass


def readings(label: str, n: int = 5) -> None:
    for i in range(n):
        for kind in PACE_KINDS:
            s0, t0 = stolen_seconds(), time.perf_counter()
            probe = LoadProbe().start()
            r = pace_reading(kind, 2)
            others = probe.stop()
            dt = time.perf_counter() - t0
            print(f"| {label} | {i + 1} | {kind} | {r.pace:.2f} | {r.rate:.3g} | {r.best:.3g} "
                  f"| {r.balance:.2f} | {dt:.2f} | {stolen_seconds() - s0:.2f} | {others:.0%} |", flush=True)


def main() -> None:
    ctx = multiprocessing.get_context("spawn")
    for _ in range(2):  # compiled, the bests set on a quiet machine
        for kind in PACE_KINDS:
            pace_reading(kind, 2)
    readings("quiet")
    for pin in (True, False):
        spinner = ctx.Process(target=spin, daemon=True)
        spinner.start()
        if pin:
            os.sched_setaffinity(spinner.pid, {1})
        time.sleep(0.2)
        readings("busy loop pinned to cpu1" if pin else "busy loop, not pinned")
        spinner.kill()
        spinner.join()
    readings("quiet again")


if __name__ == "__main__":
    main()
