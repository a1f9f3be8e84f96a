"""Atomic files: run records as ``.npz`` that another code can rerun.

Contract
--------
:func:`write_atomically` writes through a temporary file in the target's
folder and renames it into place, so a reader never sees a half-written
file and an interrupted write leaves the old file (or none).
:func:`save_run` stores the two initial layers, the two final layers and
the parameters (order, Courant number, steps, shape, spacing, velocity,
dt, stencil weights and the float32 update coefficients).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

from diamondlab.numerics import stencil_weights

__all__ = ["load_run", "save_run", "write_atomically"]


def write_atomically(path, write: Callable[[object], None], mode: str = "wb") -> Path:
    """Call ``write(fileobj)`` on a temporary file next to ``path``, then rename it to ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, mode) as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path


def save_run(path, sim, initial: tuple[np.ndarray, np.ndarray]) -> Path:
    """Write ``path`` (``.npz``) with the initial and current layers of ``sim`` and its parameters."""
    prev, curr = sim.fields
    p = sim.params
    record = {
        "initial_prev": initial[0],
        "initial_curr": initial[1],
        "final_prev": prev,
        "final_curr": curr,
        "order": np.int64(p.order),
        "courant": np.float64(p.courant),
        "steps": np.int64(sim.time_step),
        "shape": np.array(sim.shape, dtype=np.int64),
        "spacing": np.float64(p.spacing),
        "velocity": np.float64(p.velocity),
        "dt": np.float64(p.dt),
        "stencil_weights": stencil_weights(p.order),
        "update_coefficients": p.coefficients,
        "algorithm": np.str_(sim.algorithm),
        "backend": np.str_(sim.backend_name),
        "size": np.int64(sim.size),
        "nt": np.int64(sim.nt),
        "layout": np.str_(
            "arrays are (x, y, z); levels n-1 and n; u^{n+1} = 2u^n - u^{n-1} + courant^2 * "
            "lap_NO(u^n) with zero values outside the grid"
        ),
    }
    return write_atomically(path, lambda fh: np.savez(fh, **record))


def load_run(path) -> dict:
    """Read a record written by :func:`save_run` as a dict of arrays and scalars."""
    with np.load(path) as data:
        out = {k: data[k] for k in data.files}
    for key in ("order", "steps", "size", "nt"):
        out[key] = int(out[key])
    for key in ("courant", "spacing", "velocity", "dt"):
        out[key] = float(out[key])
    out["shape"] = tuple(int(n) for n in out["shape"])
    return out
