"""The backend contract, written once for every target that runs here (the ``target`` fixture).

DiamondTorre equals stepwise bit for bit on each backend, with and without
physics (a velocity model, a sponge, sources and receivers), and each
backend agrees with the CPU to float32 rounding.  On a machine without a
GPU, the CUDA target runs under Numba's CUDA simulator in a session of its
own (:func:`test_the_contract_under_the_cuda_simulator`).
"""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from diamondlab.engine.run.simulation import Simulation
from diamondlab.media import layered_model
from diamondlab.sources import Receiver, Source

SHAPE = (14, 13, 6)
#: (NO, DTS) pairs every backend builds: registers only, and (6, 2) with level n-1 in shared memory
PAIRS = [(2, 2), (4, 1), (6, 2), (8, 1)]


def _simulation(target, order, size, algorithm, physics, shape=SHAPE):
    kwargs = {}
    if physics:
        kwargs = dict(
            velocity=layered_model(shape, (1.0, 1.3)), sponge=2, initial="zero",
            sources=[Source((6.5, 5.2, 3.0), frequency=0.05, units="grid", delay=1.0)],
            receivers=[Receiver((3.0, 4.0, 2.5), units="grid"), Receiver((6, 5, 3), units="grid")],
        )  # fmt: skip
    else:
        kwargs["initial"] = tuple(np.random.default_rng(order).standard_normal((2, *shape), dtype=np.float32))
    return Simulation(shape, order, size=size, nt=3, backend=target, algorithm=algorithm, courant=0.3,
                      **kwargs)  # fmt: skip


@pytest.mark.parametrize("physics", [False, True], ids=["bare", "physics"])
@pytest.mark.parametrize(("order", "size"), PAIRS)
def test_diamondtorre_equals_stepwise_bit_for_bit(target, order, size, physics):
    dt, sw = (_simulation(target, order, size, alg, physics) for alg in ("diamondtorre", "stepwise"))
    for sim in (dt, sw):
        sim.run(5)  # a whole sweep of Nt = 3 and a shorter one
    assert dt.backend_name == sw.backend_name == target
    assert all(np.array_equal(a, b) for a, b in zip(dt.fields, sw.fields, strict=True))
    assert np.array_equal(dt.traces, sw.traces)
    if physics:
        assert dt.traces.shape == (5, 2) and np.abs(dt.traces).max() > 0


@pytest.mark.parametrize(("order", "size"), PAIRS)
def test_every_backend_agrees_with_the_cpu_to_rounding(target, order, size):
    runs = [_simulation(name, order, size, "diamondtorre", True) for name in (target, "cpu")]
    for sim in runs:
        sim.run(5)
    (field, traces), (cpu_field, cpu_traces) = ((s.field, s.traces) for s in runs)
    assert np.abs(field - cpu_field).max() <= 1e-5 * np.abs(cpu_field).max()
    assert np.abs(traces - cpu_traces).max() <= 1e-5 * np.abs(cpu_traces).max()


@pytest.mark.slow
def test_the_contract_under_the_cuda_simulator(tmp_path):
    """This module's tests with target cuda under the simulator (NO=2 DTS=2: it is slow; the other pairs run
    under the simulator in ``tests/kernels/cuda_sim_cases.py``), in a subprocess."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        pytest.skip("already under the simulator")
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1", "DIAMONDLAB_TEST_TARGETS": "cuda"}
    env.setdefault("DIAMONDLAB_CACHE", str(tmp_path))
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(Path(__file__)),
         "-k", "2-2 and not simulator"], env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert "3 passed" in out.stdout, out.stdout[-2000:]
