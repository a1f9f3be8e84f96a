"""What a simulation adds to the bare scheme: medium, sponge, sources and receivers.

Contract
--------
:class:`Physics` turns the user's description (a constant or per-cell
velocity, a sponge width, :class:`~diamondlab.sources.Source` and
:class:`~diamondlab.sources.Receiver` lists) into what a backend takes:

- ``kappa`` (per-cell ``K = (c dt / h)^2``) and ``damp`` (``s = eta dt / 2``)
  float32 arrays, both None for a constant velocity without sponge (the
  backends' fast path);
- source and receiver *points* (cells; off-grid positions become up to eight
  cells with trilinear weights);
- per call, the samples each source point adds at each step,
  ``dt^2 w s(t_n) / h^3`` in float32, and the assembly of receiver traces
  from the values the kernels recorded at the receiver points (a fixed-order
  weighted sum, so both algorithms give identical traces).

The sponge is the default for open problems: with sources and no explicit
``sponge``, a layer of :data:`DEFAULT_SPONGE` cells is used.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from diamondlab.media import check_velocity, sponge_damping
from diamondlab.sources import Receiver, Source, check_resolution, trilinear_points

__all__ = ["DEFAULT_SPONGE", "Physics", "PointSet"]

#: Sponge width (cells) used when sources are given and no sponge is asked for.
DEFAULT_SPONGE = 16


@dataclass(frozen=True)
class PointSet:
    """Sources or receivers expanded to grid cells with trilinear weights."""

    cells: np.ndarray  # (npoints, 3) int64
    weights: np.ndarray  # (npoints,) float64
    owner: np.ndarray  # (npoints,) int64: index of the source / receiver

    @classmethod
    def expand(cls, items, shape, spacing: float, what: str) -> PointSet:
        cells, weights, owner = [], [], []
        for i, item in enumerate(items):
            c, w = trilinear_points(item.position, shape, spacing, item.units, f"{what} {i}")
            cells.append(c)
            weights.append(w)
            owner.append(np.full(len(w), i, dtype=np.int64))
        if not cells:
            return cls(np.zeros((0, 3), np.int64), np.zeros(0), np.zeros(0, np.int64))
        return cls(np.concatenate(cells), np.concatenate(weights), np.concatenate(owner))

    def __len__(self) -> int:
        return len(self.weights)


def _as_receiver(r) -> Receiver:
    return r if isinstance(r, Receiver) else Receiver(tuple(r))


class Physics:
    """Medium, sponge, sources and receivers of one simulation (see the module contract)."""

    def __init__(self, shape, spacing: float, velocity, sources=(), receivers=(), sponge=None):
        self.shape = tuple(shape)
        self.spacing = float(spacing)
        if np.ndim(velocity) == 0:
            if not float(velocity) > 0:
                raise ValueError(f"velocity (c) must be > 0; got {velocity}")
            self.velocity_model = None
            self.velocity_max = self.velocity_min = float(velocity)
        else:
            self.velocity_model = check_velocity(velocity, self.shape)
            self.velocity_max = float(self.velocity_model.max())
            self.velocity_min = float(self.velocity_model.min())
        self.sources = [s if isinstance(s, Source) else Source(**s) for s in sources]
        self.receivers = [_as_receiver(r) for r in receivers]
        if sponge is None:
            sponge = min(DEFAULT_SPONGE, (min(self.shape) - 1) // 2) if self.sources else 0
        if isinstance(sponge, bool) or not isinstance(sponge, (int, np.integer)) or sponge < 0:
            raise ValueError(f"sponge must be a width in cells >= 0 (0: zero boundary); got {sponge!r}")
        self.sponge = int(sponge)
        self.source_points = PointSet.expand(self.sources, self.shape, self.spacing, "source")
        self.receiver_points = PointSet.expand(self.receivers, self.shape, self.spacing, "receiver")
        check_resolution(self.sources, self.velocity_min, self.spacing)

    @property
    def has_points(self) -> bool:
        return len(self.source_points) > 0 or len(self.receiver_points) > 0

    def medium(self, dt: float) -> tuple[np.ndarray | None, np.ndarray | None]:
        """``(kappa, damp)`` for time step ``dt``; ``(None, None)`` on the constant fast path."""
        if self.velocity_model is None and self.sponge == 0:
            return None, None
        if self.velocity_model is None:
            kappa = np.full(self.shape, (self.velocity_max * dt / self.spacing) ** 2, dtype=np.float32)
        else:
            kappa = ((self.velocity_model.astype(np.float64) * dt / self.spacing) ** 2).astype(np.float32)
        damp = None
        if self.sponge:
            damp = sponge_damping(self.shape, self.sponge, self.velocity_max, self.spacing, dt)
        return kappa, damp

    def source_samples(self, first_step: int, height: int, dt: float) -> np.ndarray:
        """Float32 ``(npoints, height)``: what each source point adds at steps ``first_step ..``."""
        pts = self.source_points
        out = np.zeros((max(len(pts), 1), height), dtype=np.float32)
        if not len(pts):
            return out
        scale = dt * dt / self.spacing**3
        wavelets = np.array([s.samples(height, dt, first_step) for s in self.sources])
        out[: len(pts)] = (scale * pts.weights[:, None] * wavelets[pts.owner]).astype(np.float32)
        return out

    def traces(self, values: np.ndarray) -> np.ndarray:
        """Receiver traces ``(height, nreceivers)`` from point values ``(height, npoints)``."""
        pts = self.receiver_points
        out = np.zeros((values.shape[0], len(self.receivers)))
        for j in range(len(pts)):  # fixed order: identical traces from identical point values
            out[:, pts.owner[j]] += pts.weights[j] * values[:, j].astype(np.float64)
        return out.astype(np.float32)
