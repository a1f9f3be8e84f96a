"""Maxwell's equations through the calculation window and MPI ranks: the in-memory run bit for bit."""

import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from maxwell_scale_cases import CASES, SHAPE, same, scene
from test_mpi import _need_mpiexec

from diamondlab import Simulation
from diamondlab.engine.equations.maxwell_plan import MaxwellPlan


def _pair(order: int, nt: int, algorithm: str, **scale):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a dipole delayed past a short run: not the point here
        kw = {"equation": "maxwell", "backend": "cpu", "size": 1, "nt": nt, "algorithm": algorithm, **scene()}
        return Simulation(SHAPE, order, **scale, **kw), Simulation(SHAPE, order, **kw)


@pytest.mark.parametrize(("order", "nt", "runs", "window"), CASES)
def test_a_maxwell_window_run_equals_the_in_memory_run_bit_for_bit(order, nt, runs, window):
    """E, H, the Drude current and psi stream; a Drude sphere, CPML, a dipole, two TFSF plane waves."""
    windowed, whole = _pair(order, nt, "diamondtorre", window=window)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for steps in runs:
            windowed.run(steps)
        whole.run(sum(runs))
    backend = windowed.backend
    assert len(backend.chunks) >= 3 and backend.inner.shape == (window, *SHAPE[1:])
    assert backend.ghosts == nt * order  # two half steps a step, order / 2 rows each
    assert [a.name for a in backend.layout] == ["E", "H", "J", "psi_x", "psi_y", "psi_z"]
    assert all(same(windowed, whole)), same(windowed, whole)
    windowed.view = whole.view = "Hx"
    assert np.array_equal(windowed.field, whole.field)
    assert windowed.energy() == whole.energy()


def test_a_maxwell_window_too_small_for_the_ghost_rows_is_a_clear_error():
    """Ghost rows from the Yee reach: Nt steps of two half steps, order / 2 rows each (order 4, Nt 4: 16)."""
    with pytest.raises(ValueError, match=r"window must hold more than 2 x 16 ghost rows .*: window >= 33; "
                                         r"got 32"):
        MaxwellPlan.build((60, 18, 14), 4, backend="cpu", size=1, nt=4, window=32)
    assert MaxwellPlan.build((60, 18, 14), 4, backend="cpu", size=1, nt=4, window=33).window == 33
    comm = type("FakeComm", (), {"size": 2, "rank": 0})()
    with pytest.raises(ValueError, match="window and comm together are not built yet"):
        MaxwellPlan.build((60, 18, 14), 2, backend="cpu", window=33, comm=comm)


@pytest.mark.parametrize(("ranks", "order"), [(2, 4), (3, 2)])
def test_maxwell_ranks_give_the_single_process_result_bit_for_bit(ranks, order):
    """x split: E, H, traces, sampled planes and a component of every rank equal one process's (each
    rank compiles the kernels of one order: a case per order keeps the test short)."""
    script = Path(__file__).with_name("maxwell_scale_cases.py")
    out = subprocess.run([_need_mpiexec(), "-n", str(ranks), sys.executable, "-m", "mpi4py", str(script),
                          str(order)], capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.count(f"ok maxwell order={order} ranks={ranks}") == 1, out.stdout


@pytest.mark.slow
def test_maxwell_window_and_rows_on_the_cuda_backend_under_the_simulator():
    """The window over the (simulated) GPU equals its in-memory run bit for bit; device x rows travel as
    they lie (tests/engine/yee_cuda_scale_sim_cases.py)."""
    pytest.importorskip("numba.cuda")
    script = Path(__file__).with_name("yee_cuda_scale_sim_cases.py")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.count(": ok") == 2, out.stdout


@pytest.mark.slow
def test_a_maxwell_scene_streams_through_the_window_on_the_gpu_under_the_simulator():
    """Media (a PEC box; a Drude sphere, whose current streams with the fields) at order 4; a CPML (psi_y and
    psi_z streamed), a dipole, probes and monitors at order 2: the sweeps streamed through a ring of x rows
    (rows outside it NaN to the kernels; the state in files in one case) equal the in-memory GPU run bit for
    bit, traces and DFT sums too, over two ``run`` calls (tests/engine/yee_cuda_scale_sim_cases.py
    ``streamed``)."""
    pytest.importorskip("numba.cuda")
    script = Path(__file__).with_name("yee_cuda_scale_sim_cases.py")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    out = subprocess.run([sys.executable, str(script), "streamed"], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.count(": ok") == 2, out.stdout
    assert "Drude" in out.stdout and "CPML, points in files" in out.stdout, out.stdout


def _fake_gpu(monkeypatch, free: int = 2**40) -> None:
    import diamondlab.engine.backends.yee_cuda as yee_cuda

    monkeypatch.setattr(yee_cuda.YeeCUDABackend, "available", staticmethod(lambda: True))
    monkeypatch.setattr(yee_cuda, "device_memory", lambda: (free, 2**41))


def test_the_plan_streams_every_maxwell_scene_but_periodic_faces(monkeypatch):
    """Which scenes stream is decided once, where the plan knows the physics: media (Drude media too), a
    CPML, dipoles, probes and monitors stream on the GPU; periodic faces (which the register-tile sweep does
    not run) go window by window, as stepwise does."""
    from diamondlab.engine.backends.yee_cuda import YeeCUDABackend
    from diamondlab.engine.scale.window import streamed_backend
    from diamondlab.engine.scale.yee_window import StreamedYeeCUDABackend
    from diamondlab.maxwell import DFTPlane, Dipole, Drude, Probe, Ricker, Sphere

    _fake_gpu(monkeypatch)
    assert streamed_backend(YeeCUDABackend) is StreamedYeeCUDABackend
    shape, kw = (80, 16, 8), {"backend": "cuda", "size": 1, "nt": 2, "window": 40}
    drude = [Sphere((40, 8, 4), 3, Drude(1.0, 1.0, 0.1))]
    assert MaxwellPlan.build(shape, 2, **kw).streamed is StreamedYeeCUDABackend
    assert MaxwellPlan.build(shape, 4, materials=drude, algorithm="diamondtorre", **kw).streamed is not None
    streamed = [{"pml": 2}, {"sources": [Dipole((40, 8, 4), "Ez", Ricker(0.1))]},
                {"probes": [Probe((9, 8, 4))]}, {"monitors": [DFTPlane("z", 4, [0.1])]}]
    for physics in streamed:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a dipole that adds nothing visible: not the point
            assert MaxwellPlan.build(shape, 2, algorithm="diamondtorre", **physics, **kw).streamed is not None
    assert MaxwellPlan.build(shape, 2, algorithm="diamondtorre", periodic="z", **kw).streamed is None
    assert MaxwellPlan.build(shape, 2, algorithm="stepwise", **kw).streamed is None  # no sweep to stream


def test_a_streamed_maxwell_window_checks_its_plan_and_the_gpu_memory(monkeypatch):
    """The stream plan must fit the window (named in steps of two half steps); the rings and the whole grid's
    material index and point flags must fit the GPU's free memory, before anything is allocated."""
    from diamondlab.engine.backends.cuda import MEMORY_MARGIN_BYTES

    _fake_gpu(monkeypatch)
    shape = (80, 16, 8)
    with pytest.raises(ValueError, match=r"window=20 x rows cannot stream this sweep \(NO=4, DTS=1, Nt=2\): "
                                         r"use window >= 29"):
        MaxwellPlan.build(shape, 4, backend="cuda", size=1, nt=2, window=20)
    plan = MaxwellPlan.build(shape, 4, backend="cuda", size=1, nt=2, window=29)
    assert plan.streamed is not None
    rings = 3 * 3 * 4 * (29 + 2 * 2 * 2) * 20 * 12  # E, H, J: 3 components of (window + 2 pad) padded rows
    need = rings + 4 * 80 * 16 * 8 + MEMORY_MARGIN_BYTES  # the material index (3 B a cell), point flags (1 B)
    _fake_gpu(monkeypatch, need - 1)
    with pytest.raises(ValueError, match="the window's rings and the whole grid's material index need"):
        MaxwellPlan.build(shape, 4, backend="cuda", size=1, nt=2, window=29)
    _fake_gpu(monkeypatch, need)
    MaxwellPlan.build(shape, 4, backend="cuda", size=1, nt=2, window=29)


def test_a_streamed_maxwell_window_takes_a_taller_sweep_unless_nt_is_given(monkeypatch):
    """A bus of B bytes/s a way caps a streamed sweep near B Nt / 24 Yee updates/s: without nt the window
    runs Nt = 32 (halved until its sweep streams through the window), the in-memory run its own default."""
    from diamondlab.engine.backends.yee_cuda import YeeCUDABackend

    _fake_gpu(monkeypatch)
    shape = (600, 16, 8)
    default = YeeCUDABackend.default_tiling(2)[1]
    assert MaxwellPlan.build(shape, 2, backend="cuda").nt == default < 32
    assert MaxwellPlan.build(shape, 2, backend="cuda", window=200).nt == 32
    assert MaxwellPlan.build(shape, 2, backend="cuda", window=80).nt == 16  # Nt = 32 needs more rows
    assert MaxwellPlan.build(shape, 2, backend="cuda", window=200, nt=8).nt == 8
    assert MaxwellPlan.build(shape, 2, backend="cuda", window=200, periodic="z",
                             algorithm="diamondtorre").nt == default  # window by window


def test_auto_streams_a_maxwell_window_where_in_memory_it_would_run_stepwise(monkeypatch):
    """A CPML scene runs stepwise in memory on the GPU (``algorithm="auto"``), but stepwise cannot stream:
    through a window auto runs DiamondTorre, streamed, and says why; periodic faces stay stepwise."""
    _fake_gpu(monkeypatch)
    shape = (600, 16, 8)
    with pytest.warns(UserWarning, match="runs stepwise"):
        assert MaxwellPlan.build(shape, 2, backend="cuda", pml=2).algorithm == "stepwise"
    plan = MaxwellPlan.build(shape, 2, backend="cuda", pml=2, window=200)
    assert plan.algorithm == "diamondtorre" and plan.streamed is not None
    assert "streams DiamondTorre sweeps" in plan.algorithm_reason
    with pytest.warns(UserWarning, match="runs stepwise"):
        assert MaxwellPlan.build(shape, 2, backend="cuda", pml=2, window=200, periodic="z").streamed is None
