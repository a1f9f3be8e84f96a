"""The run plan of a Maxwell run: the scene, sources, probes, monitors and CPML, checked before allocation.

Contract
--------
:meth:`MaxwellPlan.build` is :meth:`~diamondlab.engine.run.plan.RunPlan.build`
for the Maxwell equation: it normalises and checks, without allocating a
field, the algorithm, the shape, DTS and Nt (Nt counts steps; a sweep is
``2 Nt`` half-step tiers), the scheme (:class:`~diamondlab.maxwell.scheme.YeeParameters`:
order 2 or 4, the Courant limit of the order), the periodic axes, the CPML
width (both layers of an axis fit in it, with a cell between them), the materials' types, the
dipoles and probes (inside the grid; dipoles outside the CPML), the
frequencies the sources carry (at least 2 cells a wavelength), the monitors
(:func:`~diamondlab.maxwell.monitors.monitor_layout`: on the grid, their
frequencies up to the same Nyquist limit), and the backend and host memory
(the monitors' DFT sums and a sweep of their points' values included).
The :class:`MaxwellPhysics` it holds gives the run loop of
:class:`~diamondlab.engine.run.simulation.Simulation` what it needs (source
samples, traces, quiet sources).  Every failure is a
``ValueError``/``TypeError`` naming the parameter.

Boundaries: every face is a perfect conductor unless ``pml`` puts a CPML
inside it or ``periodic`` makes its axis periodic.  ``periodic`` names the
periodic axes, ``"y"``, ``"z"`` or ``("y", "z")`` (``"yz"``; as Meep's
periodic cell, no Bloch phase); ``pml=W`` (or ``CPML(W)``) puts layers on
every axis that is not periodic, ``CPML(W, axes="x")`` on the named ones
only (naming a periodic axis is refused).  The usual slab cell is
``periodic="yz", pml=CPML(12, axes="x")`` (or just ``pml=12``).  x cannot
be periodic: DiamondTorre sweeps its stages from +x to -x in one pass, and a
wrap in x would make the last (leftmost) torres feed the first (rightmost)
ones of the same sweep.  A periodic y under DiamondTorre needs ``ny`` a
multiple of the tile's period ``2R`` (``R = DTS * order / 2``): with DTS not
given the largest default DTS that fits is taken, and ``algorithm="auto"``
runs stepwise (with a warning) where none does; a DTS given that does not fit
is refused.  Objects wrap across a
periodic face (:func:`~diamondlab.maxwell.materials.periodic_images`); a
plane wave's box spans a periodic axis whole (:mod:`diamondlab.maxwell.tfsf`).
"""

from __future__ import annotations

import functools
import importlib
import warnings
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import NamedTuple

import numpy as np

from diamondlab.engine.measure.memory import check_host_memory
from diamondlab.engine.run.plan import (
    ALGORITHM_CHOICES,
    PlanCore,
    check_scale,
    check_window,
    claim_ranks,
    device_shape_of,
)
from diamondlab.engine.scale.window import streamed_backend
from diamondlab.maxwell.boundaries import CPML
from diamondlab.maxwell.materials import has_drude, material_table, periodic_images, source_coefficient
from diamondlab.maxwell.monitors import MONITORS, monitor_layout
from diamondlab.maxwell.scheme import YeeParameters
from diamondlab.maxwell.sources import COMPONENTS, Dipole, PlaneWave, Probe
from diamondlab.maxwell.tfsf import TFSF
from diamondlab.numerics import validate_shape

__all__ = ["MAXWELL_BACKENDS", "MaxwellPhysics", "MaxwellPlan", "SourcePoint", "SourceRows", "periodic_axes"]

#: Backends that run the Maxwell equation, by name.
MAXWELL_BACKENDS = {
    "cpu": "diamondlab.engine.backends.yee_cpu:YeeCPUBackend",
    "cuda": "diamondlab.engine.backends.yee_cuda:YeeCUDABackend",
}


def _listed(items, name: str, kind) -> tuple:
    if items is None:
        return ()
    if isinstance(items, kind):
        items = (items,)
    items = tuple(items)
    kinds = kind if isinstance(kind, tuple) else (kind,)
    for i, item in enumerate(items):
        if not isinstance(item, kind):
            raise TypeError(f"{name}[{i}] must be a {' or '.join(k.__name__ for k in kinds)}; got "
                            f"{type(item).__name__}")
    return items


class SourcePoint(NamedTuple):
    """A component of a cell that adds ``samples[row, step]`` after its half step (a dipole, or a TFSF
    correction on an ``E`` or ``H`` component)."""

    position: tuple
    component: str
    row: int


@dataclass(frozen=True)
class SourceRows:
    """The source points of a run and, per row of samples, the index of the source it belongs to."""

    points: tuple
    owner: np.ndarray


class MaxwellPhysics:
    """The scene, dipoles, probes and CPML of a Maxwell run (checked; see the module contract)."""

    def __init__(self, shape, params: YeeParameters, materials=(), sources=(), probes=(), pml=0,
                 periodic="", monitors=(), eps_averaging: bool = True):
        if not isinstance(eps_averaging, (bool, np.bool_)):
            raise ValueError(f"eps_averaging must be True or False (the subpixel averaging of dielectric "
                             f"interfaces); got {eps_averaging!r}")
        self.eps_averaging = bool(eps_averaging)
        self.shape = shape
        self.periodic = periodic = periodic_axes(periodic)
        self.materials = tuple(materials or ())
        self.sources = _listed(sources, "sources", (Dipole, PlaneWave))
        self.receivers = _listed(probes, "probes", Probe)
        self.pml = pml if isinstance(pml, CPML) else CPML(pml)
        self.pml_widths = widths = self.pml.axis_widths(periodic)
        if any(2 * w >= n for w, n in zip(widths, shape, strict=True) if w):
            raise ValueError(f"pml must leave at least one cell between the layers of every axis: width "
                             f"{self.pml.width} on a grid of {shape} (at most "
                             f"{(min(n for w, n in zip(widths, shape, strict=True) if w) - 1) // 2})")
        self.scene = periodic_images(self.materials, shape, periodic)  # the objects as rasterised
        for what, points in (("sources", self.sources), ("probes", self.receivers)):
            for i, p in enumerate(points):
                if isinstance(p, PlaneWave):
                    continue
                if any(not 0 <= c < n for c, n in zip(p.position, shape, strict=True)):
                    raise ValueError(f"{what}[{i}] at {p.position} lies outside the grid {shape}")
        dipoles = [(i, d) for i, d in enumerate(self.sources) if isinstance(d, Dipole)]
        for i, d in dipoles:
            walls = [(c, n) for c, n, a in zip(d.position, shape, "xyz", strict=True) if a not in periodic]
            if any(c in (0, n - 1) for c, n in walls):
                raise ValueError(f"sources[{i}] at {d.position} lies on the grid's outer plane (a perfect "
                                 "conductor): move it inside")
            if any(c < w or c >= n - w for c, n, w in zip(d.position, shape, widths, strict=True)):
                axes = "".join(a for a, w in zip("xyz", widths, strict=True) if w)
                where = "on every face" if axes == "xyz" else f"on the faces of {axes}"
                raise ValueError(f"sources[{i}] at {d.position} lies in the CPML (pml={self.pml.width} cells "
                                 f"{where}): move it inside")
        for i, d in enumerate(self.sources):
            top = d.waveform.max_frequency
            if top * params.spacing > 0.5:
                raise ValueError(f"sources[{i}]: its waveform reaches frequency {top:g}, above the grid's "
                                 f"Nyquist limit {0.5 / params.spacing:g} (2 cells a wavelength); lower it")
        self.monitors = _listed(monitors, "monitors", MONITORS)
        # the monitors' planes on the grid, their frequencies up to the Nyquist limit (the sources' rule)
        self.monitor_layout = monitor_layout(self.monitors, shape, params.spacing)
        self.params = params
        self.drude = has_drude(self.materials)
        # what a dipole's unit current adds to its E component in a step: -cb of its cell
        self.dipole_factors = {i: -source_coefficient(self.scene, COMPONENTS.index(d.component),
                                                      d.position, params.dt, self.eps_averaging)
                               for i, d in dipoles}
        # the plane waves' corrections (checked: the box on the grid, off the CPML, in one medium)
        self.tfsf = {i: TFSF(d, shape, params, self.scene, widths, name=f"sources[{i}]", periodic=periodic)
                     for i, d in enumerate(self.sources) if isinstance(d, PlaneWave)}
        points, owner, self._rows = [], [], {}
        for i, d in enumerate(self.sources):
            first = len(owner)
            if isinstance(d, Dipole):
                points.append(SourcePoint(d.position, d.component, first))
                owner.append(i)
            else:
                t = self.tfsf[i]
                points += [SourcePoint(cell, COMPONENTS[comp], first + row) for cell, comp, row in t.points]
                owner += [i] * t.nrows
            self._rows[i] = (first, len(owner))
        self.source_points = SourceRows(tuple(points), np.array(owner, dtype=np.int64))

    # what the run loop of Simulation reads
    @property
    def has_points(self) -> bool:
        return bool(self.sources or self.receivers)

    @property
    def needs_backend(self) -> bool:
        return True

    def source_samples(self, first_step: int, height: int, dt: float) -> np.ndarray:
        """Float32 ``(nrows, height)``: what each row of source points adds at the steps ``first_step ..``:
        a dipole ``-cb`` of its cell times its current at the half steps, a plane wave's rows its TFSF
        corrections (:class:`~diamondlab.maxwell.tfsf.TFSF`)."""
        out = np.zeros((max(len(self.source_points.owner), 1), height), dtype=np.float32)
        steps = np.arange(first_step, first_step + height)
        for i, d in enumerate(self.sources):
            first, last = self._rows[i]
            if isinstance(d, Dipole):
                out[first] = (self.dipole_factors[i] * d.current(steps, dt)).astype(np.float32)
            else:
                out[first:last] = self.tfsf[i].samples(first_step, height).astype(np.float32)
        return out

    def quiet_sources(self, first_step: int, steps: int, dt: float) -> list[str]:
        """A dipole whose waveform is delayed past the run's end adds nothing visible."""
        end = (first_step + steps) * dt
        return [f"sources[{i}]: its waveform is delayed to t={d.waveform.delay:g}, after the run ends at "
                f"t={end:g}: run at least {int(np.ceil(d.waveform.delay / dt)) - first_step} steps"
                for i, d in enumerate(self.sources) if d.waveform.delay > end]

    def traces(self, values: np.ndarray) -> np.ndarray:
        return values

    def summary(self) -> str:
        parts = [f"{len(self.materials)} object{'s' if len(self.materials) != 1 else ''}"]
        if any(self.pml_widths):
            parts.append(f"CPML {self.pml.width}" + (f" on {self.pml.axes}" if self.pml.axes else ""))
        if self.periodic:
            parts.append(f"periodic {self.periodic}")
        dipoles = [d for d in self.sources if isinstance(d, Dipole)]
        waves = [d for d in self.sources if isinstance(d, PlaneWave)]
        parts += [f"{len(p)} {n}" for n, p in (("dipoles", dipoles), ("plane waves", waves),
                                                ("probes", self.receivers), ("monitors", self.monitors)) if p]
        return ", ".join(parts)


def periodic_axes(periodic) -> str:
    """The periodic axes as a string (``""``, ``"y"``, ``"z"``, ``"yz"``) from ``"yz"``, ``("y", "z")``, None.

    >>> periodic_axes(("z", "y")), periodic_axes(None)
    ('yz', '')
    >>> periodic_axes("x")
    Traceback (most recent call last):
    ...
    ValueError: periodic: x cannot be periodic: DiamondTorre sweeps its stages from +x to -x in one pass, ...
    """
    if periodic is None:
        return ""
    items = list(periodic) if isinstance(periodic, str) else periodic
    try:
        items = [str(a) for a in items] if all(isinstance(a, str) for a in items) else None
    except TypeError:
        items = None
    if items is None or any(a not in "xyz" or len(a) != 1 for a in items) or len(set(items)) != len(items):
        raise ValueError(f"periodic must name axes among 'y' and 'z' once each (e.g. 'yz' or ('y', 'z')); "
                         f"got {periodic!r}")
    if "x" in items:
        raise ValueError("periodic: x cannot be periodic: DiamondTorre sweeps its stages from +x to -x in "
                         "one pass, and a wrap in x would make the leftmost torres depend on the rightmost "
                         "ones of the same sweep; make y and/or z periodic (a slab's normal along x)")
    return "".join(a for a in "yz" if a in items)


def _periodic_size(order: int, ny: int, asked, default: int) -> tuple[int, str]:
    """DTS under a periodic y: ``asked`` if ``2R`` divides ``ny``, else the largest DTS up to ``default``
    that does (when DTS was not given); with what is wrong where none fits (``""`` if fine)."""
    shs = order // 2
    rule = f"periodic y under DiamondTorre needs ny a multiple of 2R = {order} * DTS (the tiles' period in y)"
    if asked is not None:
        if ny % (2 * shs * asked):
            return asked, f"{rule}: 2R = {2 * shs * asked} for DTS={asked}, got ny={ny}; pick a DTS with " \
                          f"{2 * shs} * DTS dividing ny, or change ny"
        return asked, ""
    for s in range(default, 0, -1):
        if ny % (2 * shs * s) == 0:
            return s, ""
    return default, f"{rule}: ny={ny} is not a multiple of {2 * shs} (DTS=1)"


#: Why ``algorithm="auto"`` runs DiamondTorre through a calculation window where the backend would run the
#: scene stepwise in memory: the device streams only DiamondTorre sweeps; stepwise goes window by window
WINDOW_AUTO = ("DiamondTorre: through a calculation window the GPU streams DiamondTorre sweeps, while "
               "stepwise goes window by window (0.03x the in-memory rate measured, BENCHMARKS.md)")


def _backend_class(name: str):
    module, cls = MAXWELL_BACKENDS[name].split(":")
    return getattr(importlib.import_module(module), cls)


def _state_bytes(shape, physics: MaxwellPhysics, nt: int = 64) -> int:
    """Bytes a run holds on the host: E, H (padded), the Drude current where a Drude medium may be, the
    material index (3 bytes a cell), the CPML's psi, and the monitors' DFT sums (16 bytes a point and
    frequency) with their points' values of a sweep of ``nt`` steps (4 bytes a point and step; 64: above
    every backend's default height)."""
    lay = physics.monitor_layout
    monitors = lay.accumulator_bytes() + 4 * nt * lay.npoints
    reach = physics.params.reach
    cells = int(np.prod([n + 2 * reach for n in shape], dtype=np.int64))
    drude = physics.drude
    wx, wy, wz = physics.pml_widths
    nx, ny, nz = shape
    psi = 16 * 2 * (wx * ny * nz + wy * nx * nz + wz * nx * ny)
    return cells * 12 * (2 + drude) + 3 * nx * ny * nz + psi + monitors


@dataclass(frozen=True)
class MaxwellPlan(PlanCore):
    """A validated Maxwell run; build it with :meth:`build`.

    >>> plan = MaxwellPlan.build((24, 512, 16), 4, pml=4, backend="cpu")  # up to 32 threads: DTS 4
    >>> plan.equation, plan.backend, plan.algorithm, plan.size, plan.nt, plan.params.reach
    ('maxwell', 'cpu', 'diamondtorre', 4, 16, 2)
    """

    equation = "maxwell"

    @property
    def host_bytes(self) -> int:
        """Bytes the run's state holds on the host (E, H, Drude currents, material index, CPML psi, the
        monitors' DFT sums and a sweep of their points' values)."""
        return _state_bytes(self.shape, self.physics, self.nt)

    @property
    def backend_class(self):
        return _backend_class(self.backend)

    @functools.cached_property
    def table(self):
        """The scene rasterised on the whole grid (:func:`~diamondlab.maxwell.materials.material_table`,
        the grid's faces PEC): what the backend, each window and each MPI rank run (cut to their rows)."""
        periodic = self.physics.periodic
        walls = "".join(a for a in "xyz" if a not in periodic)
        return material_table(periodic_images(self.physics.materials, self.shape, periodic), self.shape,
                              self.params.dt, pec_faces=walls, eps_averaging=self.physics.eps_averaging)

    def make_backend(self):
        """Allocate the fields (through a calculation window, or this MPI rank's slab, as
        :meth:`~diamondlab.engine.run.plan.PlanCore.assemble_backend` builds it) and hand the backend the
        scene, the dipoles, the probes, the CPML and the monitors."""
        backend = self.assemble_backend()
        ph = self.physics
        backend.set_physics(self.table, ph.source_points.points, ph.receivers, ph.pml, ph.periodic,
                            ph.monitor_layout)
        return backend

    @classmethod
    def build(cls, shape=(64, 64, 64), order: int = 2, *, size=None, nt=None, courant=None, dt=None,
              spacing: float = 1.0, backend: str = "auto", algorithm: str = "auto", materials=(),
              sources=(), probes=(), pml=0, periodic="", monitors=(), eps_averaging: bool = True,
              backend_options=None, comm=None, window=None, window_dir=None,
              halo: str = "auto") -> MaxwellPlan:
        """Normalise and check a Maxwell run (see the module contract); ``comm``, ``window``, ``window_dir``
        and ``halo`` as for the acoustic :class:`~diamondlab.engine.run.plan.RunPlan` (MPI ranks split x)."""
        if algorithm not in ALGORITHM_CHOICES:
            raise ValueError(f"algorithm must be one of {ALGORITHM_CHOICES}; got {algorithm!r}")
        shape = validate_shape(shape)
        for name, value in (("size (DTS)", size), ("nt (Nt, torre height in steps)", nt)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, np.integer))
                                      or value < 1):
                raise ValueError(f"{name} must be an int >= 1 (default: the backend's); got {value!r}")
        params = YeeParameters(order=order, courant=courant, dt=dt, spacing=spacing)
        physics = MaxwellPhysics(shape, params, materials, sources, probes, pml, periodic, monitors,
                                 eps_averaging)
        if backend != "auto" and backend not in MAXWELL_BACKENDS:
            raise ValueError(f"backend must be one of {('auto', *MAXWELL_BACKENDS)} for the Maxwell "
                             f"equation; got {backend!r}")
        name = backend
        if backend == "auto":
            name = "cuda" if _backend_class("cuda").available() else "cpu"
        elif not _backend_class(name).available():
            reason = _backend_class(name).unavailable_reason()
            raise RuntimeError(f"backend {name!r} cannot run here: {reason}")
        if backend_options:
            raise ValueError(f"backend_options {sorted(backend_options)} do not apply to the Maxwell "
                             f"backend {name!r} (it takes: none)")
        ranks, window, window_dir = check_scale(shape, comm, window, window_dir, halo,
                                                _state_bytes(shape, physics, 64 if nt is None else nt))
        claim_ranks(_backend_class(name), comm, halo)
        if window_dir is None:
            check_host_memory(shape, _state_bytes(shape, physics, 64 if nt is None else nt))
        scale = {"comm": comm, "window": window, "window_dir": window_dir, "halo": halo}
        try:
            plan = cls._tiled(name, shape, params, algorithm, physics, size, nt, scale)
        except ValueError as err:
            if backend != "auto" or name == "cpu" or ranks > 1:
                raise
            # "auto" picked the GPU, which cannot run this problem (a column over a block, no memory left)
            warnings.warn(f"backend 'auto': the GPU cannot run this ({err}); using the CPU", stacklevel=4)
            plan = cls._tiled("cpu", shape, params, algorithm, physics, size, nt, scale)
        return plan

    @classmethod
    def _tiled(cls, name: str, shape, params: YeeParameters, algorithm, physics, size, nt,
               scale: dict) -> MaxwellPlan:
        """The plan on backend ``name``: the algorithm (``"auto"``: the backend's), DTS and Nt (its defaults
        where not given: DTS fitted to what one device holds), checked by the backend on the device's
        shape, the window's ghost rows, every rank's slab."""
        bclass = _backend_class(name)
        asked, given, reason = algorithm, size, "asked for"
        if algorithm == "auto":
            algorithm, reason = bclass.auto(physics)
            if algorithm == "stepwise" and scale["window"] is not None and streamed_backend(bclass, physics):
                algorithm, reason = "diamondtorre", WINDOW_AUTO
            if algorithm == "stepwise":
                warnings.warn(f"algorithm 'auto' runs stepwise: {reason}", stacklevel=4)
        ranks = 1 if scale["comm"] is None else scale["comm"].size
        held = device_shape_of(shape, params.order, 0, ranks, 0, scale["window"], False, bclass.PARTS)
        default_size, default_nt = bclass.default_tiling(params.order, held)
        size = max(1, min(default_size, min(held[:2]) // params.order)) if size is None else int(size)
        nt_given = nt is not None
        nt = default_nt if nt is None else int(nt)
        if "y" in physics.periodic and algorithm == "diamondtorre":
            size, problem = _periodic_size(params.order, shape[1], given, size)
            if problem and asked == "auto" and given is None:
                warnings.warn(f"algorithm 'auto': {problem}; running stepwise", stacklevel=4)
                algorithm, reason = "stepwise", problem
            elif problem:
                raise ValueError(f"{problem}; or algorithm='stepwise'")
        plan = cls(shape, params, algorithm, name, size, nt, MappingProxyType({}), physics, reason, **scale)
        if plan.streamed is not None:  # streamed through a ring on the device, a taller sweep by default
            if not nt_given:
                nt = plan.streamed.window_nt(params, shape, size, nt, scale["window"], {})
                plan = replace(plan, nt=nt)
            plan.streamed.check_window(params, shape, size, nt, scale["window"], {})
        elif scale["window"] is not None:  # window by window
            check_window(bclass, params, shape, nt, scale["window"])
        if ranks > 1:
            plan.check_slabs()
        else:
            bclass.check(params, plan.device_shape, size, nt, {})
            if scale["window"] is None:  # the whole state on the device (a window holds its rows only)
                bclass.check_state_bytes(shape, _state_bytes(shape, physics, nt),
                                         "the fields, the CPML's psi and the monitors' sums")
        return plan
