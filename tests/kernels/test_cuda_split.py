"""Split-tile DiamondTorre sweep: generator checks, simulator equality (CI), GPU equality (gpu)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from diamondlab.kernels import cuda_split as ks
from diamondlab.kernels.cuda_source import tile_rows
from diamondlab.kernels.cuda_split_source import generate_split_source, split_bands, split_layout

#: (NO, DTS, P, shape, heights, flags): interior and boundary torres, odd and even heights,
#: several sweeps; flags from ``check``'s options.
#: Each NO=8 shape but the P=8 one has an interior torre at the first height.
SIM_CASES = [
    (8, 2, 4, (38, 31, 5), (3, 2), ()),
    (8, 2, 3, (41, 35, 3), (2, 3), ("--left-from-memory", "--specialise")),
    (8, 2, 8, (33, 17, 2), (1, 2), ()),
    (4, 2, 2, (17, 15, 4), (2, 3), ("--specialise",)),
]


@pytest.mark.parametrize(("order", "size", "parts"), [(8, 2, 1), (8, 2, 2), (8, 2, 4), (8, 2, 8),
                                                      (4, 3, 3), (2, 2, 3)])
def test_bands_partition_the_tile_rows(order, size, parts):
    bands = split_bands(order, size, parts)
    rows = [v for v, _ in tile_rows(order // 2 * size)]
    assert len(bands) == parts and all(bands)
    assert [v for band in bands for v in band] == rows


def test_layout_slots_hold_the_tile_and_cross_band_neighbours():
    lay = split_layout(8, 2, 4)
    assert lay.cells == list(lay.slot)[: len(lay.cells)]
    assert lay.ncp % 2 == 1 and lay.ncp >= len(lay.slot)
    for u, v in lay.cells:
        for d in range(1, 5):
            for vv in (v - d, v + d):
                if abs(vv) < lay.radius and lay.band_of[vv] != lay.band_of[v]:
                    assert (u, vv) in lay.slot


@pytest.mark.parametrize("sim", [False, True])
def test_source_compiles_as_python(sim):
    src = generate_split_source(8, 2, 4, max_registers=128, simulator=sim, yz=(64, 32))
    compile(src, "split", "exec")
    assert ("LDCG(" in src) != sim
    assert ("max_registers=128" in src) != sim
    for p in range(4):
        assert f"def torre_interior_p{p}(" in src and f"def torre_boundary_p{p}(" in src


def test_sizes_and_caps():
    assert ks.split_block(45, simulator=False) == 64
    assert ks.split_shared_bytes(8, 2, 4, 64) == 2 * split_layout(8, 2, 4).ncp * 72 * 4
    assert ks.split_register_cap(64, 8) == 128
    with pytest.raises(ValueError, match="parts"):
        split_bands(8, 2, 16)


def _check(order, size, parts, shape, heights, flags, env) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "diamondlab.kernels.cuda_split_bench", "check",
           str(order), str(size), str(parts), *map(str, shape), *map(str, heights), *flags]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)


def test_split_sweep_equals_stepwise_under_simulator():
    """Split sweeps == ``cuda_kernels(NO, 1).stepwise_step`` steps, bit for bit (CUDA simulator)."""
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    for case in SIM_CASES:
        out = _check(*case, env)
        assert out.returncode == 0, out.stdout + out.stderr
        assert "max diff 0.0" in out.stdout, out.stdout


@pytest.mark.gpu
def test_split_sweep_equals_stepwise_on_gpu():
    """NO=8 DTS=2 P=4 on a real GPU: 200 steps of sweeps (odd shape) == 200 stepwise steps."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    heights = [16] * 12 + [5, 3]  # 200 steps, odd and even heights
    out = _check(8, 2, 4, (45, 39, 37), heights, ("--specialise",), env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "max diff 0.0" in out.stdout, out.stdout
