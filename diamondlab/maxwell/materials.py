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
the ``E`` component of the same index, one byte per component and cell:
``index`` of shape ``(3, nx, ny, nz)`` uint8 (3 bytes a cell), and a
float32 ``coefficients`` row per medium (8 numbers, 32 bytes) that every
update reads:

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

Subpixel averaging (``eps_averaging=True``, the default, as Meep's)
-------------------------------------------------------------------
A staircase moves an interface by up to half a cell and makes the error
first order in the cell size.  Where an object's surface crosses the cell
``[p - 1/2, p + 1/2]^3`` around an ``E`` component's point ``p`` (the
surface flips ``contains`` between the box's 8 corners and ``p``), the
cell is sampled ``8^3`` times and, where every sample is a lossless
:class:`Dielectric` of one ``mu``, the component takes the diagonal of
Meep's averaged inverse tensor along its own axis ``d``:
``1 / eps_eff = n_d^2 <1/eps> + (1 - n_d^2) / <eps>`` (``<>`` the mean
over the samples, ``n`` the unit normal, from the first moment of ``eps``
over a mirror-symmetric ``4^3`` lattice of the cell: it points where
``eps`` grows).  The ``8^3`` samples are one per sub-cube, shifted so
that each axis meets 512 distinct values (a face along the axes gets its
fill fraction to 1/512, not 1/8).  A field along the
normal sees the harmonic mean, one along the surface the arithmetic mean.
The kernels hold one scalar per component, so the tensor's off-diagonal
terms (nonzero only where the normal is oblique to the axes) are dropped.
``1/eps_eff`` is rounded to one of :data:`AVERAGING_LEVELS` + 1 levels
between the scene's smallest and largest ``1/eps`` (per ``mu``), each an
extra table row (a :class:`Dielectric`) where used: at most 63 rows
(2 KiB) more per ``mu``, and no extra bytes a cell (the index stays one
byte a component).  Drude media, PEC and conducting (``sigma > 0``)
media are not averaged (the staircase stays wherever one of them lies in
the cell), as Meep averages only frequency-independent lossless
dielectrics: a harmonic mean of a dispersive ``eps(omega)`` is no
time-domain medium, and of a conductor's it is undefined.  An
:class:`IndexArray` is the user's own pixel map: its pixels are not
averaged against one another, only the objects laid on top of it.
NumPy only, computed once at set-up.

On a periodic axis (the run's ``periodic`` option) an object wraps:
:func:`periodic_images` makes each object also hold its images one period
away on either side (on every periodic axis and their combinations), so a
sphere across the ``y`` face shows on both sides; an :class:`IndexArray`
is per cell and needs nothing.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

from diamondlab.maxwell.scheme import YEE_POSITIONS

__all__ = [
    "AVERAGING_LEVELS",
    "AVERAGING_SAMPLES",
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
#: Levels of an averaged ``1/eps`` between a scene's extremes (one table row each where used).
AVERAGING_LEVELS = 64
#: Samples per axis of a cell that an object's surface crosses (``8^3`` a cell).
AVERAGING_SAMPLES = 8


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
    offset = YEE_POSITIONS["E" + "xyz"[component]]
    return np.ix_(*(np.arange(n, dtype=np.float64) + offset[a] for a, n in enumerate(shape)))


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


def _scene(objects, shape=None):
    """The scene's media (vacuum first, in the order met), ``slot(medium)``, the last
    :class:`IndexArray` as ``(lut, index)`` (or None) and the objects on top of it as ``(object, slot)``."""
    media = [VACUUM]

    def slot(medium) -> int:
        if medium not in media:
            if len(media) == 256:
                raise ValueError("materials: at most 256 different media (one byte a component and cell); "
                                 "with eps_averaging=True the averaged interfaces take up to "
                                 f"{AVERAGING_LEVELS - 1} of them per permeability: pass eps_averaging=False")
            media.append(medium)
        return media.index(medium)

    base, layers = None, []
    for n, obj in enumerate(objects):
        if isinstance(obj, IndexArray):
            if shape is not None and obj.index.shape != tuple(shape):
                raise ValueError(f"materials[{n}]: IndexArray index has shape {obj.index.shape}, the grid "
                                 f"{tuple(shape)}")
            base, layers = (np.array([slot(m) for m in obj.media], dtype=np.uint8), obj.index), []
            continue
        if not hasattr(obj, "contains"):
            raise TypeError(f"materials[{n}] must be a Sphere, Box, Slab, Cylinder or IndexArray; got "
                            f"{type(obj).__name__}")
        layers.append((obj, slot(obj.medium)))
    return media, slot, base, layers


def _paint(out: np.ndarray, layers, x, y, z) -> np.ndarray:
    """``out`` (slots) with each object of ``layers`` painted, in order, where it contains ``(x, y, z)``."""
    for obj, m in layers:
        out[np.broadcast_to(obj.contains(x, y, z), out.shape)] = m
    return out


def _crossed_grid(layers, component: int, shape) -> np.ndarray:
    """Whether an object's surface crosses the cell box around each point of ``E`` component
    ``component`` (``contains`` differs between its 8 corners and the point), on the whole grid."""
    nx, ny, nz = shape
    corners = [np.arange(n + 1, dtype=np.float64) + (0.0 if a == component else -0.5)
               for a, n in enumerate(shape)]
    out = np.zeros(shape, dtype=bool)
    for obj, _ in layers:
        inside = np.broadcast_to(obj.contains(*np.ix_(*corners)), (nx + 1, ny + 1, nz + 1))
        centre = np.broadcast_to(obj.contains(*yee_positions(component, shape)), shape)
        some, every = centre.copy(), centre.copy()
        for dx in (0, 1):
            for dy in (0, 1):
                for dz in (0, 1):
                    v = inside[dx:dx + nx, dy:dy + ny, dz:dz + nz]
                    some |= v
                    every &= v
        out |= some != every
    return out


def _crossed_cells(layers, component: int, cells: np.ndarray) -> np.ndarray:
    """:func:`_crossed_grid` at the cells ``(N, 3)`` alone (the same coordinates, the same answer)."""
    shift = np.array([0.0 if a == component else -0.5 for a in range(3)])
    d = np.array([(dx, dy, dz) for dx in (0, 1) for dy in (0, 1) for dz in (0, 1)], dtype=np.float64)
    corners = (cells[:, None, :].astype(np.float64) + d[None]) + shift  # (N, 8, 3)
    centre = cells.astype(np.float64)
    centre[:, component] += 0.5
    out = np.zeros(len(cells), dtype=bool)
    for obj, _ in layers:
        inside = np.broadcast_to(obj.contains(corners[..., 0], corners[..., 1], corners[..., 2]),
                                 corners.shape[:2])
        mid = np.broadcast_to(obj.contains(centre[:, 0], centre[:, 1], centre[:, 2]), out.shape)
        out |= (inside != mid[:, None]).any(axis=1)
    return out


def _sample_offsets() -> np.ndarray:
    """``(S^3, 3)`` sample offsets in the cell ``[-1/2, 1/2]^3`` (``S`` = :data:`AVERAGING_SAMPLES`): one per
    sub-cube, shifted within it so that each axis meets ``S^3`` distinct values (a plane along the axes
    cuts the fill fraction to ``1 / S^3``, not ``1 / S``)."""
    s = AVERAGING_SAMPLES
    i, j, k = (a.ravel() for a in np.meshgrid(*(np.arange(s),) * 3, indexing="ij"))
    fine = lambda a, b, c: (a * s * s + b * s + c + 0.5) / s**3 - 0.5  # noqa: E731
    return np.stack([fine(i, j, k), fine(j, k, i), fine(k, i, j)], axis=1)


def _averaged(media, layers, base_slots: np.ndarray, component: int, cells: np.ndarray,
              chunk: int = 2048) -> list:
    """The averaged medium (a :class:`Dielectric`, or None: keep the staircase) of ``E`` component
    ``component`` at each of ``cells`` (``(N, 3)``, under the slots ``base_slots``): see the module
    contract."""
    lossless = [isinstance(m, Dielectric) and m.sigma == 0 for m in media]
    eps_of = np.array([m.eps for m in media], dtype=np.float64)
    mu_of = np.array([m.mu for m in media], dtype=np.float64)
    extremes = {}  # per permeability, the smallest and largest eps of the scene's lossless dielectrics
    for m, ok in zip(media, lossless, strict=True):
        if ok:
            lo, hi = extremes.get(m.mu, (m.eps, m.eps))
            extremes[m.mu] = (min(lo, m.eps), max(hi, m.eps))
    off = _sample_offsets()
    coarse = (np.arange(4, dtype=np.float64) + 0.5) / 4 - 0.5  # a mirror-symmetric 4^3 lattice: the normal
    coarse = np.stack([a.ravel() for a in np.meshgrid(coarse, coarse, coarse, indexing="ij")], axis=1)
    out = [None] * len(cells)
    for first in range(0, len(cells), chunk):
        part = cells[first:first + chunk].astype(np.float64)
        part[:, component] += 0.5
        n = len(part)
        slots = np.empty((n, len(off)), dtype=np.intp)
        slots[:] = base_slots[first:first + chunk, None]
        points = part[:, None, :] + off[None]
        _paint(slots, layers, points[..., 0], points[..., 1], points[..., 2])
        around = np.empty((n, len(coarse)), dtype=np.intp)
        around[:] = base_slots[first:first + chunk, None]
        points = part[:, None, :] + coarse[None]
        _paint(around, layers, points[..., 0], points[..., 1], points[..., 2])
        mu = mu_of[slots]
        ok = np.array(lossless)[slots].all(axis=1) & (mu == mu[:, :1]).all(axis=1)
        eps = eps_of[slots]
        mean_eps = eps.mean(axis=1)
        mean_inv = (1.0 / eps).mean(axis=1)
        g = eps_of[around] @ coarse  # the first moment of eps: the normal, where eps grows
        g2 = (g**2).sum(axis=1)
        unseen = g2 <= 1e-20 * mean_eps**2  # the surface slips between the 4^3 points: the fine samples
        g[unseen] = eps[unseen] @ off
        g2 = (g**2).sum(axis=1)
        flat_normal = g2 <= 1e-20 * mean_eps**2  # one medium, or no direction: the isotropic mean
        nd2 = np.where(flat_normal, 1.0 / 3.0, g[:, component] ** 2 / np.where(flat_normal, 1.0, g2))
        inv = nd2 * mean_inv + (1.0 - nd2) / mean_eps
        for i in np.flatnonzero(ok):
            m = float(mu[i, 0])
            lo, hi = extremes[m]
            if lo == hi:
                out[first + i] = Dielectric(lo, m)
                continue
            step = (1.0 / lo - 1.0 / hi) / AVERAGING_LEVELS
            q = int(np.clip(np.rint((inv[i] - 1.0 / hi) / step), 0, AVERAGING_LEVELS))
            eps_q = hi if q == 0 else lo if q == AVERAGING_LEVELS else 1.0 / (1.0 / hi + q * step)
            out[first + i] = Dielectric(eps_q, m)
    return out


def material_table(objects, shape, dt: float, pec_faces: bool | str = False,
                   eps_averaging: bool = True) -> MaterialTable:
    """Rasterise ``objects`` (later ones on top) onto the Yee grid of ``shape`` at time step ``dt``.

    ``pec_faces``: the grid's six outer planes are perfect conductors (the
    components tangential to a face held at zero on it), so that the domain
    is a PEC box of ``n - 1`` cells along each axis; or the axes whose faces
    are (``"x"``, ``"xz"``, ...: a periodic axis has none).  ``eps_averaging``:
    the subpixel averaging of dielectric interfaces (module contract; False:
    the staircase).

    >>> ball = [Sphere((4, 4, 4), 2, Dielectric(4.0))]
    >>> t = material_table(ball, (8, 8, 8), dt=0.5)
    >>> t.index.shape, int(t.index[2, 4, 4, 4]), float(t.coefficients[1, 1])
    ((3, 8, 8, 8), 1, 0.125)
    >>> eps = t.coefficients[t.index[2], 5]  # Ez's permittivity along x through the centre
    >>> [round(float(e), 2) for e in eps[:, 4, 4]]
    [1.0, 1.0, 2.12, 4.0, 4.0, 4.0, 2.12, 1.0]
    >>> len(material_table(ball, (8, 8, 8), 0.5, eps_averaging=False).media)
    2
    """
    if not isinstance(eps_averaging, (bool, np.bool_)):
        raise ValueError(f"eps_averaging must be True or False; got {eps_averaging!r}")
    media, slot, base, layers = _scene(objects, shape)
    index = np.zeros((3, *shape), dtype=np.uint8)
    if base is not None:
        index[:] = base[0][base[1]][None]
    for c in range(3):
        _paint(index[c], layers, *yee_positions(c, shape))
    if eps_averaging and layers:
        for c in range(3):
            cells = np.argwhere(_crossed_grid(layers, c, shape))
            if not len(cells):
                continue
            under = base[0][base[1][tuple(cells.T)]] if base is not None else np.zeros(len(cells), np.uint8)
            found = _averaged(media, layers, under.astype(np.intp), c, cells)
            keep = np.array([m is not None for m in found], dtype=bool)
            if keep.any():
                new = sorted({m for m in found if m is not None}, key=lambda m: (m.mu, -m.eps))
                rows = {m: slot(m) for m in new}
                index[c][tuple(cells[keep].T)] = [rows[m] for m in found if m is not None]
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


def medium_at(objects, component: int, cell, eps_averaging: bool = True) -> object:
    """The medium of ``E`` component ``component`` (0, 1, 2) of ``cell``, as :func:`material_table` puts it
    (an averaged :class:`Dielectric` where ``eps_averaging`` and a dielectric's surface crosses the cell).

    >>> medium_at([Sphere((4, 4, 4), 1, PEC)], 2, (4, 4, 4)) is PEC
    True
    >>> medium_at([Slab("z", 0, 4.5, Dielectric(4.0))], 2, (2, 2, 4)).eps  # Ez at z = 4.5: half in
    1.6
    """
    media, _, base, layers = _scene(objects)
    cells = np.array([[int(c) for c in cell]], dtype=np.int64)
    under = np.array([base[0][base[1][tuple(cells[0])]] if base is not None else 0], dtype=np.intp)
    point = [np.array([float(cells[0, a]) + (0.5 if a == component else 0.0)]) for a in range(3)]
    found = media[int(_paint(under.copy(), layers, *point)[0])]
    if eps_averaging and layers and _crossed_cells(layers, component, cells)[0]:
        averaged = _averaged(media, layers, under, component, cells)[0]
        if averaged is not None:
            return averaged
    return found


def source_coefficient(objects, component: int, cell, dt: float, eps_averaging: bool = True) -> float:
    """``cb`` (``dt / eps`` with the conductivity) of an ``E`` component's cell, as the kernels hold it."""
    return float(np.float32(_coefficients(medium_at(objects, component, cell, eps_averaging), dt)[1]))
