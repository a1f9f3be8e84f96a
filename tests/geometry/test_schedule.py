import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from diamondlab.geometry import stage_schedule

CASES = [
    (order, size, nt) for order, size, nt in itertools.product([2, 4, 6, 8], [1, 2, 3, 4], [1, 2, 3, 5, 8])
]


def _domains(order, size):
    r = order // 2 * size
    return [(2 * r + 3, 2 * r + 5), (3 * r + 1, 2 * r)]


@pytest.mark.parametrize(("order", "size", "nt"), CASES)
def test_every_vertex_exactly_once_and_in_place_replay_is_correct(order, size, nt):
    for nx, ny in _domains(order, size):
        s = stage_schedule(order, size, nt, nx, ny)
        v = s.vertices()
        assert len(v) == nx * ny * nt
        assert len(np.unique(v, axis=0)) == len(v)
        assert v[:, 0].min() == 0 and v[:, 0].max() == nx - 1
        assert v[:, 1].min() == 0 and v[:, 1].max() == ny - 1
        assert s.replay_in_place() == []


def test_replay_detects_a_wrong_order():
    s = stage_schedule(2, 2, 4, 12, 12)
    # run the stages left to right instead: reads must find the wrong levels
    reversed_schedule = stage_schedule(2, 2, 4, 12, 12)
    start = s.stage_start
    order = np.concatenate([np.arange(start[i], start[i + 1]) for i in reversed(range(s.nstages))])
    object.__setattr__(reversed_schedule, "torre_x0", s.torre_x0[order])
    object.__setattr__(reversed_schedule, "torre_yc", s.torre_yc[order])
    sizes = np.diff(start)[::-1]
    object.__setattr__(reversed_schedule, "stage_start", np.concatenate([[0], np.cumsum(sizes)]))
    assert reversed_schedule.replay_in_place() != []


def test_stages_run_right_to_left_and_torres_of_a_stage_share_x():
    s = stage_schedule(4, 2, 6, 30, 21)
    r = s.tile.radius
    assert (np.diff(s.stage_m) == -1).all()
    for i in range(s.nstages):
        t = s.stage_torres(i)
        assert (s.torre_x0[t] == r * s.stage_m[i]).all()
        assert (np.diff(s.torre_yc[t]) == 2 * r).all()


def test_boundary_torres_are_the_clipped_ones():
    s = stage_schedule(2, 2, 4, 40, 40)
    cells = s.tier_cells()
    interior = ~s.boundary
    assert interior.any() and s.boundary.any()
    assert (cells[interior] == s.tile.ncells).all()


def test_time_levels_mid_sweep():
    s = stage_schedule(2, 2, 8, 24, 16)
    levels = s.time_levels(s.nstages // 2)
    assert levels.min() == 0 and levels.max() == 8
    assert levels[12:].mean() > levels[:12].mean()  # the right part of the domain is ahead
    assert (s.time_levels(s.nstages) == 8).all()


def test_grid_too_small_for_one_tile():
    with pytest.raises(ValueError, match=r"grid too small for one tile: ny=7 .* use ny >= 8"):
        stage_schedule(4, 2, 4, 20, 7)


@pytest.mark.parametrize(
    ("order", "size", "nt", "nx", "ny"),
    [(2, 1, 3, 7, 5), (2, 3, 4, 13, 11), (4, 2, 5, 9, 10), (8, 1, 2, 11, 8)],
)
def test_owner_names_the_torre_and_tile_cell_of_every_vertex(order, size, nt, nx, ny):
    s = stage_schedule(order=order, size=size, nt=nt, nx=nx, ny=ny)
    seen = 0
    for _, i, k, rows in s.iter_tiers():
        xs, ys = s.tile.cells(int(s.torre_x0[i]) + s.tile.shs * k, int(s.torre_yc[i]))
        for y, lo, hi in rows:
            x = np.arange(lo, hi + 1)
            torre, cell = s.owner(x, y, k)
            assert (torre == i).all()
            assert (xs[cell] == x).all()
            assert (ys[cell] == y).all()
            seen += len(x)
    assert seen == nx * ny * nt


def test_owner_rejects_vertices_outside_the_sweep():
    s = stage_schedule(order=2, size=1, nt=2, nx=4, ny=4)
    with pytest.raises(ValueError, match="0 <= k < 2"):
        s.owner(0, 0, 2)


def test_dependencies_point_to_previous_stage_neighbours():
    s = stage_schedule(order=4, size=2, nt=5, nx=30, ny=27)
    deps, r = s.dependencies(), s.tile.radius
    assert (deps >= 0).any()
    for i in range(s.ntorres):
        for j, dy in enumerate((-r, r)):
            d = deps[i, j]
            if d >= 0:
                assert s.torre_stage[d] == s.torre_stage[i] - 1
                assert s.torre_yc[d] == s.torre_yc[i] + dy
                assert s.torre_x0[d] == s.torre_x0[i] + r


@pytest.mark.parametrize(
    ("order", "size", "nt", "nx", "ny"),
    [(2, 1, 4, 10, 8), (2, 2, 5, 13, 11), (4, 1, 5, 14, 10), (4, 2, 6, 19, 17), (8, 1, 4, 18, 17),
     (2, 3, 7, 20, 19), (6, 2, 4, 25, 23), (2, 1, 1, 6, 6)],
)
def test_tier_waits_one_tier_ahead_are_enough_and_the_minimum(order, size, nt, nx, ny):
    """Waiting for tier k of both dependencies (lag 0) orders every data dependency; tier k-1 does not.

    The critical path drops from Nt tiers per stage to one tier per stage plus Nt - 1.
    """
    s = stage_schedule(order, size, nt, nx, ny)
    assert s.pipeline_violations(nt - 1) == []
    assert s.pipeline_violations(0) == []
    assert len(s.pipeline_violations(-1)) > 0 or nt == 1
    assert len(s.pipelined_rounds(nt - 1)) == s.nstages * nt
    assert len(s.pipelined_rounds(0)) == s.nstages + nt - 1
    rounds = s.pipelined_rounds(0)
    assert sorted(e for r in rounds for e in r) == [(i, k) for i in range(s.ntorres) for k in range(nt)]


def test_pipeline_lag_is_checked():
    with pytest.raises(ValueError, match="lag must be an int >= -1"):
        stage_schedule(2, 1, 2, 4, 4).pipelined_rounds(-2)


@pytest.mark.parametrize(("order", "size", "nt", "nx", "ny", "band"),
                         [(2, 1, 4, 30, 44, 1), (2, 4, 8, 70, 90, 3), (8, 1, 5, 40, 64, 4),
                          (4, 2, 3, 33, 29, 2)])
def test_band_launch_order_puts_dependencies_first(order, size, nt, nx, ny, band):
    s = stage_schedule(order, size, nt, nx, ny)
    perm = s.launch_order(band)
    assert sorted(perm.tolist()) == list(range(s.ntorres))
    rank = np.argsort(perm)
    deps = s.dependencies()
    has = deps >= 0
    assert (rank[deps[has]] < np.broadcast_to(rank[:, None], deps.shape)[has]).all()
    # a band holds `band` lattice diagonals a = (x0 + yc) / 2R, taken from the largest down
    a = (s.torre_x0 + s.torre_yc) // (2 * s.tile.radius)
    key = (a.max() - a[perm]) // band
    assert (np.diff(key) >= 0).all() and key[-1] > 0
    # inside a band: stage by stage
    for b in np.unique(key):
        assert (np.diff(s.torre_stage[perm[key == b]]) >= 0).all()


def test_launch_order_defaults_to_stage_order_and_checks_band():
    s = stage_schedule(2, 2, 3, 20, 20)
    assert (s.launch_order() == np.arange(s.ntorres)).all()
    assert (s.launch_order(10**6) == np.arange(s.ntorres)).all()  # one band: the stage order
    with pytest.raises(ValueError, match="band"):
        s.launch_order(0)


# ---------------------------------------------------------------- properties (hypothesis)
# Random small sweeps: NO 2-8, any DTS and Nt the geometry allows, any domain of at least one tile.


@st.composite
def sweeps(draw):
    order = draw(st.sampled_from([2, 4, 6, 8]))
    shs = order // 2
    size = draw(st.integers(1, max(1, 8 // shs)))  # R = ShS DTS <= 8 keeps the domains small
    r = shs * size
    nt = draw(st.integers(1, 12))
    nx = draw(st.integers(2 * r, 5 * r + 6))
    ny = draw(st.integers(2 * r, 5 * r + 6))
    return stage_schedule(order, size, nt, nx, ny)


def _who(s):
    """Stage, torre and visits of every (x, y, step), from the schedule's tiers alone."""
    stage = np.full((s.nx, s.ny, s.nt), -1, dtype=np.int64)
    torre = np.full_like(stage, -1)
    visits = np.zeros_like(stage)
    for st_, i, k, rows in s.iter_tiers():
        for y, lo, hi in rows:
            stage[lo : hi + 1, y, k] = st_
            torre[lo : hi + 1, y, k] = i
            visits[lo : hi + 1, y, k] += 1
    return stage, torre, visits


def _cross(s):
    """Offsets of the cross stencil: the cell itself and ShS neighbours along each axis in x and y."""
    return [(0, 0)] + [(sx * d, sy * d) for d in range(1, s.tile.shs + 1)
                       for sx, sy in ((1, 0), (-1, 0), (0, 1), (0, -1))]


def _before(stage, torre, a, b):
    """Whether ``a`` is done before ``b`` starts in every run: an earlier stage, or a lower tier of its torre.

    ``a`` and ``b`` index the same (x, y) shape; the torres of one stage run at once, in any order.
    """
    return (stage[a] < stage[b]) | ((torre[a] == torre[b]) & (a[2] < b[2]))


@settings(max_examples=60, deadline=None)
@given(sweeps())
def test_property_every_cell_is_updated_once_per_level_and_after_what_it_reads(s):
    stage, torre, visits = _who(s)
    assert (visits == 1).all()  # every (x, y, step) exactly once
    nx, ny = s.nx, s.ny
    x, y = np.meshgrid(np.arange(nx), np.arange(ny), indexing="ij")
    for k in range(1, s.nt):
        # step k at (x, y) reads level k + 1 of its cross, written by step k - 1 there; it overwrites
        # level k at (x, y), which step k - 1 of the same cross read: both need step k - 1 of the cross first
        for dx, dy in _cross(s):
            xn, yn = x + dx, y + dy
            inside = (xn >= 0) & (xn < nx) & (yn >= 0) & (yn < ny)
            me = (x[inside], y[inside], np.full(inside.sum(), k))
            them = (xn[inside], yn[inside], np.full(inside.sum(), k - 1))
            assert _before(stage, torre, them, me).all(), (k, dx, dy)
        if k >= 2:  # and level k at (x, y) itself, written by step k - 2 there
            me = (x.ravel(), y.ravel(), np.full(x.size, k))
            assert _before(stage, torre, (x.ravel(), y.ravel(), np.full(x.size, k - 2)), me).all()
    assert s.replay_in_place() == []  # the schedule's own replay agrees
    owner, _ = s.owner(x[..., None], y[..., None], np.arange(s.nt)[None, None, :])
    assert (owner == torre).all()  # and so does its closed-form owner


@settings(max_examples=30, deadline=None)
@given(sweeps())
def test_property_tier_waits_keep_the_in_place_update_correct(s):
    assert s.pipeline_violations(0) == []
    rounds = s.pipelined_rounds(0)
    assert len(rounds) == s.nstages + s.nt - 1
    assert sorted(e for r in rounds for e in r) == [(i, k) for i in range(s.ntorres) for k in range(s.nt)]


@pytest.mark.parametrize("band", [None, 1, 2, 5])
def test_launch_groups_are_independent_and_after_what_they_read(band):
    """Each group of the launch order lies in one stage (its torres never exchange data) and every
    torre's dependencies are in earlier groups; the map of time levels follows the groups."""
    s = stage_schedule(order=4, size=1, nt=4, nx=30, ny=26)
    groups = s.launch_groups(band)
    assert (np.concatenate(groups) == s.launch_order(band)).all()
    group_of = np.empty(s.ntorres, dtype=np.int64)
    for n, torres in enumerate(groups):
        assert len(set(s.torre_stage[torres].tolist())) == 1
        group_of[torres] = n
    deps = s.dependencies()
    assert ((deps < 0) | (group_of[np.maximum(deps, 0)] < group_of[:, None])).all()
    assert (s.time_levels_after(np.arange(s.ntorres)) == s.nt).all()
    if band is None:
        assert all((s.time_levels_after(np.concatenate(groups[:k])) == s.time_levels(k)).all()
                   for k in (1, len(groups) // 2))


@pytest.mark.parametrize(("order", "size", "nt", "nx", "ny"), [
    (2, 1, 4, 9, 2), (2, 2, 4, 9, 8), (2, 3, 6, 11, 6), (4, 1, 5, 13, 4), (4, 2, 5, 13, 16),
    (4, 2, 6, 17, 8)])
def test_a_periodic_y_schedule_is_the_infinite_lattice(order, size, nt, nx, ny):
    """With 2R | ny a stage keeps one torre per class of yc modulo ny and wraps its rows: every vertex once,
    the in-place replay reading across the y face is clean, tier-level waits stay correct for any timing
    (lag 0 as the open domain's; lag -1 fails as there); the open schedule's two clipped halves of a torre
    across the face (R > 1), run one after the other, read the face's other side too early."""
    s = stage_schedule(order, size, nt, nx, ny, periodic_y=True)
    v = s.vertices()
    assert len(v) == nx * ny * nt and len(np.unique(v, axis=0)) == len(v)
    assert s.replay_in_place() == []
    assert s.pipeline_violations(nt - 1) == [] and s.pipeline_violations(0) == []
    assert s.pipeline_violations(-1)
    torre, cell = s.owner(0, 0, 1)
    assert int(torre) in s.stage_torres(int(s.torre_stage[torre]))
    clipped = s._replay(stage_schedule(order, size, nt, nx, ny).iter_tiers())
    assert bool(clipped) == (s.tile.radius > 1)  # R = 1: a tile is one row, none crosses the face


def test_a_periodic_y_needs_ny_a_multiple_of_the_tile_period():
    with pytest.raises(ValueError, match=r"periodic y needs ny a multiple of 2R=8 \(the diamond tiles' "
                                         r"period in y at NO=4, DTS=2\); got ny=12"):
        stage_schedule(4, 2, 3, 16, 12, periodic_y=True)
