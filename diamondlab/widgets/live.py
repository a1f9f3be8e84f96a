"""Live wavefield view: slices, receiver traces, throughput readout and its history.

Contract
--------
A :class:`LiveView` listens to a :class:`~diamondlab.widgets.runner.BackgroundRun`
and, after a sweep, refreshes (in the run's worker thread, between sweeps,
so the field is at one time level):

- three orthogonal slices of ``u^n`` (:mod:`diamondlab.viz.fields`,
  downsampled to ``max_points`` per side) in one ``batch_update``;
- the receivers' traces (``sim.traces`` where the simulation records
  receivers) or, without receivers, probes of ``u`` at the slice centre
  sampled at each refresh;
- the throughput readout (:class:`ipywidgets.HTML` with class
  ``diamondlab-throughput``): current and average G cell updates/s, the
  model's prediction for this configuration and backend, with the bound it used
  (:func:`diamondlab.engine.measure.perfmodel.model_for`), and stepwise for comparison
  (the model, and the measured rate once a stepwise run of the same grid
  has been seen);
- a small history plot of the current and average rate.

The slices' colour range follows the field by a stated rule
(:func:`~diamondlab.viz.fields.follow_range`, :data:`~diamondlab.viz.fields.COLOUR_RULE`,
shown as the caption under them): it starts at
:func:`~diamondlab.viz.fields.colour_range` (the initial pulse, the
sources' amplitudes) and is set again to 1.25 times the field's level
whenever the level leaves a quarter to one times the range, so the field is
never saturated (its 99.5th percentile never above the range) and never
washed out, except where it has faded below
:data:`~diamondlab.viz.fields.FADED` of the largest level since ``n = 0``.
Their title gives the step ``n``, the simulated time ``t = n dt``, the
range and the level.

A run that reaches the end of its wave says so: once every source has
peaked (:attr:`Pace.source_peak`) and the field has faded below that
fraction of its largest level (the wave has left through the sponge), the
view ends the run (:meth:`~diamondlab.widgets.runner.BackgroundRun.finish`),
sets :attr:`LiveView.ended` and shows a notice above the slices (class
``diamondlab-ended``): Run starts again from ``n = 0`` (the lab resets
first).  A run never continues an empty field silently: between two drawings
(seconds apart where drawing is slow) the view still follows the field's
level on the slices' planes (:meth:`LiveView.watch`, at most every
``min_interval``), so the wave's passage is seen whatever the drawing costs.

A run can be *paced for watching* (the "paced for watching" checkbox,
ticked in the lab unless ``Lab(paced=False)``, off in a view alone): a
frame is shown every ``steps_per_frame`` steps (whole sweeps, where the
engine stops) and the worker waits between frames, so that a wave crosses
the longest side of the box in about ``crossing_seconds``
(:func:`watch_pace`, from the grid, the Courant number and ``Nt`` of the
simulation); :attr:`LiveView.pace` also gives the length of the lab's
default run.  The throughput readout stays true (kernel time), but the
waits slow the run: untick the checkbox to measure at full speed.  Then the
run reports only every :data:`RECORD_SECONDS` (its
:attr:`~diamondlab.widgets.runner.BackgroundRun.report_every`), so that on a
GPU the sweeps between queue back to back instead of waiting for the
device after each one, and a refresh happens after a report only when the time since the last one is at
least ``last_cost / budget`` (and ``min_interval``): with the default budget
of 3 percent the worker spends about 3 percent of its time refreshing
whatever the grid; sending the messages (the kernel's I/O thread) costs
about as much again on a 2-core machine (BENCHMARKS.md, "Lab readout
overhead").  A run's last sweep is always shown; :meth:`LiveView.refresh`
forces a refresh.  :meth:`LiveView.close` stops listening and closes the
view's widgets.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass

import ipywidgets as widgets
import numpy as np
import plotly.graph_objects as go

from diamondlab.viz.fields import (
    COLOUR_RULE,
    FADED,
    PLANES,
    colour_range,
    field_level,
    field_slices,
    follow_range,
    slices_figure,
    traces_figure,
    update_slices,
)
from diamondlab.viz.figurewidget import FigureWidget

__all__ = ["LiveView", "Pace", "close_widgets", "format_rate", "watch_pace"]

HISTORY = 400

#: Seconds between two records of an unpaced run (each waits for the device; the sweeps between queue).
RECORD_SECONDS = 0.05


def format_rate(value: float | None) -> str:
    """``1.234`` -> ``"1.23"``; None or NaN -> ``"–"``."""
    if value is None or not np.isfinite(value):
        return "–"
    return f"{value:.3g}"


def close_widgets(*roots) -> int:
    """Close ``roots``, their children (recursively) and their layout and style widgets; return how many.

    Closing a widget takes it out of ipywidgets' registry of live widgets,
    which otherwise keeps it, and everything its callbacks reach, for the
    life of the kernel.  A closed box also drops its children (someone may
    still hold the box), and an anywidget (a plotly ``FigureWidget``) is
    released from the hot-reload hook that anywidget keeps for every
    instance (:func:`_release_anywidget`).  Anything that is not an
    ipywidgets widget is skipped.
    """
    seen: set[int] = set()
    stack = list(roots)
    while stack:
        w = stack.pop()
        if not isinstance(w, widgets.Widget) or id(w) in seen:
            continue
        seen.add(id(w))
        stack.extend(getattr(w, "children", ()) or ())
        for name in ("layout", "style"):
            part = w._trait_values.get(name) if hasattr(w, "_trait_values") else None
            if isinstance(part, widgets.Widget):
                stack.append(part)
        w.close()
        if getattr(w, "children", None):
            w.children = ()  # a closed box that someone still holds lets its children go
        _release_anywidget(w)
    return len(seen)


def _release_anywidget(w) -> None:
    """Disconnect ``w`` from its class's ``_esm``/``_css`` file-change signal.

    ``AnyWidget.__init__`` connects, for every instance whose class keeps
    its front-end code in a watched file (plotly's ``FigureWidget`` does), a
    lambda over the instance to that file's ``changed`` signal, and never
    disconnects it: every figure ever built stays alive with its data
    (anywidget issue 929, open).  The signal (psygnal) lists its slots only
    in a private attribute; where that is missing this does nothing.
    """
    # add_traits gives the instance a subclass of its own whose _esm is a trait: look further up
    signals = {id(s): s for klass in type(w).__mro__ for key in ("_esm", "_css")
               if (s := getattr(klass.__dict__.get(key), "changed", None)) is not None}
    for signal in signals.values():
        for slot in list(getattr(signal, "_slots", ()) or ()):
            fn = slot.dereference() if hasattr(slot, "dereference") else None
            for cell in getattr(fn, "__closure__", None) or ():
                try:
                    mine = cell.cell_contents is w
                except ValueError:  # an empty cell
                    mine = False
                if mine:
                    signal.disconnect(fn)
                    break


@dataclass(frozen=True)
class Pace:
    """How a watched run advances (see :func:`watch_pace`).

    Attributes
    ----------
    steps_per_frame : int
        Steps between two frames: whole sweeps (``Nt`` steps each).
    frame_interval : float
        Seconds between two frames.
    crossing_steps : float
        Steps a wave takes to cross the longest side of the box.
    crossing_frames : float
        Frames it takes.
    frames : int
        Frames of the default run.
    source_peak : int
        Steps until the latest source's wavelet peaks (0 without sources).
    """

    steps_per_frame: int
    frame_interval: float
    crossing_steps: float
    crossing_frames: float
    frames: int
    source_peak: int = 0

    @property
    def fps(self) -> float:
        """Frames per second."""
        return 1.0 / self.frame_interval

    @property
    def crossing_seconds(self) -> float:
        """Seconds a wave takes to cross the box when the machine keeps up with the pace."""
        return self.crossing_frames * self.frame_interval

    @property
    def steps(self) -> int:
        """Steps of the default run: ``frames * steps_per_frame``."""
        return self.frames * self.steps_per_frame


def watch_pace(sim, crossing_seconds: float = 8.0, max_fps: float = 12.0, crossings: float = 1.0,
               min_fps: float = 2.0) -> Pace:
    """The pace at which a run of ``sim`` can be watched: a wave crosses the box in ``crossing_seconds``.

    The fastest wave moves ``sim.params.courant`` cells per step (the Courant
    number ``c_max dt / h``), so it crosses the longest side of the grid in
    ``max(shape) / courant`` steps.  A frame is shown after every sweep
    (``sim.nt`` steps, where the engine can stop), or after several when one
    sweep per frame would need more than ``max_fps`` frames a second; the
    frames are spaced so that the crossing takes ``crossing_seconds``, but
    never more than ``1 / min_fps`` apart (a small grid with a tall ``Nt``
    has few frames per crossing: it crosses sooner rather than stutter).
    The default run lasts ``crossings`` crossings, plus the time until the
    latest source's wavelet peaks.

    >>> import diamondlab as dl
    >>> p = watch_pace(dl.Simulation((128, 128, 128), backend="cpu", size=2, nt=8, courant=0.25))
    >>> p.crossing_steps, p.steps_per_frame, p.crossing_frames, round(p.crossing_seconds, 6), p.frames
    (512.0, 8, 64.0, 8.0, 64)
    """
    courant = float(sim.params.courant)
    nt = int(sim.nt)
    crossing = max(int(n) for n in sim.shape) / courant
    sweeps = max(1, math.ceil(crossing / nt / (crossing_seconds * max_fps)))
    per_frame = sweeps * nt
    frames_per_crossing = crossing / per_frame
    interval = min(crossing_seconds / frames_per_crossing, 1.0 / min_fps)
    peak = 0
    dt = float(sim.params.dt)
    for src in getattr(sim, "sources", None) or []:  # a source's wave starts when its wavelet does
        samples = np.abs(src.samples(int(4 * crossing) + 1, dt))
        if samples.any():
            peak = max(peak, int(np.argmax(samples)))
    frames = math.ceil((crossings * crossing + peak) / per_frame)
    return Pace(per_frame, interval, crossing, frames_per_crossing, frames, peak)


class LiveView:
    """Slices, traces, readout and rate history of a background run.

    Parameters
    ----------
    run : BackgroundRun
    max_points : int
        Largest side of a displayed slice.
    budget : float
        Largest fraction of wall time spent refreshing.
    min_interval : float
        Shortest time between two refreshes (seconds).
    model : callable, optional
        ``model(sim) -> (rate, stepwise_rate, bound)`` in G cell updates/s; the
        default asks :func:`diamondlab.engine.measure.perfmodel.model_for`.
    measured : dict, optional
        Shared record of measured average rates keyed by configuration
        (the lab passes one so that stepwise runs are remembered).
    paced : bool
        Pace runs for watching (see the module contract; the "paced" checkbox).  Off by
        default, so that a view alone watches at full speed (``widgets.bench`` measures
        what that costs); the lab turns it on.
    crossing_seconds, max_fps, min_fps : float
        Of :func:`watch_pace`.
    record_seconds : float
        Seconds between two records of an unpaced run (0: after every sweep).
    """

    def __init__(self, run, max_points: int = 96, budget: float = 0.03, min_interval: float = 0.1,
                 model=None, measured: dict | None = None, paced: bool = False,
                 crossing_seconds: float = 8.0, max_fps: float = 12.0, min_fps: float = 2.0,
                 record_seconds: float = RECORD_SECONDS):
        self.max_points = max_points
        self.record_seconds = record_seconds
        self.crossing_seconds = crossing_seconds
        self.max_fps, self.min_fps = max_fps, min_fps
        self.paced = widgets.Checkbox(value=paced, description="paced for watching", indent=False,
                                      tooltip="a wave crosses the box in a few seconds; untick to measure "
                                              "at full speed")
        self.pace: Pace | None = None
        self.vmax = 1.0
        self._next_frame = 0.0
        self._frame_step = 0
        self.budget = budget
        self.min_interval = min_interval
        self.model = model or _default_model
        self.measured = {} if measured is None else measured
        self.refreshes = 0
        self.refresh_seconds = 0.0
        self._last = 0.0
        self._last_cost = 0.0
        self.watches = 0  # looks at the wave between drawings (:meth:`watch`)
        self._watched = 0.0
        self._watch_cost = 0.0
        self._lock = threading.Lock()
        self._models: dict = {}
        self._probe_t: list[int] = []
        self._probe_u: list[float] = []
        self.ended = False
        self._level_max = 0.0  # the largest level of the field since n = 0
        self._level_step = 0  # the step of the last refresh (a smaller one: the run was reset)
        self.notice = widgets.HTML()
        self.notice.add_class("diamondlab-ended")
        self.caption = widgets.HTML(f"<small style='color:#555'>{COLOUR_RULE}.</small>")
        self.readout = widgets.HTML(value=self._readout_html(None, None))
        self.readout.add_class("diamondlab-throughput")
        self.position = [widgets.IntSlider(value=0, min=0, max=1, description=f"slice {a}",
                                           continuous_update=False) for a in "xyz"]
        for w in self.position:
            w.observe(self._moved, names="value")
        self._moving = False
        self.run = None
        self.attach(run)
        self.widget = widgets.VBox(
            [self.readout, widgets.HBox([*self.position, self.paced]),
             self.notice, widgets.HBox([self.slices], layout=widgets.Layout(width="100%")), self.caption,
             widgets.HBox([self.traces, self.history], layout=widgets.Layout(width="100%"))],
            layout=widgets.Layout(width="100%"),
        )
        self.widget.add_class("diamondlab-live")

    # ------------------------------------------------------------- wiring
    def attach(self, run) -> None:
        """Listen to ``run`` (a new simulation: the figures are rebuilt for its grid)."""
        first = self.run is None
        self.run = run
        sim = run.sim
        names = self._trace_names(sim)
        if first:
            self.slices = slices_figure(sim.shape, self.max_points, widget=True)
            self.traces = traces_figure(names, widget=True, title=self._trace_title(sim))
            self.history = FigureWidget(_history_figure())
            # fixed widths: plotly widgets in an HBox do not share the row by themselves
            self.slices.layout.width = 960
            self.traces.layout.width = 580
            self.history.layout.width = 380
            run.on_start(self._on_start)
            run.on_sweep(self._on_sweep)
            run.on_state(self._on_state)
            self.paced.observe(self._set_cadence, names="value")
        else:
            new = slices_figure(sim.shape, self.max_points)
            with self.slices.batch_update():
                for i in range(3):
                    self.slices.data[i].update(new.data[i])
            with self.traces.batch_update():
                self.traces.data = []
                for name in names:
                    self.traces.add_scatter(x=[], y=[], mode="lines", name=str(name))
                self.traces.layout.title.text = self._trace_title(sim)
        self._probe_t.clear()
        self._probe_u.clear()
        self.pace = watch_pace(sim, self.crossing_seconds, self.max_fps, min_fps=self.min_fps)
        self._start_over(sim)
        self._place_slices(sim)
        self._set_cadence()
        self.refresh()

    def _set_cadence(self, change=None) -> None:
        """Records after every sweep while paced (frames fall on sweeps), else every ``record_seconds``."""
        if self.run is not None:
            self.run.report_every = 0.0 if self.paced.value else self.record_seconds

    def close(self) -> None:
        """Stop listening to the run and close the view's widgets and figures (idempotent)."""
        if self.run is not None:
            self.run.off(self._on_start, self._on_sweep, self._on_state)
            self.run.report_every = 0.0
            self.run = None
        close_widgets(self.widget, self.slices, self.traces, self.history, self.readout, self.paced,
                      self.notice, self.caption, *self.position)

    def _start_over(self, sim) -> None:
        """The colour range and the wave's record from the simulation's first level (attached or reset)."""
        self.vmax = colour_range(sim)
        self._level_max, self._level_step = 0.0, sim.time_step
        self.ended = False
        self.notice.value = ""

    def _place_slices(self, sim) -> None:
        """Slices through the first source where there is one, else through the centre."""
        sources = getattr(sim, "sources", None) or []
        centre = [n // 2 for n in sim.shape]
        if sources:
            pos = np.asarray(sources[0].position, dtype=float)
            if getattr(sources[0], "units", "grid") == "physical":
                pos = pos / sim.params.spacing
            centre = [int(round(min(max(p, 0), n - 1))) for p, n in zip(pos, sim.shape, strict=True)]
        self._moving = True
        try:
            for w, n, c in zip(self.position, sim.shape, centre, strict=True):
                w.max = n - 1
                w.value = c
        finally:
            self._moving = False

    def index(self) -> tuple[int, int, int]:
        """The point the slices go through (the sliders)."""
        return tuple(int(w.value) for w in self.position)

    def _moved(self, change) -> None:
        if not self._moving and self.run is not None and not self.run.running:
            self.refresh()

    @staticmethod
    def _trace_names(sim) -> list[str]:
        receivers = getattr(sim, "receivers", None) or []
        if receivers:
            return [f"receiver {i} {tuple(getattr(r, 'position', ()))}" for i, r in enumerate(receivers)]
        return ["u where the slices cross"]

    @staticmethod
    def _trace_title(sim) -> str:
        if getattr(sim, "receivers", None):
            return "receivers (every step)"
        return "probe where the slices cross (sampled at each refresh)"

    # ------------------------------------------------------------ refresh
    def _on_start(self, sim) -> None:
        self.models(sim, compute=True)  # in the worker: the model may run a kernel to measure this machine
        self._frame_step = sim.time_step
        self._next_frame = time.perf_counter() + (self.pace.frame_interval if self.pace else 0.0)

    def _on_sweep(self, sim, record) -> None:
        if self.run is None:  # closed while the run went on
            return
        if self.paced.value and self.pace is not None:
            if sim.time_step - self._frame_step < self.pace.steps_per_frame:
                return
            # wait for the frame's time, then show it: frame k appears k intervals after the start
            self.run.pace(self._next_frame - time.perf_counter())
            self.refresh(sim, record)
            self._frame_step = sim.time_step
            self._next_frame = max(self._next_frame, time.perf_counter()) + self.pace.frame_interval
            return
        now = time.perf_counter()
        if now - self._last >= max(self.min_interval, self._last_cost / self.budget):
            self.refresh(sim, record)
        elif (now - self._watched >= max(self.min_interval, self._watch_cost / self.budget)
              or self._level_step < self._source_peak() <= sim.time_step):
            # the first sweep past the sources' peak is always looked at: the wave's largest level is then
            # known however far apart the looks are, so its end is seen (a loaded machine, Run again)
            self.watch(sim, record)

    def _source_peak(self) -> int:
        """The step by which every source has peaked (0 without a pace: no sources to wait for)."""
        return self.pace.source_peak if self.pace else 0

    def watch(self, sim=None, record=None) -> float:
        """Follow the wave between two drawings: the field's level on the slices' planes, its largest since
        ``n = 0``, and the end of the run once the wave has left (nothing is drawn); returns the level.

        A refresh costs far more than this look (it sends figures), so on a slow machine refreshes
        come seconds apart and a wave can cross the grid between two of them; the level is followed
        at most every ``min_interval`` (and ``watch cost / budget``), whatever the drawing costs.
        """
        if self.run is None:  # closed
            return 0.0
        with self._lock:
            t0 = time.perf_counter()
            sim = self.run.sim if sim is None else sim
            slices = field_slices(sim, index=self.index(), max_points=self.max_points)
            level = self._follow(sim, slices, record)
            self._watched = time.perf_counter()
            self._watch_cost = self._watched - t0
            self.watches += 1
        return level

    def _follow(self, sim, slices, record) -> float:
        """The level of ``slices`` into the wave's record (started over after a reset); the end checked."""
        if sim.time_step < self._level_step:  # reset: the range and the wave's record start over
            self._start_over(sim)
        self._level_step = sim.time_step
        level = field_level([slices[p] for p in PLANES])
        self._level_max = max(self._level_max, level)
        self._check_end(sim, level, record)
        return level

    def _on_state(self, state: str, message: str) -> None:
        if state in ("paused", "done", "idle"):
            self.refresh()

    def refresh(self, sim=None, record=None) -> None:
        """Redraw everything from the current state (call between sweeps)."""
        if self.run is None:  # closed
            return
        with self._lock:
            t0 = time.perf_counter()
            sim = self.run.sim if sim is None else sim
            if record is None and self.run.history:
                record = self.run.history[-1]
            slices = field_slices(sim, index=self.index(), max_points=self.max_points)
            level = self._follow(sim, slices, record)
            self.vmax = follow_range(self.vmax, level, floor=FADED * self._level_max)
            title = (f"u at n = {sim.time_step} (t = {sim.time:.4g}); colour ±{self.vmax:.3g}, "
                     f"the field's level {level:.3g}")
            update_slices(self.slices, slices, title, vmax=self.vmax)
            self._update_traces(sim, slices["value"])
            self.readout.value = self._readout_html(sim, record)
            self._update_history()
            self.refreshes += 1
            self._last = time.perf_counter()
            self._last_cost = self._last - t0
            self.refresh_seconds += self._last_cost

    def _check_end(self, sim, level: float, record) -> None:
        """Whether the wave has gone (every source has peaked, the field faded): say so, end the run."""
        sources_done = sim.time_step >= self._source_peak()
        gone = sources_done and self._level_max > 0 and level < FADED * self._level_max
        if gone and not self.ended:
            self.ended = True
            self.notice.value = (
                f"<div style='background:#fdf2e9;border-left:4px solid #e67e22;padding:4px 8px'>"
                f"<b>The wave has left the grid</b>: at n = {sim.time_step} the field's level is "
                f"{level:.3g}, "
                f"below {FADED:g} of its largest ({self._level_max:.3g}). <b>Run</b> starts again from "
                f"n = 0.</div>")
        if self.ended and record is not None and self.run is not None and self.run.running:
            self.run.finish(f"the wave has left the grid at step {sim.time_step}: Run starts again "
                            "from n = 0")

    def _update_traces(self, sim, probe: float) -> None:
        traces = getattr(sim, "traces", None)
        if traces is not None and getattr(sim, "receivers", None):
            tr = np.asarray(traces)
            n = len(tr)
            step = max(1, n // 2000)
            x = np.arange(1, n + 1, step)  # row i of the traces is level i + 1 (not an array of all n)
            with self.traces.batch_update():
                for i, trace in enumerate(self.traces.data):
                    if i < tr.shape[1]:
                        trace.x, trace.y = x, tr[:n:step, i]
            return
        if not self._probe_t or self._probe_t[-1] != sim.time_step:
            if self._probe_t and sim.time_step < self._probe_t[-1]:
                self._probe_t.clear()
                self._probe_u.clear()
            self._probe_t.append(sim.time_step)
            self._probe_u.append(probe)
        with self.traces.batch_update():
            self.traces.data[0].x, self.traces.data[0].y = self._probe_t[-2000:], self._probe_u[-2000:]

    def _update_history(self) -> None:
        hist = self.run.history[-HISTORY:]
        with self.history.batch_update():
            self.history.data[0].x = [r.time_step for r in hist]
            self.history.data[0].y = [r.current for r in hist]
            self.history.data[1].x = [r.time_step for r in hist]
            self.history.data[1].y = [r.average for r in hist]

    # ------------------------------------------------------------ readout
    def models(self, sim, compute: bool = False) -> tuple[float, float, str]:
        """``(model, stepwise model, bound)`` in G cell updates/s for ``sim`` (cached per configuration).

        Only computed when ``compute`` (the run's worker thread asks at the
        start of a run); until then NaN and "model: at the first run".
        """
        key = (sim.backend_name, sim.algorithm, sim.order, sim.size, sim.nt, tuple(sim.shape),
               sim.physics.medium_variant)
        if key not in self._models:
            if not compute:
                return float("nan"), float("nan"), "at the first run"
            try:
                self._models[key] = self.model(sim)
            except Exception as err:  # noqa: BLE001 - the readout says why instead
                self._models[key] = (float("nan"), float("nan"), f"model unavailable: {err}")
        return self._models[key]

    def _readout_html(self, sim, record) -> str:
        if sim is None:
            return "<div class='dl-readout'><b>Throughput</b>: press Run</div>"
        model, stepwise_model, bound = self.models(sim)
        current = record.current if record is not None else None
        average = record.average if record is not None else None
        key = (sim.backend_name, "stepwise", sim.order, tuple(sim.shape), sim.physics.summary())
        if record is not None and sim.algorithm == "stepwise":
            self.measured[key] = record.average
        stepwise_measured = self.measured.get(key)
        state = self.run.state
        cells = (f"<td><b>{format_rate(current)}</b><br><small>current</small></td>"
                 f"<td><b>{format_rate(average)}</b><br><small>average (after sweep 1)</small></td>"
                 f"<td>{format_rate(model)}<br><small>model: {bound}</small></td>"
                 f"<td>{format_rate(stepwise_measured)} / {format_rate(stepwise_model)}<br>"
                 f"<small>stepwise measured / model</small></td>")
        frac = f" = {average / model:.0%} of the model" if average and model and np.isfinite(model) else ""
        if record is not None and record.disturbed:  # the measurement rule's flag: no share of a model
            frac = (f" &middot; <span style='color:#c0392b'>machine busy (other processes took "
                    f"{record.busy:.0%} of its CPU): the rates are not steady</span>")
        return (
            "<div class='dl-readout' style='font-family:sans-serif'>"
            f"<b>{sim.algorithm}</b> on <b>{sim.backend_name}</b>, grid {sim.shape}, NO={sim.order}, "
            f"DTS={sim.size}, Nt={sim.nt}, {sim.physics.summary()} "
            f"&middot; step <b>{sim.time_step}</b>, t = {sim.time:.4g} "
            f"&middot; {state}{frac}"
            "<table style='text-align:center;min-width:520px'><tr>" + cells + "</tr></table>"
            "<small>G cell updates per second</small></div>"
        )


def _default_model(sim) -> tuple[float, float, str]:
    """The engine's model of this run and of stepwise on its grid (:func:`~diamondlab.engine.measure.
    perfmodel.model_for`: the CPU's measured levels, the GPU's roofline), and the bound it used."""
    from diamondlab.engine.measure.perfmodel import model_for

    variant = sim.physics.medium_variant
    per_cell = variant == "model" or (variant == "layered" and sim.backend_name == "cpu")  # K read per cell
    args = (sim.order, tuple(sim.shape))
    p = model_for(sim.algorithm, *args, sim.size, sim.nt, sim.backend_name, variant)
    s = model_for("stepwise", *args, sim.size, sim.nt, sim.backend_name, variant)
    return p.gcells, s.gcells, p.bound + (", K per cell" if per_cell and np.isfinite(p.rate) else "")


def _history_figure() -> go.Figure:
    fig = go.Figure([
        go.Scatter(x=[], y=[], mode="lines", name="current", line=dict(width=1)),
        go.Scatter(x=[], y=[], mode="lines", name="average", line=dict(width=2)),
    ])
    fig.update_layout(title="throughput history", xaxis_title="time step", yaxis_title="G cell updates/s",
                      height=330, margin=dict(l=50, r=10, t=50, b=40),
                      legend=dict(orientation="h", y=-0.25), yaxis_rangemode="tozero")
    return fig
