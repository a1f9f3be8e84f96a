"""Outputs planned before work, verified, each kept when another fails; --out locked; exit statuses."""

import errno
import json
import os
import subprocess
import sys
import types

import numpy as np
import pytest

from diamondlab import cli
from diamondlab.cli import EXIT_INTERNAL, EXIT_OUTPUT_FAILED, main
from diamondlab.engine.outputs import io, snapshots
from diamondlab.engine.outputs.io import load_run
from diamondlab.engine.run import simulation
from diamondlab.files import FolderLock

RUN = ["run", "--shape", "16", "--backend", "cpu", "--no-progress", "--nt", "2", "--steps", "4"]


def _no_run(monkeypatch):
    def run(self, *args, **kwargs):
        raise AssertionError("the run started before its outputs were checked")

    monkeypatch.setattr(simulation.Simulation, "run", run)


def _hidden(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob(".*"))


def test_a_save_name_too_long_is_refused_before_the_run(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    _no_run(monkeypatch)
    assert main([*RUN, "--save", "a" * 300 + ".npz"]) == 2
    err = capsys.readouterr().err
    assert "--save aaaa" in err and "is 304 bytes, longer than the 255" in err and "ENAMETOOLONG" in err, err
    assert main([*RUN, "--receiver", "1,1,1", "--out", "b" * 300]) == 2
    assert "--out bbbb" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_outputs_that_do_not_fit_the_disk_are_refused_before_the_run(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    _no_run(monkeypatch)
    monkeypatch.setattr(io.shutil, "disk_usage", lambda path: types.SimpleNamespace(free=10**6))
    argv = [*RUN, "--shape", "40", "--snapshot-every", "1", "--save", "r.npz"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "the outputs need about" in err and "5 .npz snapshots 1.2 MiB" in err and "--save r.npz" in err
    assert "0.95 MiB are free" in err or "1.0 MiB are free" in err, err
    assert list(tmp_path.iterdir()) == []  # nor --out, nor its lock


def _fake_pyvista(monkeypatch, whole: bool):
    """pyvista whose writer writes a whole VTK file, or (a full disk) a truncated one without raising."""

    class ImageData:
        def __init__(self, **kwargs):
            self.point_data = {}

        def save(self, path):
            text = b'<?xml version="1.0"?>\n<VTKFile type="ImageData">' + b"x" * 4000 + b"</VTKFile>\n"
            with open(path, "wb") as fh:
                fh.write(text if whole else text[:100])

    monkeypatch.setitem(sys.modules, "pyvista", types.SimpleNamespace(ImageData=ImageData))


def test_a_truncated_vti_is_not_renamed_into_place(tmp_path, monkeypatch):
    field = np.zeros((4, 4, 4), np.float32)
    _fake_pyvista(monkeypatch, whole=False)
    snaps = snapshots.Snapshots(1, tmp_path, ("npz", "vti"))
    with pytest.raises(OSError, match=r"snapshot_0000003\.vti: written incompletely \(not a whole VTK") as e:
        snaps.take(3, 0.1, field, 1.0)
    assert e.value.errno == errno.EIO and snaps.failed[0].name == "snapshot_0000003.vti"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["snapshot_0000003.npz"]  # no temp, no .vti
    _fake_pyvista(monkeypatch, whole=True)
    snaps.take(4, 0.2, field, 1.0)
    assert (tmp_path / "snapshot_0000004.vti").stat().st_size > 4000


def test_a_truncated_npz_is_not_renamed_into_place(tmp_path):
    from diamondlab.files import npz_verifier, write_atomically

    def half(fh):
        buffer = __import__("io").BytesIO()
        np.savez(buffer, a=np.ones(1000))
        fh.write(buffer.getvalue()[:3000])  # a writer that stopped without raising

    with pytest.raises(OSError, match=r"t\.npz: written incompletely"):
        write_atomically(tmp_path / "t.npz", half, verify=npz_verifier(["a"]))
    assert list(tmp_path.iterdir()) == []


def _full_disk(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


def test_a_failed_save_keeps_the_traces_and_the_manifest(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(io, "save_run", _full_disk)
    assert main([*RUN, "--receiver", "4,4,4", "--save", "r.npz", "--out", "out"]) == EXIT_OUTPUT_FAILED
    err = capsys.readouterr().err
    assert (
        "outputs failed: r.npz (No space left on device); written: out/traces.npz, out/manifest.json" in err
    )
    with np.load(tmp_path / "out" / "traces.npz") as data:
        assert data["traces"].shape == (4, 1)
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["files"] == ["traces.npz"] and manifest["record"] is None
    assert manifest["failed"] == {"r.npz": "No space left on device"}
    assert _hidden(tmp_path) == [] and not (tmp_path / "r.npz").exists()


def test_snapshots_filling_the_disk_end_the_run_and_the_other_outputs_are_written(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    real = snapshots.write_atomically

    def write(path, *args, **kwargs):
        if "snapshot_0000004" in str(path):
            _full_disk()
        return real(path, *args, **kwargs)

    monkeypatch.setattr(snapshots, "write_atomically", write)
    argv = [*RUN, "--steps", "8", "--snapshot-every", "2", "--receiver", "4,4,4", "--save", "r.npz"]
    assert main([*argv, "--out", "out"]) == EXIT_OUTPUT_FAILED
    err = capsys.readouterr().err
    assert "snapshot snapshot_0000004.npz failed (No space left on device): the run stops at step 4" in err
    assert "outputs failed: out/snapshot_0000004.npz (No space left on device); written:" in err
    assert load_run(tmp_path / "r.npz")["steps"] == 4
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["files"] == ["snapshot_0000000.npz", "snapshot_0000002.npz", "traces.npz"]
    assert manifest["last_step"] == 4 and "snapshot_0000004.npz" in manifest["failed"]
    assert _hidden(tmp_path) == []


def _first_run(tmp_path):
    assert main([*RUN, "--steps", "6", "--snapshot-every", "2", "--receiver", "4,4,4", "--out", "out"]) == 0
    return {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()}


def test_overwrite_replaces_the_earlier_run_only_once_the_new_one_is_written(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    earlier = _first_run(tmp_path)
    assert sorted(earlier) == [
        "manifest.json",
        *(f"snapshot_000000{i}.npz" for i in (0, 2, 4, 6)),
        "traces.npz",
    ]
    again = [*RUN, "--snapshot-every", "4", "--receiver", "4,4,4", "--out", "out", "--overwrite"]
    assert main([*again, "--order", "3"]) == 2  # a bad option: the earlier run stays
    assert {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()} == earlier

    def interrupted(cls, *args, **kwargs):
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(simulation.Simulation, "from_plan", classmethod(interrupted))  # Ctrl-C at start-up
        assert main(again) == 130
    assert {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()} == earlier
    capsys.readouterr()
    assert main(again) == 0
    now = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert now == ["manifest.json", "snapshot_0000000.npz", "snapshot_0000004.npz", "traces.npz"]
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["last_step"] == 4 and manifest["files"] == now[1:]
    assert _hidden(tmp_path) == []


def test_a_second_run_into_a_locked_out_is_refused_naming_the_holder(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "out").mkdir()
    argv = [*RUN, "--receiver", "4,4,4", "--out", "out"]
    with FolderLock(tmp_path / "out", cli.LOCK_NAME):  # a live run (this process) holds it
        assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"--out out is in use by another run (pid {os.getpid()} on " in err and "started 20" in err, err
    assert list((tmp_path / "out").iterdir()) == []
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)  # fmt: skip
    lock = tmp_path / "out" / cli.LOCK_NAME
    lock.write_text(json.dumps({"pid": int(dead.stdout), "host": os.uname().nodename, "started": "then"}))
    assert main(argv) == 0  # a stale lock (its process is gone) is taken over
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["manifest.json", "traces.npz"]


def test_two_processes_into_one_out_cannot_both_write(tmp_path):
    argv = [sys.executable, "-m", "diamondlab", *RUN, "--steps", "400", "--receiver", "4,4,4", "--out", "out"]
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    first = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True)  # fmt: skip
    for line in first.stdout:
        if line.startswith("Simulation("):  # the lock is held from before this line to the end
            break
    second = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True)
    first_out = first.stdout.read()
    assert first.wait(timeout=300) == 0, first_out
    assert second.returncode == 2 and "is in use by another run (pid" in second.stderr, second.stderr
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["manifest.json", "traces.npz"]


def test_an_unexpected_error_is_an_internal_error_not_a_blow_up(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)

    def bug(self, *args, **kwargs):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(simulation.Simulation, "run", bug)
    assert main(RUN) == EXIT_INTERNAL == 70
    err = capsys.readouterr().err
    assert "Traceback" in err and "diamondlab: error: internal error (a bug in diamondlab" in err
    assert "ZeroDivisionError: a bug" in err


def test_every_exit_status_is_documented_in_the_readme_and_the_help():
    from pathlib import Path

    readme = (Path(__file__).parents[1] / "README.md").read_text()
    table = readme[readme.index("| Exit status |") :]
    for status in cli.EXIT_STATUSES:
        assert f"| {status} |" in table, status
    assert EXIT_OUTPUT_FAILED == 74 and cli.EXIT_BLEW_UP == 1 and cli.EXIT_BAD_INPUT == 2
