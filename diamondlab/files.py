"""Files that are never half-written: a temporary file in the target's folder, renamed into place.

Contract
--------
:func:`atomic_path` yields a temporary path next to the target and renames
it to the target when the block ends without error; an error or an
interrupt removes it and leaves an older target as it was.  The file gets
the permissions of any new file (``0o666`` less the umask).
:func:`write_atomically` calls a writer on it (or writes ``bytes``/``str``)
and syncs the data to disk before the rename.  Every file diamondlab
writes goes through here: run records, snapshots, traces, manifests, the
kernel and tuning caches.  A bottom floor: it imports nothing of
diamondlab.

A writer that cannot be trusted to raise (VTK's writers on a full disk
write a truncated file and return) is checked before the rename: both
functions take ``verify``, a function of the temporary path that raises
``OSError`` or ``ValueError`` when the file is incomplete (:func:`npz_verifier`,
:func:`vti_verifier`); the temporary file is then removed and an ``OSError``
naming the target is raised, so that a file in place is always complete.

:class:`FolderLock` keeps a folder for one process at a time: a lock file
made with ``O_EXCL`` semantics (a hard link, so that it is never seen
half-written) holding the holder's pid, host and start time; a lock whose
process is gone (same host) is taken over.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import socket
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

__all__ = [
    "FolderLock", "FolderLockedError", "atomic_path", "npz_verifier", "vti_verifier", "write_atomically",
]

#: Characters of the target's name kept in a temporary file's name (the rest would not fit NAME_MAX).
TEMP_STEM = 64


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _sync(path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_path(path, suffix: str = ".tmp", verify: Callable[[Path], None] | None = None) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; rename it to ``path`` when the block ends without error.

    ``suffix`` ends the temporary name (for writers that choose the format
    by the extension).  The file is synced to disk, then ``verify(tmp)``
    (when given) checks it: an ``OSError`` or ``ValueError`` there removes
    the temporary file and raises an ``OSError`` that names ``path``.  The
    temporary name keeps at most :data:`TEMP_STEM` characters of the
    target's, so it fits wherever the target's name does.

    >>> import tempfile, pathlib
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "a.txt"
    >>> with atomic_path(target) as tmp:
    ...     _ = tmp.write_text("done")
    >>> target.read_text(), sorted(p.name for p in target.parent.iterdir())
    ('done', ['a.txt'])
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:TEMP_STEM]}.", suffix=suffix)
    try:
        os.fchmod(fd, 0o666 & ~_umask())
        os.close(fd)
        yield Path(tmp)
        _sync(tmp)
        if verify is not None:
            try:
                verify(Path(tmp))
            except (OSError, ValueError, EOFError, zipfile.BadZipFile) as err:
                reason = getattr(err, "strerror", None) or err
                raise OSError(getattr(err, "errno", None) or errno.EIO,
                              f"{path}: written incompletely ({reason}); not kept") from None
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_atomically(
    path,
    write: Callable[[object], None] | bytes | str,
    mode: str = "wb",
    verify: Callable[[Path], None] | None = None,
) -> Path:
    """Write ``path`` atomically: ``write(fileobj)``, or the ``bytes``/``str`` given; synced, then renamed.

    ``verify`` as in :func:`atomic_path`.

    >>> import tempfile, pathlib
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "b.json"
    >>> write_atomically(target, '{"a": 1}').read_text()
    '{"a": 1}'
    """
    if isinstance(write, (bytes, str)):
        data = write.encode() if isinstance(write, str) else write
        write, mode = (lambda fh: fh.write(data)), "wb"
    with atomic_path(path, verify=verify) as tmp, open(tmp, mode) as fh:
        write(fh)
        fh.flush()
        os.fsync(fh.fileno())
    return Path(path)


def npz_verifier(keys: Iterable[str]) -> Callable[[Path], None]:
    """A ``verify`` for :func:`write_atomically`: the ``.npz`` opens and holds exactly ``keys``, whole.

    The archive's directory (at its end) is read and every member must lie
    within the file, so a truncated file fails; no array is read.

    >>> import tempfile, pathlib, numpy as np
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "c.npz"
    >>> _ = write_atomically(target, lambda fh: np.savez(fh, a=np.ones(3)), verify=npz_verifier(["a"]))
    >>> write_atomically(target, lambda fh: np.savez(fh, b=np.ones(3)), verify=npz_verifier(["a"]))
    Traceback (most recent call last):
    ...
    OSError: [Errno 5] ...c.npz: written incompletely (holds ['b'], not ['a']); not kept
    """
    import numpy as np

    expected = sorted(keys)

    def verify(path: Path) -> None:
        size = os.path.getsize(path)
        with np.load(path, allow_pickle=False) as data:
            if sorted(data.files) != expected:
                raise ValueError(f"holds {sorted(data.files)}, not {expected}")
            for info in data.zip.infolist():
                if info.header_offset + info.compress_size > size:
                    raise ValueError(f"{info.filename} runs past the end of the file")

    return verify


def vti_verifier(least_bytes: int = 0) -> Callable[[Path], None]:
    """A ``verify`` for a VTK XML file: it starts as XML, ends with ``</VTKFile>`` and has ``least_bytes``."""

    def verify(path: Path) -> None:
        size = os.path.getsize(path)
        if size < max(least_bytes, 32):
            raise ValueError(f"{size} bytes, fewer than the {max(least_bytes, 32)} expected")
        with open(path, "rb") as fh:
            head = fh.read(64)
            fh.seek(max(size - 64, 0))
            tail = fh.read().rstrip()
        if not head.lstrip().startswith((b"<?xml", b"<VTKFile")) or not tail.endswith(b"</VTKFile>"):
            raise ValueError("not a whole VTK XML file (no </VTKFile> at its end)")

    return verify


class FolderLockedError(RuntimeError):
    """The folder is locked by another live process (the message names it)."""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


class FolderLock:
    """A lock file in a folder, held by one process at a time; released (removed) by :meth:`release`.

    The file holds the holder's pid, host and start time as JSON.  It is made whole
    under a temporary name and hard-linked to its name, which fails if the
    name exists (``O_EXCL`` semantics on every local file system).  A lock
    left by a process of this host that is no longer alive is stale and
    taken over; a lock of a live process, or of another host, raises
    :class:`FolderLockedError` naming the holder.

    Parameters
    ----------
    folder : path
        The folder to lock (it must exist).
    name : str
        The lock file's name in it.
    what : str
        How messages name the folder, e.g. ``--out results`` (default: the folder).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> with FolderLock(folder):
    ...     FolderLock(folder).acquire()
    Traceback (most recent call last):
    ...
    diamondlab.files.FolderLockedError: ... is in use by another run (pid ..., started ...): ...
    >>> list(folder.iterdir())
    []
    """

    def __init__(self, folder, name: str = ".diamondlab.lock", what: str | None = None):
        self.folder = Path(folder)
        self.path = self.folder / name
        self.what = what or str(self.folder)
        self.held = False

    def holder(self) -> dict | None:
        """What the lock file says of its holder; None without a lock file (an unreadable one: {})."""
        try:
            return json.loads(self.path.read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            return {}

    def acquire(self) -> FolderLock:
        """Take the lock or raise :class:`FolderLockedError` (a stale lock is taken over)."""
        me = {"pid": os.getpid(), "host": socket.gethostname(),
              "started": time.strftime("%Y-%m-%d %H:%M:%S %z")}  # fmt: skip
        fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=".diamondlab-lock.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w") as fh:
                json.dump(me, fh)
            for _ in range(2):
                try:
                    os.link(tmp, self.path)
                    self.held = True
                    return self
                except FileExistsError:
                    holder = self.holder()
                    if holder is None:
                        continue  # released meanwhile
                    pid, host = holder.get("pid"), holder.get("host")
                    if host == me["host"] and isinstance(pid, int) and not _alive(pid):
                        with contextlib.suppress(FileNotFoundError):
                            self.path.unlink()  # stale: its process is gone
                        continue
                    who = (f"pid {pid} on {host}, started {holder.get('started')}" if holder else
                           "its lock file is unreadable")  # fmt: skip
                    raise FolderLockedError(
                        f"{self.what} is in use by another run ({who}): wait for it to end or give another "
                        f"folder (if that run is gone, remove {self.path})"
                    ) from None
            raise FolderLockedError(f"{self.what}: could not take the lock {self.path}")
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)

    def release(self) -> None:
        """Remove the lock file (if this object holds it)."""
        if self.held:
            self.held = False
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()

    def __enter__(self) -> FolderLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()
