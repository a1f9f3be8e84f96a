"""CPU backend: padded NumPy fields advanced by the Numba kernels of :mod:`diamondlab.kernels.cpu`.

Contract: see :mod:`diamondlab.engine.backends`.  The two fields are held
with a halo of ``ShS`` zero cells on every side; ``fields()`` returns copies
of the interiors.  ``field_views()`` lends writable views of the two
interiors, so that initial levels can be written in place (e.g. by
:func:`~diamondlab.numerics.gaussian_pulse` with ``out=``) with no
full-size temporary; ``set_fields`` given those views copies nothing.
Schedules are built once per sweep height and cached on the backend (not
on the class: a deleted backend frees its memory).
"""

from __future__ import annotations

import numpy as np

from diamondlab.engine.backends import Backend, planes_of
from diamondlab.geometry import DiamondTile, DiamondTorre, StageSchedule
from diamondlab.kernels.cpu import cpu_kernels
from diamondlab.kernels.generated import compiling, record_compiled
from diamondlab.kernels.points import point_tables
from diamondlab.media import Medium
from diamondlab.numerics import WaveParameters, bare_weights

__all__ = ["CPUBackend"]


def _same_view(a, b) -> bool:
    """Whether ``b`` is an array with exactly ``a``'s memory, dtype, shape and strides."""
    return (
        isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape and a.strides == b.strides
        and a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
    )  # fmt: skip


class CPUBackend(Backend):
    """Fields in host memory, kernels compiled with Numba (parallel over torres of a stage)."""

    name = "cpu"

    #: (DTS, Nt) per NO measured best on a 2-core machine at 256^3 (see BENCHMARKS.md)
    TILING = {2: (12, 48), 4: (6, 48), 6: (4, 48), 8: (3, 48)}

    @classmethod
    def tuning_candidates(cls, order: int) -> list[tuple[int, int]]:
        """(DTS, Nt) pairs the auto-tuner measures: tile radii of about 8, 12 and 16 cells, Nt = 4 R."""
        shs = order // 2
        sizes = sorted({max(1, r // shs) for r in (8, 12, 16)})
        return [(size, 4 * size * shs) for size in sizes]

    @classmethod
    def _check(cls, params: WaveParameters, shape, size: int, nt: int, options: dict) -> dict:
        """DTS, Nt and the domain (at least one tile), from the geometry; no speed options."""
        StageSchedule.check(DiamondTorre(DiamondTile(params.order, size), nt), shape[0], shape[1])
        return {}

    def _build(self, params: WaveParameters, shape, size: int, nt: int, options: dict) -> None:
        self.params = params
        self.shape = shape
        self.size = size
        self.nt = nt
        self.halo = params.order // 2
        self.kernels = cpu_kernels(params.order)
        padded = tuple(n + 2 * self.halo for n in self.shape)
        self._prev = np.zeros(padded, dtype=np.float32)
        self._curr = np.zeros(padded, dtype=np.float32)
        self._medium: tuple | None = None  # (variant, K, AX, AY, AZ, RX, RY, RZ)
        self._weights = bare_weights(params.order)
        self._points = point_tables(self.shape, self.halo)
        self._taken: list[np.ndarray] = []
        self._schedules: dict[int, StageSchedule] = {}

    @property
    def _interior(self):
        h = self.halo
        return tuple(slice(h, h + n) for n in self.shape)

    def set_fields(self, prev: np.ndarray, curr: np.ndarray) -> None:
        """Copy ``(u^{n-1}, u^n)`` into the padded fields; the backend's own views (``field_views``) stay."""
        for field, level in ((self._prev, prev), (self._curr, curr)):
            view = field[self._interior]
            if not _same_view(view, level):
                view[...] = level

    def field_views(self) -> tuple[np.ndarray, np.ndarray]:
        """Writable views ``(u^{n-1}, u^n)`` of the two levels' interiors (float32, ``(nx, ny, nz)``).

        For writing initial levels in place (no full-size copy); the halo stays
        zero.  Valid until the next step or sweep (which may swap the levels).

        >>> from diamondlab.numerics import WaveParameters, gaussian_pulse
        >>> b = CPUBackend(WaveParameters(order=2, courant=0.3), (8, 8, 4), 1, 2)
        >>> prev, curr = b.field_views()
        >>> _ = gaussian_pulse(b.shape, width=2.0, out=curr)
        >>> b.set_fields(prev, curr)  # its own views: nothing is copied
        >>> bool(np.array_equal(b.fields()[1], gaussian_pulse(b.shape, width=2.0)))
        True
        """
        return self._prev[self._interior], self._curr[self._interior]

    def fields(self) -> tuple[np.ndarray, np.ndarray]:
        return self._prev[self._interior].copy(), self._curr[self._interior].copy()

    def current_view(self) -> np.ndarray:
        """Read-only view of the current level's interior (no copy; valid until the next step)."""
        view = self._curr[self._interior]
        view.flags.writeable = False
        return view

    def planes(self, index, strides) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Strided planes ``(xy, xz, yz)`` of the current level through ``index`` (copies)."""
        return planes_of(self.current_view(), index, strides)

    def schedule(self, height: int) -> StageSchedule:
        """The stage schedule of a sweep of ``height`` steps, built once per height and kept here."""
        cached = self._schedules.get(height)
        if cached is None:
            tile = DiamondTile(self.params.order, self.size)
            cached = self._schedules[height] = StageSchedule(DiamondTorre(tile, height), *self.shape[:2])
        return cached

    def set_physics(self, medium: Medium | None = None, sources=(), receivers=()) -> None:
        """The medium (:class:`~diamondlab.media.Medium`; None: the bare scheme) and the integer
        ``(x, y, z)`` cells of the source and receiver points (see kernels.points).

        A constant ``K`` stays a number; ``K`` per cell (a velocity model, layered
        or not) is kept as a padded array; the sponge as padded per-axis profiles of
        :func:`~diamondlab.media.damping_factors`.
        """
        self._points = point_tables(self.shape, self.halo, sources, receivers)
        self._taken = []
        if medium is None or medium.variant == "constant":  # the scheme's own coefficients
            self._medium = None
            return
        padded = [np.pad(f, self.halo, constant_values=1) for f in medium.factors()]
        per_cell = medium.variant in ("model", "layered")  # a layered K is spread over the cells here
        if per_cell:
            k = np.zeros(self._prev.shape, dtype=np.float32)
            k[self._interior] = medium.kappa
        else:
            k = np.float32(medium.kappa)
        self._medium = ("model" if per_cell else "sponge", k, *padded)

    def compile(self) -> None:
        """Compile (or load from Numba's cache) the kernels before anything is timed.

        Runs both algorithms once on a throwaway one-tile grid with the same
        kernel variant (constant, sponge or model) as this backend.
        """
        tile = DiamondTile(self.params.order, 1)
        shape = (2 * tile.radius, 2 * tile.radius, 1)
        probe = CPUBackend(self.params, shape, 1, 1)
        if self._medium is not None:  # the same variant as this backend
            kappa = np.full(shape, 0.25, np.float32) if self._medium[0] == "model" else 0.25
            probe.set_physics(Medium(kappa, tuple(np.zeros(n, np.float32) for n in shape), shape))
        with compiling(f"diamondlab_cpu_no{self.params.order}"):  # another process compiling them: its code
            probe.sweep(1)
            probe.step(1)
        record_compiled()  # the digests of Numba's files, checked before the next import

    def _run(self, schedule: StageSchedule | None, height: int, src_samples) -> None:
        t = self._points
        tables = t.kernel_args(height, src_samples)
        rec = tables[-1]
        if self._medium is None:
            coeffs, medium, variant = self.params.coefficients, (), "constant"
        else:
            coeffs, medium, variant = self._weights, self._medium[1:], self._medium[0]
        if schedule is None:
            kernel = getattr(self.kernels, f"stepwise_{variant}")
            kernel(self._curr, self._prev, height, coeffs, *medium, *tables)
        else:
            s = schedule
            kernel = getattr(self.kernels, f"diamondtorre_{variant}")
            kernel(
                self._curr, self._prev, height, s.tile.radius, s.torre_x0, s.torre_yc, s.stage_start,
                coeffs, *medium, *tables,
            )  # fmt: skip
        if height % 2:
            self._prev, self._curr = self._curr, self._prev
        if t.nreceivers:
            self._taken.append(rec[:, : t.nreceivers])

    def step(self, nsteps: int, src_samples: np.ndarray | None = None) -> None:
        """``nsteps`` stepwise steps (receiver values: :meth:`take_traces`)."""
        self._run(None, nsteps, src_samples)

    def sweep(self, height: int, src_samples: np.ndarray | None = None) -> None:
        """One DiamondTorre sweep (receiver values: :meth:`take_traces`)."""
        self._run(self.schedule(height), height, src_samples)

    def take_traces(self) -> np.ndarray:
        """The receiver values ``(steps, nreceivers)`` recorded since the last call."""
        rows, self._taken = self._taken, []
        return np.concatenate(rows) if rows else np.zeros((0, self._points.nreceivers), dtype=np.float32)

    def synchronize(self) -> None:
        return None
