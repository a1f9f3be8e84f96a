"""Sources and receivers from the controllers: add, move, remove; traces grow in the live view."""

import numpy as np

from diamondlab.widgets import Lab


def test_sources_and_receivers_drive_the_run():
    lab = Lab(shape=(40, 36, 28), order=2, size=2, nt=4, panels=("Run",), sponge=6)
    pts = lab.controls.points
    pts.add_source_button.click()
    pts.add_receiver_button.click()
    pts.add_receiver()
    cfg = lab.controls.config()
    assert len(cfg.sources) == 1 and len(cfg.receivers) == 2 and cfg.initial == "zero"
    assert "ready" in lab.controls.message.value or "wavelength" in lab.controls.message.value
    pts.move("source", 0, (100, 10, 10))  # outside the grid: a message, not a traceback
    assert "outside the grid" in lab.controls.message.value and lab.run() is False
    pts.move("source", 0, (20, 18, 14))
    pts.sources[0].frequency.value = 5.0  # aliases on this grid
    assert "aliases" in lab.controls.message.value
    pts.sources[0].frequency.value = 0.06
    pts.sponge.value = 16  # leaves no interior in 28 cells
    assert "no interior" in lab.controls.message.value
    pts.sponge.value = 6
    pts.remove(pts.receivers[1])
    lab.controls.set(steps=24)
    assert lab.run() and lab.wait(120), lab.runner.message
    sim = lab.sim
    assert len(sim.sources) == 1 and len(sim.receivers) == 1 and sim.traces.shape == (24, 1)
    y = np.asarray(lab.live.traces.data[0].y)
    assert len(y) == 24 and np.abs(y).max() > 0
    assert "receiver 0" in lab.live.traces.data[0].name
