"""Backend registry: where the fields live and which kernels advance them.

Contract
--------
A backend class is constructed as ``Backend(params, shape, size, nt, **options)`` with
:class:`~diamondlab.numerics.WaveParameters` ``params``, the grid
``shape = (nx, ny, nz)``, the tile size ``size`` (DTS), the torre height
``nt`` and backend-specific keyword ``options`` that change speed, never
results (the CUDA backend's ``pipelined``, ``band``, ``chunk``); it raises
``ValueError`` naming the parameter for anything it cannot run.  It owns
the two field arrays (levels ``n - 1`` and ``n``) and offers::

    compile()                # build or load the kernels (called before the first timing)
    set_fields(prev, curr)   # host float32 arrays of shape (nx, ny, nz)
    fields() -> (prev, curr) # host copies, in (x, y, z) order
    current_view()           # u^n for reading between steps: a view where possible
    planes(index, strides)   # (xy, xz, yz) of u^n through index, sampled from index % strides
    step(nsteps[, src_samples]) -> receiver values   # stepwise time stepping
    sweep(height[, src_samples]) -> receiver values  # one DiamondTorre sweep, 1 <= height <= nt
    synchronize()            # wait until queued work is done (timing)
    options                  # the speed options in force (a dict; may be empty)

and, for physics (:mod:`diamondlab.engine.physics`)::

    set_medium(kappa, damp)          # per-cell K and sponge damping, or (None, None)
    set_points(sources, receivers)   # integer (x, y, z) cells of the point sources and receivers

where ``src_samples`` is ``(npoints, steps)`` float32 (what each source point
adds at each step) and the receiver values are ``(steps, nreceivers)``.
Both engines run DiamondTorre bit for bit equal to their stepwise kernel
with all of it switched on.

and the class attributes ``name``, ``available() -> bool``,
``unavailable_reason() -> str``, ``default_tiling(order, shape=None) -> (DTS, Nt)``,
``tuning_candidates(order) -> [(DTS, Nt), ...]`` and
``tuning_options(order, size) -> [options, ...]`` (what the auto-tuner
measures; ``[{}]`` for a backend without options).  The
simulation object (:mod:`diamondlab.engine.simulation`) keeps the clock.

Backends are registered by name with the module that defines them, so that
looking one up imports only that backend (``"cuda"`` imports numba.cuda).
"""

from __future__ import annotations

import importlib

__all__ = [
    "BACKENDS", "available_backends", "get_backend", "planes_of", "register_backend", "resolve_backend",
]

#: name -> "module:Class"
BACKENDS: dict[str, str] = {
    "cpu": "diamondlab.engine.cpu_backend:CPUBackend",
    "cuda": "diamondlab.engine.cuda_backend:CUDABackend",
}


def planes_of(u, index, strides):
    """The ``planes(index, strides)`` of the contract, cut from an ``(nx, ny, nz)`` host array (copies).

    Samples start at ``index % strides`` so that every plane holds the point.

    >>> import numpy as np
    >>> u = np.arange(4 * 5 * 6).reshape(4, 5, 6)
    >>> xy, xz, yz = planes_of(u, (1, 2, 3), (2, 2, 2))
    >>> xy.shape, bool(xy[0, 1] == u[1, 2, 3]), yz.shape
    ((2, 3), True, (3, 3))
    """
    import numpy as np

    (ix, iy, iz), (sx, sy, sz) = index, strides
    ox, oy, oz = ix % sx, iy % sy, iz % sz
    return (np.array(u[ox::sx, oy::sy, iz]), np.array(u[ox::sx, iy, oz::sz]), np.array(u[ix, oy::sy, oz::sz]))


def register_backend(name: str, target: str) -> None:
    """Register a backend class given as ``"package.module:Class"``."""
    if ":" not in target:
        raise ValueError(f"target must look like 'package.module:Class'; got {target!r}")
    BACKENDS[name] = target


def get_backend(name: str):
    """The backend class registered as ``name``."""
    if name not in BACKENDS:
        raise ValueError(f"backend must be one of {sorted(BACKENDS) + ['auto']}; got {name!r}")
    module, cls = BACKENDS[name].split(":")
    try:
        return getattr(importlib.import_module(module), cls)
    except ImportError as err:
        raise RuntimeError(
            f"backend {name!r} cannot be loaded ({err}); install diamondlab[{name}] or use backend='cpu'"
        ) from err


def available_backends() -> list[str]:
    """Names of the registered backends that can run on this machine."""
    out = []
    for name in BACKENDS:
        try:
            if get_backend(name).available():
                out.append(name)
        except RuntimeError:
            continue
    return out


def resolve_backend(name: str) -> str:
    """Turn ``"auto"`` into ``"cuda"`` where a GPU is present, else ``"cpu"``; check the rest."""
    if name == "auto":
        try:
            if get_backend("cuda").available():
                return "cuda"
        except RuntimeError:
            pass
        return "cpu"
    cls = get_backend(name)
    if not cls.available():
        raise RuntimeError(cls.unavailable_reason())
    return name
