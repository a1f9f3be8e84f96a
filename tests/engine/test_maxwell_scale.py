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
