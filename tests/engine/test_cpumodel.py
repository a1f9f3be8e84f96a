"""The CPU model: its logic on injected numbers (no timing asserted), and its probes run tiny and cached."""

import functools
import json
import math
import multiprocessing
import os
import time

import pytest

from diamondlab import caches
from diamondlab.engine.measure import cpumodel, timing
from diamondlab.engine.measure.cpumodel import CPUNumbers, Level, predict_cpu, torre_columns
from diamondlab.engine.measure.perfmodel import model_for, predicted_rate
from diamondlab.engine.measure.timing import Measurement


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


@pytest.mark.parametrize("kind", cpumodel.PACE_KINDS)
def test_the_machine_pace_is_the_reference_runs_rate_over_its_best_here(kind, tmp_path, monkeypatch):
    """The first pace probe of a kind on a machine is its own reference; bests far beyond any machine's
    on record make the same run read as a slowed machine, and stay; one lucky reading does not raise the
    best (the lowest of the PACE_TOP highest); a damaged record is replaced; each kind keeps its own."""
    monkeypatch.setenv("DIAMONDLAB_CACHE", str(tmp_path))
    monkeypatch.setattr(cpumodel, "PACE_BYTES", 2.0**20)
    monkeypatch.setattr(cpumodel, "PACE_CALL_SECONDS", 0.005)
    first = cpumodel.pace_reading(kind, 1)
    assert first.kind == kind and first.pace == 1.0 and first.rate == first.best > 0  # one thread: balanced
    path = tmp_path / caches.TUNINGS
    key = cpumodel.pace_key(kind, 1)
    assert json.loads(path.read_text()) == {key: {"top": [first.rate]}}
    caches.update_json(path, lambda data: data.__setitem__(key, {"top": [1e18] * cpumodel.PACE_TOP}))
    pace = cpumodel.machine_pace(1, kind)
    assert 0.0 < pace < 0.8  # slowed, against the record
    assert json.loads(path.read_text())[key]["top"] == [1e18] * cpumodel.PACE_TOP  # a slower run leaves it
    lucky = [1e18] + [first.rate / 2] * (cpumodel.PACE_TOP - 1)  # one reading at a lucky moment
    caches.update_json(path, lambda data: data.__setitem__(key, {"top": lucky}))
    assert cpumodel.pace_reading(kind, 1).best < 1e18  # the best is the lowest of the highest few
    caches.update_json(path, lambda data: data.__setitem__(key, {"best": "damaged"}))
    assert cpumodel.machine_pace(1, kind) == 1.0 and json.loads(path.read_text())[key]["top"][0] > 0
    with pytest.raises(ValueError, match="kind must be one of"):
        cpumodel.pace_reading("disk", 1)


def test_one_slow_thread_is_the_pace_without_a_record(tmp_path, monkeypatch):
    """Each thread times the same work itself: one thread at half the others' speed (a vCPU the host
    shares) makes the call, and the pace, half, though the machine has no best on record yet; the
    median call counts, so one call that fell between the host's slices does not hide it."""
    monkeypatch.setenv("DIAMONDLAB_CACHE", str(tmp_path))
    monkeypatch.setattr(cpumodel, "PACE_CALL_SECONDS", 0.005)
    calls = iter([[0.01, 0.01]] * 2 + [[0.01, 0.02]] * 3 + [[0.01, 0.01]] * 2)  # warm-ups, 3 slow, 2 fast
    monkeypatch.setattr(cpumodel, "_threads_seconds", lambda kernel, arrays, reps: next(calls))
    r = cpumodel.pace_reading("compute", 2)
    assert r.balance == 0.5 and r.pace == 0.5 and r.rate == r.best  # its own reference, and still slowed
    m = Measurement((1.0,) * 5, 1e9, busy=0.0, pace=r.pace, pace_kind=r.kind)
    assert m.slowed and "machine slowed (a compute reference run at 50 % of its best here)" in m.note


def _spin():
    while True:
        pass


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs thread affinity (Linux)")
def test_a_core_shared_with_a_busy_loop_slows_the_compute_probe_and_flags_the_measurement(tmp_path,
                                                                                          monkeypatch):
    """The probe's thread held to one core, then a busy loop held there too: the compute probe reads the
    machine clearly below its best (the core is shared: the thread gets about half of it), and a
    measurement taken meanwhile is flagged.  Both on one core, so that other processes of a busy test
    machine (another test worker) run on the other cores, and slow neither reading."""
    monkeypatch.setenv("DIAMONDLAB_CACHE", str(tmp_path))
    monkeypatch.setattr(cpumodel, "PACE_CALL_SECONDS", 0.02)
    core = {sorted(os.sched_getaffinity(0))[-1]}
    before = os.sched_getaffinity(0)
    ctx = multiprocessing.get_context("spawn")
    os.sched_setaffinity(0, core)  # this thread, and the probe thread it starts
    try:
        for _ in range(3):  # another process may still land on that core for a while: again
            quiet = max((cpumodel.pace_reading("compute", 1) for _ in range(2)), key=lambda r: r.rate)
            spinner = ctx.Process(target=_spin, daemon=True)
            spinner.start()
            try:
                os.sched_setaffinity(spinner.pid, core)
                time.sleep(0.1)
                loaded = cpumodel.pace_reading("compute", 1)
                m = timing.measure(lambda: None, 1.0, min_seconds=0.0, min_repeats=3,
                                   pace=functools.partial(cpumodel.pace_reading, "compute", 1))
            finally:
                spinner.kill()
                spinner.join()
            if loaded.rate < 0.75 * quiet.rate and loaded.pace < 0.75 and m.slowed:
                break
    finally:
        os.sched_setaffinity(0, before)
    assert loaded.pace < 0.75 and loaded.rate < 0.75 * quiet.rate, (quiet, loaded)
    assert m.slowed and m.pace_kind == "compute" and "machine slowed (a compute reference run" in m.flag


def test_the_pace_probe_is_the_runs_own_bound(monkeypatch):
    """A grid in a core's own caches takes the compute probe, one in the shared last cache the cache
    probe, decided from the capacities alone (nothing measured); past the last cache the model decides:
    stepwise memory-bound takes the memory probe, DiamondTorre (its tile in cache) the compute probe; a
    Maxwell grid past the caches the memory one."""
    n = _numbers()
    n.compute.update({"2,256,constant": 6e9, "2,256,model": 5e9, "2,512,constant": 6e9})  # nothing measured
    monkeypatch.setattr(cpumodel, "cpu_numbers", lambda: pytest.fail("measured for a grid in cache"))
    sizes = {lv.name: (lv.capacity, lv.private) for lv in n.levels[:-1]}  # the levels less memory
    monkeypatch.setattr(cpumodel, "cache_sizes", lambda: (sizes, "test"))
    assert cpumodel.pace_kind("stepwise", 2, (16, 16, 16)) == "compute"  # 47 KB: in a core's L2
    assert cpumodel.pace_kind("diamondtorre", 2, (64, 64, 64), 2, 8) == "cache"  # 2.3 MB: in the shared L3
    assert cpumodel.pace_kind("stepwise", 2, (64, 64, 64), numbers=n) == "cache"
    assert cpumodel.pace_kind("stepwise", 2, (256, 256, 256), numbers=n) == "memory"
    assert cpumodel.pace_kind("stepwise", 2, (256, 256, 256), variant="layered", numbers=n) == "memory"
    assert cpumodel.pace_kind("diamondtorre", 2, (256, 256, 256), 12, 48, numbers=n) == "compute"
    assert cpumodel.pace_kind("diamondtorre", 2, (256,) * 3, 1, 4, cell_bytes=24.0, numbers=n) == "memory"
    assert cpumodel.pace_kind("diamondtorre", 2, (64,) * 3, 1, 4, cell_bytes=24.0, numbers=n) == "cache"
    # past the caches with no numbers given: the machine's own, once measured
    monkeypatch.setattr(cpumodel, "cpu_numbers", lambda: n)
    assert cpumodel.pace_kind("stepwise", 2, (512, 512, 512)) == "memory"
