import numpy as np
import pytest

from diamondlab.geometry import DiamondTile, DiamondTorre, GraphStencil, count_transfers, locality
from diamondlab.geometry.locality import asynchrony
from diamondlab.maxwell.scheme import YeeParameters


@pytest.mark.parametrize("order", [2, 4])
def test_yee_cross_is_lopsided_and_its_union_is_the_reach(order):
    s = GraphStencil("maxwell", order)
    m = YeeParameters(order).reach
    h, e = s.cross(0), s.cross(1)
    assert (h.min(), h.max(), e.min(), e.max()) == (1 - m, m, -m, m - 1)
    assert np.array_equal(np.union1d(h, e), np.arange(-m, m + 1))
    assert s.slope == m == max(np.abs(h).max(), np.abs(e).max())
    assert s.tile(3) == DiamondTile(order, 3)  # the engine's tile (yee_cpu: DiamondTile(params.order, size))
    assert s.torre(2, 5) == DiamondTorre(DiamondTile(order, 2), 10)


@pytest.mark.slow  # the Yee CPU kernels' compile, shared with tests/engine/test_maxwell_simulation.py
@pytest.mark.parametrize("order", [2, 4])
def test_h_half_step_reads_e_where_the_kernel_does(order):
    """One step of the Yee CPU kernel from one E cell: the H columns that change are those whose cross reads
    it (the graph is the kernel's, not a drawing's guess)."""
    from diamondlab import Simulation

    shape = (12, 12, 8)
    e = np.zeros((3, *shape), np.float32)
    e[:, 6, 6, 4] = 1
    sim = Simulation(shape, order, equation="maxwell", backend="cpu", algorithm="stepwise",
                     initial=(e, np.zeros_like(e)))
    sim.run(1)
    changed = {tuple(c) for c in np.argwhere(np.abs(np.asarray(sim.H)).sum(axis=(0, 3)) > 0).tolist()}
    expected = {(6 - dx, 6 - dy) for dx, dy, back in GraphStencil("maxwell", order).offsets(0) if back == 1}
    assert changed == expected


def test_tile_reads_of_an_e_tile_lie_on_the_h_tier_below():
    s = GraphStencil("maxwell", 4)
    x, y = s.tile_reads(2, 1, x0=s.slope)  # the E tier of a torre whose H tier is anchored at 0
    below = s.tile(2).contains(x, y, 0, 0)
    assert len(x) == len(set(zip(x.tolist(), y.tolist(), strict=True)))
    assert below.sum() == s.tile(2).ncells  # the whole H tile is read ...
    assert (~below).sum() > 0  # ... and cells outside it, computed by earlier stages


@pytest.mark.parametrize(("order", "size", "nt"), [(2, 1, 2), (2, 2, 3), (4, 1, 2), (4, 2, 2)])
def test_maxwell_closed_formula_is_the_symmetric_count_and_the_staggered_count_moves_less(order, size, nt):
    s = GraphStencil("maxwell", order)
    v = s.torre(size, nt).vertices()
    symmetric = count_transfers(v, 2 * s.reach)
    staggered = count_transfers(v, order, equation="maxwell")
    closed = locality("diamond_torre", order, size, nt, equation="maxwell")
    assert symmetric.locality / 6 == pytest.approx(closed, rel=1e-12)
    assert staggered.locality == pytest.approx(staggered.vertices / (staggered.loads + staggered.saves) / 6)
    assert staggered.locality > closed
    assert staggered.vertices == symmetric.vertices == s.torre(size, nt).nvertices


def test_bytes_per_yee_update_and_asynchrony_follow_the_acoustic_tile():
    assert 4 / locality("stepwise_layer", 2, equation="maxwell") == pytest.approx(72)
    acoustic = locality("torre_row", 4, 2, 16)
    assert locality("torre_row", 4, 2, 8, equation="maxwell") == pytest.approx(acoustic / 6)
    assert asynchrony("diamond_tile", 4, 2, 3, (8, 8, 8), equation="maxwell") == asynchrony(
        "diamond_tile", 4, 2, 3, (8, 8, 8))
    assert asynchrony("wavefront", 2, 1, 4, (64, 64, 8), equation="maxwell") == asynchrony(
        "wavefront", 2, 1, 8, (64, 64, 8))


def test_bad_equation_and_order():
    with pytest.raises(ValueError, match="equation must be one of"):
        GraphStencil("elastic", 2)
    with pytest.raises(ValueError, match="order must be one of"):
        GraphStencil("maxwell", 6)
    with pytest.raises(ValueError, match="equation must be one of"):
        locality("naive", 2, equation="heat")
