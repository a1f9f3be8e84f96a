"""The Yee scheme: staggered first-derivative weights, the Courant limit per order, the dispersion relation.

Contract
--------
Maxwell's equations in Meep's normalised units (``c = 1``, ``eps0 = mu0 =
1``, lengths in cells ``h = 1``, time in ``h / c``)::

    dH/dt = -curl E / mu          dE/dt = (curl H - sigma E - J) / eps

on the Yee grid: ``Ex`` at ``(i + 1/2, j, k)``, ``Ey`` at ``(i, j + 1/2,
k)``, ``Ez`` at ``(i, j, k + 1/2)``, ``Hx`` at ``(i, j + 1/2, k + 1/2)``,
``Hy`` at ``(i + 1/2, j, k + 1/2)``, ``Hz`` at ``(i + 1/2, j + 1/2, k)``,
all stored at index ``(i, j, k)`` (:data:`YEE_POSITIONS`: ``E`` on the
cell's edges, ``H`` on its faces).  ``H`` lives at half steps: a step is
``H^{n+1/2} <- H^{n-1/2} - dt curl E^n / mu``, then ``E^{n+1} <- ...
curl H^{n+1/2}``.

A derivative of order 2 or 4 (paper 002's scheme) is
``sum_m w_m (F[i + m] - F[i - m + 1])`` at the ``H`` points (forward) and
``sum_m w_m (F[i + m - 1] - F[i - m])`` at the ``E`` points (backward),
``w = [1]`` or ``[9/8, -1/24]``.  Along an axis an ``H`` update therefore
reads ``E`` at storage offsets ``1 - M .. M`` and an ``E`` update ``H`` at
``-M .. M - 1`` (:func:`yee_read_offsets`, ``M`` the number of weights),
each component the two others of the other field, across the two other axes
(:func:`curl_reads`).  A half step reads neighbours up to
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
    "YEE_POSITIONS",
    "EPS0",
    "MU0",
    "YEE_ORDERS",
    "YeeParameters",
    "curl_reads",
    "yee_courant_limit",
    "yee_frequency",
    "yee_read_offsets",
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

#: Where each of the six components sits in its cell ``(i, j, k)``, in cells from the cell's corner: ``E``
#: at the middle of an edge along its own axis, ``H`` at the centre of the face normal to its axis.  All six
#: are stored at index ``(i, j, k)``.  The one table of the staggering
#: (the TF/SF box and the drawings read it).
YEE_POSITIONS = {
    "Ex": (0.5, 0.0, 0.0), "Ey": (0.0, 0.5, 0.0), "Ez": (0.0, 0.0, 0.5),
    "Hx": (0.0, 0.5, 0.5), "Hy": (0.5, 0.0, 0.5), "Hz": (0.5, 0.5, 0.0),
}  # fmt: skip

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


def yee_read_offsets(order: int, field: str) -> np.ndarray:
    """Storage offsets along an axis that a staggered derivative reads to update ``field`` (``"H"``, ``"E"``).

    ``H`` (forward differences of ``E``): ``F[i + m] - F[i - m + 1]``, ``m = 1 .. M``; ``E`` (backward
    differences of ``H``): ``F[i + m - 1] - F[i - m]``.  Each reaches ``M`` cells on one side and ``M - 1``
    on the other; the two together reach ``M`` (:attr:`YeeParameters.reach`) on either side.

    >>> yee_read_offsets(2, "H").tolist(), yee_read_offsets(2, "E").tolist()
    ([0, 1], [-1, 0])
    >>> yee_read_offsets(4, "H").tolist(), yee_read_offsets(4, "E").tolist()
    ([-1, 0, 1, 2], [-2, -1, 0, 1])
    """
    m = np.arange(1, len(_WEIGHTS[_validate_yee_order(order)]) + 1)
    if field == "H":
        return np.union1d(m, 1 - m)
    if field == "E":
        return np.union1d(m - 1, -m)
    raise ValueError(f"field must be 'H' or 'E' (the field a half step updates); got {field!r}")


def curl_reads(component: str) -> tuple[tuple[str, int], tuple[str, int]]:
    """The two ``(component of the other field, axis of its derivative)`` the curl of ``component`` reads.

    ``(curl F)_a = d_{a+1} F_{a+2} - d_{a+2} F_{a+1}`` (axes modulo 3).

    >>> curl_reads("Hx"), curl_reads("Ey")
    ((('Ez', 1), ('Ey', 2)), (('Hx', 2), ('Hz', 0)))
    """
    if component not in YEE_POSITIONS:
        raise ValueError(f"component must be one of {tuple(YEE_POSITIONS)}; got {component!r}")
    other = "E" if component[0] == "H" else "H"
    a = "xyz".index(component[1])
    return ((other + "xyz"[(a + 2) % 3], (a + 1) % 3), (other + "xyz"[(a + 1) % 3], (a + 2) % 3))


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
