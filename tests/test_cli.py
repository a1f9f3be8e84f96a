import json
import signal

import numpy as np
import pytest

from diamondlab.cli import main
from diamondlab.engine.outputs.io import load_run


def test_run_saves_and_continues(tmp_path, capsys):
    out = tmp_path / "run.npz"
    argv = ["run", "--shape", "20x18x8", "--order", "4", "--steps", "7", "--backend", "cpu"]
    assert main([*argv, "--dts", "2", "--nt", "3", "--save", str(out), "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "7 steps of 20x18x8" in text and "G cell updates/s" in text
    rec = load_run(out)
    assert rec["steps"] == 7 and rec["final_curr"].shape == (20, 18, 8)
    again = tmp_path / "again.npz"
    assert main([*argv, "--initial", str(out), "--save", str(again), "--no-progress"]) == 0
    rec2 = load_run(again)
    assert np.array_equal(rec2["initial_curr"], rec["final_curr"])


def test_bad_input_is_a_clear_error(capsys):
    assert main(["run", "--order", "3", "--shape", "16", "--no-progress"]) == 2
    assert "order (NO) must be one of (2, 4, 6, 8)" in capsys.readouterr().err
    assert main(["run", "--courant", "0.9", "--shape", "16", "--no-progress"]) == 2
    assert "stability limit" in capsys.readouterr().err


def test_backend_options_reach_the_simulation_or_are_named(capsys, monkeypatch):
    import pytest


    with pytest.raises(SystemExit):
        main(["run", "--shape", "16", "--backend-option", "band", "--no-progress"])
    assert "expected KEY=VALUE (e.g. band=32); got 'band'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["run", "--shape", "16", "--backend-option", "band=", "--no-progress"])
    assert "band: expected a value; got none" in capsys.readouterr().err
    from diamondlab.cli import _backend_option
    from diamondlab.engine.backends.cuda import CUDABackend
    from diamondlab.numerics import WaveParameters

    assert _backend_option("launch=per-stage") == ("launch", "per-stage")  # a word: the backend checks it
    with pytest.raises(ValueError, match=r"band must be an int >= 0 \(0: stage by stage\); got 'wide'"):
        CUDABackend.check(WaveParameters(order=2), (16, 16, 16), 1, 4, {"pipelined": True, "band": "wide"})
    argv = ["run", "--shape", "16", "--backend", "cpu", "--steps", "2", "--no-progress"]
    assert main([*argv, "--backend-option", "pipelined=true", "--backend-option", "band=32"]) == 2
    assert "backend_options ['band', 'pipelined'] do not apply to backend 'cpu' (it takes: none)" in (
        capsys.readouterr().err
    )
    from diamondlab.engine.run.plan import RunPlan

    seen = {}
    real = RunPlan.build.__func__

    def spy(cls, *args, **kwargs):  # the run's plan, built before the simulation (and its summary)
        seen.update(kwargs.get("backend_options") or {})
        kwargs["backend_options"] = None  # the CPU engine takes none: check the hand-over only
        return real(cls, *args, **kwargs)

    monkeypatch.setattr(RunPlan, "build", classmethod(spy))
    assert main([*argv, "--backend-option", "chunk=2"]) == 0
    assert seen == {"chunk": 2}


def test_bench_prints_medians_spreads_the_flag_and_the_cpu_model_with_its_bound(capsys, monkeypatch):
    from diamondlab.engine.measure import cpumodel

    numbers = cpumodel.CPUNumbers("test CPU", 2, (
        cpumodel.Level("L1", 32 * 2**10, 400e9), cpumodel.Level("L2", 2**20, 200e9),
        cpumodel.Level("L3", 32 * 2**20, 100e9, private=False),
        cpumodel.Level("memory", float("inf"), 30e9, private=False)), 0.0,
        compute={"2,8,constant": 5e9, "4,8,constant": 3e9})  # injected: nothing measured for the model
    monkeypatch.setattr(cpumodel, "_numbers", {2: numbers, 1: numbers})
    argv = ["bench", "--shape", "24x20x8", "--orders", "2", "4", "--backend", "cpu", "--no-progress"]
    assert main([*argv, "--repeats", "2", "--nt", "4", "--steps", "8"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "medians of at least 2 runs lasting 0.2 s together, spread = interquartile range" in lines[0]
    assert lines[1].startswith("CPU model (test CPU): L1 400 GB/s, L2 200 GB/s, L3 100 GB/s, memory 30 GB/s")
    head = ["NO", "DTS", "Nt", "DiamondTorre", "spread", "stepwise", "spread", "ratio", "equal"]
    assert lines[2].split()[:9] == head
    rows = [line.split() for line in lines[3:5]]
    assert [r[0] for r in rows] == ["2", "4"] and all(r[8] == "True" for r in rows)
    assert all(r[4].endswith("%") and r[6].endswith("%") for r in rows)  # the spreads
    for r, order in zip(rows, (2, 4), strict=True):  # the model's columns are the model's
        dt = model_rate("diamondtorre", order, (24, 20, 8), int(r[1]), int(r[2]), numbers)
        assert float(r[9]) == pytest.approx(dt, rel=1e-3) and r[-1].endswith("-bound")
    flagged = [line for line in lines if "not a steady measurement" in line]
    text = "\n".join(lines)
    # each flagged line names one of the rule's reasons (a slowed machine: the pace probe, which a VM's host
    # can trip in any run, BENCHMARKS.md "Five runs beside a browser on a fast day"; the host's steal)
    assert all(("spread" in line and "(wide)" in line) or "busy" in line or "machine slowed" in line
               or "time stolen by the host" in line for line in flagged)
    assert "model: the CPU model" in text


def model_rate(algorithm, order, shape, size, nt, numbers):
    from diamondlab.engine.measure.cpumodel import predict_cpu

    return predict_cpu(algorithm, order, shape, size, nt, numbers).rate / 1e9


def test_a_source_the_run_never_shows_is_refused_before_the_summary(capsys):
    argv = ["run", "--shape", "24", "--source", "12,12,12", "--steps", "5", "--backend", "cpu"]
    assert main([*argv, "--no-progress"]) == 2
    out, err = capsys.readouterr()
    assert "source 0: its ricker wavelet of frequency 0.05 peaks at t = 30" in err
    assert out == ""  # no "Simulation(...)" summary before the refusal


def test_the_record_stores_the_default_delay_it_used(tmp_path, capsys):
    argv = ["run", "--shape", "24", "--source", "12,12,12", "--frequency", "0.05", "--steps", "5",
            "--backend", "cpu", "--no-progress", "--dts", "2", "--nt", "4", "--save", str(tmp_path / "a.npz")]
    assert main(argv) == 0
    rec = load_run(tmp_path / "a.npz")
    assert rec["source_delay"].tolist() == [1.5 / 0.05]  # not NaN: the delay the wavelet peaked at


def test_run_with_sources_receivers_velocity_and_snapshots(tmp_path, capsys):
    model = tmp_path / "v.npy"
    np.save(model, np.full((24, 22, 16), 2.0))
    out = tmp_path / "out"
    argv = ["run", "--shape", "24x22x16", "--steps", "110", "--backend", "cpu", "--no-progress"]
    argv += ["--velocity", str(model), "--source", "12,11,8", "--frequency", "0.1", "--sponge", "4"]
    argv += ["--receiver", "15.5,11,8", "--receiver", "3,3,3", "--snapshot-every", "50", "--out", str(out)]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "traces of 2 receivers (110 steps)" in text
    assert sorted(p.name for p in out.iterdir()) == [
        "manifest.json", "snapshot_0000000.npz", "snapshot_0000050.npz", "snapshot_0000100.npz", "traces.npz"
    ]  # fmt: skip
    with np.load(out / "traces.npz") as data:
        assert data["traces"].shape == (110, 2) and np.abs(data["traces"][:, 0]).max() > 0
    assert main(["run", "--shape", "16", "--source", "40,1,1", "--no-progress"]) == 2
    assert "source 0 at (40.0, 1.0, 1.0) lies outside the grid" in capsys.readouterr().err


def test_initial_record_continues_the_saved_run(tmp_path, capsys):
    first = tmp_path / "a.npz"
    argv = ["run", "--shape", "20x18x8", "--backend", "cpu", "--no-progress", "--dts", "1", "--nt", "3"]
    assert main([*argv, "--order", "8", "--courant", "0.3", "--steps", "5", "--save", str(first)]) == 0
    capsys.readouterr()
    second = tmp_path / "b.npz"
    assert main([*argv, "--initial", str(first), "--steps", "4", "--save", str(second)]) == 0
    assert "order=8" in capsys.readouterr().out
    rec = load_run(second)
    assert rec["order"] == 8 and rec["courant"] == 0.3 and rec["first_step"] == 5 and rec["steps"] == 4


def test_unreadable_inputs_are_named(tmp_path, capsys):
    assert main(["run", "--shape", "16", "--velocity", str(tmp_path / "none.npy"), "--no-progress"]) == 2
    assert "--velocity must be a number, FILE.npy" in capsys.readouterr().err
    assert main(["run", "--shape", "16", "--initial", "gausian", "--no-progress"]) == 2
    assert "--initial gausian: no such file (--initial takes 'gaussian', 'zero' or a FILE" in (
        capsys.readouterr().err
    )


def test_bench_reports_sweep_options_and_launch_efficiency(capsys, monkeypatch):
    """On the GPU the table is followed by the sweep options, resident blocks and roofline x launch."""
    from diamondlab import cli
    from diamondlab.engine.measure.perfmodel import DeviceNumbers, predict

    row = {"order": 2, "dts": 4, "nt": 32, "diamondtorre": 640.0, "stepwise": 220.0, "ratio": 640 / 220,
           "bit_equal": True, "backend": "cuda", "options": {"pipelined": True, "band": 32, "chunk": 2},
           "launch": (264, 0.973)}
    device = DeviceNumbers("test GPU", 2.8e12, 67e12)
    monkeypatch.setattr("diamondlab.engine.measure.bench.compare_algorithms", lambda *a, **k: [row])
    monkeypatch.setattr(cli, "_device_numbers", lambda backend, skip: device)
    assert main(["bench", "--shape", "64", "--orders", "2", "--backend", "cuda", "--no-progress"]) == 0
    out = capsys.readouterr().out
    model = predict("diamondtorre", 2, 4, 32, device).rate / 1e9
    assert "NO=2 DiamondTorre sweep: pipelined=True, band=32, chunk=2; 264 resident blocks, " in out
    share = 640 / model / 0.973
    assert f"launch efficiency 97% (model x launch {model * 0.973:.4g}: measured {share:.0%})" in out


def _physics_argv(tmp_path):
    model = np.full((24, 22, 16), 2.0)
    model[:, :, 9:] = 2.6
    np.save(tmp_path / "v.npy", model)
    argv = ["run", "--shape", "24x22x16", "--order", "4", "--backend", "cpu", "--no-progress"]
    argv += ["--courant", "0.45"]
    argv += ["--velocity", str(tmp_path / "v.npy"), "--source", "10,11,8", "--frequency", "0.12"]
    return argv + ["--receiver", "15.5,11,8", "--receiver", "3,4,5", "--sponge", "4"]


def test_a_run_continued_from_its_record_equals_the_straight_run(tmp_path, capsys):
    argv = _physics_argv(tmp_path)
    straight = [*argv, "--steps", "80", "--save", str(tmp_path / "full.npz"), "--out", str(tmp_path / "o1")]
    assert main([*straight, "--dts", "1", "--nt", "5"]) == 0
    half = [*argv, "--steps", "30", "--save", str(tmp_path / "a.npz"), "--out", str(tmp_path / "o2")]
    assert main([*half, "--dts", "2", "--nt", "7"]) == 0
    assert "diamondlab: warning: source 0: its ricker wavelet" in capsys.readouterr().err  # continued below
    rest = ["run", "--initial", str(tmp_path / "a.npz"), "--steps", "50", "--backend", "cpu", "--no-progress"]
    assert main([*rest, "--save", str(tmp_path / "b.npz"), "--out", str(tmp_path / "o3")]) == 0
    full, second = load_run(tmp_path / "full.npz"), load_run(tmp_path / "b.npz")
    assert second["first_step"] == 30 and second["steps"] == 50 and second["sponge"] == 4
    assert np.array_equal(second["final_curr"], full["final_curr"])
    assert np.array_equal(second["final_prev"], full["final_prev"])
    assert np.array_equal(second["traces"], full["traces"][30:]) and np.abs(full["traces"]).max() > 0
    with np.load(tmp_path / "o1" / "traces.npz") as a, np.load(tmp_path / "o3" / "traces.npz") as b:
        assert np.array_equal(b["traces"], a["traces"][30:]) and np.array_equal(b["times"], a["times"][30:])
    capsys.readouterr()
    assert main([*rest, "--source", "5,5,5"]) == 2
    assert "--source cannot be given with --initial" in capsys.readouterr().err


def test_a_blow_up_stops_the_run_and_names_the_step(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("diamondlab.engine.run.simulation.FINITE_CHECK_BUDGET", float("inf"))  # every sweep
    argv = ["run", "--shape", "24", "--backend", "cpu", "--no-progress", "--nt", "4"]
    assert main([*argv, "--steps", "2", "--save", str(tmp_path / "a.npz")]) == 0
    with np.load(tmp_path / "a.npz") as data:
        record = dict(data)
    record["final_curr"][2, 2, 2] = 3e38  # finite, but 2 u overflows float32 at the next step
    np.savez(tmp_path / "bad.npz", **record)
    capsys.readouterr()
    code = main(["run", "--initial", str(tmp_path / "bad.npz"), "--steps", "40", "--no-progress", "--nt", "4",
                 "--save", str(tmp_path / "b.npz")])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 1 and "the field is not finite at step" in err and "cell (" in err
    step = int(err.split("not finite at step ")[1].split()[0])
    assert 2 < step <= 2 + 12  # found within three sweeps of Nt=4
    assert not (tmp_path / "b.npz").exists()  # no record of a blown-up field


def _cli_process(tmp_path, *argv):
    import os
    import subprocess
    import sys

    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return subprocess.Popen(
        [sys.executable, "-m", "diamondlab", *argv], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip


def _wait_for(proc, text: str) -> str:
    seen = []
    for line in proc.stdout:
        seen.append(line)
        if text in line:
            return "".join(seen)
    raise AssertionError(f"{text!r} never printed:\n{''.join(seen)}")


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize("phase", ["set-up", "run", "save"])
def test_a_stop_signal_leaves_complete_outputs_and_no_temp_file(tmp_path, phase, signum):
    import time

    argv = ["run", "--shape", "160", "--backend", "cpu", "--receiver", "80,80,80", "--nt", "8", "--dts", "2"]
    argv += ["--steps", "4000", "--snapshot-every", "8", "--save", "run.npz", "--out", "out", "--no-progress"]
    if phase == "save":
        argv[argv.index("4000")] = "16"
    proc = _cli_process(tmp_path, *argv)
    if phase == "set-up":
        _wait_for(proc, "Simulation(")  # the kernels compile next
    elif phase == "run":
        while not (tmp_path / "out" / "snapshot_0000016.npz").exists():
            time.sleep(0.05)
            assert proc.poll() is None, proc.stdout.read()
    else:
        _wait_for(proc, "G cell updates/s")  # the outputs are written next
    proc.send_signal(signum)
    out = proc.stdout.read()
    code = proc.wait(timeout=120)
    leftovers = [p.name for p in tmp_path.rglob(".*")]
    assert leftovers == [], leftovers
    if phase == "save" and code == 0:
        return  # the signal came after the outputs were complete: nothing to stop
    assert code == 128 + signum, out
    if not (tmp_path / "run.npz").exists():  # stopped before the run: nothing written, and it says so
        assert phase == "set-up" and "nothing was written" in out and "Traceback" not in out
        assert not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == []  # made or not yet
        return
    record = load_run(tmp_path / "run.npz")  # complete and loadable
    assert record["first_step"] + record["steps"] == (16 if phase == "save" else record["steps"])
    snapshots = sorted((tmp_path / "out").glob("snapshot_*.npz"))
    assert len(snapshots) == record["steps"] // 8 + 1
    for path in snapshots:
        with np.load(path) as data:
            assert data["field"].shape == (160, 160, 160)
    with np.load(tmp_path / "out" / "traces.npz") as data:
        assert data["traces"].shape == (record["steps"], 1)
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["last_step"] == record["steps"] and manifest["interrupted"] == (phase != "save")


def test_bench_matrix_is_the_gpu_kernel_benchmark(capsys, monkeypatch):
    argv = ["bench", "--shape", "16", "--backend", "cpu", "--no-progress"]
    assert main([*argv, "--matrix"]) == 2
    assert "--matrix times the CUDA kernels: use --backend cuda" in capsys.readouterr().err
    assert main([*argv, "--dts", "1", "2"]) == 2
    assert "--dts takes one value without --matrix; got [1, 2]" in capsys.readouterr().err
    calls = []
    monkeypatch.setattr("diamondlab.engine.measure.perfmodel.benchmark",
                        lambda *a, **k: calls.append((a, k)) or [])
    assert main(["bench", "--shape", "32x24x16", "--backend", "cuda", "--matrix", "--orders", "2", "--dts",
                 "3", "4", "--nt", "16", "32", "--pipelined", "0", "-1", "--bands", "-1", "16"]) == 0
    (args, kwargs), = calls
    assert args[:3] == ((32, 24, 16), (2,), (16, 32)) and kwargs["sizes"][2] == (3, 4)
    assert kwargs["pipelined"] == [False, None] and kwargs["bands"] == [None, 16]


def test_cache_info_and_clear(tmp_path, monkeypatch, capsys):
    import re

    from diamondlab.kernels.generated import load_generated

    monkeypatch.setenv("DIAMONDLAB_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    load_generated("X = 1\n", "diamondlab_test")
    run = ["run", "--shape", "26x24x16", "--backend", "cpu", "--dts", "auto", "--nt", "auto", "--steps", "1"]
    assert main([*run, "--no-progress"]) == 0
    capsys.readouterr()

    def info() -> tuple[int, int]:
        assert main(["cache", "info"]) == 0
        out = capsys.readouterr().out
        assert f"folder:  {tmp_path / 'cache'} ($DIAMONDLAB_CACHE)" in out
        found = re.search(r"entries: (\d+) kernel modules, \d+ compiled-code files, (\d+) tunings", out)
        return int(found.group(1)), int(found.group(2))

    modules, tunings = info()
    assert modules >= 1 and tunings == 1
    assert main(["cache", "clear"]) == 0
    assert f"removed {modules} kernel modules" in capsys.readouterr().out
    assert info() == (0, 0)


def test_initial_reads_only_the_layers_it_continues_from(tmp_path, monkeypatch, capsys):
    import zipfile

    from diamondlab.engine.outputs import io

    monkeypatch.setattr(io, "LAZY_BYTES", 1000)
    first, second = tmp_path / "a.npz", tmp_path / "b.npz"
    argv = ["run", "--shape", "20x18x8", "--steps", "3", "--backend", "cpu", "--dts", "2", "--nt", "3"]
    assert main([*argv, "--save", str(first), "--no-progress"]) == 0
    with zipfile.ZipFile(first) as archive:  # spoil the starting layers: --initial must not read them
        info = archive.getinfo("initial_prev.npy")
    data = bytearray(first.read_bytes())
    data[info.header_offset + 30 + len(info.filename) + len(info.extra) + info.compress_size // 2] ^= 0xFF
    first.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="cannot read 'initial_prev'"):
        load_run(first)["initial_prev"]
    assert main(["run", "--initial", str(first), "--steps", "3", "--save", str(second), "--no-progress"]) == 0
    assert load_run(second)["first_step"] == 3


def test_bench_sweeps_sizes_and_media_into_one_json(tmp_path, capsys):
    argv = ["bench", "--shapes", "24x20x16", "32", "--orders", "2", "--backend", "cpu", "--repeats", "1",
            "--nt", "4", "--no-progress", "--no-model", "--json", str(tmp_path / "sweep.json")]
    media = {"constant": "constant velocity", "sources": "a source, a receiver", "model": "layered model"}
    for medium, described in media.items():
        assert main([*argv, "--medium", medium]) == 0
        assert capsys.readouterr().out.count(f"backend cpu, {described}") == 2  # one table per grid
        rows = json.loads((tmp_path / "sweep.json").read_text())["rows"]
        assert [r["shape"] for r in rows] == [[24, 20, 16], [32, 32, 32]]
        assert all(r["bit_equal"] and r["ratio"] > 0 and r["medium"].startswith(described) for r in rows)
