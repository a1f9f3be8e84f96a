import json
import time

import pytest

from diamondlab.engine import autotune as autotune_module
from diamondlab.engine import plan as plan_module
from diamondlab.engine.autotune import Tuning, autotune, tuning_key
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
    assert isinstance(best, Tuning) and best.options == {}
    assert (best.size, best.nt) in fitting and len(said) == len(fitting)
    record = json.loads((tmp_path / "autotune.json").read_text())
    assert record[tuning_key("cpu", 2, shape)]["best"] == [best.size, best.nt]
    again = []
    assert autotune(params, shape, "cpu", log=again.append) == best and again == []
    sim = Simulation(shape, 2, backend="cpu", size="auto", nt="auto")
    assert (sim.size, sim.nt, sim.backend_options) == best


def test_auto_size_keeps_a_given_nt(tmp_path, monkeypatch):
    monkeypatch.setenv("DIAMONDLAB_CACHE", str(tmp_path))
    sim = Simulation((26, 24, 16), 2, backend="cpu", size="auto", nt=5)
    assert sim.nt == 5 and sim.size in (8, 12)


class OptionBackend(CPUBackend):
    """A CPU backend with one speed option (``slow``) for the tuner to try."""

    made: list[dict] = []
    OPTIONS = ("slow",)

    @classmethod
    def _check(cls, params, shape, size, nt, options):
        return {**super()._check(params, shape, size, nt, {}), "slow": bool(options.get("slow", False))}

    def _build(self, params, shape, size, nt, options):
        super()._build(params, shape, size, nt, options)
        self.slow = options["slow"]
        OptionBackend.made.append({"slow": self.slow})

    @classmethod
    def tuning_candidates(cls, order):
        return [(8, 8)]

    @classmethod
    def tuning_options(cls, order, size):
        return [{"slow": True}, {"slow": False}]

    def sweep(self, height, src_samples=None):
        if self.slow:
            time.sleep(0.05)
        return super().sweep(height, src_samples)


def test_autotune_picks_and_caches_the_fastest_options(tmp_path, monkeypatch):
    monkeypatch.setenv("DIAMONDLAB_CACHE", str(tmp_path))
    for module in (autotune_module, plan_module):
        monkeypatch.setattr(module, "get_backend", lambda name: OptionBackend)
    shape = (20, 18, 8)
    said = []
    best = autotune(WaveParameters(order=2), shape, "cpu", repeats=1, log=said.append)
    assert best == Tuning(8, 8, {"slow": False})
    assert [line.split(":")[0] for line in said] == ["DTS=8 Nt=8 slow=True", "DTS=8 Nt=8 slow=False"]
    record = json.loads((tmp_path / "autotune.json").read_text())[tuning_key("cpu", 2, shape)]
    assert record["options"] == {"slow": False} and len(record["seconds_per_step"]) == 2
    OptionBackend.made.clear()
    sim = Simulation(shape, 2, backend="cpu", size="auto", nt="auto")  # from the cache: no timing
    assert OptionBackend.made == [{"slow": False}] and sim.backend_options == {"slow": False}
    sim = Simulation(shape, 2, backend="cpu", size="auto", nt="auto", backend_options={"slow": True})
    assert sim.backend.slow  # the caller's options win


def test_auto_on_a_machine_without_gpu_ignores_gpu_options(monkeypatch):
    monkeypatch.setattr(plan_module, "resolve_backend", lambda name: "cpu")
    with pytest.warns(UserWarning, match=r"backend 'auto' runs on the CPU here: backend_options"):
        sim = Simulation((16, 16, 8), 2, backend="auto", size=2, nt=4, backend_options={"band": 32})
    assert sim.backend_name == "cpu" and sim.backend_options == {}


def test_backend_options_the_backend_does_not_take_are_a_value_error():
    match = r"backend_options \['pipelined'\] do not apply to backend 'cpu' \(it takes: none\)"
    with pytest.raises(ValueError, match=match):
        Simulation((16, 16, 8), 2, backend="cpu", size=2, nt=4, backend_options={"pipelined": True})
    with pytest.raises(TypeError, match="backend_options must be a dict"):
        Simulation((16, 16, 8), 2, backend="cpu", size=2, nt=4, backend_options=[("band", 2)])
