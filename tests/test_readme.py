"""Every example of the README runs and does what the README says it does."""

import json
import re
import shlex
from pathlib import Path

import numpy as np
import pytest

from diamondlab.cli import main
from diamondlab.engine.outputs.io import load_run

README = (Path(__file__).parents[1] / "README.md").read_text()


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, flags=re.S)


def _commands() -> list[list[str]]:
    """The ``diamondlab ...`` command lines of the bash blocks (continuations joined, comments cut)."""
    out = []
    for block in _blocks("bash"):
        for line in block.replace("\\\n", " ").splitlines():
            for part in line.split("&&"):
                words = shlex.split(part, comments=True)
                if words[:1] == ["diamondlab"]:
                    out.append(words[1:])
    return out


COMMANDS = {" ".join(argv): argv for argv in _commands()}


def test_the_readme_has_the_examples_these_tests_check():
    assert len(_blocks("python")) >= 3
    assert {argv[0] for argv in COMMANDS.values()} >= {"run", "bench", "--version"}
    assert any("--source" in argv for argv in COMMANDS.values())


def _source_dominated(traces, times, distances, delay, vmin, vmax):
    """Each trace is silent before the first arrival and peaks when and as strongly as a source would."""
    for trace, r in zip(traces.T, distances, strict=True):
        peak = np.abs(trace).max()
        first = r / vmax + delay / 3  # the Ricker main lobe starts 1 / f = delay / 1.5 before its peak
        assert peak > 0 and np.abs(trace[times < first]).max() < 1e-2 * peak, r
        arrival = times[np.argmax(np.abs(trace))]
        assert r / vmax + 0.5 * delay < arrival < r / vmin + 2.0 * delay, (r, arrival)
        green = 1.0 / (4 * np.pi * r)  # s / (4 pi c^2 r) for a unit wavelet, between vmax and vmin
        assert 0.2 * green / vmax**2 < peak < 5.0 * green / vmin**2, (r, peak)


def test_python_run_example(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    scope = {}
    exec(_blocks("python")[0], scope)  # noqa: S102 - the README's own example
    assert scope["stats"].steps == 100 and scope["stats"].gcells_per_second > 0
    assert scope["u"].shape == (128, 128, 128) and np.isfinite(scope["u"]).all()
    assert np.asarray(scope["levels"]).size > 0


def test_python_seismogram_example(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    scope = {}
    exec(_blocks("python")[1], scope)  # noqa: S102 - the README's own example
    sim, seismogram = scope["sim"], scope["seismogram"]
    assert seismogram.shape == (800, 12) and seismogram.dtype == np.float32
    source = np.array([800.0, 800.0, 300.0])
    distances = [np.linalg.norm(np.array([x, 800.0, 200.0]) - source) for x in range(200, 1400, 100)]
    _source_dominated(seismogram, sim.trace_times, distances, 0.15, 1500.0, 2800.0)
    assert len(list(Path("out").glob("snapshot_*.vti"))) == 9


def test_run_plan_example_checks_without_allocating(monkeypatch):
    from diamondlab.engine.backends.cpu import CPUBackend

    built = []
    monkeypatch.setattr(CPUBackend, "_build", lambda *a: built.append(a))
    (block,) = [b for b in _blocks("python") if "RunPlan.build" in b]
    scope = {}
    exec(block, scope)  # noqa: S102 - the README's own example
    plan = scope["plan"]
    assert (plan.backend, plan.size, plan.nt, dict(plan.options)) == ("cpu", 3, 48, {})
    assert plan.physics.sponge == 16 and not built


def test_cli_source_example_records_the_seismogram_it_describes(monkeypatch, tmp_path, capsys):
    monkeypatch.chdir(tmp_path)
    (argv,) = [a for a in COMMANDS.values() if "--source" in a and "--window" not in a]
    assert main(argv) == 0
    with np.load("out/traces.npz") as data:
        traces, times = data["traces"], data["times"]
    assert traces.shape == (600, 2)
    source = np.array([640.0, 640.0, 200.0])
    distances = [np.linalg.norm(np.array(p) - source) for p in ((300, 640, 100), (900, 640, 100))]
    _source_dominated(traces, times, distances, 0.15, 1500.0, 2500.0)
    assert len(list(Path("out").glob("snapshot_*.npz"))) == 7 and Path("out/manifest.json").exists()


def test_cli_run_save_continue_and_bench_examples(monkeypatch, tmp_path, capsys):
    monkeypatch.chdir(tmp_path)
    runs = [a for a in COMMANDS.values() if a[0] == "run" and "--source" not in a and "--equation" not in a]
    for argv in runs:
        assert main([*argv, "--no-progress"]) == 0, argv
    first, second = load_run("run.npz"), load_run("run2.npz")
    assert first["shape"] == (128, 128, 96) and first["order"] == 8 and first["steps"] == 100
    assert second["first_step"] == 100 and np.array_equal(second["initial_curr"], first["final_curr"])
    assert np.isfinite(second["final_curr"]).all() and np.abs(second["final_curr"]).max() > 0
    capsys.readouterr()
    (bench,) = [a for a in COMMANDS.values() if a[0] == "bench" and "--equation" not in a]
    assert main([*bench, "--no-progress"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = [line.split() for line in lines if line.split()[:1] in (["2"], ["8"])]
    # NO, DTS, Nt, DiamondTorre, its spread, stepwise, its spread, ratio, equal, then the model's columns
    assert len(rows) == 2 and all(r[8] == "True" and float(r[3]) > 0 and r[4].endswith("%") for r in rows)


def test_cli_maxwell_bench_example_writes_its_rows(monkeypatch, tmp_path, capsys):
    """The Maxwell bench line, on a small grid (its own flags kept): rows of both orders in its JSON file."""
    monkeypatch.chdir(tmp_path)
    (bench,) = [a for a in COMMANDS.values() if a[0] == "bench" and "--equation" in a]
    assert main([*bench, "--backend", "cpu", "--shape", "12", "--steps", "4", "--repeats", "1",
                 "--no-progress"]) == 0
    assert "(G Yee cell updates per second)" in capsys.readouterr().out
    rows = json.loads(Path(bench[bench.index("--json") + 1]).read_text())["rows"]
    assert [(r["equation"], r["order"], r["bit_equal"]) for r in rows] == [("maxwell", 2, True),
                                                                           ("maxwell", 4, True)]


def test_cli_maxwell_scene_example_writes_what_it_says(monkeypatch, tmp_path, capsys):
    """The README's ``run --equation maxwell --scene examples/...`` line, with the example scene it names."""
    import json
    import shutil

    (argv,) = [a for a in COMMANDS.values() if a[0] == "run" and "--equation" in a]
    scene = argv[argv.index("--scene") + 1]
    (tmp_path / scene).parent.mkdir(parents=True)
    shutil.copy(Path(__file__).parents[1] / scene, tmp_path / scene)
    monkeypatch.chdir(tmp_path)
    assert main([*argv, "--no-progress"]) == 0
    assert "G Yee cell updates/s" in capsys.readouterr().out
    with np.load("out-maxwell/traces.npz") as data:
        assert data["traces"].shape == (60, 2) and data["components"].tolist() == ["Ez", "Hy"]
        assert (np.abs(data["traces"]).max(axis=0) > 0).all() and np.isfinite(data["traces"]).all()
    assert sorted(p.name for p in Path("out-maxwell").glob("snapshot_*.npz")) == [
        "snapshot_0000000.npz", "snapshot_0000030.npz", "snapshot_0000060.npz"
    ]  # fmt: skip
    assert json.loads(Path("out-maxwell/manifest.json").read_text())["view"] == "Ez"
    with np.load("out-maxwell/monitors.npz") as data:
        assert data["m0_Ez"].shape == (2, 24, 24) and data["m1_flux"].shape == (5,)
        assert np.isfinite(data["m1_flux"]).all() and np.abs(data["m0_Ez"]).max() > 0


def test_version_example(capsys):
    from diamondlab import __version__

    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0 and capsys.readouterr().out.strip() == f"diamondlab {__version__}"


def _mpiexec_line(backend: str, maxwell: bool = False) -> tuple[list[str], list[str]]:
    """The README's ``mpiexec -n 2 diamondlab run ... --backend BACKEND`` line (``maxwell``: the one with
    ``--equation maxwell``): the command that runs it here and its ``diamondlab`` arguments."""
    import shutil
    import sys

    pytest.importorskip("mpi4py", reason="the mpi extra")
    mpiexec = Path(sys.executable).with_name("mpiexec")
    mpiexec = str(mpiexec) if mpiexec.exists() else shutil.which("mpiexec")
    if mpiexec is None:
        pytest.skip("no mpiexec (the mpi extra brings MPICH's)")
    (line,) = [ln for b in _blocks("bash") for ln in b.splitlines()
               if ln.startswith("mpiexec ") and f"--backend {backend}" in ln
               and ("--equation maxwell" in ln) == maxwell]
    words = shlex.split(line, comments=True)
    assert words[:3] == ["mpiexec", "-n", "2"] and words[3] == "diamondlab"
    command = [mpiexec, *words[1:3], sys.executable, "-m", "diamondlab", *words[4:], "--no-progress"]
    return command, words[4:]


def test_mpi_example_gives_the_one_process_traces(monkeypatch, tmp_path):
    """The README's ``mpiexec -n 2 diamondlab run ... --backend cpu`` line, run as written, against one
    process."""
    import subprocess

    command, words = _mpiexec_line("cpu")
    monkeypatch.chdir(tmp_path)
    out = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    one = [*words, "--no-progress"]
    one[one.index("--out") + 1] = "out-one"
    assert main(one) == 0
    traces = [np.load(Path(d) / "traces.npz")["traces"] for d in ("out-mpi", "out-one")]
    assert traces[0].shape == (120, 1) and np.array_equal(*traces) and np.abs(traces[1]).max() > 0


def test_maxwell_mpi_example_gives_the_one_process_outputs(monkeypatch, tmp_path):
    """The README's ``mpiexec -n 2 diamondlab run --equation maxwell --scene examples/...`` line (x split),
    with the scene it names: traces and monitors bit for bit one process's."""
    import shutil
    import subprocess

    command, words = _mpiexec_line("cpu", maxwell=True)
    scene = words[words.index("--scene") + 1]
    (tmp_path / scene).parent.mkdir(parents=True)
    shutil.copy(Path(__file__).parents[1] / scene, tmp_path / scene)
    monkeypatch.chdir(tmp_path)
    out = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "on 2 MPI ranks (x split" in out.stdout, out.stdout
    one = [*words, "--no-progress"]
    one[one.index("--out") + 1] = "out-one"
    assert main(one) == 0
    for name, key in (("traces.npz", "traces"), ("monitors.npz", "m1_flux"), ("monitors.npz", "m0_Ez")):
        got, want = (np.load(Path(d) / name)[key] for d in ("out-maxwell-mpi", "out-one"))
        assert np.array_equal(got, want) and np.abs(want).max() > 0, key


@pytest.mark.gpu
def test_gpu_mpi_example_runs_on_two_gpu_ranks(monkeypatch, tmp_path):
    """The README's ``--backend cuda`` mpiexec line (two ranks share the GPU where there is one): the run
    reports both ranks and the GPU-to-GPU path, and its field stays finite (a blow-up exits 1)."""
    import os
    import subprocess

    command, _ = _mpiexec_line("cuda")
    monkeypatch.chdir(tmp_path)
    env = os.environ | {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    out = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "2 MPI ranks:" in out.stdout and "ghost rows by CUDA IPC" in out.stdout, out.stdout


@pytest.mark.gpu
def test_gpu_window_example_gives_the_in_memory_traces(monkeypatch, tmp_path, capsys):
    """The README's ``--window`` line on the GPU: streamed (it says so), the in-memory traces bit for bit."""
    (words,) = [argv for argv in COMMANDS.values() if "--window" in argv]
    monkeypatch.chdir(tmp_path)
    assert main([*words, "--no-progress"]) == 0
    assert "streamed in" in capsys.readouterr().out
    whole = [*words[:words.index("--window")], *words[words.index("--window") + 2:], "--no-progress"]
    whole[whole.index("--out") + 1] = "out-memory"
    assert main(whole) == 0
    traces = [np.load(Path(d) / "traces.npz")["traces"] for d in ("out-window", "out-memory")]
    assert traces[0].shape == (256, 1) and np.array_equal(*traces) and np.abs(traces[1]).max() > 0


def test_maxwell_quickstart():
    (block,) = [b for b in _blocks("python") if 'equation="maxwell"' in b and "near =" in b]
    scope = {}
    exec(block, scope)  # noqa: S102 - the README's own example
    sim, near = scope["sim"], scope["near"]
    assert sim.traces.shape == (300, 2) and near.shape == (48, 48)
    # the pulse reached both probes and the field stays bounded (the CPML absorbs, the metal is stable)
    assert (abs(sim.traces).max(axis=0) > 1e-4).all() and abs(near).max() > 0
    assert sim.algorithm == "diamondtorre" and sim.time_step == 300


def test_maxwell_monitors_example():
    (block,) = [b for b in _blocks("python") if "FluxBox" in b]
    scope = {}
    exec(block, scope)  # noqa: S102 - the README's own example
    power, ez = scope["power"], scope["ez"]
    assert power.shape == (3,) and (power > 0).all() and ez.shape == (3, 32, 32) and abs(ez).max() > 0


def test_lab_example_picks_the_equation():
    """The lab block's ``Lab(equation="maxwell", ...)`` line, as written, builds the Maxwell lab of the scene
    it names (built only: its widgets, no run)."""
    from diamondlab.widgets import Lab, MaxwellLab

    (block,) = [b for b in _blocks("python") if "from diamondlab.widgets import Lab" in b]
    (line,) = [ln for ln in block.splitlines() if 'Lab(equation="maxwell"' in ln]
    lab = eval(line.split("#")[0], {"Lab": Lab})  # noqa: S307 - the README's own example
    try:
        assert type(lab) is MaxwellLab and lab.controls.config().scene == "sphere"
        assert type(lab.sim.physics.materials[0].medium).__name__ == "Drude"
    finally:
        lab.close()
