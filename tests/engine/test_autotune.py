import json

from diamondlab.engine.autotune import autotune, tuning_key
from diamondlab.engine.cpu_backend import CPUBackend
from diamondlab.engine.simulation import Simulation
from diamondlab.numerics import WaveParameters


def test_autotune_measures_once_and_caches(tmp_path, monkeypatch):
    monkeypatch.setenv("DIAMONDLAB_CACHE", str(tmp_path))
    shape = (26, 24, 16)  # R = 16 does not fit: only DTS 8 and 12 are measured at NO=2
    params = WaveParameters(order=2)
    said = []
    best = autotune(params, shape, "cpu", repeats=1, log=said.append)
    fitting = [c for c in CPUBackend.tuning_candidates(2) if 2 * c[0] <= 24]
    assert best in fitting and len(said) == len(fitting)
    record = json.loads((tmp_path / "autotune.json").read_text())
    assert record[tuning_key("cpu", 2, shape)]["best"] == list(best)
    again = []
    assert autotune(params, shape, "cpu", log=again.append) == best and again == []
    sim = Simulation(shape, 2, backend="cpu", size="auto", nt="auto")
    assert (sim.size, sim.nt) == best


def test_auto_size_keeps_a_given_nt(tmp_path, monkeypatch):
    monkeypatch.setenv("DIAMONDLAB_CACHE", str(tmp_path))
    sim = Simulation((26, 24, 16), 2, backend="cpu", size="auto", nt=5)
    assert sim.nt == 5 and sim.size in (8, 12)
