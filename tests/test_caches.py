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

def meeting_read(path, **kwargs):
    calls[0] += 1
    (folder / f"{me}.{calls[0]}").touch()
    deadline = time.monotonic() + 0.5
    while not (folder / f"{other}.{calls[0]}").exists() and time.monotonic() < deadline:
        time.sleep(0.005)
    return read(path, **kwargs)

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


MODULE = "diamondlab_cpu_no2_0123456789ab"  # named as the generator names its modules
TAG = "g1-0123456789"
KEYS = ["cpu|NO=2|8x8x8|0123456789abcdef", "cpu|NO=4|8x8x8|0123456789abcdef"]


def _fill(root: Path) -> None:
    """A cache written before the manifest: found by the names of its entries."""
    kernels = root / caches.KERNELS / TAG
    (kernels / "__pycache__").mkdir(parents=True)
    (kernels / f"{MODULE}.py").write_text("x = 1\n")
    (kernels / "__pycache__" / f"{MODULE}.f-1.py311.nbi").write_bytes(b"i" * 100)
    (kernels / "__pycache__" / f"{MODULE}.f-1.py311.1.nbc").write_bytes(b"c" * 1000)
    (root / caches.TUNINGS).write_text(json.dumps(dict.fromkeys(KEYS, {})))
    (root / "mine.txt").write_text("not the cache's")


def test_info_and_clear(tmp_path, monkeypatch):
    monkeypatch.setenv("DIAMONDLAB_CACHE", str(tmp_path))
    _fill(tmp_path)
    info = caches.cache_info()
    assert info["folder"] == str(tmp_path) and info["source"] == "$DIAMONDLAB_CACHE"
    assert (info["kernel_modules"], info["compiled"], info["tunings"], info["unrecorded"]) == (1, 2, 2, 1)
    assert info["bytes"] == 6 + 100 + 1000 + (tmp_path / caches.TUNINGS).stat().st_size
    assert (info["foreign"], info["foreign_examples"]) == (1, ["mine.txt"])
    assert caches.clear_cache() == info
    after = caches.cache_info()
    assert (after["bytes"], after["kernel_modules"], after["compiled"], after["tunings"]) == (0, 0, 0, 0)
    assert (tmp_path / "mine.txt").read_text() == "not the cache's"  # only the cache's own entries go
    assert sorted(p.name for p in tmp_path.iterdir()) == ["autotune.json.lock", "manifest.json.lock",
                                                         "mine.txt"]


def _foreign(root: Path, tag: Path) -> dict[Path, str]:
    """Files of someone else's in the cache folder, the kernels folder and a kernel folder."""
    files = {
        root / "mine.txt": "mine",
        root / "photos" / "a.jpg": "jpeg",
        root / "kernels.txt": "notes",
        root / caches.KERNELS / "README": "my notes on kernels",
        root / caches.KERNELS / "theirs" / "module.py": "y = 2",
        tag / "helper.py": "z = 3",
        tag / "diamondlab_cpu_no2_notahexname.py": "w = 4",
        tag / "__pycache__" / "helper.f-1.py311.nbi": "their index",
        tag / "__pycache__" / "helper.cpython-311.pyc": "their bytecode",
    }
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return files


def _own(root: Path) -> tuple[Path, Path]:
    """A generated module with Numba files beside it, and a tuning: written through the cache."""
    from diamondlab.engine.run import autotune
    from diamondlab.kernels import generated

    generated.load_generated("ANSWER = 42\n", "diamondlab_test")
    (module,) = generated.cache_dir().glob("diamondlab_test_*.py")
    (module.parent / "__pycache__").mkdir(exist_ok=True)
    (module.parent / "__pycache__" / f"{module.stem}.f-3.py311.nbi").write_bytes(b"index")
    autotune._store("cpu", 2, (16, 16, 16), autotune.Tuning(8, 32, {}), {"8,32": 1e-3})
    return module, module.parent


def test_clear_leaves_every_file_it_did_not_write(tmp_path, monkeypatch):
    monkeypatch.setenv("DIAMONDLAB_CACHE", str(tmp_path))
    module, tag = _own(tmp_path)
    files = _foreign(tmp_path, tag)
    manifest = json.loads((tmp_path / caches.MANIFEST).read_text())
    assert set(manifest["entries"]) == {caches._relative(tmp_path, module), caches.TUNINGS}
    info = caches.cache_info()
    assert (info["kernel_modules"], info["compiled"], info["tunings"], info["unrecorded"]) == (1, 1, 1, 0)
    assert info["foreign"] == len(files) and len(info["foreign_examples"]) == 5  # photos/: one item
    assert caches.clear_cache() == info
    assert {path: path.read_text() for path in files} == files
    assert not module.exists() and not (tmp_path / caches.TUNINGS).exists()
    assert not (tmp_path / caches.MANIFEST).exists() and not list(tag.glob("__pycache__/diamondlab_test*"))
    assert caches.cache_info()["foreign"] == info["foreign"]
    for path in files:
        path.unlink()
    caches.clear_cache()  # the folders the cache made go once nothing else is left in them
    left = ["autotune.json.lock", "kernels", "manifest.json.lock", "photos"]  # lock files stay: may be held
    assert sorted(p.name for p in tmp_path.iterdir()) == left  # and kernels/ holds their empty folder
    assert [p.name for p in (tmp_path / caches.KERNELS).iterdir()] == ["theirs"]


def test_the_command_line_clear_leaves_other_files_and_says_so(tmp_path, monkeypatch, capsys):
    from diamondlab.cli import main

    monkeypatch.setenv("DIAMONDLAB_CACHE", str(tmp_path))
    module, tag = _own(tmp_path)
    files = _foreign(tmp_path, tag)
    assert main(["cache", "info"]) == 0
    out = capsys.readouterr().out
    assert "1 kernel modules, 1 compiled-code files, 1 tunings" in out
    assert f"others:  {len(files)} files not written by diamondlab (e.g. " in out
    assert main(["cache", "clear"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("removed 1 kernel modules") and f"kept {len(files)} files not written" in out
    assert {path: path.read_text() for path in files} == files and not module.exists()


def test_a_manifest_entry_outside_the_kernels_folder_is_never_removed(tmp_path, monkeypatch):
    monkeypatch.setenv("DIAMONDLAB_CACHE", str(tmp_path / "cache"))
    (tmp_path / "cache").mkdir()
    (tmp_path / "precious.py").write_text("keep")
    (tmp_path / "cache" / "mine.py").write_text("keep")
    entries = {"../precious.py": {"kind": "kernel module"}, "mine.py": {"kind": "kernel module"},
               "/etc/hosts": {"kind": "kernel module"}}  # fmt: skip
    (tmp_path / "cache" / caches.MANIFEST).write_text(json.dumps({"entries": entries, "folders": [".."]}))
    assert caches.cache_info()["kernel_modules"] == 0
    caches.clear_cache()
    assert (tmp_path / "precious.py").read_text() == (tmp_path / "cache" / "mine.py").read_text() == "keep"


def test_a_damaged_manifest_is_rebuilt_with_a_warning(tmp_path, monkeypatch):
    from diamondlab.kernels import generated

    monkeypatch.setenv("DIAMONDLAB_CACHE", str(tmp_path))
    (tmp_path / caches.MANIFEST).write_text('{"entries": {"kernels/')
    with pytest.warns(caches.CacheEntryWarning, match=r"manifest\.json is not valid JSON"):
        generated.load_generated("ANSWER = 1\n", "diamondlab_test")
    (key,) = json.loads((tmp_path / caches.MANIFEST).read_text())["entries"]
    assert key.startswith(f"{caches.KERNELS}/g") and caches.cache_info()["kernel_modules"] == 1


# each of two processes writes its generated modules one at a time; every read of the manifest waits
# (up to half a second) for the other process to read too: without the lock both would read before either
# writes, and one process's entry would be lost
_RECORDER = """
import pathlib, sys, time
from diamondlab import caches
from diamondlab.kernels import generated

me, other, folder, count = sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3]), int(sys.argv[4])
read, calls = caches.read_json, [0]

def meeting_read(path, **kwargs):
    if pathlib.Path(path).name == caches.MANIFEST and kwargs.get("warn"):  # the locked read of update_json
        calls[0] += 1
        (folder / f"{me}.{calls[0]}").touch()
        deadline = time.monotonic() + 0.5
        while not (folder / f"{other}.{calls[0]}").exists() and time.monotonic() < deadline:
            time.sleep(0.005)
    return read(path, **kwargs)

caches.read_json = meeting_read
for i in range(count):
    generated.load_generated(f"WHO = {me!r}\\nI = {i}\\n", f"diamondlab_test_{me}")
"""


def test_two_processes_writing_entries_at_once_record_both(tmp_path):
    cache, meet = tmp_path / "cache", tmp_path / "meet"
    meet.mkdir()
    env = {**os.environ, "DIAMONDLAB_CACHE": str(cache)}
    count = 3
    procs = [
        subprocess.Popen([sys.executable, "-c", _RECORDER, me, other, str(meet), str(count)], env=env)
        for me, other in (("a", "b"), ("b", "a"))
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    entries = json.loads((cache / caches.MANIFEST).read_text())["entries"]
    modules = sorted(cache.glob(f"{caches.KERNELS}/*/diamondlab_test_*.py"))
    assert len(modules) == 2 * count and sorted(entries) == [caches._relative(cache, p) for p in modules]
    assert len(list(meet.iterdir())) >= 2 * count  # the two processes did meet at the manifest's reads
