"""The CUDA generator's text, read without a GPU: the neighbour exchange's barrier schedule, the L2
prefetches."""

import re

import pytest

from diamondlab.geometry import DiamondTile
from diamondlab.kernels.cuda_source import NEIGHBOUR_BARRIER_WARPS, TorreVariant, generate_source
from diamondlab.kernels.tile_plan import TilePlan


def barrier_schedule(order: int, nwarps: int) -> list[tuple[int, int]]:
    """Each warp's two named barriers ``(bar_a, bar_b)`` (0: none), as the generated torre computes them."""
    source = generate_source(order, 1, exchange_barrier="neighbours")
    body = source[source.index("def torre_interior"):]
    lines = [line.strip() for line in body.splitlines()[:20]
             if re.match(r"\s+(wi|nwarps|wa|wb|bar_a|bar_b) = ", line)]
    assert len(lines) == 6, lines
    schedule = []
    shs = order // 2
    for w in range(nwarps):
        values = {"tz": 32 * w + 5, "stride": 32 * nwarps + 2 * shs, "SHS": shs}
        for line in lines:
            exec(line, {}, values)  # noqa: S102 - the generator's own text
        schedule.append((values["bar_a"], values["bar_b"]))
    return schedule


@pytest.mark.parametrize("order", [2, 8])
@pytest.mark.parametrize("nwarps", range(1, NEIGHBOUR_BARRIER_WARPS + 1))
def test_each_warp_meets_each_neighbour_on_one_barrier_and_the_schedule_cannot_deadlock(order, nwarps):
    schedule = barrier_schedule(order, nwarps)
    pairs = {}
    for w, (a, b) in enumerate(schedule):
        for bar in (a, b):
            if bar:
                assert 1 <= bar <= 15  # barrier 0 is the block's
                pairs.setdefault(bar, []).append(w)
    # every pair of neighbouring warps, and nothing else, shares exactly one barrier of its own
    assert sorted(tuple(ws) for ws in pairs.values()) == [(w, w + 1) for w in range(nwarps - 1)]
    # run the barriers: a warp passes its next barrier once its partner has reached the same one
    position = [0] * nwarps
    queue = [[bar for bar in pair if bar] for pair in schedule]
    moved = True
    while moved:
        moved = False
        for w in range(nwarps):
            if position[w] == len(queue[w]):
                continue
            bar = queue[w][position[w]]
            partner = next(p for p in pairs[bar] if p != w)
            if position[partner] < len(queue[partner]) and queue[partner][position[partner]] == bar:
                position[w] += 1
                position[partner] += 1
                moved = True
    assert position == [len(q) for q in queue], "a warp waits forever"


def test_the_neighbour_exchange_replaces_every_block_barrier_of_the_tier_loops():
    block = generate_source(6, 2, segments=4)
    neighbours = generate_source(6, 2, segments=4, exchange_barrier="neighbours")
    tiers = block.count("cuda.syncthreads()") - neighbours.count("cuda.syncthreads()")
    # two torres (interior, boundary) x 4 segments, and the def line
    assert tiers == neighbours.count("neighbour_sync(bar_a, bar_b)") - 1 == 2 * 4
    assert "BAR_SYNC(bar_a, 64)" in neighbours and "BAR_SYNC" not in block
    # the simulator has no named barriers: its neighbour_sync is the block's barrier
    assert "BAR_SYNC" not in generate_source(2, 4, simulator=True, exchange_barrier="neighbours")


def test_an_unknown_exchange_barrier_is_refused():
    plan = TilePlan.__new__(TilePlan)
    with pytest.raises(ValueError, match=r"exchange_barrier must be one of \('block', 'neighbours'\); "
                                         r"got 'warp'"):
        TorreVariant(interior=True, exchange_barrier="warp").check(plan)


LEVEL_N = re.compile(r"(LDCG\(A|PREFETCH\(A|PREFETCH\(B|PREFETCH\(Kappa|Kappa\[uint64\()"
                     r"(?:, )?base \+ \((-?\d+)\) \* sx \+ \((-?\d+)\) \* nz")


@pytest.mark.parametrize(("order", "size", "medium"), [(2, 2, None), (4, 1, "model"), (8, 1, "sponge")])
@pytest.mark.parametrize("ahead", [1, 2])
def test_a_tier_prefetches_the_loads_of_the_tier_ahead(order, size, medium, ahead):
    """Tier k prefetches the level-n cells tier k + ahead loads (from the array it reads: ``B``, the one
    tier k writes, when ``ahead`` is odd) and, with a per-cell K, the K of its entering cells; the boundary
    torres prefetch nothing."""
    shs = order // 2
    source = generate_source(order, size, medium=medium, prefetch=ahead)
    tier = source.split("def torre_interior(")[1].split("\n@cuda.jit")[0].split("while k < nt:")[1]
    found: dict[str, set] = {}
    for what, u, v in LEVEL_N.findall(tier):
        found.setdefault(what, set()).add((int(u), int(v)))
    loads = found.pop("LDCG(A")
    assert found.pop(f"PREFETCH({'B' if ahead % 2 else 'A'}") == {(u + ahead * shs, v) for u, v in loads}
    if medium == "model":
        kappa = found.pop("Kappa[uint64(")  # every tile cell's K, each tier
        front = {(u, v) for u, v in kappa if (u + shs, v) not in kappa}
        assert found.pop("PREFETCH(Kappa") == {(u + ahead * shs, v) for u, v in front}
    assert not found, found
    assert f"if k + {ahead} < nt:" in tier
    assert "PREFETCH(" not in source.split("def torre_boundary(")[1].split("\n@cuda.jit")[0]
    assert "PREFETCH(" not in generate_source(order, size, medium=medium)


def test_prefetch_is_checked():
    with pytest.raises(ValueError, match=r"prefetch must be one of \(0, 1, 2\) tiers ahead; got 3"):
        TorreVariant(interior=True, prefetch=3).check(TilePlan(DiamondTile(2, 1)))
