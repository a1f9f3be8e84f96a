import numpy as np

from diamondlab.cli import main
from diamondlab.engine.io import load_run


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

    from diamondlab.engine import simulation

    with pytest.raises(SystemExit):
        main(["run", "--shape", "16", "--backend-option", "band", "--no-progress"])
    assert "expected KEY=VALUE (e.g. band=32); got 'band'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["run", "--shape", "16", "--backend-option", "band=wide", "--no-progress"])
    assert "band: expected an integer or true/false; got 'wide'" in capsys.readouterr().err
    argv = ["run", "--shape", "16", "--backend", "cpu", "--steps", "2", "--no-progress"]
    assert main([*argv, "--backend-option", "pipelined=true", "--backend-option", "band=32"]) == 2
    assert "backend_options {'pipelined': True, 'band': 32} do not apply to backend 'cpu'" in (
        capsys.readouterr().err
    )
    seen = {}
    real = simulation.Simulation.__init__

    def spy(self, *args, **kwargs):
        seen.update(kwargs.get("backend_options") or {})
        kwargs["backend_options"] = None  # the CPU engine takes none: check the hand-over only
        real(self, *args, **kwargs)

    monkeypatch.setattr(simulation.Simulation, "__init__", spy)
    assert main([*argv, "--backend-option", "chunk=2"]) == 0
    assert seen == {"chunk": 2}


def test_bench_prints_a_table(capsys):
    argv = ["bench", "--shape", "24x20x8", "--orders", "2", "4", "--backend", "cpu"]
    assert main([*argv, "--repeats", "1", "--nt", "4"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("device ") and "GB/s measured now" in lines[1]
    assert lines[2].split() == [
        "NO", "DTS", "Nt", "DiamondTorre", "stepwise", "ratio", "equal", "model", "of", "model", "ceiling"
    ]  # fmt: skip
    rows = [line.split() for line in lines[3:5]]
    assert [r[0] for r in rows] == ["2", "4"]
    assert all(float(r[3]) > 0 and float(r[4]) > 0 and r[6] == "True" for r in rows)
    assert all(float(r[7]) > 0 and float(r[9]) > 0 for r in rows)  # model and stepwise ceiling


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
    from diamondlab.engine.perfmodel import DeviceNumbers, predict

    row = {"order": 2, "dts": 4, "nt": 32, "diamondtorre": 640.0, "stepwise": 220.0, "ratio": 640 / 220,
           "bit_equal": True, "backend": "cuda", "options": {"pipelined": True, "band": 32, "chunk": 2},
           "launch": (264, 0.973)}
    device = DeviceNumbers("test GPU", 2.8e12, 67e12)
    monkeypatch.setattr(cli, "bench_rows", lambda *a, **k: [row])
    monkeypatch.setattr(cli, "_device_numbers", lambda backend, skip: device)
    assert main(["bench", "--shape", "64", "--orders", "2", "--backend", "cuda", "--no-progress"]) == 0
    out = capsys.readouterr().out
    model = predict("diamondtorre", 2, 4, 32, device).rate / 1e9
    assert "NO=2 DiamondTorre sweep: pipelined=True, band=32, chunk=2; 264 resident blocks, " in out
    share = 640 / model / 0.973
    assert f"launch efficiency 97% (model x launch {model * 0.973:.4g}: measured {share:.0%})" in out
