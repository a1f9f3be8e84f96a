"""Slices are downsampled views of the current level, cut without copying the field."""

import numpy as np
import pytest

import diamondlab as dl
from diamondlab.viz.fields import current_level, field_slices, slices_figure, stride_for, update_slices


def test_slices_are_downsampled_and_exact():
    u = np.random.default_rng(0).standard_normal((256, 200, 100)).astype(np.float32)
    s = field_slices(u, index=(10, 20, 30), max_points=96)  # strides 3, 3, 2 sampled through the point
    assert s["xy"].shape == (85, 66) and s["xz"].shape == (85, 50) and s["yz"].shape == (66, 50)
    assert np.array_equal(s["xy"], u[1::3, 2::3, 30]) and np.array_equal(s["yz"], u[10, 2::3, ::2])
    assert s["x"][0] == 1 and 10 in s["x"] and 20 in s["y"] and 30 in s["z"] and s["value"] == u[10, 20, 30]
    assert stride_for(256, 96) == 3


def test_simulation_planes_are_the_slices_of_its_field():
    sim = dl.Simulation((23, 19, 14), 2, backend="cpu", size=1, nt=3)
    sim.run(4)
    u = sim.field
    for index, strides in (((5, 7, 3), (2, 3, 4)), ((0, 18, 13), (1, 1, 1)), ((22, 0, 0), (5, 4, 3))):
        xy, xz, yz = sim.current_planes(index, strides)
        s = field_slices(u, index=index, max_points=max(u.shape))
        (ix, iy, iz), (sx, sy, sz) = index, strides
        assert np.array_equal(xy, u[ix % sx::sx, iy % sy::sy, iz])
        assert np.array_equal(xz, u[ix % sx::sx, iy, iz % sz::sz])
        assert np.array_equal(yz, u[ix, iy % sy::sy, iz % sz::sz])
        assert xy[ix // sx, iy // sy] == u[index] == s["value"]
    with pytest.raises(ValueError, match="index must be a cell"):
        sim.current_planes((23, 0, 0))
    with pytest.raises(ValueError, match="strides must be three ints >= 1"):
        sim.current_planes((1, 1, 1), (0, 1, 1))


def test_current_level_is_a_view_on_the_cpu():
    sim = dl.Simulation((20, 18, 12), 2, backend="cpu", size=1, nt=3)
    sim.run(5)
    u = current_level(sim)
    assert np.array_equal(u, sim.field)
    assert not u.flags.owndata  # no copy of the whole field


def test_update_slices_in_place():
    fig = slices_figure((24, 20, 16), max_points=8)
    u = np.zeros((24, 20, 16), dtype=np.float32)
    u[12, 10, 8] = 2.0  # the centre: on all three planes
    update_slices(fig, field_slices(u, max_points=8), title="n = 1")
    assert fig.layout.title.text == "n = 1"
    assert float(np.max(fig.data[0].z)) == 2.0 and fig.data[0].zmax == 2.0
    moved = field_slices(u, index=(0, 1, 2), max_points=8)  # strides 3, 3, 2: y sampled from 1
    update_slices(fig, moved)
    assert list(moved["y"]) == list(range(1, 20, 3)) and list(fig.data[0].y) == list(moved["y"])
    assert list(fig.data[0].x) == list(moved["x"]) and list(fig.data[2].y) == list(moved["z"])
    assert np.shape(fig.data[0].z) == (len(fig.data[0].y), len(fig.data[0].x))


def test_fixed_colour_range_from_the_source_amplitude():
    from diamondlab.sources import Receiver, Source
    from diamondlab.viz.fields import colour_range, source_amplitude

    f = 0.06  # one wavelength: 1 / f = 16.7 cells at c = h = 1
    src = Source((24, 24, 24), "ricker", frequency=f, amplitude=3.0, units="grid")
    at = Receiver((24 + 1 / f, 24, 24), units="grid")
    sim = dl.Simulation((48, 48, 48), 2, backend="cpu", size=2, nt=8, courant=0.4, sources=[src],
                        receivers=[at], sponge=6)
    expected = source_amplitude(sim)
    assert colour_range(sim) == expected  # at rest: the sources alone
    sim.run(int(2.5 / f / sim.params.dt))  # the wavelet's peak has passed the receiver
    measured = float(np.abs(sim.traces).max())
    assert measured == pytest.approx(expected, rel=0.15)  # the wave one wavelength out, at full colour
    twice = dl.Simulation((48, 48, 48), 2, backend="cpu", size=2, nt=8, courant=0.4,
                          sources=[Source((24, 24, 24), "ricker", frequency=f, amplitude=6.0, units="grid")])
    assert source_amplitude(twice) == pytest.approx(2 * expected)


def test_fixed_colour_range_from_the_initial_pulse():
    from diamondlab.viz.fields import colour_range

    sim = dl.Simulation((48, 48, 48), 2, backend="cpu", size=2, nt=4, courant=0.25)
    vmax = colour_range(sim)  # the pulse when it is half-way to the nearest wall (12 cells out)
    assert vmax < 0.5 * float(np.abs(sim.field).max())
    sim.run(int(round(12 / sim.params.courant)))
    assert float(np.abs(sim.field).max()) == pytest.approx(vmax, rel=0.1)
    quiet = dl.Simulation((24, 20, 16), 2, backend="cpu", size=1, nt=4, initial="zero")
    assert colour_range(quiet) == 1.0


def test_update_slices_with_a_fixed_range():
    fig = slices_figure((24, 20, 16), max_points=8)
    u = np.zeros((24, 20, 16), dtype=np.float32)
    u[12, 10, 8] = 2.0
    update_slices(fig, field_slices(u, max_points=8), vmax=0.5)
    assert fig.data[0].zmax == 0.5 and fig.data[2].zmin == -0.5
    update_slices(fig, field_slices(u * 1e-3, max_points=8), vmax=0.5)  # the wave gone: the range stays
    assert fig.data[1].zmax == 0.5


def test_the_colour_range_follows_a_level_by_its_rule():
    from diamondlab.viz.fields import FADED, SHRINK, follow_range

    rng = np.random.default_rng(1)
    levels = np.concatenate([np.geomspace(1e-4, 10, 40), np.geomspace(10, 1e-5, 60), np.zeros(3)])
    levels *= rng.uniform(0.8, 1.2, levels.size)
    vmax, top, changes = 1.0, 0.0, 0
    for level in levels:
        top = max(top, level)
        new = follow_range(vmax, level, floor=FADED * top)
        changes += new != vmax
        vmax = new
        if level > 0:
            assert level <= vmax  # never saturated
            assert level >= SHRINK * vmax or vmax == FADED * top  # never washed out, unless faded
    assert 5 < changes < len(levels) / 2  # hysteresis: not every frame
    assert follow_range(3.0, 0.0) == 3.0  # a field at rest keeps its range


def test_colour_bar_ticks_never_read_minus_zero():
    from diamondlab.viz.fields import colour_ticks

    fig = slices_figure((24, 20, 16), max_points=8)
    u = np.zeros((24, 20, 16), dtype=np.float32)
    u[12, 10, 8] = 2.0
    for vmax in (0.5, 0.00477, 3.3e-6, 1234.0):
        update_slices(fig, field_slices(u, max_points=8), vmax=vmax)
        bar = fig.data[2].colorbar
        assert list(bar.tickvals) == pytest.approx([-vmax, -vmax / 2, 0, vmax / 2, vmax])
        labels = list(bar.ticktext)
        assert labels[2] == "0" and labels.count("0") == 1  # no "-0.00": zero once, every other tick nonzero
        pairs = zip(labels, bar.tickvals, strict=True)
        assert all(float(t) == pytest.approx(v, rel=0.05) for t, v in pairs if v)
    assert colour_ticks(1.0)[1] == ["-1", "-0.5", "0", "0.5", "1"]
