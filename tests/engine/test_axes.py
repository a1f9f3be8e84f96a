"""Tall columns: a grid run with x and z swapped gives the caller's axes back, bit for bit."""

import warnings

import numpy as np
import pytest

from diamondlab import Simulation
from diamondlab.engine.backends.cpu import CPUBackend
from diamondlab.engine.backends.cuda import CUDABackend
from diamondlab.media import layered_model
from diamondlab.sources import Receiver, Source

SHAPE = (12, 14, 20)


def _physics(swapped: bool) -> dict:
    def at(x, y, z):
        return (z, y, x) if swapped else (x, y, z)

    velocity = layered_model(SHAPE, (1.0, 1.4, 1.8))
    return {"initial": "gaussian", "sponge": 3,
            "velocity": velocity.transpose(2, 1, 0).copy() if swapped else velocity,
            "sources": [Source(at(5, 7, 9), units="grid", frequency=0.1, delay=3.0)],
            "receivers": [Receiver(at(3, 4, 15), units="grid"), Receiver(at(9, 9, 4), units="grid")]}


@pytest.fixture
def cpu_swaps_tall_columns(monkeypatch):
    """The CPU engine holds any column; here it swaps x and z as the GPU does for a column too tall."""
    monkeypatch.setattr(CPUBackend, "swaps_xz", classmethod(lambda cls, order, shape: shape[2] > shape[0]))


@pytest.mark.usefixtures("cpu_swaps_tall_columns")
def test_a_swapped_run_is_the_transposed_problem_bit_for_bit():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the wavelet peaks after these few steps: not the point here
        runs = {alg: Simulation(SHAPE, 2, backend="cpu", size=2, nt=3, algorithm=alg, **_physics(False))
                for alg in ("diamondtorre", "stepwise")}
        ref = Simulation(SHAPE[::-1], 2, backend="cpu", size=2, nt=3, algorithm="diamondtorre",
                         **_physics(True))
        for sim in (*runs.values(), ref):
            sim.run(8)
    sim = runs["diamondtorre"]
    assert sim.plan.swap_xz and sim.plan.device_shape == SHAPE[::-1] and "x and z swapped" in sim.backend.name
    assert sim.field.shape == SHAPE and sim.field.flags.c_contiguous
    assert all(np.array_equal(a, b.transpose(2, 1, 0)) for a, b in zip(sim.fields, ref.fields, strict=True))
    assert np.array_equal(sim.current_view(), ref.current_view().transpose(2, 1, 0))
    assert np.array_equal(sim.traces, ref.traces) and np.abs(ref.traces).max() > 0
    xy, xz, yz = sim.current_planes((5, 6, 7), (2, 1, 3))
    rxy, rxz, ryz = ref.current_planes((7, 6, 5), (3, 1, 2))
    assert np.array_equal(xy, ryz.T) and np.array_equal(xz, rxz.T) and np.array_equal(yz, rxy.T)
    assert np.array_equal(xy, sim.field[1::2, :, 7])  # the caller's axes, sampled from index % strides
    assert all(np.array_equal(a, b) for a, b in zip(sim.fields, runs["stepwise"].fields, strict=True))


@pytest.mark.usefixtures("cpu_swaps_tall_columns")
def test_a_swapped_grid_takes_its_fields_in_the_callers_axes_and_refuses_what_it_cannot_split():
    sim = Simulation(SHAPE, 2, backend="cpu", size=1, nt=2, initial="zero")
    field = np.random.default_rng(1).standard_normal(SHAPE).astype(np.float32)
    sim.reset((field, 2 * field))
    assert np.array_equal(sim.fields[0], field) and np.array_equal(sim.field, 2 * field)
    with pytest.raises(ValueError, match="x and z swapped, which MPI ranks and a calculation window do not"):
        Simulation(SHAPE, 2, backend="cpu", window=8)


def test_the_gpu_swaps_only_a_column_taller_than_a_block_holds():
    assert CUDABackend.swaps_xz(2, (512, 512, 1280)) and CUDABackend.swaps_xz(8, (512, 512, 900))
    assert not CUDABackend.swaps_xz(2, (512, 512, 1024)) and not CUDABackend.swaps_xz(2, (1100, 64, 1280))


@pytest.mark.gpu
@pytest.mark.parametrize(("order", "shape"), [(2, (40, 24, 1100)), (8, (36, 20, 900))])
def test_a_tall_column_runs_on_the_gpu_bit_for_bit_stepwise_and_near_the_cpu(order, shape):
    sims = [Simulation(shape, order, backend=b, algorithm=a, nt=4, initial="gaussian")
            for b, a in (("cuda", "diamondtorre"), ("cuda", "stepwise"), ("cpu", "diamondtorre"))]
    for sim in sims:
        sim.run(9)
    gpu, stepwise, cpu = sims
    assert gpu.plan.swap_xz and not cpu.plan.swap_xz
    assert all(np.array_equal(a, b) for a, b in zip(gpu.fields, stepwise.fields, strict=True))
    assert np.abs(gpu.field - cpu.field).max() <= 1e-5 * np.abs(cpu.field).max()


def test_a_wrapper_passes_its_inner_backends_kernel_resources_on():
    from diamondlab.engine.backends import Wrapper

    class Inner:
        params, size, nt = None, 1, 1

        def resources(self):
            return {"registers": 128, "local_bytes": 0, "shared_bytes": 16}

    assert Wrapper(Inner(), (4, 4, 4), "swapped").resources() == Inner().resources()
    del Inner.resources  # a backend without kernels (the CPU's)
    assert Wrapper(Inner(), (4, 4, 4), "swapped").resources() is None
