"""Atomic files: run records as ``.npz`` that another code can rerun.

Contract
--------
:func:`write_atomically` writes through a temporary file in the target's
folder and renames it into place, so a reader never sees a half-written
file and an interrupted write leaves the old file (or none).
:func:`save_run` stores the two initial layers, the two final layers and
the parameters (order, Courant number, steps, shape, spacing, velocity,
dt, stencil weights and the float32 update coefficients); with a velocity
model or a sponge also the per-cell ``kappa`` (K) and ``damp`` (s) arrays
and the model, and with sources or receivers what every source cell adds at
every step, the receiver cells with their weights, and the traces: enough
to rerun the problem in another code.
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


def save_run(path, sim, initial: tuple[np.ndarray, np.ndarray], first_step: int = 0) -> Path:
    """Write ``path`` (``.npz``) with the layers at ``first_step`` (``initial``) and now, and the parameters.

    ``steps`` in the record is the number of steps between the two pairs of
    layers; ``first_step`` the time level of ``initial_curr``.
    """
    prev, curr = sim.fields
    p = sim.params
    record = {
        "initial_prev": initial[0],
        "initial_curr": initial[1],
        "final_prev": prev,
        "final_curr": curr,
        "order": np.int64(p.order),
        "courant": np.float64(p.courant),
        "steps": np.int64(sim.time_step - first_step),
        "first_step": np.int64(first_step),
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
        "sponge": np.int64(sim.physics.sponge),
        "layout": np.str_(
            "arrays are (x, y, z); levels n-1 and n; u^{n+1} = 2u^n - u^{n-1} + courant^2 * "
            "lap_NO(u^n) with zero values outside the grid"
        ),
    }
    physics = sim.physics
    if physics.velocity_model is not None:
        record["velocity_model"] = physics.velocity_model
    kappa, damp = physics.medium(p.dt)
    if kappa is not None:
        # the per-cell update: ((2u - a u-) + K lap u) * r with a = 1 - s and r = 1 / (1 + s) in
        # float32, lap with bare weights
        record["kappa"] = kappa
        record["damp"] = damp if damp is not None else np.zeros_like(kappa)
    if physics.has_points:  # what each source cell adds at every step, and where receivers sample
        record["source_cells"] = physics.source_points.cells
        samples = physics.source_samples(first_step, sim.time_step - first_step, p.dt)
        record["source_samples"] = samples[: len(physics.source_points)]
        record["receiver_cells"] = physics.receiver_points.cells
        record["receiver_weights"] = physics.receiver_points.weights
        record["receiver_owner"] = physics.receiver_points.owner
        record["traces"] = sim.traces
    return write_atomically(path, lambda fh: np.savez(fh, **record))


def load_run(path) -> dict:
    """Read a record written by :func:`save_run` as a dict of arrays and scalars."""
    with np.load(path) as data:
        out = {k: data[k] for k in data.files}
    out.setdefault("first_step", 0)
    for key in ("order", "steps", "first_step", "size", "nt", "sponge"):
        if key not in out:
            continue
        out[key] = int(out[key])
    for key in ("courant", "spacing", "velocity", "dt"):
        out[key] = float(out[key])
    out["shape"] = tuple(int(n) for n in out["shape"])
    return out
