"""The staggered scheme's figures draw the scheme's positions and the geometry's tiles and reads."""

import numpy as np
import pytest

from diamondlab.geometry import GraphStencil
from diamondlab.geometry.reads import reads_around, runs_from_vertices, vertices_of_runs
from diamondlab.maxwell.scheme import YEE_POSITIONS
from diamondlab.viz import lrnla
from diamondlab.viz.yee import yee_cell_figure, yee_cell_samples, yee_tiles_figure


def test_yee_cell_draws_each_component_where_the_scheme_puts_it():
    fig = yee_cell_figure(2, reads=None)
    cones = [t for t in fig.data if t.type == "cone"]
    own = cones[:6]
    assert [t.name.split()[0] for t in own] == list(YEE_POSITIONS)
    for t, (c, p) in zip(own, YEE_POSITIONS.items(), strict=True):
        assert (t.x[0], t.y[0], t.z[0]) == p
        arrow = np.array([t.u[0], t.v[0], t.w[0]])
        assert np.flatnonzero(arrow).tolist() == ["xyz".index(c[1])]  # along its own axis
    # E on all 12 edges and H on all 6 faces of the cube: the cell's own and its neighbours'
    e = sum(len(t.x) for t in cones if t.name.startswith("E"))
    h = sum(len(t.x) for t in cones if t.name.startswith("H"))
    assert (e, h) == (12, 6)
    assert len(yee_cell_samples("Hx")) == 2 and len(fig.data) == 1 + 6 + 6


@pytest.mark.parametrize(("order", "component"), [(2, "Hz"), (4, "Hz"), (4, "Ex")])
def test_yee_cell_shows_what_a_component_reads(order, component):
    fig = yee_cell_figure(order, reads=component)
    reads = [t for t in fig.data if t.type == "cone" and " reads " in t.name]
    assert len(reads) == 2
    m = GraphStencil("maxwell", order).reach
    for t in reads:
        comp, axis = t.name.split(" reads ")[1].split(" along ")
        a = "xyz".index(axis)
        offsets = np.asarray([t.x, t.y, t.z])[a] - YEE_POSITIONS[comp][a]
        expected = GraphStencil("maxwell", order).cross(0 if component[0] == "H" else 1)
        assert np.array_equal(np.sort(offsets), expected) and np.abs(offsets).max() == m
        assert comp[0] != component[0] and comp[1] != component[1]  # the other field, another axis
    assert len(fig.data[-1].text) == 2 * 2 * m
    with pytest.raises(ValueError, match="reads must be None or one of"):
        yee_cell_figure(2, reads="Bx")
    with pytest.raises(ValueError, match="order must be one of"):
        yee_cell_figure(6)


@pytest.mark.parametrize(("order", "size", "nt", "tier"), [(2, 2, 2, 1), (4, 1, 2, 3), (4, 2, 1, 1)])
def test_yee_tiles_are_the_engines_torre_and_its_reads(order, size, nt, tier):
    s = GraphStencil("maxwell", order)
    torre = s.torre(size, nt)
    fig = yee_tiles_figure(order, size, nt, tier)
    v = torre.vertices()
    h, e = fig.data[0], fig.data[1]
    assert len(h.x) == 8 * len(runs_from_vertices(v[v[:, 2] % 2 == 0]))
    assert len(e.x) == 8 * len(runs_from_vertices(v[v[:, 2] % 2 == 1]))
    assert min(e.z) == 1 and max(h.z) == torre.nt - (0 if torre.nt % 2 else 1)
    x, y = s.tile_reads(size, tier, *torre.tier_anchor(tier))
    own, earlier = fig.data[3], fig.data[4]
    n_own = int(own.name.rsplit("(", 1)[1].rstrip(")"))
    n_earlier = int(earlier.name.rsplit("(", 1)[1].rstrip(")"))
    below = torre.tile.contains(x, y, *torre.tier_anchor(tier - 1))
    assert n_own + n_earlier == len(x) and n_own == int(below.sum())
    assert set(own.z) == set(earlier.z) == {tier - 1, tier}  # drawn on the tier below
    nb = reads_around(order, size, nt, "maxwell")
    assert np.array_equal(fig.data[5].x, lrnla.hull_mesh(vertices_of_runs(nb.runs))["x"])
    assert f"leaning {s.slope} cell(s) a half step" in fig.layout.title.text
    with pytest.raises(ValueError, match="tier must be an int in"):
        yee_tiles_figure(order, size, nt, 0)


def test_maxwell_conoids_and_locality_next_to_the_acoustic_ones():
    fig = lrnla.conoid_figure(4, 1, 2, equation="maxwell")
    torre = GraphStencil("maxwell", 4).torre(1, 2)
    assert f"= torre 2Nt·2R² = {torre.nvertices}" in fig.layout.title.text
    assert np.array_equal(fig.data[0].x, lrnla.hull_mesh(torre.bottom_conoid().vertices())["x"])
    info = lrnla.lrnla_summary(4, 2, 4, (32, 32, 16), "maxwell")
    assert info["bytes_per_update"] == pytest.approx(4 / lrnla.locality("torre_row", 4, 2, 4, "maxwell"))
    loc = lrnla.locality_figure(4, 2, 4, (32, 32, 16), equation="maxwell")
    assert [t.name for t in loc.data] == ["Maxwell, Yee order 4"] * 2 + ["acoustic, NO=4"] * 2
    assert loc.data[0].x[-1] == pytest.approx(lrnla.locality("torre_row", 4, 2, 4, "maxwell"))
    assert loc.data[2].x[-1] == pytest.approx(lrnla.locality("torre_row", 4, 2, 4))
    assert loc.data[0].x[-1] * 6 == pytest.approx(lrnla.locality("torre_row", 4, 2, 8))  # 2 Nt tiers
