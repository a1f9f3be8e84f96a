"""The Yee scheme: staggered first-derivative weights, the Courant limit per order, the dispersion relation.

Contract
--------
Maxwell's equations in Meep's normalised units (``c = 1``, ``eps0 = mu0 =
1``, lengths in cells ``h = 1``, time in ``h / c``)::

    dH/dt = -curl E / mu          dE/dt = (curl H - sigma E - J) / eps

on the Yee grid: ``Ex`` at ``(i + 1/2, j, k)``, ``Ey`` at ``(i, j + 1/2,
k)``, ``Ez`` at ``(i, j, k + 1/2)``, ``Hx`` at ``(i, j + 1/2, k + 1/2)``,
``Hy`` at ``(i + 1/2, j, k + 1/2)``, ``Hz`` at ``(i + 1/2, j + 1/2, k)``,
all stored at index ``(i, j, k)``.  ``H`` lives at half steps: a step is
``H^{n+1/2} <- H^{n-1/2} - dt curl E^n / mu``, then ``E^{n+1} <- ...
curl H^{n+1/2}``.

A derivative of order 2 or 4 (paper 002's scheme) is
``sum_m w_m (F[i + m] - F[i - m + 1])`` at the ``H`` points (forward) and
``sum_m w_m (F[i + m - 1] - F[i - m])`` at the ``E`` points (backward),
``w = [1]`` or ``[9/8, -1/24]``.  A half step reads neighbours up to
:attr:`YeeParameters.reach` cells away on either side (1 or 2), so the two
arrays ``E`` and ``H`` are leapfrogged exactly as the acoustic scheme's two
time levels: DiamondTorre's tiers are half steps, its tile that of the
acoustic stencil of order ``2 * reach``.

The 3D leapfrog is stable for ``dt <= 1 / (sqrt(3) sum |w_m|)``
(:func:`yee_courant_limit`: ``1/sqrt(3)`` at order 2, ``6 / (7 sqrt(3))``
at order 4).  A plane wave of wave vector ``k`` has the frequency of
:func:`yee_frequency` (the numerical dispersion relation).  NumPy only.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

__all__ = [
    "C0",
    "EPS0",
    "MU0",
    "YEE_ORDERS",
    "YeeParameters",
    "yee_courant_limit",
    "yee_frequency",
    "yee_weights",
]

#: The orders of accuracy in space of the Yee scheme built here.
YEE_ORDERS = (2, 4)
#: SI constants, for converting to the normalised units (c = eps0 = mu0 = 1): speed of light in m/s
C0 = 299_792_458.0
#: vacuum permittivity, F/m
EPS0 = 8.8541878188e-12
#: vacuum permeability, H/m
MU0 = 1.25663706127e-6

_WEIGHTS = {2: (Fraction(1),), 4: (Fraction(9, 8), Fraction(-1, 24))}


def _validate_yee_order(order) -> int:
    if isinstance(order, bool) or not isinstance(order, (int, np.integer)) or int(order) not in YEE_ORDERS:
        raise ValueError(f"order must be one of {YEE_ORDERS} for Maxwell's equations (the Yee scheme's "
                         f"order in space); got {order!r}")
    return int(order)


def yee_weights(order: int) -> np.ndarray:
    """Staggered first-derivative weights ``w_1 .. w_M`` of ``order`` (float64).

    >>> yee_weights(4).tolist()
    [1.125, -0.041666666666666664]
    """
    return np.array([float(w) for w in _WEIGHTS[_validate_yee_order(order)]])


def yee_courant_limit(order: int) -> float:
    """Largest stable ``c dt / h`` of the 3D Yee scheme of ``order``: ``1 / (sqrt(3) sum |w_m|)``.

    >>> round(yee_courant_limit(2), 6), round(yee_courant_limit(4), 6)
    (0.57735, 0.494872)
    """
    return float(1.0 / (np.sqrt(3.0) * np.abs(yee_weights(order)).sum()))


def yee_frequency(k, order: int, dt: float, spacing: float = 1.0) -> np.ndarray:
    """Angular frequency of a plane wave of wave vector ``k`` (shape ``(..., 3)``) on the Yee grid.

    The dispersion relation of the leapfrog with staggered differences:
    ``(2 / dt) sin(omega dt / 2) = sqrt(sum_a D(k_a)^2)``,
    ``D(k) = (2 / h) sum_m w_m sin((2m - 1) k h / 2)``.

    >>> w = yee_frequency([[0.01, 0.0, 0.0]], order=4, dt=0.4)
    >>> bool(abs(w[0] - 0.01) < 1e-6)
    True
    """
    k = np.asarray(k, dtype=np.float64)
    w = yee_weights(order)
    m = np.arange(1, len(w) + 1)
    d = (2.0 / spacing) * (w * np.sin((2 * m - 1) * k[..., None] * spacing / 2)).sum(-1)
    s = np.sqrt((d**2).sum(-1)) * dt / 2
    if np.any(s > 1):
        raise ValueError("this wave vector is unstable at this dt (the Courant limit is exceeded)")
    return 2.0 / dt * np.arcsin(s)


@dataclass(frozen=True)
class YeeParameters:
    """The scheme of a Maxwell run: order, Courant number ``c dt / h``, spacing ``h``.

    Parameters
    ----------
    order : {2, 4}
        Order of accuracy in space.
    courant : float, optional
        ``c dt / h`` (default: 0.95 of the order's limit, :func:`yee_courant_limit`).
    dt : float, optional
        Time step instead of ``courant``.
    spacing : float
        ``h``, in the run's length unit (cells by default: Meep's normalised units).

    Examples
    --------
    >>> p = YeeParameters(order=4)
    >>> p.reach, round(p.courant, 4)
    (2, 0.4701)
    >>> YeeParameters(order=2, courant=0.6)
    Traceback (most recent call last):
    ...
    ValueError: courant must be > 0 and at most 0.57735 (the 3D Yee limit at order 2); got 0.6
    """

    order: int = 2
    courant: float | None = None
    dt: float | None = None
    spacing: float = 1.0

    def __post_init__(self):
        object.__setattr__(self, "order", _validate_yee_order(self.order))
        if not (isinstance(self.spacing, (int, float, np.number)) and np.isfinite(self.spacing)
                and self.spacing > 0):
            raise ValueError(f"spacing must be a finite length > 0; got {self.spacing!r}")
        object.__setattr__(self, "spacing", float(self.spacing))
        limit = yee_courant_limit(self.order)
        if self.courant is not None and self.dt is not None:
            raise ValueError("give courant or dt, not both")
        courant = self.courant
        if self.dt is not None:
            if not (isinstance(self.dt, (int, float, np.number)) and np.isfinite(self.dt) and self.dt > 0):
                raise ValueError(f"dt must be a finite time step > 0; got {self.dt!r}")
            courant = float(self.dt) / self.spacing
        elif courant is None:
            courant = 0.95 * limit
        if not (isinstance(courant, (int, float, np.number)) and np.isfinite(courant)
                and 0 < courant <= limit):
            raise ValueError(f"courant must be > 0 and at most {limit:.6g} (the 3D Yee limit at order "
                             f"{self.order}); got {courant!r}" + (f" (from dt={self.dt})" if self.dt else ""))
        object.__setattr__(self, "courant", float(courant))
        object.__setattr__(self, "dt", float(courant) * self.spacing)

    @property
    def reach(self) -> int:
        """Cells a half step reads on either side (1 at order 2, 2 at order 4)."""
        return self.order // 2

    @property
    def weights(self) -> np.ndarray:
        """``w_m`` as float32, the kernels' constants."""
        return yee_weights(self.order).astype(np.float32)
