import numpy as np
import pytest

from diamondlab.engine.measure.launchmodel import launch_rounds
from diamondlab.geometry import stage_schedule


@pytest.mark.parametrize(("order", "size", "nt", "nx", "ny"),
                         [(2, 1, 4, 20, 18), (2, 2, 6, 30, 40), (8, 1, 5, 40, 33)])
def test_unlimited_slots_give_the_critical_paths(order, size, nt, nx, ny):
    s = stage_schedule(order, size, nt, nx, ny)
    assert launch_rounds(s, s.ntorres).rounds == s.nstages * nt == len(s.pipelined_rounds(nt - 1))
    assert launch_rounds(s, s.ntorres, pipelined=True).rounds == len(s.pipelined_rounds(0))
    for chunk in range(1, nt + 1):  # each stage starts `chunk` tiers after the one before it
        m = launch_rounds(s, s.ntorres, pipelined=True, chunk=chunk)
        assert m.rounds == (s.nstages - 1) * chunk + nt


def test_slots_bound_the_rounds_and_efficiency():
    s = stage_schedule(2, 2, 8, 64, 96)
    for slots in (1, 7, 32, s.ntorres):
        for kw in ({}, {"pipelined": True}, {"pipelined": True, "band": 2, "chunk": 4}):
            m = launch_rounds(s, slots, **kw)
            assert m.tiers == s.ntorres * 8
            assert m.rounds >= -(-m.tiers // slots) and 0 < m.efficiency <= 1
    assert launch_rounds(s, 1).efficiency == 1.0


def test_narrow_bands_with_long_chunks_starve_the_slots():
    """Inside a band each stage lags `chunk` tiers: only about band * Nt / chunk torres can run."""
    s = stage_schedule(8, 1, 16, 160, 400)
    eff = {(b, c): launch_rounds(s, 132, True, b, c).efficiency for b in (8, 32) for c in (1, 2, 4, 8)}
    for b in (8, 32):
        assert all(np.diff([eff[b, c] for c in (1, 2, 4, 8)]) <= 1e-9)
    assert eff[8, 8] < 0.3 < 0.8 < eff[32, 2]
    # whole-torre waits with 50 torres a stage leave most of 132 slots idle; pipelined bands do not
    assert launch_rounds(s, 132).efficiency < 0.5


def test_launch_rounds_checks_its_input():
    s = stage_schedule(2, 1, 2, 8, 8)
    with pytest.raises(ValueError, match="band needs pipelined=True"):
        launch_rounds(s, 4, band=2)
    with pytest.raises(ValueError, match="slots"):
        launch_rounds(s, 0)
    with pytest.raises(ValueError, match="chunk"):
        launch_rounds(s, 4, pipelined=True, chunk=0)
    with pytest.raises(TypeError, match="schedule must be a StageSchedule"):
        launch_rounds("grid", 4)
