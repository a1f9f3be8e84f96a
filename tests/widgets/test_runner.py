"""The background run: responsive, pausable, always at one consistent time level."""

import threading
import time

import numpy as np

import diamondlab as dl
from diamondlab.widgets.runner import BackgroundRun


def _sim(**kw):
    return dl.Simulation((20, 18, 12), 2, backend="cpu", size=1, nt=4, **kw)


def test_run_returns_at_once_and_records_every_sweep():
    run = BackgroundRun(_sim())
    seen, gate = [], threading.Event()  # the first sweep waits at the gate: the run is still going below
    run.on_sweep(lambda sim, rec: seen.append((sim.time_step, rec.current)) or gate.wait(60))
    assert run.run(20)
    assert not run.run(4)  # one run at a time
    gate.set()
    assert run.wait(60) and run.state == "done"
    assert [t for t, _ in seen] == [4, 8, 12, 16, 20]
    assert all(rate > 0 for _, rate in seen) and run.history[-1].average > 0
    # each record carries the machine's load since the last one (the measurement rule's, None: unknown)
    assert all(r.busy is None or 0.0 <= r.busy <= 1.0 for r in run.history)


def test_pause_stops_at_a_consistent_level():
    run = BackgroundRun(_sim())
    run.run(None)  # until paused
    deadline = time.time() + 60
    while len(run.history) < 3 and time.time() < deadline:
        time.sleep(0.01)
    run.pause(wait=True, timeout=60)
    assert run.state == "paused"
    n = run.sim.time_step
    assert n % 4 == 0 and n >= 12
    reference = _sim()
    reference.run(n)
    assert all(np.array_equal(a, b) for a, b in zip(run.sim.fields, reference.fields, strict=True))


def test_step_reset_and_errors_become_state():
    run = BackgroundRun(_sim())
    assert run.step() and run.wait(60) and run.sim.time_step == 4
    run.reset()
    assert run.sim.time_step == 0 and run.history == [] and run.state == "idle"
    run.on_sweep(lambda sim, rec: 1 / 0)  # a broken view does not stop the run
    run.run(8)
    assert run.wait(60) and run.sim.time_step == 8 and "ZeroDivisionError" in run.listener_error
    run.replace(None)
    run.run(4)
    assert run.wait(60) and run.state == "error" and "AttributeError" in run.message


def test_pace_waits_between_sweeps_and_a_pause_ends_the_wait():
    run = BackgroundRun(_sim())
    waits = []
    run.on_sweep(lambda sim, rec: waits.append(run.pace(0.2)))
    t0 = time.perf_counter()
    assert run.run(12) and run.wait(60)
    assert time.perf_counter() - t0 >= 3 * 0.2 * 0.9 and waits == [True, True, True]
    waits.clear()
    run.run(None)  # until paused: the pause interrupts the wait
    while not waits and run.running:
        time.sleep(0.01)
    t0 = time.perf_counter()
    run.on_sweep(lambda sim, rec: run.pace(30.0))
    run.pause(wait=True, timeout=60)
    assert time.perf_counter() - t0 < 10 and run.state == "paused"


def test_close_ends_the_worker_and_drops_the_simulation():
    import gc
    import threading
    import weakref

    before = set(threading.enumerate())
    run = BackgroundRun(_sim())
    run.on_state(lambda state, message: None)
    assert run.run(None)  # running until paused: close stops it
    (worker,) = [t for t in threading.enumerate() if t not in before and t.name.startswith("diamondlab-run")]
    sim = weakref.ref(run.sim)
    run.close()
    gc.collect()
    assert sim() is None and run.sim is None and run.state == "closed" and not run.running
    assert not worker.is_alive()
    assert run.run(4) is False and run.step() is False and run.submit(print) is None
    run.reset()
    run.close()  # idempotent


def test_history_keeps_the_newest_records_only(monkeypatch):
    """A long run keeps at most twice HISTORY_KEEP records (an hour of them was tens of megabytes)."""
    monkeypatch.setattr(BackgroundRun, "HISTORY_KEEP", 3)
    run = BackgroundRun(_sim())
    assert run.run(4 * 10) and run.wait(60)
    assert 3 <= len(run.history) <= 6 and run.history[-1].time_step == 40  # the newest kept
    assert [r.time_step for r in run.history] == sorted(r.time_step for r in run.history)
    run.close()


def test_a_run_until_paused_records_every_chunk_right(monkeypatch):
    """Running until paused goes chunk by chunk (Simulation.run calls): every record counts the steps
    and seconds of its own sweeps (a new chunk once made the record negative and the average wrong)."""
    monkeypatch.setattr(BackgroundRun, "CHUNK_SWEEPS", 2)
    run = BackgroundRun(_sim())
    assert run.run()  # until paused
    deadline = time.perf_counter() + 60
    while run.sim.time_step < 4 * 2 * 5 and time.perf_counter() < deadline:  # five chunks or more
        time.sleep(0.01)
    run.pause(wait=True, timeout=60)
    assert run.sim.time_step >= 40
    assert all(r.steps > 0 and r.seconds > 0 and r.current > 0 for r in run.history)
    assert sum(r.steps for r in run.history) == run.sim.time_step
    run.close()


def test_the_user_running_the_simulation_of_a_running_worker_gets_a_clear_error():
    """Issue 27: ``run.sim.run`` while the worker runs it is refused (it used to interleave)."""
    import pytest

    from diamondlab.engine.run.simulation import SimulationBusyError

    run = BackgroundRun(_sim())
    inside, gate = threading.Event(), threading.Event()
    run.on_sweep(lambda sim, rec: inside.set() or gate.wait(30))
    assert run.run(12)
    try:
        assert inside.wait(60)
        with pytest.raises(SimulationBusyError, match=r"running in thread 'diamondlab-run"):
            run.sim.run(4)
    finally:
        gate.set()
    assert run.wait(60) and run.state == "done" and run.sim.time_step == 12
    run.close()
