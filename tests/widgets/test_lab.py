"""Drive the lab from Python as a user would: set controllers, press buttons, watch the figures."""

import gc
import re
import threading
import weakref
from dataclasses import replace

import numpy as np
import pytest

from diamondlab.widgets import Lab
from diamondlab.widgets.controls import RunConfig, check_config
from diamondlab.widgets.lrnla import ShapesPanel, StageExplorer

RATE = re.compile(r"<b>([0-9.e+-]+)</b><br><small>current")


def _current_rate(html):
    m = RATE.search(html)
    return float(m.group(1)) if m else None


@pytest.fixture(scope="module")
def lab():
    lab = Lab(shape=(40, 36, 24), order=2, size=2, nt=4, panels=("Run", "Shapes", "Stages", "Snapshot"))
    yield lab
    lab.close()


def test_run_updates_figures_and_readout(lab):
    before = np.array(lab.live.slices.data[0].z, copy=True)
    lab.controls.set(steps=24, courant=0.4)
    lab.controls.run_button.click()
    assert lab.wait(120), lab.runner.message
    assert lab.sim.time_step == 24 and lab.runner.state == "done"
    after = np.asarray(lab.live.slices.data[0].z)
    assert not np.array_equal(before, after)
    assert _current_rate(lab.live.readout.value) > 0
    assert "model" in lab.live.readout.value and "stepwise" in lab.live.readout.value
    assert len(lab.live.history.data[0].y) == len(lab.runner.history) > 0
    assert len(lab.live.traces.data[0].x) >= 2


def test_pause_step_reset(lab):
    lab.controls.set(steps=0)
    lab.controls.run_button.click()  # until paused
    lab.controls.pause_button.click()
    assert lab.wait(60) and lab.runner.state in ("paused", "done")
    assert lab.sim.time_step % lab.sim.nt == 0
    n = lab.sim.time_step
    lab.controls.step_button.click()
    assert lab.wait(60) and lab.sim.time_step == n + lab.sim.nt
    lab.controls.reset_button.click()
    assert lab.sim.time_step == 0 and "n = 0" in lab.live.slices.layout.title.text


def test_invalid_combinations_are_messages(lab):
    lab.controls.set(courant=0.9)
    assert "stability limit" in lab.controls.message.value and lab.controls.run_button.disabled
    assert lab.run() is False  # refused, no exception
    lab.controls.set(courant=0.4, size=40)
    assert "grid too small" in lab.controls.message.value
    lab.controls.set(size=2, backend="cuda")  # always offered; without a GPU it says why
    from diamondlab.engine.backends import available_backends

    if "cuda" not in available_backends():
        assert "GPU" in lab.controls.message.value and lab.run() is False
    lab.controls.set(size=2, backend="cpu")
    assert "ready" in lab.controls.message.value and not lab.controls.run_button.disabled


def test_changing_order_rebuilds_and_views_follow(lab):
    title = lab.shapes.conoids.layout.title.text
    lab.controls.order.value = 4  # defaults for NO=4 fitted to the grid
    cfg = lab.controls.config()
    assert cfg.order == 4 and cfg.size * 4 <= 36
    assert lab.shapes.conoids.layout.title.text != title and "NO=4" in lab.shapes.conoids.layout.title.text
    lab.controls.set(steps=cfg.nt)
    assert lab.run() and lab.wait(120)
    assert lab.sim.order == 4 and lab.sim.time_step == cfg.nt


def test_stage_explorer_steps_through_the_sweep(lab):
    ex = lab.explorer
    ex.stage.value = 1
    first = len(ex.view3d.data[0].x)
    ex.stage.value = ex.stage.max
    assert len(ex.view3d.data[0].x) > first
    levels = np.asarray(ex.levels.data[0].z)
    assert levels.max() == ex.picture.schedule.nt or ex.stage.max < ex.picture.nstages
    assert "reads from" in ex.caption.value


def test_the_snapshot_panel_says_how_to_take_one_instead_of_an_empty_image():
    from diamondlab.widgets.snapshot import PLACEHOLDER, SnapshotPanel

    panel = SnapshotPanel(lambda: None)
    assert panel.image.layout.display == "none" and not panel.image.value  # no broken-image icon
    assert PLACEHOLDER in panel.message.value


def test_snapshot_panel(lab):
    from diamondlab.viz.snapshots import offscreen_available

    if not offscreen_available():
        pytest.skip("no display, libEGL or libOSMesa: apt-get install libegl1 libosmesa6")
    assert lab.snapshot.snapshot()
    assert lab.snapshot.image.value[:4] == b"\x89PNG"
    assert lab.snapshot.image.layout.display is None  # shown from the first picture on


def test_slice_position_follows_the_sliders(lab):
    lab.live.position[2].value = 3
    assert lab.live.index()[2] == 3
    assert lab.live.slices.layout.annotations[0].text == "xy (z = 3)"


def test_gpu_sweep_options_reach_the_simulation_only_on_the_gpu(monkeypatch):
    from diamondlab.widgets.controls import Controls, RunConfig, sweep_choices

    labels = [label for label, _ in sweep_choices()]
    assert labels[0] == "backend default" and "whole-torre waits" in labels
    assert any("bands of 32" in label for label in labels)
    cpu = Controls(RunConfig(shape=(32, 32, 16), backend="cpu", sweep={"pipelined": False}))
    assert cpu.sweep.disabled and "backend_options" not in cpu.config().sim_kwargs()
    gpu = Controls(RunConfig(shape=(32, 32, 16), backend="cuda"))
    assert not gpu.sweep.disabled and "backend_options" not in gpu.config().sim_kwargs()
    gpu.set(sweep={"chunk": 2, "band": 32, "pipelined": True})  # any key order
    assert gpu.config().sim_kwargs()["backend_options"] == {"pipelined": True, "band": 32, "chunk": 2}
    custom = Controls(RunConfig(shape=(32, 32, 16), backend="cuda", sweep={"pipelined": True, "band": 8}))
    assert custom.sweep.options[-1][0] == "pipelined=True, band=8"
    assert custom.config().sim_kwargs()["backend_options"] == {"pipelined": True, "band": 8}
    gpu.set(sweep={"pipelined": True, "band": 4, "chunk": 3})  # not a listed choice: added
    assert gpu.sweep.options[-1][0] == "pipelined=True, band=4, chunk=3"
    for module in ("backends", "run.plan"):  # as on a GPU
        monkeypatch.setattr(f"diamondlab.engine.{module}.resolve_backend", lambda name: "cuda")
    gpu.set(nt=2)
    assert "chunk must be an int in 1..nt=2 (tiers between two waits); got 3" in gpu.message.value
    gpu.lock(True)
    assert gpu.sweep.disabled


def test_gpu_tile_follows_the_z_column():
    from diamondlab.widgets.controls import Controls, RunConfig

    gpu = Controls(RunConfig(shape=(64, 64, 128), order=6, backend="cuda"))
    gpu.set(size=2)
    gpu.nz.value = 200  # still fits: the user's DTS stays
    assert gpu.config().size == 2
    gpu.nz.value = 416  # NO=6 DTS=2 (level n-1 in shared memory) runs up to 384 z cells: DTS drops to 1
    assert gpu.config().size == 1
    cpu = Controls(RunConfig(shape=(64, 64, 128), order=6, backend="cpu"))
    cpu.set(size=2)
    cpu.nz.value = 600
    assert cpu.config().size == 2


# ------------------------------------------------- the Shapes and Stages tabs alone
def test_shapes_panel_shows_the_torres_it_reads_from_and_forgets_old_messages():
    cfg = RunConfig(order=2, size=2, nt=6, shape=(32, 32, 16))
    panel = ShapesPanel(cfg)
    reads = panel.conoids.data[4]
    assert reads.name == "the 3 torres it reads from" and reads.visible is True
    assert panel.conoids.data[0].opacity < 1 and panel.conoids.data[1].opacity < 1
    panel.show_reads.value = False
    assert panel.conoids.data[4].visible == "legendonly"
    bad = replace(cfg, size=40)
    panel.update(bad, check_config(bad))
    assert "not redrawn" in panel.note.value
    panel.update(cfg)  # a valid choice that needs no redrawing
    assert "not redrawn" not in panel.note.value and "NO=2, DTS=2, Nt=6" in panel.note.value
    panel.update(replace(cfg, size=1))  # redrawn: the checkbox still decides
    assert panel.conoids.data[4].visible == "legendonly" and "DTS=1" in panel.note.value


def test_stage_explorer_toggles_the_torres_it_reads_from():
    cfg = RunConfig(order=2, size=2, nt=4, shape=(28, 20, 16))
    ex = StageExplorer(cfg)
    ex.stage.value = ex.stage.max // 2
    shown = len(ex.view3d.data[3].x)
    assert shown > 0 and ex.view3d.data[0].opacity < 1  # green torres in front of translucent stages
    done = len(ex.view3d.data[0].x)
    ex.show_reads.value = False
    assert len(ex.view3d.data[3].x) == 0 and len(ex.view3d.data[0].x) == done + shown
    assert ex.view3d.data[0].opacity == 1
    # the two figures keep their widths and wrap rather than being cut on the right
    row = ex.widget.children[-1]
    assert row.layout.flex_flow == "row wrap" and ex.view3d.layout.width and ex.levels.layout.width
    bad = replace(cfg, nt=0)
    ex.update(replace(cfg, order=2, size=40), "grid too small")  # refused: nothing changes
    assert ex.key == (2, 2, 4, 28, 20)
    ex.update(bad)
    assert "cannot draw" in ex.caption.value
    ex.update(cfg)  # the sweep drawn is this one already: only the caption was stale
    assert "reads from" in ex.caption.value and "cannot draw" not in ex.caption.value

def test_stage_explorer_plays_the_engines_launch_order():
    """The order menu: stage by stage, or diagonal bands as the CUDA engine's sweep hands torres out
    (its own band for the NO, DTS among the choices); the slider then steps through launch groups."""
    from diamondlab.engine.backends.cuda import CUDABackend

    cfg = RunConfig(order=2, size=1, nt=3, shape=(40, 40, 16))
    ex = StageExplorer(cfg)
    s = ex.picture.schedule
    assert ex.stage.max == s.nstages - 1 and ex.order.value == 0
    engine = CUDABackend.launch_band(2, 1)
    assert any(value == engine for _, value in ex.order.options) or engine == 0
    assert "CUDA engine" in ex.caption.value
    ex.order.value = 2  # diagonal bands of 2 torres
    p = ex.picture
    assert p.band == 2 and ex.stage.max == p.nsteps - 1 > s.nstages - 1
    assert (np.concatenate(p.groups) == s.launch_order(2)).all()
    ex.stage.value = 3
    done = np.concatenate(p.groups[:3])
    assert (np.asarray(ex.levels.data[0].z) == s.time_levels_after(done).T).all()  # the map follows
    assert "launch step 4 of" in ex.caption.value and ex.stage.description == "launch steps done"
    ex.order.value = 0
    assert ex.picture.band is None and ex.stage.max == s.nstages - 1


def _live_widgets() -> int:
    from ipywidgets.widgets.widget import _instances  # a widget stays in this registry until closed

    return len(_instances)


def test_close_lets_the_simulation_go(cell):
    widgets_before, threads_before = _live_widgets(), set(threading.enumerate())
    lab = Lab(shape=(24, 20, 16), order=2, size=1, nt=4, backend="cpu", paced=False)
    assert lab.run(8) and lab.wait(60) and lab.sim.time_step == 8
    sim = weakref.ref(lab.sim)
    figure = weakref.ref(lab.explorer.view3d)  # a plotly FigureWidget: anywidget keeps those unless released
    (worker,) = [t for t in threading.enumerate()
                 if t not in threads_before and t.name.startswith("diamondlab-run")]
    assert _live_widgets() > widgets_before
    lab.close()
    gc.collect()
    assert sim() is None and figure() is None  # though ``lab`` is still held (e.g. by Out[] in a notebook)
    assert _live_widgets() == widgets_before and not worker.is_alive()
    lab.close()  # idempotent
    assert lab.closed and lab.run() is False and lab.step() is False and lab.sim is None
    lab.reset()  # no error: nothing to reset


def test_a_new_lab_closes_the_one_its_cell_built(cell, monkeypatch):
    first = Lab(shape=(24, 20, 16), order=2, size=1, nt=4, backend="cpu", panels=("Run",))
    old_lab, old_sim = weakref.ref(first), weakref.ref(first.sim)
    del first  # the cell's variable now names the new lab
    second = Lab(shape=(24, 20, 16), order=2, size=1, nt=4, backend="cpu", panels=("Run",))
    gc.collect()
    assert old_lab() is None and old_sim() is None and not second.closed
    from diamondlab.widgets import labbase

    monkeypatch.setattr(labbase, "_cell_id", lambda: cell + "-other")
    other = Lab(shape=(24, 20, 16), order=2, size=1, nt=4, backend="cpu", panels=("Run",))
    kept = Lab(shape=(24, 20, 16), order=2, size=1, nt=4, backend="cpu", panels=("Run",), replace=False)
    assert not second.closed and not other.closed  # another cell's lab stays; replace=False keeps them
    assert second.run(4) and second.wait(60) and second.sim.time_step == 4
    for lab in (second, other, kept):
        lab.close()


def test_the_equation_picks_the_lab_with_the_same_buttons_and_a_cell_keeps_one_lab_of_either(cell):
    from diamondlab.widgets import MaxwellLab

    acoustic = Lab(shape=(24, 20, 16), order=2, size=1, nt=4, backend="cpu", panels=("Run",), paced=False,
                   equation="acoustic")
    assert type(acoustic) is Lab and not acoustic.closed
    maxwell = Lab(equation="maxwell", shape=(24, 20, 20), pml=4, radius=3, backend="cpu")
    try:
        assert type(maxwell) is MaxwellLab and acoustic.closed  # re-running the cell with another equation
        c = maxwell.controls
        assert [b.description for b in (c.run_button, c.pause_button, c.step_button, c.reset_button)] == \
            [b.description for b in (acoustic.controls.run_button, acoustic.controls.pause_button,
                                     acoustic.controls.step_button, acoustic.controls.reset_button)]
        c.step_button.click()
        assert maxwell.wait(60) and maxwell.sim.time_step == maxwell.sim.nt, maxwell.runner.message
        assert "<b>done</b>" in c.status.value and c.run_button.description == "Run"  # never "Run again"
        c.reset_button.click()
        assert maxwell.sim.time_step == 0 and "<b>idle</b>" in c.status.value
    finally:
        maxwell.close()
    assert maxwell.closed and maxwell.run() is False


def test_default_run_is_watchable():
    lab = Lab(shape=(48, 40, 32), order=2, size=2, nt=4, backend="cpu", courant=0.4, panels=("Run",),
              replace=False)
    pace = lab.live.pace
    assert lab.live.paced.value  # the lab is paced for watching unless asked not to be
    assert lab.controls.steps.value == pace.steps > 0  # the Run button's run is the watchable one
    assert pace.steps * lab.sim.params.courant >= max(lab.sim.shape)  # a wave crosses the box
    lab.controls.set(shape=(64, 40, 32))  # nobody chose a run length: it follows the grid
    assert lab.step() and lab.wait(60)
    assert lab.controls.steps.value == lab.live.pace.steps > pace.steps
    lab.controls.set(steps=12)  # a length chosen by hand stays
    lab.controls.set(shape=(48, 40, 32))
    assert lab.step() and lab.wait(60) and lab.controls.steps.value == 12
    lab.close()


@pytest.mark.slow
def test_rebuilding_the_lab_does_not_grow_memory(soak):
    """Re-running the cell that builds the lab, 12 times: resident memory stays where it was (without
    Lab.close, before issue 17: about 4 MiB more per lab)."""

    def build():
        lab = Lab(shape=(48, 48, 48), order=2, size=2, nt=4, backend="cpu", paced=False)
        assert lab.run(8) and lab.wait(60) and lab.sim.time_step == 8
        return lab

    soak(build)


def test_the_lab_runs_the_plan_it_checked(cell, monkeypatch):
    """The controllers' checked RunPlan is what runs: the lab never builds and checks it again."""
    from diamondlab.engine.run.simulation import Simulation

    def rebuild(*args, **kwargs):
        raise AssertionError("the lab built a second RunPlan through Simulation(...)")

    monkeypatch.setattr(Simulation, "__init__", rebuild)
    lab = Lab(shape=(24, 20, 16), order=2, size=1, nt=4, backend="cpu", paced=False)
    try:
        assert lab.sim.plan.shape == (24, 20, 16) and lab.sim.order == 2
        lab.controls.order.value = 4
        assert lab.step() and lab.wait(60)
        assert lab.sim.order == 4 and lab.sim.time_step > 0
    finally:
        lab.close()


def test_the_xt_explorer_redraws_for_each_control():
    from diamondlab.widgets.lrnla import xt_app
    app = xt_app(order=2, width_cells=8, nx=32, nt=16)
    no, diag, px, pt = app.controls
    before = np.asarray(app.figure.data[0].customdata).copy()
    diag.value = 4  # smaller diamonds: more of them
    assert len(np.unique(app.figure.data[0].customdata)) > len(np.unique(before))
    no.value, px.value, pt.value = 8, 3, 12
    assert "NO=8, diagonal 4" in app.figure.layout.title.text
    assert (app.figure.data[1].x, app.figure.data[1].y) == ((3,), (12,))


def test_each_view_names_its_paper_section_and_present_mode_enlarges_everything(lab):
    from diamondlab.widgets.lab import PAPER_000, PAPER_SECTIONS, PRESENT_FONT, _figures

    for view, tab in zip(lab.tabs.titles, lab.tabs.children, strict=True):
        note = tab.children[0].value
        assert PAPER_000 in note and PAPER_SECTIONS[view] in note
    figures = list(_figures(lab.widget))
    assert len(figures) >= 3  # the live view's, the conoids, the stages
    lab.present.value = True  # the button
    assert "diamondlab-present" in lab.widget._dom_classes
    assert all(f.layout.font.size == PRESENT_FONT for f in figures)
    lab.controls.order.value = 6  # the views redraw: present mode stays
    assert all(f.layout.font.size == PRESENT_FONT for f in _figures(lab.widget))
    lab.set_present(False)
    assert not lab.present.value and "diamondlab-present" not in lab.widget._dom_classes
    assert all(f.layout.font.size is None for f in _figures(lab.widget))
    lab.controls.order.value = 2


def test_running_the_labs_simulation_while_the_lab_runs_it_is_a_clear_error(lab):
    """Issue 27: ``lab.sim.run`` during the lab's own run is refused; the lab's run goes on and pauses."""
    from diamondlab.engine.run.simulation import SimulationBusyError

    inside, gate = threading.Event(), threading.Event()

    def hold(sim, record):
        inside.set()
        gate.wait(30)

    lab.runner.on_sweep(hold)
    lab.controls.set(steps=0)
    try:
        lab.controls.run_button.click()  # until paused
        assert inside.wait(60), lab.runner.message
        with pytest.raises(SimulationBusyError, match=r"running in thread 'diamondlab-run.*stop\(\)"):
            lab.sim.run(4)
    finally:
        lab.runner.off(hold)
        gate.set()
        lab.controls.pause_button.click()
    assert lab.wait(60) and lab.runner.state == "paused" and lab.sim.time_step % lab.sim.nt == 0


def test_run_after_the_wave_has_left_starts_again_from_zero(cell):
    """Notebook 03 ended with three empty slices and Run went on with the empty field: now the live view
    ends the run when the wave has left, says so, and Run ("Run again") starts from n = 0."""
    lab = Lab(shape=(24, 24, 24), order=2, size=2, nt=4, courant=0.4, sponge=5, initial="zero", paced=False,
              sources=[(12, 12, 12, "ricker", 0.06, 1.0)], panels=("Run",))
    try:
        lab.live.min_interval, lab.live.budget, lab.live.record_seconds = 0.0, 1.0, 0.0
        lab.live._set_cadence()
        assert lab.run(steps=0) and lab.wait(120), lab.runner.message  # until paused: the end stops it
        end = lab.sim.time_step
        assert lab.runner.state == "done" and lab.live.ended and end > lab.live.pace.source_peak
        assert "The wave has left the grid" in lab.live.notice.value
        assert lab.controls.run_button.description == "Run again"
        lab.controls.steps.value = lab.live.pace.source_peak + 8  # past the wavelet's peak
        lab.controls.run_button.click()
        assert lab.wait(120) and lab.sim.time_step == lab.live.pace.source_peak + 8 < end  # from n = 0
        assert not lab.live.ended and lab.live.notice.value == ""
        assert float(np.abs(np.asarray(lab.live.slices.data[0].z)).max()) > 0.3 * lab.live.vmax  # a wave
        assert lab.controls.run_button.description == "Run"
    finally:
        lab.close()
