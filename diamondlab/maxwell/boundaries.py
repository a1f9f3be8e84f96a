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
r * 0.8 (grading + 1)`` (``r``: ``sigma_ratio``; ``0.8 (m + 1) / (eta h)`` is
the usual optimum, ``eta = h = 1`` in these units) and ``alpha = alpha_max
(1 - d / width)``, ``d`` the depth into the layer of the point where the
derivative is taken: the ``E`` updates' derivatives along an axis sit on the
cells (depths 1/2 to ``width - 1/2``, the layer's inner edge ``width - 1/2``
cells from the face), the ``H`` updates' half a cell off (depths 0 to
``width - 1`` on the low face, 1 to ``width`` on the high one); the order-4
stencil, two cells each way, is centred on the same points, so one profile
serves both orders.

The defaults (grading 3, ``sigma_ratio`` 0.75, ``alpha_max`` 0.05) send a
broadband Gaussian pulse (``GaussianPulse(0.1, 0.05)`` on an ``Ez`` dipole 10
cells from the layer: 0.01 to 0.27 cycles a cell within 20 dB at the layer)
back this far down at normal incidence (peak reflected over peak incident,
``.ci/maxwell-cpml.py``; BENCHMARKS.md, "Maxwell CPML reflection")::

    width      6      8      12      16
    order 2  -55.7  -72.2  -92.9  -100.5 dB
    order 4  -56.0  -81.3  -94.7  -102.3 dB

(``sigma_ratio`` 0.5 before: -44/-40, -65/-58, -97/-94, -104/-105 dB; 0.75
gains 7 to 23 dB at 6 and 8 cells for up to 4 dB at 12 and 16; grading 4
loses 5 to 9 dB at 6 and 8 cells, 2.5 wins 5 at 6 and loses 10 at 12,
``alpha_max`` 0 or 0.15 moves less than 2 dB.)
At 12 cells the reflection is under -80 dB up to 0.2 cycles a cell (5 cells a
wavelength) at both orders, then rises where the grid no longer resolves the
wave: -60 (order 2) and -79 dB (order 4) at 0.25, -32 and -53 dB at 0.3; a
pulse with much of its spectrum there (``GaussianPulse(0.15, 0.1)``, to 0.45)
comes back at -41 (order 2) and -48 dB (order 4), within 3 dB of the best
profile tried for it (-43, -51).  By angle (12 cells, probes along the face where the dipole's
specular ray lands, 0 to 70 degrees, both polarisations): -83 dB or lower at
order 2, -93 dB or lower at order 4 (BENCHMARKS.md has the table).  Plane waves (y and z periodic, a
sheet of dipoles ``cos(k_z z)``, 10 cells a wavelength; ``.ci/maxwell-cpml.py --plane-waves``, BENCHMARKS.md,
"Maxwell CPML reflection of plane waves against the angle"), order 2, either polarisation::

    angle     0     20     30     45     60     70     80 deg
    12 cells -95    -97    -98    -98    -71    -51    -27 dB
     8 cells -78    -77    -72    -61    -44    -30    -15 dB

(order 4 up to 6 dB higher at 8 cells, 4 at 12): the grading's discretisation near normal incidence,
then the back wall, ``cos(theta)`` of the way through the layer, as the kernels' recursion damps it (its
conductivity ``(exp(sigma dt) - 1) / dt``, up to 1.9 times ``sigma``: 4 to 19 dB below the continuum
theory).
``kappa`` stays 1: a ``kappa > 1`` divides the plain derivative by ``kappa``, a third coefficient
per point that the kernels' ``psi <- b psi + a d; d + psi`` has no room for
(``psi``'s recursion holds only the convolution), and it serves the
evanescent fields of sources a few cells from the layer, which the
measurements above did not need.  ``psi`` is held only in the layers: four
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
    sigma_ratio: float = 0.75
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
