import hashlib
import json
import pickle
import re
import shutil
import warnings
from pathlib import Path

import numba
import numpy as np
import pytest

from diamondlab import caches
from diamondlab.engine.run.simulation import Simulation
from diamondlab.kernels import generated
from diamondlab.kernels.cpu import cpu_kernels


def test_kernels_go_to_a_folder_of_the_generator_and_software_versions(tmp_path, monkeypatch):
    monkeypatch.setenv("DIAMONDLAB_CACHE", str(tmp_path))
    folder = generated.cache_dir()
    assert folder.parent == tmp_path / caches.KERNELS and folder.is_dir()
    assert folder.name.startswith(f"g{generated.GENERATOR_VERSION}-")
    monkeypatch.setattr(generated, "GENERATOR_VERSION", generated.GENERATOR_VERSION + 1)
    newer_generator = generated.cache_dir()
    versions = caches.software_versions()
    monkeypatch.setattr(caches, "software_versions", lambda: {**versions, "numba": "0.0.1"})
    older_numba = generated.cache_dir()
    assert len({folder, newer_generator, older_numba}) == 3


def test_the_folder_does_not_depend_on_the_cpu(tmp_path, monkeypatch):
    monkeypatch.setenv("DIAMONDLAB_CACHE", str(tmp_path))
    folder = generated.cache_dir()
    cpu = caches.cpu_description()
    monkeypatch.setattr(caches, "cpu_description", lambda: {**cpu, "model": "another CPU"})
    assert generated.cache_dir() == folder  # Numba's own index tells compiled code of CPUs apart


def test_load_generated_writes_once_and_imports(tmp_path, monkeypatch):
    monkeypatch.setenv("DIAMONDLAB_CACHE", str(tmp_path))
    source = '"""A generated module."""\nANSWER = 42\n'
    module = generated.load_generated(source, "diamondlab_test")
    assert module.ANSWER == 42 and module.__name__.startswith("diamondlab_test_")
    (path,) = generated.cache_dir().glob("diamondlab_test_*.py")
    assert path.read_text() == source
    stamp = path.stat().st_mtime_ns
    assert generated.load_generated(source, "diamondlab_test").ANSWER == 42
    assert path.stat().st_mtime_ns == stamp  # the same text is not written again
    path.write_text("ANSWER = 0\n")  # a damaged file is replaced
    with pytest.warns(caches.CacheEntryWarning, match="does not match the SHA-256 recorded"):
        assert generated.load_generated(source, "diamondlab_test").ANSWER == 42
    path.write_bytes(b"\xff\xfe not text")
    with pytest.warns(caches.CacheEntryWarning, match=re.escape(str(path))):
        assert generated.load_generated(source, "diamondlab_test").ANSWER == 42



def test_the_prefixes_in_use_are_recognised_by_name_without_a_manifest():
    for prefix in ("diamondlab_cpu_no2", "diamondlab_cuda_no8_dts3_pipelined"):
        assert caches.MODULE_NAME.fullmatch(f"{prefix}_0123456789ab")


def test_load_generated_records_the_module_and_its_digest_before_writing(tmp_path, monkeypatch):
    monkeypatch.setenv("DIAMONDLAB_CACHE", str(tmp_path))
    source = "ANSWER = 7\n"
    generated.load_generated(source, "diamondlab_test")
    (path,) = generated.cache_dir().glob("diamondlab_test_*.py")
    manifest = json.loads((tmp_path / caches.MANIFEST).read_text())
    entry = manifest["entries"][path.relative_to(tmp_path).as_posix()]
    assert entry == {"kind": "kernel module", "sha256": hashlib.sha256(source.encode()).hexdigest()}
    assert manifest["folders"] == [caches.KERNELS, f"{caches.KERNELS}/{path.parent.name}"]


@pytest.fixture(scope="module")
def clean_cache(tmp_path_factory):
    """A cache holding the NO=2 CPU kernels compiled by a 16^3 run, and that run's field."""
    folder = tmp_path_factory.mktemp("clean") / "cache"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DIAMONDLAB_CACHE", str(folder))
        cpu_kernels.cache_clear()
        field = _run()
    cpu_kernels.cache_clear()
    return folder, field


def _run() -> np.ndarray:
    sim = Simulation((16, 16, 16), 2, backend="cpu", size=2, nt=4)
    sim.run(8)
    return sim.field.copy()


def _tamper(path: Path, how: str) -> None:
    data = path.read_bytes()
    if how == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif how == "garbage":
        path.write_bytes(np.random.default_rng(0).integers(0, 256, 4000, dtype=np.uint8).tobytes())
    elif how == "empty":
        path.write_bytes(b"")
    elif path.suffix == ".py":  # other content, valid Python
        path.write_bytes(b"ANSWER = 0\n")
    else:  # this Numba's version, then whole pickles that are not an index (Numba fails to unpack them)
        path.write_bytes(pickle.dumps(numba.__version__) + pickle.dumps(0))


CASES = [("module", how) for how in ("truncated", "garbage", "other")] + [("index", "other")] + [
    (kind, how) for kind in ("index", "data") for how in ("truncated", "garbage", "empty")]


@pytest.mark.parametrize(("kind", "how"), CASES, ids=[f"{kind} {how}" for kind, how in CASES])
def test_a_damaged_kernel_cache_file_is_rebuilt_with_a_warning(clean_cache, tmp_path, monkeypatch, kind, how):
    folder, expected = clean_cache
    cache = tmp_path / "cache"
    shutil.copytree(folder, cache)
    monkeypatch.setenv("DIAMONDLAB_CACHE", str(cache))
    (module,) = cache.glob(f"{caches.KERNELS}/*/diamondlab_cpu_no2_*.py")
    pattern = {"module": module.name, "index": f"{module.stem}.diamondtorre_constant-*.nbi",
               "data": f"{module.stem}.diamondtorre_constant-*.nbc"}[kind]  # fmt: skip
    (path,) = (module.parent if kind == "module" else module.parent / "__pycache__").glob(pattern)
    _tamper(path, how)
    cpu_kernels.cache_clear()  # load the module again, from the damaged cache
    try:
        with pytest.warns(caches.CacheEntryWarning, match=re.escape(str(path))):
            field = _run()
    finally:
        cpu_kernels.cache_clear()
    assert np.array_equal(field, expected)  # bit for bit
    assert module.read_bytes() == (folder / module.relative_to(cache)).read_bytes()
    assert sorted(p.name for p in (module.parent / "__pycache__").iterdir()) == sorted(
        p.name for p in (folder / module.relative_to(cache)).parent.joinpath("__pycache__").iterdir())
    cpu_kernels.cache_clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # rebuilt: the next process loads it without a word
        try:
            assert np.array_equal(_run(), expected)
        finally:
            cpu_kernels.cache_clear()


def test_the_digests_of_numbas_files_are_recorded_once_compiled(clean_cache):
    folder, _ = clean_cache
    manifest = json.loads((folder / caches.MANIFEST).read_text())["entries"]
    files = sorted(p for p in folder.glob(f"{caches.KERNELS}/*/__pycache__/diamondlab_cpu_no2_*")
                   if p.suffix in (".nbi", ".nbc"))  # fmt: skip
    assert files
    for path in files:
        assert manifest[path.relative_to(folder).as_posix()] == {
            "kind": caches.COMPILED_CODE, "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}


def _garbage_inside_a_payload(data: bytes) -> bytes:
    """64 bytes of garbage inside the data file's longest bytes payload (its machine code): still one whole
    pickle, which the structural check passes (the hostile run: a SIGSEGV, or a UTF-8 decoding error)."""
    import io
    import pickletools

    ops = [(arg, pos) for _op, arg, pos in pickletools.genops(io.BytesIO(data)) if isinstance(arg, bytes)]
    arg, pos = max(ops, key=lambda o: len(o[0]))
    middle = data.index(arg, pos) + len(arg) // 2 - 32
    garbage = np.random.default_rng(1).integers(0, 256, 64, dtype=np.uint8).tobytes()
    return data[:middle] + garbage + data[middle + 64:]


def _stale_index(data: bytes) -> bytes:
    """The index with another source stamp: well formed (Numba would recompile over it, without a word)."""
    end = generated._whole_pickles(data, 1).tell()
    _stamp, overloads = pickle.loads(data[end:])
    return data[:end] + pickle.dumps(((0.0, 0), overloads), protocol=-1)


@pytest.mark.parametrize("kind", ["data", "index"])
def test_a_recorded_numba_file_that_changed_is_dropped_and_rebuilt(clean_cache, tmp_path, monkeypatch, kind):
    """Issue 27: a change that keeps the file's structure is caught by its recorded SHA-256."""
    folder, expected = clean_cache
    cache = tmp_path / "cache"
    shutil.copytree(folder, cache)
    monkeypatch.setenv("DIAMONDLAB_CACHE", str(cache))
    (module,) = cache.glob(f"{caches.KERNELS}/*/diamondlab_cpu_no2_*.py")
    suffix = {"data": "nbc", "index": "nbi"}[kind]
    (path,) = (module.parent / "__pycache__").glob(f"{module.stem}.diamondtorre_constant-*.{suffix}")
    changed = (_garbage_inside_a_payload if kind == "data" else _stale_index)(path.read_bytes())
    assert changed != path.read_bytes()
    path.write_bytes(changed)
    generated._whole_pickles(changed, 1 if kind == "data" else 2)  # the structure alone passes
    cpu_kernels.cache_clear()
    try:
        with pytest.warns(caches.CacheEntryWarning, match=re.escape(f"{path} does not match the SHA-256")):
            field = _run()
    finally:
        cpu_kernels.cache_clear()
    assert np.array_equal(field, expected)  # bit for bit
    assert path.read_bytes() != changed
    entries = json.loads((cache / caches.MANIFEST).read_text())["entries"]
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert entries[path.relative_to(cache).as_posix()]["sha256"] == digest  # recorded anew


_HOLDER = """
import sys, time
from diamondlab.kernels.generated import compiling
with compiling(sys.argv[1]):
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
    print(time.time(), flush=True)
"""


def _hold_compile_lock(prefix: str, seconds: float):
    """A second process holding the compile lock of ``prefix`` for ``seconds`` (returned once it holds it)."""
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", _HOLDER, prefix, str(seconds)], stdout=subprocess.PIPE,
                             text=True)
    assert child.stdout.readline().strip() == "held"
    return child


def test_a_backend_compiles_after_another_process_compiling_the_same_kernels(tmp_path, monkeypatch):
    """While another process compiles the CPU kernels of an order (an MPI rank, a test worker, a second
    Jupyter kernel), ``compile()`` waits for it and then loads its code; the lock is the cache's own, not
    someone else's file, and stays through ``clear_cache`` (it may be held) like the other lock files."""
    import time

    from diamondlab.engine.backends.cpu import CPUBackend
    from diamondlab.numerics import WaveParameters

    monkeypatch.setenv("DIAMONDLAB_CACHE", str(tmp_path))
    backend = CPUBackend(WaveParameters(order=2), (8, 8, 4), 1, 2)
    child = _hold_compile_lock("diamondlab_cpu_no2", 1.5)
    backend.compile()
    compiled = time.time()
    released = float(child.communicate(timeout=60)[0].strip())
    assert compiled >= released  # it waited for the other process
    lock = generated.cache_dir() / "diamondlab_cpu_no2.compiling.lock"
    assert lock.is_file() and caches.cache_info()["foreign"] == 0
    caches.clear_cache()
    assert lock.is_file()


def test_a_compile_lock_held_too_long_is_passed_by(tmp_path, monkeypatch):
    """A process that holds the lock past :data:`COMPILE_WAIT` (hung, say) does not stop this one: it
    compiles the kernels itself."""
    import time

    monkeypatch.setenv("DIAMONDLAB_CACHE", str(tmp_path))
    monkeypatch.setattr(generated, "COMPILE_WAIT", 0.2)
    child = _hold_compile_lock("diamondlab_cpu_no4", 30)
    try:
        start = time.perf_counter()
        with generated.compiling("diamondlab_cpu_no4"):
            waited = time.perf_counter() - start
        assert 0.15 <= waited < 10
    finally:
        child.kill()
        child.wait()
