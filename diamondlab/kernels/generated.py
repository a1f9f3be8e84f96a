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
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from diamondlab.caches import KERNELS, cache_root, digest, fingerprint, write_atomically

__all__ = ["GENERATOR_VERSION", "cache_dir", "load_generated"]

#: Version of the kernel generators (:mod:`diamondlab.kernels.cpu`,
#: :mod:`diamondlab.kernels.cuda_source`) and of the code their modules import
#: (:func:`diamondlab.kernels.cuda.ldcg_intrinsic`).  Bump it when they change what
#: a kernel computes or how fast it runs in a way the generated text does not
#: show: it names the kernel folder and is part of every tuning's key
#: (:mod:`diamondlab.engine.autotune`).
#: 2: the CPU kernels put back each thread's MXCSR after an iteration (issue 27).
GENERATOR_VERSION = 2


def cache_dir() -> Path:
    """Folder of the generated kernel modules: ``kernels/<tag>`` in the cache folder (made if missing)."""
    tag = f"g{GENERATOR_VERSION}-{digest(fingerprint(generator=GENERATOR_VERSION, cpu=False))[:10]}"
    path = cache_root() / KERNELS / tag
    path.mkdir(parents=True, exist_ok=True)
    return path


def load_generated(source: str, prefix: str) -> ModuleType:
    """Import ``source`` as the module ``{prefix}_{sha1 of source}`` from the cache folder."""
    name = f"{prefix}_{hashlib.sha1(source.encode()).hexdigest()[:12]}"
    path = cache_dir() / f"{name}.py"
    if not path.exists() or path.read_text() != source:  # the same name is the same text: no lock needed
        write_atomically(path, source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
