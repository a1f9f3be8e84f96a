"""Generated kernel modules: written to the user's cache folder and imported from there.

Contract
--------
Kernels generated per (NO, DTS) are Python source text.  Numba caches
compiled code next to a real source file only, so :func:`load_generated`
writes the text (atomically, only when it changed) to
``cache_dir() / f"{prefix}_{sha1}.py"`` and imports it.  The folder is
``$DIAMONDLAB_CACHE/kernels`` or ``$XDG_CACHE_HOME/diamondlab/kernels``
(``~/.cache/diamondlab/kernels`` by default).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
from pathlib import Path
from types import ModuleType

__all__ = ["cache_dir", "load_generated"]


def cache_dir() -> Path:
    """Folder for generated kernel modules (``$DIAMONDLAB_CACHE`` or ``~/.cache/diamondlab``)."""
    root = os.environ.get("DIAMONDLAB_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "diamondlab"
    )
    path = Path(root) / "kernels"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _write_atomically(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.replace(tmp, path)


def load_generated(source: str, prefix: str) -> ModuleType:
    """Import ``source`` as the module ``{prefix}_{sha1 of source}`` from the cache folder."""
    digest = hashlib.sha1(source.encode()).hexdigest()[:12]
    name = f"{prefix}_{digest}"
    path = cache_dir() / f"{name}.py"
    if not path.exists() or path.read_text() != source:
        _write_atomically(path, source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
