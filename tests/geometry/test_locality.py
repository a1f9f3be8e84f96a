import itertools

import numpy as np
import pytest

from diamondlab.geometry import (
    DiamondTile,
    DiamondTorre,
    asynchrony,
    count_transfers,
    locality,
    stage_schedule,
)


@pytest.mark.parametrize(("order", "size", "nt"), list(itertools.product([2, 4], [1, 2, 3], [2, 4, 6, 12])))
def test_single_torre_exact_count_equals_closed_formula(order, size, nt):
    torre = DiamondTorre(DiamondTile(order, size), nt)
    exact = count_transfers(torre.vertices(), order)
    assert exact.vertices == torre.nvertices
    assert exact.locality == pytest.approx(locality("diamond_torre", order, size, nt), rel=1e-12)


@pytest.mark.parametrize(("order", "size", "nt"), [(2, 1, 2), (2, 2, 4), (4, 2, 8), (2, 3, 6)])
def test_row_of_torres_marginal_equals_closed_formula(order, size, nt):
    torre = DiamondTorre(DiamondTile(order, size), nt)
    r = torre.tile.radius

    def row(m):
        return np.concatenate([torre.vertices(0, 2 * r * j) for j in range(m)])

    big, small = count_transfers(row(4), order), count_transfers(row(3), order)
    marginal = (big.vertices - small.vertices) / (big.loads + big.saves - small.loads - small.saves)
    assert marginal == pytest.approx(locality("torre_row", order, size, nt), rel=1e-12)


@pytest.mark.parametrize(("order", "size"), [(2, 1), (2, 4), (6, 2)])
def test_diamond_tile_is_the_nt_1_torre(order, size):
    exact = count_transfers(DiamondTorre(DiamondTile(order, size), 1).vertices(), order)
    assert exact.locality == pytest.approx(locality("diamond_tile", order, size), rel=1e-12)


@pytest.mark.parametrize("order", [2, 4, 6, 8])
def test_stepwise_shapes(order):
    one = count_transfers([[3, 3, 7]], order)  # a column = one vertex of the (x, y, t) graph
    assert one.locality == pytest.approx(locality("stepwise_row", order))
    layer = np.array([[x, y, 4] for x in range(9) for y in range(7)])
    assert count_transfers(layer, order, domain=(9, 7)).locality == pytest.approx(1 / 3)
    assert locality("naive", order) == pytest.approx(1 / (3 + 3 * order))


def test_locality_grows_with_dts_towards_dts_over_4():
    values = [locality("diamond_torre", 2, d, 2000 * d) for d in (1, 2, 4, 8)]
    assert values == sorted(values)
    assert values[-1] == pytest.approx(8 / 4, rel=1e-3)


def test_stage_asynchrony_matches_closed_formula_in_the_interior():
    nz = 32
    s = stage_schedule(2, 2, 4, 64, 48)
    per_stage = s.stage_asynchrony(nz)
    assert per_stage.max() == asynchrony("torre_row", 2, 2, shape3d=(64, 48, nz))
    assert asynchrony("diamond_tile", 4, 2, shape3d=(1, 1, nz)) == nz * 2 * 4 * 4


def test_locality_rejects_unknown_shapes():
    with pytest.raises(ValueError, match="shape must be one of"):
        locality("cube")
    with pytest.raises(ValueError, match=r"nt \(Nt\) must be >= 1"):
        locality("diamond_torre", 2, 1)
