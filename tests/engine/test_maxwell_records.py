"""A Maxwell run's record (``save_run``/``load_run`` of engine/io.py) and its resume: run(a) + save + resume +
run(b) equals run(a + b) bit for bit, with a CPML, a Drude sphere, a dipole and probes."""

import numpy as np
import pytest

from diamondlab.engine.equations.maxwell_plan import MaxwellPlan
from diamondlab.engine.equations.maxwell_simulation import MaxwellSimulation
from diamondlab.engine.measure.memory import run_host_bytes
from diamondlab.engine.outputs.io import check_maxwell_state, load_run, maxwell_record_bytes, save_run
from diamondlab.maxwell import CPML, Dielectric, Dipole, Drude, GaussianPulse, Probe, Sphere

SHAPE = (20, 18, 16)
SCENE = dict(
    pml=CPML(3),
    materials=[Sphere((10, 9, 8), 3, Drude(eps_inf=1.0, wp=0.6, gamma=0.02))],
    sources=[Dipole((6, 9, 8), "Ez", GaussianPulse(0.15, 0.1))],
    probes=[Probe((14, 9, 8), "Ez"), Probe((10, 13, 8), "Hx")],
)  # fmt: skip


def _sim(algorithm="diamondtorre", initial="zero", **changes):
    return MaxwellSimulation(SHAPE, 2, backend="cpu", algorithm=algorithm, nt=4, initial=initial,
                             **{**SCENE, **changes})


@pytest.fixture(scope="module")
def full():
    """The reference: 30 steps in one run, by each algorithm."""
    out = {}
    for algorithm in ("stepwise", "diamondtorre"):
        sim = _sim(algorithm)
        sim.run(30)
        out[algorithm] = sim
    return out


@pytest.mark.parametrize("algorithm", ["stepwise", "diamondtorre"])
def test_run_save_resume_run_equals_one_run_bit_for_bit(algorithm, full, tmp_path):
    first = _sim(algorithm)
    first.run(17)  # not a whole number of sweeps (Nt = 4)
    record = load_run(save_run(tmp_path / "a.npz", first))
    assert record["equation"] == "maxwell" and record["step"] == 17 and record["shape"] == SHAPE
    assert {"E", "H", "J", "psi_x", "psi_y", "psi_z"} <= set(record)
    assert record["psi_x"].shape == (4, 6, 18, 16) and record["traces"].shape == (17, 2)
    resumed = _sim(algorithm, initial=record)
    assert resumed.time_step == 17
    resumed.run(13)
    whole = full[algorithm]
    mine, theirs = resumed.state(), whole.state()
    assert sorted(mine) == sorted(theirs) == ["E", "H", "J", "psi_x", "psi_y", "psi_z", "step"]
    for key in mine:
        assert np.array_equal(mine[key], theirs[key]), key
    assert np.abs(mine["J"]).max() > 0 and np.abs(mine["psi_x"]).max() > 0  # the state is not trivial
    assert np.array_equal(resumed.traces, whole.traces[17:])
    assert np.array_equal(resumed.trace_times, whole.trace_times[17:])
    # every part of the state matters: resumed without the CPML's memory, the run differs
    partial = _sim(algorithm, initial={k: v for k, v in record.items() if k in ("E", "H", "J", "step")})
    partial.run(13)
    assert not np.array_equal(partial.E, whole.E)


def test_both_algorithms_agree_and_reset_goes_back_to_the_record(full, tmp_path):
    for key, value in full["stepwise"].state().items():
        assert np.array_equal(value, full["diamondtorre"].state()[key]), key
    first = _sim()
    first.run(16)
    state = first.state()
    resumed = _sim(initial=state)
    resumed.run(4)
    resumed.reset()
    assert resumed.time_step == 16 and resumed.traces.shape == (0, 2)
    for key, value in resumed.state().items():
        assert np.array_equal(value, state[key]), key
    resumed.reset("zero")
    assert not resumed.E.any() and resumed.time_step == 16


def test_a_record_of_another_run_is_refused_naming_the_mismatch(tmp_path):
    sim = _sim()  # no step run: nothing compiles
    record = load_run(save_run(tmp_path / "a.npz", sim))
    plan = MaxwellPlan.build(SHAPE, 2, backend="cpu", **SCENE)
    assert sorted(check_maxwell_state(record, plan)) == ["E", "H", "J", "psi_x", "psi_y", "psi_z", "step"]
    cases = [
        (dict(shape=(20, 18, 18)), "the record's shape (20, 18, 16) differs from this run's (20, 18, 18)"),
        (dict(order=4), "the record's order 2 differs from this run's 4"),
        (dict(courant=0.3), "(the Courant number or the spacing differs)"),
        (dict(pml=CPML(4)), "the record's pml CPML(width=3"),
        (dict(materials=[Sphere((10, 9, 8), 3, Dielectric(2.0))]), "made with other materials"),
    ]
    for changes, text in cases:
        kw = {**SCENE, **changes}
        shape = kw.pop("shape", SHAPE)
        order = kw.pop("order", 2)
        other = MaxwellPlan.build(shape, order, backend="cpu", **kw)
        with pytest.raises(ValueError, match="^initial: ") as err:
            check_maxwell_state(record, other)
        assert text in str(err.value), (changes, err.value)
    acoustic = {"equation": "acoustic"}
    with pytest.raises(ValueError, match="a record of the acoustic equation cannot start a Maxwell run"):
        check_maxwell_state(acoustic, plan)
    bad = {"E": np.zeros((3, 4, 4, 4)), "H": record["H"]}
    with pytest.raises(ValueError, match=r"E must have shape \(3, 20, 18, 16\); got \(3, 4, 4, 4\)"):
        check_maxwell_state(bad, plan)
    nan = record["H"].copy()
    nan[0, 1, 1, 1] = np.nan
    with pytest.raises(ValueError, match="H must be finite floating values"):
        check_maxwell_state({"E": record["E"], "H": nan}, plan)
    no_pml = MaxwellPlan.build(SHAPE, 2, backend="cpu", materials=SCENE["materials"])
    with pytest.raises(ValueError, match="holds the CPML's psi_x but this run has no CPML"):
        check_maxwell_state({k: record[k] for k in ("E", "H", "psi_x")}, no_pml)
    with pytest.raises(ValueError, match="holds a Drude current J but this run has no Drude medium"):
        check_maxwell_state({k: record[k] for k in ("E", "H", "J")}, MaxwellPlan.build(SHAPE, 2))


def test_a_maxwell_record_is_not_an_acoustic_one_and_its_bytes_are_counted(tmp_path):
    sim = MaxwellSimulation((16, 16, 16), 2, backend="cpu", pml=2)
    path = save_run(tmp_path / "m.npz", sim)
    np.savez(tmp_path / "cut.npz", **{k: v for k, v in np.load(path).items() if k != "H"})
    with pytest.raises(ValueError, match=r"not a Maxwell run record written by --save / save_run \(missing"):
        load_run(tmp_path / "cut.npz")
    plan = sim.plan
    state = 24 * 16**3 + 16 * 2 * 2 * 3 * 16 * 16
    assert maxwell_record_bytes(plan) == state == sum(v.nbytes for v in sim.state().values() if np.ndim(v))
    parts = run_host_bytes(plan.shape, 2, "cpu", saved=True, state_bytes=plan.host_bytes, saved_bytes=state)
    assert parts["--save's copy of the state at the end"] == state
    assert "--save's copies of the initial and final layers" not in parts
