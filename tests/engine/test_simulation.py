import threading

import numpy as np
import pytest

from diamondlab.engine.backends import available_backends, resolve_backend
from diamondlab.engine.run.simulation import Simulation
from diamondlab.numerics import courant_limit

SHAPE = (23, 19, 10)


def _sim(**kw):
    kw.setdefault("backend", "cpu")
    return Simulation(SHAPE, kw.pop("order", 4), **kw)


@pytest.mark.parametrize("order", [2, 4, 6, 8])
@pytest.mark.parametrize("steps", [1, 7, 13])
def test_diamondtorre_equals_stepwise_for_any_step_count(order, steps):
    dt = Simulation(SHAPE, order, backend="cpu", size=1, nt=5)
    sw = Simulation(SHAPE, order, backend="cpu", size=1, nt=5, algorithm="stepwise")
    dt.run(steps)
    sw.run(steps)
    assert dt.time_step == sw.time_step == steps
    for a, b in zip(dt.fields, sw.fields, strict=True):
        assert np.array_equal(a, b)


def test_runs_accumulate_and_report_throughput():
    sim = _sim(size=2, nt=4)
    first = sim.run(6)
    sim.run(5)
    one_go = _sim(size=2, nt=4)
    one_go.run(11)
    assert sim.time_step == 11
    assert np.array_equal(sim.field, one_go.field)
    assert first.steps == 6 and first.cells == np.prod(SHAPE)
    assert sim.last_run.cells_per_second > 0
    assert sim.time == pytest.approx(11 * sim.params.dt)


def test_stop_event_stops_between_sweeps_at_a_consistent_level():
    sim = _sim(size=1, nt=3)

    def stop_after_two_sweeps(s, stats):
        if stats.steps >= 6:
            s.stop()

    stats = sim.run(30, callback=stop_after_two_sweeps)
    assert stats.interrupted and stats.steps == 6 == sim.time_step
    ref = _sim(size=1, nt=3, algorithm="stepwise")
    ref.run(6)
    assert np.array_equal(sim.field, ref.field)
    event = threading.Event()
    event.set()
    assert sim.run(10, stop_event=event).steps == 0


def test_callback_every_reports_at_its_cadence_and_always_the_last_sweep():
    sim = _sim(size=1, nt=2)
    calls = []
    sim.run(20, callback=lambda s, stats: calls.append(stats.steps), callback_every=3600.0)
    assert calls == [20]  # the run's last sweep, never one in between
    calls.clear()
    sim.run(6, callback=lambda s, stats: calls.append(stats.steps), callback_every=lambda: 0.0)
    assert calls == [2, 4, 6]  # asked after every sweep: 0 is every sweep
    calls.clear()
    event, asked = threading.Event(), []

    def every() -> float:  # asked after every sweep; asks for a stop after the third
        asked.append(sim.time_step)
        if len(asked) == 3:
            event.set()
        return 3600.0

    stats = sim.run(20, callback=lambda s, stats: calls.append((s.time_step, stats.steps)),
                    callback_every=every, stop_event=event)
    assert stats.interrupted and stats.steps == 6
    assert calls == [(32, 6)]  # stopped early: the sweeps since the last call are reported too


def test_traces_are_one_growing_record_read_without_a_copy():
    from diamondlab.sources import Receiver

    sim = _sim(size=1, nt=4, receivers=[Receiver((5, 6, 4), units="grid"), Receiver((9, 9, 5), units="grid")])
    pieces = []
    for steps in (8, 4, 1200):  # past the first capacity (1024 rows): the record grows by doubling
        sim.run(steps)
        pieces.append(sim.traces.copy())
    traces = sim.traces
    assert traces.shape == (1212, 2) and not traces.flags.writeable  # a view: .copy() to change it
    assert np.array_equal(traces[:12], pieces[1]) and np.array_equal(traces[:8], pieces[0])
    assert sim.traces.base is traces.base  # the same record, read again without copying
    one_go = _sim(size=1, nt=4, receivers=sim.receivers)
    one_go.run(1212)
    assert np.array_equal(one_go.traces, traces)
    sim.reset()
    assert sim.traces.shape == (0, 2)
    sim.run(8)  # a new record: what was read before the reset keeps its values
    assert np.array_equal(traces[:8], pieces[0]) and np.array_equal(sim.traces, pieces[0])


def test_initial_conditions():
    a = np.random.default_rng(1).standard_normal(SHAPE).astype(np.float32)
    sim = _sim(initial=(a, 2 * a))
    prev, curr = sim.fields
    assert np.array_equal(prev, a) and np.array_equal(curr, 2 * a)
    sim.run(3)
    sim.reset()
    assert sim.time_step == 0 and np.array_equal(sim.field, 2 * a)
    rest = _sim(initial=a.astype(np.float64))
    assert np.array_equal(rest.fields[0], rest.fields[1])
    zero = _sim(initial="zero")
    zero.run(4)
    assert not zero.field.any()
    gauss = _sim()
    peak = np.unravel_index(np.argmax(gauss.field), SHAPE)
    assert gauss.field.max() > 0.9 and peak[:2] == (11, 9)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"order": 5}, ValueError, r"order \(NO\) must be one of"),
        ({"size": 0}, ValueError, r"size \(DTS\) must be an int >= 1"),
        ({"size": 5}, ValueError, "grid too small for one tile: ny=19"),
        ({"nt": 0}, ValueError, r"nt \(Nt, torre height\)"),
        ({"courant": 0.6}, ValueError, "above the stability limit 0.5"),
        ({"algorithm": "wavefront"}, ValueError, "algorithm must be one of"),
        ({"backend": "tpu"}, ValueError, r"backend must be one of \['cpu', 'cuda', 'auto'\]"),
        ({"initial": np.zeros((3, 3, 3))}, ValueError, r"initial must have shape \(23, 19, 10\)"),
        ({"initial": np.zeros(SHAPE, dtype=int)}, TypeError, "real floating array"),
        ({"initial": "noise"}, ValueError, "initial must be 'gaussian'"),
    ],
)
def test_bad_input_names_the_parameter(kwargs, error, match):
    with pytest.raises(error, match=match):
        _sim(**kwargs)


def test_nan_initial_is_rejected_and_steps_must_be_non_negative():
    bad = np.zeros(SHAPE, dtype=np.float32)
    bad[1, 1, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        _sim(initial=bad)
    with pytest.raises(ValueError, match="steps must be an int >= 0"):
        _sim().run(-1)


def test_courant_at_the_limit_is_accepted():
    assert _sim(order=2, courant=courant_limit(2)).params.courant == pytest.approx(0.57735, 1e-4)


def test_auto_backend_is_cpu_without_a_gpu():
    if "cuda" in available_backends():
        pytest.skip("a GPU is present")
    assert resolve_backend("auto") == "cpu"
    with pytest.raises(RuntimeError, match="cuda"):
        _sim(backend="cuda")


def test_current_view_is_a_read_only_view_of_the_current_level():
    sim = _sim(size=1, nt=3)
    sim.run(4)
    view = sim.current_view()
    assert np.array_equal(view, sim.field) and not view.flags.writeable and not view.flags.owndata


@pytest.mark.parametrize(("budget", "checks"), [(float("inf"), 10), (1e-12, 2)])
def test_sampled_planes_are_checked_within_their_time_budget(monkeypatch, budget, checks):
    """Checked after the first sweep (to learn the cost), then as the budget allows, and at the end."""
    import diamondlab.engine.run.simulation as simulation

    monkeypatch.setattr(simulation, "FINITE_CHECK_BUDGET", budget)
    sim = Simulation((16, 16, 16), 2, backend="cpu", size=2, nt=4)
    calls = []
    check = sim._check_planes
    monkeypatch.setattr(sim, "_check_planes", lambda: calls.append(sim.time_step) or check())
    sim.run(40)
    assert len(calls) == checks and calls[-1] == 40


def test_a_simulation_refuses_a_second_thread_while_it_runs():
    """Issue 27: a run, a reset or a field read from another thread mid-run is refused with a message
    naming the thread that runs it (it used to interleave the sweeps); the run itself goes on whole."""
    from diamondlab.engine.run.simulation import SimulationBusyError

    sim = _sim(order=2, size=1, nt=4)
    inside, gate, seen = threading.Event(), threading.Event(), []

    def callback(s, stats):
        seen.append(s.field.shape)  # the run's own thread reads between sweeps
        with pytest.raises(SimulationBusyError, match="from its own run's callback"):
            s.run(4)
        inside.set()
        gate.wait(30)

    worker = threading.Thread(target=sim.run, args=(12,), kwargs={"callback": callback}, name="the-runner")
    worker.start()
    try:
        assert inside.wait(60)
        for refused in (lambda: sim.run(4), sim.reset, lambda: sim.field, lambda: sim.fields,
                        sim.current_view, lambda: sim.current_planes((1, 1, 1))):  # fmt: skip
            with pytest.raises(SimulationBusyError, match=r"running in thread 'the-runner'.*stop\(\)"):
                refused()
    finally:
        gate.set()
        worker.join(60)
    assert sim.time_step == 12 and seen[0] == SHAPE and isinstance(SimulationBusyError("x"), RuntimeError)
    straight = _sim(order=2, size=1, nt=4)
    straight.run(12)
    assert all(np.array_equal(a, b) for a, b in zip(sim.fields, straight.fields, strict=True))
    sim.run(4)  # free again
    sim.reset()
    assert sim.time_step == 0
