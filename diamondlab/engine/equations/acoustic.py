"""What a simulation adds to the bare scheme: medium, sponge, sources and receivers.

Contract
--------
:class:`Physics` turns the user's description (a constant or per-cell
velocity, a sponge width, :class:`~diamondlab.sources.Source` and
:class:`~diamondlab.sources.Receiver` lists) into what a backend takes:

- a :class:`~diamondlab.media.Medium`: ``K = (c dt / h)^2`` as a number,
  a depth profile for a layered model (one velocity per depth: every
  ``(x, y)`` column the same), else a per-cell array; the sponge's ``s = eta dt / 2``
  as three 1D profiles (its ``variant`` "constant" is the backends' fast path);
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

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from diamondlab.media import Medium, check_sponge_width, check_velocity, sponge_profiles
from diamondlab.sources import (
    MIN_POINTS_PER_WAVELENGTH,
    Receiver,
    Source,
    check_resolution,
    trilinear_points,
)

__all__ = ["DEFAULT_SPONGE", "Physics", "PointSet", "depth_profile"]

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


def _as_source(s, i: int) -> Source:
    if isinstance(s, Source):
        return s
    if isinstance(s, dict):
        return Source(**s)
    raise TypeError(
        f"sources[{i}] must be a diamondlab.sources.Source (e.g. Source((x, y, z), 'ricker', "
        f"frequency=10.0)) or a dict of its fields; got {type(s).__name__} {s!r}"
    )


def _as_receiver(r, i: int) -> Receiver:
    if isinstance(r, Receiver):
        return r
    if np.ndim(r) != 1 or len(r) != 3:
        raise TypeError(
            f"receivers[{i}] must be a Receiver or an (x, y, z) position; got {r!r} "
            "(one receiver is receivers=[(x, y, z)])"
        )
    return Receiver(tuple(r))


def _as_list(items, name: str) -> list:
    if isinstance(items, (str, bytes, Source, Receiver)) or not isinstance(items, Iterable):
        raise TypeError(f"{name} must be a list; got {type(items).__name__} {items!r}")
    return list(items)


def _constant_velocity(velocity) -> float:
    if isinstance(velocity, (str, bytes, bool)) or not np.issubdtype(np.asarray(velocity).dtype, np.number):
        raise TypeError(
            f"velocity must be a number (m/s or your units) or a per-cell array of the grid's shape "
            f"(diamondlab.media); got {velocity!r}"
        )
    c = float(velocity)
    if not (np.isfinite(c) and c > 0):
        raise ValueError(f"velocity (c) must be a finite number > 0; got {velocity}")
    return c


def depth_profile(model: np.ndarray) -> np.ndarray | None:
    """The velocity per depth of a model whose ``(x, y)`` columns are all equal (layered), else None.

    Compares one x plane at a time (no temporary of the model's size).

    >>> from diamondlab.media import anomaly_model, layered_model
    >>> depth_profile(layered_model((4, 4, 6), (1.0, 2.0, 3.0))).tolist()
    [1.0, 1.0, 2.0, 2.0, 3.0, 3.0]
    >>> depth_profile(anomaly_model((8, 8, 8))) is None
    True
    """
    column = model[0, 0]
    if all(np.array_equal(plane, np.broadcast_to(column, plane.shape)) for plane in model):
        return column.copy()
    return None


class Physics:
    """Medium, sponge, sources and receivers of one simulation (see the module contract)."""

    def __init__(self, shape, spacing: float, velocity, sources=(), receivers=(), sponge=None):
        self.shape = tuple(shape)
        if isinstance(spacing, (str, bytes, bool)) or not np.isfinite(float(spacing)) or not spacing > 0:
            raise ValueError(f"spacing (h) must be a finite number > 0; got {spacing!r}")
        self.spacing = float(spacing)
        self.velocity_profile = None  # a layered model's velocity per depth
        if np.ndim(velocity) == 0:
            self.velocity_model = None
            self.velocity_max = self.velocity_min = _constant_velocity(velocity)
        else:
            self.velocity_model = check_velocity(velocity, self.shape)
            self.velocity_profile = depth_profile(self.velocity_model)
            self.velocity_max = float(self.velocity_model.max())
            self.velocity_min = float(self.velocity_model.min())
        self.sources = [_as_source(s, i) for i, s in enumerate(_as_list(sources, "sources"))]
        self.receivers = [_as_receiver(r, i) for i, r in enumerate(_as_list(receivers, "receivers"))]
        if sponge is None:
            sponge = min(DEFAULT_SPONGE, (min(self.shape) - 1) // 2) if self.sources else 0
        if isinstance(sponge, bool) or not isinstance(sponge, (int, np.integer)) or sponge < 0:
            raise ValueError(f"sponge must be a width in cells >= 0 (0: zero boundary); got {sponge!r}")
        self.sponge = int(sponge)
        if self.sponge:
            check_sponge_width(self.sponge, self.shape)
        self.source_points = PointSet.expand(self.sources, self.shape, self.spacing, "source")
        self.receiver_points = PointSet.expand(self.receivers, self.shape, self.spacing, "receiver")
        check_resolution(self.sources, self.velocity_min, self.spacing)

    @property
    def needs_backend(self) -> bool:
        """Whether a backend must run more than the bare scheme: a velocity model, a sponge or points."""
        return self.has_points or self.velocity_model is not None or self.sponge > 0

    @property
    def medium_variant(self) -> str:
        """The :attr:`~diamondlab.media.Medium.variant` :meth:`medium` gives, without building it.

        >>> Physics((8, 8, 8), 1.0, 1.0, sponge=2).medium_variant
        'sponge'
        """
        if self.velocity_model is None or self.velocity_min == self.velocity_max:
            return "sponge" if self.sponge else "constant"
        return "layered" if self.velocity_profile is not None else "model"

    @property
    def has_points(self) -> bool:
        return len(self.source_points) > 0 or len(self.receiver_points) > 0

    def summary(self) -> str:
        """The medium and the points in words (for readouts and reports).

        >>> Physics((16, 16, 16), 1.0, 1.0, sponge=4).summary()
        'constant velocity, sponge 4'
        """
        if self.velocity_model is None:
            parts = ["constant velocity"]
        else:
            parts = ["layered velocity model" if self.velocity_profile is not None else "velocity model"]
        if self.sponge:
            parts.append(f"sponge {self.sponge}")
        for name, points in (("source", self.sources), ("receiver", self.receivers)):
            if points:
                parts.append(f"{len(points)} {name}{'s' if len(points) > 1 else ''}")
        return ", ".join(parts)

    def medium(self, dt: float) -> Medium:
        """The :class:`~diamondlab.media.Medium` for time step ``dt``: ``K`` (a number unless a
        velocity model is given, a depth profile for a layered one) and the sponge's three damping
        profiles; no other 3D array."""
        scale = dt / self.spacing
        variant = self.medium_variant
        if variant in ("constant", "sponge"):  # one K for all
            kappa = (self.velocity_max * scale) ** 2
        elif variant == "layered":  # the same float64 arithmetic, once per depth
            kappa = ((self.velocity_profile.astype(np.float64) * scale) ** 2).astype(np.float32)
        else:
            kappa = np.empty(self.shape, dtype=np.float32)
            for x, plane in enumerate(self.velocity_model):  # float64 one plane at a time
                kappa[x] = (plane.astype(np.float64) * scale) ** 2
        damping = None
        if self.sponge:
            damping = sponge_profiles(self.shape, self.sponge, self.velocity_max, self.spacing, dt)
        return Medium(kappa, damping, self.shape)

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

    def quiet_sources(self, first_step: int, steps: int, dt: float) -> list[str]:
        """Why each source that adds nothing visible in steps ``first_step .. first_step + steps`` is quiet.

        A named wavelet is quiet when it peaks (at its delay, ``1.5 / f`` by
        default) after the run ends; an array wavelet when all its samples in
        the run are zero.  The messages say what to change.
        """
        end = (first_step + steps) * dt
        out = []
        for i, src in enumerate(self.sources):
            if isinstance(src.wavelet, str):
                peak = src.delay_used
                if peak <= end:
                    continue
                needed = int(np.ceil(peak / dt)) + 1 - first_step
                if src.delay is not None:
                    change = f", or give it a delay below {end:.4g}"
                else:
                    finest = self.velocity_min / (2.5 * MIN_POINTS_PER_WAVELENGTH * self.spacing)
                    fits = 1.5 / end <= finest
                    change = (
                        f", or a frequency of at least {1.5 / end:.4g} (at most {finest:.4g} keeps "
                        f"{MIN_POINTS_PER_WAVELENGTH:g} points per shortest wavelength)" if fits else
                        f" (a wavelet that peaks sooner needs a frequency above {1.5 / end:.4g}; this grid "
                        f"resolves {finest:.4g} at most)"
                    )  # fmt: skip
                out.append(
                    f"source {i}: its {src.wavelet} wavelet of frequency {src.frequency:g} peaks at "
                    f"t = {peak:.4g} (its delay), after the run ends at t = {end:.4g} ({first_step + steps} "
                    f"steps of dt = {dt:.4g}; velocity, spacing and frequency in consistent units): "
                    f"run at least {needed} steps{change}"
                )
            elif not np.any(src.samples(steps, dt, first_step)):
                out.append(
                    f"source {i}: its wavelet samples are all zero in steps {first_step} .. "
                    f"{first_step + steps - 1} (it has {len(src.wavelet)} samples from step 0)"
                )
        return out

    def record(self) -> dict:
        """The sources, receivers and sponge as arrays, for a run record (:meth:`from_record` reads it)."""
        rec = {"sponge": np.int64(self.sponge)}
        if self.sources:
            rec["source_position"] = np.array([s.position for s in self.sources], dtype=np.float64)
            rec["source_units"] = np.array([s.units for s in self.sources])
            rec["source_frequency"] = np.array([s.frequency for s in self.sources], dtype=np.float64)
            rec["source_amplitude"] = np.array([s.amplitude for s in self.sources], dtype=np.float64)
            rec["source_delay"] = np.array(  # the delay used (a default one too); NaN for sampled wavelets
                [np.nan if s.delay_used is None else s.delay_used for s in self.sources], dtype=np.float64
            )
            names = []
            for i, s in enumerate(self.sources):
                if isinstance(s.wavelet, str):
                    names.append(s.wavelet)
                else:
                    names.append("samples")
                    rec[f"source_{i}_wavelet"] = s.wavelet
            rec["source_wavelet"] = np.array(names)
        if self.receivers:
            rec["receiver_position"] = np.array([r.position for r in self.receivers], dtype=np.float64)
            rec["receiver_units"] = np.array([r.units for r in self.receivers])
        return rec

    @staticmethod
    def from_record(record: dict) -> dict:
        """``velocity``, ``sources``, ``receivers``, ``sponge`` of a run record, as Simulation arguments."""
        sources = []
        for i in range(len(record.get("source_position", ()))):
            name = str(record["source_wavelet"][i])
            delay = float(record["source_delay"][i])
            sources.append(Source(
                tuple(record["source_position"][i]),
                record[f"source_{i}_wavelet"] if name == "samples" else name,
                frequency=float(record["source_frequency"][i]),
                amplitude=float(record["source_amplitude"][i]),
                units=str(record["source_units"][i]),
                delay=None if np.isnan(delay) else delay,
            ))  # fmt: skip
        positions, units = record.get("receiver_position", ()), record.get("receiver_units", ())
        receivers = [Receiver(tuple(p), units=str(u)) for p, u in zip(positions, units, strict=True)]
        velocity = record["velocity_model"] if "velocity_model" in record else record["velocity"]
        return {"velocity": velocity, "sources": sources, "receivers": receivers, "sponge": record["sponge"]}

    def traces(self, values: np.ndarray) -> np.ndarray:
        """Receiver traces ``(height, nreceivers)`` from point values ``(height, npoints)``."""
        pts = self.receiver_points
        out = np.zeros((values.shape[0], len(self.receivers)))
        for j in range(len(pts)):  # fixed order: identical traces from identical point values
            out[:, pts.owner[j]] += pts.weights[j] * values[:, j].astype(np.float64)
        return out.astype(np.float32)
