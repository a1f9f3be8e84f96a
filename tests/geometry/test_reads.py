"""Which torres of a sweep a torre reads from, counted exactly; torres as runs of vertices."""

import numpy as np
import pytest

from diamondlab.geometry import DiamondTile, DiamondTorre, stage_schedule
from diamondlab.geometry.reads import (
    reads_around,
    runs_from_vertices,
    torre_dependencies,
    torre_reads,
    torre_runs,
    vertex_owner,
    vertices_of_runs,
)


def test_runs_merge_exactly():
    rng = np.random.default_rng(3)
    v = np.unique(rng.integers(0, 6, size=(80, 3)), axis=0)
    runs = runs_from_vertices(v)
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


@pytest.mark.parametrize(("order", "size", "nt"), [(2, 1, 3), (4, 2, 5), (8, 1, 4)])
def test_reads_around_a_torre_come_from_the_schedule(order, size, nt):
    nb = reads_around(order, size, nt)
    s, i = nb.schedule, nb.torre
    torre = DiamondTorre(DiamondTile(order, size), nt)
    x0, yc = nb.shift
    mine = torre_runs(s, i) - np.array([x0, x0, yc, 0])
    drawn = {tuple(v) for v in vertices_of_runs(mine).tolist()}
    assert drawn == {tuple(v) for v in torre.vertices().tolist()}
    assert np.array_equal(nb.reads, torre_dependencies(s)[i])  # counted the same way as the whole sweep
    assert len(vertices_of_runs(nb.runs)) == nb.count * torre.nvertices  # none cut by the boundary
    assert (s.torre_stage[nb.reads] < s.torre_stage[i]).all()


def test_torre_reads_is_torre_dependencies_one_by_one():
    s = stage_schedule(order=4, size=1, nt=5, nx=14, ny=10)
    deps = torre_dependencies(s)
    assert all(np.array_equal(torre_reads(s, i), d) for i, d in enumerate(deps))


@pytest.mark.parametrize(("order", "size"), [(2, 1), (4, 1), (2, 2)])
def test_staggered_sweep_reads_only_earlier_stages_and_less_than_the_cross(order, size):
    s = stage_schedule(order=order, size=size, nt=6, nx=14, ny=12)  # 3 Yee steps, 6 half-step tiers
    deps = torre_dependencies(s, "maxwell")
    cross = torre_dependencies(s)
    assert all((s.torre_stage[d] < s.torre_stage[i]).all() for i, d in enumerate(deps))
    assert all(set(d.tolist()) <= set(c.tolist()) for d, c in zip(deps, cross, strict=True))
    assert all(np.array_equal(torre_reads(s, i, "maxwell"), d) for i, d in enumerate(deps))
    nb = reads_around(order, size, 2, "maxwell")
    assert nb.schedule.nt == 4 and nb.count > 0
    assert np.array_equal(nb.reads, torre_dependencies(nb.schedule, "maxwell")[nb.torre])


def test_staggered_sweep_needs_whole_steps():
    with pytest.raises(ValueError, match="multiple"):
        torre_dependencies(stage_schedule(order=2, size=1, nt=3, nx=8, ny=8), "maxwell")
