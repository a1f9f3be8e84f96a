"""The run plan: one place that normalises and checks a run, before anything is allocated."""

import warnings

import numpy as np
import pytest

from diamondlab.engine.backends import Backend
from diamondlab.engine.backends.cpu import CPUBackend
from diamondlab.engine.run import plan as plan_module
from diamondlab.engine.run.plan import RunPlan, default_tiling, fitted_size
from diamondlab.engine.run.simulation import Simulation
from diamondlab.media import layered_model
from diamondlab.sources import Source


def test_a_plan_checks_everything_without_allocating(monkeypatch):
    built = []
    monkeypatch.setattr(CPUBackend, "_build", lambda *a: built.append(a))
    plan = RunPlan.build((40, 36, 20), 4, backend="cpu", velocity=layered_model((40, 36, 20)), sponge=5,
                         sources=[Source((20, 18, 10), frequency=40.0)], receivers=[(10, 10, 10)])
    assert plan.shape == (40, 36, 20) and plan.backend == "cpu" and plan.physics.needs_backend
    assert (plan.size, plan.nt) == (6, 48) and dict(plan.options) == {}
    assert plan.params.velocity == 2500.0 and plan.physics.sponge == 5
    assert not built
    with pytest.raises(ValueError, match=r"sponge width 12 leaves no interior .* use width <= 9"):
        RunPlan.build((40, 36, 20), 4, backend="cpu", sponge=12)
    with pytest.raises(ValueError, match=r"DTS"):
        RunPlan.build((40, 36, 20), 4, backend="cpu", size=40)
    assert not built


def test_the_simulation_runs_its_plan():
    sim = Simulation((24, 20, 16), 2, backend="cpu", nt=4)
    size = default_tiling("cpu", 2, (24, 20, 16))[0]
    assert (sim.plan.size, sim.plan.nt) == (sim.size, sim.nt) == (size, 4)
    assert sim.backend.size == sim.size and sim.backend_options == dict(sim.plan.options) == {}


def test_default_tiles_fit_the_grid_and_the_backend():
    assert default_tiling("cpu", 2, (256, 256, 256)) == CPUBackend.TILING[2]
    assert default_tiling("cpu", 8, (20, 64, 64)) == (2, 48)  # 2 DTS ShS = 16 cells fit 20
    assert fitted_size("cpu", 6, 2, (64, 64, 4000)) == 2
    assert fitted_size("cuda", 6, 2, (64, 64, 416)) == 1  # a class fact: no GPU needed


def test_unknown_backend_options_name_the_allowed_ones():
    from diamondlab.engine.backends.cuda import CUDABackend

    with pytest.raises(ValueError, match=r"backend_options \['bands'\] do not apply to backend 'cuda' "
                                         r"\(it takes: max_registers, specialize, left_from_memory, "
                                         r"pipelined, band, chunk, launch, kappa_in_registers, "
                                         r"boundary_profiles, exchange_barrier, prefetch\)"):
        CUDABackend.check(None, (8, 8, 8), 1, 1, {"bands": 3})


def test_backends_must_implement_the_contract(monkeypatch):
    class Incomplete(Backend):
        name = "incomplete"

    with pytest.raises(TypeError, match="abstract"):
        Incomplete(None, (8, 8, 8), 1, 1)
    monkeypatch.setitem(plan_module.get_backend.__globals__["BACKENDS"], "odd", "numpy:ndarray")
    with pytest.raises(TypeError, match=r"backend 'odd' \(numpy:ndarray\) must be a subclass of"):
        RunPlan.build((16, 16, 16), backend="odd")


def test_a_velocity_model_of_one_value_runs_the_constant_k_kernels():
    sim = Simulation((16, 16, 16), 2, backend="cpu", velocity=np.full((16, 16, 16), 2.0), sponge=3, nt=4)
    assert sim.backend._medium[0] == "sponge" and np.ndim(sim.backend._medium[1]) == 0


def test_warnings_of_the_plan_point_at_the_caller(monkeypatch):
    monkeypatch.setattr(plan_module, "resolve_backend", lambda name: "cpu")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        Simulation((16, 16, 8), 2, backend="auto", size=2, nt=4, backend_options={"band": 32})
    assert caught[0].filename == __file__


def test_algorithm_auto_runs_what_the_backend_chooses_and_says_why(monkeypatch):
    plan = RunPlan.build((16, 16, 16), 2, backend="cpu")
    assert plan.algorithm == "diamondtorre" and "diamondlab bench --backend cpu" in plan.algorithm_reason
    reason = "stepwise measured faster here"
    monkeypatch.setattr(CPUBackend, "choose_algorithm", classmethod(lambda cls, *a: ("stepwise", reason)))
    with pytest.warns(UserWarning, match=f"algorithm 'auto' runs stepwise: {reason}"):
        sim = Simulation((16, 16, 16), 2, backend="cpu", nt=4)
    assert (sim.algorithm, sim.algorithm_reason) == ("stepwise", reason)
    sim.run(6)
    reference = Simulation((16, 16, 16), 2, backend="cpu", nt=4, algorithm="diamondtorre")
    reference.run(6)
    assert np.array_equal(sim.field, reference.field)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # asked for explicitly: no warning, the choice is the user's
        asked = RunPlan.build((16, 16, 16), 2, backend="cpu", algorithm="diamondtorre")
    assert asked.algorithm_reason == "asked for"
    with pytest.raises(ValueError, match=r"algorithm must be one of \('auto', 'diamondtorre', 'stepwise'\)"):
        RunPlan.build((16, 16, 16), 2, backend="cpu", algorithm="fast")


def test_the_gpu_runs_stepwise_only_where_diamondtorre_measured_slower(monkeypatch):
    """Every medium runs DiamondTorre at 256^3 on Hopper (K per cell 1.00-1.58x, layered 0.98-1.65x since
    K rides in registers: BENCHMARKS.md); a tuning's ``stepwise_with_model`` orders run K per cell
    stepwise; NO=8 on a column over 512 cells runs stepwise."""
    import dataclasses

    from diamondlab.engine.backends.cuda import CUDABackend

    for order in (2, 4, 6, 8):
        for medium in ("constant", "sponge", "layered", "model"):
            assert CUDABackend.choose_algorithm(order, (256, 256, 256), medium)[0] == "diamondtorre"
    slower = dataclasses.replace(CUDABackend.tuning(), stepwise_with_model=(6,))
    monkeypatch.setattr(CUDABackend, "tuning", staticmethod(lambda: slower))
    algorithm, why = CUDABackend.choose_algorithm(6, (256, 256, 256), "model")
    assert algorithm == "stepwise" and "velocity model" in why and "NO=6" in why
    assert CUDABackend.choose_algorithm(6, (256, 256, 256), "layered")[0] == "diamondtorre"
    monkeypatch.undo()
    # NO=8 on a column of 512 cells keeps level n-1 in shared memory (1.53x at 512x512x1280, run as
    # 1280x512x512; 0.72x with it in registers); on a taller one it spills even so: stepwise
    for medium in ("constant", "sponge"):  # 1.52x and (a source, a receiver, the sponge) 1.17x
        assert CUDABackend.choose_algorithm(8, (1280, 512, 512), medium)[0] == "diamondtorre"
    algorithm, why = CUDABackend.choose_algorithm(8, (1280, 512, 512), "model")  # 0.88x
    assert algorithm == "stepwise" and "K per cell" in why
    algorithm, why = CUDABackend.choose_algorithm(8, (1024, 512, 768))
    assert algorithm == "stepwise" and "z column of 768 cells" in why and "80 registers" in why
    assert CUDABackend.choose_algorithm(2, (1024, 512, 768))[0] == "diamondtorre"
