"""The interactive lab: controllers, live wavefield, LRnLA views, tuning and 3D snapshots in one widget.

Contract
--------
``Lab(equation=...)`` is the one entry point of the lab: ``"acoustic"``
(the default) is this lab, ``"maxwell"`` the Maxwell lab
(:class:`~diamondlab.widgets.maxwell_lab.MaxwellLab`, returned by
``Lab(equation="maxwell", ...)`` with its own keyword arguments); any other
name is refused (a ``ValueError`` naming ``equation`` and the engine's
equations, :data:`~diamondlab.engine.equations.EQUATIONS`) before a widget
is built.  So is an option the equation's lab does not take (:data:`OPTIONS`
here, :data:`~diamondlab.widgets.maxwell_lab.OPTIONS` for Maxwell): one of
the other lab's only, such as ``courant`` or ``sponge`` for Maxwell or
``pml`` for the acoustic lab, or a tab of ``panels`` that the lab lacks
(``"Snapshot"`` for Maxwell), with a ``ValueError`` naming the option, the
equation and what that lab takes instead
(:func:`~diamondlab.widgets.labbase.check_options`).

``Lab(...)`` (keyword arguments: the fields of
:class:`~diamondlab.widgets.controls.RunConfig`) builds the controllers, a
:class:`~diamondlab.widgets.runner.BackgroundRun` of the configured
simulation, and the panels; ``lab.widget`` (or displaying ``lab``) shows
them as tabs: *Run* (controllers and live view), *Shapes*, *Stages*,
*Tuning*, *Snapshot*, each opening with the part of paper 000 it
illustrates (:data:`PAPER_SECTIONS`, linked to the paper).  The "present"
button (:meth:`Lab.set_present`) sets every text and figure of the lab in
large type for a lecture room.

Buttons do what they say from Python too (:meth:`Lab.run`, :meth:`Lab.pause`,
:meth:`Lab.step`, :meth:`Lab.reset`: both labs' own, :class:`~diamondlab.widgets.labbase.LabBase`),
so tests and notebooks drive the lab exactly as a user does.  Run and Step rebuild the simulation when the
controllers changed since the last one (a configuration that cannot run
is refused with a message); while a run is in progress the structural
controllers are disabled.  Every error becomes a message in the widget.
A run that has reached the end of its wave (:attr:`LiveView.ended`: the
live view ended it and says so) is started again from ``n = 0`` by Run
(the button reads "Run again" meanwhile); Step goes on from where it is.
Unless ``steps`` is given, the Run controller starts at the live view's
watchable run (:attr:`LiveView.pace`: a wave crosses the box, paced to take
seconds), and follows the grid while nobody changes it.

:meth:`Lab.close` stops the worker thread, closes every widget of the lab
and lets its simulation go.  Building a lab closes the labs (of either
equation) built before by the same notebook cell (outside a notebook, or
where the front end does not say which cell runs, every lab built before), so re-running the cell that
builds the lab does not keep the old lab, its figures and its fields alive:
ipywidgets keeps every widget until it is closed, and the widgets' callbacks
lead back to the lab.  ``Lab(replace=False)`` keeps the others.
"""

from __future__ import annotations

from dataclasses import replace as _replace

import ipywidgets as widgets

from diamondlab.engine.equations import EQUATIONS
from diamondlab.widgets.controls import Controls, RunConfig, build_simulation, default_tiling, plan_config
from diamondlab.widgets.labbase import LAB_TABS, LabBase, check_lab_options, cited_note, lab_options
from diamondlab.widgets.live import LiveView
from diamondlab.widgets.lrnla import ShapesPanel, StageExplorer
from diamondlab.widgets.runner import BackgroundRun
from diamondlab.widgets.snapshot import SnapshotPanel
from diamondlab.widgets.tuning import TuningPanel

__all__ = ["OPTIONS", "PAPER_000", "PAPER_SECTIONS", "TABS", "Lab", "paper_note"]

TABS = LAB_TABS["acoustic"]

#: The keyword arguments of ``Lab(equation="acoustic")``: its own and the fields of
#: :class:`~diamondlab.widgets.controls.RunConfig` (any other is refused before a widget is built).
OPTIONS = lab_options("acoustic")

#: Paper 000: Levchenko, Perepelkina, Zakirov, "DiamondTorre Algorithm for High-Performance Wave Modeling",
#: Computation 4(3):29, 2016 (open access).
PAPER_000 = "https://doi.org/10.3390/computation4030029"

#: What each view illustrates, by section and figure of paper 000 (each tab opens with it, linked).
PAPER_SECTIONS = {
    "Run": "section 3 (the scheme) and section 7 (results: the rate against stepwise)",
    "Shapes": "section 4 (the torre from two conoids, Figs. 5-6) and section 5 (locality, asynchrony)",
    "Stages": "section 6 (the CUDA mapping: stages, Fig. 8; time levels mid-sweep, Fig. 9)",
    "Tuning": "section 7 (results: rate per DTS and Nt, Figs. 10-11)",
    "Snapshot": "section 3 (the wave field the scheme computes)",
}

#: Font size (px) of the lab's text and figures in present mode (a projector at the back of a room).
PRESENT_FONT = 20

#: The present mode's style: larger text in every control, label and message of the lab.
_PRESENT_CSS = (f"<style>.diamondlab-present, .diamondlab-present .widget-label, "
                f".diamondlab-present .widget-html-content, .diamondlab-present button, "
                f".diamondlab-present .widget-readout, .diamondlab-present .lm-TabBar-tabLabel "
                f"{{font-size: {PRESENT_FONT}px !important; line-height: 1.3 !important}}</style>")


def paper_note(view: str) -> widgets.HTML:
    """The line that opens tab ``view``: which part of paper 000 it illustrates, with a link to the paper.

    >>> "section 6" in paper_note("Stages").value
    True
    """
    return cited_note(PAPER_000, "Levchenko, Perepelkina, Zakirov, <i>Computation</i> 4(3):29, 2016",
                      "Paper 000", PAPER_SECTIONS[view])


def _figures(root):
    """The plotly figure widgets under ``root`` (depth first)."""
    import plotly.graph_objects as go

    stack = [root]
    while stack:
        w = stack.pop()
        if isinstance(w, go.FigureWidget):
            yield w
        stack.extend(getattr(w, "children", ()) or ())


class Lab(LabBase):
    """The whole lab; see the module contract.

    Parameters
    ----------
    equation : {"acoustic", "maxwell"}
        The equation of the lab: ``"maxwell"`` builds and returns a
        :class:`~diamondlab.widgets.maxwell_lab.MaxwellLab` (its keyword arguments, the same buttons and
        actions); checked before any widget is built.
    panels : tuple of str
        Which tabs to build (default all of :data:`TABS`).
    **config
        Initial controller values (``order``, ``size``, ``nt``, ``shape``,
        ``backend`` (default ``"auto"``: CUDA where there is a GPU and the
        engine runs the configuration, else the CPU), ``algorithm``, ``courant``, ``steps``; ``sources`` as
        ``(x, y, z, wavelet, frequency, amplitude)`` and ``receivers`` as
        ``(x, y, z)`` in grid cells, ``sponge``, ``initial``).
    paced : bool
        Pace runs for watching (the live view's "paced for watching" checkbox; see
        :func:`~diamondlab.widgets.live.watch_pace`).
    replace : bool
        Close the labs built before by the same cell (see the module contract).

    Examples
    --------
    >>> lab = Lab(equation="maxwell", shape=(24, 20, 20), pml=4, radius=3, backend="cpu", replace=False)
    >>> type(lab).__name__, lab.step() and lab.wait(60), lab.sim.time_step == lab.sim.nt
    ('MaxwellLab', True, True)
    >>> lab.close()
    >>> Lab(equation="elastic")
    Traceback (most recent call last):
    ...
    ValueError: equation must be one of ('acoustic', 'maxwell'); got 'elastic'
    >>> Lab(equation="maxwell", courant=0.3)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: courant is the acoustic lab's option only: Lab(equation='maxwell') takes (...)
    """

    def __new__(cls, *args, equation: str = "acoustic", **kwargs):
        if equation not in EQUATIONS:
            raise ValueError(f"equation must be one of {EQUATIONS}; got {equation!r}")
        if equation == "maxwell":  # not a Lab: Python does not call Lab.__init__ on it
            from diamondlab.widgets.maxwell_lab import MaxwellLab

            return MaxwellLab(*args, **kwargs)
        return super().__new__(cls)

    def __init__(self, panels=TABS, max_points: int = 96, paced: bool = True, replace: bool = True,
                 equation: str = "acoustic", **config):
        panels = check_lab_options("acoustic", panels, config)  # before any widget
        self._open(replace)
        config = {"shape": (64, 64, 64), "backend": "auto", **config}
        if "size" not in config or "nt" not in config:
            probe = RunConfig(**config)  # the defaults of the fields not given
            size, nt = default_tiling(probe.backend, probe.order, probe.shape, medium=probe.medium)
            config = {"size": size, "nt": nt, **config}
        cfg = RunConfig(**config)
        self.controls = Controls(cfg)
        self.measured: dict = {}
        plan = plan_config(cfg)
        if isinstance(plan, str) and cfg.backend != "cpu":
            on_cpu = plan_config(_replace(cfg, backend="cpu"))
            if not isinstance(on_cpu, str):
                # e.g. a configuration the GPU engine does not build (NO, DTS, nz): the CPU engine runs it
                cfg, note, plan = _replace(cfg, backend="cpu"), f"running on the CPU: {plan}", on_cpu
                self.controls.set(backend="cpu")
                self.controls.show_message(note, "info")
        if isinstance(plan, str):
            raise ValueError(plan)
        try:
            sim = build_simulation(cfg, plan)
        except Exception as err:  # noqa: BLE001 - a backend that fails: fall back to the CPU, say why
            if cfg.backend == "cpu":
                raise
            cfg = _replace(cfg, backend="cpu")
            self.controls.set(backend="cpu")
            sim = build_simulation(cfg)
            self.controls.show_message(f"backend {config.get('backend')!r} failed ({type(err).__name__}: "
                                       f"{err}); running on the CPU", "info")
        self.runner = BackgroundRun(sim)
        self._config = cfg
        self.live = LiveView(self.runner, max_points=max_points, measured=self.measured, paced=paced)
        self._auto_steps = None
        if "steps" not in config:  # a run a lecturer can watch: the wave crosses the box
            self._auto_steps = self.live.pace.steps
            self.controls.set(steps=self._auto_steps)
        c = self.controls
        views = {}
        self.shapes = self.explorer = self.tuning = self.snapshot = None
        if "Run" in panels:
            views["Run"] = [c.widget, self.live.widget]
        if "Shapes" in panels:
            self.shapes = ShapesPanel(cfg)
            views["Shapes"] = [self.shapes.widget]
        if "Stages" in panels:
            self.explorer = StageExplorer(cfg)
            views["Stages"] = [self.explorer.widget]
        if "Tuning" in panels:
            self.tuning = TuningPanel(c, runner=self.runner)
            views["Tuning"] = [self.tuning.widget]
        if "Snapshot" in panels:
            self.snapshot = SnapshotPanel(lambda: self.runner.sim, busy=lambda: self.runner.running)
            views["Snapshot"] = [self.snapshot.widget]
        c.on_change(self._changed)  # through the lab: a closed lab's panels are let go
        self.tabs = widgets.Tab(children=[widgets.VBox([paper_note(v), *ws]) for v, ws in views.items()],
                                titles=list(views))
        self.present = widgets.ToggleButton(description="present", icon="desktop",
                                            tooltip=f"large text and figures ({PRESENT_FONT} px) for a room")
        self.present.observe(lambda change: self.set_present(change["new"]), names="value")
        header = widgets.HBox([widgets.HTML("<h3 style='margin:4px 0'>diamondlab · the interactive lab</h3>"),
                               self.present], layout=widgets.Layout(justify_content="space-between"))
        self.widget = widgets.VBox([widgets.HTML(_PRESENT_CSS), header, self.tabs])
        self.widget.add_class("diamondlab-lab")
        self._opened()

    def set_present(self, on: bool = True) -> None:
        """Present mode: every text of the lab and every figure's font at :data:`PRESENT_FONT` px (the
        tabs already show one view at a time); ``False`` goes back.  The "present" button does this."""
        if on:
            self.widget.add_class("diamondlab-present")
        else:
            self.widget.remove_class("diamondlab-present")
        for figure in _figures(self.widget):
            figure.layout.font.size = PRESENT_FONT if on else None
        if self.present.value != on:
            self.present.value = on

    # ------------------------------------------------------------ actions
    def _prepare(self) -> bool:
        """Make the simulation match the controllers; False (with a message) if it cannot."""
        cfg = self.controls.config()
        plan = plan_config(cfg)
        if isinstance(plan, str):
            self.controls.show_message(plan)
            return False
        if cfg.sim_kwargs() != self._config.sim_kwargs():
            try:
                sim = build_simulation(cfg, plan)
            except Exception as err:  # noqa: BLE001 - shown in the widget
                self.controls.show_message(f"{type(err).__name__}: {err}")
                return False
            self.runner.replace(sim)
            self.live.attach(self.runner)
            if self._auto_steps is not None and self.controls.steps.value == self._auto_steps:
                self._auto_steps = self.live.pace.steps  # nobody chose a run length: follow the grid
                self.controls.steps.value = self._auto_steps
                cfg = _replace(cfg, steps=self._auto_steps)
        self._config = cfg
        return True

    PANELS = ("shapes", "explorer", "tuning", "snapshot")

    def close(self) -> None:
        """Stop the run, a tuning sweep and the worker thread, close every widget and let the simulation
        go (idempotent).  A closed lab refuses to run; build a new one."""
        super().close()
        self.measured.clear()  # the figures' data and the fields went with the panels

    def _changed(self, config, message: str) -> None:
        for panel in (self.shapes, self.explorer):
            if panel is not None:
                panel.update(config, message)
        if self.present.value:  # redrawn figures come with their own layouts
            self.set_present(True)
