import json
import os
import subprocess
import sys
import time
from pathlib import Path

import platformdirs
import pytest

from diamondlab import caches


def test_the_test_session_never_uses_the_users_cache():
    assert os.environ.get("DIAMONDLAB_CACHE")
    assert caches.cache_root() != Path(platformdirs.user_cache_dir("diamondlab", appauthor=False))


def test_the_folder_is_the_variable_else_the_platforms(tmp_path, monkeypatch):
    monkeypatch.setenv("DIAMONDLAB_CACHE", str(tmp_path / "mine"))
    assert caches.cache_root(create=False) == tmp_path / "mine" and not (tmp_path / "mine").exists()
    assert caches.cache_root() == tmp_path / "mine" and (tmp_path / "mine").is_dir()
    monkeypatch.delenv("DIAMONDLAB_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))  # where platformdirs looks on Linux
    expected = Path(platformdirs.user_cache_dir("diamondlab", appauthor=False))
    assert caches.cache_root(create=False) == expected
    if sys.platform.startswith("linux"):
        assert expected == tmp_path / "xdg" / "diamondlab"


def test_write_atomically_replaces_whole_or_not_at_all(tmp_path, monkeypatch):
    path = tmp_path / "sub" / "f.json"
    caches.write_atomically(path, "old")
    caches.write_atomically(path, b"new")
    assert path.read_text() == "new"

    def fail(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        caches.write_atomically(path, "newer")
    assert path.read_text() == "new" and sorted(p.name for p in path.parent.iterdir()) == ["f.json"]


def test_read_json_is_empty_for_what_is_not_an_object(tmp_path):
    path = tmp_path / "x.json"
    assert caches.read_json(path) == {}
    for text in ("not json", "[1, 2]", '{"a": 1'):
        path.write_text(text)
        assert caches.read_json(path) == {}
    path.write_text('{"a": 1}')
    assert caches.read_json(path) == {"a": 1}


# each of two processes adds its keys one read-modify-write at a time, and waits at every read
# (up to half a second) for the other to read too: without the lock both would read before either writes
_WRITER = """
import pathlib, sys, time
from diamondlab import caches

me, other, folder, count = sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3]), int(sys.argv[4])
read, calls = caches.read_json, [0]

def meeting_read(path):
    calls[0] += 1
    (folder / f"{me}.{calls[0]}").touch()
    deadline = time.monotonic() + 0.5
    while not (folder / f"{other}.{calls[0]}").exists() and time.monotonic() < deadline:
        time.sleep(0.005)
    return read(path)

caches.read_json = meeting_read
for i in range(count):
    caches.update_json(folder / "shared.json", lambda data: data.__setitem__(f"{me}{i}", i))
"""


def test_two_processes_updating_one_file_keep_every_entry(tmp_path):
    count = 3
    procs = [
        subprocess.Popen([sys.executable, "-c", _WRITER, me, other, str(tmp_path), str(count)])
        for me, other in (("a", "b"), ("b", "a"))
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    data = json.loads((tmp_path / "shared.json").read_text())
    assert data == {f"{who}{i}": i for who in "ab" for i in range(count)}


def test_a_lock_held_elsewhere_times_out_as_an_os_error(tmp_path):
    path = tmp_path / "t.json"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from diamondlab import caches\n"
         f"with caches.file_lock({str(path)!r}):\n print('held', flush=True); time.sleep(30)"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "held"
        start = time.monotonic()
        with pytest.raises(TimeoutError, match="could not be acquired") as err, caches.file_lock(path, 0.2):
            pass
        assert isinstance(err.value, OSError)  # what the command line reports as an error, exit status 2
        assert time.monotonic() - start < 5
    finally:
        holder.kill()
        holder.wait()


X86 = """processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC 7B13
flags\t\t: fpu sse2 avx2 fma

processor\t: 1
model name\t: AMD EPYC 7B13
flags\t\t: fpu sse2 avx2 fma
"""
ARM = """processor\t: 0
Features\t: fp asimd evtstrm
CPU implementer\t: 0x41
CPU part\t: 0xd0c
"""


@pytest.mark.parametrize(("text", "model"), [(X86, "AMD EPYC 7B13"), (ARM, "implementer 0x41 part 0xd0c")])
def test_the_cpu_is_named_by_its_model_and_flags(monkeypatch, tmp_path, text, model):
    fields = caches._parse_cpuinfo(text)
    monkeypatch.setattr(caches, "_cpuinfo", lambda: fields)
    caches.cpu_description.cache_clear()
    try:
        cpu = caches.cpu_description()
        assert cpu["model"] == model and cpu["cores"] == os.cpu_count()
        other = caches._parse_cpuinfo(text.replace("fp", "fpx", 1))
        monkeypatch.setattr(caches, "_cpuinfo", lambda: other)
        caches.cpu_description.cache_clear()
        assert caches.cpu_description()["flags"] != cpu["flags"]
    finally:
        caches.cpu_description.cache_clear()


def test_the_fingerprint_records_the_software_and_what_the_caller_gives():
    record = caches.fingerprint(generator=7, gpu="NVIDIA H100 80GB HBM3", compute_capability=(9, 0))
    software = record["software"]
    assert software["numba"] == __import__("numba").__version__
    assert software["diamondlab"] == __import__("diamondlab").__version__
    assert record["generator"] == "7" and record["compute_capability"] == [9, 0]
    assert record["cpu"]["model"] and len(record["cpu"]["flags"]) == 12
    assert "cpu" not in caches.fingerprint(generator=7, cpu=False)
    assert caches.digest(record) != caches.digest(caches.fingerprint(generator=8, gpu="NVIDIA H100 80GB HBM3",
                                                                     compute_capability=(9, 0)))


def _fill(root: Path) -> None:
    kernels = root / caches.KERNELS / "g1-abc"
    (kernels / "__pycache__").mkdir(parents=True)
    (kernels / "k_1.py").write_text("x = 1\n")
    (kernels / "__pycache__" / "k_1.f-1.py311.nbi").write_bytes(b"i" * 100)
    (kernels / "__pycache__" / "k_1.f-1.py311.1.nbc").write_bytes(b"c" * 1000)
    (root / caches.TUNINGS).write_text(json.dumps({"cpu|NO=2|8x8x8|a": {}, "cpu|NO=4|8x8x8|a": {}}))
    (root / "mine.txt").write_text("not the cache's")


def test_info_and_clear(tmp_path, monkeypatch):
    monkeypatch.setenv("DIAMONDLAB_CACHE", str(tmp_path))
    _fill(tmp_path)
    info = caches.cache_info()
    assert info["folder"] == str(tmp_path) and info["source"] == "$DIAMONDLAB_CACHE"
    assert (info["kernel_modules"], info["compiled"], info["tunings"]) == (1, 2, 2)
    assert info["bytes"] == 6 + 100 + 1000 + (tmp_path / caches.TUNINGS).stat().st_size
    assert caches.clear_cache() == info
    after = caches.cache_info()
    assert (after["bytes"], after["kernel_modules"], after["compiled"], after["tunings"]) == (0, 0, 0, 0)
    assert (tmp_path / "mine.txt").read_text() == "not the cache's"  # only the cache's own entries go
