"""Media and objects of a Maxwell scene, and the material table the kernels read.

Contract
--------
A medium is :class:`Dielectric` (``eps``, ``mu``, conductivity ``sigma``),
:class:`Drude` (``eps_inf``, plasma frequency ``wp``, collision rate
``gamma``, angular frequencies in the normalised units ``2 pi c / h``... see
:mod:`diamondlab.maxwell.scheme`) or :data:`PEC`.  An object places a medium
in space: :class:`Sphere`, :class:`Box`, :class:`Slab`, :class:`Cylinder`,
or :class:`IndexArray` (the user's own integer map into a list of media).
Positions are in cells; a later object covers an earlier one (as in Meep).

:func:`material_table` rasterises the objects onto the Yee grid: each of
the three ``E`` components takes the medium at its own staggered position
(``Ex`` at ``(i + 1/2, j, k)``, ...), each ``H`` component the medium of
the ``E`` component of the same index (a staircase, no sub-cell averaging
yet), one byte per component and cell: ``index`` of shape ``(3, nx, ny,
nz)`` uint8 (3 bytes a cell), and a float32 ``coefficients`` row per
medium (8 numbers) that every update reads:

- ``ca, cb``: ``E <- ca E + cb (curl H - J)`` with the conductivity
  (``(1 - s) / (1 + s)`` and ``dt / eps / (1 + s)``, ``s = sigma dt / (2 eps)``),
  both 0 for PEC;
- ``kj, bj``: the Drude current ``J <- kj J + bj E`` (auxiliary
  differential equation, paper 002; ``kj = (1 - g) / (1 + g)``,
  ``bj = wp^2 dt / (1 + g)``, ``g = gamma dt / 2``), 0 elsewhere;
- ``dh``: ``H <- H - dh curl E`` (``dt / mu``).

A Drude medium adds three float32 arrays of current (12 bytes a cell) to
the run. ``eps``, ``eps_inf`` and ``mu`` must be at least 1 (the run's
Courant limit is the vacuum's).

On a periodic axis (the run's ``periodic`` option) an object wraps:
:func:`periodic_images` makes each object also hold its images one period
away on either side (on every periodic axis and their combinations), so a
sphere across the ``y`` face shows on both sides; an :class:`IndexArray`
is per cell and needs nothing. NumPy only.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "COEFFICIENTS",
    "PEC",
    "VACUUM",
    "Box",
    "Cylinder",
    "Dielectric",
    "Drude",
    "IndexArray",
    "MaterialTable",
    "PerfectConductor",
    "Slab",
    "Sphere",
    "has_drude",
    "material_table",
    "medium_at",
    "periodic_images",
    "source_coefficient",
    "yee_positions",
]

#: Columns of a material-table row.
COEFFICIENTS = ("ca", "cb", "kj", "bj", "dh", "eps", "mu", "sigma")


def _number(name: str, value, low: float, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) or not np.isfinite(value) \
            or value < low:
        raise ValueError(f"{name} must be a finite number >= {low:g} ({what}); got {value!r}")
    return float(value)


@dataclass(frozen=True)
class Dielectric:
    """A linear medium: relative permittivity ``eps``, permeability ``mu``, conductivity ``sigma``.

    >>> Dielectric(eps=2.25).refractive_index
    1.5
    """

    eps: float = 1.0
    mu: float = 1.0
    sigma: float = 0.0

    def __post_init__(self):
        object.__setattr__(self, "eps", _number("eps", self.eps, 1.0, "relative permittivity"))
        object.__setattr__(self, "mu", _number("mu", self.mu, 1.0, "relative permeability"))
        object.__setattr__(self, "sigma", _number("sigma", self.sigma, 0.0, "conductivity"))

    @property
    def refractive_index(self) -> float:
        return float(np.sqrt(self.eps * self.mu))

    def permittivity(self, omega) -> np.ndarray:
        """Complex relative permittivity at angular frequency ``omega`` (``exp(-i omega t)``)."""
        omega = np.asarray(omega, dtype=np.float64)
        return self.eps + 1j * self.sigma / omega


@dataclass(frozen=True)
class Drude:
    """A Drude metal: ``eps(omega) = eps_inf - wp^2 / (omega^2 + i gamma omega)`` (+ conductivity).

    Frequencies are angular, in the normalised units (``c / h``).

    >>> m = Drude(eps_inf=1.0, wp=1.0, gamma=0.0)
    >>> float(m.permittivity(0.5).real)
    -3.0
    """

    eps_inf: float = 1.0
    wp: float = 0.0
    gamma: float = 0.0
    sigma: float = 0.0

    def __post_init__(self):
        object.__setattr__(self, "eps_inf", _number("eps_inf", self.eps_inf, 1.0, "permittivity at "
                                                    "infinite frequency"))
        object.__setattr__(self, "wp", _number("wp", self.wp, 0.0, "plasma angular frequency"))
        object.__setattr__(self, "gamma", _number("gamma", self.gamma, 0.0, "collision rate"))
        object.__setattr__(self, "sigma", _number("sigma", self.sigma, 0.0, "conductivity"))

    mu = 1.0

    @property
    def eps(self) -> float:
        return self.eps_inf

    def permittivity(self, omega) -> np.ndarray:
        """Complex relative permittivity at angular frequency ``omega`` (``exp(-i omega t)``)."""
        omega = np.asarray(omega, dtype=np.float64)
        return self.eps_inf - self.wp**2 / (omega**2 + 1j * self.gamma * omega) + 1j * self.sigma / omega


@dataclass(frozen=True)
class PerfectConductor:
    """A perfect electric conductor: ``E = 0`` in it."""

    eps = 1.0
    mu = 1.0
    sigma = 0.0


#: The perfect electric conductor.
PEC = PerfectConductor()
#: Empty space.
VACUUM = Dielectric()
_MEDIA = (Dielectric, Drude, PerfectConductor)


def _check_medium(medium, what: str):
    if not isinstance(medium, _MEDIA):
        raise TypeError(f"{what} must be a Dielectric, Drude or PEC; got {type(medium).__name__}")
    return medium


def _point(name: str, value) -> tuple[float, float, float]:
    p = tuple(float(v) for v in np.asarray(value, dtype=np.float64).ravel())
    if len(p) != 3 or not all(np.isfinite(p)):
        raise ValueError(f"{name} must be three finite numbers (x, y, z) in cells; got {value!r}")
    return p


@dataclass(frozen=True)
class Sphere:
    """A ball of ``medium``: centre ``(x, y, z)`` and radius in cells.

    >>> s = Sphere((5, 5, 5), 2, Dielectric(4.0))
    >>> bool(s.contains(5, 5, 6.9)), bool(s.contains(5, 5, 7.1))
    (True, False)
    """

    center: tuple
    radius: float
    medium: object = VACUUM

    def __post_init__(self):
        object.__setattr__(self, "center", _point("Sphere center", self.center))
        object.__setattr__(self, "radius", _number("Sphere radius", self.radius, 0.0, "cells"))
        _check_medium(self.medium, "Sphere medium")

    def contains(self, x, y, z):
        cx, cy, cz = self.center
        return (x - cx) ** 2 + (y - cy) ** 2 + (z - cz) ** 2 <= self.radius**2


@dataclass(frozen=True)
class Box:
    """An axis-aligned box ``lo <= (x, y, z) <= hi`` of ``medium`` (cells)."""

    lo: tuple
    hi: tuple
    medium: object = VACUUM

    def __post_init__(self):
        lo, hi = _point("Box lo", self.lo), _point("Box hi", self.hi)
        if any(a > b for a, b in zip(lo, hi, strict=True)):
            raise ValueError(f"Box lo must not exceed hi on any axis; got lo={lo}, hi={hi}")
        object.__setattr__(self, "lo", lo)
        object.__setattr__(self, "hi", hi)
        _check_medium(self.medium, "Box medium")

    def contains(self, x, y, z):
        (x0, y0, z0), (x1, y1, z1) = self.lo, self.hi
        return (x >= x0) & (x <= x1) & (y >= y0) & (y <= y1) & (z >= z0) & (z <= z1)


_AXES = ("x", "y", "z")


@dataclass(frozen=True)
class Slab:
    """The layer ``lo <= coordinate <= hi`` along ``axis`` (``"x"``, ``"y"`` or ``"z"``), infinite across."""

    axis: str
    lo: float
    hi: float
    medium: object = VACUUM

    def __post_init__(self):
        if self.axis not in _AXES:
            raise ValueError(f"Slab axis must be one of {_AXES}; got {self.axis!r}")
        lo = _number("Slab lo", self.lo, -np.inf, "cells")
        hi = _number("Slab hi", self.hi, lo, "cells, at least lo")
        object.__setattr__(self, "lo", lo)
        object.__setattr__(self, "hi", hi)
        _check_medium(self.medium, "Slab medium")

    def contains(self, x, y, z):
        c = (x, y, z)[_AXES.index(self.axis)]
        return (c >= self.lo) & (c <= self.hi) & np.ones(np.broadcast(x, y, z).shape, dtype=bool)


@dataclass(frozen=True)
class Cylinder:
    """A cylinder of ``radius`` around the line through ``center`` along ``axis``, ``height`` long
    (infinite when None)."""

    center: tuple
    radius: float
    axis: str = "z"
    height: float | None = None
    medium: object = VACUUM

    def __post_init__(self):
        object.__setattr__(self, "center", _point("Cylinder center", self.center))
        object.__setattr__(self, "radius", _number("Cylinder radius", self.radius, 0.0, "cells"))
        if self.axis not in _AXES:
            raise ValueError(f"Cylinder axis must be one of {_AXES}; got {self.axis!r}")
        if self.height is not None:
            object.__setattr__(self, "height", _number("Cylinder height", self.height, 0.0, "cells"))
        _check_medium(self.medium, "Cylinder medium")

    def contains(self, x, y, z):
        a = _AXES.index(self.axis)
        coords = (x, y, z)
        across = [coords[i] - self.center[i] for i in range(3) if i != a]
        inside = across[0] ** 2 + across[1] ** 2 <= self.radius**2
        if self.height is not None:
            inside = inside & (np.abs(coords[a] - self.center[a]) <= self.height / 2)
        return inside


@dataclass(frozen=True)
class IndexArray:
    """The user's own map: ``index[x, y, z]`` picks ``media[index]`` per cell (0 may be vacuum)."""

    index: np.ndarray = field(repr=False)
    media: tuple = ()

    def __post_init__(self):
        index = np.asarray(self.index)
        if index.ndim != 3 or not np.issubdtype(index.dtype, np.integer):
            raise ValueError(f"IndexArray index must be a 3D integer array; got {index.dtype} of shape "
                             f"{index.shape}")
        media = tuple(_check_medium(m, "IndexArray media[i]") for m in self.media)
        if not media:
            raise ValueError("IndexArray media must name at least one medium")
        if index.size and (index.min() < 0 or index.max() >= len(media)):
            raise ValueError(f"IndexArray index values must lie in [0, {len(media) - 1}] (one per medium); "
                             f"got [{index.min()}, {index.max()}]")
        object.__setattr__(self, "index", index)
        object.__setattr__(self, "media", media)


@dataclass(frozen=True)
class PeriodicImages:
    """``obj`` and its images shifted by ``shifts`` (``(dx, dy, dz)`` each): what a periodic axis holds."""

    obj: object
    shifts: tuple

    @property
    def medium(self):
        return self.obj.medium

    def contains(self, x, y, z):
        inside = self.obj.contains(x, y, z)
        for dx, dy, dz in self.shifts:
            inside = inside | self.obj.contains(x - dx, y - dy, z - dz)
        return inside


def periodic_images(objects, shape, periodic) -> tuple:
    """``objects`` with each object (not an :class:`IndexArray`) wrapped on the ``periodic`` axes of
    ``shape``: it also holds its images one period away on either side.

    >>> s = Sphere((8, 0, 4), 2, Dielectric(4.0))
    >>> (w,) = periodic_images([s], (16, 10, 8), "y")
    >>> bool(s.contains(8, 9, 4)), bool(w.contains(8, 9, 4))
    (False, True)
    """
    axes = ["xyz".index(a) for a in periodic]
    if not axes:
        return tuple(objects)
    shifts = []
    for combo in itertools.product((-1, 0, 1), repeat=len(axes)):
        if any(combo):
            d = [0, 0, 0]
            for a, k in zip(axes, combo, strict=True):
                d[a] = k * shape[a]
            shifts.append(tuple(d))
    shifts = tuple(shifts)
    return tuple(obj if isinstance(obj, IndexArray) else PeriodicImages(obj, shifts) for obj in objects)


def yee_positions(component: int, shape):
    """Broadcastable coordinates ``(x, y, z)`` of ``E`` component ``component`` (0, 1, 2) on ``shape``.

    >>> x, y, z = yee_positions(0, (2, 1, 1))
    >>> x.ravel().tolist()
    [0.5, 1.5]
    """
    coords = [np.arange(n, dtype=np.float64) for n in shape]
    coords[component] = coords[component] + 0.5
    return np.ix_(*coords)


@dataclass(frozen=True)
class MaterialTable:
    """The rasterised scene: ``index`` (3, nx, ny, nz) uint8, ``media`` (one per row), ``coefficients``
    (float32, a row of :data:`COEFFICIENTS` per medium at this ``dt``)."""

    index: np.ndarray = field(repr=False)
    media: tuple
    coefficients: np.ndarray = field(repr=False)

    @property
    def drude(self) -> bool:
        """Whether a Drude medium is present (the run then holds the current arrays)."""
        return any(isinstance(m, Drude) for m in self.media)

    @property
    def vacuum_only(self) -> bool:
        return self.media == (VACUUM,)

    def medium_at(self, component: int, cell) -> object:
        return self.media[int(self.index[(component, *cell)])]


def _coefficients(medium, dt: float) -> list[float]:
    if isinstance(medium, PerfectConductor):
        return [0.0, 0.0, 0.0, 0.0, dt, 1.0, 1.0, 0.0]
    eps, mu, sigma = medium.eps, medium.mu, medium.sigma
    s = sigma * dt / (2 * eps)
    ca, cb = (1 - s) / (1 + s), dt / eps / (1 + s)
    kj = bj = 0.0
    if isinstance(medium, Drude) and medium.wp > 0:
        g = medium.gamma * dt / 2
        kj, bj = (1 - g) / (1 + g), medium.wp**2 * dt / (1 + g)
    return [ca, cb, kj, bj, dt / mu, eps, mu, sigma]


def material_table(objects, shape, dt: float, pec_faces: bool | str = False) -> MaterialTable:
    """Rasterise ``objects`` (later ones on top) onto the Yee grid of ``shape`` at time step ``dt``.

    ``pec_faces``: the grid's six outer planes are perfect conductors (the
    components tangential to a face held at zero on it), so that the domain
    is a PEC box of ``n - 1`` cells along each axis; or the axes whose faces
    are (``"x"``, ``"xz"``, ...: a periodic axis has none).

    >>> t = material_table([Sphere((4, 4, 4), 2, Dielectric(4.0))], (8, 8, 8), dt=0.5)
    >>> t.index.shape, len(t.media), int(t.index[2, 4, 4, 4]), float(t.coefficients[1, 1])
    ((3, 8, 8, 8), 2, 1, 0.125)
    """
    media = [VACUUM]
    index = np.zeros((3, *shape), dtype=np.uint8)

    def slot(medium) -> int:
        if medium not in media:
            if len(media) == 256:
                raise ValueError("materials: at most 256 different media (one byte a component and cell)")
            media.append(medium)
        return media.index(medium)

    for n, obj in enumerate(objects):
        if isinstance(obj, IndexArray):
            if obj.index.shape != tuple(shape):
                raise ValueError(f"materials[{n}]: IndexArray index has shape {obj.index.shape}, the grid "
                                 f"{tuple(shape)}")
            lut = np.array([slot(m) for m in obj.media], dtype=np.uint8)
            index[:] = lut[obj.index][None]
            continue
        if not hasattr(obj, "contains"):
            raise TypeError(f"materials[{n}] must be a Sphere, Box, Slab, Cylinder or IndexArray; got "
                            f"{type(obj).__name__}")
        m = slot(obj.medium)
        for c in range(3):
            inside = np.broadcast_to(obj.contains(*yee_positions(c, shape)), shape)
            index[c][inside] = m
    walls = "xyz" if pec_faces is True else (pec_faces or "")
    if walls:  # the grid's outer planes: tangential E held at zero (a perfect conductor)
        wall = slot(PEC)
        for c in range(3):
            for a in range(3):
                if a != c and "xyz"[a] in walls:
                    face = [slice(None)] * 3
                    for end in (0, shape[a] - 1):
                        face[a] = end
                        index[(c, *face)] = wall
    coefficients = np.array([_coefficients(m, dt) for m in media], dtype=np.float32)
    return MaterialTable(index, tuple(media), coefficients)


def _media_of(obj) -> tuple:
    return obj.media if isinstance(obj, IndexArray) else (obj.medium,)


def has_drude(objects) -> bool:
    """Whether any of ``objects`` holds a Drude medium (the run then keeps the current arrays).

    >>> has_drude([Sphere((0, 0, 0), 1, Drude(1.0, 1.0, 0.1))])
    True
    """
    return any(isinstance(m, Drude) for obj in objects for m in _media_of(obj))


def medium_at(objects, component: int, cell) -> object:
    """The medium of ``E`` component ``component`` (0, 1, 2) of ``cell``, as :func:`material_table` puts it.

    >>> medium_at([Sphere((4, 4, 4), 1, PEC)], 2, (4, 4, 4)) is PEC
    True
    """
    position = [float(c) for c in cell]
    position[component] += 0.5
    found = VACUUM
    for obj in objects:
        if isinstance(obj, IndexArray):
            found = obj.media[int(obj.index[tuple(int(c) for c in cell)])]
        elif bool(obj.contains(*position)):
            found = obj.medium
    return found


def source_coefficient(objects, component: int, cell, dt: float) -> float:
    """``cb`` (``dt / eps`` with the conductivity) of an ``E`` component's cell, as the kernels hold it."""
    return float(np.float32(_coefficients(medium_at(objects, component, cell), dt)[1]))
