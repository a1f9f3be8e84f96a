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

where ``c3 ~ 3 K w0`` and ``k_i ~ K w_i`` are float32 values rounded as a set
so that ``c3 + 6 (k1 + .. + k_ShS) == 0`` exactly (a constant field has a
zero Laplacian; see :func:`update_coefficients`).  Summing in this fixed
order is what lets DiamondTorre equal stepwise time stepping bit for bit on
one backend.  Every engine takes its coefficients from
:func:`update_coefficients` (constant K) or :func:`bare_weights` (K per
cell, multiplied after the sum); none rounds weights of its own.

Nothing here imports Numba.
"""

from __future__ import annotations

import functools
import itertools
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
    "paper_coefficients",
    "stencil_weights",
    "update_coefficients",
    "validate_order",
    "validate_pulse_width",
    "validate_shape",
]

#: Stencil orders NO the engines are built for.
SUPPORTED_ORDERS = (2, 4, 6, 8)

#: Widths of a Gaussian pulse (cells) that describe one: below, the pulse is one cell (its neighbours'
#: values underflow); above, it is flat to float32 rounding over any grid that fits in memory.
PULSE_WIDTH_RANGE = (1e-3, 1e9)

#: Largest finite float32, exactly.
_F32_MAX = Fraction(float(np.finfo(np.float32).max))

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


def validate_pulse_width(width, name: str = "width") -> float:
    """``width`` (cells) as a float, or an error naming ``name`` and :data:`PULSE_WIDTH_RANGE`.

    >>> validate_pulse_width(3)
    3.0
    >>> validate_pulse_width(0.0, "pulse_width")
    Traceback (most recent call last):
    ...
    ValueError: pulse_width must be a finite width in cells > 0 (from 0.001 to 1e+09); got 0.0
    """
    if isinstance(width, (bool, np.bool_)) or not isinstance(width, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number (a width in cells); got {width!r}")
    low, high = PULSE_WIDTH_RANGE
    if not low <= float(width) <= high:  # NaN fails too
        raise ValueError(
            f"{name} must be a finite width in cells > 0 (from {low:g} to {high:g}); got {width!r}"
        )
    return float(width)


def validate_shape(shape) -> tuple[int, int, int]:
    """Return ``shape`` as three positive ints ``(nx, ny, nz)`` or raise an error that says so.

    >>> validate_shape([4, 5.0, 6])
    (4, 5, 6)
    >>> validate_shape((32.5, 32, 32))
    Traceback (most recent call last):
    ...
    ValueError: shape must be three positive ints (nx, ny, nz); got (32.5, 32, 32)
    """
    try:
        out = tuple(int(n) for n in shape)
        whole = all(float(n) == m for n, m in zip(shape, out, strict=True))
    except (TypeError, ValueError, OverflowError):
        raise TypeError(f"shape must be three ints (nx, ny, nz); got {shape!r}") from None
    if len(out) != 3 or min(out) < 1 or not whole:
        raise ValueError(f"shape must be three positive ints (nx, ny, nz); got {shape!r}")
    return out


def stencil_weights(order: int) -> np.ndarray:
    """Second-derivative weights ``w_0 .. w_ShS`` (centre first, counted once) in float64.

    Paper 000's Table 1 counts the centre twice (``C_0 = w_0 / 2``): :func:`paper_coefficients`.

    >>> stencil_weights(2)
    array([-2.,  1.])
    >>> w = stencil_weights(4)
    >>> bool(abs(w[0] + 2 * w[1:].sum()) < 1e-12)  # a constant field has zero Laplacian
    True
    """
    order = validate_order(order)
    return np.array([float(w) for w in _WEIGHTS[order]])


def paper_coefficients(order: int) -> tuple[Fraction, ...]:
    """The constants ``C_0 .. C_ShS`` of paper 000's Table 1, exact, in the paper's own convention.

    The paper writes the second difference as ``sum_{i=0}^{ShS} C_i (F(x + i) + F(x - i))``: its
    sum counts the centre twice, so ``C_0`` is half the centre weight and ``C_i = w_i`` beyond it.
    diamondlab stores the weights ``w_i`` of :func:`stencil_weights` (the centre once):
    ``w_0 = 2 C_0``.  The text extraction of the paper lost the minus signs of Table 1; these
    carry them (they follow from a zero sum: a constant field has no curvature).

    >>> [str(c) for c in paper_coefficients(4)]
    ['-5/4', '4/3', '-1/12']
    >>> float(2 * paper_coefficients(2)[0]) == float(stencil_weights(2)[0])  # w_0 = 2 C_0
    True
    """
    w0, *rest = _WEIGHTS[validate_order(order)]
    return (w0 / 2, *rest)


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
    """Float32 coefficients ``[c3, k1, .., k_ShS]`` of the per-cell update, summing to zero exactly.

    ``c3 ~ 3 K w0`` multiplies the centre value, ``k_i ~ K w_i`` the sum of
    the six neighbours at distance ``i``; ``K = courant**2``.  The set is
    rounded *as a whole* so that ``c3 + 6 (k1 + .. + k_ShS) == 0`` holds
    exactly, as for the exact weights: a constant field has a zero
    Laplacian and stays constant.  (Rounding each weight on its own leaves
    a sum of a few float32 ulps, a spurious term ``e u`` in the equation
    that makes smooth fields drift; see BENCHMARKS.md, "Zero-sum
    coefficients".)  Then the update is ``sum_i k_i (ring_i - 6 f0)``, so
    the ``k_i`` alone set the accuracy.  Construction, exact in fractions:

    - the quantum ``q`` is half the float32 ulp of ``3 K |w0|`` (a power of
      two), never below ``2**-126``, so every nonzero coefficient is a
      float32 *normal* number (no subnormals, which GPUs may flush to zero);
    - every ``k_i`` is a multiple ``n_i q`` within one ulp of ``c3``
      (``2 q``) of ``K w_i``, and ``c3 = -6 q sum(n_i)`` is a float32 within
      1.5 of its ulps of ``3 K w0`` (six times a sum of floats reaches only
      every third float32, so 1.5 ulps is the best bound there is);
    - among those integer choices (at most ``4**ShS``), the one whose
      discrete Laplacian has the smallest largest *relative* error of its
      symbol ``sum_i k_i (2 cos(i theta) - 2)`` over ``0 < theta <= pi``
      (the phase-speed error of each wavenumber, ``theta -> 0`` included)
      is taken; ties go to the first in a fixed order.  The search uses
      only IEEE ``+ - * /`` in a fixed order (``cos(i theta)`` as Chebyshev
      polynomials of a fixed grid of ``cos theta``), so every machine picks
      the same set.

    Below ``K ~ 1e-31`` the quantum stays ``2**-126`` and the coefficients
    lose relative precision (all zero below ``K ~ 1e-39``: the update is
    then ``2 u^n - u^{n-1}``); ``courant = 0`` gives zeros.  A non-finite
    Courant number or a ``K`` beyond float32 is a ``ValueError``.

    >>> c = update_coefficients(8, 0.3)
    >>> c.dtype, len(c)
    (dtype('float32'), 5)
    >>> from fractions import Fraction
    >>> Fraction(float(c[0])) + 6 * sum(Fraction(float(x)) for x in c[1:])
    Fraction(0, 1)
    >>> update_coefficients(2, 0.5).tolist()  # exact in float32 already
    [-1.5, 0.25]
    """
    order = validate_order(order)
    courant = float(courant)
    if not math.isfinite(courant):
        raise ValueError(f"courant number must be finite; got {courant}")
    return np.array(_zero_sum_coefficients(order, courant * courant), dtype=np.float32)


#: ``cos(theta)`` on the grid of the symbol error (``theta`` from about pi / 64 to pi, near-uniform).
_COS_GRID = 1.0 - 2.0 * (np.arange(1, 65, dtype=np.float64) / 64.0) ** 2


@functools.lru_cache(maxsize=64)
def _zero_sum_coefficients(order: int, kappa: float) -> tuple[float, ...]:
    """``update_coefficients`` for ``K = kappa`` (a float64) as exact float32 values in a tuple."""
    k = Fraction(kappa)
    weights = _WEIGHTS[order]
    shs = len(weights) - 1
    if k == 0:
        return (0.0,) * (shs + 1)
    c3 = 3 * k * abs(weights[0])
    if c3 >= _F32_MAX / 2:
        raise ValueError(f"courant number {math.sqrt(kappa):g} gives K = courant^2 = {kappa:g}, "
                         "beyond float32")
    q_exp = max(math.frexp(float(c3))[1] - 25, -126)  # |3 K w0| / q in [2**24, 2**25) unless clamped
    q = Fraction(2) ** q_exp
    ideal = [k * w / q for w in weights[1:]]  # k_i / q, exactly
    target = sum(ideal)  # -c3 / (6 q), exactly

    def exact(n: int) -> bool:
        value = math.ldexp(n, q_exp)
        return float(np.float32(value)) == value

    def feasible(ns: tuple[int, ...], tolerance: Fraction) -> bool:
        # c3 near 3 K w0 and a float32; for u = 2**m every product c_i * ring and every partial sum
        # of the Laplacian exact too, so a constant power-of-two field stays exactly constant
        total = sum(ns)
        partial = [6 * (sum(ns[:j]) - total) for j in range(1, shs)]  # lap after j terms, c3 first
        values = (-6 * total, *(6 * n for n in ns), *partial)
        return abs(total - target) <= tolerance and all(exact(v) for v in values)

    # columns: the theta -> 0 limit of (cos(i theta) - 1) / theta^2 (up to a factor), then cos(i theta) - 1
    cols = [np.array([float(i * i)]) for i in range(1, shs + 1)]
    t_prev, t_curr = np.ones_like(_COS_GRID), _COS_GRID.copy()
    for i in range(1, shs + 1):
        cols[i - 1] = np.concatenate([cols[i - 1], t_curr - 1.0])
        t_prev, t_curr = t_curr, 2.0 * _COS_GRID * t_curr - t_prev  # Chebyshev: cos((i+1) theta)
    symbol = float(ideal[0]) * cols[0]
    for i in range(1, shs):
        symbol = symbol + float(ideal[i]) * cols[i]
    ranges = [range(math.floor(x) - 1, math.ceil(x) + 2) for x in ideal]  # |n_i - x_i| < 2: one ulp of c3
    for tolerance in (Fraction(1, 2), Fraction(1)):  # 1: where 6 N >= 2**25 must be even
        candidates = [ns for ns in itertools.product(*ranges) if feasible(ns, tolerance)]
        if candidates:
            break
    else:  # pragma: no cover - every K tried in tests/test_numerics.py has candidates
        raise ArithmeticError(f"no zero-sum float32 coefficient set for NO={order}, K={kappa!r}")
    offsets = np.array([[float(n - x) for n, x in zip(ns, ideal, strict=True)] for ns in candidates])
    error = offsets[:, :1] * cols[0]
    for i in range(1, shs):
        error = error + offsets[:, i : i + 1] * cols[i]
    worst = np.abs(error / symbol).max(axis=1)
    best = candidates[int(np.argmin(worst))]
    return tuple(math.ldexp(n, q_exp) for n in (-6 * sum(best), *best))


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


#: Cells per block in which :func:`gaussian_pulse` computes (float64 temporaries of a few MiB at most).
PULSE_BLOCK_CELLS = 2**18


def gaussian_pulse(
    shape: tuple[int, int, int],
    center: tuple[float, float, float] | None = None,
    width: float = 4.0,
    amplitude: float = 1.0,
    distance: float = 0.0,
    *,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """Float32 Gaussian pulse released at rest, after it has travelled ``distance`` cells.

    At ``distance = 0`` this is ``A exp(-r^2 / (2 width^2))`` (grid units).
    For ``distance = c t / h > 0`` it is the exact free-space solution of the
    3D wave equation with that initial displacement and zero initial velocity,
    ``u(r, t) = [(r - ct) phi(r - ct) + (r + ct) phi(r + ct)] / (2 r)``, which
    the convergence tests compare the engines with.

    The field is computed in float64 and rounded to float32 block by block
    (at most :data:`PULSE_BLOCK_CELLS` cells of a plane ``x = const`` at a
    time), so besides the result it takes a few MiB whatever the grid.  With
    ``out`` (a writable float32 array of shape ``shape``, e.g. a view of a
    backend's padded field) it is written there and ``out`` is returned:
    no full-size array is allocated at all.

    >>> p = gaussian_pulse((9, 9, 9), width=2.0)
    >>> p.dtype, p.shape, float(p[4, 4, 4])
    (dtype('float32'), (9, 9, 9), 1.0)
    >>> q = gaussian_pulse((9, 9, 9), width=2.0, distance=2.0)
    >>> round(float(q[4, 4, 4]), 6)  # centre value phi(ct) (1 - (ct)^2 / width^2)
    0.0
    >>> padded = np.zeros((11, 11, 11), np.float32)
    >>> view = gaussian_pulse((9, 9, 9), width=2.0, out=padded[1:-1, 1:-1, 1:-1])
    >>> bool(np.array_equal(view, p)), float(padded[0].max())  # the halo is untouched
    (True, 0.0)
    """
    shape = tuple(int(n) for n in shape)
    if len(shape) != 3 or min(shape) < 1:
        raise ValueError(f"shape must be three positive ints; got {shape}")
    if center is None:
        center = tuple((n - 1) / 2.0 for n in shape)
    width = validate_pulse_width(width)
    if distance < 0:
        raise ValueError(f"distance must be >= 0 cells; got {distance}")
    if out is None:
        out = np.empty(shape, dtype=np.float32)
    elif not isinstance(out, np.ndarray) or out.shape != shape or out.dtype != np.float32:
        got = f"{out.dtype} {out.shape}" if isinstance(out, np.ndarray) else type(out).__name__
        raise ValueError(f"out must be a float32 array of shape {shape}; got {got}")
    elif not out.flags.writeable:
        raise ValueError("out must be writable")
    ax, ay, az = [np.arange(n, dtype=np.float64) - c for n, c in zip(shape, center, strict=True)]
    ay2, az2 = (ay**2)[:, None], (az**2)[None, :]
    rows = max(1, PULSE_BLOCK_CELLS // shape[2])  # y rows per block
    ct = float(distance)

    def phi(s):
        return amplitude * np.exp(-(s * s) / (2.0 * width * width))

    centre_value = phi(ct) * (1.0 - ct * ct / (width * width))
    # beyond r = ct + reach every term is below 2^-152 (each weight (r +- ct) / 2r is at most 1): the
    # float32 value is 0 there, and the blocks wholly beyond it are not computed
    with np.errstate(divide="ignore"):
        reach = width * np.sqrt(2.0 * max(0.0, float(np.log(abs(amplitude))) + 152.0 * np.log(2.0)))
    far = (ct + reach) ** 2
    ay2_min = [float(ay2[y0 : y0 + rows].min()) + float(az2.min()) for y0 in range(0, shape[1], rows)]
    for x in range(shape[0]):
        x2 = ax[x] ** 2
        for b, y0 in enumerate(range(0, shape[1], rows)):
            if x2 + ay2_min[b] > far:
                out[x, y0 : y0 + rows] = 0.0
                continue
            r = np.sqrt(x2 + ay2[y0 : y0 + rows] + az2)  # the float64 operations of a full 3D r, in order
            if ct == 0:
                u = phi(r)
            else:
                small = r < 1e-6 * width
                rs = np.where(small, 1.0, r)
                u = ((rs - ct) * phi(rs - ct) + (rs + ct) * phi(rs + ct)) / (2.0 * rs)
                u[small] = centre_value
            out[x, y0 : y0 + rows] = u  # rounded to float32 here
    return out


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
        for name, value in (("courant", self.courant), ("dt", self.dt)):
            if value is not None and (isinstance(value, (bool, np.bool_))
                                      or not isinstance(value, (int, float, np.integer, np.floating))):
                raise TypeError(f"{name} must be a number or None; got {value!r}")
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
