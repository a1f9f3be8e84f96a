"""The x-t dependency graph: edges are the stencil's, cones have slope ShS, LRnLA diamonds depend one way."""

import numpy as np
import pytest

from diamondlab.geometry.graph import (
    SUBDIVISIONS,
    dependency_edges,
    dependency_offsets,
    light_cone,
    shape_neighbours,
    subdivision,
)


@pytest.mark.parametrize("order", [2, 4, 6, 8])
def test_edges_are_the_stencils_offsets(order):
    edges = dependency_edges(order, 20, 6)
    interior = edges[(edges[:, 0] == 10) & (edges[:, 1] == 5)]
    offsets = sorted(map(tuple, (interior[:, 2:] - interior[:, :2]).tolist()))
    assert offsets == sorted(dependency_offsets(order))
    assert len(dependency_offsets(order)) == order + 2  # 2 ShS + 1 at t - 1, one at t - 2


@pytest.mark.parametrize("order", [2, 8])
def test_light_cone_widens_by_shs_a_step(order):
    shs, depth = order // 2, 5
    cone = light_cone(order, (3, 10), depth)
    for k in range(depth + 1):
        xs = cone[cone[:, 1] == 10 - k, 0]
        assert xs.min() == 3 - shs * k and xs.max() == 3 + shs * k and len(xs) == 2 * shs * k + 1


@pytest.mark.parametrize("order", [2, 4])
def test_lrnla_diamonds_depend_one_way_and_layers_do_not_mix(order):
    nx, nt = 40, 14
    edges = dependency_edges(order, nx, nt)
    shs = order // 2
    ids = {k: subdivision(k, order, nx, nt, 8) for k in SUBDIVISIONS}
    u = lambda x, t: (x + shs * t) // 8  # noqa: E731
    v = lambda x, t: (x - shs * t) // 8  # noqa: E731
    x, t, xs, ts = edges.T
    assert np.all(u(xs, ts) <= u(x, t)) and np.all(v(xs, ts) >= v(x, t))  # unilateral dependencies
    diamond = ids["lrnla"]
    assert len(np.unique(diamond)) > 4 and np.any(diamond[t, x] == diamond[ts, xs])  # edges inside a diamond
    assert np.all(ids["stepwise"][t, x] != ids["stepwise"][ts, xs])  # a layer never reads itself
    with pytest.raises(ValueError, match=r"kind must be one of \('stepwise', 'domain_decomposition'"):
        subdivision("trapezoid", 2, 8, 4)


@pytest.mark.parametrize("kind", SUBDIVISIONS)
@pytest.mark.parametrize("order", [2, 4, 8])
def test_shape_neighbours_are_the_shapes_its_vertices_read_and_are_read_by(kind, order):
    """Against a vertex-by-vertex walk of the edges; LRnLA diamonds never read a diamond they feed."""
    ids = subdivision(kind, order, 30, 12, 6)
    nt, nx = ids.shape
    for me in np.unique(ids)[::4]:
        reads, feeds = set(), set()
        for t in range(nt):
            for x in range(nx):
                for dx, dt in dependency_offsets(order):
                    if 0 <= x + dx < nx and 0 <= t + dt < nt and ids[t, x] != ids[t + dt, x + dx]:
                        if ids[t, x] == me:
                            reads.add(int(ids[t + dt, x + dx]))
                        if ids[t + dt, x + dx] == me:
                            feeds.add(int(ids[t, x]))
        got = shape_neighbours(ids, order, int(me))
        assert (set(got[0].tolist()), set(got[1].tolist())) == (reads, feeds)
        if kind == "lrnla":
            assert not reads & feeds
