"""Several processes over MPI: the grid split along y, bit for bit the single-process run."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from diamondlab.engine.run.plan import RunPlan
from diamondlab.engine.scale.mpi import SlabBackend, slab_bounds
from diamondlab.engine.scale.subdomain import ghost_rows

HERE = Path(__file__).parent
#: the case script run by mpi4py's launcher: an exception on one rank aborts them all (no hang)
CASES = ["-m", "mpi4py", str(HERE / "mpi_cases.py")]


class FakeComm:
    """Only what the plan reads of a communicator (its checks run before any message)."""

    def __init__(self, size, rank=0):
        self.size, self.rank = size, rank


def test_slabs_cover_the_grid_once_and_hold_their_ghost_rows():
    for ny, ranks in ((10, 3), (23, 2), (7, 7)):
        bounds = slab_bounds(ny, ranks)
        assert bounds[0][0] == 0 and bounds[-1][1] == ny
        assert all(a[1] == b[0] for a, b in zip(bounds, bounds[1:], strict=False))
        assert max(b - a for a, b in bounds) - min(b - a for a, b in bounds) <= 1
    assert ghost_rows(4, 6) == 12
    # 4 ghost rows a side: the edge ranks own 12 rows (and 4 ghost rows), the middle ones 8 (and 2 x 4)
    assert slab_bounds(40, 4, ghosts=4) == [(0, 12), (12, 20), (20, 28), (28, 40)]
    assert [SlabBackend.slab_shape((20, 40, 8), 2, 4, 4, r) for r in range(4)] == [(20, 16, 8)] * 4


def test_every_rank_computes_as_many_rows_where_the_grid_allows():
    """The sweep every rank waits for is the longest: the edge ranks own ``G`` rows more than the middle
    ones, so that owned and ghost rows come to the same count on every rank (to a row)."""
    for n, ranks, ghosts in ((4096, 4, 32), (8192, 4, 32), (1000, 7, 16), (97, 3, 5), (64, 2, 9)):
        bounds = slab_bounds(n, ranks, ghosts=ghosts)
        computed = [min(n, hi + ghosts) - max(0, lo - ghosts) for lo, hi in bounds]
        assert max(computed) - min(computed) <= 1, (n, ranks, ghosts, bounds)
        assert bounds[0][0] == 0 and bounds[-1][1] == n
    # too narrow for the ghost rows' full weight: every rank still owns a row
    assert [hi - lo for lo, hi in slab_bounds(10, 3, ghosts=8)] == [5, 1, 4]


def test_bad_mpi_runs_are_clear_errors_before_any_allocation():
    with pytest.raises(ValueError, match=r"30 MPI ranks need ny >= 30 \(one row each at least\); got ny=20"):
        RunPlan.build((20, 20, 8), 2, backend="cpu", size=1, nt=2, comm=FakeComm(30))
    with pytest.raises(ValueError, match=r"halo='peer' \(GPU to GPU\) needs GPU ranks; backend 'cpu'"):
        RunPlan.build((20, 20, 8), 2, backend="cpu", comm=FakeComm(2), halo="peer")
    with pytest.raises(ValueError, match=r"halo must be one of \('auto', 'host', 'peer'\); got 'nvlink'"):
        RunPlan.build((20, 20, 8), 2, backend="cpu", comm=FakeComm(2), halo="nvlink")
    with pytest.raises(ValueError, match=r"comm: rank 2 of 10 holds 5 of ny=20 rows .* too few for this"):
        RunPlan.build((20, 20, 8), 2, backend="cpu", size=3, nt=2, comm=FakeComm(10))
    plan = RunPlan.build((20, 20, 8), 2, backend="auto", size=1, nt=2, comm=FakeComm(2))
    assert plan.backend == "cpu" and plan.ranks == 2


def test_default_torre_height_keeps_the_ghost_rows_a_quarter_of_a_slab():
    assert RunPlan.build((20, 40, 8), 2, backend="cpu", size=1, comm=FakeComm(2)).nt == 5  # 5 of 20 rows
    assert RunPlan.build((20, 40, 8), 2, backend="cpu", size=1, nt=9, comm=FakeComm(2)).nt == 9  # asked for
    assert RunPlan.build((20, 40, 8), 2, backend="cpu", size=1).nt == 48  # one process: the backend's


def _mpiexec():
    found = Path(sys.executable).with_name("mpiexec")
    return str(found) if found.exists() else shutil.which("mpiexec")


@pytest.mark.parametrize("ranks", [2, 3])
def test_ranks_give_the_single_process_result_bit_for_bit(ranks):
    """Fields, traces and planes with sources, receivers, a layered model and a sponge, both algorithms."""
    stdout = _cases(ranks)
    assert stdout.count("ok ") == 4 and f"ranks={ranks}" in stdout, stdout


def _need_mpiexec() -> str:
    pytest.importorskip("mpi4py", reason="the mpi extra (pip install 'diamondlab[mpi]')")
    mpiexec = _mpiexec()
    if mpiexec is None:
        pytest.skip("no mpiexec (pip install 'diamondlab[mpi]' brings MPICH's)")
    return mpiexec


def test_cli_under_mpiexec_writes_the_single_process_outputs(tmp_path):
    """``mpiexec -n 2 diamondlab run``: rank 0 prints and writes; traces and saved layers bit for bit."""
    import numpy as np

    from diamondlab.cli import main

    mpiexec = _need_mpiexec()
    run = ["run", "--shape", "20x24x12", "--steps", "12", "--backend", "cpu", "--dts", "1", "--nt", "4",
           "--source", "10,6,5", "--receiver", "4,20,6", "--receiver", "10,12,6", "--frequency", "0.06",
           "--no-progress", "--snapshot-every", "6"]
    out = subprocess.run([mpiexec, "-n", "2", sys.executable, "-m", "diamondlab", *run, "--out",
                          str(tmp_path / "mpi"), "--save", str(tmp_path / "mpi.npz")],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.count("on 2 MPI ranks") == 1 and "2 MPI ranks:" in out.stdout, out.stdout  # rank 0 only
    assert main([*run, "--out", str(tmp_path / "one"), "--save", str(tmp_path / "one.npz")]) == 0
    traces = [np.load(tmp_path / d / "traces.npz")["traces"] for d in ("mpi", "one")]
    assert np.array_equal(*traces) and np.abs(traces[1]).max() > 0
    saved = [np.load(tmp_path / f) for f in ("mpi.npz", "one.npz")]
    assert all(np.array_equal(saved[0][k], saved[1][k]) for k in ("final_prev", "final_curr"))
    snaps = [sorted((tmp_path / d).glob("snapshot_*.npz")) for d in ("mpi", "one")]  # written by rank 0
    names = [f"snapshot_{s:07d}.npz" for s in (0, 6, 12)]
    assert [p.name for p in snaps[0]] == [p.name for p in snaps[1]] == names
    assert all(np.array_equal(np.load(a)["field"], np.load(b)["field"]) for a, b in zip(*snaps, strict=True))


def test_an_error_on_the_ranks_stops_every_rank_with_the_message():
    mpiexec = _need_mpiexec()
    out = subprocess.run([mpiexec, "-n", "3", sys.executable, "-m", "diamondlab", "run", "--shape", "20x20x8",
                          "--dts", "9", "--nt", "2", "--backend", "cpu", "--no-progress"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode != 0
    # whichever rank reaches the error first stops them all
    assert re.search(r"MPI rank \d of 3: stopping every rank", out.stderr), out.stderr
    assert "too few for this tile" in out.stderr


def _cases(ranks: int, *args: str, env: dict | None = None, timeout: int = 300):
    import os

    command = [_need_mpiexec(), "-n", str(ranks), sys.executable, *CASES, *args]
    out = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                         env=os.environ | (env or {}))
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


@pytest.mark.slow
def test_gpu_ranks_under_the_cuda_simulator_give_the_single_process_result():
    """Two CUDA ranks (the simulator): ghost rows packed on the device, staged through the host."""
    pytest.importorskip("numba.cuda")
    stdout = _cases(2, "cuda", env={"NUMBA_ENABLE_CUDASIM": "1"})
    assert stdout.count("ok physics diamondtorre cuda ranks=2") == 1, stdout
    assert "halo=host staging" in stdout, stdout


@pytest.mark.gpu
@pytest.mark.parametrize("halo", ["peer", "host"])
def test_gpu_ranks_give_the_single_process_result_bit_for_bit(halo):
    """Two ranks on this machine's GPUs (sharing one where there is one): both halo paths."""
    stdout = _cases(2, "cuda", halo, timeout=600)
    assert stdout.count("ok ") == 4, stdout  # two cases, both algorithms
    assert ("CUDA IPC" if halo == "peer" else "host staging") in stdout, stdout


def test_ctrl_c_under_mpiexec_stops_every_rank_at_one_level(tmp_path):
    """Ctrl-C to ``mpiexec``: every rank stops after the same sweep; the saved layers and traces are
    the one-process run's of that many steps, bit for bit."""
    import signal
    import time

    import numpy as np

    from diamondlab.cli import main

    run = ["run", "--shape", "20x24x12", "--backend", "cpu", "--dts", "1", "--nt", "4", "--source", "10,6,5",
           "--receiver", "10,20,6", "--frequency", "0.06", "--no-progress"]
    proc = subprocess.Popen([_need_mpiexec(), "-n", "2", sys.executable, "-m", "diamondlab", *run, "--steps",
                             "10000000", "--out", str(tmp_path / "mpi"), "--save", str(tmp_path / "mpi.npz"),
                             "--snapshot-every", "40"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for _ in range(600):  # running (past its compile) once rank 0 wrote the snapshot of step 40
        if (tmp_path / "mpi" / "snapshot_0000040.npz").exists():
            break
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, out + err
    (steps,) = (int(m) for m in re.findall(r"interrupted at step (\d+): fields consistent", out))
    assert steps > 0 and steps % 4 == 0, out  # after a whole sweep, said once (by rank 0)
    assert steps >= 40
    assert main([*run, "--steps", str(steps), "--out", str(tmp_path / "one"), "--save",
                 str(tmp_path / "one.npz")]) == 0
    saved = [np.load(tmp_path / f) for f in ("mpi.npz", "one.npz")]
    assert all(np.array_equal(saved[0][k], saved[1][k]) for k in ("final_prev", "final_curr"))
    traces = [np.load(tmp_path / d / "traces.npz")["traces"] for d in ("mpi", "one")]
    assert traces[0].shape == (steps, 1) and np.array_equal(*traces)


def _rank_pid(marker: str, rank: int) -> int:
    """The process id of MPI rank ``rank`` of the run whose command line holds ``marker`` (Linux /proc)."""
    names = {f"{name}={rank}".encode() for name in ("PMI_RANK", "OMPI_COMM_WORLD_RANK")}  # MPICH, Open MPI
    for proc in Path("/proc").iterdir():
        try:
            if marker in (proc / "cmdline").read_bytes().decode(errors="replace") and names & set(
                    (proc / "environ").read_bytes().split(b"\0")):
                return int(proc.name)
        except (OSError, ValueError):
            continue
    raise AssertionError(f"no process of rank {rank} found")


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="finds the rank's process in /proc")
def test_a_rank_killed_mid_run_stops_every_rank_within_30_seconds(tmp_path):
    """SIGKILL to one of 3 CPU ranks mid-run: mpiexec stops the other two and says which died."""
    import os
    import signal
    import time

    out_dir = tmp_path / "killed"
    proc = subprocess.Popen([_need_mpiexec(), "-n", "3", sys.executable, "-m", "diamondlab", "run", "--shape",
                             "24x30x12", "--backend", "cpu", "--dts", "1", "--nt", "4", "--steps", "10000000",
                             "--no-progress", "--out", str(out_dir), "--snapshot-every", "40"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for _ in range(600):  # running (past its compile) once rank 0 wrote the snapshot of step 40
        if (out_dir / "snapshot_0000040.npz").exists():
            break
        time.sleep(0.2)
    os.kill(_rank_pid(str(out_dir), 1), signal.SIGKILL)
    killed = time.monotonic()
    out, err = proc.communicate(timeout=120)
    assert time.monotonic() - killed < 30 and proc.returncode != 0
    assert re.search(r"signal 9|Killed", out + err), out + err


def test_bench_under_mpiexec_prints_once_and_checks_both_algorithms(tmp_path):
    """``mpiexec -n 2 diamondlab bench``: rank 0 prints one table; the rows are the whole grid's, both
    algorithms split the same way and equal bit for bit."""
    import json

    bench = ["bench", "--backend", "cpu", "--shape", "20x32x12", "--orders", "2", "4", "--nt", "3",
             "--repeats", "2", "--no-progress", "--no-model", "--json", str(tmp_path / "b.json")]
    out = subprocess.run([_need_mpiexec(), "-n", "2", sys.executable, "-m", "diamondlab", *bench],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.count("2 MPI ranks (y split)") == 1, out.stdout
    rows = json.loads((tmp_path / "b.json").read_text())["rows"]
    assert [r["order"] for r in rows] == [2, 4] and all(r["ranks"] == 2 and r["bit_equal"] for r in rows)
    assert all(r["diamondtorre_per_rank"] == r["diamondtorre"] / 2 > 0 for r in rows)


def test_the_exchange_model_overlapped_hides_what_the_interior_covers():
    """``predict_scaling(overlap=True)``: no ghost row recomputed, the exchange behind the interior torres; a
    link too slow for that leaves the rest of the exchange on the sweep, and the edges are never hidden."""
    from diamondlab.engine.scale.mpi import predict_scaling

    shape, args = (2048, 4096, 512), (2, 32, 4, 632.4e9)
    built, hidden = (predict_scaling(shape, *args, 450e9, overlap=o) for o in (False, True))
    assert built["hidden"] == 0 and built["speedup"] < hidden["speedup"] == pytest.approx(4.0)
    assert built["compute"] == pytest.approx(hidden["compute"] * (1008 + 2 * 32) / 1024)  # the ghost rows
    slow = predict_scaling(shape, *args, 1e8, overlap=True)  # 268 MB at 0.1 GB/s: 2.7 s, longer than a sweep
    interior = 2048 * (1024 - 4 * 32) * 512 * 32 / 632.4e9
    assert slow["hidden"] == pytest.approx(interior) and slow["exchange"] > slow["compute"]
    one = 2048 * 4096 * 512 * 32 / 632.4e9
    assert slow["speedup"] == pytest.approx(one / (slow["compute"] + slow["exchange"] - interior))
    assert predict_scaling(shape, 2, 32, 1, 632.4e9, 450e9, overlap=True)["speedup"] == 1.0
