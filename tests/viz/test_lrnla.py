"""The LRnLA figures are drawn from the geometry layer and show what the geometry says."""

import numpy as np
import pytest

from diamondlab.geometry import DiamondTile, DiamondTorre, StageSchedule, locality, stage_schedule
from diamondlab.viz import lrnla
from diamondlab.viz.stages import SweepPicture, torre_dependencies, vertex_owner


def _box_volume(mesh_runs):
    return int((mesh_runs[:, 1] - mesh_runs[:, 0] + 1).sum())


@pytest.mark.parametrize(("order", "size", "nt"), [(2, 1, 3), (2, 2, 6), (4, 2, 5), (8, 1, 4)])
def test_conoid_intersection_is_the_torre(order, size, nt):
    fig = lrnla.conoid_figure(order, size, nt)
    torre = DiamondTorre(DiamondTile(order, size), nt)
    assert f"= torre Nt·2R² = {torre.nvertices}" in fig.layout.title.text
    # the blue mesh holds one box per x run of the torre's vertices: 8 corners each
    runs = lrnla.runs_from_vertices(torre.vertices())
    assert len(fig.data[2].x) == 8 * len(runs)
    assert _box_volume(runs) == torre.nvertices


def test_runs_merge_exactly():
    rng = np.random.default_rng(3)
    v = np.unique(rng.integers(0, 6, size=(80, 3)), axis=0)
    runs = lrnla.runs_from_vertices(v)
    back = {(x, y, t) for lo, hi, y, t in runs.tolist() for x in range(lo, hi + 1)}
    assert back == {tuple(r) for r in v.tolist()}


def test_dependencies_respect_the_schedule():
    s = stage_schedule(order=4, size=1, nt=5, nx=14, ny=10)
    deps = torre_dependencies(s)
    owner = vertex_owner(s)
    assert (owner >= 0).all()
    for i, d in enumerate(deps):
        # only earlier stages: the sweep is valid; never its own stage: a stage is asynchronous
        assert (s.torre_stage[d] < s.torre_stage[i]).all()
    interior = [i for i in range(s.ntorres) if not s.boundary[i] and s.torre_stage[i] > 2]
    assert interior and all(len(deps[i]) > 0 for i in interior)


def test_sweep_picture_draws_every_done_vertex():
    s = stage_schedule(order=2, size=2, nt=4, nx=20, ny=12)
    p = SweepPicture(s)
    stage = s.nstages // 2
    traces = p.traces(stage)
    done = np.flatnonzero(s.torre_stage < stage)
    nboxes = sum(len(p.runs[i]) for i in done)
    assert len(traces[0]["x"]) == 8 * nboxes
    assert len(traces[0]["intensity"]) == 8 * nboxes
    volume = sum(_box_volume(p.runs[i]) for i in done)
    assert volume == int(s.time_levels(stage).sum())
    fig = p.figure(stage)
    assert len(fig.data) == 6 and "independent torres" in fig.layout.title.text
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
