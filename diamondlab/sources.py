"""Point sources, receivers and wavelets.

Contract
--------
A :class:`Source` adds ``q(x, t) = s(t) delta(x - x_s)`` to the wave
equation ``u_tt = c^2 lap u + q``: each step adds ``dt^2 s(t_n) / h^3`` at
the source, spread over the (up to) eight surrounding cells with trilinear
weights.  Its 3D free-space response is ``s(t - r / c) / (4 pi c^2 r)``.
A :class:`Receiver` samples the field at its position by the same trilinear
weights after every step.  Positions are physical (``units="physical"``, the
default: cell ``i`` sits at ``i * h``) or in grid cells (``units="grid"``).

Wavelets are functions of time: :func:`ricker` (peak frequency ``f``),
:func:`gaussian_derivative`, or any user array of samples (one per step).
:func:`check_resolution` warns when a wavelet has fewer than
``MIN_POINTS_PER_WAVELENGTH`` grid points per shortest wavelength (at
``2.5 f`` for the Ricker wavelet) and refuses fewer than 2 (aliasing).
NumPy only.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "MIN_POINTS_PER_WAVELENGTH",
    "Receiver",
    "Source",
    "check_resolution",
    "gaussian_derivative",
    "ricker",
    "trilinear_points",
]

#: Below this many points per shortest wavelength a warning is issued.
MIN_POINTS_PER_WAVELENGTH = 6.0

WAVELETS = ("ricker", "gaussian_derivative")


def ricker(t, frequency: float, delay: float | None = None) -> np.ndarray:
    """Ricker wavelet ``(1 - 2 a) exp(-a)``, ``a = (pi f (t - delay))^2``; delay ``1.5 / f`` by default.

    >>> float(ricker(0.1, frequency=10.0, delay=0.1))
    1.0
    """
    if not frequency > 0:
        raise ValueError(f"frequency must be > 0; got {frequency}")
    delay = 1.5 / frequency if delay is None else delay
    a = (np.pi * frequency * (np.asarray(t, dtype=np.float64) - delay)) ** 2
    return (1.0 - 2.0 * a) * np.exp(-a)


def gaussian_derivative(t, frequency: float, delay: float | None = None) -> np.ndarray:
    """First derivative of a Gaussian, normalised to peak 1: ``-sqrt(2e) pi f tau exp(-(pi f tau)^2)``.

    >>> round(float(abs(gaussian_derivative(np.linspace(0, 0.3, 3001), 10.0)).max()), 4)
    1.0
    """
    if not frequency > 0:
        raise ValueError(f"frequency must be > 0; got {frequency}")
    delay = 1.5 / frequency if delay is None else delay
    tau = np.pi * frequency * (np.asarray(t, dtype=np.float64) - delay)
    return -np.sqrt(2.0 * np.e) * tau * np.exp(-(tau**2))


def _position(position, units: str) -> tuple[float, float, float]:
    if units not in ("physical", "grid"):
        raise ValueError(f"units must be 'physical' or 'grid'; got {units!r}")
    pos = tuple(float(p) for p in position)
    if len(pos) != 3 or not all(np.isfinite(pos)):
        raise ValueError(f"position must be three finite numbers (x, y, z); got {position!r}")
    return pos


@dataclass(frozen=True)
class Source:
    """A point source: position, wavelet and amplitude.

    Parameters
    ----------
    position : (x, y, z)
        Physical coordinates (``units="physical"``) or grid cells (``units="grid"``).
    wavelet : {"ricker", "gaussian_derivative"} or array_like
        A named wavelet with peak ``frequency``, or samples ``s(t_n)`` for
        steps ``n = 0, 1, ...`` (zero after the last one).
    frequency : float
        Peak frequency of a named wavelet (1 / time unit).
    amplitude : float
        Multiplies the wavelet.

    Examples
    --------
    >>> src = Source((32, 32, 32), "ricker", frequency=0.05, units="grid")
    >>> src.samples(4, dt=1.0).shape
    (4,)
    """

    position: tuple
    wavelet: object = "ricker"
    frequency: float = 10.0
    amplitude: float = 1.0
    units: str = "physical"
    delay: float | None = None

    def __post_init__(self):
        object.__setattr__(self, "position", _position(self.position, self.units))
        if not np.isfinite(self.amplitude):
            raise ValueError(f"amplitude must be a finite number; got {self.amplitude!r}")
        if self.delay is not None and not np.isfinite(self.delay):
            raise ValueError(f"delay must be a finite time or None (1.5 / frequency); got {self.delay!r}")
        if isinstance(self.wavelet, str):
            if self.wavelet not in WAVELETS:
                raise ValueError(f"wavelet must be one of {WAVELETS} or an array; got {self.wavelet!r}")
            if not (np.isfinite(self.frequency) and self.frequency > 0):
                raise ValueError(f"frequency must be a finite number > 0; got {self.frequency}")
        else:
            samples = np.asarray(self.wavelet, dtype=np.float64).reshape(-1)
            if not np.all(np.isfinite(samples)):
                raise ValueError("wavelet samples must be finite numbers")
            object.__setattr__(self, "wavelet", samples)

    @property
    def delay_used(self) -> float | None:
        """The delay its named wavelet peaks at: ``delay``, else ``1.5 / frequency``; None for samples.

        >>> Source((1, 1, 1), frequency=0.05, units="grid").delay_used
        30.0
        >>> Source((1, 1, 1), [0.0, 1.0], units="grid").delay_used is None
        True
        """
        if not isinstance(self.wavelet, str):
            return None
        return 1.5 / self.frequency if self.delay is None else float(self.delay)

    def samples(self, nsteps: int, dt: float, first_step: int = 0) -> np.ndarray:
        """``amplitude * s(t_n)`` for steps ``first_step .. first_step + nsteps - 1`` (``t_n = n dt``)."""
        steps = np.arange(first_step, first_step + nsteps)
        if isinstance(self.wavelet, str):
            fn = ricker if self.wavelet == "ricker" else gaussian_derivative
            return self.amplitude * fn(steps * dt, self.frequency, self.delay_used)
        out = np.zeros(nsteps)
        inside = steps < len(self.wavelet)
        out[inside] = self.wavelet[steps[inside]]
        return self.amplitude * out

    def max_frequency(self) -> float | None:
        """Highest frequency with significant energy (``2.5 f`` for named wavelets; None for arrays)."""
        return 2.5 * self.frequency if isinstance(self.wavelet, str) else None


@dataclass(frozen=True)
class Receiver:
    """A point where the field is recorded after every step.

    >>> Receiver((1.0, 2.0, 3.0)).position
    (1.0, 2.0, 3.0)
    """

    position: tuple
    units: str = "physical"
    name: str = field(default="", compare=False)

    def __post_init__(self):
        object.__setattr__(self, "position", _position(self.position, self.units))


def trilinear_points(position, shape, spacing: float, units: str, what: str):
    """Cells and weights of a point: ``(cells (n, 3) int, weights (n,) float)``, zero weights dropped.

    Raises a ``ValueError`` naming ``what`` when the point lies outside the grid.

    >>> cells, w = trilinear_points((1.5, 2.0, 3.0), (4, 4, 4), 1.0, "grid", "source 0")
    >>> cells.tolist(), w.tolist()
    ([[1, 2, 3], [2, 2, 3]], [0.5, 0.5])
    """
    g = np.array(position, dtype=np.float64)
    if units == "physical":
        g = g / spacing
    upper = np.array(shape, dtype=np.float64) - 1
    if (g < 0).any() or (g > upper).any():
        extent = ", ".join(
            f"0 <= {a} <= {u * (spacing if units == 'physical' else 1):g}"
            for a, u in zip("xyz", upper, strict=True)
        )
        raise ValueError(f"{what} at {tuple(position)} lies outside the grid ({units} units: {extent})")
    base = np.minimum(np.floor(g).astype(np.int64), np.array(shape) - 1)
    frac = g - base
    cells, weights = [], []
    for corner in np.ndindex(2, 2, 2):
        c = np.array(corner)
        w = float(np.prod(np.where(c == 1, frac, 1.0 - frac)))
        if w > 0:
            cells.append(base + c)
            weights.append(w)
    return np.array(cells, dtype=np.int64), np.array(weights)


def check_resolution(sources, velocity_min: float, spacing: float) -> None:
    """Warn (or refuse, below 2) when a wavelet is too high in frequency for the grid."""
    for i, src in enumerate(sources):
        fmax = src.max_frequency()
        if fmax is None:
            continue
        ppw = velocity_min / (fmax * spacing)
        if ppw < 2.0:
            raise ValueError(
                f"source {i}: wavelet of peak frequency {src.frequency:g} has only {ppw:.2f} grid points "
                f"per shortest wavelength (c_min / (2.5 f h)); it aliases below 2: use frequency <= "
                f"{velocity_min / (2.5 * 2.0 * spacing):.4g} or a smaller spacing"
            )
        if ppw < MIN_POINTS_PER_WAVELENGTH:
            warnings.warn(
                f"source {i}: {ppw:.2f} grid points per shortest wavelength (< "
                f"{MIN_POINTS_PER_WAVELENGTH:g}): expect dispersion; use frequency <= "
                f"{velocity_min / (2.5 * MIN_POINTS_PER_WAVELENGTH * spacing):.4g}, a smaller spacing "
                "or a higher order",
                stacklevel=3,
            )
