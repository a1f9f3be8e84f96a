"""Maxwell sources and probes: waveforms, point dipoles (soft current sources), field probes.

Contract
--------
A waveform is a function of time in the normalised units: :class:`GaussianPulse`
(a Gaussian-modulated sine of centre frequency ``frequency`` and bandwidth
``fwidth``, Meep's convention, frequencies in ``c / h`` cycles), :class:`Ricker`,
:class:`ContinuousWave` (a sine switched on over ``ramp`` periods).
A :class:`Dipole` is a point current ``J(t) = amplitude w(t)`` on one ``E``
component at a cell; each step it subtracts ``cb J(t_{n+1/2})`` from that
component (``cb`` the cell's ``dt / eps``).  A :class:`Probe` records one
field component at a cell every step (``E`` at integer steps, ``H`` at half
steps).  Components are ``"Ex" .. "Hz"``.  A :class:`PlaneWave` is a
total-field/scattered-field plane wave along an axis
(:mod:`diamondlab.maxwell.tfsf`).  NumPy only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["COMPONENTS", "DIRECTIONS", "ContinuousWave", "Dipole", "GaussianPulse", "PlaneWave", "Probe",
           "Ricker"]

#: Field components, in the kernels' order.
COMPONENTS = ("Ex", "Ey", "Ez", "Hx", "Hy", "Hz")
#: Directions of a :class:`PlaneWave`.
DIRECTIONS = ("+x", "-x", "+y", "-y", "+z", "-z")


def _positive(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) or not np.isfinite(value) \
            or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0; got {value!r}")
    return float(value)


@dataclass(frozen=True)
class GaussianPulse:
    """``sin(2 pi f (t - t0)) exp(-((t - t0) / width)^2 / 2)``, ``width = 1 / (2 pi fwidth)``;
    delay ``t0 = cutoff * width`` (5 by default: it starts from ``3.7e-6`` of its peak).

    >>> p = GaussianPulse(frequency=0.1, fwidth=0.05)
    >>> round(p.width, 4), round(p.delay, 3)
    (3.1831, 15.915)
    """

    frequency: float
    fwidth: float
    cutoff: float = 5.0

    def __post_init__(self):
        _positive("GaussianPulse frequency", self.frequency)
        _positive("GaussianPulse fwidth", self.fwidth)
        _positive("GaussianPulse cutoff", self.cutoff)

    @property
    def width(self) -> float:
        return 1.0 / (2 * np.pi * self.fwidth)

    @property
    def delay(self) -> float:
        return self.cutoff * self.width

    @property
    def max_frequency(self) -> float:
        """Highest frequency with a share of the spectrum (``frequency + 3 fwidth``)."""
        return self.frequency + 3 * self.fwidth

    def __call__(self, t) -> np.ndarray:
        s = np.asarray(t, dtype=np.float64) - self.delay
        return np.sin(2 * np.pi * self.frequency * s) * np.exp(-0.5 * (s / self.width) ** 2)


@dataclass(frozen=True)
class Ricker:
    """The Ricker wavelet of peak frequency ``frequency``, delay ``1.5 / frequency``."""

    frequency: float

    def __post_init__(self):
        _positive("Ricker frequency", self.frequency)

    @property
    def delay(self) -> float:
        return 1.5 / self.frequency

    @property
    def max_frequency(self) -> float:
        return 2.5 * self.frequency

    def __call__(self, t) -> np.ndarray:
        a = (np.pi * self.frequency * (np.asarray(t, dtype=np.float64) - self.delay)) ** 2
        return (1.0 - 2.0 * a) * np.exp(-a)


@dataclass(frozen=True)
class ContinuousWave:
    """``sin(2 pi f t)`` switched on smoothly over ``ramp`` periods (a ``sin^2`` ramp).

    >>> float(ContinuousWave(0.25, ramp=0)(1.0))
    1.0
    """

    frequency: float
    ramp: float = 5.0

    def __post_init__(self):
        _positive("ContinuousWave frequency", self.frequency)
        if not (np.isfinite(self.ramp) and self.ramp >= 0):
            raise ValueError(f"ContinuousWave ramp must be a number of periods >= 0; got {self.ramp!r}")

    delay = 0.0

    @property
    def max_frequency(self) -> float:
        return self.frequency * (1 + (1 / self.ramp if self.ramp else 0))

    def __call__(self, t) -> np.ndarray:
        t = np.asarray(t, dtype=np.float64)
        wave = np.sin(2 * np.pi * self.frequency * t)
        if self.ramp == 0:
            return wave
        r = np.clip(t * self.frequency / self.ramp, 0.0, 1.0)
        return wave * np.sin(np.pi / 2 * r) ** 2


_WAVEFORMS = (GaussianPulse, Ricker, ContinuousWave)


def _cell(name: str, position) -> tuple[int, int, int]:
    cell = tuple(np.asarray(position).ravel().tolist())
    if len(cell) != 3 or not all(isinstance(c, (int, np.integer)) and not isinstance(c, bool) for c in cell):
        raise ValueError(f"{name} position must be three integer cell indices (x, y, z); got {position!r}")
    return tuple(int(c) for c in cell)


def _component(name: str, component: str, allowed=COMPONENTS) -> str:
    if component not in allowed:
        raise ValueError(f"{name} component must be one of {allowed}; got {component!r}")
    return component


@dataclass(frozen=True)
class Dipole:
    """A point current of ``waveform`` times ``amplitude`` on ``component`` (``"Ex"``, ``"Ey"``, ``"Ez"``)
    at cell ``position``.

    >>> Dipole((4, 4, 4), "Ez", GaussianPulse(0.1, 0.05)).component
    'Ez'
    """

    position: tuple
    component: str = "Ez"
    waveform: object = None
    amplitude: float = 1.0

    def __post_init__(self):
        object.__setattr__(self, "position", _cell("Dipole", self.position))
        _component("Dipole", self.component, COMPONENTS[:3])
        if not isinstance(self.waveform, _WAVEFORMS):
            raise TypeError("Dipole waveform must be a GaussianPulse, Ricker or ContinuousWave; got "
                            f"{type(self.waveform).__name__}")
        if isinstance(self.amplitude, bool) or not np.isfinite(self.amplitude):
            raise ValueError(f"Dipole amplitude must be a finite number; got {self.amplitude!r}")

    def current(self, steps: np.ndarray, dt: float) -> np.ndarray:
        """``J`` at the half steps ``(n + 1/2) dt`` of ``steps`` (float64)."""
        return self.amplitude * self.waveform((np.asarray(steps, dtype=np.float64) + 0.5) * dt)


@dataclass(frozen=True)
class Probe:
    """Records ``component`` at cell ``position`` every step.

    >>> Probe((1, 2, 3), "Hy").position
    (1, 2, 3)
    """

    position: tuple
    component: str = "Ez"

    def __post_init__(self):
        object.__setattr__(self, "position", _cell("Probe", self.position))
        _component("Probe", self.component)


def _box(box) -> tuple:
    try:
        lo, hi = (_cell("PlaneWave box corner", c) for c in box)
    except (TypeError, ValueError):
        raise ValueError("PlaneWave box must be two cells ((x0, y0, z0), (x1, y1, z1)), the total-field "
                         f"region's corners; got {box!r}") from None
    if any(a >= b for a, b in zip(lo, hi, strict=True)):
        raise ValueError(f"PlaneWave box must have x0 < x1, y0 < y1, z0 < z1; got {box!r}")
    return lo, hi


@dataclass(frozen=True)
class PlaneWave:
    """A total-field/scattered-field plane wave along ``direction`` (``"+x"``, ``"-x"``, .. ``"-z"``), its
    ``E`` along ``polarization`` (``"x"``, ``"y"`` or ``"z"``, perpendicular to the direction), of
    ``waveform`` times ``amplitude``, in the total-field box ``box = ((x0, y0, z0), (x1, y1, z1))``:
    the field points whose staggered positions lie in ``[x0, x1] x [y0, y1] x [z0, z1]`` hold the total
    field, the others the scattered field alone (:mod:`diamondlab.maxwell.tfsf`).  The incident ``E``
    is ``amplitude * waveform(t)`` :data:`~diamondlab.maxwell.tfsf.MARGIN` cells before the entry face.

    >>> w = PlaneWave("-y", "x", GaussianPulse(0.05, 0.02), box=((10, 10, 10), (30, 20, 20)))
    >>> w.axis, w.sign, w.polarization_axis
    (1, -1, 0)
    """

    direction: str = "+x"
    polarization: str = "z"
    waveform: object = None
    box: tuple = None
    amplitude: float = 1.0

    def __post_init__(self):
        if self.direction not in DIRECTIONS:
            raise ValueError(f"PlaneWave direction must be one of {DIRECTIONS}; got {self.direction!r}")
        if self.polarization not in ("x", "y", "z"):
            raise ValueError(f"PlaneWave polarization must be 'x', 'y' or 'z' (the E component); got "
                             f"{self.polarization!r}")
        if self.polarization == self.direction[1]:
            raise ValueError(f"PlaneWave polarization must be perpendicular to its direction "
                             f"{self.direction!r}; got {self.polarization!r}")
        if not isinstance(self.waveform, _WAVEFORMS):
            raise TypeError("PlaneWave waveform must be a GaussianPulse, Ricker or ContinuousWave; got "
                            f"{type(self.waveform).__name__}")
        if isinstance(self.amplitude, bool) or not isinstance(self.amplitude, (int, float, np.number)) \
                or not np.isfinite(self.amplitude):
            raise ValueError(f"PlaneWave amplitude must be a finite number; got {self.amplitude!r}")
        object.__setattr__(self, "box", _box(self.box))

    @property
    def axis(self) -> int:
        return "xyz".index(self.direction[1])

    @property
    def sign(self) -> int:
        return 1 if self.direction[0] == "+" else -1

    @property
    def polarization_axis(self) -> int:
        return "xyz".index(self.polarization)
