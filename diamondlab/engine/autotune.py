"""Auto-tuning: pick DTS and Nt for a grid and device by a short measured search, cached.

Contract
--------
:func:`autotune` measures DiamondTorre for every ``(DTS, Nt)`` the backend
proposes (``Backend.tuning_candidates(order)``) that fits the grid, each with
every set of speed options the backend proposes for it
(``Backend.tuning_options(order, DTS)``: on the GPU whole-torre or
pipelined waits and the launch order): one warm-up sweep (which also
compiles), then the median of ``repeats`` timed sweeps, on the real grid
(with the constant-velocity kernels; pass ``configure`` to time another
medium).  The fastest :class:`Tuning` is stored in ``autotune.json`` in the
kernel cache folder, keyed by backend, device, order and shape, and
returned without measuring the next time.  ``Simulation(size="auto",
nt="auto")`` (``--dts auto --nt auto`` on the command line) uses it.
"""

from __future__ import annotations

import json
import os
import platform
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from diamondlab.engine.backends import get_backend
from diamondlab.engine.io import write_atomically
from diamondlab.engine.measure import measure_backend
from diamondlab.kernels.generated import cache_dir
from diamondlab.numerics import WaveParameters

__all__ = ["Tuning", "autotune", "tuning_key"]


class Tuning(NamedTuple):
    """The auto-tuner's choice: tile size, torre height and the backend's speed options."""

    size: int
    nt: int
    options: dict


def _cache_file():
    return cache_dir().parent / "autotune.json"


def _device_name(backend: str) -> str:
    if backend == "cuda":
        from numba import cuda

        name = cuda.get_current_device().name
        return name.decode() if isinstance(name, bytes) else str(name)
    return f"{os.cpu_count()}-core {platform.machine()} {platform.processor()}".strip()


def tuning_key(backend: str, order: int, shape) -> str:
    """Cache key: backend, device, NO and grid shape."""
    nx, ny, nz = shape
    return f"{backend}|{_device_name(backend)}|NO={order}|{nx}x{ny}x{nz}"


def _load() -> dict:
    try:
        return json.loads(_cache_file().read_text())
    except (OSError, ValueError):
        return {}


def autotune(
    params: WaveParameters,
    shape,
    backend: str = "cpu",
    repeats: int = 3,
    configure: Callable | None = None,
    refresh: bool = False,
    log: Callable[[str], None] | None = None,
) -> Tuning:
    """The fastest ``(DTS, Nt, options)`` of the backend's candidates on this grid and device.

    ``configure(backend_object)`` may set the medium and points before timing.
    """
    key = tuning_key(backend, params.order, shape)
    cache = _load()
    if key in cache and not refresh:
        size, nt = cache[key]["best"]
        return Tuning(int(size), int(nt), dict(cache[key].get("options", {})))
    cls = get_backend(backend)
    rng = np.random.default_rng(0)
    prev = rng.standard_normal(shape, dtype=np.float32) * np.float32(1e-3)
    measured, options = {}, {}
    candidates = [
        (size, nt, opts)
        for size, nt in cls.tuning_candidates(params.order)
        for opts in cls.tuning_options(params.order, size)
    ]
    for size, nt, opts in candidates:
        try:
            engine = cls(params, shape, size, nt, **opts)
        except ValueError:  # tile larger than the grid, pair not built, ...
            continue
        if configure is not None:
            configure(engine)
        engine.compile()
        engine.set_fields(prev, prev)
        timing = measure_backend(engine, "diamondtorre", nt, repeats)
        label = f"{size},{nt}" + (f",{json.dumps(opts, sort_keys=True)}" if opts else "")
        measured[label] = timing.seconds_median / nt
        options[label] = (size, nt, opts)
        if log is not None:
            rate = float(np.prod(shape)) / measured[label] / 1e9
            extra = "".join(f" {k}={v}" for k, v in opts.items())
            log(f"DTS={size} Nt={nt}{extra}: {rate:.3g} G cell updates/s")
        del engine
    if not measured:
        raise ValueError(f"no (DTS, Nt) candidate of backend {backend!r} fits the grid {tuple(shape)}")
    best = Tuning(*options[min(measured, key=measured.get)])
    cache = _load()
    cache[key] = {"best": [best.size, best.nt], "options": best.options, "seconds_per_step": measured}
    write_atomically(_cache_file(), lambda fh: fh.write(json.dumps(cache, indent=1)), mode="w")
    return best
