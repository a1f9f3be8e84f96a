import os
import stat

import numpy as np
import pytest

from diamondlab.engine.outputs.io import load_run, save_run, write_atomically
from diamondlab.engine.run.simulation import Simulation
from diamondlab.numerics import reference_step


def test_write_atomically_keeps_the_old_file_when_writing_fails(tmp_path):
    target = tmp_path / "out.txt"
    write_atomically(target, lambda fh: fh.write("old"), mode="w")

    def broken(fh):
        fh.write("half")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        write_atomically(target, broken, mode="w")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_run_record_can_be_rerun_by_another_code(tmp_path):
    sim = Simulation((14, 13, 9), 4, backend="cpu", size=1, nt=3, courant=0.35)
    first = sim.fields
    sim.run(4)
    rec = load_run(save_run(tmp_path / "run.npz", sim, first))
    assert rec["order"] == 4 and rec["steps"] == 4 and rec["shape"] == (14, 13, 9)
    assert rec["courant"] == pytest.approx(0.35)
    # replay with the plain NumPy reference from the recorded parameters only
    prev, curr = rec["initial_prev"], rec["initial_curr"]
    for _ in range(rec["steps"]):
        prev, curr = curr, reference_step(curr, prev, rec["update_coefficients"])
    assert np.array_equal(curr, rec["final_curr"]) and np.array_equal(prev, rec["final_prev"])


def test_physics_runs_record_their_medium_and_sources(tmp_path):
    from diamondlab.sources import Source

    velocity = np.full((14, 13, 9), 1.0, dtype=np.float32)
    velocity[:, :, 5:] = 1.5
    sim = Simulation(
        (14, 13, 9), 2, backend="cpu", velocity=velocity, sponge=2, initial="zero",
        sources=[Source((6.5, 6, 4), frequency=0.06, units="grid")], receivers=[(3, 3, 3)],
    )  # fmt: skip
    first = sim.fields
    sim.run(6)
    rec = load_run(save_run(tmp_path / "p.npz", sim, first))
    assert rec["kappa"].shape == rec["damp"].shape == (14, 13, 9) and rec["damp"].max() > 0
    assert rec["source_cells"].shape == (2, 3) and rec["source_samples"].shape == (2, 6)
    assert np.array_equal(rec["traces"], sim.traces) and np.array_equal(rec["velocity_model"], velocity)
    from diamondlab.caches import cpu_description

    assert str(rec["device"]) == cpu_description()["model"]  # the machine it was made on


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_files_follow_the_umask(tmp_path, umask):
    from diamondlab.engine.outputs.snapshots import write_vti

    old = os.umask(umask)
    try:
        written = [
            write_atomically(tmp_path / "a.npz", lambda fh: np.savez(fh, a=np.zeros(2))),
            write_vti(tmp_path / "a.vti", np.zeros((3, 3, 3), np.float32), 1.0),
        ]
    finally:
        os.umask(old)
    for path in written:
        assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask, path
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.npz", "a.vti"]


def test_an_interrupted_write_leaves_no_temp_file(tmp_path):
    def interrupted(fh):
        fh.write(b"half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_atomically(tmp_path / "run.npz", interrupted)
    assert list(tmp_path.iterdir()) == []


def _spoil(path, key: str) -> None:
    """Flip one byte inside the stored array ``key`` of an .npz (its CRC no longer matches)."""
    import zipfile

    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo(f"{key}.npy")
    data = bytearray(path.read_bytes())
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    data[start + info.compress_size // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def test_large_arrays_of_a_record_are_read_only_when_used(tmp_path, monkeypatch):
    from diamondlab.engine.outputs import io

    monkeypatch.setattr(io, "LAZY_BYTES", 1000)  # the test's 14x13x9 fields count as large
    sim = Simulation((14, 13, 9), 2, backend="cpu", size=1, nt=2)
    first = sim.fields
    sim.run(2)
    path = save_run(tmp_path / "run.npz", sim, first)
    _spoil(path, "initial_prev")
    rec = load_run(path)
    fields = {"initial_prev", "initial_curr", "final_prev", "final_curr"}
    assert fields <= set(rec) and not fields & set(rec.loaded())
    assert rec["order"] == 2 and rec["shape"] == (14, 13, 9)  # the parameters are read at once
    assert np.array_equal(rec["final_curr"], sim.field) and "final_curr" in rec.loaded()
    with pytest.raises(ValueError, match=r"cannot read 'initial_prev' of the run record"):
        rec["initial_prev"]
    assert rec["final_prev"] is rec["final_prev"] and "initial_prev" not in rec.loaded()  # kept once read
