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
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

__all__ = ["atomic_path", "write_atomically"]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_path(path, suffix: str = ".tmp") -> Iterator[Path]:
    """Yield a temporary path next to ``path``; rename it to ``path`` when the block ends without error.

    ``suffix`` ends the temporary name (for writers that choose the format
    by the extension).

    >>> import tempfile, pathlib
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "a.txt"
    >>> with atomic_path(target) as tmp:
    ...     _ = tmp.write_text("done")
    >>> target.read_text(), sorted(p.name for p in target.parent.iterdir())
    ('done', ['a.txt'])
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=suffix)
    try:
        os.fchmod(fd, 0o666 & ~_umask())
        os.close(fd)
        yield Path(tmp)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_atomically(path, write: Callable[[object], None] | bytes | str, mode: str = "wb") -> Path:
    """Write ``path`` atomically: ``write(fileobj)``, or the ``bytes``/``str`` given; synced, then renamed.

    >>> import tempfile, pathlib
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "b.json"
    >>> write_atomically(target, '{"a": 1}').read_text()
    '{"a": 1}'
    """
    if isinstance(write, (bytes, str)):
        data = write.encode() if isinstance(write, str) else write
        write, mode = (lambda fh: fh.write(data)), "wb"
    with atomic_path(path) as tmp, open(tmp, mode) as fh:
        write(fh)
        fh.flush()
        os.fsync(fh.fileno())
    return Path(path)
