"""The cache folder: where it is, writing to it safely, and what makes an entry valid.

Contract
--------
:func:`cache_root` is ``$DIAMONDLAB_CACHE`` when set, else the platform's
cache folder for diamondlab (``platformdirs.user_cache_dir``:
``~/.cache/diamondlab`` on Linux, ``~/Library/Caches/diamondlab`` on
macOS).  It holds the generated kernel modules with Numba's compiled code
beside them (:data:`KERNELS`, one folder per generator and software
version, :func:`diamondlab.kernels.generated.cache_dir`) and the auto-
tuner's choices (:data:`TUNINGS`, :mod:`diamondlab.engine.autotune`).

Writes are atomic (:func:`diamondlab.files.write_atomically`: a temporary file in the same
folder, synced, then renamed over the old one), and a JSON file that
several processes update is read, changed and written under a file lock
(:func:`update_json`), so two processes storing entries at once keep both.

An entry is valid only for what produced it: :func:`fingerprint` records
the CPU (model name, a digest of its feature flags, cores, architecture),
the GPU and its compute capability when the caller names them, and the
versions of diamondlab, Numba, numba-cuda and the kernel generator;
callers key their entries by it (:func:`digest`) and keep it in the entry.

:func:`cache_info` and :func:`clear_cache` are ``diamondlab cache info``
and ``diamondlab cache clear``; they touch only :data:`KERNELS` and
:data:`TUNINGS`, whatever else the folder holds.

This module is a bottom floor: it imports only :mod:`diamondlab.files` (versions
come from the installed packages' metadata, so Numba is not imported).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.metadata
import json
import os
import platform
import shutil
from collections.abc import Callable
from pathlib import Path

import filelock
import platformdirs

from diamondlab.files import write_atomically

__all__ = [
    "KERNELS",
    "LOCK_TIMEOUT",
    "TUNINGS",
    "cache_info",
    "cache_root",
    "clear_cache",
    "cpu_description",
    "digest",
    "file_lock",
    "fingerprint",
    "read_json",
    "software_versions",
    "update_json",
    "write_atomically",
]

#: Folder (under :func:`cache_root`) of the generated kernel modules and Numba's compiled code.
KERNELS = "kernels"
#: File (under :func:`cache_root`) of the auto-tuner's choices.
TUNINGS = "autotune.json"
#: Seconds to wait for another process's lock before giving up (``filelock.Timeout``, an OSError).
LOCK_TIMEOUT = 120.0


def cache_root(create: bool = True) -> Path:
    """The cache folder: ``$DIAMONDLAB_CACHE``, else the platform's user cache folder for diamondlab.

    Read anew at every call (a test or a process may set the variable).
    """
    root = os.environ.get("DIAMONDLAB_CACHE") or platformdirs.user_cache_dir("diamondlab", appauthor=False)
    path = Path(root).expanduser()
    if create:
        path.mkdir(parents=True, exist_ok=True)
    return path


def file_lock(path, timeout: float = LOCK_TIMEOUT) -> filelock.FileLock:
    """The inter-process lock of ``path`` (the file ``path.lock`` beside it; kept, never removed)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return filelock.FileLock(str(path.with_name(path.name + ".lock")), timeout=timeout)


def read_json(path) -> dict:
    """The JSON object in ``path``; ``{}`` where the file is missing, unreadable or not an object."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def update_json(path, update: Callable[[dict], object]) -> dict:
    """Read ``path``, call ``update(data)`` to change it in place, write it back: all under the file lock.

    Another process's update between this one's read and write cannot be
    lost: it waits for the lock, then reads what this one wrote.  Returns
    the data written.
    """
    with file_lock(path):
        data = read_json(path)
        update(data)
        write_atomically(path, json.dumps(data, indent=1, sort_keys=True))
    return data


def _parse_cpuinfo(text: str) -> dict[str, str]:
    """The first processor's fields of a ``/proc/cpuinfo`` text, keys in lower case."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if fields:
                break
            continue
        key, _, value = line.partition(":")
        fields.setdefault(key.strip().lower(), value.strip())
    return fields


def _cpuinfo() -> dict[str, str]:
    """The first processor's fields of ``/proc/cpuinfo`` (empty where there is none)."""
    try:
        return _parse_cpuinfo(Path("/proc/cpuinfo").read_text())
    except OSError:
        return {}


@functools.cache
def cpu_description() -> dict:
    """This machine's CPU: ``model`` name, ``flags`` (a digest of its feature flags), ``cores``, ``machine``.

    From ``/proc/cpuinfo`` where there is one (x86 ``model name`` and
    ``flags``; Arm ``CPU implementer``/``CPU part`` and ``Features``), else
    what :mod:`platform` says.
    """
    info = _cpuinfo()
    model = info.get("model name") or info.get("cpu model") or info.get("cpu") or info.get("hardware")
    if not model and "cpu part" in info:
        model = f"implementer {info.get('cpu implementer', '?')} part {info['cpu part']}"
    flags = info.get("flags") or info.get("features") or ""
    return {
        "model": model or platform.processor() or platform.machine() or "unknown",
        "flags": hashlib.sha1(" ".join(sorted(flags.split())).encode()).hexdigest()[:12],
        "cores": os.cpu_count() or 1,
        "machine": platform.machine(),
    }


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


@functools.cache
def software_versions() -> dict:
    """Installed versions of diamondlab, Numba and numba-cuda (``None`` where one is not installed)."""
    return {name: _version(name) for name in ("diamondlab", "numba", "numba-cuda")}


def fingerprint(
    generator: str | int | None = None,
    gpu: str | None = None,
    compute_capability=None,
    cpu: bool = True,
) -> dict:
    """What a cached answer depends on: the CPU (unless ``cpu=False``), the GPU, the software versions.

    ``generator`` is the kernel generator's version
    (:data:`diamondlab.kernels.generated.GENERATOR_VERSION`); ``gpu`` and
    ``compute_capability`` are recorded when the caller gives them (a
    CUDA backend's device).

    >>> record = fingerprint(generator=3, gpu="NVIDIA H100", compute_capability=(9, 0))
    >>> record["generator"], record["gpu"], record["compute_capability"]
    ('3', 'NVIDIA H100', [9, 0])
    >>> sorted(record["cpu"]) == ["cores", "flags", "machine", "model"]
    True
    """
    record: dict = {"software": dict(software_versions())}
    if generator is not None:
        record["generator"] = str(generator)
    if cpu:
        record["cpu"] = dict(cpu_description())
    if gpu is not None:
        record["gpu"] = str(gpu)
    if compute_capability is not None:
        record["compute_capability"] = [int(v) for v in compute_capability]
    return record


def digest(record) -> str:
    """A short stable digest of a JSON-able record (keys in any order give the same digest).

    >>> digest({"a": 1, "b": [2, 3]}) == digest({"b": [2, 3], "a": 1}) != digest({"a": 2, "b": [2, 3]})
    True
    """
    return hashlib.sha1(json.dumps(record, sort_keys=True).encode()).hexdigest()[:16]


def _tree(path: Path) -> tuple[int, list[Path]]:
    """Total bytes and the files under ``path`` (a file or a folder)."""
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()] if path.is_dir() else []
    return sum(p.stat().st_size for p in files), files


def cache_info() -> dict:
    """What the cache holds: its ``folder``, ``source`` and ``bytes``, and its entries by kind.

    ``kernel_modules`` counts the generated kernel modules, ``compiled``
    Numba's compiled-code files beside them, ``tunings`` the auto-tuner's
    entries.
    """
    root = cache_root(create=False)
    kernel_bytes, kernel_files = _tree(root / KERNELS)
    tuning_bytes, _ = _tree(root / TUNINGS)
    return {
        "folder": str(root),
        "source": "$DIAMONDLAB_CACHE" if os.environ.get("DIAMONDLAB_CACHE") else "platform default",
        "bytes": kernel_bytes + tuning_bytes,
        "kernel_modules": sum(p.suffix == ".py" for p in kernel_files),
        "compiled": sum(p.suffix in (".nbi", ".nbc") for p in kernel_files),
        "tunings": len(read_json(root / TUNINGS)),
    }


def clear_cache() -> dict:
    """Remove the kernels and the tunings (nothing else in the folder); return :func:`cache_info` of before.

    The tunings are removed under their lock; clear the kernels while no
    diamondlab process is loading them.
    """
    before = cache_info()
    root = Path(before["folder"])
    if (root / KERNELS).exists():
        shutil.rmtree(root / KERNELS)
    if (root / TUNINGS).exists():
        with file_lock(root / TUNINGS), contextlib.suppress(FileNotFoundError):
            (root / TUNINGS).unlink()
    return before
