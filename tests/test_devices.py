"""Device facts: generation limits, the FP32 rate, and the occupancy the launch model derives from them."""

import pytest

from diamondlab.devices import GENERATIONS, H100, cuda_tuning, current_gpu, gpu_arch
from diamondlab.engine.measure.launchmodel import resident_blocks

A100 = gpu_arch("NVIDIA A100-SXM4-80GB", (8, 0), 108, 1.41e9)
L4 = gpu_arch("NVIDIA L4", (8, 9), 58, 2.04e9)


def test_fp32_rates_are_the_published_ones():
    assert A100.fp32_rate == pytest.approx(19.5e12, rel=0.01)  # NVIDIA's A100 datasheet
    assert L4.fp32_rate == pytest.approx(30.3e12, rel=0.01)  # NVIDIA's L4 datasheet
    assert H100.fp32_rate == pytest.approx(66.9e12, rel=0.01)  # H100 SXM


@pytest.mark.parametrize(("arch", "registers", "threads", "shared", "per_sm"), [
    (A100, 128, 256, 68_128, 2),  # registers and shared memory: 2 blocks each
    (A100, 64, 256, 0, 4),  # registers: 32 warps of 2048 registers
    (A100, 32, 1024, 0, 2),  # threads: 2048 / 1024
    (L4, 32, 256, 0, 6),  # threads: 1536 / 256
    (L4, 128, 256, 40_000, 2),  # shared: 100 KiB / (40064 + 1 KiB reserved)
    (L4, 32, 32, 0, 24),  # the block limit of compute capability 8.9
    (H100, 128, 256, 68_128, 2),
    (H100, 32, 32, 0, 32),
])  # fmt: skip
def test_occupancy_is_the_occupancy_calculators(arch, registers, threads, shared, per_sm):
    assert resident_blocks(registers, threads, shared, arch=arch) == per_sm * arch.multiprocessors


def test_driver_limits_override_the_table_and_old_gpus_are_refused():
    custom = gpu_arch("some card", (8, 6), 10, 1e9, shared_per_sm=50_000, blocks_per_sm=None)
    assert custom.shared_per_sm == 50_000 and custom.blocks_per_sm == GENERATIONS[(8, 6)]["blocks_per_sm"]
    assert gpu_arch("future", (12, 1), 1, 1e9).threads_per_sm == GENERATIONS[(12, 0)]["threads_per_sm"]
    with pytest.raises(ValueError, match=r"compute capability >= 7.0; old card has \(6, 1\)"):
        gpu_arch("old card", (6, 1), 20, 1e9)


def test_without_a_gpu_the_reference_device_stands_in(monkeypatch):
    import diamondlab.kernels.cuda as kc

    monkeypatch.setattr(kc, "current_gpu", lambda: None)
    kc.shared_limit.cache_clear()
    try:
        assert kc.shared_limit() == kc.MAX_SHARED_BYTES == H100.shared_per_block - 64
        assert kc.sweep_register_cap(2, 1, 1024) == 64  # 65536 registers for 1024 threads
    finally:
        kc.shared_limit.cache_clear()
    assert cuda_tuning().tiling[2] == (4, 32)


@pytest.mark.gpu
def test_the_gpu_is_read_from_the_driver():
    gpu = current_gpu()
    if gpu is None:
        pytest.skip("needs a real CUDA GPU")
    from numba import cuda

    name = cuda.get_current_device().name
    assert gpu.name == (name.decode() if isinstance(name, bytes) else name)
    assert gpu.multiprocessors == cuda.get_current_device().MULTIPROCESSOR_COUNT and gpu.fp32_rate > 1e12


@pytest.mark.parametrize(("files", "expected"), [
    ({"cpu.max": "150000 100000\n"}, 2),  # cgroup v2: 1.5 CPUs -> 2 threads
    ({"cpu.max": "max 100000\n"}, None),  # no quota: every core of the affinity
    ({"cpu/cpu.cfs_quota_us": "100000\n", "cpu/cpu.cfs_period_us": "100000\n"}, 1),  # cgroup v1
    ({"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}, None),
    ({}, None),
])
def test_usable_cpus_follow_the_containers_quota(tmp_path, files, expected):
    import os

    from diamondlab.devices import usable_cpus

    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    cores = len(os.sched_getaffinity(0))
    assert usable_cpus(tmp_path) == (cores if expected is None else min(cores, expected))


def test_import_leaves_a_chosen_numba_thread_count_alone():
    import os
    import subprocess
    import sys

    code = "import diamondlab, os; print(os.environ['NUMBA_NUM_THREADS'])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=os.environ | {"NUMBA_NUM_THREADS": "1"})
    assert out.stdout.strip() == "1"
