"""CUDA backend: contract, errors before any work, and GPU correctness (tests marked gpu)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from diamondlab.engine.backends.cuda import CUDABackend
from diamondlab.kernels.cuda import SUPPORTED_SIZES
from diamondlab.numerics import WaveParameters

#: (NO, DTS, Nt, odd shape): every built pair, each with interior and boundary torres.
GPU_CASES = [
    (order, size, nt, shape)
    for order, sizes in sorted(SUPPORTED_SIZES.items())
    for size in sizes
    for nt, shape in ((7, (45, 61, 37)), (8, (70, 66, 131)))
] + [(2, 3, 9, (61, 70, 100), True), (2, 4, 16, (80, 63, 96), True)]


def max_rel(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a - b).max() / np.abs(b).max())


def test_backend_contract_attributes():
    assert CUDABackend.name == "cuda"
    for method in ("compile", "set_fields", "fields", "step", "sweep", "synchronize"):
        assert callable(getattr(CUDABackend, method))
    assert isinstance(CUDABackend.available(), bool)
    for order, sizes in SUPPORTED_SIZES.items():
        size, nt = CUDABackend.default_tiling(order)
        assert size in sizes and nt >= 1


def test_default_tile_fits_the_z_column():
    assert CUDABackend.default_tiling(6) == (2, 16)
    assert CUDABackend.default_tiling(6, (64, 64, 256)) == (2, 16)
    assert CUDABackend.default_tiling(6, (64, 64, 384)) == (2, 16)  # capped at 168 registers: still faster
    assert CUDABackend.default_tiling(6, (64, 64, 416)) == (1, 16)  # over the tuning's shared_previous_nz
    assert CUDABackend.default_tiling(6, (64, 64, 544)) == (1, 16)  # level n-1 of 544 z: no shared memory
    assert CUDABackend.default_tiling(2, (64, 64, 1000)) == (3, 32)  # DTS=4 holds 864 z cells at most


def test_damped_default_tile_is_the_one_that_does_not_spill():
    """A sponge or a velocity model at NO=2 runs DTS=3 in the generic sweep (DTS=4's medium variant
    spills 248 bytes), DTS=4 from 256^3 up, where the (ny, nz)-specialised sweep runs (48 bytes, faster:
    BENCHMARKS.md); K per cell at NO=6 runs DTS=1 with K in registers (DTS=2 keeps level n-1 in shared
    memory and loads K per cell and tier); a medium lifts the generic NO=4 DTS=2 register cap to 255 (it
    spilled at 128), the specialised sweep keeps 128."""
    from diamondlab.engine.run.plan import default_tiling
    from diamondlab.kernels.cuda import sweep_register_cap

    assert CUDABackend.default_tiling(2) == (4, 32)
    small, large = (192, 192, 192), (256, 256, 256)  # below and at the tuning's specialise_min_cells
    assert CUDABackend.tuning().specialise_min_cells == 256**3
    for medium in ("sponge", "layered", "model"):
        assert CUDABackend.default_tiling(2, small, medium=medium) == (3, 32)
        assert CUDABackend.default_tiling(2, large, medium=medium) == (4, 32)
        assert CUDABackend.default_tiling(8, small, medium=medium) == CUDABackend.default_tiling(8, small)
    assert CUDABackend.default_tiling(6, small, medium="layered") == (2, 16)
    assert CUDABackend.default_tiling(6, large, medium="model") == (1, 16)
    assert default_tiling(CUDABackend, 2, small, medium="sponge") == (3, 32)
    assert sweep_register_cap(4, 2, 256) == 128 and sweep_register_cap(4, 2, 256, medium=True) == 255
    assert sweep_register_cap(4, 2, 256, specialised=True, medium=True) == 128
    assert sweep_register_cap(2, 3, 256, specialised=True) == 80
    assert sweep_register_cap(2, 3, 256, specialised=True, medium=True) == 128


def test_nt_follows_the_grid_at_no_8():
    """NO=8 runs Nt=8 below 2^28 cells (shorter torres wait less: 5-12 % faster), Nt=16 on the 2 GiB grid."""
    assert CUDABackend.default_tiling(8) == (1, 16)
    for medium in ("constant", "sponge", "layered", "model"):
        assert CUDABackend.default_tiling(8, (256, 256, 256), medium=medium) == (1, 8)
        assert CUDABackend.default_tiling(8, (512, 512, 256), medium=medium) == (1, 8)
        assert CUDABackend.default_tiling(8, (512, 2048, 256), medium=medium) == (1, 16)
    assert CUDABackend.default_tiling(2, (256, 256, 256)) == (4, 32)  # the other orders keep theirs


def test_unsupported_pair_fails_before_any_work():
    with pytest.raises(ValueError, match="DTS in"):
        CUDABackend(WaveParameters(order=8), (40, 40, 40), 3, 4)


def test_too_many_z_cells_fails_before_any_work():
    with pytest.raises(ValueError, match="nz must be <= 1024"):
        CUDABackend(WaveParameters(order=2), (16, 16, 4096), 1, 4)


def test_domain_smaller_than_a_tile_is_a_value_error():
    with pytest.raises(ValueError, match="grid too small"):
        CUDABackend(WaveParameters(order=2), (5, 40, 40), 4, 4)


@pytest.mark.no_gpu
def test_no_gpu_is_a_clear_runtime_error():
    assert CUDABackend.available() is False
    reason = CUDABackend.unavailable_reason()
    assert "backend='cuda'" in reason and "backend='cpu'" in reason
    with pytest.raises(RuntimeError, match="NVIDIA GPU"):
        CUDABackend(WaveParameters(order=2), (16, 16, 16), 1, 4)


@pytest.mark.gpu
@pytest.mark.parametrize("case", GPU_CASES, ids=lambda c: "-".join(map(str, c)).replace(" ", ""))
def test_gpu_diamondtorre_equals_stepwise_and_cpu(case):
    order, size, nt, shape, *spec = case
    nsteps = 200
    heights = (nt,) * (nsteps // nt) + ((nsteps % nt,) if nsteps % nt else ())
    # DiamondTorre == stepwise bit for bit (np.array_equal), both within 1e-5 of the CPU engine
    print(_sim_cases().run_case(order, size, nt, shape, heights, bool(spec)))


@pytest.mark.gpu
def test_gpu_shape_larger_than_memory_is_a_value_error():
    with pytest.raises(ValueError, match="GiB of GPU memory"):
        CUDABackend(WaveParameters(order=2), (8192, 4096, 1024), 1, 4)  # 256 GiB: more than an H200


def own_device_bytes() -> int:
    """Bytes of device memory this process holds through Numba (other processes on the GPU don't count)."""
    import gc

    from numba import cuda

    gc.collect()  # earlier tests' arrays are released now, not in the middle of a measurement

    return sum(m.size for m in cuda.current_context().memory_manager.allocations.values())


@pytest.mark.gpu
def test_gpu_memory_is_two_fields_plus_a_few_percent():
    shape = (256, 512, 512)
    fields = 2 * 4 * int(np.prod(shape))
    used0 = own_device_bytes()
    b = CUDABackend(WaveParameters(order=2), shape, 4, 16)  # the pipelined default: flags per torre
    b.sweep(16)
    b.step(2)
    b.synchronize()
    assert fields <= own_device_bytes() - used0 <= fields * 1.03 + 8 * 2**20


@pytest.mark.gpu
def test_gpu_fields_round_trip_and_stay_on_device():
    shape = (20, 22, 33)
    b = CUDABackend(WaveParameters(order=4), shape, 2, 4)
    prev = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    b.set_fields(prev, prev * 2)
    p, c = b.fields()
    assert np.array_equal(p, prev) and np.array_equal(c, prev * 2)
    assert not isinstance(b._curr, np.ndarray)


@pytest.mark.gpu
def test_gpu_simulation_auto_picks_cuda_and_matches_cpu():
    from diamondlab import Simulation

    sims = {}
    for backend in ("auto", "cpu"):
        sim = Simulation((40, 36, 33), order=4, backend=backend)
        sim.run(20)
        sims[backend] = sim
    assert sims["auto"].backend_name == "cuda"
    assert max_rel(sims["auto"].field, sims["cpu"].field) <= 1e-5


#: (NO, DTS, Nt, odd shape, medium, points[, kappa_in_registers]): every NO at its default DTS with
#: everything switched on, the largest NO=2 tile, each half of the physics alone, a layered model
#: (K per depth, checked against the per-cell model kernel) and K kept in registers.
GPU_PHYSICS_CASES = [
    (order, CUDABackend.default_tiling(order)[0], 7, (45, 61, 37), "model", True) for order in (2, 4, 6, 8)
] + [(2, 3, 8, (61, 50, 70), "sponge", True), (8, 1, 6, (40, 43, 33), "sponge", True),
     (2, 4, 5, (40, 43, 33), None, True), (4, 2, 6, (40, 41, 35), "model", False)] + [
    (order, size, 7, (45, 61, 37), "layered", True) for order, size in ((2, 3), (4, 2), (6, 2), (8, 1))
] + [(order, size, 7, (45, 61, 37), "model", True, True) for order, size in ((2, 3), (4, 1), (4, 2), (8, 1))]


def _sim_cases():
    """The simulator script's checks (tests/kernels/cuda_sim_cases.py), imported as a module."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).parents[1] / "kernels" / "cuda_sim_cases.py"
    spec = importlib.util.spec_from_file_location("cuda_sim_cases", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.gpu
@pytest.mark.parametrize("case", GPU_PHYSICS_CASES, ids=lambda c: "-".join(map(str, c)).replace(" ", ""))
def test_gpu_physics_diamondtorre_equals_stepwise_and_cpu(case):
    """Velocity model, sponge, sources (two in one cell) and receivers inside the GPU's torres, 200 steps.

    The simulator's check on a real GPU: DiamondTorre == stepwise bit for bit (fields and receiver
    values), both within 1e-5 of the CPU engine.
    """
    order, size, nt, shape, medium, points, *kappa_in_registers = case
    nsteps = 200
    heights = (nt,) * (nsteps // nt) + ((nsteps % nt,) if nsteps % nt else ())
    print(_sim_cases().run_physics_case(order, size, nt, shape, heights, medium, points,
                                        kappa_in_registers=(kappa_in_registers or [None])[0]))


@pytest.mark.gpu
def test_gpu_simulation_with_sources_runs_on_the_gpu_and_matches_cpu():
    from diamondlab import Simulation
    from diamondlab.media import anomaly_model
    from diamondlab.sources import Receiver, Source

    shape = (64, 60, 48)
    runs = {}
    for backend in ("auto", "cpu"):
        sim = Simulation(shape, order=4, backend=backend, initial="zero",
                         velocity=anomaly_model(shape, 1.0, 0.7),
                         sources=[Source((30.5, 29.0, 20.2), frequency=0.06)],
                         receivers=[Receiver((40.0, 30.0, 24.0)), Receiver((12, 50, 30))])
        sim.run(150)
        runs[backend] = sim
    assert runs["auto"].backend_name == "cuda"
    assert max_rel(runs["auto"].field, runs["cpu"].field) <= 1e-5
    assert max_rel(runs["auto"].traces, runs["cpu"].traces) <= 1e-5


@pytest.mark.gpu
def test_gpu_medium_memory_is_three_fields_plus_a_few_percent():
    """A velocity model adds one field (K); the sponge is three 1D profiles, no array."""
    from diamondlab.media import Medium, sponge_profiles

    shape = (256, 256, 512)
    fields = 2 * 4 * int(np.prod(shape))
    used0 = own_device_bytes()
    b = CUDABackend(WaveParameters(order=2), shape, 3, 16)
    kappa = np.full(shape, 0.25, np.float32)
    kappa[:, :, 200:] = 0.2
    b.set_physics(Medium(kappa, sponge_profiles(shape, 16, 1.0, 1.0, 0.5), shape))
    b.sweep(16)
    b.synchronize()
    assert 1.5 * fields <= own_device_bytes() - used0 <= 1.5 * fields * 1.03 + 8 * 2**20


#: (NO, DTS, Nt, odd shape, specialised, band, chunk): the sweep with tier-level waits
#: (``pipelined=True``), torres handed out stage by stage (band None) or in diagonal bands,
#: waiting before every tier or every ``chunk`` tiers (None: the backend's default).
GPU_PIPELINED_CASES = [(2, 4, 8, (70, 66, 131), False, None, 1), (4, 2, 7, (45, 61, 37), True, None, 3),
                       (8, 1, 16, (80, 71, 64), False, None, 1), (2, 4, 16, (150, 203, 67), True, 3, 4),
                       (8, 1, 16, (120, 161, 64), False, 16, 2),
                       (2, 4, 32, (300, 600, 40), True, None, None),  # the default: bands of 32, chunks of 2
                       (6, 2, 16, (120, 161, 64), True, None, None)]  # level n-1 in shared memory


@pytest.mark.gpu
@pytest.mark.parametrize("case", GPU_PIPELINED_CASES, ids=lambda c: "-".join(map(str, c)).replace(" ", ""))
def test_gpu_pipelined_sweep_equals_stepwise_and_cpu(case):
    """Tier-level waits on a real GPU (torres overlap there): bit for bit equal to stepwise, 200 steps."""
    order, size, nt, shape, spec, band, chunk = case
    nsteps = 200
    heights = (nt,) * (nsteps // nt) + ((nsteps % nt,) if nsteps % nt else ())
    print(_sim_cases().run_case(order, size, nt, shape, heights, spec, False, True, band, chunk))
    print(_sim_cases().run_physics_case(order, size, nt, shape, heights[:4], "sponge", True, True, band,
                                        chunk))


def test_band_and_chunk_need_pipelined_and_valid_values():
    for kw in ({"pipelined": False, "chunk": 2}, {"pipelined": False, "band": 3}):
        with pytest.raises(ValueError, match="band and chunk need pipelined=True"):
            CUDABackend(WaveParameters(order=2), (16, 16, 16), 1, 4, **kw)
    # NO=2 DTS=1 on a grid whose stage fills the GPU: whole-torre waits by default, so a band alone is refused
    with pytest.raises(ValueError, match="band and chunk need pipelined=True"):
        CUDABackend(WaveParameters(order=2), (16, 2048, 16), 1, 4, band=4)
    with pytest.raises(ValueError, match=r"band must be an int >= 0 \(0: stage by stage\); got -1"):
        CUDABackend(WaveParameters(order=2), (16, 16, 16), 1, 4, pipelined=True, band=-1)


def test_launch_scheme_is_checked_before_any_work():
    with pytest.raises(ValueError, match=r"launch must be one of \('sweep', 'per-stage'\); got 'per-block'"):
        CUDABackend(WaveParameters(order=2), (16, 16, 16), 1, 4, launch="per-block")
    for kw in ({"pipelined": True}, {"band": 2}, {"chunk": 2}):
        with pytest.raises(ValueError, match=r"launch='per-stage' synchronises after whole stages"):
            CUDABackend(WaveParameters(order=2), (16, 16, 16), 1, 4, launch="per-stage", **kw)


def test_boundary_profiles_are_checked_before_any_work():
    allowed = r"\('held', 'x_at_use', 'at_use'\)"
    with pytest.raises(ValueError, match=rf"boundary_profiles must be one of {allowed}; got 'in_shared'"):
        CUDABackend(WaveParameters(order=2), (16, 16, 16), 1, 4, boundary_profiles="in_shared")


@pytest.mark.parametrize("prefetch", [3, -1, True, 1.5])
def test_prefetch_is_checked_before_any_work(prefetch):
    expected = rf"prefetch must be one of \(0, 1, 2\) \(tiers ahead\); got {re.escape(repr(prefetch))}"
    with pytest.raises(ValueError, match=expected):
        CUDABackend(WaveParameters(order=2), (16, 16, 16), 1, 4, prefetch=prefetch)


def test_exchange_barrier_is_checked_before_any_work():
    with pytest.raises(ValueError, match=r"exchange_barrier must be one of \('block', 'neighbours'\); "
                                         r"got 'warp'"):
        CUDABackend(WaveParameters(order=2), (16, 16, 16), 1, 4, exchange_barrier="warp")
    with pytest.raises(ValueError, match=r"exchange_barrier='neighbours' needs columns of at most 512 cells; "
                                         r"got nz=600"):
        CUDABackend(WaveParameters(order=2), (16, 16, 600), 1, 4, exchange_barrier="neighbours")


#: (NO, DTS, Nt, shape): the z exchange on named barriers with 1, 7 and 16 warps a block
GPU_NEIGHBOUR_CASES = [(2, 4, 8, (70, 66, 32)), (4, 2, 7, (45, 61, 200)), (8, 1, 16, (40, 41, 512)),
                       (6, 2, 16, (60, 61, 100))]


@pytest.mark.gpu
@pytest.mark.parametrize("case", GPU_NEIGHBOUR_CASES, ids=lambda c: "-".join(map(str, c)).replace(" ", ""))
def test_gpu_neighbour_exchange_equals_stepwise_and_cpu(case):
    """The tier's z exchange waiting only for the neighbouring warps (``exchange_barrier="neighbours"``):
    DiamondTorre == stepwise bit for bit with a velocity model, a sponge and points, 80 steps."""
    order, size, nt, shape = case
    heights = (nt,) * (80 // nt) + ((80 % nt,) if 80 % nt else ())
    print(_sim_cases().run_physics_case(order, size, nt, shape, heights, "model", True,
                                        exchange_barrier="neighbours"))


@pytest.mark.gpu
def test_gpu_per_stage_launches_equal_the_one_launch_sweep():
    """The paper's scheme (a launch per stage) on the GPU: DiamondTorre == stepwise bit for bit, 60 steps,
    with a velocity model, a sponge, sources and receivers."""
    print(_sim_cases().run_physics_case(2, 2, 6, (40, 36, 32), (6,) * 10, "model", True,
                                        launch="per-stage"))


def test_chunk_must_be_between_one_and_nt():
    for chunk in (0, 5, 1.5):
        with pytest.raises(ValueError, match=r"chunk must be an int in 1..nt=4"):
            CUDABackend(WaveParameters(order=2), (16, 16, 16), 1, 4, pipelined=True, chunk=chunk)


def test_pipelined_nt_limit_is_a_value_error():
    with pytest.raises(ValueError, match="pipelined sweep needs nt <"):
        CUDABackend(WaveParameters(order=2), (16, 16, 16), 1, 2**20, pipelined=True)


@pytest.mark.gpu
def test_gpu_autotune_tries_the_sweep_options(tmp_path, monkeypatch):
    """The tuner times each (DTS, Nt) with every sweep option and hands the winner to a Simulation."""
    from diamondlab import Simulation
    from diamondlab.engine.run.autotune import autotune

    monkeypatch.setenv("DIAMONDLAB_CACHE", str(tmp_path))
    monkeypatch.setattr(CUDABackend, "tuning_candidates", classmethod(lambda cls, order: [(4, 16)]))
    shape = (160, 320, 64)
    said = []
    best = autotune(WaveParameters(order=2), shape, "cuda", repeats=3, log=said.append)
    assert len(said) == len(CUDABackend.tuning().tuning_options)
    assert (best.size, best.nt) == (4, 16) and best.options in CUDABackend.tuning_options(2, 4)
    sim = Simulation(shape, 2, backend="cuda", size="auto", nt="auto")
    assert {k: sim.backend_options[k] for k in best.options} == best.options  # with the defaults of the rest
    assert {k: sim.backend.options[k] for k in best.options} == best.options


@pytest.mark.gpu
def test_gpu_blow_up_is_found_and_named():
    """A source too strong for float32 overflows the GPU field: the run stops with the step, as on the CPU."""
    from diamondlab import Simulation
    from diamondlab.engine.run.simulation import NonFiniteFieldError
    from diamondlab.sources import Source

    sim = Simulation((64, 64, 64), 2, backend="cuda", sources=[Source((32, 32, 32), frequency=0.1,
                                                                      amplitude=1e40)])
    with pytest.raises(NonFiniteFieldError, match=r"the field is not finite at step \d+"):
        sim.run(200)
    assert sim.time_step < 200


def test_tier_level_waits_are_the_default_where_whole_torre_waits_starve_the_gpu():
    """NO=8 DTS=1 at 256^3: whole-torre waits kept 25 % of the H100 busy (40 G/s), tier-level waits 97 %."""
    from diamondlab.engine.backends.cuda import whole_torre_waits_starve

    assert whole_torre_waits_starve(8, 1, 16, (256, 256, 256))
    assert whole_torre_waits_starve(4, 1, 32, (256, 256, 256))
    assert not whole_torre_waits_starve(8, 1, 16, (512, 2048, 256))  # one stage fills the GPU
    assert not whole_torre_waits_starve(2, 1, 32, (256, 256, 256))  # small tiles: many torres a stage


@pytest.mark.gpu
def test_gpu_default_waits_follow_the_grid():
    from diamondlab import Simulation

    small = Simulation((256, 256, 256), 8, backend="cuda")
    big = Simulation((128, 2048, 256), 8, backend="cuda")  # 256 torres a stage for 132 blocks
    assert {k: small.backend.options[k] for k in ("pipelined", "band", "chunk")} == {
        "pipelined": True, "band": 0, "chunk": 1}
    assert not big.backend.options["pipelined"]
