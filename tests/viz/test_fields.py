"""Slices are downsampled views of the current level, cut without copying the field."""

import numpy as np

import diamondlab as dl
from diamondlab.viz.fields import current_level, field_slices, slices_figure, stride_for, update_slices


def test_slices_are_downsampled_and_exact():
    u = np.random.default_rng(0).standard_normal((256, 200, 100)).astype(np.float32)
    s = field_slices(u, index=(10, 20, 30), max_points=96)
    assert s["xy"].shape == (86, 67) and s["xz"].shape == (86, 50) and s["yz"].shape == (67, 50)
    assert np.array_equal(s["xy"], u[::3, ::3, 30]) and np.array_equal(s["yz"], u[10, ::3, ::2])
    assert stride_for(256, 96) == 3


def test_current_level_is_a_view_on_the_cpu():
    sim = dl.Simulation((20, 18, 12), 2, backend="cpu", size=1, nt=3)
    sim.run(5)
    u = current_level(sim)
    assert np.array_equal(u, sim.field)
    assert not u.flags.owndata  # no copy of the whole field


def test_update_slices_in_place():
    fig = slices_figure((24, 20, 16), max_points=8)
    u = np.zeros((24, 20, 16), dtype=np.float32)
    u[12, 9, 8] = 2.0
    update_slices(fig, field_slices(u, max_points=8), title="n = 1")
    assert fig.layout.title.text == "n = 1"
    assert float(np.max(fig.data[0].z)) == 2.0 and fig.data[0].zmax == 2.0
