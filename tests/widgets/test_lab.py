"""Drive the lab from Python as a user would: set controllers, press buttons, watch the figures."""

import re

import numpy as np
import pytest

from diamondlab.widgets import Lab

RATE = re.compile(r"<b>([0-9.e+-]+)</b><br><small>current")


def _current_rate(html):
    m = RATE.search(html)
    return float(m.group(1)) if m else None


@pytest.fixture(scope="module")
def lab():
    return Lab(shape=(40, 36, 24), order=2, size=2, nt=4, panels=("Run", "Shapes", "Stages", "Snapshot"))


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


def test_snapshot_panel(lab):
    from diamondlab.viz.snapshots import offscreen_available

    if not offscreen_available():
        pytest.skip("no display, libEGL or libOSMesa: apt-get install libegl1 libosmesa6")
    assert lab.snapshot.snapshot()
    assert lab.snapshot.image.value[:4] == b"\x89PNG"


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
    for module in ("backends", "plan"):  # as on a GPU
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
    gpu.nz.value = 288  # NO=6 DTS=2 keeps its 255 registers up to 256 z cells: DTS drops to 1
    assert gpu.config().size == 1
    cpu = Controls(RunConfig(shape=(64, 64, 128), order=6, backend="cpu"))
    cpu.set(size=2)
    cpu.nz.value = 600
    assert cpu.config().size == 2
