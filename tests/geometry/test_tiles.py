import itertools

import numpy as np
import pytest

from diamondlab.geometry import Conoid, DiamondTile, DiamondTorre

PARAMS = list(itertools.product([2, 4, 6, 8], [1, 2, 3, 4]))


@pytest.mark.parametrize(("order", "size"), PARAMS)
def test_tile_has_2r2_cells_strictly_inside(order, size):
    tile = DiamondTile(order, size)
    x, y = tile.cells(5, -3)
    assert len(x) == tile.ncells == 2 * (order // 2 * size) ** 2
    assert len(set(zip(x.tolist(), y.tolist(), strict=True))) == tile.ncells
    # |x - x0 - 1/2| + |y - yc| < R, never on the edge
    dist = np.abs(x - 5 - 0.5) + np.abs(y + 3)
    assert dist.max() < tile.radius
    assert tile.contains(x, y, 5, -3).all()


@pytest.mark.parametrize(("order", "size"), PARAMS)
def test_lattice_tiles_the_plane(order, size):
    tile = DiamondTile(order, size)
    r = tile.radius
    window = 4 * r
    hits = np.zeros((window, window), dtype=int)
    for a, b in itertools.product(range(-4, 8), repeat=2):
        ax, ay = tile.lattice_anchor(a, b)
        x, y = tile.cells(ax, ay)
        keep = (x >= 0) & (x < window) & (y >= 0) & (y < window)
        np.add.at(hits, (x[keep], y[keep]), 1)
    assert (hits == 1).all()


@pytest.mark.parametrize(("order", "size", "nt"), [(2, 1, 4), (2, 3, 5), (4, 2, 3), (8, 1, 6)])
def test_torre_is_the_intersection_of_two_conoids(order, size, nt):
    torre = DiamondTorre(DiamondTile(order, size), nt)
    r = torre.tile.radius + torre.tile.shs * nt
    xs, ys = np.meshgrid(np.arange(-2 * r, 3 * r), np.arange(-2 * r, 2 * r), indexing="ij")
    inside = set()
    for t in range(nt):
        sel = torre.bottom_conoid().contains(xs, ys, t) & torre.top_conoid().contains(xs, ys, t)
        inside |= {(int(x), int(y), t) for x, y in zip(xs[sel], ys[sel], strict=True)}
    assert inside == {tuple(v) for v in torre.vertices().tolist()}


def test_conoid_sections_grow_by_shs():
    c = Conoid(DiamondTile(4, 1), "dependence", steps=3, x0=2, yc=1, t0=10)
    v = c.vertices()
    for k in range(4):
        sec = v[v[:, 2] == 10 - k]
        assert len(sec) == c.ncells_at(k) == 2 * (2 + 2 * k) ** 2
    assert c.contains(v[:, 0], v[:, 1], v[:, 2]).all()
    assert not c.contains(2, 1, 11)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"order": 3, "size": 1}, r"order \(NO\) must be one of \(2, 4, 6, 8\).*got 3 \(odd\)"),
        ({"order": 10, "size": 1}, "got 10"),
        ({"order": 2, "size": 0}, r"size \(DTS\) must be an int >= 1; got 0"),
    ],
)
def test_tile_rejects_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        DiamondTile(**kwargs)


def test_torre_rejects_bad_height_and_is_frozen():
    with pytest.raises(ValueError, match=r"nt \(Nt, torre height\) must be an int >= 1; got 0"):
        DiamondTorre(DiamondTile(2, 1), 0)
    with pytest.raises(TypeError, match="nt"):
        DiamondTorre(DiamondTile(2, 1), 2.5)
    torre = DiamondTorre(DiamondTile(2, 1), 2)
    with pytest.raises(AttributeError):
        torre.nt = 3
