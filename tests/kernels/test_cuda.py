"""CUDA kernels: generator, factory checks, the simulator run (CI), and GPU runs (marked gpu)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from diamondlab.geometry import stage_schedule
from diamondlab.kernels import cuda as kc
from diamondlab.kernels.cuda_source import generate_source, shared_layout, tile_rows

HERE = Path(__file__).parent




@pytest.mark.parametrize(("order", "sizes"), sorted(kc.SUPPORTED_SIZES.items()))
def test_every_supported_pair_generates(order, sizes):
    for size in sizes:
        src = generate_source(order, size)
        compile(src, f"no{order}_dts{size}", "exec")
        assert "LDCG(" in src and "max_registers" not in generate_source(order, size, simulator=True)


def test_unsupported_pair_is_a_value_error():
    with pytest.raises(ValueError, match="DTS in"):
        kc.check_pair(2, 9)
    with pytest.raises(ValueError, match="order"):
        kc.check_pair(3, 1)


def test_nz_limit_message():
    kc.check_nz(kc.MAX_NZ)
    with pytest.raises(ValueError, match="nz must be <= 1024"):
        kc.check_nz(kc.MAX_NZ + 1)


BUILT_PAIRS = [(order, size) for order, sizes in kc.SUPPORTED_SIZES.items() for size in sizes]


@pytest.mark.parametrize(("order", "size"), BUILT_PAIRS)
def test_nz_limit_is_what_shared_memory_holds(order, size):
    limit = kc.max_nz(order, size)
    assert limit % 32 == 0 and 32 <= limit <= kc.MAX_NZ
    assert kc.sweep_shared_bytes(order, size, limit) <= kc.shared_limit()
    kc.check_nz(limit, order, size)
    if limit < kc.MAX_NZ:
        assert kc.sweep_shared_bytes(order, size, limit + 1) > kc.shared_limit()
        message = f"NO={order} DTS={size} .* nz must be <= {limit}; got nz={limit + 1}"
        with pytest.raises(ValueError, match=message):
            kc.check_nz(limit + 1, order, size)


def test_no6_dts2_keeps_level_n1_in_shared_memory():
    assert kc.SHARED_PREVIOUS_SEGMENTS == {(6, 2): 4}
    assert kc.max_nz(6, 2, kc.MAX_SHARED_BYTES) == 512
    assert kc.max_nz(6, 2, 99 * 1024) == 224  # an RTX 4090's 99 KiB a block
    assert [kc.preferred_size(6, 2, nz) for nz in (64, 256, 384, 416, 1024)] == [2, 2, 2, 1, 1]
    src = generate_source(6, 2, segments=4)
    tier = src.split("def torre_interior")[1].split("def torre_boundary")[0].split("while k < nt:")[1]
    assert tier.count("cuda.syncthreads()") == 4  # one z exchange per segment
    assert "g_p0_p0" not in src  # level n-1 is never a register
    # no branch per cell in the boundary torre's tier (Numba's compile time grows with them)
    tier = src.split("def torre_boundary")[1].split("@cuda.jit")[0].split("while k < nt:")[1]
    lines = [line.strip() for line in tier.splitlines()]
    branches = [line for line in lines if " if " in line or line.startswith("if ")]
    assert branches == ["if k % 2 == 0:", "if active:", "if k >= nt - 2:"]


def test_shared_layout_rejects_odd_segments():
    assert generate_source(2, 2, segments=2) != generate_source(2, 2)
    for bad in (-2, 3, 10):
        with pytest.raises(ValueError, match="segments must be 0 or an even number in 2..8"):
            shared_layout(2, 2, bad)


def test_tile_rows_hold_2r2_cells():
    for radius in range(1, 7):
        assert sum(2 * w for _, w in tile_rows(radius)) == 2 * radius**2


def test_shared_bytes_and_block():
    assert kc.sweep_block(45) == 64
    assert kc.sweep_shared_bytes(2, 3, 256) == 2 * 19 * (256 + 2) * 4
    assert kc.sweep_shared_bytes(6, 2, 256) == (2 * 19 * (256 + 6) + 73 * 256) * 4


@pytest.mark.parametrize("varying", [(0,), (2,), (-1,)])
def test_a_prepared_launch_varies_only_scalar_arguments(varying):
    """PreparedLaunch names the argument it cannot vary (an array, or a place past the arguments) before it
    compiles or launches anything."""
    with pytest.raises(ValueError, match=r"varying must name scalar arguments of k \(0 to 1\); got"):
        kc.PreparedLaunch(None, "k", (np.zeros(3, np.float32), 1), 1, 1, varying=varying)


def test_import_does_not_load_numba_cuda():
    code = (
        "import sys, diamondlab, diamondlab.kernels.cuda, diamondlab.engine.backends.cuda; "
        "print('numba.cuda' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def _sim_cases_module():
    """The simulator script as a module (importing it runs nothing), for its case tables."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("cuda_sim_cases", HERE / "cuda_sim_cases.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
@pytest.mark.parametrize("part", ["bare", "physics", "simulation"])  # three processes: xdist spreads them
def test_kernels_under_cuda_simulator(part):
    """DiamondTorre == stepwise bit for bit and == CPU, every built (NO, DTS), in the simulator.

    Also with a velocity model, a sponge, sources and receivers (fields and receiver values), and
    through ``Simulation`` against the CPU backend.
    """
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    out = subprocess.run(
        [sys.executable, str(HERE / "cuda_sim_cases.py"), part],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    cases = _sim_cases_module()
    expected = {"bare": len(cases.CASES), "physics": 0, "simulation": 0}[part]
    assert out.stdout.count("ok NO=") == expected, out.stdout
    expected = len(cases.PHYSICS_CASES) if part == "physics" else 0
    assert out.stdout.count("ok physics NO=") == expected, out.stdout
    assert ("ok Simulation" in out.stdout) == (part == "simulation"), out.stdout


@pytest.mark.gpu
def test_gpu_kernels_fit_their_register_cap():
    from diamondlab.engine.backends.cuda import CUDABackend
    from diamondlab.numerics import WaveParameters

    for order, sizes in kc.SUPPORTED_SIZES.items():
        for size in sizes:
            b = CUDABackend(WaveParameters(order=order), (40, 40, 64), size, 4)
            b.sweep(4)
            res = b.resources()
            cap = kc.sweep_register_cap(order, size, 64) or 255
            assert res["registers"] <= cap, (order, size, res)
            print(f"NO={order} DTS={size}: {res}")


@pytest.mark.parametrize(
    ("order", "size", "nt", "nx", "ny"),
    [(2, 1, 6, 10, 8), (2, 4, 6, 20, 19), (4, 2, 7, 19, 17), (8, 1, 6, 18, 17), (6, 1, 5, 15, 16)],
)
def test_values_other_torres_read_are_stored_when_their_tier_is_done(order, size, nt, nx, ny):
    """The sweep stores a cell only when it leaves the torre (not in the tier two up) or on the
    last two tiers; a pipelined torre reads another torre's cells as soon as that tier is done.
    So every cell a tier reads from another torre must have left it: never in its tier k + 1."""
    s = stage_schedule(order, size, nt, nx, ny)
    shs = s.tile.shs
    x, y = (a.ravel() for a in np.meshgrid(np.arange(nx), np.arange(ny), indexing="ij"))
    axes = ((1, 0), (-1, 0), (0, 1), (0, -1))
    offsets = [(0, 0)] + [(d * a, d * b) for d in range(1, shs + 1) for a, b in axes]
    checked = 0
    for k in range(1, nt - 1):
        me, _ = s.owner(x, y, k)
        for dx, dy in offsets:
            xn, yn = x + dx, y + dy
            inside = (xn >= 0) & (xn < nx) & (yn >= 0) & (yn < ny)
            producer, _ = s.owner(xn[inside], yn[inside], k - 1)  # wrote the level k + 1 read at tier k
            later, _ = s.owner(xn[inside], yn[inside], k + 1)
            other = producer != me[inside]
            assert not (other & (later == producer)).any()
            checked += int(other.sum())
    assert checked > 0
