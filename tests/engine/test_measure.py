"""The one measurement service: repeats, medians, spreads; the tuner, bench and the lab use it."""

import os
import time

import numpy as np
import pytest

from diamondlab.engine.backends.cpu import CPUBackend
from diamondlab.engine.measure import bench as measure
from diamondlab.engine.measure import timing
from diamondlab.engine.measure.bench import compare_algorithms, measure_simulation, tuning_sweep
from diamondlab.engine.measure.perfmodel import device_numbers, predicted_rate
from diamondlab.engine.measure.timing import Measurement, measure_backend, time_repeats
from diamondlab.engine.run.simulation import Simulation
from diamondlab.numerics import WaveParameters


def test_time_repeats_warms_up_and_synchronises_each_repeat():
    calls = []
    seconds = time_repeats(lambda: calls.append("run"), lambda: calls.append("sync"), 3)
    assert len(seconds) == 3 and calls == ["run", "sync"] * 4


def test_measurement_rate_is_the_median_and_spread_the_interquartile_range():
    m = Measurement((1.0, 2.0, 4.0, 2.0, 2.0), 10.0, busy=0.0)
    assert m.rate == 5.0 and m.spread == 0.0 and m.trusted and m.flag == ""  # one slow repeat of five
    w = Measurement((1.0, 1.25, 2.0, 2.5, 5.0), 10.0, busy=0.0)  # rates 10, 8, 5, 4, 2: quartiles 4 and 8
    assert w.rate == 5.0 and w.spread == pytest.approx((8 - 4) / 5) and w.wide and not w.trusted
    assert "spread 80 % (wide)" in w.flag and "not a steady measurement" in w.note
    assert Measurement((3.0,), 6.0).spread == 0.0


def test_a_busy_machine_or_an_unknown_load_is_said():
    busy = Measurement((1.0,) * 5, 1e9, busy=timing.BUSY_SHARE + 0.01)
    assert busy.busy_machine and not busy.trusted and "machine busy (others" in busy.flag
    quiet = Measurement((1.0,) * 5, 1e9, busy=timing.BUSY_SHARE - 0.01)
    assert quiet.trusted and quiet.flag == "" and "not a steady" not in quiet.note
    unknown = Measurement((1.0,) * 5, 1e9, busy=None)
    assert unknown.trusted and unknown.flag == "machine load unknown" and "load unknown" in unknown.note
    assert timing.flagged({"a": quiet, "b": busy}) == [f"b: {busy.note}"]


def test_a_slowed_machine_is_said_from_the_lower_pace_around_the_measurement():
    """The rule asks the pace probe before and after the repeats and keeps the lower: below SLOW_PACE the
    measurement is flagged, though its repeats were tight and no other process ran."""
    paces = iter([0.95, 0.5])
    ms = timing.measure_alternated({"a": lambda: None}, 1.0, min_seconds=0, min_repeats=3,
                                   pace=lambda: next(paces))
    m = ms["a"]
    assert m.pace == 0.5 and m.slowed and not m.trusted
    assert "machine slowed (a reference run at 50 % of its best here)" in m.flag and "not a steady" in m.note
    steady = timing.measure_alternated({"a": lambda: None}, 1.0, min_seconds=0, min_repeats=3,
                                       pace=lambda: 0.9)["a"]
    assert steady.pace == 0.9 and not steady.slowed
    assert timing.measure(lambda: None, 1.0, min_seconds=0).pace is None  # no probe given: not probed


def test_the_pace_probe_says_its_bound_and_the_lower_reading_is_kept():
    readings = iter([timing.PaceReading("compute", 0.6, 1.0, 2.0, 0.6), timing.PaceReading("compute", 0.9)])
    m = timing.measure(lambda: None, 1.0, min_seconds=0, min_repeats=3, pace=lambda: next(readings))
    assert m.pace == 0.6 and m.pace_kind == "compute" and m.slowed
    assert "machine slowed (a compute reference run at 60 % of its best here)" in m.note


def test_time_stolen_by_the_host_is_its_own_reading_and_flags_the_measurement(monkeypatch):
    """The host's steal is counted apart from other processes (not twice), and above STOLEN_SHARE of the
    machine's CPU the measurement is flagged."""
    clock, busy, own = iter([0.0, 1.0]), iter([10.0, 11.5]), iter([2.0, 2.5])
    stolen = iter([4.0, 4.4])  # 0.4 s of the 1.5 busy seconds were the host's
    monkeypatch.setattr(timing.time, "perf_counter", lambda: next(clock))
    monkeypatch.setattr(timing.LoadProbe, "_own", staticmethod(lambda: next(own)))
    probe = timing.LoadProbe(busy=lambda: next(busy), cores=2, stolen=lambda: next(stolen)).start()
    assert probe.stop() == pytest.approx((1.5 - 0.4 - 0.5) / 2) and probe.stolen == pytest.approx(0.4 / 2)
    m = Measurement((1.0,) * 5, 1e9, busy=0.0, stolen=timing.STOLEN_SHARE + 0.01)
    assert m.robbed and not m.trusted and "time stolen by the host (6 % of its CPU)" in m.note
    assert Measurement((1.0,) * 5, 1e9, busy=0.0, stolen=0.0).trusted
    ticks = os.sysconf("SC_CLK_TCK")
    assert timing.stolen_seconds("cpu  10 0 5 100 7 1 1 3 0 0\n") == pytest.approx(3 / ticks)
    assert timing.stolen_seconds("") is None


def test_the_load_probe_counts_other_processes_only_and_is_unknown_without_proc_stat(monkeypatch):
    clock = iter([0.0, 1.0])  # perf_counter: one second of wall time
    busy = iter([10.0, 11.5])  # the machine's busy seconds: 1.5 s on its cores meanwhile
    own = iter([2.0, 2.5])  # this process: 0.5 s of them
    monkeypatch.setattr(timing.time, "perf_counter", lambda: next(clock))
    monkeypatch.setattr(timing.LoadProbe, "_own", staticmethod(lambda: next(own)))
    probe = timing.LoadProbe(busy=lambda: next(busy), cores=2).start()
    assert probe.stop() == pytest.approx((1.5 - 0.5) / (1.0 * 2))
    clock, own = iter([0.0, 1.0]), iter([2.0, 2.5])
    assert timing.LoadProbe(busy=lambda: None, cores=2).start().stop() is None
    assert timing.cpu_seconds("cpu  10 0 5 100 7 1 1 3 0 0\n") == pytest.approx(20 / os.sysconf("SC_CLK_TCK"))
    assert timing.cpu_seconds("") is None


def test_the_rule_repeats_until_the_least_time_and_count_alternately():
    calls = []
    ms = timing.measure_alternated({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}, 1.0,
                                   min_seconds=0.0, min_repeats=3)
    assert calls == ["a", "b"] + ["a", "b"] * 3  # a warm-up each, then in turn
    assert [m.repeats for m in ms.values()] == [3, 3]
    m = timing.measure(lambda: time.sleep(0.002), 1.0, min_seconds=0.03)
    assert m.repeats >= timing.MIN_REPEATS and sum(m.seconds) >= 0.03
    assert timing.measure(lambda: None, 1.0, min_seconds=10.0, min_repeats=2, max_repeats=4).repeats == 4
    with pytest.raises(ValueError, match="min_repeats must be >= 1"):
        timing.measure(lambda: None, 1.0, min_repeats=0)
    with pytest.raises(ValueError, match="min_seconds must be"):
        timing.measure(lambda: None, 1.0, min_seconds=float("nan"))


def test_backends_are_timed_in_whole_sweeps():
    b = CPUBackend(WaveParameters(order=2), (24, 24, 16), 2, 4)
    b.set_fields(np.ones(b.shape, np.float32), np.ones(b.shape, np.float32))
    m = measure_backend(b, "diamondtorre", 10, repeats=2, min_seconds=0.0)
    assert m.cell_updates == 8 * 24 * 24 * 16 and len(m.seconds) == 2  # two sweeps of Nt=4
    assert measure_backend(b, "stepwise", 3, 1).cell_updates == 3 * 24 * 24 * 16
    with pytest.raises(ValueError, match="algorithm must be"):
        measure_backend(b, "diamond", 3)


def test_simulations_are_timed_by_their_runs():
    sim = Simulation((24, 24, 16), 2, backend="cpu", size=2, nt=4)
    m = measure_simulation(sim, 8, repeats=3)
    assert m.repeats >= 3 and sum(m.seconds) >= timing.MIN_SECONDS  # the rule
    assert sim.time_step == 4 + m.repeats * 8 and m.rate > 0


def test_compare_algorithms_checks_equality_and_reports_the_spread():
    rows = compare_algorithms((24, 24, 16), (2, 4), backend="cpu", nt=4, repeats=2)
    assert [r["order"] for r in rows] == [2, 4]
    assert all(r["bit_equal"] and r["ratio"] > 0 and r["spread"] >= 0 and r["launch"] is None for r in rows)
    assert all(len(r["seconds"]["stepwise"]) >= 2 and isinstance(r["flag"], str) for r in rows)
    assert all(0.0 < r["pace"] <= 1.0 for r in rows)  # the CPU's pace probe ran around the measurement
    assert all(r["pace_kind"] == "compute" for r in rows)  # a grid in cache: the probe of the cores
    # runs of whole sweeps, at least 2, as many as last MIN_RUN_SECONDS (a tiny grid: the most there are)
    assert all(r["steps"] % 4 == 0 and 8 <= r["steps"] <= 4 * measure.MAX_RUN_SWEEPS for r in rows)
    assert rows[0]["steps"] > 8
    (given,) = compare_algorithms((24, 24, 16), (2,), backend="cpu", nt=4, steps=12, repeats=1)
    assert given["steps"] == 12


def test_each_run_is_paced_by_the_probe_of_its_own_bound(monkeypatch):
    """The CPU model's bound of each run decides its pace probe once: runs of two bounds measured together
    take both probes (the lower kept); a measured simulation its own; a given kind is taken as given."""
    from diamondlab.engine.measure import cpumodel

    decided, probed = [], []

    def kind(algorithm, *args, **kwargs):
        decided.append(algorithm)
        return "memory" if algorithm == "stepwise" else "compute"

    def reading(kind, threads=None):
        probed.append(kind)
        return timing.PaceReading(kind, 0.5 if kind == "memory" else 0.95)

    monkeypatch.setattr(cpumodel, "pace_kind", kind)
    monkeypatch.setattr(cpumodel, "pace_reading", reading)
    (row,) = compare_algorithms((24, 24, 16), (2,), backend="cpu", nt=4, steps=8, repeats=1)
    assert sorted(decided) == ["diamondtorre", "stepwise"]  # once each
    assert sorted(probed) == ["compute", "compute", "memory", "memory"]  # before and after
    assert row["pace"] == 0.5 and row["pace_kind"] == "memory" and "a memory reference run" in row["flag"]
    decided.clear(), probed.clear()
    sim = Simulation((24, 24, 16), 2, backend="cpu", size=2, nt=4, algorithm="diamondtorre")
    m = measure_simulation(sim, 4, repeats=1, min_seconds=0.0)
    assert decided == ["diamondtorre"] and probed == ["compute"] * 2 and m.pace == 0.95 and not m.slowed
    probed.clear()
    m = measure_simulation(sim, 4, repeats=1, min_seconds=0.0, pace_kind="memory")
    assert probed == ["memory"] * 2 and m.pace_kind == "memory"
    assert measure.pace_kinds(sim, Simulation((24, 24, 16), 2, backend="cpu", algorithm="stepwise")) == (
        "compute", "memory")


def test_tuning_sweep_skips_what_the_backend_refuses():
    notes = []
    rows = tuning_sweep((24, 24, 16), orders=(2,), sizes=(1, 20), nts=(2, 4), repeats=2,
                        progress=notes.append, model=predicted_rate)
    assert [r.algorithm for r in rows].count("stepwise") == 1
    dt = [r for r in rows if r.algorithm == "diamondtorre"]
    assert {(r.size, r.nt) for r in dt} == {(1, 2), (1, 4)}
    assert all(r.measured > 0 and r.model > 0 and r.spread >= 0 for r in rows)
    assert any("skipped" in n and "DTS=20" in n for n in notes)  # a tile larger than the grid
    assert measure.best(rows) in dt
    assert tuning_sweep((24, 24, 16), stop=lambda: True) == []


def test_device_numbers_are_measured():
    d = device_numbers("cpu", 2)
    assert d.bandwidth > 1e8 and d.fp32_rate > 1e6


def test_block_sweep_runs_the_papers_scheme_per_blocks_and_threads_under_the_cuda_simulator():
    """Fig. 10 on the GPU: each grid's stages hold the asked torres (blocks in flight, one launch per
    stage), its column the asked threads; both algorithms measured (CUDA simulator, in a subprocess)."""
    import os
    import subprocess
    import sys

    code = ("from diamondlab.engine.measure.bench import block_sweep\n"
            "rows = block_sweep(2, 1, 2, torres=[1, 3], depths=[4], nx=8, repeats=1)\n"
            "rows += block_sweep(4, 1, 2, torres=[2], depths=[3], nx=8, repeats=1)\n"
            "print([(r.shape, r.torres, r.threads, r.diamondtorre > 0, r.stepwise > 0) for r in rows])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=dict(os.environ, NUMBA_ENABLE_CUDASIM="1"))
    assert out.stdout.strip() == ("[((8, 2, 4), 1, 4, True, True), ((8, 6, 4), 3, 4, True, True), "
                                  "((8, 8, 3), 2, 3, True, True)]")  # NO=4: 2R = 4 rows a torre


def test_yee_bytes_per_update_come_from_the_tile_geometry():
    """predict_yee's bytes are the staggered tile's locality plus the material (and a Drude current),
    read every half step by the one-tier shapes, once a sweep by the torres."""
    import pytest

    from diamondlab.engine.measure.perfmodel import predict_yee, yee_bytes_per_update
    from diamondlab.geometry import locality

    assert yee_bytes_per_update("stepwise_layer", 4) == predict_yee("stepwise", 4).bytes_per_update == 78
    assert yee_bytes_per_update("stepwise_layer", 2, drude=True) == 102
    for order, size, nt in ((2, 1, 4), (4, 4, 16)):
        fields = 4 / locality("torre_row", order, size, nt, equation="maxwell")
        drude = yee_bytes_per_update("torre_row", order, size, nt, drude=True)
        assert drude == pytest.approx(fields + 27 / nt)
        assert predict_yee("diamondtorre", order, size, nt).bytes_per_update == pytest.approx(fields + 3 / nt)
    # a DTS of 1 moves about as much as stepwise, larger tiles less (paper 002 chose DTS = 1)
    b = [yee_bytes_per_update("torre_row", 4, s, 16) for s in (1, 2, 4)]
    assert b[0] > b[1] > b[2] and b[0] > 0.9 * 78


@pytest.mark.slow  # the Yee CPU kernels' compile (orders 2 and 4) where it comes first
def test_compare_algorithms_times_maxwell_and_one_algorithm_alone():
    """``equation="maxwell"``: the Yee scheme's rows (bit for bit, the slowest and fastest repeat's rates);
    ``algorithms`` one of them alone (no ratio, no check); ``configure`` sees each simulation first."""
    seen = []
    (row,) = compare_algorithms((12, 12, 12), [2], "cpu", nt=4, steps=4, repeats=2, equation="maxwell",
                                configure=lambda sim: seen.append((sim.algorithm, sim.time_step)))
    assert seen == [("diamondtorre", 0), ("stepwise", 0)]
    assert row["equation"] == "maxwell" and row["bit_equal"] is True and row["variant"] == "plain"
    for alg in ("diamondtorre", "stepwise"):
        lo, hi = row["rate_range"][alg]
        assert 0 < lo <= row[alg] <= hi and len(row["seconds"][alg]) >= 2
    start = measure.random_start((12, 12, 12), "maxwell")
    kept = [a.copy() for a in start]
    (alone,) = compare_algorithms((12, 12, 12), [4], "cpu", nt=4, steps=4, repeats=1, equation="maxwell",
                                  algorithms=("diamondtorre",), initial=start)
    assert all(np.array_equal(a, b) for a, b in zip(start, kept, strict=True))  # serves the next call too
    assert alone["diamondtorre"] > 0 and "stepwise" not in alone
    assert alone["ratio"] is None and alone["bit_equal"] is None and alone["order"] == 4


@pytest.mark.parametrize(("kwargs", "text"), [
    (dict(equation="maxwell", orders=[6]), "orders must be some of (2, 4) for equation='maxwell'; got [6]"),
    (dict(equation="yee"), "equation must be one of ('acoustic', 'maxwell'); got 'yee'"),
    (dict(algorithms=("stepwise", "stepwise")), "algorithms must be one or both of ('diamondtorre', "),
    (dict(algorithms=()), "algorithms must be one or both of"),
])  # fmt: skip
def test_compare_algorithms_refuses_before_any_simulation(kwargs, text, monkeypatch):
    import re

    from diamondlab.engine.measure import bench

    monkeypatch.setattr(bench, "Simulation", None)  # any simulation made would fail otherwise
    kwargs = {"orders": [2], **kwargs}
    with pytest.raises(ValueError, match=re.escape(text)):
        compare_algorithms((12, 12, 12), backend="cpu", repeats=1, **kwargs)


def test_bench_models_of_a_maxwell_row_are_predict_yees():
    """On a GPU predict_yee's rate and bytes (a Drude medium's current included); on the CPU no model."""
    from diamondlab.engine.measure.bench import bench_models
    from diamondlab.engine.measure.perfmodel import DeviceNumbers, predict_yee

    device = DeviceNumbers("test GPU", 2.5e12, 60e12)
    row = {"equation": "maxwell", "order": 4, "dts": 2, "nt": 8, "backend": "cuda", "variant": "drude"}
    models = bench_models(row, (64, 64, 64), device)
    for alg in ("diamondtorre", "stepwise"):
        p = predict_yee(alg, 4, 2, 8, device, drude=True)
        assert models[alg].rate == p.rate and models[alg].bytes_per_update == p.bytes_per_update
    assert models["stepwise"].bytes_per_update == 78.0 + 24.0
    cpu = bench_models({**row, "backend": "cpu", "variant": "plain"}, (64, 64, 64))
    assert all(np.isnan(m.rate) and m.bound.startswith("no model") for m in cpu.values())
    assert cpu["diamondtorre"].bytes_per_update == predict_yee("diamondtorre", 4, 2, 8).bytes_per_update
