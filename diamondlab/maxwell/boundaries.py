"""Boundaries of a Maxwell run: the convolutional PML (CPML) inside the grid's faces, PEC beyond it.

Contract
--------
The grid's six outer planes are perfect conductors (the ``E`` components
tangential to a face are held at zero on it: a PEC box of ``n - 1`` cells
along each axis, exact for the order-2 scheme; the order-4 stencil reads
zeros beyond the wall instead of the mirror images).
:class:`CPML` puts an absorbing layer of ``width`` cells inside each face
(Roden and Gedney's convolutional PML, ``kappa = 1``): a derivative ``dF/da``
in the layer becomes ``dF/da + psi`` with ``psi <- b psi + a dF/da``,
``b = exp(-(sigma + alpha) dt)``, ``a = sigma / (sigma + alpha) (b - 1)``,
the grading ``sigma = sigma_max (d / width)^grading`` with ``sigma_max =
r * 0.8 (grading + 1)`` (``r``: ``sigma_ratio``, 0.5 by default: a pulse from a
dipole 10 cells from a 10-cell layer comes back 42 dB down, 37 dB with 1) and ``alpha =
alpha_max (1 - d / width)``, ``d`` the depth into the layer of the point
where the derivative is taken.  ``psi`` is held only in the layers: four
float32 arrays a face pair (``(4, 2 width, ny, nz)`` along x, 16 bytes a
layer cell and axis).  :meth:`CPML.profiles` gives, per axis, the layer
index of every cell (-1 outside) and ``(b, a)`` at the ``E`` and ``H``
derivative points.

Faces per axis: ``CPML(width, axes="x")`` puts the layers on the faces of
the named axes only (the others keep their perfect conductor, or are
periodic); ``axes=None`` (the default, and what ``pml=width`` means) puts
them on every axis that is not periodic.  A periodic axis has no faces: an
``axes`` that names one is refused (:meth:`CPML.axis_widths`).  Periodic
axes themselves are the run's ``periodic`` option
(:mod:`diamondlab.engine.equations.maxwell_plan`).  NumPy only.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

__all__ = ["CPML", "AxisProfile"]


@dataclass(frozen=True)
class AxisProfile:
    """One axis of a CPML: ``layer[i]`` (the cell's row in the ``psi`` arrays, -1 outside), and ``b, a``
    at the ``E`` points (integer ``i``) and the ``H`` points (``i + 1/2``), float32."""

    layer: np.ndarray
    b_e: np.ndarray
    a_e: np.ndarray
    b_h: np.ndarray
    a_h: np.ndarray


@dataclass(frozen=True)
class CPML:
    """An absorbing layer of ``width`` cells on every face (0: none).

    >>> p = CPML(4).profiles(12, dt=0.5)
    >>> p.layer.tolist()
    [0, 1, 2, 3, -1, -1, -1, -1, 4, 5, 6, 7]
    >>> bool(p.b_e[0] < p.b_e[3] < 1.0), float(p.a_e[6])
    (True, 0.0)
    >>> CPML(12, axes="x").axis_widths(periodic="yz")
    (12, 0, 0)
    """

    width: int = 0
    grading: float = 3.0
    alpha_max: float = 0.05
    sigma_ratio: float = 0.5
    #: the axes whose two faces carry the layer ("x", "yz", ...); None: every axis that is not periodic
    axes: str | None = None

    def __post_init__(self):
        w = self.width
        if isinstance(w, bool) or not isinstance(w, (int, np.integer)) or w < 0:
            raise ValueError(f"pml must be a width in cells >= 0; got {w!r}")
        object.__setattr__(self, "width", int(w))
        for name in ("grading", "alpha_max", "sigma_ratio"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float, np.number)) and np.isfinite(v) and v >= 0):
                raise ValueError(f"CPML {name} must be a finite number >= 0; got {v!r}")
        if self.axes is not None:
            axes = self.axes
            if (not isinstance(axes, str) or not axes or any(a not in "xyz" for a in axes)
                    or len(set(axes)) != len(axes)):
                raise ValueError(f"CPML axes must name axes among 'x', 'y', 'z' once each (e.g. 'x' or "
                                 f"'xz'), or be None (every axis that is not periodic); got {axes!r}")
            object.__setattr__(self, "axes", "".join(sorted(axes)))

    def axis_widths(self, periodic=()) -> tuple[int, int, int]:
        """The layer's width on each axis: ``width`` on :attr:`axes` (every axis not in ``periodic`` when
        None), 0 elsewhere.  An axis both in :attr:`axes` and ``periodic`` is refused."""
        if self.axes is None:
            return tuple(0 if a in periodic else self.width for a in "xyz")
        if self.width and (both := [a for a in self.axes if a in periodic]):
            rest = "".join(a for a in self.axes if a not in periodic) or "x"
            raise ValueError(f"pml: CPML axes={self.axes!r} puts layers on the periodic axis "
                             f"{' and '.join(both)}: a periodic axis has no faces to absorb at; leave it out "
                             f"of axes (e.g. axes={rest!r})")
        return tuple(self.width if a in self.axes else 0 for a in "xyz")

    def axis_profiles(self, shape, dt: float, periodic=()) -> list[AxisProfile]:
        """:meth:`profiles` of each axis of ``shape``, without layers where :meth:`axis_widths` is 0."""
        widths = self.axis_widths(periodic)
        return [replace(self, width=w, axes=None).profiles(n, dt) for w, n in zip(widths, shape, strict=True)]

    @property
    def sigma_max(self) -> float:
        return self.sigma_ratio * 0.8 * (self.grading + 1)

    def _coefficients(self, depth: np.ndarray, dt: float) -> tuple[np.ndarray, np.ndarray]:
        d = np.clip(depth / max(self.width, 1), 0.0, 1.0)
        sigma = self.sigma_max * d**self.grading
        alpha = self.alpha_max * (1.0 - d)
        b = np.exp(-(sigma + alpha) * dt)
        with np.errstate(invalid="ignore", divide="ignore"):
            a = np.where(sigma > 0, sigma / (sigma + alpha) * (b - 1.0), 0.0)
        inside = depth > 0
        return np.where(inside, b, 1.0).astype(np.float32), np.where(inside, a, 0.0).astype(np.float32)

    def profiles(self, n: int, dt: float) -> AxisProfile:
        """The profile of an axis of ``n`` cells (the layers must not overlap: ``n >= 2 width``)."""
        w = self.width
        i = np.arange(n, dtype=np.float64)
        layer = np.full(n, -1, dtype=np.int32)
        if w:
            layer[:w] = np.arange(w)
            layer[n - w:] = np.arange(w, 2 * w)

        def depth(pos):  # into the nearer layer, from its inner edge (w - 1/2 cells from the face)
            edge_lo, edge_hi = w - 0.5, n - 1 - (w - 0.5)
            return np.maximum(np.maximum(edge_lo - pos, pos - edge_hi), 0.0) if w else np.zeros(n)

        b_e, a_e = self._coefficients(depth(i), dt)
        b_h, a_h = self._coefficients(depth(i + 0.5), dt)
        inside = layer >= 0
        return AxisProfile(layer, np.where(inside, b_e, 1).astype(np.float32),
                           np.where(inside, a_e, 0).astype(np.float32),
                           np.where(inside, b_h, 1).astype(np.float32),
                           np.where(inside, a_h, 0).astype(np.float32))
