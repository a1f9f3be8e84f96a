"""Controllers of a Maxwell run: the scene, the source, the CPML, NO, DTS, Nt, the backend, and the buttons.

Contract
--------
:class:`MaxwellConfig` is everything the controllers choose; its methods
turn it into the engine's objects (:mod:`diamondlab.maxwell`): one object
of the geometry helpers (:class:`~diamondlab.maxwell.Sphere`, ``Box``,
``Slab``, ``Cylinder``) with its medium (``Dielectric``, ``Drude``,
``PEC``), a source (a :class:`~diamondlab.maxwell.PlaneWave` whose
total-field box is the largest the engine allows,
:func:`~diamondlab.maxwell.tfsf.tfsf_bounds`, or a
:class:`~diamondlab.maxwell.Dipole`) of a Gaussian pulse of the chosen
wavelength and width, probes along the wave, and, for a plane wave, two
flux planes: the reflection in the scattered field before the box and the
transmission in the total field near its exit face.  :func:`plan_maxwell`
asks the engine's plan (:class:`~diamondlab.engine.equations.maxwell_plan.MaxwellPlan`,
the checks a simulation makes, no field allocated) and returns it, or the
engine's message (a ``str``) when the configuration cannot run;
:func:`build_maxwell` makes the simulation of that plan.  Nothing here
re-states an engine check: a bad setting shows the engine's own words.

:class:`MaxwellControls` holds the ipywidgets and shows the plan's message
after every change; nothing here raises into the notebook.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, fields

import numpy as np

from diamondlab.widgets.controls import Controls

__all__ = ["MEDIA", "SCENES", "SOURCES", "MaxwellConfig", "MaxwellControls", "build_maxwell", "plan_maxwell"]

#: The scene's object (one, or none).
SCENES = ("sphere", "box", "slab", "cylinder", "none")
#: Its medium.
MEDIA = ("drude", "dielectric", "pec")
#: The source.
SOURCES = ("plane wave", "dipole")
#: Frequencies of the flux planes.
SPECTRUM_POINTS = 33


@dataclass(frozen=True)
class MaxwellConfig:
    """Everything the Maxwell controllers choose (lengths in cells, Meep's units ``c = 1``).

    ``size``/``nt`` 0: the backend's default DTS/Nt.  ``center``/``position`` None: the grid's centre /
    a quarter along x.  ``radius``: a sphere's or cylinder's radius, a box's half side, a slab's half
    thickness.  ``axis``: a slab's normal, a cylinder's axis.  ``eps``: the dielectric's permittivity or
    the Drude metal's ``eps_inf``; ``wp``, ``gamma``: its angular plasma and collision frequencies.  The
    pulse: a :class:`~diamondlab.maxwell.GaussianPulse` of ``frequency = 1 / wavelength`` lasting
    ``periods`` periods (``width = periods * wavelength``).  ``periodic``: a plane wave along x in a cell
    periodic in y and z (the box spans them whole; the Fresnel setup of a slab).

    >>> cfg = MaxwellConfig(shape=(40, 24, 24), scene="slab", medium="dielectric", radius=2)
    >>> cfg.objects()[0]
    Slab(axis='x', lo=18.0, hi=22.0, medium=Dielectric(eps=2.25, mu=1.0, sigma=0.0))
    """

    shape: tuple = (48, 32, 32)
    order: int = 2
    size: int = 0
    nt: int = 0
    backend: str = "auto"
    algorithm: str = "diamondtorre"
    pml: int = 6
    scene: str = "sphere"
    center: tuple | None = None
    radius: float = 6.0
    axis: str = "x"
    medium: str = "drude"
    eps: float = 2.25
    wp: float = 1.0
    gamma: float = 0.02
    source: str = "plane wave"
    direction: str = "+x"
    polarization: str = "z"
    position: tuple | None = None
    component: str = "Ez"
    wavelength: float = 12.0
    periods: float = 1.0
    periodic: bool = False
    steps: int = 0

    def __post_init__(self):
        object.__setattr__(self, "shape", tuple(int(n) for n in self.shape))
        for name in ("center", "position"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, tuple(value))

    # ----------------------------------------------------------- the scene
    def material(self):
        """The object's medium."""
        from diamondlab.maxwell import PEC, Dielectric, Drude

        if self.medium == "pec":
            return PEC
        if self.medium == "drude":
            return Drude(eps_inf=self.eps, wp=self.wp, gamma=self.gamma)
        if self.medium == "dielectric":
            return Dielectric(eps=self.eps)
        raise ValueError(f"medium must be one of {MEDIA}; got {self.medium!r}")

    def objects(self) -> list:
        """The scene: ``[]`` or one object of the geometry helpers."""
        from diamondlab.maxwell import Box, Cylinder, Slab, Sphere

        if self.scene == "none":
            return []
        if self.scene not in SCENES:
            raise ValueError(f"scene must be one of {SCENES}; got {self.scene!r}")
        c = self.center if self.center is not None else tuple(n / 2 for n in self.shape)
        m, r = self.material(), self.radius
        if self.scene == "sphere":
            return [Sphere(c, r, m)]
        if self.scene == "cylinder":
            return [Cylinder(c, r, axis=self.axis, medium=m)]
        if self.scene == "box":
            return [Box(tuple(v - r for v in c), tuple(v + r for v in c), m)]
        a = "xyz".index(self.axis) if self.axis in ("x", "y", "z") else 0
        return [Slab(self.axis, c[a] - r, c[a] + r, m)]

    def waveform(self):
        """The pulse: a Gaussian of ``frequency = 1 / wavelength``, ``periods`` periods long."""
        from diamondlab.maxwell import GaussianPulse

        for name in ("wavelength", "periods"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and np.isfinite(value) and value > 0):
                unit = "cells" if name == "wavelength" else "periods"
                raise ValueError(f"{name} must be a number > 0 (the pulse's, in {unit}); got {value!r}")
        return GaussianPulse(frequency=1.0 / self.wavelength,
                             fwidth=1.0 / (2 * np.pi * self.periods * self.wavelength))

    @property
    def wave_axis(self) -> int:
        """The plane wave's axis (0, 1, 2)."""
        return "xyz".index(self.direction[-1]) if self.direction[-1:] in ("x", "y", "z") else 0

    def periodic_axes(self) -> str:
        """The periodic axes: the two across a plane wave when ``periodic``, else none."""
        if not (self.periodic and self.source == "plane wave"):
            return ""
        return "".join(a for i, a in enumerate("xyz") if i != self.wave_axis)

    def pml_option(self):
        """The run's ``pml``: the width on every face, or only on the wave's axis in a periodic cell."""
        from diamondlab.maxwell import CPML

        if self.periodic_axes() and self.pml:
            return CPML(self.pml, axes="xyz"[self.wave_axis])
        return self.pml

    def tf_box(self, reach: int) -> tuple:
        """The plane wave's total-field box: the largest the engine allows
        (:func:`~diamondlab.maxwell.tfsf.tfsf_bounds`), whole along a periodic axis."""
        from diamondlab.maxwell.tfsf import tfsf_bounds

        periodic = self.periodic_axes()
        widths = tuple(0 if a in periodic else self.pml for a in "xyz")
        bounds = tfsf_bounds(self.shape, reach, widths)
        lo = tuple(0 if a in periodic else b[0] for a, b in zip("xyz", bounds, strict=True))
        hi = tuple(n - 1 if a in periodic else b[1]
                   for a, n, b in zip("xyz", self.shape, bounds, strict=True))
        return lo, hi

    def sources(self, reach: int) -> list:
        """The source (``reach``: the scheme's, 1 at order 2 and 2 at order 4)."""
        from diamondlab.maxwell import Dipole, PlaneWave

        if self.source == "plane wave":
            return [PlaneWave(self.direction, self.polarization, self.waveform(), box=self.tf_box(reach))]
        if self.source == "dipole":
            pos = self.position if self.position is not None else (self.shape[0] // 4, *(n // 2 for n in
                                                                                         self.shape[1:]))
            return [Dipole(pos, self.component, self.waveform())]
        raise ValueError(f"source must be one of {SOURCES}; got {self.source!r}")

    def probes(self, reach: int) -> list:
        """Probes of the source's ``E`` component: before, at and behind the scene's centre along the wave
        (a dipole: at it and at the centre)."""
        from diamondlab.maxwell import Probe

        centre = [n // 2 for n in self.shape]
        if self.source == "dipole":
            (src,) = self.sources(reach)
            return [Probe(src.position, self.component), Probe(tuple(centre), self.component)]
        lo, hi = self.tf_box(reach)
        a = self.wave_axis
        comp = "E" + self.polarization
        cells = []
        for v in (lo[a] + 1, centre[a], hi[a] - 1):
            cell = list(centre)
            cell[a] = v
            cells.append(tuple(cell))
        if self.direction[0] == "-":
            cells.reverse()
        return [Probe(c, comp) for c in cells]

    def frequencies(self) -> np.ndarray:
        """The spectrum's frequencies: the pulse's band ``f0 -+ 2 fwidth`` (above 0)."""
        w = self.waveform()
        lo = max(w.frequency - 2 * w.fwidth, 0.1 * w.frequency)
        return np.linspace(lo, w.frequency + 2 * w.fwidth, SPECTRUM_POINTS)

    def monitors(self, reach: int) -> list:
        """A plane wave's flux planes: ``[reflection, transmission]`` (none for a dipole).

        The reflection plane lies in the scattered field one cell before the box's entry face, its normal
        back toward the source; the transmission plane in the total field one cell before the exit face.
        Both cover the box's faces across the wave.
        """
        from diamondlab.maxwell import FluxPlane

        if self.source != "plane wave":
            return []
        lo, hi = self.tf_box(reach)
        a, sign = self.wave_axis, (1 if self.direction[0] == "+" else -1)
        region = tuple((lo[i], hi[i]) for i in range(3) if i != a)
        entry, exit_ = (lo[a], hi[a]) if sign > 0 else (hi[a], lo[a])
        f = self.frequencies()
        return [FluxPlane("xyz"[a], entry - sign, f, region=region, direction=-sign),
                FluxPlane("xyz"[a], exit_ - sign, f, region=region, direction=sign)]

    def sim_kwargs(self) -> dict:
        """Keyword arguments of ``Simulation(..., equation="maxwell")``."""
        from diamondlab.numerics import validate_shape

        validate_shape(self.shape)  # the engine's message first: the objects below are placed on the grid
        reach = self.order // 2 if self.order in (2, 4) else 1
        return dict(shape=self.shape, order=self.order, size=self.size or None, nt=self.nt or None,
                    backend=self.backend, algorithm=self.algorithm, materials=self.objects(),
                    sources=self.sources(reach), probes=self.probes(reach), pml=self.pml_option(),
                    periodic=self.periodic_axes(), monitors=self.monitors(reach))


def plan_maxwell(cfg: MaxwellConfig, notes: list | None = None):
    """The engine's :class:`~diamondlab.engine.equations.maxwell_plan.MaxwellPlan` of ``cfg``, or the message
    saying why it cannot run (a ``str``: the engine's); warnings of the checks go to ``notes``.

    >>> plan_maxwell(MaxwellConfig(shape=(24, 20, 20), pml=4, backend="cpu", source="dipole",
    ...                            position=(2, 10, 10)))
    'sources[0] at (2, 10, 10) lies in the CPML (pml=4 cells on every face): move it inside'
    >>> plan_maxwell(MaxwellConfig(shape=(24, 20, 20), pml=4, backend="cpu", radius=3)).physics.summary()
    '1 object, CPML 4, 1 plane waves, 3 probes, 2 monitors'
    """
    from diamondlab.engine.equations.maxwell_plan import MaxwellPlan

    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            plan = MaxwellPlan.build(**cfg.sim_kwargs())
    except (ValueError, TypeError, RuntimeError, MemoryError) as err:
        return str(err)
    if notes is not None:
        notes.extend(str(w.message) for w in caught)
    return plan


def build_maxwell(cfg: MaxwellConfig, plan=None):
    """The simulation of ``cfg`` (``plan``: its plan from :func:`plan_maxwell`, then not checked again)."""
    from diamondlab.engine.equations.maxwell_simulation import MaxwellSimulation

    if plan is None:
        plan = plan_maxwell(cfg)
        if isinstance(plan, str):
            raise ValueError(plan)
    return MaxwellSimulation.from_plan(plan, initial="zero")


def _backends() -> list[str]:
    from diamondlab.engine.equations.maxwell_plan import MAXWELL_BACKENDS

    return ["auto", *MAXWELL_BACKENDS]


def _triple(value) -> str:
    return "" if value is None else ", ".join(f"{v:g}" for v in value)


class MaxwellControls:
    """The controllers; ``widget`` is the panel.  :meth:`config` reads them, :meth:`set` sets them by the
    names of :class:`MaxwellConfig`, :meth:`validate` shows the plan's message."""

    def __init__(self, config: MaxwellConfig | None = None):
        import ipywidgets as widgets

        cfg = config or MaxwellConfig()
        style = {"description_width": "110px"}
        lay = widgets.Layout(width="300px")

        def drop(options, value, description, **kw):
            return widgets.Dropdown(options=list(options), value=value, description=description, style=style,
                                    layout=lay, **kw)

        def number(value, description, kind=widgets.FloatText, **kw):
            return kind(value=value, description=description, style=style, layout=lay, **kw)

        def text(value, description, placeholder):
            return widgets.Text(value=_triple(value), description=description, placeholder=placeholder,
                                style=style, layout=lay)

        self.nx, self.ny, self.nz = (number(int(n), f"n{a}", widgets.IntText)
                                     for a, n in zip("xyz", cfg.shape, strict=True))
        self.order = drop((2, 4), cfg.order, "NO (order)")
        self.size = number(cfg.size, "DTS (0: default)", widgets.IntText)
        self.nt = number(cfg.nt, "Nt (0: default)", widgets.IntText)
        self.backend = drop(_backends(), cfg.backend, "backend")
        self.algorithm = drop(("diamondtorre", "stepwise", "auto"), cfg.algorithm, "algorithm")
        self.pml = number(cfg.pml, "CPML width", widgets.IntText)
        self.steps = number(cfg.steps, "steps (0 = ∞)", widgets.IntText)
        self.scene = drop(SCENES, cfg.scene, "object")
        self.center = text(cfg.center, "centre", "x, y, z (empty: the grid's centre)")
        self.radius = number(cfg.radius, "radius / half side")
        self.axis = drop("xyz", cfg.axis, "axis (slab, cyl.)")
        self.medium = drop(MEDIA, cfg.medium, "medium")
        self.eps = number(cfg.eps, "ε (Drude: ε∞)")
        self.wp = number(cfg.wp, "Drude ωp")
        self.gamma = number(cfg.gamma, "Drude γ")
        self.source = drop(SOURCES, cfg.source, "source")
        self.direction = drop(("+x", "-x", "+y", "-y", "+z", "-z"), cfg.direction, "direction")
        self.polarization = drop("xyz", cfg.polarization, "E along")
        self.position = text(cfg.position, "dipole at", "x, y, z (empty: a quarter along x)")
        self.component = drop(("Ex", "Ey", "Ez"), cfg.component, "dipole J along")
        self.wavelength = number(cfg.wavelength, "wavelength (cells)")
        self.periods = number(cfg.periods, "pulse (periods)")
        self.periodic = widgets.Checkbox(value=cfg.periodic, description="periodic across the wave",
                                         indent=False, tooltip="a plane wave along x in a cell periodic in y "
                                                               "and z: the Fresnel setup of a slab")
        self.run_button = widgets.Button(description="Run", icon="play", button_style="success")
        self.pause_button = widgets.Button(description="Pause", icon="pause", button_style="warning")
        self.step_button = widgets.Button(description="Step", icon="step-forward",
                                          tooltip="one sweep (Nt steps)")
        self.reset_button = widgets.Button(description="Reset", icon="undo", tooltip="back to n = 0")
        self.message = widgets.HTML()
        self.message.add_class("diamondlab-message")
        self.status = widgets.HTML(value="idle")
        self.status.add_class("diamondlab-status")
        self._structural = [self.nx, self.ny, self.nz, self.order, self.size, self.nt, self.backend,
                            self.algorithm, self.pml, self.scene, self.center, self.radius, self.axis,
                            self.medium, self.eps, self.wp, self.gamma, self.source, self.direction,
                            self.polarization, self.position, self.component, self.wavelength, self.periods,
                            self.periodic]
        for w in self._structural:
            w.observe(self._changed, names="value")
        self._listeners: list = []
        self._held = False
        self.runnable = False
        box = widgets.VBox
        run = box([widgets.HTML("<b>run</b>"), self.order, self.size, self.nt, self.backend, self.algorithm,
                   self.pml, self.steps])
        grid = box([widgets.HTML("<b>grid</b>"), self.nx, self.ny, self.nz])
        scene = box([widgets.HTML("<b>scene</b>"), self.scene, self.center, self.radius, self.axis,
                     self.medium, self.eps, self.wp, self.gamma])
        source = box([widgets.HTML("<b>source</b>"), self.source, self.direction, self.polarization,
                      self.periodic, self.position, self.component, self.wavelength, self.periods])
        buttons = widgets.HBox([self.run_button, self.pause_button, self.step_button, self.reset_button])
        self.widget = box([widgets.HBox([scene, source, box([grid, run])]), buttons, self.status,
                           self.message])
        self.widget.add_class("diamondlab-maxwell-controls")
        self.validate()

    # ------------------------------------------------------------- values
    def config(self) -> MaxwellConfig:
        """The configuration the controllers show now (a field that does not parse is left as typed:
        the plan then names it)."""
        def triple(w):
            s = w.value.strip()
            if not s:
                return None
            try:
                return tuple(float(v) for v in s.replace(";", ",").split(","))
            except ValueError:
                return s  # the engine's check names it
        position = triple(self.position)
        if isinstance(position, tuple):
            position = tuple(int(v) if float(v).is_integer() else v for v in position)
        return MaxwellConfig(
            shape=(int(self.nx.value), int(self.ny.value), int(self.nz.value)), order=int(self.order.value),
            size=int(self.size.value), nt=int(self.nt.value), backend=self.backend.value,
            algorithm=self.algorithm.value, pml=int(self.pml.value), scene=self.scene.value,
            center=triple(self.center), radius=float(self.radius.value), axis=self.axis.value,
            medium=self.medium.value, eps=float(self.eps.value), wp=float(self.wp.value),
            gamma=float(self.gamma.value), source=self.source.value, direction=self.direction.value,
            polarization=self.polarization.value, position=position, component=self.component.value,
            wavelength=float(self.wavelength.value), periods=float(self.periods.value),
            periodic=bool(self.periodic.value), steps=int(self.steps.value))

    def set(self, **values) -> None:
        """Set controllers by the names of :class:`MaxwellConfig` (one validation at the end)."""
        names = {f.name for f in fields(MaxwellConfig)}
        unknown = sorted(set(values) - names)
        if unknown:
            raise ValueError(f"unknown controllers {unknown}; the names are those of MaxwellConfig: "
                             f"{sorted(names)}")
        with self.hold():
            for name, value in values.items():
                if name == "shape":
                    self.nx.value, self.ny.value, self.nz.value = (int(n) for n in value)
                elif name in ("center", "position"):
                    getattr(self, name).value = _triple(value)
                else:
                    getattr(self, name).value = value

    # one validation for several changes, the listeners, the message area: as the acoustic controllers
    hold, on_change, _changed, show_message = Controls.hold, Controls.on_change, Controls._changed, \
        Controls.show_message

    def plan(self, notes: list | None = None):
        """:func:`plan_maxwell` of the controllers' configuration."""
        try:
            cfg = self.config()
        except (TypeError, ValueError) as err:
            return str(err)
        return plan_maxwell(cfg, notes)

    def validate(self):
        """Check the configuration; show the engine's message (or "ready"); return the plan or the message."""
        notes: list[str] = []
        plan = self.plan(notes)
        if isinstance(plan, str):
            self.show_message(plan)
        elif notes:
            self.show_message("\n".join(notes), "info")
        else:
            self.show_message(f"ready: {plan.physics.summary()}", "ok")
        self.runnable = not isinstance(plan, str)
        self.run_button.disabled = self.step_button.disabled = not self.runnable
        return plan

    def lock(self, running: bool) -> None:
        """Disable the structural controllers while a run is in progress."""
        for w in self._structural:
            w.disabled = running
        self.run_button.disabled = self.step_button.disabled = running or not self.runnable
