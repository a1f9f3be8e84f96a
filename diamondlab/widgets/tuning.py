"""Tuning panel: measure DTS x Nt (x NO) on the current backend and grid, against the model.

Contract
--------
:class:`TuningPanel` runs :func:`diamondlab.engine.measure.bench.tuning_sweep` in a
background thread (the notebook stays responsive; a Stop button ends it
after the configuration in progress), logs each measurement, and draws
:func:`diamondlab.viz.perf.tuning_figure` (measured solid, model dashed,
stepwise dotted, best measured starred) in a ``FigureWidget``, a new one for
each result (a view drawn in a hidden tab applies no later change).  "Use best"
puts the best (NO, DTS, Nt) into the controllers.  Lists that cannot be
parsed, or an empty result, are shown as a message, never a traceback.
The panel refuses to start while the lab's run is running (both would
share the same cores and the numbers would be wrong).

``equation="maxwell"`` (with the Maxwell controllers,
:class:`~diamondlab.widgets.maxwell_controls.MaxwellControls`) measures Maxwell
runs of the Yee orders in G Yee cell updates/s against
:func:`~diamondlab.engine.measure.perfmodel.predicted_yee_rate` (bytes per
Yee update from the staggered tile's geometry; a model on the GPU only).
"""

from __future__ import annotations

import threading

import ipywidgets as widgets

from diamondlab.engine.measure.bench import best, tuning_sweep
from diamondlab.engine.measure.perfmodel import predicted_rate, predicted_yee_rate
from diamondlab.engine.measure.timing import MIN_REPEATS, MIN_SECONDS
from diamondlab.viz.figurewidget import FigureWidget
from diamondlab.viz.perf import tuning_figure

__all__ = ["TuningPanel", "parse_ints"]


def parse_ints(text: str, name: str) -> tuple[int, ...]:
    """``"1, 2 4"`` -> ``(1, 2, 4)``; ``ValueError`` naming ``name`` otherwise.

    >>> parse_ints("4, 8 16", "Nt")
    (4, 8, 16)
    """
    parts = text.replace(",", " ").split()
    try:
        values = tuple(int(p) for p in parts)
    except ValueError:
        raise ValueError(f"{name}: give whole numbers separated by commas; got {text!r}") from None
    if not values or min(values) < 1:
        raise ValueError(f"{name}: give at least one whole number >= 1; got {text!r}")
    return values


class TuningPanel:
    """See the module contract.

    Parameters
    ----------
    controls : Controls
        Where the grid, backend and NO come from and where "Use best" writes.
    runner : BackgroundRun, optional
        Whose worker thread runs the measurements (so that every kernel call
        of the lab comes from one thread); a private one when omitted.
    equation : {"acoustic", "maxwell"}
        The equation measured (its controllers' grid, backend and order).
    """

    def __init__(self, controls, runner=None, equation: str = "acoustic"):
        from diamondlab.engine.equations import EQUATIONS

        if equation not in EQUATIONS:
            raise ValueError(f"equation must be one of {EQUATIONS}; got {equation!r}")
        self.equation = equation
        self.controls = controls
        if runner is None:
            from diamondlab.widgets.runner import BackgroundRun

            runner = BackgroundRun(None)
        self.runner = runner
        cfg = controls.config()
        style = {"description_width": "90px"}
        self.orders = widgets.Text(value=str(cfg.order), description="NO", style=style)
        self.sizes = widgets.Text(value="1, 2, 4", description="DTS", style=style)
        self.nts = widgets.Text(value="4, 8, 16, 32", description="Nt", style=style)
        self.repeats = widgets.BoundedIntText(value=MIN_REPEATS, min=1, max=20, description="repeats",
                                              style=style)
        self.start = widgets.Button(description="Measure", icon="tachometer", button_style="info")
        self.stop_button = widgets.Button(description="Stop", icon="stop")
        self.use_best = widgets.Button(description="Use best", icon="check", disabled=True)
        self.log = widgets.HTML()
        self.figure = FigureWidget(tuning_figure([], title="press Measure", equation=equation))
        self.rows = []
        self._lines: list[str] = []
        self.future = None
        self._stop = threading.Event()
        self.start.on_click(lambda _: self.measure())
        self.stop_button.on_click(lambda _: self._stop.set())
        self.use_best.on_click(lambda _: self.apply_best())
        self.widget = widgets.VBox([
            widgets.HTML(("Measures DiamondTorre for every (NO, DTS, Nt) below and stepwise once per NO on "
                          if equation == "acoustic" else "Measures Maxwell's DiamondTorre for every (Yee "
                          "order NO, DTS, Nt) below and stepwise once per NO, in Yee cell updates, on ") +
                         "the controllers' grid and backend: the median of runs repeated until they last "
                         f"{MIN_SECONDS:g} s and number at least <i>repeats</i>, after a warm-up; the figure "
                         "says where a point is not steady (a wide spread, a busy machine)."),
            widgets.HBox([widgets.VBox([self.orders, self.sizes, self.nts, self.repeats]),
                          widgets.VBox([self.start, self.stop_button, self.use_best])]),
            self.log, self.figure,
        ])
        self.widget.add_class("diamondlab-tuning")

    def measure(self, wait: bool = False) -> bool:
        """Start the sweep in the run's worker thread (``wait``: block until it is done); False if refused."""
        if self.runner.running:
            self._say("pause the run first: tuning needs the whole machine", error=True)
            return False
        try:
            orders = parse_ints(self.orders.value, "NO")
            sizes = parse_ints(self.sizes.value, "DTS")
            nts = parse_ints(self.nts.value, "Nt")
        except ValueError as err:
            self._say(str(err), error=True)
            return False
        cfg = self.controls.config()
        self._stop.clear()
        self.rows, self._lines = [], []
        self.future = self.runner.submit(self._work, cfg, orders, sizes, nts)
        if self.future is None:
            self._say("the worker is busy: pause the run first", error=True)
            return False
        if wait:
            self.future.result()
        return True

    def _work(self, cfg, orders, sizes, nts) -> None:
        self.start.disabled = True
        try:
            self._progress(f"measuring on {cfg.backend}, grid {cfg.shape} ...")
            model = predicted_yee_rate if self.equation == "maxwell" else predicted_rate
            self.rows = tuning_sweep(cfg.shape, orders, sizes, nts, backend=cfg.backend,
                                     repeats=int(self.repeats.value), progress=self._progress,
                                     stop=self._stop.is_set, equation=self.equation,
                                     model=model)
            if not self.rows:
                self._say("nothing could be measured with these values", error=True)
                return
            fig = tuning_figure(self.rows, equation=self.equation)
            self._show(fig)
            top = best(self.rows)
            self.use_best.disabled = top is None
            self._progress(f"<b>{fig.layout.title.text}</b>")
        except Exception as err:  # noqa: BLE001 - shown in the panel
            self._say(f"{type(err).__name__}: {err}", error=True)
        finally:
            self.start.disabled = False

    def _show(self, fig) -> None:
        """Put ``fig`` in the panel as a new figure widget, whose view draws it whole.

        The figure is not changed in place: in JupyterLab the view of the "press Measure" figure, drawn
        while the lab's Tuning tab was hidden, applied none of the changes sent to it (Python's figure held
        the measurement, the page kept the empty axes); a new widget's view draws the state it is created
        with.
        """
        old, self.figure = self.figure, FigureWidget(fig)
        self.widget.children = (*self.widget.children[:-1], self.figure)
        old.close()

    def _progress(self, text: str) -> None:
        self._lines.append(text)
        self.log.value = "<br>".join(self._lines[-12:])

    def _say(self, text: str, error: bool = False) -> None:
        colour = "#c0392b" if error else "#1f618d"
        self.log.value = f"<span style='color:{colour}'>{text}</span>"

    def apply_best(self) -> None:
        """Put the best measured (NO, DTS, Nt) into the controllers."""
        top = best(self.rows)
        if top is not None:
            self.controls.set(order=top.order, size=top.size, nt=top.nt, algorithm="diamondtorre")
