"""Maxwell monitors: the running DFT of the fields on planes, the flux through a plane or a box from it.

Contract
--------
A :class:`DFTPlane` accumulates, at each of its ``frequencies`` ``f`` (in
``c / h`` cycles: Meep's units), the discrete Fourier transform

    F(f) = sum_n F(t_n) exp(-2 pi i f t_n) dt

of its field components at the cells of a plane of the grid (a sub-rectangle
with ``region``), over every step since the simulation's start (or reset):
``E`` sampled at ``t_n = (n + 1) dt``, ``H`` at ``(n + 1/2) dt`` (the exact
times of the leapfrog, as Meep does; ``n`` the step, counted from 0 at
``step`` 0).  Each component sits at its own Yee position on the cell.

A :class:`FluxPlane` records the two tangential ``E`` and the two tangential
``H`` components on the plane ``axis = index`` (the ``E`` plane of that index)
and interpolates their DFTs to the centres of its cell faces ``(j + 1/2, k +
1/2)`` by averaging the neighbours, as Meep does (``E`` along the one axis it
is staggered from the centre, ``H`` along the normal, from the planes
``index - 1/2`` and ``index + 1/2``, and along its in-plane axis).  Its flux is

    P(f) = 1/2 Re sum (E(f) x conj(H(f))) . n dA        (dA = spacing^2)

over the faces, ``n`` the unit normal along ``+axis`` (``direction=+1``) or
``-axis``.  With the DFT above, the energy through the surface is
``4 int_0^inf P(f) df`` (``f`` in cycles; ``P`` is the time-averaged power of
the phasors ``E(f)``, ``H(f)``: a point current ``J(t)`` of transform ``J(f)``
in vacuum radiates ``P(f) = (2 pi f)^2 |J(f)|^2 / (12 pi)`` per unit cell
length).  The sign convention of the exponent does not change ``P``.
A :class:`FluxBox` is the six faces of a box, normals outward: its flux is the
net outward flux (positive for a source inside in a lossless medium).

The monitors' cells are recorded inside the DiamondTorre sweep as probe points
(no stepwise fallback) and transformed per sweep, each point's sum in step
order, so that the result does not depend on how the run is cut into calls
and DiamondTorre equals stepwise bit for bit.  Checks against the grid (the
plane and its region inside it, every frequency in ``(0, Nyquist]``) are
:func:`monitor_layout`'s.  NumPy only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from diamondlab.maxwell.sources import COMPONENTS

__all__ = ["FACES", "DFTPlane", "FluxBox", "FluxPlane", "MonitorLayout", "dft_phases", "face_values",
           "monitor_layout", "plane_flux_sum"]

_AXES = ("x", "y", "z")
#: The faces of a :class:`FluxBox`, in the order of its planes (outward normals).
FACES = ("-x", "+x", "-y", "+y", "-z", "+z")


def _axis(name: str, axis) -> int:
    if isinstance(axis, str) and axis in _AXES:
        return _AXES.index(axis)
    if isinstance(axis, (int, np.integer)) and not isinstance(axis, bool) and 0 <= axis <= 2:
        return int(axis)
    raise ValueError(f"{name} axis must be one of 'x', 'y', 'z' (or 0, 1, 2); got {axis!r}")


def _integer(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be a whole number (a cell index); got {value!r}")
    return int(value)


def _frequencies(name: str, frequencies) -> tuple:
    try:
        f = np.asarray(frequencies, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        raise ValueError(f"{name} frequencies must be numbers > 0 (cycles per unit time, c / h); got "
                         f"{frequencies!r}") from None
    if isinstance(frequencies, (bool, str)) or f.size == 0 or not np.isfinite(f).all() or (f <= 0).any():
        raise ValueError(f"{name} frequencies must be one or more finite numbers > 0 (cycles per unit time, "
                         f"c / h); got {frequencies!r}")
    return tuple(float(v) for v in f)


def _components(name: str, components) -> tuple:
    comps = (components,) if isinstance(components, str) else tuple(components)
    if not comps or any(c not in COMPONENTS for c in comps) or len(set(comps)) != len(comps):
        raise ValueError(f"{name} components must be distinct names of {COMPONENTS}; got {components!r}")
    return comps


def _ranges(name: str, region) -> tuple | None:
    """``region``: two ``(lo, hi)`` cell ranges (half-open) along the plane's other axes, in x, y, z order."""
    if region is None:
        return None
    try:
        (a0, a1), (b0, b1) = region
        ranges = tuple((_integer(name, lo), _integer(name, hi)) for lo, hi in ((a0, a1), (b0, b1)))
    except (TypeError, ValueError):
        raise ValueError(f"{name} region must be two (lo, hi) cell ranges along the plane's other two axes "
                         f"(in x, y, z order); got {region!r}") from None
    if any(lo >= hi for lo, hi in ranges):
        raise ValueError(f"{name} region must have lo < hi on both axes; got {region!r}")
    return ranges


def _check_plane(plane) -> None:
    """The checks of a plane monitor that need no grid (its axis, index, frequencies, region)."""
    name = type(plane).__name__
    _axis(name, plane.axis)
    object.__setattr__(plane, "index", _integer(f"{name} index", plane.index))
    object.__setattr__(plane, "frequencies", _frequencies(name, plane.frequencies))
    object.__setattr__(plane, "region", _ranges(name, plane.region))


@dataclass(frozen=True)
class DFTPlane:
    """The running DFT of ``components`` on the plane ``axis = index`` at ``frequencies`` (see the module).

    ``region``: ``((lo, hi), (lo, hi))``, half-open cell ranges along the plane's other two axes (in x, y,
    z order; default: the whole plane).  ``Simulation.dft(i)`` gives a dict of complex arrays, one per
    component, of shape ``(len(frequencies), n1, n2)``.

    >>> p = DFTPlane("x", 10, [0.1, 0.2], components=("Ez", "Hy"), region=((2, 8), (3, 5)))
    >>> p.axis_index, p.components, p.frequencies
    (0, ('Ez', 'Hy'), (0.1, 0.2))
    """

    axis: str = "z"
    index: int = 0
    frequencies: tuple = ()
    components: tuple = COMPONENTS
    region: tuple | None = None

    def __post_init__(self):
        _check_plane(self)
        object.__setattr__(self, "components", _components("DFTPlane", self.components))

    @property
    def axis_index(self) -> int:
        return _axis(type(self).__name__, self.axis)


@dataclass(frozen=True)
class FluxPlane:
    """The flux through the plane ``axis = index`` along ``direction`` (``+1``: toward ``+axis``) at
    ``frequencies``, from the DFT of its tangential fields (see the module).

    ``region``: ``((lo, hi), (lo, hi))``: the faces ``[lo, hi)`` along the plane's other two axes (x, y,
    z order; default every face of the plane: ``[0, n - 1)``).  ``Simulation.flux(i)`` gives ``P(f)``;
    ``Simulation.dft(i)`` the four tangential components at the face centres.

    >>> FluxPlane("y", 12, [0.05, 0.1], direction=-1).axis_index
    1
    """

    axis: str = "z"
    index: int = 1
    frequencies: tuple = ()
    region: tuple | None = None
    direction: int = 1

    def __post_init__(self):
        _check_plane(self)
        if self.direction not in (1, -1) or isinstance(self.direction, bool):
            raise ValueError(f"FluxPlane direction must be +1 or -1 (the normal along +axis or -axis); got "
                             f"{self.direction!r}")

    components = property(lambda self: _tangential(self.axis_index))
    axis_index = DFTPlane.axis_index


@dataclass(frozen=True)
class FluxBox:
    """The net outward flux through the box ``((x0, y0, z0), (x1, y1, z1))`` at ``frequencies``: six
    :class:`FluxPlane` faces (``x = x0`` with the normal ``-x``, ``x = x1`` with ``+x``, ...), each over the
    box's cells along its other axes.

    >>> b = FluxBox(((4, 4, 4), (12, 10, 9)), [0.1])
    >>> [(f.axis, f.index, f.direction) for f in b.faces][:2]
    [('x', 4, -1), ('x', 12, 1)]
    """

    box: tuple = None
    frequencies: tuple = ()

    def __post_init__(self):
        try:
            lo, hi = ([_integer("FluxBox box", c) for c in corner] for corner in self.box)
            if len(lo) != 3 or len(hi) != 3:
                raise ValueError
        except (TypeError, ValueError):
            raise ValueError("FluxBox box must be two cells ((x0, y0, z0), (x1, y1, z1)); got "
                             f"{self.box!r}") from None
        if any(a >= b for a, b in zip(lo, hi, strict=True)):
            raise ValueError(f"FluxBox box must have x0 < x1, y0 < y1, z0 < z1; got {self.box!r}")
        object.__setattr__(self, "box", (tuple(lo), tuple(hi)))
        object.__setattr__(self, "frequencies", _frequencies("FluxBox", self.frequencies))

    @property
    def faces(self) -> tuple:
        """The six :class:`FluxPlane` faces, in the order of :data:`FACES`."""
        lo, hi = self.box
        out = []
        for a in range(3):
            region = tuple((lo[b], hi[b]) for b in range(3) if b != a)
            out += [FluxPlane(_AXES[a], lo[a], self.frequencies, region, -1),
                    FluxPlane(_AXES[a], hi[a], self.frequencies, region, 1)]
        return tuple(out)


MONITORS = (DFTPlane, FluxPlane, FluxBox)


def _tangential(axis: int) -> tuple:
    """``(E_b, E_c, H_b, H_c)`` of the plane normal to ``axis``, ``(axis, b, c)`` cyclic."""
    b, c = (axis + 1) % 3, (axis + 2) % 3
    return (COMPONENTS[b], COMPONENTS[c], COMPONENTS[3 + b], COMPONENTS[3 + c])


def _block_boxes(axis: int, index: int, ranges) -> dict:
    """Per tangential component of a flux plane, the box ``(lo, hi)`` (half-open, x y z) of cells it
    records so that its DFT interpolates to the face centres ``ranges``."""
    b, c = (axis + 1) % 3, (axis + 2) % 3
    rb, rc = ranges[b], ranges[c]

    def box(a_rng, b_rng, c_rng):
        lo, hi = [0, 0, 0], [0, 0, 0]
        for ax, (x0, x1) in ((axis, a_rng), (b, b_rng), (c, c_rng)):
            lo[ax], hi[ax] = x0, x1
        return tuple(lo), tuple(hi)

    eb, ec, hb, hc = _tangential(axis)
    one, two = (index, index + 1), (index - 1, index + 1)
    return {eb: box(one, rb, (rc[0], rc[1] + 1)),             # E_b at (i, j+1/2, k): average k, k+1
            ec: box(one, (rb[0], rb[1] + 1), rc),             # E_c at (i, j, k+1/2): average j, j+1
            hb: box(two, (rb[0], rb[1] + 1), rc),             # H_b at (i+1/2, j, k+1/2): i-1/2 i+1/2, j j+1
            hc: box(two, rb, (rc[0], rc[1] + 1))}             # H_c at (i+1/2, j+1/2, k): i-1/2 i+1/2, k k+1


class _Block:
    """One component's box of recorded cells, its points at slots ``start ..`` in C order."""

    def __init__(self, component: str, lo, hi, start: int):
        self.component, self.lo, self.hi, self.start = component, tuple(lo), tuple(hi), start
        self.shape = tuple(b - a for a, b in zip(lo, hi, strict=True))
        self.size = int(np.prod(self.shape))

    def cells(self) -> np.ndarray:
        grids = np.meshgrid(*(np.arange(a, b) for a, b in zip(self.lo, self.hi, strict=True)), indexing="ij")
        return np.stack([g.ravel() for g in grids], axis=1)

    def values(self, acc: np.ndarray) -> np.ndarray:
        """This block's DFT ``(nf, *shape)`` from the monitor's accumulators ``(nf, npoints)``."""
        return acc[:, self.start : self.start + self.size].reshape(acc.shape[0], *self.shape)


class _Plane:
    """A plane of a monitor: its axis, its own component blocks; a flux plane's sign."""

    def __init__(self, axis, index, ranges, blocks, direction=None):
        self.axis, self.index, self.ranges = axis, index, ranges
        self.blocks, self.direction = blocks, direction

    def face_table(self) -> tuple[np.ndarray, tuple[int, int]]:
        """How a flux plane's four tangential components reach its face centres: ``(table, (n1, n2))``.

        ``table (4, 8)`` int64, a row for each block (``E_b, E_c, H_b, H_c``, ``b, c`` the axes after the
        plane's): ``start, s1, s2, count, o0, o1, o2, o3``; face ``(i, j)`` (``i`` along the lower of the
        other two axes) takes the block's sums ``v`` from ``start + i s1 + j s2``:
        ``0.5 (v[o0] + v[o1])`` (``count`` 2: an ``E`` component, between its two neighbours on the
        face) or ``0.5 (0.5 (v[o0] + v[o1]) + 0.5 (v[o2] + v[o3]))`` (4: an ``H`` component, across the
        plane, then along the face).  The host (:func:`plane_flux_sum`) and the GPU
        (:func:`~diamondlab.kernels.dft.dft_cuda_kernels` ``plane_flux``) read the same table.
        """
        a = self.axis
        b, c = (a + 1) % 3, (a + 2) % 3
        p, q = sorted((b, c))
        # E_b between its neighbours along c, E_c along b; H_b across the plane then along b, H_c then along c
        along = ((c,), (b,), (a, b), (a, c))
        eb = self.blocks[0]
        dims = (eb.shape[p] - (p == c), eb.shape[q] - (q == c))
        table = np.zeros((4, 8), np.int64)
        for row, (blk, axes) in enumerate(zip(self.blocks, along, strict=True)):
            strides = np.cumprod((1, *blk.shape[:0:-1]))[::-1]  # C order
            offsets = [0, strides[axes[0]]]
            if len(axes) == 2:
                offsets += [strides[axes[1]], strides[axes[0]] + strides[axes[1]]]
            table[row, :4] = blk.start, strides[p], strides[q], len(offsets)
            table[row, 4 : 4 + len(offsets)] = offsets
        return table, dims


def face_values(acc: np.ndarray, row: np.ndarray, dims: tuple[int, int]) -> np.ndarray:
    """One row of :meth:`_Plane.face_table` applied to a monitor's sums ``acc (nf, npoints)``:
    ``(nf, n1, n2)``."""
    start, s1, s2, count, *offsets = (int(v) for v in row)
    base = start + np.arange(dims[0])[:, None] * s1 + np.arange(dims[1])[None, :] * s2

    def mean(o0, o1):
        return 0.5 * (acc[:, base + o0] + acc[:, base + o1])

    if count == 2:
        return mean(*offsets[:2])
    return 0.5 * (mean(*offsets[:2]) + mean(*offsets[2:]))


def plane_flux_sum(acc: np.ndarray, table: np.ndarray, dims: tuple[int, int]) -> np.ndarray:
    """``sum Re(E_b conj(H_c) - E_c conj(H_b))`` over a flux plane's faces, one a frequency (float64), from
    its :meth:`_Plane.face_table` and its monitor's sums ``acc (nf, npoints)``.

    >>> lay = monitor_layout([FluxPlane("x", 3, [0.1, 0.2])], (6, 5, 4))
    >>> acc = np.ones((2, lay.npoints), complex)  # every sum 1: each face's E_b H_c - E_c H_b is 0
    >>> plane_flux_sum(acc, *lay.planes[0][0].face_table()).tolist(), lay.faces(0)
    ([0.0, 0.0], 12)
    """
    eb, ec, hb, hc = (face_values(acc, row, dims) for row in table)
    return (eb * np.conj(hc) - ec * np.conj(hb)).real.sum(axis=(1, 2))


@dataclass
class MonitorLayout:
    """The recorded points of the monitors and how their DFTs give the results.

    ``cells (N, 3)``, ``components (N,)`` (indices of :data:`COMPONENTS`), ``half (N,)`` (0: an ``E``
    sample, at ``(n + 1) dt``; 1: ``H``, at ``(n + 1/2) dt``); monitor ``m``'s points are
    ``starts[m] .. starts[m + 1]``, its frequencies ``frequencies[m]``.
    """

    monitors: tuple
    planes: list
    cells: np.ndarray
    components: np.ndarray
    half: np.ndarray
    starts: np.ndarray
    frequencies: list
    spacing: float

    @property
    def npoints(self) -> int:
        return len(self.components)

    def accumulator_bytes(self) -> int:
        """Bytes of the complex128 DFT sums of every monitor."""
        return sum(16 * len(f) * int(b - a) for f, a, b in
                   zip(self.frequencies, self.starts[:-1], self.starts[1:], strict=True))

    def dft(self, m: int, acc: np.ndarray):
        """The results of monitor ``m`` from its accumulators ``acc (nf, npoints)``: a dict per component
        (a :class:`FluxBox`: per face)."""
        planes = self.planes[m]
        out = [self._plane_dft(p, acc) for p in planes]
        if isinstance(self.monitors[m], FluxBox):
            return dict(zip(FACES, out, strict=True))
        return out[0]

    def _plane_dft(self, plane: _Plane, acc: np.ndarray) -> dict:
        if plane.direction is None:
            return {b.component: b.values(acc).squeeze(axis=1 + plane.axis) for b in plane.blocks}
        table, dims = plane.face_table()
        return {b.component: face_values(acc, row, dims) for b, row in zip(plane.blocks, table, strict=True)}

    def faces(self, m: int) -> int:
        """The face centres of flux monitor ``m``'s planes, all together (``n1 n2`` a plane)."""
        return sum(int(np.prod(p.face_table()[1])) for p in self.planes[m])

    def flux(self, m: int, acc: np.ndarray, face: str | None = None) -> np.ndarray:
        """``P(f)`` of flux monitor ``m`` (a box's net outward flux, or one ``face``'s) from its sums
        ``acc``."""
        return self.flux_from(m, lambda table, dims: plane_flux_sum(acc, table, dims), face)

    def flux_from(self, m: int, plane_sum, face: str | None = None) -> np.ndarray:
        """As :meth:`flux`, each plane's sum by ``plane_sum(table, dims)`` (:func:`plane_flux_sum` of the
        sums where they are: on the host, or on the GPU without their crossing the bus)."""
        monitor = self.monitors[m]
        if not isinstance(monitor, (FluxPlane, FluxBox)):
            raise ValueError(f"monitors[{m}] is a {type(monitor).__name__}: flux needs a FluxPlane or "
                             "FluxBox")
        planes = self.planes[m]
        if face is not None:
            if not isinstance(monitor, FluxBox) or face not in FACES:
                raise ValueError(f"face must be one of {FACES} for a FluxBox (None: the net flux); got "
                                 f"{face!r}")
            planes = [planes[FACES.index(face)]]
        total = np.zeros(len(self.frequencies[m]))
        for p in planes:
            total += 0.5 * p.direction * self.spacing**2 * plane_sum(*p.face_table())
        return total


def monitor_layout(monitors, shape, spacing: float = 1.0, name: str = "monitors") -> MonitorLayout:
    """Check ``monitors`` against the grid ``shape`` and lay out their points (see the module contract):
    a ``ValueError`` naming ``monitors[i]`` and the allowed range for a plane or region off the grid or a
    frequency above the grid's Nyquist limit ``0.5 / spacing`` (2 cells a wavelength).

    >>> lay = monitor_layout([FluxPlane("z", 5, [0.1], region=((2, 4), (2, 5)))], (8, 8, 8))
    >>> lay.npoints, sorted({COMPONENTS[c] for c in lay.components})
    (51, ['Ex', 'Ey', 'Hx', 'Hy'])
    >>> monitor_layout([DFTPlane("x", 8, [0.1])], (8, 8, 8))
    Traceback (most recent call last):
    ...
    ValueError: monitors[0] index must be in [0, 7] on the x axis of the grid (8, 8, 8); got 8
    """
    monitors = tuple(monitors)
    nyquist = 0.5 / spacing
    planes_of, blocks_all, starts, freqs = [], [], [0], []
    total = 0
    for m, mon in enumerate(monitors):
        if not isinstance(mon, MONITORS):
            raise TypeError(f"{name}[{m}] must be a DFTPlane, FluxPlane or FluxBox; got {type(mon).__name__}")
        where = f"{name}[{m}]"
        top = max(mon.frequencies)
        if top > nyquist:
            raise ValueError(f"{where} frequencies must be in (0, {nyquist:g}] (the grid's Nyquist limit, 2 "
                             f"cells a wavelength); got {top:g}")
        if isinstance(mon, FluxBox):
            lo, hi = mon.box
            if min(lo) < 1 or any(h > n - 1 for h, n in zip(hi, shape, strict=True)):
                top = tuple(n - 1 for n in shape)
                raise ValueError(f"{where} box must have its corners within [1, n - 1] on every axis of the "
                                 f"grid {tuple(shape)} (x0, y0, z0 >= 1; x1, y1, z1 <= {top}: a face needs "
                                 f"the cells on both sides); got {mon.box}")
        planes = []
        for plane in (mon.faces if isinstance(mon, FluxBox) else (mon,)):
            a = plane.axis_index
            flux = not isinstance(plane, DFTPlane)
            lo_i = 1 if flux else 0
            if not lo_i <= plane.index <= shape[a] - 1:
                what = f"{where} box" if isinstance(mon, FluxBox) else f"{where} index"
                raise ValueError(f"{what} must be in [{lo_i}, {shape[a] - 1}] on the {_AXES[a]} axis of the "
                                 f"grid {tuple(shape)}; got {plane.index}")
            others = [b for b in range(3) if b != a]
            top_cell = [shape[b] - (1 if flux else 0) for b in others]
            ranges = plane.region or tuple((0, t) for t in top_cell)
            for b, (r0, r1), t in zip(others, ranges, top_cell, strict=True):
                if r0 < 0 or r1 > t:
                    what = f"{where} box" if isinstance(mon, FluxBox) else f"{where} region"
                    raise ValueError(f"{what} must lie in [0, {t}) along {_AXES[b]} (the grid {tuple(shape)}"
                                     f"{', faces need the next cell' if flux else ''}); got [{r0}, {r1})")
            full = [None, None, None]
            full[a] = (plane.index, plane.index + 1)
            for b, r in zip(others, ranges, strict=True):
                full[b] = r
            if flux:
                boxes = _block_boxes(a, plane.index, full)
                items = [(c, *boxes[c]) for c in plane.components]
            else:
                lo, hi = zip(*full, strict=True)
                items = [(c, lo, hi) for c in plane.components]
            blocks = []
            for comp, lo, hi in items:
                blk = _Block(comp, lo, hi, total - starts[-1])
                blocks.append(blk)
                blocks_all.append(blk)
                total += blk.size
            planes.append(_Plane(a, plane.index, ranges, blocks, getattr(plane, "direction", None)))
        planes_of.append(planes)
        starts.append(total)
        freqs.append(np.array(mon.frequencies))
    cells = np.concatenate([b.cells() for b in blocks_all]) if blocks_all else np.zeros((0, 3), np.int64)
    comps = np.concatenate([np.full(b.size, COMPONENTS.index(b.component)) for b in blocks_all]) \
        if blocks_all else np.zeros(0, np.int64)
    return MonitorLayout(monitors, planes_of, cells.astype(np.int64), comps.astype(np.int64),
                         (comps >= 3).astype(np.int64), np.array(starts, dtype=np.int64), freqs,
                         float(spacing))


def dft_phases(frequencies, first_step: int, height: int, dt: float) -> np.ndarray:
    """``(2, nf, height)`` complex128: ``exp(-2 pi i f t) dt`` at the ``E`` sample times ``t = (n + 1) dt``
    (row 0) and the ``H`` ones ``(n + 1/2) dt`` (row 1), ``n = first_step ..``; each entry from its own
    ``(f, n)`` alone, so that a run cut into other sweeps sums the same numbers.

    >>> w = dft_phases([0.25], 0, 2, 1.0)
    >>> bool(np.allclose(w[0, 0], [-1j, -1])), bool(np.isclose(w[1, 0, 0], np.exp(-0.25j * np.pi)))
    (True, True)
    """
    f = np.asarray(frequencies, dtype=np.float64)[:, None]
    n = np.arange(first_step, first_step + height, dtype=np.float64)[None, :]
    out = np.empty((2, f.shape[0], height), dtype=np.complex128)
    for row, shift in enumerate((1.0, 0.5)):
        cycles = np.mod(f * ((n + shift) * dt), 1.0)
        out[row] = np.exp(-2j * np.pi * cycles) * dt
    return out
