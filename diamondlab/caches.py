"""The cache folder: where it is, writing to it safely, and what makes an entry valid.

Contract
--------
:func:`cache_root` is ``$DIAMONDLAB_CACHE`` when set, else the platform's
cache folder for diamondlab (``platformdirs.user_cache_dir``:
``~/.cache/diamondlab`` on Linux, ``~/Library/Caches/diamondlab`` on
macOS).  It holds the generated kernel modules with Numba's compiled code
beside them (:data:`KERNELS`, one folder per generator and software
version, :func:`diamondlab.kernels.generated.cache_dir`) and the auto-
tuner's choices and the CPU model's measured numbers of this machine (:data:`TUNINGS`,
:mod:`diamondlab.engine.run.autotune`, :mod:`diamondlab.engine.measure.cpumodel`).

Writes are atomic (:func:`diamondlab.files.write_atomically`: a temporary file in the same
folder, synced, then renamed over the old one), and a JSON file that
several processes update is read, changed and written under a file lock
(:func:`update_json`), so two processes storing entries at once keep both.

An entry is valid only for what produced it: :func:`fingerprint` records
the CPU (model name, a digest of its feature flags, cores, architecture),
the GPU and its compute capability when the caller names them, and the
versions of diamondlab, Numba, numba-cuda and the kernel generator;
callers key their entries by it (:func:`digest`) and keep it in the entry.

:data:`MANIFEST` lists what the cache wrote: every generated kernel module
with the SHA-256 of its text (recorded before the file is written, under
the manifest's lock: :func:`record_entry`), the tunings file, and the
folders it made (:func:`record_folders`).  Numba's compiled code of a
module lies in ``__pycache__`` beside it under the module's name stem
(:func:`compiled_files`); once the kernels are compiled or loaded, the
SHA-256 of each of its index and data files is recorded too
(:func:`record_compiled`, kind :data:`COMPILED_CODE`), and checked before
the module is imported again (:func:`recorded_digests`): garbage in a
data file that still parses as a pickle would otherwise reach Numba (a
segmentation fault, or a decoding error).  Entries written before there was a manifest are
recognised by their names only: modules named like :data:`MODULE_NAME` in
a folder named like :data:`TAG_NAME` under :data:`KERNELS`, a tunings file
whose every key looks like :data:`TUNING_KEY`.

:func:`cache_info` and :func:`clear_cache` are ``diamondlab cache info``
and ``diamondlab cache clear``; they count and remove only those entries
(and then the folders the cache made, where nothing else is left in them),
whatever else the folder holds; :func:`cache_info` says how many other
files there are.  A damaged entry is never fatal: its reader drops it and
rebuilds it with a :class:`CacheEntryWarning` naming the file.

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
import re
import warnings
from collections.abc import Callable
from pathlib import Path

import filelock
import platformdirs

from diamondlab.files import write_atomically

__all__ = [
    "COMPILED_CODE",
    "COMPILE_LOCK_NAME",
    "KERNELS",
    "LOCK_TIMEOUT",
    "MANIFEST",
    "MODULE_NAME",
    "TAG_NAME",
    "TUNINGS",
    "TUNING_KEY",
    "CacheEntryWarning",
    "cache_info",
    "cache_root",
    "clear_cache",
    "compiled_files",
    "cpu_description",
    "digest",
    "drop_files",
    "file_lock",
    "fingerprint",
    "read_json",
    "record_compiled",
    "record_entry",
    "record_folders",
    "recorded_digests",
    "software_versions",
    "update_json",
    "write_atomically",
]

#: Folder (under :func:`cache_root`) of the generated kernel modules and Numba's compiled code.
KERNELS = "kernels"
#: File (under :func:`cache_root`) of the auto-tuner's choices.
TUNINGS = "autotune.json"
#: File (under :func:`cache_root`) listing the entries the cache wrote: what :func:`clear_cache` removes.
MANIFEST = "manifest.json"
#: Seconds to wait for another process's lock before giving up (``filelock.Timeout``, an OSError).
LOCK_TIMEOUT = 120.0
#: Name stem of a generated kernel module (:func:`diamondlab.kernels.generated.load_generated`:
#: ``diamondlab_<what>_<12 hex digits of the text's SHA-1>``), for entries older than the manifest.
MODULE_NAME = re.compile(r"diamondlab_\w+_[0-9a-f]{12}")
#: Name of a kernel folder's lock held while one process compiles a module's kernels
#: (:func:`diamondlab.kernels.generated.compiling`): kept, like the other lock files (another process may
#: hold it), and neither the cache's entry nor someone else's file.
COMPILE_LOCK_NAME = re.compile(r"diamondlab_\w+\.compiling\.lock")
#: Name of a folder of one generator and software version under :data:`KERNELS`
#: (:func:`diamondlab.kernels.generated.cache_dir`), for entries older than the manifest.
TAG_NAME = re.compile(r"g\d+-[0-9a-f]{10}")
#: Key of a tuning (:func:`diamondlab.engine.run.autotune.tuning_key`) or of a machine's measured numbers
#: (:func:`diamondlab.engine.measure.cpumodel.machine_key`), the entries of the tunings file.
TUNING_KEY = re.compile(r"\w+\|(?:NO=\d+\|\d+x\d+x\d+|machine)\|[0-9a-f]{16}")
#: Suffixes of the compiled code beside a module: Numba's index and data, Python's bytecode.
COMPILED_SUFFIXES = (".nbi", ".nbc", ".pyc")
#: Suffixes of Numba's index and data files (their digests are recorded: :func:`record_compiled`).
NUMBA_SUFFIXES = (".nbi", ".nbc")
#: The manifest's kind of a Numba index or data file's record (``sha256`` of its bytes).
COMPILED_CODE = "compiled code"


class CacheEntryWarning(UserWarning):
    """A cache entry was damaged or unreadable: it was dropped and is rebuilt (the message names the file)."""


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


def read_json(path, warn: bool = False) -> dict:
    """The JSON object in ``path``; ``{}`` where the file is missing, unreadable or not an object.

    With ``warn``, a file that is there but is not a JSON object is a
    :class:`CacheEntryWarning` (its entries are dropped; the next write
    rebuilds the file).
    """
    path = Path(path)
    try:
        data = json.loads(path.read_bytes())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as err:
        why = f"cannot be read ({err})" if isinstance(err, OSError) else "is not valid JSON"
        data = None
    else:
        why = f"holds a JSON {type(data).__name__}, not an object"
    if isinstance(data, dict):
        return data
    if warn:
        warnings.warn(f"cache file {path} {why}: its entries are dropped and rebuilt", CacheEntryWarning,
                      stacklevel=2)
    return {}


def update_json(path, update: Callable[[dict], object], warn: bool = False) -> dict:
    """Read ``path``, call ``update(data)`` to change it in place, write it back: all under the file lock.

    Another process's update between this one's read and write cannot be
    lost: it waits for the lock, then reads what this one wrote.  A file
    that is not a JSON object is read as ``{}`` (with a
    :class:`CacheEntryWarning` when ``warn``) and replaced.  Returns the
    data written.
    """
    with file_lock(path):
        data = read_json(path, warn=warn)
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


def _relative(root: Path, path) -> str:
    """``path`` relative to ``root`` as a POSIX string (the manifest's keys)."""
    return Path(path).relative_to(root).as_posix()


def _inside(root: Path, relative) -> Path | None:
    """``root / relative`` where ``relative`` is a plain relative path below ``root`` (else None)."""
    if not isinstance(relative, str) or not relative:
        return None
    parts = Path(relative).parts
    if Path(relative).is_absolute() or any(part in ("..", ".", "") for part in parts):
        return None
    return root.joinpath(*parts)


def _manifest_of(data: dict) -> dict:
    """The manifest's ``entries`` (relative path: record) and ``folders`` in ``data``, malformed ones out."""
    entries = data.get("entries") if isinstance(data.get("entries"), dict) else {}
    folders = data.get("folders") if isinstance(data.get("folders"), list) else []
    return {
        "entries": {k: v for k, v in entries.items() if isinstance(v, dict)},
        "folders": sorted({f for f in folders if isinstance(f, str)}),
    }


def _manifest(root: Path, warn: bool = False) -> dict:
    """The manifest under ``root`` (:func:`_manifest_of`; empty where it is missing or unreadable)."""
    return _manifest_of(read_json(root / MANIFEST, warn=warn))


def _update_manifest(root: Path, change: Callable[[dict], object]) -> dict:
    """Change the manifest (its two parts, well formed) under its lock."""

    def update(data: dict) -> None:
        clean = _manifest_of(data)
        change(clean)
        data.clear()
        data.update(clean)

    return update_json(root / MANIFEST, update, warn=True)


def record_entry(path, kind: str, **fields) -> dict:
    """Record in the manifest that the cache writes ``path`` (under :func:`cache_root`); return the record.

    Call it before writing the file, so that a file the cache wrote is
    always listed.  ``fields`` (JSON values) are kept with ``kind``, e.g.
    ``sha256`` of a module's text.  Takes the manifest's lock only where
    the record is new or changed.
    """
    root = cache_root()
    key = _relative(root, path)
    record = {"kind": kind, **fields}
    if _manifest(root)["entries"].get(key) != record:
        _update_manifest(root, lambda data: data["entries"].__setitem__(key, record))
    return record


def record_folders(path) -> list[Path]:
    """Record in the manifest the folders up to ``path`` (under :func:`cache_root`) that do not exist yet.

    Call it before making them; :func:`clear_cache` removes them once it
    has emptied them.  Returns the folders recorded.
    """
    root = cache_root()
    path = Path(path)
    missing = [p for p in (path, *path.parents) if p != root and root in p.parents and not p.exists()]
    if missing:
        keys = [_relative(root, p) for p in missing]
        _update_manifest(root, lambda data: data.__setitem__("folders", sorted({*data["folders"], *keys})))
    return missing


def compiled_files(module) -> list[Path]:
    """The compiled code of the module file ``module``: files in ``__pycache__`` beside it named for it.

    Numba names its index and data files ``<module stem>.<function>-<line>.py<version>.nbi``
    and ``....<n>.nbc``; Python its bytecode ``<module stem>.<tag>.pyc``.
    """
    module = Path(module)
    folder = module.parent / "__pycache__"
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    return sorted(folder / n for n in names
                  if n.startswith(module.stem + ".") and n.endswith(COMPILED_SUFFIXES))  # fmt: skip


def _sha256(path: Path) -> str | None:
    """The SHA-256 of the file's bytes (None where it is gone)."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except FileNotFoundError:
        return None


def _numba_files(module) -> list[Path]:
    return [p for p in compiled_files(module) if p.suffix in NUMBA_SUFFIXES]


def recorded_digests(module) -> dict[Path, str]:
    """The SHA-256 recorded (:func:`record_compiled`) of each of Numba's files of the module file ``module``
    that is recorded; files not recorded yet are not in it."""
    root = cache_root()
    entries = _manifest(root)["entries"]
    out = {}
    for path in _numba_files(module):
        with contextlib.suppress(ValueError):
            entry = entries.get(_relative(root, path), {})
            if entry.get("kind") == COMPILED_CODE and isinstance(entry.get("sha256"), str):
                out[path] = entry["sha256"]
    return out


def record_compiled(modules) -> dict[str, str]:
    """Record in the manifest the SHA-256 of Numba's index and data files of each module file in ``modules``.

    Call it once the module's kernels are compiled or loaded (the backends'
    ``compile()``): the files are then those Numba wrote or read.  Records of
    the modules' files that are gone are removed.  Takes the manifest's lock
    only where something changed.  Returns the digests recorded (relative
    path: SHA-256).
    """
    root = cache_root()
    found: dict[str, str] = {}
    stems: set[str] = set()
    for module in modules:
        module = Path(module)
        try:
            folder = _relative(root, module.parent / "__pycache__")
        except ValueError:  # not a module of this cache
            continue
        stems.add(f"{folder}/{module.stem}.")
        for path in _numba_files(module):
            digest_ = _sha256(path)
            if digest_ is not None:
                found[_relative(root, path)] = digest_

    def ours(key: str, entry: dict) -> bool:
        return entry.get("kind") == COMPILED_CODE and any(key.startswith(stem) for stem in stems)

    def change(data: dict) -> None:
        entries = data["entries"]
        for key in [k for k, e in entries.items() if ours(k, e) and k not in found]:
            del entries[key]
        entries.update({k: {"kind": COMPILED_CODE, "sha256": v} for k, v in found.items()})

    entries = _manifest(root)["entries"]
    wanted = {k: {"kind": COMPILED_CODE, "sha256": v} for k, v in found.items()}
    if any(entries.get(k) != v for k, v in wanted.items()) or any(
            ours(k, e) and k not in found for k, e in entries.items()):  # fmt: skip
        _update_manifest(root, change)
    return found


def drop_files(paths, message: str) -> None:
    """Remove ``paths`` (those still there) and their records; warn ``message`` (:class:`CacheEntryWarning`).

    For an entry found damaged; its writer rebuilds it.  ``message`` names
    the file and says what is dropped and rebuilt.  The records of dropped
    compiled code go with the files (what Numba writes anew is recorded anew).
    """
    paths = [Path(p) for p in paths]
    for path in paths:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    root = cache_root()
    keys = set()
    for path in paths:
        with contextlib.suppress(ValueError):
            keys.add(_relative(root, path))
    entries = _manifest(root)["entries"]
    if any(entries.get(k, {}).get("kind") == COMPILED_CODE for k in keys):

        def forget(data: dict) -> None:
            for key in keys:
                if data["entries"].get(key, {}).get("kind") == COMPILED_CODE:
                    del data["entries"][key]

        _update_manifest(root, forget)
    warnings.warn(message, CacheEntryWarning, stacklevel=2)


def _own_tunings(root: Path, recorded: bool) -> bool:
    """Whether the tunings file is the cache's: listed in the manifest, else every key a tuning's."""
    path = root / TUNINGS
    if not path.is_file():
        return False
    if recorded:
        return True
    keys = read_json(path)
    return bool(keys) and all(TUNING_KEY.fullmatch(key) for key in keys)


def _leftover(name: str, owned_names: set[str]) -> bool:
    """Whether ``name`` is an interrupted atomic write's temporary file of one of ``owned_names``."""
    return name.startswith(".") and name.endswith(".tmp") and any(
        name.startswith(f".{own}.") for own in owned_names)  # fmt: skip


def _inventory(root: Path, warn: bool = False) -> dict:
    """The cache's own files and folders under ``root``, and the names of the others.

    Own: the manifest's kernel modules (under :data:`KERNELS` only) and
    folders (:data:`KERNELS` and below only), modules and folders named
    like :data:`MODULE_NAME` and :data:`TAG_NAME` there, the compiled code
    of a module stem in their ``__pycache__``, the tunings file
    (:func:`_own_tunings`) and temporary files of interrupted writes of
    any of these.  Others: every other file under :data:`KERNELS` and every
    other item at the top of ``root`` (not looked into).
    """
    manifest = _manifest(root, warn=warn)
    kernels = root / KERNELS

    def below_kernels(path: Path | None) -> bool:
        return path is not None and (path == kernels or kernels in path.parents)

    folders = {p for p in (_inside(root, f) for f in manifest["folders"]) if below_kernels(p) and p.is_dir()}
    modules: set[Path] = set()
    for key, entry in manifest["entries"].items():
        path = _inside(root, key)
        if entry.get("kind") == "kernel module" and below_kernels(path) and path.suffix == ".py" \
                and path.is_file():  # fmt: skip
            modules.add(path)
    if kernels.is_dir() and not kernels.is_symlink():  # entries older than the manifest, by their names
        for tag in kernels.iterdir():
            if tag.is_dir() and not tag.is_symlink() and (TAG_NAME.fullmatch(tag.name) or tag in folders):
                folders.add(tag)
                modules.update(p for p in tag.glob("*.py") if MODULE_NAME.fullmatch(p.stem) and p.is_file())
    stems = {p.stem for p in modules}
    compiled: set[Path] = set()
    for folder in [f for f in folders if f != kernels]:
        cache = folder / "__pycache__"
        if not cache.is_dir() or cache.is_symlink():
            continue
        folders.add(cache)
        for path in cache.iterdir():
            stem = path.name.split(".", 1)[0]
            if path.name.endswith(COMPILED_SUFFIXES) and (stem in stems or MODULE_NAME.fullmatch(stem)) \
                    and path.is_file():  # fmt: skip
                compiled.add(path)
    recorded_tunings = manifest["entries"].get(TUNINGS, {}).get("kind") == "tunings"
    tunings = [root / TUNINGS] if _own_tunings(root, recorded_tunings) else []
    owned = modules | compiled | set(tunings)
    own_names = {root: {MANIFEST, *(TUNINGS for _ in tunings)}}
    for path in modules | compiled:
        own_names.setdefault(path.parent, set()).add(path.name)
    for folder, names in own_names.items():  # temporary files of interrupted writes
        with contextlib.suppress(OSError):
            owned.update(p for p in folder.iterdir() if _leftover(p.name, names) and p.is_file())
    foreign: list[str] = []
    if root.is_dir():
        kept = {KERNELS, MANIFEST, f"{MANIFEST}.lock", f"{TUNINGS}.lock", *(TUNINGS for _ in tunings)}
        foreign += [p.name for p in root.iterdir() if p.name not in kept and p not in owned]
    if kernels.is_dir() and not kernels.is_symlink():
        for top, _dirs, files in os.walk(kernels):
            foreign += [_relative(root, Path(top) / n) for n in files if Path(top) / n not in owned
                        and not (Path(top) in folders and COMPILE_LOCK_NAME.fullmatch(n))]
    if folders:  # the folder of the cache's own folders (removed only when empty)
        folders.add(kernels)
    return {
        "modules": sorted(modules), "compiled": sorted(compiled), "tunings": tunings, "owned": sorted(owned),
        "folders": sorted((f for f in folders if f.is_dir()), key=lambda p: -len(p.parts)),
        "foreign": sorted(foreign), "recorded": set(manifest["entries"]),
    }  # fmt: skip


def _size(paths) -> int:
    total = 0
    for path in paths:
        with contextlib.suppress(OSError):
            total += path.stat().st_size
    return total


def _info(root: Path, inventory: dict) -> dict:
    tunings = inventory["tunings"]
    return {
        "folder": str(root),
        "source": "$DIAMONDLAB_CACHE" if os.environ.get("DIAMONDLAB_CACHE") else "platform default",
        "bytes": _size(inventory["owned"]),
        "kernel_modules": len(inventory["modules"]),
        "compiled": len(inventory["compiled"]),
        "tunings": len(read_json(tunings[0])) if tunings else 0,
        "unrecorded": sum(_relative(root, p) not in inventory["recorded"] for p in inventory["modules"]),
        "foreign": len(inventory["foreign"]),
        "foreign_examples": inventory["foreign"][:5],
    }


def cache_info() -> dict:
    """What the cache holds: its ``folder``, ``source`` and ``bytes``, its entries by kind, and what else.

    ``kernel_modules`` counts the generated kernel modules (``unrecorded``
    of them recognised by their names only: written before the manifest),
    ``compiled`` Numba's compiled-code files beside them, ``tunings`` the
    auto-tuner's entries, ``bytes`` the size of all of those.  ``foreign``
    counts the other files (under :data:`KERNELS`) and other items (at the
    top of the folder), which :func:`clear_cache` leaves alone;
    ``foreign_examples`` names the first five, relative to the folder.
    """
    root = cache_root(create=False)
    return _info(root, _inventory(root, warn=True))


def clear_cache() -> dict:
    """Remove the cache's own entries (nothing else in the folder); return :func:`cache_info` of before.

    Removes the kernel modules and their compiled code, the tunings and
    the manifest, then the folders the cache made where nothing else is
    left in them; the lock files stay (another process may hold one).
    Runs under the manifest's lock and removes the tunings under theirs;
    clear the kernels while no diamondlab process is loading them.
    """
    root = cache_root(create=False)
    if not root.is_dir():
        return _info(root, _inventory(root))
    with file_lock(root / MANIFEST):
        inventory = _inventory(root, warn=True)
        before = _info(root, inventory)
        for path in inventory["owned"]:
            if path not in inventory["tunings"]:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
        if inventory["tunings"]:
            with file_lock(root / TUNINGS), contextlib.suppress(FileNotFoundError):
                (root / TUNINGS).unlink()
        for folder in inventory["folders"]:  # deepest first; a folder still holding anything stays
            with contextlib.suppress(OSError):
                folder.rmdir()
        with contextlib.suppress(FileNotFoundError):
            (root / MANIFEST).unlink()
    return before
