import json
import os
import re
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest

from diamondlab import caches
from diamondlab.engine.backends.cpu import CPUBackend
from diamondlab.engine.run import autotune as autotune_module
from diamondlab.engine.run import plan as plan_module
from diamondlab.engine.run.autotune import Tuning, autotune, tuning_fingerprint, tuning_key
from diamondlab.engine.run.simulation import Simulation
from diamondlab.kernels import generated
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


SMALL = (26, 24, 16)


def _measured_again() -> bool:
    said = []
    autotune(WaveParameters(order=2), SMALL, "cpu", repeats=1, log=said.append)
    return bool(said)


def _edit(record: dict, field: str) -> None:
    if field == "cpu model":
        record["cpu"]["model"] = "another CPU"
    elif field == "numba version":
        record["software"]["numba"] = "0.59.0"
    else:
        record["generator"] = str(generated.GENERATOR_VERSION - 1)


@pytest.mark.parametrize("field", ["cpu model", "numba version", "generator version"])
def test_a_tuning_recorded_for_another_cpu_numba_or_generator_is_not_used(tmp_path, monkeypatch, field):
    monkeypatch.setenv("DIAMONDLAB_CACHE", str(tmp_path))
    assert _measured_again() and not _measured_again()  # tuned once, then from the cache
    path = tmp_path / caches.TUNINGS
    data = json.loads(path.read_text())
    (key,) = data
    assert data[key]["fingerprint"] == tuning_fingerprint("cpu")
    _edit(data[key]["fingerprint"], field)
    path.write_text(json.dumps(data))
    assert _measured_again()  # the record says it was made elsewhere: measured anew
    assert json.loads(path.read_text())[key]["fingerprint"] == tuning_fingerprint("cpu")


@pytest.mark.parametrize("field", ["cpu model", "numba version", "generator version"])
def test_a_tuning_is_not_used_once_the_cpu_numba_or_generator_changes(tmp_path, monkeypatch, field):
    monkeypatch.setenv("DIAMONDLAB_CACHE", str(tmp_path))
    assert _measured_again() and not _measured_again()
    before = tuning_key("cpu", 2, SMALL)
    cpu, software = caches.cpu_description(), caches.software_versions()
    if field == "cpu model":
        monkeypatch.setattr(caches, "cpu_description", lambda: {**cpu, "model": "another CPU"})
    elif field == "numba version":
        monkeypatch.setattr(caches, "software_versions", lambda: {**software, "numba": "9.99.0"})
    else:
        monkeypatch.setattr(generated, "GENERATOR_VERSION", generated.GENERATOR_VERSION + 1)
    assert tuning_key("cpu", 2, SMALL) != before
    assert _measured_again() and not _measured_again()
    assert len(json.loads((tmp_path / caches.TUNINGS).read_text())) == 2  # the other machine's is kept


def test_the_key_names_backend_order_and_shape():
    key = tuning_key("cpu", 4, (10, 20, 30))
    assert key.startswith("cpu|NO=4|10x20x30|") and key != tuning_key("cpu", 4, (10, 20, 31))
    assert key != tuning_key("cpu", 2, (10, 20, 30))


# one process tuning: every read of the tunings waits (up to 2 s) until the other process reads too, so
# that without the file lock both would read the file before either stored its tuning
_TUNER = """
import pathlib, sys, time
from diamondlab import caches
from diamondlab.engine.run.autotune import autotune
from diamondlab.numerics import WaveParameters

me, other, folder, shape = sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3]), sys.argv[4]
read, calls = caches.read_json, [0]

def meeting_read(path, **kwargs):
    if pathlib.Path(path).name != caches.TUNINGS:  # the manifest is another file, with its own lock
        return read(path, **kwargs)
    calls[0] += 1
    (folder / f"{me}.{calls[0]}").touch()
    deadline = time.monotonic() + 2.0
    while not (folder / f"{other}.{calls[0]}").exists() and time.monotonic() < deadline:
        time.sleep(0.005)
    return read(path, **kwargs)

caches.read_json = meeting_read
print(tuple(autotune(WaveParameters(order=2), tuple(map(int, shape.split("x"))), "cpu", repeats=1))[:2])
"""


@pytest.mark.slow
def test_two_processes_tuning_at_once_leave_both_entries(tmp_path):
    env = {**os.environ, "DIAMONDLAB_CACHE": str(tmp_path)}
    shapes = {"a": "26x24x16", "b": "26x24x17"}
    procs = [
        subprocess.Popen([sys.executable, "-c", _TUNER, me, other, str(tmp_path), shapes[me]], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for me, other in (("a", "b"), ("b", "a"))
    ]  # fmt: skip
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    data = json.loads((tmp_path / caches.TUNINGS).read_text())
    assert sorted(entry["question"]["shape"] for entry in data.values()) == [[26, 24, 16], [26, 24, 17]]


def _stored_best() -> list:
    return json.loads((caches.cache_root() / caches.TUNINGS).read_text())[tuning_key("cpu", 2, SMALL)]["best"]


DAMAGE = [
    ("not json", None, "is not valid JSON"),
    ("a list", [1, 2], "holds a JSON list, not an object"),
    ("best words", {"best": ["a", "b"]}, r"best \['a', 'b'\] is not two whole numbers"),
    ("best one number", {"best": 8}, "best 8 is not two whole numbers"),
    ("options list", {"options": [1]}, r"options \[1\] are not an object"),
    ("options unknown", {"options": {"band": 2}}, r"options \{'band': 2\} are not among those tried"),
    ("not a candidate", {"best": [5, 7]}, r"\(DTS, Nt\) = \(5, 7\) is not a candidate"),
    ("entry a number", 3, "a JSON int, not an object"),
]


@pytest.mark.parametrize(("damage", "text"), [d[1:] for d in DAMAGE], ids=[d[0] for d in DAMAGE])
def test_a_damaged_tuning_is_measured_anew_with_a_warning(tmp_path, monkeypatch, damage, text):
    monkeypatch.setenv("DIAMONDLAB_CACHE", str(tmp_path))
    assert _measured_again()
    path = tmp_path / caches.TUNINGS
    data = json.loads(path.read_text())
    (key,) = data
    if damage is None:
        path.write_text(path.read_text()[:-20])
    elif isinstance(damage, dict):
        data[key].update(damage)
        path.write_text(json.dumps(data))
    elif isinstance(damage, list):
        path.write_text(json.dumps(damage))
    else:
        path.write_text(json.dumps({key: damage}))
    with pytest.warns(caches.CacheEntryWarning, match=re.escape(str(path)) + ".*" + text):  # names the file
        assert _measured_again()
    assert _stored_best() in [list(c) for c in CPUBackend.tuning_candidates(2)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not _measured_again()  # replaced: read back without a word


def test_entries_the_tuner_never_stores_are_dropped_with_a_warning(tmp_path, monkeypatch):
    """The hostile run: the file replaced by a JSON object of other keys lost the tuning without a word."""
    monkeypatch.setenv("DIAMONDLAB_CACHE", str(tmp_path))
    assert _measured_again()
    path = tmp_path / caches.TUNINGS
    path.write_text(json.dumps({"x": {"nt": -1}}))
    with pytest.warns(caches.CacheEntryWarning, match=re.escape(str(path)) + ".*never stores \\('x'\\)"):
        assert _measured_again()
    assert list(json.loads(path.read_text())) == [tuning_key("cpu", 2, SMALL)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not _measured_again()  # read back without a word


def test_a_damaged_tuning_never_fails_a_run(tmp_path, monkeypatch):
    monkeypatch.setenv("DIAMONDLAB_CACHE", str(tmp_path))
    shape = (16, 16, 16)
    tuned = autotune(WaveParameters(order=2), shape, "cpu", repeats=1)
    path = tmp_path / caches.TUNINGS
    data = json.loads(path.read_text())
    (key,) = data
    data[key]["best"] = [tuned.size, 10**6]  # a torre no candidate has
    path.write_text(json.dumps(data))
    with pytest.warns(caches.CacheEntryWarning, match="is not a candidate"):
        sim = Simulation(shape, 2, backend="cpu", size="auto", nt="auto")
    assert [sim.size, sim.nt] in [list(c) for c in CPUBackend.tuning_candidates(2)]
    sim.run(4)
    clean = Simulation(shape, 2, backend="cpu", size=sim.size, nt=sim.nt)
    clean.run(4)
    assert np.array_equal(sim.field, clean.field)


def test_the_tuning_key_is_recognised_by_name_without_a_manifest():
    assert caches.TUNING_KEY.fullmatch(tuning_key("cpu", 8, (10, 20, 30)))
