"""Drive the Maxwell lab from Python as a user would: set controllers, press buttons, watch the figures."""

import gc
import re
import weakref

import numpy as np
import pytest

from diamondlab.widgets import MaxwellLab
from diamondlab.widgets.maxwell_controls import MaxwellConfig, build_maxwell
from diamondlab.widgets.maxwell_lab import OBJECT_SPECTRA, colour_scale, default_steps

RATE = re.compile(r"<b>([0-9.e+-]+)</b><br><small>current")
#: a Drude sphere lit by a plane wave on a small grid (the CPU kernels of order 2: compiled once a cache)
SMALL = dict(shape=(32, 24, 24), pml=4, radius=4, wavelength=10, backend="cpu")


def _live_widgets() -> int:
    from ipywidgets.widgets.widget import _instances  # a widget stays in this registry until closed

    return len(_instances)


@pytest.fixture(scope="module")
def lab():
    lab = MaxwellLab(replace=False, **SMALL)
    yield lab
    lab.close()


def test_a_step_changes_the_picture_and_a_run_shows_the_rate_traces_and_spectrum(lab):
    lab.reset()
    before = np.array(lab.live.planes.data[0].z, copy=True)
    lab.controls.step_button.click()
    assert lab.wait(300), lab.runner.message  # the first sweep compiles the kernels: minutes on a busy CPU
    assert lab.sim.time_step == lab.sim.nt and lab.runner.state == "done"
    assert not np.array_equal(before, np.asarray(lab.live.planes.data[0].z))
    assert lab.controls.steps.value == default_steps(lab.sim)  # the pulse crosses the box twice
    lab.controls.run_button.click()
    assert lab.wait(120), lab.runner.message
    assert lab.sim.time_step == lab.sim.nt + default_steps(lab.sim)
    assert float(RATE.search(lab.live.readout.value).group(1)) > 0  # G Yee cell updates/s
    assert "Yee cell updates" in lab.live.readout.value and "no model on the CPU" in lab.live.readout.value
    traces = lab.live.traces.data
    assert len(traces) == 3 and len(traces[0].x) == lab.sim.time_step and np.abs(traces[1].y).max() > 0
    spectrum = lab.live.spectrum_values()
    r, t = spectrum["R"], spectrum["T"]
    assert np.isfinite(r).all() and np.isfinite(t).all() and (t > 0.1).all() and (r > 0).all()
    drawn = lab.live.spectrum.data
    assert np.array_equal(np.asarray(drawn[0].y), r) and np.array_equal(np.asarray(drawn[1].y), t)
    # a sphere's planes hold its back-scattered flux and the total flux behind it, not a slab's R and T
    assert [d.name for d in drawn] == list(OBJECT_SPECTRA)
    assert "behind the object" in lab.live.spectrum.layout.title.text
    a, rule = colour_scale(lab.sim)
    title = lab.live.planes.layout.title.text
    assert f"colour 0 .. {a:.3g} (fixed): {rule}" in title and "black: the object" in title
    assert lab.live.planes.data[0].zmin == 0 and lab.live.planes.data[0].zmax == a
    assert [type(d).__name__ for d in lab.live.planes.data].count("Contour") == 3  # the sphere on each plane


def test_a_refresh_brings_each_flux_plane_across_once(lab, monkeypatch):
    """The spectrum's refresh asks the backend for one flux monitor's sums at a time, once each (it asked for
    every monitor's four times: at 256^3 on a GPU a refresh took 1.5 s; on a GPU now only the flux's sums
    cross the bus, ``YeeCUDABackend.plane_flux``), and the backend's one-monitor sums are its whole list's."""
    lab.reset()
    lab.controls.step_button.click()
    assert lab.wait(60), lab.runner.message
    backend = lab.sim.backend
    every = backend.dft_sums()
    assert all(np.array_equal(backend.dft_sums((k,))[0], every[k]) for k in range(len(every)))
    asked = []
    real = backend.dft_sums
    monkeypatch.setattr(backend, "dft_sums", lambda which=None: asked.append(which) or real(which))
    lab.live.refresh()
    assert sorted(asked) == [(0,), (1,)], asked


def test_a_component_view_takes_the_symmetric_scale_and_reset_clears_the_spectrum(lab):
    lab.live.view.value = "Ez"
    trace = lab.live.planes.data[0]
    assert trace.zmin == -trace.zmax == -lab.live.scale and "Ez at n" in lab.live.planes.layout.title.text
    lab.live.view.value = "|E|"
    lab.reset()
    assert lab.sim.time_step == 0 and np.isnan(lab.live.spectrum_values()["R"]).all()


@pytest.mark.parametrize("setting", [dict(pml=9), dict(eps=0.5), dict(shape=(32, 24, 0)),
                                     dict(source="dipole", position=(40, 1, 1))])
def test_a_bad_setting_shows_the_engines_message_and_refuses_to_run(lab, setting):
    from diamondlab import Simulation

    cfg = MaxwellConfig(**{**SMALL, **setting})
    with pytest.raises((ValueError, TypeError)) as err:  # what the engine says, building it directly
        Simulation(equation="maxwell", **cfg.sim_kwargs())
    lab.controls.set(**setting)
    try:
        shown = lab.controls.message.value
        expected = str(err.value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        assert "cannot run" in shown and expected in shown
        assert lab.controls.run_button.disabled and lab.run() is False and lab.step() is False
    finally:
        lab.controls.set(**{k: v for k, v in MaxwellConfig(**SMALL).__dict__.items() if k in setting})
    assert "ready" in lab.controls.message.value and not lab.controls.run_button.disabled
    with pytest.raises(ValueError, match=re.escape(str(err.value)[:40])):
        MaxwellLab(replace=False, **{**SMALL, **setting})


def test_a_dipole_and_a_new_scene_rebuild_the_run():
    lab = MaxwellLab(replace=False, **SMALL)
    try:
        first = lab.sim
        lab.controls.set(source="dipole", component="Ey", scene="box", medium="pec", radius=3)
        assert lab.step() and lab.wait(60), lab.runner.message
        assert lab.sim is not first and type(lab.sim.physics.materials[0]).__name__ == "Box"
        assert [p.component for p in lab.sim.probes] == ["Ey", "Ey"] and lab.live.spectrum_values() is None
        assert "with a plane wave source" in lab.live.spectrum.layout.title.text
        assert "dipole's far field" in lab.live.planes.layout.title.text
    finally:
        lab.close()


def test_the_slab_spectrum_is_drawn_against_fresnel():
    """A slab facing the wave in a periodic cell: the figure carries the Fresnel curves of that slab; the
    measured R and T add up to 1 (no loss) and follow them to 0.025 at 16 cells a wavelength (second order:
    0.006 at 32, 0.0015 at 64)."""
    from diamondlab.maxwell.spectra import slab_fresnel

    lab = MaxwellLab(replace=False, shape=(64, 8, 8), pml=8, scene="slab", medium="dielectric", eps=2.25,
                     radius=4, periodic=True, wavelength=16, backend="cpu")
    try:
        assert lab.run() and lab.wait(120), lab.runner.message
        names = [d.name for d in lab.live.spectrum.data]
        assert names == ["R (measured)", "T (measured)", "R + T", "R Fresnel", "T Fresnel"]
        s = lab.live.spectrum_values()
        r_f, t_f = slab_fresnel(lab.sim.physics.materials[0].medium, 8.0, s["f"])
        assert np.allclose(np.asarray(lab.live.spectrum.data[3].y), r_f)
        np.testing.assert_allclose(s["R"] + s["T"], 1.0, atol=2e-3)
        assert np.abs(s["R"] - r_f).max() < 0.03 and np.abs(s["T"] - t_f).max() < 0.03
    finally:
        lab.close()


def test_building_and_closing_the_lab_keeps_the_widgets_bounded(cell):
    """Re-running the cell that builds the lab: every widget of a closed lab leaves ipywidgets' registry,
    the simulation goes, and the count does not grow from one lab to the next."""
    sim = build_maxwell(MaxwellConfig(**SMALL))  # imports and the first plan outside the count
    del sim
    before = _live_widgets()
    counts, sims = [], []
    for _ in range(5):
        lab = MaxwellLab(replace=True, **SMALL)
        assert lab.step() and lab.wait(60)
        sims.append(weakref.ref(lab.sim))
        counts.append(_live_widgets())
    lab.close()
    gc.collect()
    assert all(ref() is None for ref in sims)
    assert max(counts) == min(counts), counts  # each lab closed the one before: none piles up
    assert _live_widgets() == before  # and the last one's widgets left with it
    assert lab.closed and lab.run() is False and lab.step() is False
    lab.close()  # idempotent


def test_pause_and_reset_buttons(lab):
    lab.reset()
    assert lab.run(0)  # until paused
    lab.controls.pause_button.click()
    assert lab.wait(60) and lab.runner.state in ("paused", "done") and lab.sim.time_step % lab.sim.nt == 0
    lab.controls.reset_button.click()
    assert lab.sim.time_step == 0 and lab.runner.state == "idle"


@pytest.mark.slow
def test_rebuilding_the_lab_does_not_grow_memory(soak):
    """Re-running the cell that builds the Maxwell lab, 12 times, a sweep each: resident memory stays where
    it was.  A Drude sphere in a CPML on 40 x 32 x 32 cells: labs never closed keep their simulations and
    figures, about 9 MiB each."""

    def build():
        lab = MaxwellLab(**{**SMALL, "shape": (40, 32, 32)})
        assert lab.step() and lab.wait(60), lab.runner.message
        return lab

    soak(build)


def test_the_geometry_tabs_draw_the_engines_tiling_and_follow_the_controllers(lab):
    """The Shapes, Stages and Yee tabs draw the torre, the sweep and the tiles of the DTS and Nt the engine
    runs (its plan's, not the controllers' 0 = default), redraw for a new order and keep their figures,
    saying why, while a setting cannot run."""
    from diamondlab.geometry import GraphStencil, stage_schedule
    from diamondlab.geometry.reads import torre_dependencies
    from diamondlab.maxwell.scheme import YEE_POSITIONS
    from diamondlab.viz.yee import yee_cell_figure, yee_tiles_figure
    from diamondlab.widgets.lrnla import explorer_domain
    from diamondlab.widgets.maxwell_controls import plan_maxwell
    from diamondlab.widgets.maxwell_lab import TABS

    def drawn(order):
        plan = plan_maxwell(lab.controls.config())
        size, nt = plan.size, plan.nt  # the engine's choice on this grid
        assert lab.controls.config().size == 0 and size > 0 and nt > 0
        stencil = GraphStencil("maxwell", order)
        torre = stencil.torre(size, min(nt, lab.shapes.MAX_NT // stencil.tiers_per_step))
        assert f"2Nt·2R² = {torre.nvertices}" in lab.shapes.conoids.layout.title.text
        assert [t.name for t in lab.shapes.locality.data][::2] == [f"Maxwell, Yee order {order}",
                                                                  f"acoustic, NO={order}"]
        s = lab.explorer.picture.schedule
        nx, ny = explorer_domain(2 * stencil.reach, size, 2 * nt, lab.sim.shape)
        assert (s.tile.order, s.tile.size, s.nt, s.nx, s.ny) == (2 * stencil.reach, size, 2 * nt, nx, ny)
        deps = torre_dependencies(stage_schedule(2 * stencil.reach, size, 2 * nt, nx, ny), "maxwell")
        assert all(np.array_equal(a, b) for a, b in zip(lab.explorer.picture.reads, deps, strict=True))
        cones = [t for t in lab.yee.cell.data if type(t).__name__ == "Cone"][:6]
        assert [(t.name, t.x[0], t.y[0], t.z[0]) for t in cones] == [
            (f"{c} at {tuple(p)}", *p) for c, p in YEE_POSITIONS.items()]
        assert lab.yee.cell.layout.title.text == yee_cell_figure(order, reads="Hz").layout.title.text
        tier = int(lab.yee.tier.value)
        expected = yee_tiles_figure(order, size, min(nt, lab.yee.MAX_NT), tier=tier)
        assert lab.yee.tier.max == 2 * min(nt, lab.yee.MAX_NT) - 1
        for got, want in zip(lab.yee.tiles.data, expected.data, strict=True):  # H, E tiers, reads, ...
            same = np.array_equal(np.asarray(got.x, float), np.asarray(want.x, float), equal_nan=True)
            assert got.name == want.name and same
        assert len(lab.yee.tiles.data[0].x) > 0 and len(lab.yee.tiles.data[3].x) > 0

    assert lab.tabs.titles == TABS
    s = lab.explorer.picture.schedule
    assert (lab.sim.size, 2 * lab.sim.nt) == (s.tile.size, s.nt)  # the plan's tiling is the simulation's
    assert all("Paper 002" in box.children[0].value for box in lab.tabs.children)
    drawn(2)
    try:
        lab.yee.tier.value = 2
        lab.controls.set(order=4)
        assert "Yee order 4" in lab.shapes.note.value and "Yee order 4" in lab.yee.note.value
        drawn(4)
        shown = (lab.yee.tiles.data[0].x, lab.explorer.picture)
        lab.controls.set(pml=9)  # cannot run: the tabs keep what they show and say why
        assert "not redrawn" in lab.shapes.note.value and "PlaneWave box" in lab.yee.note.value
        assert np.array_equal(lab.yee.tiles.data[0].x, shown[0]) and lab.explorer.picture is shown[1]
    finally:
        lab.controls.set(order=2, pml=SMALL["pml"])
    drawn(2)
