"""Auto-tuning: pick DTS and Nt for a grid and device by a short measured search, cached.

Contract
--------
:func:`autotune` measures DiamondTorre for every ``(DTS, Nt)`` the backend
proposes (``Backend.tuning_candidates(order)``) that fits the grid, each with
every set of speed options the backend proposes for it
(``Backend.tuning_options(order, DTS)``: on the GPU whole-torre or
pipelined waits and the launch order): one warm-up sweep (which also
compiles), then the median of timed sweeps by the measurement rule
(:func:`~diamondlab.engine.measure.timing.measure`: at least ``repeats``, lasting 0.2 s), on the real grid
(with the constant-velocity kernels; pass ``configure`` to time another
medium).  The fastest :class:`Tuning` is stored in ``autotune.json`` in the
cache folder (:mod:`diamondlab.caches`) and returned without measuring the
next time the same question is asked on the same machine and software: the
key (:func:`tuning_key`) holds the backend, the order, the shape and a
digest of the fingerprint (:func:`tuning_fingerprint`: the CPU's model,
flags and cores, on the GPU its name and compute capability, the
diamondlab, Numba and numba-cuda versions and the kernel generator's
version), and the entry keeps the fingerprint, which must still match.  The
file is updated under a file lock, so processes tuning at once keep every
entry.  ``Simulation(size="auto", nt="auto")`` (``--dts auto --nt auto`` on
the command line) uses it.

A damaged tunings file (not JSON, not an object) or an entry for this
question that the tuner could not have stored (values of the wrong type,
a ``(DTS, Nt)`` or options not among the backend's candidates, a tile that
does not fit the grid) is never fatal: it is measured anew and replaced,
with a :class:`~diamondlab.caches.CacheEntryWarning` naming the file.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from diamondlab import caches
from diamondlab.engine.backends import get_backend
from diamondlab.engine.measure.timing import MIN_REPEATS, measure_backend
from diamondlab.engine.run.interrupts import held_while_compiling
from diamondlab.kernels import generated
from diamondlab.numerics import WaveParameters

__all__ = ["Tuning", "autotune", "tuning_fingerprint", "tuning_key"]


class Tuning(NamedTuple):
    """The auto-tuner's choice: tile size, torre height and the backend's speed options."""

    size: int
    nt: int
    options: dict


def _cache_file():
    return caches.cache_root() / caches.TUNINGS


def tuning_fingerprint(backend: str) -> dict:
    """What a tuning on ``backend`` depends on besides NO and shape (:func:`diamondlab.caches.fingerprint`).

    The CPU always (it runs the CPU kernels and launches the GPU's); on
    ``"cuda"`` also the current device's name and compute capability.
    """
    gpu = capability = None
    if backend == "cuda":
        from numba import cuda

        device = cuda.get_current_device()
        gpu = getattr(device, "name", "CUDA simulator")
        gpu = gpu.decode() if isinstance(gpu, bytes) else str(gpu)
        capability = getattr(device, "compute_capability", None)
    return caches.fingerprint(generated.GENERATOR_VERSION, gpu=gpu, compute_capability=capability)


def tuning_key(backend: str, order: int, shape) -> str:
    """Cache key: backend, NO, grid shape and the digest of :func:`tuning_fingerprint`."""
    nx, ny, nz = shape
    return f"{backend}|NO={order}|{nx}x{ny}x{nz}|{caches.digest(tuning_fingerprint(backend))}"


def _lookup(params: WaveParameters, shape, backend: str) -> Tuning | None:
    """The stored tuning for this question on this machine and software, if there is a valid one.

    An entry recorded elsewhere (another fingerprint) is passed over; one
    that is damaged is passed over with a :class:`~diamondlab.caches.CacheEntryWarning`.
    """
    path = _cache_file()
    key = tuning_key(backend, params.order, shape)
    data = caches.read_json(path, warn=True)
    strange = sorted(k for k in data if not caches.TUNING_KEY.fullmatch(k))
    if strange:  # the file was changed: what the tuner never stores is dropped at its next store
        names = ", ".join(repr(k) for k in strange[:3]) + (", ..." if len(strange) > 3 else "")
        warnings.warn(f"cache file {path} holds entries the tuner never stores ({names}): they are dropped "
                      "and the tunings measured anew where missing", caches.CacheEntryWarning, stacklevel=3)
    entry = data.get(key)
    if entry is None:
        return None
    recorded = entry.get("fingerprint") if isinstance(entry, dict) else None
    if isinstance(recorded, dict) and recorded != tuning_fingerprint(backend):
        return None  # measured on another machine or software
    try:
        return _valid(entry, params, shape, backend)
    except (KeyError, TypeError, ValueError) as err:
        warnings.warn(f"tuning {key!r} in cache file {path} is not one the tuner stores ({err}): it is "
                      "dropped and measured anew", caches.CacheEntryWarning, stacklevel=3)  # fmt: skip
        return None


def _valid(entry, params: WaveParameters, shape, backend: str) -> Tuning:
    """The :class:`Tuning` of a stored entry; ``ValueError`` or ``TypeError`` unless the tuner could have
    stored it here: its DTS, Nt and options among the backend's candidates and fitting the grid."""
    if not isinstance(entry, dict):
        raise TypeError(f"a JSON {type(entry).__name__}, not an object")
    if entry.get("fingerprint") != tuning_fingerprint(backend):
        raise TypeError("its fingerprint is not an object")
    best, options = entry["best"], entry.get("options", {})
    if not (isinstance(best, list) and len(best) == 2 and all(type(v) is int for v in best)):
        raise TypeError(f"best {best!r} is not two whole numbers")
    if not isinstance(options, dict):
        raise TypeError(f"options {options!r} are not an object")
    cls = get_backend(backend)
    size, nt = best
    if [size, nt] not in json.loads(json.dumps(cls.tuning_candidates(params.order))):  # as stored
        raise ValueError(f"(DTS, Nt) = ({size}, {nt}) is not a candidate of backend {backend!r}")
    if options not in json.loads(json.dumps(cls.tuning_options(params.order, size))):
        raise ValueError(f"options {options!r} are not among those tried")
    cls.check(params, tuple(shape), size, nt, dict(options))  # a ValueError where the tile does not fit
    return Tuning(size, nt, dict(options))


def _store(backend: str, order: int, shape, best: Tuning, seconds_per_step: dict) -> None:
    """Add (or replace) this question's entry, under the file's lock (other entries are kept)."""
    entry = {
        "best": [best.size, best.nt],
        "options": best.options,
        "seconds_per_step": seconds_per_step,
        "fingerprint": tuning_fingerprint(backend),
        "question": {"backend": backend, "order": order, "shape": [int(n) for n in shape]},
    }
    key = tuning_key(backend, order, shape)
    caches.record_entry(_cache_file(), "tunings")  # listed before it is written

    def update(data: dict) -> None:
        for other in [k for k in data if not caches.TUNING_KEY.fullmatch(k)]:  # not the tuner's (warned)
            del data[other]
        data[key] = entry

    caches.update_json(_cache_file(), update)


def autotune(
    params: WaveParameters,
    shape,
    backend: str = "cpu",
    repeats: int = MIN_REPEATS,
    configure: Callable | None = None,
    refresh: bool = False,
    log: Callable[[str], None] | None = None,
) -> Tuning:
    """The fastest ``(DTS, Nt, options)`` of the backend's candidates on this grid and device.

    ``configure(backend_object)`` may set the medium and points before timing.
    """
    cached = None if refresh else _lookup(params, shape, backend)
    if cached is not None:
        return cached
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
        # a stop signal waits for the candidate (Numba compiling would lose it), then ends the tuning
        with held_while_compiling():
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
    _store(backend, params.order, shape, best, measured)
    return best
