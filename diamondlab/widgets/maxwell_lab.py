"""The Maxwell lab: a photonics scene on the Yee grid, run by DiamondTorre, with live fields and spectra.

Contract
--------
``MaxwellLab(...)``, or the lab's one entry point
``Lab(equation="maxwell", ...)`` (:class:`~diamondlab.widgets.lab.Lab`),
with keyword arguments the fields of
:class:`~diamondlab.widgets.maxwell_controls.MaxwellConfig`, builds the
controllers (:class:`~diamondlab.widgets.maxwell_controls.MaxwellControls`:
the scene's object and medium, the source, the CPML, NO, DTS, Nt, the
backend), a :class:`~diamondlab.widgets.runner.BackgroundRun` of the
configured simulation and a :class:`MaxwellView`; ``lab.widget`` (or
displaying ``lab``) shows them as tabs (:data:`TABS`, ``panels`` picks some):
*Run* (the controllers and the view), and paper 002's geometry drawn from
the engine's own (:mod:`diamondlab.geometry` through :mod:`diamondlab.viz`,
for the DTS and Nt the engine's plan runs, :func:`engine_tiling`):
*Shapes* (the staggered torre from its conoids, locality and asynchrony
next to the acoustic scheme's: :class:`~diamondlab.widgets.lrnla.ShapesPanel`),
*Stages* (the Yee sweep, half step by half step:
:class:`~diamondlab.widgets.lrnla.StageExplorer`), *Yee* (the Yee cell and
a torre of H and E tiles with what each reads:
:class:`~diamondlab.widgets.lrnla.YeePanel`) and *Tuning* (the rate per
DTS and Nt: :class:`~diamondlab.widgets.tuning.TuningPanel`), each opening
with what it shows of paper 002 (:func:`tab_note`).  The geometry tabs
follow the controllers (a configuration the engine refuses leaves them and
says why).  An option the Maxwell lab does not take (:data:`OPTIONS`: the
acoustic lab's ``courant``, ``sponge``, a ``"Snapshot"`` tab, or an unknown
name) is refused with a ``ValueError`` naming it before a widget is built.  A configuration the engine refuses
raises its ``ValueError`` at construction; later, every change is checked
by the engine's plan and its message shown in the widget (Run and Step
refuse while it stands).

The buttons, the status line and the lifetime are the acoustic lab's
(:class:`~diamondlab.widgets.labbase.LabBase`): Run / Pause / Step / Reset
do what they say from Python too (``lab.run()``, ``lab.pause()``,
``lab.step()``, ``lab.reset()``); Run and Step rebuild the simulation when
the controllers changed.  Unless ``steps`` is given, the Run controller
starts at a run in which the pulse crosses the box twice
(:func:`default_steps`).  ``lab.close()`` stops the worker, closes every
widget and lets the simulation go; building a lab closes the labs of
either equation built before by the same notebook cell (``replace=False``
keeps them).

:class:`MaxwellView` listens to the run, which records its rate every
``record_seconds`` of running (the acoustic view's cadence: on a GPU the
sweeps between queue back to back), and, after a record (at most a
``budget`` share of the time), redraws:

- the field on three planes through the scene's centre: a component
  (``"Ex"`` .. ``"Hz"``) or ``|E|`` (the three ``E`` components, each at
  its own Yee position on the plane, not interpolated), with the outline of
  the object (the contour of its own ``contains`` on the plane), the CPML's
  inner edge and the total-field box drawn over it.  The colour scale is
  fixed for a simulation, ``±A`` (``0 .. A`` for ``|E|``) with ``A`` from
  the source (:func:`colour_scale`), and the figure's title states it;
- the probes' traces (every step);
- the spectrum of a plane wave's run: the flux through the reflection and
  transmission planes over the incident flux
  (:class:`~diamondlab.maxwell.spectra.IncidentFlux`), running DFTs of the
  steps so far, with a slab's Fresnel curves
  (:func:`~diamondlab.maxwell.spectra.slab_fresnel`) when the slab faces
  the wave;
- the throughput readout (class ``diamondlab-throughput``): the current
  and average rate in G Yee cell updates per second (a cell's six
  components a step; the average leaves out the first sweep), next to
  :func:`~diamondlab.engine.measure.perfmodel.predict_yee` on a GPU ("no
  model" on the CPU, where the roofline is no useful ceiling).
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import replace

import ipywidgets as widgets
import numpy as np
import plotly.graph_objects as go

from diamondlab.viz.fields import AXES, PLANES, field_slices, slices_figure, traces_figure
from diamondlab.viz.figurewidget import FigureWidget
from diamondlab.widgets.labbase import LAB_TABS, LabBase, check_lab_options, cited_note, lab_options
from diamondlab.widgets.live import RECORD_SECONDS, close_widgets, format_rate
from diamondlab.widgets.lrnla import ShapesPanel, StageExplorer, YeePanel
from diamondlab.widgets.maxwell_controls import MaxwellConfig, MaxwellControls, build_maxwell
from diamondlab.widgets.runner import BackgroundRun
from diamondlab.widgets.tuning import TuningPanel

__all__ = ["OPTIONS", "PAPER_002", "SECTIONS", "TABS", "VIEWS", "MaxwellLab", "MaxwellView", "colour_scale",
           "default_steps", "engine_tiling", "tab_note"]

#: What the planes show.
VIEWS = ("|E|", "Ex", "Ey", "Ez", "Hx", "Hy", "Hz")
#: The spectrum's three measured curves: of a slab across the wave (drawn against Fresnel's), and of any other
#: scene (the flux scattered back through the plane before the total-field box, and the total flux through the
#: plane behind the object, each over the incident flux through as many faces; their sum)
SLAB_SPECTRA = ("R (measured)", "T (measured)", "R + T")
OBJECT_SPECTRA = ("back (scattered)", "behind (total)", "back + behind")

#: The Maxwell lab's tabs.
TABS = LAB_TABS["maxwell"]

#: The keyword arguments of ``MaxwellLab`` (``Lab(equation="maxwell")``): its own and the fields of
#: :class:`~diamondlab.widgets.maxwell_controls.MaxwellConfig` (any other is refused before a widget is
#: built).
OPTIONS = lab_options("maxwell")

#: Paper 002: Zakirov, Levchenko, Perepelkina, Zempo, "High performance FDTD algorithm for GPGPU
#: supercomputers", J. Phys.: Conf. Ser. 759, 012100 (2016).
PAPER_002 = "https://doi.org/10.1088/1742-6596/759/1/012100"

#: What each tab shows, of paper 002 (and of paper 000, whose construction it carries to the Yee grid).
SECTIONS = {
    "Run": "the Yee scheme run by DiamondTorre, live: the fields, probes, spectra and the rate in Yee cell "
           "updates",
    "Shapes": "the torre of the staggered scheme (2 Nt half-step tiers leaning the stencil's reach) from two "
              "conoids, its locality and asynchrony next to the acoustic scheme's (paper 000, section 5)",
    "Stages": "the Yee sweep half step by half step, in the Yee CUDA engine's order (paper 000, section 6)",
    "Yee": "Fig. 2: the Yee cell's components in a DiamondTile, and what each half step reads",
    "Tuning": "Fig. 3: the rate per DTS and Nt (TH) on this machine",
}


def tab_note(view: str) -> widgets.HTML:
    """The line that opens the Maxwell lab's tab ``view``: what it shows of paper 002, linked.

    >>> "Fig. 2" in tab_note("Yee").value and PAPER_002 in tab_note("Yee").value
    True
    """
    return cited_note(PAPER_002, "Zakirov, Levchenko, Perepelkina, Zempo, <i>J. Phys.: Conf. Ser.</i> 759, "
                                 "012100, 2016", "Paper 002", SECTIONS[view])


def engine_tiling(cfg: MaxwellConfig, plan) -> MaxwellConfig:
    """``cfg`` with the DTS and Nt that the engine's ``plan`` runs (the geometry tabs draw those).

    >>> from diamondlab.widgets.maxwell_controls import plan_maxwell
    >>> cfg = MaxwellConfig(shape=(24, 20, 20), pml=4, radius=3, backend="cpu")
    >>> plan = plan_maxwell(cfg)
    >>> drawn = engine_tiling(cfg, plan)
    >>> (cfg.size, cfg.nt), (drawn.size, drawn.nt) == (plan.size, plan.nt)
    ((0, 0), True)
    """
    return replace(cfg, size=int(plan.size), nt=int(plan.nt))


def colour_scale(sim) -> tuple[float, str]:
    """``(A, rule)``: the field shown at full colour for ``sim`` and the rule that gave it, in words.

    A plane wave: its peak ``|E|`` (``amplitude`` times the largest ``|waveform|``).  A dipole: its far field
    one wavelength ``1/f`` away, ``2 pi f |J| / (4 pi lambda)`` (``|E| = |d_t J| / (4 pi r)`` for ``c = 1``).
    In Meep's units ``|H| = |E|`` in a plane wave, so the same ``A`` serves ``H``.

    >>> from diamondlab import Simulation
    >>> from diamondlab.maxwell import GaussianPulse, PlaneWave
    >>> wave = PlaneWave("+x", "z", GaussianPulse(0.1, 0.05), box=((3, 3, 3), (12, 12, 12)), amplitude=2.0)
    >>> a, rule = colour_scale(Simulation((16, 16, 16), 2, equation="maxwell", backend="cpu", sources=[wave]))
    >>> round(a, 2), rule
    (1.56, "the plane wave's peak |E|")
    """
    from diamondlab.maxwell import PlaneWave

    top, rules = 0.0, []
    for src in sim.sources:
        w = src.waveform
        t = np.linspace(0.0, 2 * (w.delay + 4.0 / w.frequency), 4001)
        peak = abs(src.amplitude) * float(np.abs(w(t)).max())
        if isinstance(src, PlaneWave):
            value, rule = peak, "the plane wave's peak |E|"
        else:
            f = w.frequency
            value, rule = 2 * np.pi * f * peak * f / (4 * np.pi), "the dipole's far field one wavelength away"
        if value > top:
            top, rules = value, [rule]
    return (top, rules[0]) if top > 0 else (1.0, "1 (no source)")


def default_steps(sim) -> int:
    """Whole sweeps that last until the pulse has started (its delay) and crossed the longest side twice."""
    dt = float(sim.params.dt)
    delay = max((src.waveform.delay for src in sim.sources), default=0.0)
    steps = (delay + 2 * max(sim.shape)) / dt
    return int(math.ceil(steps / sim.nt)) * sim.nt


def _scene_centre(sim) -> tuple[int, int, int]:
    """Where the planes cross: the first object's centre (a slab: its middle), else the grid's centre.

    >>> from diamondlab import Simulation
    >>> from diamondlab.maxwell import Box, Dielectric
    >>> _scene_centre(Simulation((16, 16, 16), 2, equation="maxwell", backend="cpu",
    ...                          materials=[Box((2, 3, 4), (6, 7, 8), Dielectric(2.0))]))
    (4, 5, 6)
    """
    centre = [n // 2 for n in sim.shape]
    for obj in sim.physics.materials:
        if hasattr(obj, "center"):
            centre = [int(round(v)) for v in obj.center]
        elif isinstance(getattr(obj, "lo", None), tuple):  # a box
            centre = [int(round((a + b) / 2)) for a, b in zip(obj.lo, obj.hi, strict=True)]
        elif hasattr(obj, "axis") and hasattr(obj, "lo"):  # a slab
            a = "xyz".index(obj.axis)
            centre[a] = int(round((obj.lo + obj.hi) / 2))
        break
    return tuple(min(max(c, 0), n - 1) for c, n in zip(centre, sim.shape, strict=True))


def _plane_coordinates(plane: str, index, xs, ys, zs):
    """Broadcast coordinates of ``plane``'s samples (cell centres of the E grid)."""
    ix, iy, iz = index
    if plane == "xy":
        return np.ix_(xs, ys, [iz])
    if plane == "xz":
        return np.ix_(xs, [iy], zs)
    return np.ix_([ix], ys, zs)


def _outline_traces(sim, samples) -> list[list]:
    """Per plane, contour traces of each object's own ``contains`` there (the line where it flips)."""
    out = []
    for plane in PLANES:
        a, b = AXES[plane]
        traces = []
        x, y, z = _plane_coordinates(plane, samples["index"], samples["x"], samples["y"], samples["z"])
        for obj in sim.physics.materials:
            if not hasattr(obj, "contains"):
                continue
            inside = np.broadcast_to(np.asarray(obj.contains(x, y, z), dtype=float),
                                     np.broadcast(x, y, z).shape)
            inside = inside.reshape(len(samples[a]), len(samples[b]))
            if inside.min() == inside.max():
                continue  # the plane does not cross its surface
            traces.append(go.Contour(z=inside.T, x=samples[a], y=samples[b], showscale=False,
                                     contours=dict(start=0.5, end=0.5, size=1, coloring="lines"),
                                     colorscale=[[0, "black"], [1, "black"]], line=dict(width=2),
                                     hoverinfo="skip", name=f"{type(obj).__name__}"))
        out.append(traces)
    return out


class MaxwellView:
    """Planes, probe traces, spectrum and throughput readout of a Maxwell run (see the module contract).

    Parameters
    ----------
    run : BackgroundRun
    max_points : int
        Largest side of a displayed plane.
    view : str
        One of :data:`VIEWS`.
    budget : float
        Largest share of the run's time spent redrawing.
    min_interval : float
        Shortest time between two redraws while running (seconds).
    record_seconds : float
        Seconds of running between two records of the run (its
        :attr:`~diamondlab.widgets.runner.BackgroundRun.report_every`, as the acoustic view's): on a GPU
        the sweeps between queue back to back instead of waiting for the device after each one; ``0``: a
        record after every sweep.
    """

    def __init__(self, run, max_points: int = 64, view: str = "|E|", budget: float = 0.05,
                 min_interval: float = 0.2, record_seconds: float = RECORD_SECONDS):
        self.max_points, self.budget, self.min_interval = max_points, budget, min_interval
        self.record_seconds = record_seconds
        #: seconds spent redrawing (all refreshes so far)
        self.refresh_seconds = 0.0
        self.view = widgets.Dropdown(options=list(VIEWS), value=view, description="show",
                                     layout=widgets.Layout(width="200px"))
        self.view.observe(lambda _: self._view_changed(), names="value")
        self.readout = widgets.HTML()
        self.readout.add_class("diamondlab-throughput")
        self.refreshes = 0
        #: the acoustic view's "the wave has left" (the Lab's buttons read it): a Maxwell run is not ended by
        #: its view (its spectra want the whole run), so Run continues and never starts again from n = 0
        self.ended = False
        self._last = self._last_cost = 0.0
        self._lock = threading.Lock()
        self._models: dict = {}
        self.planes = self.traces = self.spectrum = None
        self._figures = widgets.VBox()
        self.widget = widgets.VBox([self.readout, self.view, self._figures],
                                   layout=widgets.Layout(width="100%"))
        self.widget.add_class("diamondlab-maxwell-live")
        self.run = None
        self.attach(run)

    # ------------------------------------------------------------- wiring
    def attach(self, run) -> None:
        """Listen to ``run``; its simulation's figures are built anew (the old ones closed)."""
        from diamondlab.maxwell.spectra import IncidentFlux

        if self.run is not run:
            if self.run is not None:
                self.run.off(self._on_start, self._on_sweep, self._on_state)
            run.on_start(self._on_start)
            run.on_sweep(self._on_sweep)
            run.on_state(self._on_state)
            self.run = run
        run.report_every = self.record_seconds
        sim = run.sim
        self.index = _scene_centre(sim)
        self.scale, self.rule = colour_scale(sim)
        self.incident = IncidentFlux(sim, sim.monitors[0].frequencies) if sim.physics.tfsf and len(
            sim.monitors) >= 2 else None
        old = [f for f in (self.planes, self.traces, self.spectrum) if f is not None]
        self.planes = self._planes_figure(sim)
        self.traces = traces_figure([f"{p.component} at {p.position}" for p in sim.probes], widget=True,
                                    title="probes (every step)")
        self.traces.layout.yaxis.title.text = "field"
        self.traces.layout.width = 560
        self.spectrum = self._spectrum_figure(sim)
        self._figures.children = (self.planes, widgets.HBox([self.traces, self.spectrum]))
        close_widgets(*old)
        self.refresh()

    def close(self) -> None:
        """Stop listening and close the view's widgets and figures (idempotent)."""
        if self.run is not None:
            self.run.off(self._on_start, self._on_sweep, self._on_state)
            self.run.report_every = 0.0
            self.run = None
        close_widgets(self.widget, *(f for f in (self.planes, self.traces, self.spectrum) if f is not None))
        self.planes = self.traces = self.spectrum = self.incident = None

    def _planes_figure(self, sim) -> FigureWidget:
        fig = slices_figure(sim.shape, self.max_points)
        samples = field_slices(np.zeros(sim.shape, np.float32), index=self.index, max_points=self.max_points)
        outlines = _outline_traces(sim, samples)
        for col, (plane, traces) in enumerate(zip(PLANES, outlines, strict=True), start=1):
            for trace in traces:
                fig.add_trace(trace, row=1, col=col)
            a, b = ("xyz".index(c) for c in AXES[plane])
            widths = sim.physics.pml_widths
            n = sim.shape
            if any(widths[i] for i in (a, b)):  # the CPML's inner edge
                fig.add_shape(type="rect", x0=widths[a] - 0.5, x1=n[a] - widths[a] - 0.5, y0=widths[b] - 0.5,
                              y1=n[b] - widths[b] - 0.5, line=dict(color="grey", dash="dot", width=1),
                              row=1, col=col)
            for src in sim.sources:
                if hasattr(src, "box"):  # the plane wave's total-field box
                    (lo, hi) = src.box
                    fig.add_shape(type="rect", x0=lo[a], x1=hi[a], y0=lo[b], y1=hi[b],
                                  line=dict(color="#117a65", dash="dash", width=1), row=1, col=col)
        fig.update_layout(width=960, height=400, margin=dict(l=40, r=90, t=110, b=40))
        widget = FigureWidget(fig)
        self._style_planes(widget)
        return widget

    def _style_planes(self, fig) -> None:
        """Colours of the view: ``0 .. A`` for ``|E|``, ``-A .. A`` for a component."""
        magnitude = self.view.value == "|E|"
        with fig.batch_update():
            for trace in fig.data[:3]:
                trace.colorscale = "Inferno" if magnitude else "RdBu_r"
                trace.zmin, trace.zmax = (0.0 if magnitude else -self.scale), self.scale
                trace.colorbar.title.text = self.view.value

    def _spectrum_figure(self, sim) -> FigureWidget:
        fig = go.Figure()
        if self.incident is not None:
            f = np.asarray(self.incident.frequencies)
            fresnel = self._fresnel(sim, f)
            # a slab across the wave: reflectance and transmittance; any other object: what the planes hold
            # (the flux scattered back, and the total flux behind it: its shadow and forward scattering)
            names = SLAB_SPECTRA if fresnel is not None else OBJECT_SPECTRA
            for name, colour in zip(names, ("#c0392b", "#2471a3", "#7f8c8d"), strict=True):
                fig.add_scatter(x=f, y=np.full(len(f), np.nan), mode="lines+markers", name=name,
                                line=dict(color=colour), marker=dict(size=4))
            if fresnel is not None:
                for name, values, colour in (("R Fresnel", fresnel[0], "#c0392b"),
                                             ("T Fresnel", fresnel[1], "#2471a3")):
                    fig.add_scatter(x=f, y=values, mode="lines", name=name,
                                    line=dict(color=colour, dash="dash"))
                title = "R and T: flux through the planes / incident"
            else:
                title = ("flux through the planes / incident<br><sup>back: the scattered field before the "
                         "box; behind: the total field behind the object</sup>")
        else:
            title = "spectra: with a plane wave source"
        fig.update_layout(title=dict(text=title, font=dict(size=12)), xaxis_title="frequency f (c / h)",
                          yaxis_title="fraction of the incident flux", height=330, width=420,
                          margin=dict(l=50, r=10, t=50, b=40), legend=dict(orientation="h", y=-0.3))
        return FigureWidget(fig)

    @staticmethod
    def _fresnel(sim, f):
        """A slab facing the plane wave: its Fresnel ``(R, T)``; else None."""
        from diamondlab.maxwell.spectra import slab_fresnel

        objects = sim.physics.materials
        wave = next(iter(sim.physics.tfsf.values())).wave
        if len(objects) != 1 or type(objects[0]).__name__ != "Slab" or objects[0].axis != wave.direction[1]:
            return None
        slab = objects[0]
        return slab_fresnel(slab.medium, slab.hi - slab.lo, f)

    # ------------------------------------------------------------ refresh
    def _on_start(self, sim) -> None:
        self.model(sim, compute=True)  # in the worker: it may measure the device

    def _on_sweep(self, sim, record) -> None:
        if self.run is None:
            return
        now = time.perf_counter()
        if now - self._last >= max(self.min_interval, self._last_cost / self.budget):
            self.refresh(sim, record)

    def _on_state(self, state: str, message: str) -> None:
        if state in ("paused", "done", "idle"):
            self.refresh()

    def _view_changed(self) -> None:
        if self.planes is not None:
            self._style_planes(self.planes)
            if self.run is not None and not self.run.running:
                self.refresh()

    def _field_planes(self, sim) -> dict:
        """The planes of the view (``|E|``: the root of the three components' squares)."""
        names = ("Ex", "Ey", "Ez") if self.view.value == "|E|" else (self.view.value,)
        saved = sim.view
        try:
            parts = []
            for name in names:
                sim.view = name
                parts.append(field_slices(sim, index=self.index, max_points=self.max_points))
        finally:
            sim.view = saved
        out = dict(parts[0])
        if len(parts) > 1:
            for p in PLANES:
                out[p] = np.sqrt(sum(part[p].astype(np.float64) ** 2 for part in parts)).astype(np.float32)
        return out

    def refresh(self, sim=None, record=None) -> None:
        """Redraw everything from the current state (call between sweeps)."""
        if self.run is None or self.run.sim is None:
            return
        history = self.run.history
        with self._lock:
            t0 = time.perf_counter()
            self._draw(self.run.sim if sim is None else sim, record or (history[-1] if history else None))
            self.refreshes += 1
            self._last = time.perf_counter()
            self._last_cost = self._last - t0
            self.refresh_seconds += self._last_cost

    def _draw(self, sim, record) -> None:
        planes = self._field_planes(sim)
        peak = max(float(np.abs(planes[p]).max()) for p in PLANES)
        ix, iy, iz = self.index
        span = f"{'0 .. ' if self.view.value == '|E|' else '±'}{self.scale:.3g}"
        with self.planes.batch_update():
            for trace, p in zip(self.planes.data[:3], PLANES, strict=True):
                trace.z = planes[p].T
            self.planes.layout.title.text = (
                f"{self.view.value} at n = {sim.time_step} (t = {sim.time:.4g}), planes through "
                f"({ix}, {iy}, {iz})<br><sup>colour {span} (fixed): {self.rule}; max on the planes "
                f"{peak:.3g}</sup><br><sup>black: the object, dotted: the CPML, dashed: the total-field "
                "box</sup>")
        self._update_traces(sim)
        self._update_spectrum(sim)
        self.readout.value = self._readout_html(sim, record)

    def _update_traces(self, sim) -> None:
        tr = np.asarray(sim.traces)
        n = len(tr)
        step = max(1, n // 2000)
        x = np.arange(1, n + 1, step)
        with self.traces.batch_update():
            for i, trace in enumerate(self.traces.data):
                trace.x, trace.y = x, tr[:n:step, i]

    def spectrum_values(self, sim=None) -> dict[str, np.ndarray] | None:
        """``{"f", "R", "T"}``: the flux through the reflection and transmission planes over the incident flux
        through as many faces (NaN where the incident flux is still below 1e-9 of its largest value); None
        without a plane wave."""
        sim = self.run.sim if sim is None else sim
        if self.incident is None:
            return None
        intensity = self.incident.update(sim)
        ok = intensity > 1e-9 * max(float(intensity.max()), 1e-300)
        out = {"f": np.asarray(self.incident.frequencies)}
        for key, i in (("R", 0), ("T", 1)):
            faces = sim.physics.monitor_layout.faces(i)
            with np.errstate(divide="ignore", invalid="ignore"):
                out[key] = np.where(ok, sim.flux(i) / (faces * intensity), np.nan)
        return out

    def _update_spectrum(self, sim) -> None:
        values = self.spectrum_values(sim)
        if values is None:
            return
        with self.spectrum.batch_update():
            self.spectrum.data[0].y = values["R"]
            self.spectrum.data[1].y = values["T"]
            self.spectrum.data[2].y = values["R"] + values["T"]

    # ------------------------------------------------------------ readout
    def model(self, sim, compute: bool = False) -> tuple[float, str]:
        """``(rate, what)``: :func:`~diamondlab.engine.measure.perfmodel.predict_yee` in G Yee cell
        updates/s on a GPU (cached per configuration; computed only when ``compute``), NaN and why not
        elsewhere."""
        if sim.backend_name != "cuda":
            return float("nan"), "no model on the CPU (its roofline is no useful ceiling there)"
        key = (sim.algorithm, sim.order, sim.size, sim.nt, sim.physics.drude)
        if key not in self._models:
            if not compute:
                return float("nan"), "model: at the first run"
            try:
                from diamondlab.engine.measure.perfmodel import device_numbers, predict_yee

                p = predict_yee(sim.algorithm, sim.order, sim.size, sim.nt, device_numbers("cuda", sim.order),
                                drude=sim.physics.drude)
                self._models[key] = (p.rate / 1e9, f"model ({p.bound} bound)")
            except Exception as err:  # noqa: BLE001 - the readout says why instead
                self._models[key] = (float("nan"), f"model unavailable: {err}")
        return self._models[key]

    def _readout_html(self, sim, record) -> str:
        model, what = self.model(sim)
        current = record.current if record is not None else None
        average = record.average if record is not None else None
        frac = f" = {average / model:.0%} of the model" if average and np.isfinite(model) else ""
        return (
            "<div class='dl-readout' style='font-family:sans-serif'>"
            f"<b>{sim.algorithm}</b> on <b>{sim.backend_name}</b>, Yee grid {sim.shape}, NO={sim.order}, "
            f"DTS={sim.size}, Nt={sim.nt}; {sim.physics.summary()} &middot; step <b>{sim.time_step}</b>, "
            f"t = {sim.time:.4g} &middot; {self.run.state}{frac}"
            "<table style='text-align:center;min-width:520px'><tr>"
            f"<td><b>{format_rate(current)}</b><br><small>current</small></td>"
            f"<td><b>{format_rate(average)}</b><br><small>average (after sweep 1)</small></td>"
            f"<td>{format_rate(model)}<br><small>{what}</small></td></tr></table>"
            "<small>G Yee cell updates per second (a cell's six components a step)</small></div>")


class MaxwellLab(LabBase):
    """The Maxwell lab; see the module contract.  ``Lab(equation="maxwell", ...)`` builds one.

    Parameters
    ----------
    max_points : int
        Largest side of a displayed plane.
    view : str
        What the planes show first (:data:`VIEWS`).
    replace : bool
        Close the labs (of either equation) built before by the same cell.
    panels : tuple of str
        Which tabs to build (default all of :data:`TABS`).
    **config
        Initial controller values: the fields of :class:`~diamondlab.widgets.maxwell_controls.MaxwellConfig`.

    Examples
    --------
    >>> lab = MaxwellLab(shape=(24, 20, 20), pml=4, radius=3, backend="cpu", replace=False)
    >>> lab.controls.set(pml=9)  # the engine's message, in the widget
    >>> "cannot run" in lab.controls.message.value and "PlaneWave box" in lab.controls.message.value
    True
    >>> lab.run()
    False
    >>> lab.close()
    """

    def __init__(self, max_points: int = 64, view: str = "|E|", replace: bool = True, panels=TABS, **config):
        panels = check_lab_options("maxwell", panels, config)  # before any widget
        cfg = MaxwellConfig(**config)
        self._open(replace)
        self.controls = MaxwellControls(cfg)
        plan = self.controls.validate()
        if isinstance(plan, str):
            close_widgets(self.controls.widget)
            raise ValueError(plan)
        sim = build_maxwell(cfg, plan)
        self._config = cfg
        self.runner = BackgroundRun(sim)
        self.live = MaxwellView(self.runner, max_points=max_points, view=view)
        self._auto_steps = None
        if not cfg.steps:
            self._auto_steps = default_steps(sim)
            self.controls.steps.value = self._auto_steps
        c = self.controls
        drawn = engine_tiling(cfg, plan)
        self.shapes = self.explorer = self.yee = self.tuning = None
        views = {}
        if "Run" in panels:
            views["Run"] = [c.widget, self.live.widget]
        if "Shapes" in panels:
            self.shapes = ShapesPanel(drawn, equation="maxwell")
            views["Shapes"] = [self.shapes.widget]
        if "Stages" in panels:
            self.explorer = StageExplorer(drawn, equation="maxwell")
            views["Stages"] = [self.explorer.widget]
        if "Yee" in panels:
            self.yee = YeePanel(drawn)
            views["Yee"] = [self.yee.widget]
        if "Tuning" in panels:
            self.tuning = TuningPanel(c, runner=self.runner, equation="maxwell")
            views["Tuning"] = [self.tuning.widget]
        c.on_change(self._changed)  # through the lab: a closed lab's panels are let go
        self.tabs = widgets.Tab(children=[widgets.VBox([tab_note(v), *ws]) for v, ws in views.items()],
                                titles=list(views))
        header = widgets.HTML("<h3 style='margin:4px 0'>diamondlab · Maxwell on DiamondTorre</h3>"
                              "<div style='color:#555'>Paper 002: the Yee scheme's E and H half steps as the "
                              "tiers of a DiamondTorre (README, \"Maxwell's equations\")</div>")
        self.widget = widgets.VBox([header, self.tabs])
        self.widget.add_class("diamondlab-maxwell-lab")
        self._opened()

    PANELS = ("shapes", "explorer", "yee", "tuning")

    def _changed(self, config, plan) -> None:
        """The geometry tabs follow the controllers: the plan's tiling, or the plan's message."""
        message = plan if isinstance(plan, str) else ""
        drawn = config if message else engine_tiling(config, plan)
        for panel in (self.shapes, self.explorer, self.yee):
            if panel is not None:
                panel.update(drawn, message)

    # ------------------------------------------------------------ actions
    def _prepare(self) -> bool:
        """Make the simulation match the controllers; False (the engine's message shown) if it cannot."""
        plan = self.controls.validate()
        if isinstance(plan, str):
            return False
        cfg = self.controls.config()
        if replace(cfg, steps=0) != replace(self._config, steps=0):  # the scene or the run changed
            sim = self._build(cfg, plan)
            if sim is None:
                return False
            self.runner.replace(sim)
            self.live.attach(self.runner)
            auto, self._auto_steps = self._auto_steps, default_steps(sim)
            if auto is None or self.controls.steps.value != auto:
                self._auto_steps = None  # a run length chosen by hand stays
            else:  # nobody chose one: it follows the scene
                self.controls.steps.value = self._auto_steps
                cfg = self.controls.config()
        self._config = cfg
        return True

    def _build(self, cfg, plan):
        """The simulation of ``plan``, or None with the error shown in the widget."""
        try:
            return build_maxwell(cfg, plan)
        except Exception as err:  # noqa: BLE001 - shown in the widget
            self.controls.show_message(f"{type(err).__name__}: {err}")
            return None
