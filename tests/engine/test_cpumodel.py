"""The CPU model: its logic on injected numbers (no timing asserted), and its probes run tiny and cached."""

import json
import math

import pytest

from diamondlab import caches
from diamondlab.engine.measure import cpumodel
from diamondlab.engine.measure.cpumodel import CPUNumbers, Level, predict_cpu, torre_columns
from diamondlab.engine.measure.perfmodel import model_for, predicted_rate


def _numbers(l2=200e9, l3=100e9, memory=30e9, region=0.0, threads=2) -> CPUNumbers:
    return CPUNumbers("test", threads, (Level("L1", 32 * 2**10, 400e9), Level("L2", 2**20, l2),
                                        Level("L3", 32 * 2**20, l3, private=False),
                                        Level("memory", math.inf, memory, private=False)), region)


def test_the_grid_picks_the_stepwise_level_and_the_largest_part_names_the_bound():
    """The level beyond a core's L2 that holds the grid adds its time to the in-cache update's (a core
    stalls on those misses); the largest part names the bound."""
    n = _numbers()
    big = predict_cpu("stepwise", 2, (256, 256, 256), numbers=n, compute=6e9)
    assert big.level == "memory" and big.bound == "memory-bound"
    assert big.rate == pytest.approx(1 / (1 / 6e9 + 12 / 30e9))  # 12 bytes an update from memory, added
    assert big.parts == pytest.approx({"compute": 6e9, "memory": 30e9 / 12})
    mid = predict_cpu("stepwise", 2, (128, 128, 128), numbers=n, compute=6e9)  # 17 MB of fields: in L3
    assert mid.level == "L3" and mid.bound == "compute-bound"
    assert mid.rate == pytest.approx(1 / (1 / 6e9 + 12 / 100e9))
    slow_l3 = predict_cpu("stepwise", 2, (128, 128, 128), numbers=_numbers(l3=36e9), compute=6e9)
    assert slow_l3.bound == "L3-bound" and slow_l3.rate == pytest.approx(2e9)
    small = predict_cpu("stepwise", 2, (16, 16, 16), numbers=n, compute=6e9)
    assert small.level == "L2"  # 2 x 18^3 x 4 bytes: one core's L2 ... of the grid, not a thread's share
    assert small.rate == pytest.approx(6e9)  # the L2's traffic overlaps the update: in the in-cache probe


def test_the_torre_tile_decides_the_diamondtorre_level():
    n = _numbers()
    # NO=2, DTS=12: two tiers' tiles and their reach, ~340 columns of 2 x 4 x (nz + 2) bytes
    cols = torre_columns(2, 12)
    assert 2 * 12**2 < cols < 2 * 14**2 + 2 * 14
    p128 = predict_cpu("diamondtorre", 2, (128, 128, 128), 12, 48, n, compute=6e9)
    assert p128.working_set == 8.0 * cols * 130 and p128.level == "L2" and p128.bound == "compute-bound"
    tall = predict_cpu("diamondtorre", 2, (128, 128, 512), 12, 48, n, compute=6e9)  # > 1 MiB a thread
    assert tall.level == "L3"
    starved = predict_cpu("diamondtorre", 2, (128, 128, 512), 12, 48, _numbers(l3=20e9), compute=6e9)
    assert starved.bound == "L3-bound" and starved.parts["L3"] == pytest.approx(20e9 / 12, rel=0.2)
    assert starved.rate == pytest.approx(1 / sum(1 / starved.parts[k] for k in ("compute", "L3", "memory")))
    # DiamondTorre's traffic to memory is 4 / locality bytes an update: far below stepwise's 12
    mem = predict_cpu("diamondtorre", 2, (256, 256, 256), 12, 48, _numbers(memory=1e9), compute=6e9)
    assert mem.bound == "memory-bound" and mem.parts["memory"] > 1e9 / 12 * 5


def test_uneven_stages_and_parallel_regions_cost_time():
    n1, n2 = _numbers(threads=1), _numbers(threads=2)
    one = predict_cpu("diamondtorre", 2, (96, 96, 64), 12, 48, n1, compute=3e9)
    two = predict_cpu("diamondtorre", 2, (96, 96, 64), 12, 48, n2, compute=6e9)
    assert one.rate == pytest.approx(1 / (1 / 3e9 + 1 / one.parts["L3"]))  # one thread: no imbalance
    assert two.rate < 6e9  # 4 torres a stage, some cut by the boundary, dealt to 2 threads in blocks
    slow = predict_cpu("diamondtorre", 2, (96, 96, 64), 12, 48, _numbers(region=1e-3), compute=6e9)
    assert slow.rate < two.rate


def test_a_velocity_model_adds_bytes_and_other_backends_have_no_model():
    n = _numbers(memory=12e9)
    plain = predict_cpu("stepwise", 2, (256, 256, 256), numbers=n, compute=6e9)
    k = predict_cpu("stepwise", 2, (256, 256, 256), numbers=n, compute=6e9, variant="layered")
    assert (1 / k.rate - 1 / 6e9) / (1 / plain.rate - 1 / 6e9) == pytest.approx(16 / 12)  # memory's part
    with pytest.raises(ValueError, match="algorithm must be"):
        predict_cpu("diamond", 2, (8, 8, 8), numbers=n, compute=1e9)
    assert math.isnan(model_for("stepwise", 2, (8, 8, 8), backend="mpi").rate)
    assert math.isnan(predicted_rate("stepwise", 2, 1, 1, "cpu"))  # the CPU model needs the grid


def test_the_numbers_are_measured_tiny_stored_with_the_tunings_and_read_back(tmp_path, monkeypatch):
    monkeypatch.setenv("DIAMONDLAB_CACHE", str(tmp_path))
    for name, value in (("PROBE_TRAFFIC", 1e5), ("PROBE_MEMORY", 2.0**20), ("PROBE_UPDATES", 1e4),
                        ("PROBE_SECONDS", 0.0)):
        monkeypatch.setattr(cpumodel, name, value)
    monkeypatch.setattr(cpumodel, "_numbers", {})
    numbers = cpumodel.cpu_numbers(refresh=True, threads=1)
    assert numbers.levels[-1].name == "memory" and all(lv.bandwidth > 0 for lv in numbers.levels)
    rate = cpumodel.compute_rate(numbers, 2, 8)
    assert rate > 0 and numbers.compute == {"2,8,constant": rate}
    key = cpumodel.machine_key(1)
    assert caches.TUNING_KEY.fullmatch(key)
    stored = json.loads((tmp_path / caches.TUNINGS).read_text())[key]
    assert stored["numbers"]["compute"] == {"2,8,constant": rate}
    # a quiet measurement is read back, not measured again; a flagged one is measured anew
    stored["numbers"]["flags"] = []
    (tmp_path / caches.TUNINGS).write_text(json.dumps({key: stored}))
    monkeypatch.setattr(cpumodel, "_numbers", {})
    monkeypatch.setattr(cpumodel, "measure_levels", lambda *a, **k: pytest.fail("measured again"))
    assert cpumodel.cpu_numbers(threads=1).to_json() == stored["numbers"]
    stored["numbers"]["flags"] = ["machine busy (others 50 % of its CPU)"]
    (tmp_path / caches.TUNINGS).write_text(json.dumps({key: stored}))
    monkeypatch.setattr(cpumodel, "_numbers", {})
    monkeypatch.setattr(cpumodel, "_quiet_now", lambda: False)  # still busy: the flagged numbers serve
    assert cpumodel.cpu_numbers(threads=1).flags == ("machine busy (others 50 % of its CPU)",)
    monkeypatch.setattr(cpumodel, "_numbers", {})
    monkeypatch.setattr(cpumodel, "_quiet_now", lambda: True)  # quiet now: measured anew
    with pytest.raises(pytest.fail.Exception, match="measured again"):
        cpumodel.cpu_numbers(threads=1)
    assert caches.cache_info()["tunings"] == 1  # the tunings file, listed as the cache's


def test_the_machine_pace_is_the_reference_runs_rate_over_its_best_here(tmp_path, monkeypatch):
    """The first pace probe on a machine is its own reference (1.0); a best far beyond any memory's on
    record makes the same run read as a slowed machine, and stays; a damaged record is replaced."""
    monkeypatch.setenv("DIAMONDLAB_CACHE", str(tmp_path))
    monkeypatch.setattr(cpumodel, "PACE_BYTES", 2.0**20)
    assert cpumodel.machine_pace(1) == 1.0
    path = tmp_path / caches.TUNINGS
    key = next(k for k in json.loads(path.read_text()) if k.startswith("cpu|pace|"))
    best = json.loads(path.read_text())[key]["best"]
    assert best > 0
    caches.update_json(path, lambda data: data.__setitem__(key, {"best": 1e15}))  # 1 PB/s
    pace = cpumodel.machine_pace(1)
    assert 0.0 < pace < 0.8  # slowed, against the record
    assert json.loads(path.read_text())[key]["best"] == 1e15  # a slower run leaves the best
    caches.update_json(path, lambda data: data.__setitem__(key, {"best": "damaged"}))
    assert cpumodel.machine_pace(1) == 1.0 and json.loads(path.read_text())[key]["best"] > 0
