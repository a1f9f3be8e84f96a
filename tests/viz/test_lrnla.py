"""The LRnLA figures are drawn from the geometry layer and show what the geometry says."""

import re

import numpy as np
import pytest

from diamondlab.geometry import DiamondTile, DiamondTorre, StageSchedule, locality, stage_schedule
from diamondlab.geometry.reads import reads_around, runs_from_vertices, vertices_of_runs
from diamondlab.viz import lrnla
from diamondlab.viz.stages import SweepPicture


def _box_volume(mesh_runs):
    return int((mesh_runs[:, 1] - mesh_runs[:, 0] + 1).sum())


@pytest.mark.parametrize(("order", "size", "nt"), [(2, 1, 3), (2, 2, 6), (4, 2, 5), (8, 1, 4)])
def test_conoid_intersection_is_the_torre(order, size, nt):
    fig = lrnla.conoid_figure(order, size, nt)
    torre = DiamondTorre(DiamondTile(order, size), nt)
    assert f"= torre Nt·2R² = {torre.nvertices}" in fig.layout.title.text
    # the blue mesh holds one box per x run of the torre's vertices: 8 corners each
    runs = runs_from_vertices(torre.vertices())
    assert len(fig.data[2].x) == 8 * len(runs)
    assert _box_volume(runs) == torre.nvertices


def test_sweep_picture_draws_every_done_vertex():
    s = stage_schedule(order=2, size=2, nt=4, nx=20, ny=12)
    p = SweepPicture(s)
    stage = s.nstages // 2
    done = np.flatnonzero(s.torre_stage < stage)
    volume = sum(_box_volume(p.runs[i]) for i in done)
    assert volume == int(s.time_levels(stage).sum())
    traces = p.traces(stage, show_reads=False)  # the torres it reads from among the done stages
    nboxes = sum(len(p.runs[i]) for i in done)
    assert len(traces[0]["x"]) == 8 * nboxes and len(traces[0]["intensity"]) == 8 * nboxes
    assert len(traces[3]["x"]) == 0
    focus = p.focus_of(stage)
    reads = p.reads[focus]
    assert len(reads) == 3 and (s.torre_stage[reads] < stage).all()
    traces = p.traces(stage)  # drawn apart, once: done stages and green torres together are the done ones
    shown = [i for i in done if i not in reads]
    assert len(traces[0]["x"]) == 8 * sum(len(p.runs[i]) for i in shown)
    assert len(traces[3]["x"]) == 8 * sum(len(p.runs[i]) for i in reads)
    assert np.array_equal(traces[2]["x"], lrnla.box_mesh(p.runs[focus])["x"])
    fig = p.figure(stage)
    assert len(fig.data) == 7 and "independent torres" in fig.layout.title.text
    assert [t.name for t in fig.data[:6]] == ["done stages (colour = stage)", "current stage (independent)",
                                             "focus torre", "it reads from", "reads from it",
                                             "focus torre's tiers"]
    assert fig.data[0].opacity < 1 and fig.data[1].opacity < 1 and fig.data[3].opacity == 1  # see them
    assert p.figure(stage, show_reads=False).data[0].opacity == 1
    # the outline goes round every tier of the focus torre, at its bottom and top
    z = {v for v in fig.data[5].z if v is not None}
    assert z == set(range(s.nt + 1))
    with pytest.raises(ValueError, match="smaller grid"):
        SweepPicture(stage_schedule(2, 1, 64, 64, 64))


def test_time_levels_figure_is_figure_9():
    s = stage_schedule(order=2, size=3, nt=12, nx=40, ny=20)
    fig = lrnla.time_levels_figure(s, 7)
    assert np.array_equal(np.asarray(fig.data[0].z), s.time_levels(7).T)
    assert len(fig.data) - 1 == len(s.stage_torres(7)) - sum(
        1 for i in s.stage_torres(7) if len(s.tier_rows(int(i), 0)) == 0)


def test_locality_summary_matches_exact_counts():
    info = lrnla.lrnla_summary(2, 2, 8, (32, 32, 16))
    assert info["locality_torre_exact"] == pytest.approx(locality("diamond_torre", 2, 2, 8))
    assert info["bytes_per_update"] == pytest.approx(4 / locality("torre_row", 2, 2, 8))
    assert info["stages"] == StageSchedule(DiamondTorre(DiamondTile(2, 2), 8), 32, 32).nstages
    fig = lrnla.locality_figure(2, 2, 8, (32, 32, 16))
    assert len(fig.data) == 2 and max(fig.data[0].x) == pytest.approx(locality("torre_row", 2, 2, 8))


def test_conoid_figure_shows_the_torre_and_what_it_reads():
    order, size, nt = 2, 2, 6
    fig = lrnla.conoid_figure(order, size, nt)
    torre = DiamondTorre(DiamondTile(order, size), nt)
    cones = fig.data[:2]
    assert all(c.opacity < 0.5 for c in cones) and fig.data[2].opacity == 1  # the torre inside shows
    assert [c.name for c in cones] == ["influence conoid of the bottom tile",
                                       "dependence conoid of the top tile"]
    # the cones are hulls of the geometry's conoids: only outer faces, nothing stacked in front of the torre
    assert np.array_equal(fig.data[0].x, lrnla.hull_mesh(torre.bottom_conoid().vertices())["x"])
    assert np.array_equal(fig.data[1].z, lrnla.hull_mesh(torre.top_conoid().vertices())["z"])
    outline = fig.data[3]
    assert outline.type == "scatter3d" and {v for v in outline.z if v is not None} == set(range(nt + 1))
    xs = {v for v in outline.x if v is not None}
    assert min(xs) == torre.vertices()[:, 0].min() - 0.5 and max(xs) == torre.vertices()[:, 0].max() + 0.5
    reads = fig.data[4]
    assert reads.visible is True and reads.opacity < 1 and reads.name == "the 3 torres it reads from"
    nb = reads_around(order, size, nt)
    assert np.array_equal(reads.x, lrnla.hull_mesh(vertices_of_runs(nb.runs))["x"])
    assert lrnla.conoid_figure(order, size, nt, show_reads=False).data[4].visible == "legendonly"


def test_hull_mesh_keeps_only_the_outer_faces():
    rng = np.random.default_rng(5)
    v = np.unique(rng.integers(0, 5, size=(60, 3)), axis=0)
    mesh = lrnla.hull_mesh(v, tscale=1.0)
    inside = {tuple(p) for p in v.tolist()}
    exposed = sum((x + dx, y + dy, t + dt) not in inside for x, y, t in inside
                  for dx, dy, dt in ((1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1)))
    pts = np.stack([mesh["x"], mesh["y"], mesh["z"]], axis=1)
    tri = np.stack([mesh["i"], mesh["j"], mesh["k"]], axis=1)
    a, b, c = pts[tri[:, 0]], pts[tri[:, 1]], pts[tri[:, 2]]
    area = 0.5 * np.linalg.norm(np.cross(b - a, c - a), axis=1)
    assert area.sum() == pytest.approx(exposed)  # one unit square per face between inside and outside
    one = lrnla.hull_mesh([[2, 3, 4]], tscale=2.0)
    assert len(one["i"]) == 12
    assert (min(one["x"]), max(one["x"]), min(one["z"]), max(one["z"])) == (1.5, 2.5, 8, 10)


def test_time_levels_figure_fits_its_width():
    s = stage_schedule(order=2, size=2, nt=8, nx=48, ny=64)
    fig = lrnla.time_levels_figure(s, s.nstages // 2)
    width = fig.layout.width
    assert width and fig.layout.margin.r >= 20
    lines = [re.sub(r"<[^>]+>", "", line) for line in fig.layout.title.text.split("<br>")]
    assert len(lines) == 2 and all(len(line) * 9 < width - fig.layout.margin.l for line in lines)


def test_tilings_figure_draws_the_geometrys_numbers():
    """Section 5's chart: one point per tiling at (fast memory held, locality) from compare_tilings."""
    from diamondlab.geometry import compare_tilings
    from diamondlab.viz.lrnla import TILING_LABELS, tilings_figure

    rows = compare_tilings(4, 1, 6, ny=6)
    fig = tilings_figure(rows)
    assert [t.name for t in fig.data] == [TILING_LABELS[r.name] for r in rows]
    assert [(t.x[0], t.y[0]) for t in fig.data] == [(r.held, r.locality) for r in rows]
    assert fig.layout.xaxis.type == "log"


def test_tilings_labels_stay_off_the_other_markers():
    """Notebook 08's chart: a name written above its marker fell on a larger marker just above it (the
    trapezoid's under the x-t diamond's): such a name goes below; no name is above a close, higher point."""
    from diamondlab.geometry import compare_tilings
    from diamondlab.viz.lrnla import tilings_figure

    rows = compare_tilings(2, 2, 8, ny=32)  # notebook 08's
    fig = tilings_figure(rows)
    side = {t.name: t.textposition for t in fig.data}
    assert side["trapezoid (upright)"] == "bottom center" and side["x-t diamond, all rows"] == "top center"
    assert side["DiamondTile (Nt=1)"] == "bottom center" and side["one DiamondTorre"] == "top center"
    for t in fig.data:
        above = [o for o in fig.data
                 if o is not t and o.y[0] > t.y[0] and abs(np.log10(o.x[0] / t.x[0])) < 0.3]
        assert (t.textposition == "bottom center") == bool(above), t.name
    small = tilings_figure(compare_tilings(2, 2, 8, ny=8))  # the tests' size: two x-t diamonds side by side
    side = {t.name: t.textposition for t in small.data}
    assert {side["x-t diamond, all rows"], side["x-t diamond, wavefront"]} == {"top center", "bottom center"}


def test_the_3d_figures_legends_are_below_their_views():
    """The Stages tab and the conoids: the legend sat over the 3D view (x=0, y=1); now in a margin kept
    for it below."""
    from diamondlab.viz.lrnla import LEGEND_MARGIN

    for fig in (SweepPicture(stage_schedule(2, 2, 4, 16, 12)).figure(), lrnla.conoid_figure(2, 2, 4)):
        legend = fig.layout.legend
        assert legend.orientation == "h" and legend.yanchor == "top" and legend.y <= 0
        assert fig.layout.margin.b == LEGEND_MARGIN >= 60
        domain = fig.layout.scene.domain.y
        assert domain is None or domain[0] >= 0  # the scene keeps to the plot area, above the legend


def test_paper_graph_figures_draw_the_geometry():
    """Figs. 2-4: the bold edges are the stencil's offsets, the cone the geometry's, one panel per cut."""
    from diamondlab.geometry.graph import dependency_offsets, light_cone
    from diamondlab.viz.graph import dependency_graph_figure, light_cone_figure, subdivisions_figure

    fig = dependency_graph_figure(6, nx=11, nt=5)
    bold = fig.data[1]
    pairs = [(bold.x[i + 1] - bold.x[i], bold.y[i + 1] - bold.y[i]) for i in range(0, len(bold.x), 3)]
    assert sorted(pairs) == sorted(dependency_offsets(6))
    cone = light_cone_figure(2, depth=3).data[0]
    assert sorted(zip(cone.x, cone.y, strict=True)) == sorted(map(tuple, light_cone(2, (0, 3), 3).tolist()))
    assert [a.text for a in subdivisions_figure().layout.annotations] == [
        "stepwise layers", "domain decomposition", "LRnLA diamonds"]


def test_the_xt_diamond_figure_colours_the_picked_diamond_and_its_neighbours():
    from diamondlab.geometry.graph import shape_neighbours, subdivision
    from diamondlab.viz.graph import diamond_xt_figure
    fig = diamond_xt_figure(4, 6, pick=(20, 9), nx=40, nt=18)
    heat = fig.data[0]
    ids = subdivision("lrnla", 4, 40, 18, 6)
    assert np.array_equal(np.asarray(heat.customdata), ids)
    me = ids[9, 20]
    reads, feeds = shape_neighbours(ids, 4, me)
    role = np.floor(np.asarray(heat.z)).astype(int)  # 0 other, 1 reads, 2 read by, 3 picked
    assert np.array_equal(role == 3, ids == me)
    assert np.array_equal(role == 1, np.isin(ids, reads)) and np.array_equal(role == 2, np.isin(ids, feeds))
    assert f"reads {len(reads)} (green), read by {len(feeds)}" in fig.layout.title.text


def test_sweep_picture_of_the_staggered_scheme():
    s = stage_schedule(order=2, size=1, nt=6, nx=14, ny=10)  # 3 Yee steps
    from diamondlab.geometry.reads import torre_dependencies

    p = SweepPicture(s, equation="maxwell")
    deps = torre_dependencies(s, "maxwell")
    assert all(np.array_equal(a, b) for a, b in zip(p.reads, deps, strict=True))
    stage = s.nstages // 2
    focus = p.focus_of(stage)
    t = p.traces(stage)
    assert len(t[3]["x"]) == 8 * sum(len(p.runs[i]) for i in deps[focus])
    fig = p.figure(stage)
    assert "6 half steps, H then E" in fig.layout.title.text
    assert fig.layout.scene.zaxis.title.text.startswith("t (half step")
    levels = lrnla.time_levels_figure(s, stage, equation="maxwell")
    assert levels.layout.title.text.startswith("Half steps done") and "Nt=3 (6 half steps)" in \
        levels.layout.title.text
