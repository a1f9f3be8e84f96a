"""The tile plan the CUDA printer prints: checked against the geometry, cell by cell."""

from __future__ import annotations

import ast

import numpy as np
import pytest

from diamondlab.geometry import DiamondTile
from diamondlab.kernels.cuda import SHARED_PREVIOUS_SEGMENTS, SUPPORTED_SIZES
from diamondlab.kernels.cuda_source import K_NAMES, generate_source, kernel_parameters
from diamondlab.kernels.tile_plan import PREFETCH_GROUPS, TilePlan

PAIRS = [(order, size) for order, sizes in sorted(SUPPORTED_SIZES.items()) for size in sizes] + [(2, 6)]
PLANS = [
    TilePlan(DiamondTile(order, size), segments, left)
    for order, size in PAIRS
    for segments in sorted({0, SHARED_PREVIOUS_SEGMENTS.get((order, size), 0), 2})
    for left in (False, True)
]


def _tier(tile: DiamondTile, tiers: int = 0) -> set[tuple[int, int]]:
    """The tile ``tiers`` tiers later, in this tier's offsets."""
    x, y = tile.cells(tile.shs * tiers, 0)
    return set(zip(x.tolist(), y.tolist(), strict=True))


@pytest.mark.parametrize("plan", PLANS, ids=repr)
def test_the_plan_moves_exactly_what_the_stencil_reads_and_writes(plan):
    tile, shs = plan.tile, plan.shs
    cells = set(plan.cells)
    assert cells == _tier(tile) and len(plan.cells) == tile.ncells
    # level n read in the tile's rows: every x neighbour; beyond them: the y halo
    reads = {r for c in plan.cells for r in plan.reads(*c)}
    in_rows = {(u, v) for u, v in reads if abs(v) < plan.radius}
    held, entering, left = set(plan.held), set(plan.entering), set(plan.reloaded_left)
    assert len(held) + len(entering) + len(left) == len(held | entering | left)  # disjoint
    assert held | entering | left == in_rows
    assert set(plan.y_halo) == reads - in_rows
    assert set(plan.y_halo_rows) == {v for _, v in plan.y_halo}
    # what a tier holds came from the tier before: level n+1 of its tile, and level n it held or loaded
    assert {(u + shs, v) for u, v in plan.held} <= cells
    assert {(u + shs, v) for u, v in plan.cells} <= held | entering | left
    # stores: a cell leaves when the tile two tiers up no longer holds it
    assert set(plan.leaving) == cells - _tier(tile, 2)
    assert set(plan.kept) == cells & _tier(tile, 2)
    # every x offset a tier touches is guarded on a boundary torre
    assert {u for u, _ in reads} <= set(plan.x_span)


@pytest.mark.parametrize("plan", PLANS, ids=repr)
def test_each_load_is_issued_before_the_group_that_reads_it_first(plan):
    assert sorted(c for g in plan.groups for c in g) == sorted(plan.cells)
    assert len(plan.groups) == max(plan.segments, 1)
    for cell, issued in plan.load_group.items():
        first = min(i for i, g in enumerate(plan.groups) for c in g if cell in plan.reads(*c))
        assert issued == max(first - PREFETCH_GROUPS, 0)


@pytest.mark.parametrize(("order", "size"), PAIRS)
def test_k_in_registers_is_held_or_entering_once(order, size):
    plan = TilePlan(DiamondTile(order, size))
    held, entering = set(plan.kappa_held), set(plan.kappa_entering)
    assert not held & entering and held | entering == set(plan.cells)
    assert {(u + plan.shs, v) for u, v in held} <= set(plan.cells)  # K shifts with the tile


def _def_parameters(source: str, name: str) -> tuple[str, ...]:
    (fn,) = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef) and n.name == name]
    return tuple(a.arg for a in fn.args.args)


@pytest.mark.parametrize("medium", [None, *K_NAMES])
@pytest.mark.parametrize(("points", "pipelined"), [(False, False), (True, True)])
def test_a_generated_module_records_its_kernels_parameters(medium, points, pipelined):
    source = generate_source(4, 1, simulator=True, medium=medium, points=points, pipelined=pipelined)
    module: dict = {}
    tail = source[source.index("STEPWISE_PARAMETERS"):]
    exec(tail, module)  # the recorded tuples only (the kernels need numba)
    printed = {k: tuple(K_NAMES[medium] if n == "K" else n for n in v) for k, v in module.items()
               if k.endswith("_PARAMETERS")}
    assert printed["STEPWISE_PARAMETERS"] == _def_parameters(source, "stepwise_step")
    assert printed["SWEEP_PARAMETERS"] == _def_parameters(source, "diamondtorre_sweep")
    assert printed["POINTS_PARAMETERS"] == _def_parameters(source, "apply_points")
    assert module["SWEEP_PARAMETERS"] == kernel_parameters("sweep", medium, points, pipelined)
    assert ("chunk" in module["SWEEP_PARAMETERS"]) is pipelined
    assert np.isin(["K", "DY"], module["STEPWISE_PARAMETERS"]).all() == bool(medium)
