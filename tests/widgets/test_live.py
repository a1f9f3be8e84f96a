"""The live view a lecturer can show: paced so that a wave can be watched, on a fixed colour scale."""

import re
import time

import numba
import pytest

import diamondlab as dl
from diamondlab.viz.fields import field_slices
from diamondlab.widgets.live import RECORD_SECONDS, LiveView, watch_pace
from diamondlab.widgets.points import make_points
from diamondlab.widgets.runner import BackgroundRun


def _no_model(sim):
    return 1.0, 1.0, "test"


@pytest.mark.parametrize(("nt", "frames"), [(8, 64), (32, 16)])  # the CPU's and the GPU's tiling at 128^3
def test_default_run_crosses_the_box_in_seconds(nt, frames):
    sim = dl.Simulation((128, 128, 128), 2, backend="cpu", size=2, nt=nt, courant=0.25)
    pace = watch_pace(sim)
    cells_per_step = sim.params.courant  # c dt / h
    assert pace.steps_per_frame % sim.nt == 0  # frames between sweeps, where the engine stops
    frames_to_cross = max(sim.shape) / cells_per_step / pace.steps_per_frame
    assert frames_to_cross == pytest.approx(pace.crossing_frames) and frames_to_cross >= frames
    assert frames_to_cross * pace.frame_interval >= 4.0  # seconds at the default frame rate
    assert pace.fps <= 12.0
    assert pace.frames >= frames_to_cross and pace.steps * cells_per_step >= max(sim.shape)  # it crosses


def test_pace_waits_for_the_sources_and_keeps_a_small_grid_moving():
    srcs, _ = make_points([(16, 16, 16, "ricker", 0.06, 1.0)])
    sim = dl.Simulation((32, 32, 32), 2, backend="cpu", size=2, nt=16, courant=0.25, sources=srcs)
    pace = watch_pace(sim)
    peak = 1.5 / 0.06 / sim.params.dt  # the ricker wavelet peaks at its delay
    assert pace.steps >= max(sim.shape) / sim.params.courant + peak - pace.steps_per_frame
    assert pace.frame_interval == pytest.approx(0.5)  # 8 frames per crossing: at least 2 frames a second


def test_a_paced_run_takes_the_time_it_should():
    sim = dl.Simulation((24, 24, 24), 2, backend="cpu", size=1, nt=2, courant=0.4)
    run = BackgroundRun(sim)
    live = LiveView(run, model=_no_model, paced=True, crossing_seconds=1.5)
    pace = live.pace
    assert run.report_every == 0.0  # paced: frames fall on sweeps, so every sweep is reported
    assert pace.steps_per_frame == 4 and pace.frame_interval == pytest.approx(0.1)  # 15 frames a crossing
    assert run.step() and run.wait(60)  # compiled, off the clock
    before = live.refreshes
    t0 = time.perf_counter()
    assert run.run(10 * pace.steps_per_frame) and run.wait(60)
    paced = time.perf_counter() - t0
    assert paced >= 9 * pace.frame_interval  # frame k shows k intervals after the start
    assert live.refreshes - before >= 10  # every frame is shown
    live.paced.value = False  # full speed, for a measurement
    t0 = time.perf_counter()
    assert run.run(10 * pace.steps_per_frame) and run.wait(60)
    assert time.perf_counter() - t0 < paced / 2
    assert run.report_every == RECORD_SECONDS
    assert run.history[-1].time_step == sim.time_step  # the run's last sweep is reported
    live.close()
    assert run.report_every == 0.0  # a closed view leaves the run as it found it
    run.close()


def test_colour_range_follows_the_field_by_its_rule_and_the_title_gives_step_and_time():
    from diamondlab.viz.fields import COLOUR_RULE, FADED, HEADROOM, SHRINK, field_level

    sim = dl.Simulation((32, 32, 32), 2, backend="cpu", size=2, nt=4, courant=0.4)
    run = BackgroundRun(sim)
    live = LiveView(run, model=_no_model, paced=False)
    assert run.report_every == RECORD_SECONDS  # unpaced: a few records a second, sweeps queue between
    first = field_level([field_slices(sim, max_points=32)[p] for p in ("xy", "xz", "yz")])
    assert live.vmax == pytest.approx(HEADROOM * first) and COLOUR_RULE in live.caption.value  # stated
    run.report_every = 0.0  # this test looks at every sweep
    frames = []

    def seen(sim, record):  # every sweep a frame, as a paced run shows them
        live.refresh(sim, record)
        level = field_level([field_slices(sim, index=live.index(), max_points=live.max_points)[p]
                             for p in ("xy", "xz", "yz")])
        frames.append((sim.time_step, level, live.slices.data[0].zmax, live.slices.data[0].zmin,
                       live.slices.layout.title.text))

    run.on_sweep(seen)
    assert run.run(40) and run.wait(60), run.message
    assert frames[-1][1] < first / 3  # the pulse has spread: a fixed range would have washed it out
    assert len(frames) == 10 and len({zmax for _, _, zmax, _, _ in frames}) > 1  # the range followed
    top = max(first, *(level for _, level, *_ in frames))
    for step, level, zmax, zmin, title in frames:
        assert zmin == -zmax and level <= zmax  # never saturated
        assert level >= SHRINK * zmax or zmax == pytest.approx(FADED * top)  # never washed out
        assert re.search(rf"n = {step}\b", title) and f"t = {step * sim.params.dt:.4g}" in title
        assert f"±{zmax:.3g}" in title
    assert f"t = {sim.time:.4g}" in live.readout.value
    assert not live.ended and run.state == "done"  # a pulse in a closed box never leaves
    live.close()
    run.close()


def test_a_run_whose_wave_has_left_says_so_and_ends():
    srcs, _ = make_points([(12, 12, 12, "ricker", 0.06, 1.0)])
    sim = dl.Simulation((24, 24, 24), 2, backend="cpu", size=2, nt=4, courant=0.4, sources=srcs, sponge=5,
                        initial="zero")
    run = BackgroundRun(sim)
    live = LiveView(run, model=_no_model, paced=False, min_interval=0.0, budget=1.0, record_seconds=0.0)
    assert run.run(0) and run.wait(120), run.message  # until paused: the view ends it
    assert run.state == "done" and "the wave has left the grid" in run.message, run.message
    assert live.ended and "The wave has left the grid" in live.notice.value
    assert sim.time_step >= live.pace.source_peak
    assert live.slices.data[0].zmax > 0 and f"n = {sim.time_step}" in live.notice.value
    run.reset()  # back to n = 0: the record of the wave starts over
    assert not live.ended and live.notice.value == ""
    live.close()
    run.close()


def test_the_end_is_seen_when_drawings_are_far_apart(monkeypatch):
    """On a loaded 2-core machine a drawing cost a second, so the view drew every half minute: after Run
    again the first drawing came after the wave had passed, its tail was taken for the wave's largest level
    and the run went on with an empty field.  The level is now followed between drawings."""
    import diamondlab.widgets.live as live_module

    draw = live_module.update_slices

    def slow_draw(*args, **kwargs):  # a drawing as costly as on that machine
        time.sleep(0.4)
        return draw(*args, **kwargs)

    monkeypatch.setattr(live_module, "update_slices", slow_draw)
    srcs, _ = make_points([(12, 12, 12, "ricker", 0.06, 1.0)])
    sim = dl.Simulation((24, 24, 24), 2, backend="cpu", size=2, nt=4, courant=0.4, sources=srcs, sponge=5,
                        initial="zero")
    run = BackgroundRun(sim)
    live = LiveView(run, model=_no_model, paced=False, min_interval=0.0, budget=0.004, record_seconds=0.0)
    assert run.step() and run.wait(120), run.message  # compiled
    run.reset()  # as Run again does: drawn at n = 0, then a drawing at most every 100 s
    drawn = live.refreshes
    assert run.run(0) and run.wait(120), run.message  # until paused: the view ends it
    assert run.state == "done" and "the wave has left the grid" in run.message, run.message
    assert live.ended and sim.time_step >= live.pace.source_peak
    assert live.refreshes - drawn <= 2 and live.watches >= 1  # ended between drawings; the last one drawn
    live.close()
    run.close()


def test_the_wave_is_looked_at_past_the_sources_peak_however_far_apart_the_looks_are():
    """The view's looks at the field are spaced by ``min_interval``; the first sweep past the sources' peak
    is looked at all the same, so the wave's largest level is known and its end seen (without it the first
    look after Run again came after the wave had passed, and the run went on with an empty field)."""
    srcs, _ = make_points([(12, 12, 12, "ricker", 0.06, 1.0)])
    sim = dl.Simulation((24, 24, 24), 2, backend="cpu", size=2, nt=4, courant=0.4, sources=srcs, sponge=5,
                        initial="zero")
    run = BackgroundRun(sim)
    live = LiveView(run, model=_no_model, paced=False, min_interval=0.0, budget=1.0, record_seconds=0.0)
    assert run.run(0) and run.wait(120), run.message  # every sweep looked at: the wave's largest level
    largest = live._level_max
    run.reset()
    live.min_interval = 2.0  # the wave crosses the grid between two looks
    assert run.run(0) and run.wait(120), run.message
    assert run.state == "done" and "the wave has left the grid" in run.message, run.message
    assert live._level_max >= 0.5 * largest, (live._level_max, largest)
    live.close()
    run.close()


def test_readout_names_the_medium_and_points_and_models_the_velocity_model(monkeypatch):
    from diamondlab.engine.measure.perfmodel import predict
    from diamondlab.media import layered_model
    from diamondlab.sources import Receiver, Source
    from diamondlab.widgets.live import _default_model

    shape = (24, 20, 16)
    sim = dl.Simulation(shape, 2, backend="cpu", size=2, nt=4, sponge=3,
                        velocity=layered_model(shape, (1.0, 1.5)),
                        sources=[Source((12, 10, 8), frequency=0.05, units="grid")],
                        receivers=[Receiver((5, 5, 5), units="grid"), Receiver((18, 14, 9), units="grid")])
    run = BackgroundRun(sim)
    live = LiveView(run, model=_no_model, paced=False)
    live.refresh(sim, None)
    assert "layered velocity model, sponge 3, 1 source, 2 receivers" in live.readout.value
    live.close()
    run.close()
    # the byte model counts K: 16 bytes a stepwise update, 4 / Nt more for DiamondTorre
    assert predict("stepwise", 2, velocity_model=True).bytes_per_update == 16.0
    plain, with_k = predict("diamondtorre", 2, 2, 4), predict("diamondtorre", 2, 2, 4, velocity_model=True)
    assert with_k.bytes_per_update == pytest.approx(plain.bytes_per_update + 1.0)
    from diamondlab.engine.measure import cpumodel
    from diamondlab.media import anomaly_model

    numbers = cpumodel.CPUNumbers("test", 2, (cpumodel.Level("L2", 2**20, 200e9),
                                              cpumodel.Level("memory", float("inf"), 30e9, False)), 0.0,
                                  compute={"2,16,model": 4e9, "2,16,sponge": 5e9})  # injected: nothing timed
    monkeypatch.setattr(cpumodel, "_numbers", {numba.get_num_threads(): numbers})
    rate, stepwise, bound = _default_model(sim)  # the CPU spreads a layered K over the cells: K per cell
    assert bound.endswith("-bound, K per cell") and rate > 0 and stepwise > 0
    model = cpumodel.predict_cpu("diamondtorre", 2, shape, 2, 4, numbers, variant="layered")
    assert rate == pytest.approx(model.rate / 1e9) and bound.startswith(model.bound)
    other = dl.Simulation(shape, 2, backend="cpu", size=2, nt=4, sponge=3)
    assert "K per cell" not in _default_model(other)[2]
    other = dl.Simulation(shape, 2, backend="cpu", size=2, nt=4, velocity=anomaly_model(shape, 1.5, 1.0))
    assert "K per cell" in _default_model(other)[2]


def test_the_readout_says_a_busy_machine_instead_of_a_share_of_the_model():
    from diamondlab.widgets.runner import SweepRecord

    sim = dl.Simulation((24, 20, 16), 2, backend="cpu", size=2, nt=4)
    run = BackgroundRun(sim)
    live = LiveView(run, model=_no_model, paced=False)
    live.models(sim, compute=True)  # as the run's worker does at the start of a run
    quiet = SweepRecord(4, 4, 0.5, 0.5, 0.5, 0.01, busy=0.0)
    live.refresh(sim, quiet)
    assert "= 50% of the model" in live.readout.value and "not steady" not in live.readout.value
    live.refresh(sim, SweepRecord(8, 4, 0.2, 0.4, 0.4, 0.01, busy=0.6))
    said = "machine busy (other processes took 60% of its CPU): the rates are not steady"
    assert said in live.readout.value
    assert "of the model" not in live.readout.value
    live.close()
    run.close()
