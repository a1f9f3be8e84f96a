"""Numerics of the leapfrog scheme for the 3D acoustic wave equation.

Contract
--------
The scheme (paper 000, section 3) advances two time layers ``u^{n-1}, u^n``
of a field on a regular grid of spacing ``h``::

    u^{n+1} = 2 u^n - u^{n-1} + K * lap_NO(u^n),     K = (c dt / h)^2

with the cross stencil of even order ``NO`` in space (``ShS = NO / 2``
neighbours each side along x, y and z) and second order in time.  Values
outside the grid are zero (the paper's fixed zero boundary).

Every engine performs the per-cell update with the *same* float32
arithmetic, spelled out by :func:`update_coefficients` and
:func:`reference_step`::

    lap = c3 * f0 + k1 * ((fx-1 + fx+1) + (fy-1 + fy+1) + (fz-1 + fz+1))
                  + k2 * ((fx-2 + fx+2) + ...) + ...
    g_new = (f0 + f0 - g) + lap

where ``c3 = float32(3 K w0)`` and ``k_i = float32(K w_i)``.  Summing in this
fixed order is what lets DiamondTorre equal stepwise time stepping bit for
bit on one backend.

Nothing here imports Numba.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

__all__ = [
    "SUPPORTED_ORDERS",
    "WaveParameters",
    "bare_weights",
    "courant_limit",
    "gaussian_pulse",
    "reference_step",
    "stencil_weights",
    "update_coefficients",
    "validate_order",
    "validate_shape",
]

#: Stencil orders NO the engines are built for.
SUPPORTED_ORDERS = (2, 4, 6, 8)

# Fornberg second-derivative weights, centre first (paper 000, Table 1).
_WEIGHTS = {
    2: (Fraction(-2), Fraction(1)),
    4: (Fraction(-5, 2), Fraction(4, 3), Fraction(-1, 12)),
    6: (Fraction(-49, 18), Fraction(3, 2), Fraction(-3, 20), Fraction(1, 90)),
    8: (
        Fraction(-205, 72),
        Fraction(8, 5),
        Fraction(-1, 5),
        Fraction(8, 315),
        Fraction(-1, 560),
    ),
}


def validate_order(order: int) -> int:
    """Return ``order`` as an int or raise a ``ValueError`` naming the allowed values.

    >>> validate_order(4)
    4
    """
    if isinstance(order, bool) or not isinstance(order, (int, np.integer)):
        raise TypeError(f"order (NO) must be an int, one of {SUPPORTED_ORDERS}; got {order!r}")
    order = int(order)
    if order not in SUPPORTED_ORDERS:
        parity = "odd" if order % 2 else "unsupported"
        raise ValueError(
            f"order (NO) must be one of {SUPPORTED_ORDERS} (even, 2 to 8); got {order} ({parity})"
        )
    return order


def validate_shape(shape) -> tuple[int, int, int]:
    """Return ``shape`` as three positive ints ``(nx, ny, nz)`` or raise an error that says so.

    >>> validate_shape([4, 5.0, 6])
    (4, 5, 6)
    """
    try:
        out = tuple(int(n) for n in shape)
    except (TypeError, ValueError):
        raise TypeError(f"shape must be three ints (nx, ny, nz); got {shape!r}") from None
    if len(out) != 3 or min(out) < 1:
        raise ValueError(f"shape must be three positive ints (nx, ny, nz); got {shape!r}")
    return out


def stencil_weights(order: int) -> np.ndarray:
    """Second-derivative weights ``w_0 .. w_ShS`` (centre first) in float64.

    >>> stencil_weights(2)
    array([-2.,  1.])
    >>> w = stencil_weights(4)
    >>> bool(abs(w[0] + 2 * w[1:].sum()) < 1e-12)  # a constant field has zero Laplacian
    True
    """
    order = validate_order(order)
    return np.array([float(w) for w in _WEIGHTS[order]])


def courant_limit(order: int, ndim: int = 3) -> float:
    """Largest stable Courant number ``c dt / h`` of the leapfrog scheme.

    ``C <= 2 / sqrt(ndim * S)`` with ``S = |w_0| + 2 sum |w_i|``.

    >>> round(courant_limit(2), 6) == round(1 / math.sqrt(3), 6)
    True
    >>> courant_limit(4)
    0.5
    """
    w = stencil_weights(order)
    s = abs(w[0]) + 2.0 * np.abs(w[1:]).sum()
    return float(2.0 / math.sqrt(ndim * s))


def update_coefficients(order: int, courant: float) -> np.ndarray:
    """Float32 coefficients ``[c3, k1, .., k_ShS]`` of the per-cell update.

    ``c3 = 3 K w0`` multiplies the centre value, ``k_i = K w_i`` the sum of the
    six neighbours at distance ``i``; ``K = courant**2``.
    """
    w = stencil_weights(order)
    k = float(courant) ** 2
    coeffs = np.empty(len(w), dtype=np.float32)
    coeffs[0] = np.float32(3.0 * k * w[0])
    coeffs[1:] = (k * w[1:]).astype(np.float32)
    return coeffs


def bare_weights(order: int) -> np.ndarray:
    """Float32 ``[3 w0, w1, .., w_ShS]``: the update coefficients for ``K = 1``.

    Kernels with a per-cell ``K`` sum the Laplacian with these and multiply
    by ``K`` afterwards.

    >>> bare_weights(2).tolist()
    [-6.0, 1.0]
    """
    return update_coefficients(order, 1.0)


def reference_step(f: np.ndarray, g: np.ndarray, coeffs: np.ndarray) -> np.ndarray:
    """One stepwise update in plain NumPy: return ``u^{n+1}`` from ``f = u^n, g = u^{n-1}``.

    The slow, obviously-correct reference for the compiled kernels; values
    outside the grid are zero.  Uses exactly the float32 operation order of
    the module contract.
    """
    f = np.asarray(f, dtype=np.float32)
    g = np.asarray(g, dtype=np.float32)
    shs = len(coeffs) - 1
    pad = np.pad(f, shs)
    nx, ny, nz = f.shape
    core = (slice(shs, shs + nx), slice(shs, shs + ny), slice(shs, shs + nz))
    lap = np.float32(coeffs[0]) * f
    for i in range(1, shs + 1):

        def shifted(axis, d, i=i):
            sl = list(core)
            sl[axis] = slice(shs + d * i, shs + d * i + f.shape[axis])
            return pad[tuple(sl)]

        ring = (shifted(0, -1) + shifted(0, 1)) + (shifted(1, -1) + shifted(1, 1))
        ring = ring + (shifted(2, -1) + shifted(2, 1))
        lap = lap + np.float32(coeffs[i]) * ring
    return ((f + f) - g) + lap


def gaussian_pulse(
    shape: tuple[int, int, int],
    center: tuple[float, float, float] | None = None,
    width: float = 4.0,
    amplitude: float = 1.0,
    distance: float = 0.0,
) -> np.ndarray:
    """Float32 Gaussian pulse released at rest, after it has travelled ``distance`` cells.

    At ``distance = 0`` this is ``A exp(-r^2 / (2 width^2))`` (grid units).
    For ``distance = c t / h > 0`` it is the exact free-space solution of the
    3D wave equation with that initial displacement and zero initial velocity,
    ``u(r, t) = [(r - ct) phi(r - ct) + (r + ct) phi(r + ct)] / (2 r)``, which
    the convergence tests compare the engines with.

    >>> p = gaussian_pulse((9, 9, 9), width=2.0)
    >>> p.dtype, p.shape, float(p[4, 4, 4])
    (dtype('float32'), (9, 9, 9), 1.0)
    >>> q = gaussian_pulse((9, 9, 9), width=2.0, distance=2.0)
    >>> round(float(q[4, 4, 4]), 6)  # centre value phi(ct) (1 - (ct)^2 / width^2)
    0.0
    """
    shape = tuple(int(n) for n in shape)
    if len(shape) != 3 or min(shape) < 1:
        raise ValueError(f"shape must be three positive ints; got {shape}")
    if center is None:
        center = tuple((n - 1) / 2.0 for n in shape)
    if not width > 0:
        raise ValueError(f"width must be > 0 grid cells; got {width}")
    if distance < 0:
        raise ValueError(f"distance must be >= 0 cells; got {distance}")
    axes = [np.arange(n, dtype=np.float64) - c for n, c in zip(shape, center, strict=True)]
    r = np.sqrt(axes[0][:, None, None] ** 2 + axes[1][None, :, None] ** 2 + axes[2][None, None, :] ** 2)

    def phi(s):
        return amplitude * np.exp(-(s * s) / (2.0 * width * width))

    if distance == 0:
        return phi(r).astype(np.float32)
    ct = float(distance)
    small = r < 1e-6 * width
    rs = np.where(small, 1.0, r)
    u = ((rs - ct) * phi(rs - ct) + (rs + ct) * phi(rs + ct)) / (2.0 * rs)
    u = np.where(small, phi(ct) * (1.0 - ct * ct / (width * width)), u)
    return u.astype(np.float32)


@dataclass(frozen=True)
class WaveParameters:
    """Physical parameters of a run, validated against the stability limit.

    Give either ``dt`` or ``courant`` (default 0.5 of the limit for ``order``).

    >>> p = WaveParameters(order=2, spacing=10.0, velocity=1500.0, courant=0.5)
    >>> round(p.dt, 6)
    0.003333
    >>> WaveParameters(order=4, courant=0.6)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: courant number 0.6 is above the stability limit 0.5 ... NO=4; use courant <= 0.5 ...
    """

    order: int = 2
    spacing: float = 1.0
    velocity: float = 1.0
    courant: float | None = None
    dt: float | None = None
    coefficients: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        validate_order(self.order)
        if not self.spacing > 0:
            raise ValueError(f"spacing (h) must be > 0; got {self.spacing}")
        if not self.velocity > 0:
            raise ValueError(f"velocity (c) must be > 0; got {self.velocity}")
        limit = courant_limit(self.order)
        if self.courant is not None and self.dt is not None:
            raise ValueError("give either courant or dt, not both")
        if self.dt is not None:
            if not self.dt > 0:
                raise ValueError(f"dt must be > 0; got {self.dt}")
            courant = self.velocity * self.dt / self.spacing
        elif self.courant is not None:
            courant = float(self.courant)
        else:
            courant = 0.5 * limit
        if not courant > 0:
            raise ValueError(f"courant number must be > 0; got {courant}")
        if courant > limit * (1 + 1e-12):
            raise ValueError(
                f"courant number {courant:.6g} is above the stability limit {limit:.6g} "
                f"of the 3D leapfrog scheme with NO={self.order}; use courant <= {limit:.6g}"
                " (or a smaller dt)"
            )
        object.__setattr__(self, "courant", courant)
        object.__setattr__(self, "dt", courant * self.spacing / self.velocity)
        object.__setattr__(self, "coefficients", update_coefficients(self.order, courant))

    @property
    def stencil_half_size(self) -> int:
        """``ShS = NO / 2``."""
        return self.order // 2
