"""Section 5's tilings side by side: exact counts agree with the closed formulas where the paper has them."""

import pytest

from diamondlab.geometry import TILINGS, compare_tilings, locality
from diamondlab.geometry.tilings import trapezoid_vertices, xt_diamond_vertices


@pytest.mark.parametrize(("order", "size", "nt"), [(2, 1, 4), (2, 2, 8), (4, 1, 6), (8, 1, 4)])
def test_lrnla_rows_equal_the_papers_formulas(order, size, nt):
    rows = {r.name: r for r in compare_tilings(order, size, nt, ny=6)}
    assert tuple(rows) == TILINGS
    assert rows["stepwise_row"].locality == pytest.approx(locality("stepwise_row", order))
    assert rows["diamond_tile"].locality == pytest.approx(locality("diamond_tile", order, size))
    assert rows["diamond_torre"].locality == pytest.approx(locality("diamond_torre", order, size, nt))
    shs = order // 2
    assert rows["diamond_torre"].asynchrony == 2 * (size * shs) ** 2  # one tier: the paper's 2 DTS^2 ShS^2


def test_the_bigger_tiles_buy_locality_with_fast_memory():
    """The trapezoid and the x-t diamond beat one torre's locality only by holding far more at once; the
    wavefront keeps the x-t diamond's locality with a small front."""
    rows = {r.name: r for r in compare_tilings(2, 2, 8, ny=16)}
    torre, trapezoid, xt, wave = (rows[n] for n in ("diamond_torre", "trapezoid", "xt_diamond",
                                                     "wavefront_diamond"))
    assert trapezoid.locality > torre.locality and trapezoid.held > 20 * torre.held
    assert xt.locality > torre.locality and xt.held > 10 * torre.held
    assert wave.transfers == xt.transfers and wave.asynchrony < xt.asynchrony


def test_tile_shapes():
    v = trapezoid_vertices(4, 1, 3)  # R = 2, ShS = 2: sides 12, 8, 4
    assert len(v) == 144 + 64 + 16 and v[:, 2].max() == 2
    assert len(xt_diamond_vertices(2, 5, 3)) == 3 * 2 * (1 + 2 + 3 + 2 + 1)
    # walls in y: the x-t diamond's locality does not depend on how many rows it spans
    a, b = (next(r for r in compare_tilings(2, 1, 6, ny=ny) if r.name == "xt_diamond") for ny in (3, 9))
    assert a.locality == pytest.approx(b.locality)
    with pytest.raises(ValueError, match=r"nt \(Nt\) must be"):
        trapezoid_vertices(2, 1, 0)
