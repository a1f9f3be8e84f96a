"""``diamondlab run --equation maxwell``: a scene file and flags, the acoustic run's outputs, bit for bit the
Python run."""

import json
from pathlib import Path

import numpy as np
import pytest

from diamondlab.cli import main
from diamondlab.engine.equations.maxwell_simulation import MaxwellSimulation
from diamondlab.maxwell import CPML, Dipole, Drude, GaussianPulse, Probe, Sphere

EXAMPLE = Path(__file__).parents[1] / "examples" / "maxwell-sphere.json"
SCENE = {
    "shape": [20, 20, 20], "order": 2, "pml": 4, "steps": 30,
    "waveform": {"kind": "gaussian", "frequency": 0.15, "fwidth": 0.1},
    "materials": [{"shape": "sphere", "center": [10, 10, 10], "radius": 3,
                   "medium": {"kind": "drude", "eps_inf": 1.0, "wp": 0.6, "gamma": 0.02}}],
    "sources": [{"type": "dipole", "position": [6, 10, 10], "component": "Ez"}],
    "probes": [{"position": [14, 10, 10], "component": "Ez"}, {"position": [10, 14, 10], "component": "Hx"}],
}  # fmt: skip
RUN = ["run", "--equation", "maxwell", "--backend", "cpu", "--no-progress"]


def _python_run(steps: int, every: int, view: str = "Ez", nt=None, pml=4):
    """The scene of SCENE, run from Python."""
    sim = MaxwellSimulation(
        (20, 20, 20), 2, backend="cpu", pml=CPML(pml), nt=nt,
        materials=[Sphere((10, 10, 10), 3, Drude(eps_inf=1.0, wp=0.6, gamma=0.02))],
        sources=[Dipole((6, 10, 10), "Ez", GaussianPulse(0.15, 0.1))],
        probes=[Probe((14, 10, 10), "Ez"), Probe((10, 14, 10), "Hx")],
    )  # fmt: skip
    sim.view = view
    sim.run(steps, snapshot_every=every)
    return sim


def _scene(tmp_path, scene=SCENE) -> str:
    path = tmp_path / "scene.json"
    path.write_text(json.dumps(scene))
    return str(path)


def test_a_scene_run_writes_the_python_runs_outputs_bit_for_bit(tmp_path, capsys):
    pytest.importorskip("pyvista")
    out = tmp_path / "out"
    argv = [*RUN, "--scene", _scene(tmp_path), "--snapshot-every", "15", "--snapshot-format", "npz,vti"]
    assert main([*argv, "--out", str(out), "--view", "Hx"]) == 0
    text = capsys.readouterr().out
    assert "30 steps of 20x20x20" in text and "G Yee cell updates/s (diamondtorre, cpu)" in text, text
    assert "traces of 2 probes (30 steps)" in text
    sim = _python_run(30, 15, "Hx")
    with np.load(out / "traces.npz") as data:
        assert np.array_equal(data["traces"], sim.traces) and np.abs(data["traces"]).max(axis=0).min() > 0
        assert np.array_equal(data["times"], sim.trace_times)
        assert data["positions"].tolist() == [[14, 10, 10], [10, 14, 10]]
        assert data["components"].tolist() == ["Ez", "Hx"]
    frames = dict(sim.snapshots.frames)
    assert sorted(frames) == [0, 15, 30]
    for step, field in frames.items():
        with np.load(out / f"snapshot_{step:07d}.npz") as data:
            assert str(data["component"]) == "Hx" and int(data["step"]) == step
            assert np.array_equal(data["field"], field)
    import pyvista as pv

    grid = pv.read(out / "snapshot_0000030.vti")
    assert np.array_equal(grid.point_data["Hx"].reshape((20, 20, 20), order="F"), frames[30])
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["equation"] == "maxwell" and manifest["view"] == "Hx" and manifest["last_step"] == 30
    assert manifest["files"] == sorted(p.name for p in out.iterdir() if p.name != "manifest.json")
    assert not manifest["interrupted"] and manifest["failed"] == {}


def test_flags_replace_the_scenes_values(tmp_path, capsys):
    """--steps, --pml, --probe and --dipole with --frequency/--fwidth replace the scene's; the rest stays."""
    out = tmp_path / "out"
    argv = [*RUN, "--scene", _scene(tmp_path), "--steps", "18", "--nt", "5", "--pml", "3", "--out", str(out)]
    argv += ["--probe", "14,10,10,Ez", "--dipole", "6,10,10", "--frequency", "0.15", "--fwidth", "0.1"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "nt=5" in text and "CPML 3" in text, text
    sim = _python_run(18, 18, nt=5, pml=3)
    with np.load(out / "traces.npz") as data:
        assert data["traces"].shape == (18, 1) and np.array_equal(data["traces"][:, 0], sim.traces[:, 0])


def test_ctrl_c_still_writes_complete_outputs(tmp_path, capsys, monkeypatch):
    advance = MaxwellSimulation._advance
    calls = []

    def stopped_after_two_sweeps(self, height):
        advance(self, height)
        calls.append(height)
        if len(calls) == 2:
            raise KeyboardInterrupt  # Ctrl-C during the third sweep's books

    monkeypatch.setattr(MaxwellSimulation, "_advance", stopped_after_two_sweeps)
    out = tmp_path / "out"
    assert main([*RUN, "--scene", _scene(tmp_path), "--snapshot-every", "10", "--out", str(out)]) == 130
    assert "interrupted at step 20" in capsys.readouterr().out
    monkeypatch.setattr(MaxwellSimulation, "_advance", advance)
    sim = _python_run(20, 10)
    with np.load(out / "traces.npz") as data:
        assert np.array_equal(data["traces"], sim.traces)
    assert sorted(p.name for p in out.iterdir()) == [
        "manifest.json", "snapshot_0000000.npz", "snapshot_0000010.npz", "traces.npz"
    ]  # fmt: skip
    with np.load(out / "snapshot_0000010.npz") as data:
        assert np.array_equal(data["field"], dict(sim.snapshots.frames)[10])
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["interrupted"] and manifest["last_step"] == 20
    assert [p.name for p in tmp_path.rglob(".*")] == []  # no lock, no staging folder, no temporary file


def test_save_and_initial_continue_a_run_bit_for_bit(tmp_path, capsys):
    """run 13 steps --save, then --initial FILE 17 more steps --save: the Python run of 30 steps, bit for bit
    (E, H, the Drude current, the CPML's psi, the probes' traces, the clock)."""
    scene = _scene(tmp_path)
    first, second = tmp_path / "a.npz", tmp_path / "b.npz"
    argv = [*RUN, "--scene", scene, "--nt", "4"]
    assert main([*argv, "--steps", "13", "--save", str(first), "--out", str(tmp_path / "o1")]) == 0
    assert f"saved {first}" in capsys.readouterr().out
    assert main([*argv, "--steps", "17", "--initial", str(first), "--save", str(second),
                 "--out", str(tmp_path / "o2")]) == 0  # fmt: skip
    assert "time_step=13" in capsys.readouterr().out
    sim = _python_run(30, 30, nt=4)
    with np.load(second) as data:
        assert str(data["equation"]) == "maxwell" and (int(data["first_step"]), int(data["step"])) == (13, 30)
        for key, value in sim.state().items():
            assert np.array_equal(data[key], value), key
        assert np.abs(data["J"]).max() > 0 and np.abs(data["psi_z"]).max() > 0
    with np.load(tmp_path / "o2" / "traces.npz") as data:
        assert np.array_equal(data["traces"], sim.traces[13:])
        assert np.array_equal(data["times"], sim.trace_times[13:])
    manifest = json.loads((tmp_path / "o2" / "manifest.json").read_text())
    assert manifest["first_step"] == 13 and manifest["last_step"] == 30 and manifest["record"] == str(second)


def test_initial_of_another_scene_is_refused_before_any_work(tmp_path, capsys, monkeypatch):
    from diamondlab.engine.equations.maxwell_plan import MaxwellPlan
    from diamondlab.engine.outputs.io import save_run

    save_run(tmp_path / "a.npz", _python_run(0, 10))  # 0 steps: nothing compiles
    monkeypatch.setattr(MaxwellPlan, "make_backend", lambda self: pytest.fail("allocated before the refusal"))
    monkeypatch.chdir(tmp_path)
    argv = [*RUN, "--scene", _scene(tmp_path), "--initial", "a.npz"]
    for extra, text in (
        (["--pml", "2"], "--initial a.npz: the record's pml CPML(width=4, "),
        (["--courant", "0.3"], "--initial a.npz: the record's dt 0.548"),
        (["--shape", "24"], "the record's shape (20, 20, 20) differs from this run's (24, 24, 24)"),
    ):  # fmt: skip
        assert main([*argv, *extra]) == 2
        err = capsys.readouterr().err
        assert err.startswith("diamondlab: error: ") and text in err and "Traceback" not in err, err


@pytest.mark.parametrize(
    ("scene", "text"),
    [
        ({"materials": [{"shape": "sphere", "center": [10, 10, 10], "medium": "pec"}]},
         "materials[0].radius is missing (required)"),
        ({"materials": [{"shape": "sphere", "center": "middle", "radius": 2, "medium": "pec"}]},
         'materials[0].center must be a list of three numbers (cells); got "middle"'),
        ({"materials": [{"shape": "box", "lo": [1, 1, 1], "hi": [2, 2, 2], "medium": {"kind": "drude",
                                                                                   "wp": -0.5}}]},
         "materials[0].medium.wp must be a number >= 0; got -0.5"),
        ({"materials": [{"shape": "slab", "axis": "z", "lo": 1, "hi": 2, "medium": {"kind": "gold"}}]},
         'materials[0].medium.kind must be one of dielectric, drude, pec; got "gold"'),
        ({"probes": [{"position": [30, 10, 10]}]}, "probes[0] at (30, 10, 10) lies outside the grid"),
    ],
    ids=["missing key", "wrong type", "negative wp", "unknown medium", "probe outside"],
)  # fmt: skip
def test_a_bad_scene_is_refused_naming_the_key_path(scene, text, tmp_path, capsys, monkeypatch):
    from diamondlab.engine.equations.maxwell_plan import MaxwellPlan

    monkeypatch.setattr(MaxwellPlan, "make_backend", lambda self: pytest.fail("allocated before the refusal"))
    monkeypatch.chdir(tmp_path)
    scene = {**SCENE, **scene}
    assert main([*RUN, "--scene", _scene(tmp_path, scene)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("diamondlab: error: ") and text in err and "Traceback" not in err, err
    assert not (tmp_path / "diamondlab-out").exists()


def test_help_names_the_equation_and_the_maxwell_options(capsys):
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    text = capsys.readouterr().out
    assert "--equation {acoustic,maxwell}" in text
    assert all(flag in text for flag in ("--scene", "--dipole", "--probe", "--pml", "--view", "--fwidth"))


def test_the_example_scene_is_a_valid_scene():
    from diamondlab.maxwell.scene import parse_scene, read_scene

    scene = parse_scene(read_scene(EXAMPLE))
    assert scene["shape"] == (24, 24, 24) and len(scene["probes"]) == 2 and scene["pml"].width == 4


def test_a_scene_with_monitors_writes_their_dft_and_flux(tmp_path, capsys):
    """``monitors.npz``: the DFT fields and fluxes of the Python run, bit for bit (key ``dft_planes``)."""
    from diamondlab.maxwell import DFTPlane, FluxBox, FluxPlane

    out = tmp_path / "out"
    monitors = [{"type": "dft", "axis": "y", "index": 10, "frequencies": [0.1, 0.15], "components": ["Ez"]},
                {"type": "flux", "axis": "x", "index": 14, "frequencies": [0.15], "direction": -1},
                {"type": "fluxbox", "box": [[4, 6, 6], [9, 14, 14]], "frequencies": [0.12, 0.15]}]
    scene = {k: v for k, v in SCENE.items() if k != "probes"}
    path = _scene(tmp_path, {**scene, "dft_planes": monitors})
    assert main([*RUN, "--scene", path, "--out", str(out)]) == 0
    assert "DFT fields and fluxes of 3 monitors" in capsys.readouterr().out
    sim = MaxwellSimulation(
        (20, 20, 20), 2, backend="cpu", pml=CPML(4),
        materials=[Sphere((10, 10, 10), 3, Drude(eps_inf=1.0, wp=0.6, gamma=0.02))],
        sources=[Dipole((6, 10, 10), "Ez", GaussianPulse(0.15, 0.1))],
        monitors=[DFTPlane("y", 10, [0.1, 0.15], components=("Ez",)),
                  FluxPlane("x", 14, [0.15], direction=-1), FluxBox(((4, 6, 6), (9, 14, 14)), [0.12, 0.15])],
    )  # fmt: skip
    sim.run(30)
    with np.load(out / "monitors.npz") as data:
        assert str(data["m0_type"]) == "DFTPlane" and data["m0_frequencies"].tolist() == [0.1, 0.15]
        assert np.array_equal(data["m0_Ez"], sim.dft(0)["Ez"]) and np.abs(data["m0_Ez"]).max() > 0
        assert np.array_equal(data["m1_flux"], sim.flux(1))
        assert np.array_equal(data["m1_Hz"], sim.dft(1)["Hz"])
        assert np.array_equal(data["m2_flux"], sim.flux(2))
        assert np.array_equal(data["m2_px_flux"], sim.flux(2, "+x"))
        assert np.array_equal(data["m2_mz_Ey"], sim.dft(2)["-z"]["Ey"]) and int(data["steps"]) == 30
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["files"] == ["monitors.npz"]


def test_monitors_through_a_window_write_the_in_memory_sums(tmp_path):
    """``--window``: each window sums the monitor points it owns; ``monitors.npz`` equals the in-memory file
    bit for bit (the same through MPI ranks: tests/test_readme.py runs the README's ``mpiexec`` line)."""
    monitors = [{"type": "dft", "axis": "z", "index": 10, "frequencies": [0.1, 0.15],
                 "components": ["Ez", "Hy"]},
                {"type": "flux", "axis": "x", "index": 12, "frequencies": [0.15]},
                {"type": "fluxbox", "box": [[4, 6, 6], [15, 14, 14]], "frequencies": [0.12, 0.15]}]
    path = _scene(tmp_path, {**{k: v for k, v in SCENE.items() if k != "probes"}, "monitors": monitors})
    argv = [*RUN, "--scene", path, "--nt", "2"]
    assert main([*argv, "--out", str(tmp_path / "one")]) == 0
    assert main([*argv, "--window", "12", "--out", str(tmp_path / "window")]) == 0
    with np.load(tmp_path / "one" / "monitors.npz") as one:
        want = dict(one)
    assert np.abs(want["m0_Ez"]).max() > 0 and np.abs(want["m2_flux"]).max() > 0
    with np.load(tmp_path / "window" / "monitors.npz") as data:
        assert sorted(data) == sorted(want)
        assert all(np.array_equal(data[k], want[k]) for k in want)


BENCH = ["bench", "--equation", "maxwell", "--backend", "cpu", "--no-progress"]


def test_bench_times_both_algorithms_on_the_yee_grid_and_writes_its_rows(tmp_path, capsys):
    """``bench --equation maxwell`` on the CPU: a row per order with both rates, bit for bit, G Yee cell
    updates/s, "no model" said (the CPU model has no Yee scheme) with the bytes of the tile geometry."""
    from diamondlab.engine.equations.maxwell_plan import MaxwellPlan
    from diamondlab.engine.measure.perfmodel import yee_bytes_per_update

    out = tmp_path / "yee.json"
    argv = [*BENCH, "--shape", "12", "--orders", "2", "--nt", "4", "--steps", "4", "--repeats", "2"]
    assert main([*argv, "--json", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("grid 12x12x12, backend cpu, vacuum, perfect conductor walls; medians of "
                               "at least 2")
    head = ["NO", "DTS", "Nt", "DiamondTorre", "spread", "stepwise", "spread", "ratio", "equal"]
    assert lines[1].split()[:9] == head and "B/update" in lines[1]
    cells = lines[2].split()
    size = MaxwellPlan.build((12, 12, 12), 2, backend="cpu", nt=4).size  # the default: a torre a thread
    assert cells[:3] == ["2", str(size), "4"] and float(cells[3]) > 0 and float(cells[5]) > 0
    assert cells[8] == "True"
    assert cells[9:13] == ["-"] * 4 and "no model: the CPU model has no Yee scheme" in lines[2]
    assert "(G Yee cell updates per second)" in lines and any(ln.startswith("model: no model on the CPU")
                                                              for ln in lines)
    (row,) = json.loads(out.read_text())["rows"]
    assert row["equation"] == "maxwell" and row["shape"] == [12, 12, 12] and row["bit_equal"] is True
    assert row["diamondtorre"] > 0 and row["stepwise"] > 0 and row["model"] is None
    assert row["bound"].startswith("no model")
    assert row["stepwise_model_bytes"] == yee_bytes_per_update("stepwise_layer", 2) == 78.0
    assert row["model_bytes"] == pytest.approx(yee_bytes_per_update("torre_row", 2, size, 4))
    assert f"{row['model_bytes']:.1f} / 78" in lines[2]


def test_bench_physics_times_the_scene_and_its_model_on_a_gpu(tmp_path, capsys, monkeypatch):
    """``--medium physics``: the bench scene (a Drude current in the bytes); on a GPU predict_yee's roofline
    per row (the device's measured numbers injected here, the runs on the CPU)."""
    from diamondlab import cli
    from diamondlab.engine.measure.perfmodel import DeviceNumbers, predict_yee

    device = DeviceNumbers("test GPU", 2.5e12, 60e12)
    monkeypatch.setattr(cli, "_device_numbers", lambda backend, skip: device)
    real = cli._bench_shape

    def as_cuda(args, shape, comm=None):  # the table of a CUDA backend, from a CPU run
        from diamondlab.engine.measure import bench

        compare = bench.compare_algorithms
        monkeypatch.setattr(bench, "compare_algorithms", lambda *a, **k: [
            {**r, "backend": "cuda"} for r in compare(*a, **k)])
        return real(args, shape, comm)

    monkeypatch.setattr(cli, "_bench_shape", as_cuda)
    out = tmp_path / "yee.json"
    argv = [*BENCH, "--shape", "64", "--orders", "2", "--dts", "2", "--nt", "4", "--steps", "4",
            "--repeats", "1"]
    assert main([*argv, "--medium", "physics", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "a Drude sphere, a 12-cell CPML, a TFSF plane wave, a dipole and a probe" in text
    assert "model: the roofline prediction (engine.measure.perfmodel.predict_yee)" in text
    (row,) = json.loads(out.read_text())["rows"]
    assert row["variant"] == "drude" and row["bit_equal"] is True
    for alg, key in (("diamondtorre", "model"), ("stepwise", "stepwise_model")):
        p = predict_yee(alg, 2, 2, 4, device, drude=True)
        assert row[key] == pytest.approx(p.rate / 1e9)
    assert row["stepwise_model_bytes"] == 78.0 + 24.0 and row["bound"] == "memory-bound"
