"""Generated kernel modules: written to the cache folder and imported from there.

Contract
--------
Kernels generated per (NO, DTS) are Python source text.  Numba caches
compiled code next to a real source file only, so :func:`load_generated`
writes the text (atomically, only when it changed) to
``cache_dir() / f"{prefix}_{sha1}.py"`` and imports it.  The folder is
``kernels/<tag>`` in :func:`diamondlab.caches.cache_root` (``$DIAMONDLAB_CACHE``
or the platform's user cache folder), one ``<tag>`` per
:data:`GENERATOR_VERSION` and installed diamondlab, Numba and numba-cuda
versions, so that compiled code of another version is never loaded.  The
source's digest in the file name covers the text itself; Numba's own index
beside it covers the CPU it was compiled for.

The cache's manifest (:data:`diamondlab.caches.MANIFEST`) lists the
folder and every module with the SHA-256 of its text, recorded before
the file is written, and the SHA-256 of each of Numba's index and data
files of the module (``__pycache__/<module>.*.nbi``, ``.nbc``), recorded
once the kernels are compiled or loaded (:func:`record_compiled`, called
by the backends' ``compile()``).  Before importing, the module file is
checked against its digest and each of Numba's files against its own;
a Numba file not recorded yet (written by an older diamondlab, or by a
process that ended before recording it) is checked to be whole pickles.
Numba would otherwise load what it finds: garbage in a data file ended a
run with a segmentation fault or a decoding error, a damaged index was
compiled over silently.  A file that fails is dropped and rebuilt (the
module rewritten, the kernels recompiled) with a
:class:`~diamondlab.caches.CacheEntryWarning` naming it.

The backends compile under :func:`compiling`, a lock per module and
folder: processes that ask for the same kernels at once (MPI ranks, test
workers, Jupyter kernels) compile them once and load the result, instead
of compiling them side by side (a minute of a core each).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import io
import pickle
import pickletools
import sys
from pathlib import Path
from types import ModuleType

import filelock

from diamondlab.caches import (
    KERNELS,
    cache_root,
    compiled_files,
    digest,
    drop_files,
    file_lock,
    fingerprint,
    record_entry,
    record_folders,
    recorded_digests,
    write_atomically,
)
from diamondlab.caches import record_compiled as _record_compiled

__all__ = ["COMPILE_WAIT", "GENERATOR_VERSION", "cache_dir", "check_compiled", "compiling", "load_generated",
           "record_compiled"]

#: Version of the kernel generators (:mod:`diamondlab.kernels.cpu`,
#: :mod:`diamondlab.kernels.cuda_source`) and of the code their modules import
#: (:func:`diamondlab.kernels.cuda.ldcg_intrinsic`).  Bump it when they change what
#: a kernel computes or how fast it runs in a way the generated text does not
#: show: it names the kernel folder and is part of every tuning's key
#: (:mod:`diamondlab.engine.run.autotune`).
#: 2: the CPU kernels put back each thread's MXCSR after an iteration (issue 27).
GENERATOR_VERSION = 2


def cache_dir() -> Path:
    """Folder of the generated kernel modules: ``kernels/<tag>`` in the cache folder (made if missing).

    The folders it makes are recorded in the cache's manifest first
    (:func:`diamondlab.caches.record_folders`).
    """
    tag = f"g{GENERATOR_VERSION}-{digest(fingerprint(generator=GENERATOR_VERSION, cpu=False))[:10]}"
    path = cache_root() / KERNELS / tag
    if not path.is_dir():
        record_folders(path)
        path.mkdir(parents=True, exist_ok=True)
    return path


#: Seconds a process waits for another one compiling the same kernels (:func:`compiling`) before it compiles
#: them itself.
COMPILE_WAIT = 900.0


@contextlib.contextmanager
def compiling(prefix: str):
    """Hold the inter-process lock of the kernels of ``prefix`` (a module name's stem) while compiling them.

    A second process asking for the same kernels meanwhile (an MPI rank, a
    test worker, a second Jupyter kernel) waits, then loads the first one's
    compiled code from Numba's cache instead of compiling the same code again
    on another core.  After :data:`COMPILE_WAIT` seconds it compiles them
    itself.  The lock is ``<prefix>.compiling.lock`` in :func:`cache_dir`.
    """
    lock = file_lock(cache_dir() / f"{prefix}.compiling", timeout=COMPILE_WAIT)
    try:
        lock.acquire()
    except filelock.Timeout:
        yield
        return
    try:
        yield
    finally:
        lock.release()


def _whole_pickles(data: bytes, count: int) -> io.BytesIO:
    """Walk ``count`` pickles at the start of ``data`` without loading them; ``ValueError`` where one is cut
    short or is not a pickle.  Returns the stream, at the end of the last one."""
    stream = io.BytesIO(data)
    for _ in range(count):
        for _op in pickletools.genops(stream):
            pass
    return stream


class _PlainUnpickler(pickle.Unpickler):
    """Loads plain values only (no class or function is imported)."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"a version string was expected, not {module}.{name}")


def _check_index(data: bytes) -> None:
    """Check a Numba index file as Numba reads it: its version, then ``(stamp, overloads)``."""
    import numba

    end = _whole_pickles(data, 1).tell()
    if _PlainUnpickler(io.BytesIO(data[:end])).load() != numba.__version__:
        return  # another version's index: Numba ignores it without reading on
    rest = data[end:]
    _whole_pickles(rest, 1)
    _stamp, overloads = pickle.loads(rest)  # as Numba loads it (its keys are Numba's types)
    if not isinstance(overloads, dict):
        raise ValueError("its overloads are not a mapping")


def check_compiled(module) -> list[Path]:
    """Drop Numba's index and data files of the module file ``module`` that are damaged or unreadable.

    A file whose SHA-256 is recorded in the cache's manifest
    (:func:`record_compiled`) must match it.  One not recorded yet is
    checked for its structure: an index (``.nbi``) must hold Numba's
    version and, for this version, a ``(stamp, overloads)`` pair; a data
    file (``.nbc``) must be one whole pickle (checked without loading it:
    loading imports the module).  A function with a bad file loses its
    index and data files, with a :class:`~diamondlab.caches.CacheEntryWarning`
    naming the file: Numba compiles it again and writes them anew.  Returns
    the files dropped.
    """
    dropped: list[Path] = []
    recorded = recorded_digests(module)
    for path in compiled_files(module):
        if path.suffix not in (".nbi", ".nbc") or path in dropped:
            continue
        why = None
        try:
            data = path.read_bytes()
        except FileNotFoundError:  # dropped by another process meanwhile
            continue
        if path in recorded:
            if hashlib.sha256(data).hexdigest() != recorded[path]:
                why = "does not match the SHA-256 recorded when it was compiled"
        else:
            try:
                if path.suffix == ".nbi":
                    _check_index(data)
                else:
                    _whole_pickles(data, 1)
            except Exception as err:  # noqa: BLE001 - anything a damaged pickle raises
                why = f"cannot be read by Numba ({type(err).__name__}: {err})"
        if why is not None:
            group = path.name[: -len(".nbi")] if path.suffix == ".nbi" else path.name.rsplit(".", 2)[0]
            files = [p for p in compiled_files(module) if p.name.startswith(group + ".")]
            drop_files(files, f"compiled kernel file {path} {why}: its function's compiled code is dropped "
                       "and compiled anew")  # fmt: skip
            dropped += files
    return dropped


#: The generated modules this process imported (name: file), whose compiled code :func:`record_compiled`
#: records.
_LOADED: dict[str, Path] = {}


def record_compiled() -> None:
    """Record the SHA-256 of Numba's files of every generated module this process imported.

    The backends call it at the end of ``compile()``, once Numba has
    compiled the kernels (and written their files) or loaded them;
    :func:`check_compiled` checks the files against it before the next
    import (:func:`diamondlab.caches.record_compiled`).
    """
    if _LOADED:
        _record_compiled(list(_LOADED.values()))


def load_generated(source: str, prefix: str) -> ModuleType:
    """Import ``source`` as the module ``{prefix}_{sha1 of source}`` from the cache folder.

    The module is recorded in the cache's manifest with the SHA-256 of
    ``source`` before it is written; a file there that does not match that
    digest (damaged, truncated, changed) is replaced, its compiled code
    dropped, with a :class:`~diamondlab.caches.CacheEntryWarning`; Numba's
    files of the module are checked (:func:`check_compiled`) before the import.
    """
    text = source.encode()
    name = f"{prefix}_{hashlib.sha1(text).hexdigest()[:12]}"
    path = cache_dir() / f"{name}.py"
    expected = record_entry(path, "kernel module", sha256=hashlib.sha256(text).hexdigest())["sha256"]
    try:
        found = path.read_bytes()
    except FileNotFoundError:
        found = None
    if found is None or hashlib.sha256(found).hexdigest() != expected:  # the same digest, the same text
        if found is not None:
            drop_files(compiled_files(path), f"kernel module {path} does not match the SHA-256 recorded when "
                       "it was written: it is written anew and its compiled code dropped")  # fmt: skip
        write_atomically(path, text)
    check_compiled(path)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    _LOADED[name] = path
    return module
