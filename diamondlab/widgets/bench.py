"""Benchmark: what watching a run live costs, against the same run without the lab's view.

Contract
--------
:func:`measure` builds one simulation and one
:class:`~diamondlab.widgets.runner.BackgroundRun`, then alternates, for
``trials`` rounds, a plain ``sim.run(steps)`` submitted to the run's worker
thread (no listener: "without the widget") and the same run watched by a
:class:`~diamondlab.widgets.live.LiveView` (slices, traces, readout and
history refreshed under its time budget).  Both use the same thread, grid
and kernels, so the difference is the cost of watching.  Throughput is
cell updates over wall-clock time from submission to the end of the run;
the result holds the medians, their ratio, the median of the ratios of
each trial's pair (robust to drifting load), every trial, and the share of
the watched runs' wall time spent refreshing (the direct cost, which load
on other cores does not blur), and the machine's load over the trials (the
measurement rule's :class:`~diamondlab.engine.measure.timing.LoadProbe`;
``"flag"`` says a busy machine).

Widgets only send their updates where a kernel is connected, so the honest
number comes from a Jupyter kernel: ``python -m diamondlab.widgets.bench``
executes :func:`measure` in a fresh ipykernel through nbclient (the
messages travel to a client over ZeroMQ as they would to JupyterLab);
``--here`` runs it in the current process instead.

``--equation maxwell`` measures the Maxwell lab's view
(:class:`~diamondlab.widgets.maxwell_lab.MaxwellView`: three planes, probe
traces, spectra, the readout) by the same rule, on a vacuum run or, with
``--scene lab``, on the Maxwell lab's default scene; the readout's average
is reported next to the engine's own measurement of the same run
(:class:`~diamondlab.engine.run.simulation.RunStats`), so that the lab's
number can be held against ``.ci/maxwell-bench.py`` on the same grid.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import warnings

__all__ = ["main", "measure"]


#: What a Maxwell run measured holds: ``"plain"`` the vacuum (no object, source, CPML or monitor), ``"lab"``
#: the Maxwell lab's default scene on the grid (:class:`~diamondlab.widgets.maxwell_controls.MaxwellConfig`'s
#: defaults: a Drude sphere lit by a plane wave in a CPML, probes and two flux planes).
SCENES = ("plain", "lab")


def _simulation(equation: str, scene: str, shape, order: int, backend: str, size, nt):
    """The simulation measured (checked before it is built)."""
    from diamondlab.engine.equations import EQUATIONS
    from diamondlab.engine.run.simulation import Simulation

    if equation not in EQUATIONS:
        raise ValueError(f"equation must be one of {EQUATIONS}; got {equation!r}")
    if scene not in SCENES:
        raise ValueError(f"scene must be one of {SCENES}; got {scene!r}")
    if scene == "lab" and equation != "maxwell":
        raise ValueError("scene 'lab' (the Maxwell lab's default scene) needs equation='maxwell'; "
                         "acoustic runs are plain")
    if scene == "plain":
        extra = {"equation": "maxwell"} if equation == "maxwell" else {}
        return Simulation(tuple(shape), order, size=size, nt=nt, backend=backend, **extra)
    from diamondlab.widgets.maxwell_controls import MaxwellConfig, build_maxwell

    return build_maxwell(MaxwellConfig(shape=tuple(shape), order=order, size=size or 0, nt=nt or 0,
                                       backend=backend))


def _quiet(fn, *args):
    """``fn(*args)`` without the warning that a short run ends before a source's pulse (as the lab's runs)."""
    from diamondlab.engine.run.simulation import SourceTimingWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SourceTimingWarning)
        return fn(*args)


def measure(shape=(256, 256, 256), order: int = 2, sweeps: int = 20, trials: int = 5, backend: str = "cpu",
            size: int | None = None, nt: int | None = None, record_seconds: float | None = None,
            equation: str = "acoustic", scene: str = "plain") -> dict:
    """Plain against watched runs of ``sweeps`` sweeps, alternated ``trials`` times (module contract).

    ``equation="maxwell"`` measures the Maxwell lab's view
    (:class:`~diamondlab.widgets.maxwell_lab.MaxwellView`) on a Maxwell run of ``scene`` (:data:`SCENES`),
    in Yee cell updates; else the acoustic lab's (:class:`~diamondlab.widgets.live.LiveView`).
    ``record_seconds`` is the view's (``None``: its default; ``0``: a record after every sweep, which waits
    for the device after each one).  Besides the medians, the result holds the readout's average
    (``readout_gcells``, the lab's "average") next to the engine's own measurement of the same sweeps
    (``engine_gcells``: the watched runs' :class:`~diamondlab.engine.run.simulation.RunStats`, less the
    first sweep, which the readout leaves out) and their ratio, which is 1 to rounding where the readout
    adds the engine's kernel time correctly.

    >>> measure((16, 16, 8), scene="lab")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: scene 'lab' (the Maxwell lab's default scene) needs equation='maxwell'; ...
    """
    from diamondlab.engine.measure.bench import measure_simulation
    from diamondlab.widgets.runner import BackgroundRun

    sim = _simulation(equation, scene, shape, order, backend, size, nt)
    if equation == "maxwell":
        from diamondlab.widgets.maxwell_lab import MaxwellView as View
    else:
        from diamondlab.widgets.live import LiveView as View
    run = BackgroundRun(sim)
    steps = sweeps * sim.nt
    run.submit(_quiet, sim.run, sim.nt).result()  # compile and warm up in the worker thread

    def plain() -> float:  # the engine's measurement, in the same worker thread as the watched runs
        # one run a trial, paired with one watched run (the pairs' medians are the rule's here)
        return run.submit(_quiet, measure_simulation, sim, steps, 1, False, 0.0).result().gcells

    view, watched_seconds, kernel_seconds, first = None, [], [], None

    def watched() -> float:
        nonlocal view, first
        if view is None:
            view = View(run) if record_seconds is None else View(run, record_seconds=record_seconds)
            run.submit(view._on_start, sim).result()  # the model, measured once, outside the timing
            view.refreshes, view.refresh_seconds = 0, 0.0
        t0 = time.perf_counter()
        run.run(steps)
        run.wait()
        watched_seconds.append(time.perf_counter() - t0)
        kernel_seconds.append(sim.last_run.seconds)  # the engine's own measurement of the run
        if first is None and run.history:
            first = run.history[0]  # the sweep the readout's average leaves out
        return steps * sim.cells / watched_seconds[-1] / 1e9

    from diamondlab.engine.measure.timing import BUSY_SHARE, LoadProbe

    probe = LoadProbe().start()
    rows = [{"plain": plain(), "watched": watched()} for _ in range(trials)]
    busy = probe.stop()
    plain_median = statistics.median(r["plain"] for r in rows)
    watched_median = statistics.median(r["watched"] for r in rows)
    readout = run.history[-1].average if run.history else None
    # the engine's kernel time of the sweeps the readout averages: every watched run's, less the first sweep
    kernel = sum(kernel_seconds) - (first.seconds if first else 0.0)
    updates = (steps * len(kernel_seconds) - (first.steps if first else 0)) * sim.cells
    engine = updates / kernel / 1e9 if kernel > 0 and updates > 0 else None
    result = {
        "equation": equation, "scene": scene,
        "shape": list(sim.shape), "order": sim.order, "size": sim.size, "nt": sim.nt,
        "backend": sim.backend_name, "steps_per_trial": steps, "trials": rows,
        "plain_gcells": plain_median, "watched_gcells": watched_median,
        "cost": 1.0 - watched_median / plain_median,
        "paired_cost": 1.0 - statistics.median(r["watched"] / r["plain"] for r in rows),
        "refreshes": view.refreshes if view else 0,
        "refresh_seconds": view.refresh_seconds if view else 0.0,
        "refresh_share": (view.refresh_seconds / sum(watched_seconds)) if view else 0.0,
        "record_seconds": view.record_seconds if view else None,
        "readout_gcells": readout,  # the lab's "average"
        "engine_gcells": engine,  # the engine's own measurement of the same sweeps
        "readout_to_engine": readout / engine if readout and engine else None,
        "readout_to_plain": readout / plain_median if readout else None,
        "busy": busy, "flag": ("machine load unknown" if busy is None else
                               f"machine busy (others {busy:.0%} of its CPU)" if busy > BUSY_SHARE else ""),
    }
    if view is not None:
        view.close()
    run.close()
    return result


def _in_kernel(kwargs: dict) -> dict:
    from nbclient import NotebookClient
    from nbformat.v4 import new_code_cell, new_notebook

    code = ("import json\nfrom diamondlab.widgets.bench import measure\n"
            f"print('RESULT' + json.dumps(measure(**{kwargs!r})))")
    nb = new_notebook(cells=[new_code_cell(code)])
    NotebookClient(nb, timeout=1800, kernel_name="python3").execute()
    text = "".join(o.get("text", "") for o in nb.cells[0].outputs)
    return json.loads(text.split("RESULT", 1)[1])


def main(argv=None) -> None:
    """``python -m diamondlab.widgets.bench``: print the cost of watching a run (see :func:`measure`)."""
    from diamondlab.engine.equations import EQUATIONS

    parser = argparse.ArgumentParser(description="cost of watching a run live in the lab")
    parser.add_argument("--shape", type=int, nargs=3, default=(256, 256, 256))
    parser.add_argument("--order", type=int, default=2)
    parser.add_argument("--sweeps", type=int, default=20)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--size", type=int, default=None, help="DTS (default: the backend's)")
    parser.add_argument("--nt", type=int, default=None, help="Nt (default: the backend's)")
    parser.add_argument("--equation", choices=EQUATIONS, default="acoustic",
                        help="maxwell: the Maxwell lab's view, in Yee cell updates")
    parser.add_argument("--scene", choices=SCENES, default="plain",
                        help="a Maxwell run's scene: plain (vacuum) or lab (the Maxwell lab's default scene)")
    parser.add_argument("--record-seconds", type=float, default=None,
                        help="seconds between two records of a watched run (0: every sweep)")
    parser.add_argument("--json", default=None, help="also append the result as one JSON line to this file")
    parser.add_argument("--here", action="store_true", help="run in this process, not in a Jupyter kernel")
    args = parser.parse_args(argv)
    kwargs = dict(shape=tuple(args.shape), order=args.order, sweeps=args.sweeps, trials=args.trials,
                  backend=args.backend, size=args.size, nt=args.nt, record_seconds=args.record_seconds,
                  equation=args.equation, scene=args.scene)
    result = measure(**kwargs) if args.here else _in_kernel(kwargs)
    unit = "G Yee cell updates/s" if result["equation"] == "maxwell" else "G cell updates/s"
    for i, r in enumerate(result["trials"]):
        print(f"trial {i}: plain {r['plain']:.3f}  watched {r['watched']:.3f} {unit}")
    nan = float("nan")
    readout, engine = result["readout_gcells"] or nan, result["engine_gcells"] or nan
    print(f"{result['equation']} ({result['scene']}) {result['backend']} {tuple(result['shape'])} "
          f"NO={result['order']} DTS={result['size']} Nt={result['nt']}, {result['steps_per_trial']} steps "
          f"per trial: median plain {result['plain_gcells']:.3f}, watched {result['watched_gcells']:.3f} "
          f"{unit}; "
          f"watching costs {100 * result['cost']:.1f} % (median of the paired trials: "
          f"{100 * result['paired_cost']:.1f} %; {result['refreshes']} refreshes, "
          f"{result['refresh_seconds']:.2f} s refreshing = {100 * result['refresh_share']:.1f} % of the "
          f"watched runs' time); the readout's average {readout:.3f} against the engine's "
          f"{engine:.3f} for the same sweeps ({readout / engine:.3f}x; "
          f"{readout / result['plain_gcells']:.3f}x "
          "the plain median), a record every "
          f"{result['record_seconds']} s")
    if result.get("flag"):
        print(f"not a steady measurement: {result['flag']}")
    if args.json:
        with open(args.json, "a") as f:
            f.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
