"""The launch model: resident blocks from a kernel's resources, and the sweep's launch efficiency."""

import pytest

from diamondlab.engine.measure.launchmodel import resident_blocks, sweep_efficiency


def test_resident_blocks_take_the_tightest_limit():
    assert resident_blocks(64, 256, 1000, 1) == 4  # registers: 65536 / (8 warps x 2048) = 4
    assert resident_blocks(32, 256, 1000, 1) == 8  # threads: 2048 / 256
    assert resident_blocks(32, 64, 100_000, 2) == 4  # shared memory: 228 KiB / (100000 + 1024) = 2 a SM
    assert resident_blocks(16, 32, 0, 1) == 32  # the block limit
    assert resident_blocks(255, 1024, 0, 1) == 0  # does not fit at all
    assert resident_blocks(129, 256, 0, 1) == 1  # 129 registers round up to 136 a thread
    assert resident_blocks(176, 96, 0, 1) == 2  # 3 warps: 2 a sub-partition x 4 = 8 warps, 2 blocks
    assert resident_blocks(200, 160, 0, 1) == 1  # 5 warps: 8 warps fit, one block


def test_pipelining_recovers_a_stage_that_does_not_fill_the_gpu():
    small = sweep_efficiency(2, 4, 32, (512, 1024, 256), 264)
    assert small < 0.55 < 0.9 < sweep_efficiency(2, 4, 32, (512, 1024, 256), 264, True, 32, 2)
    assert sweep_efficiency(2, 4, 32, (512, 2048, 256), 264) > 0.95  # 256 torres a stage for 264 slots
    with pytest.raises(ValueError, match="grid too small"):
        sweep_efficiency(8, 1, 16, (4, 64, 16), 132)
