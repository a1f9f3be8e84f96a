"""Plotly's front-end module, sent to the browser once a kernel instead of once a figure.

Contract
--------
anywidget (0.11) gives a model 2 s, wall time, from its creation to the
end of its module's ``initialize`` (``AbortSignal.timeout(2000)`` in its
lab extension's ``Runtime``), then rejects the model's ``ready``, which
every later message of the model awaits: the model takes no message again,
its figure stays as it was created, and the page's console says
"[anywidget] Failed to initialize model.".  Plotly's ``FigureWidget`` has
plotly's 5 MB bundle as its module (``_esm``), imported from a blob of its
own for every figure: evaluating it is one task of about 1.8 s on an idle
machine (headless Chromium), near 3 s on a loaded one, inside the figure's
2 s; and any task that long (plotly's first draw takes as long, a 3D
figure's about 1 s) that starts while another figure's model initializes
takes that model's 2 s too.

:data:`SHIM` (``plotly_shim.js``, about 4 kB) is the module of
:class:`~diamondlab.viz.figurewidget.FigureWidget` and of
:class:`PlotlyModule`; it keeps its state in the page, at
``globalThis[Symbol.for("diamondlab.plotly")]`` (:data:`GLOBAL_KEY`).

- A model's ``initialize`` returns at once.  A figure's then waits, in
  the background, for plotly's module and calls that module's
  ``initialize`` with the figure's model; its ``render`` awaits that and
  calls the module's ``render``.
- Where anywidget gives up on a figure's model all the same (a long task
  of the page, not plotly's, took its 2 s), the shim hands the model's
  comm messages to ipywidgets' own handler, which applies them without
  anywidget's ``ready``: the figure still takes every change the kernel
  sends (``test_a_figure_anywidget_gave_up_on_still_takes_its_changes``).
- The first :class:`PlotlyModule` model of the page gives the page
  plotly's module (its ``_plotly_source``, :func:`plotly_source`): the
  module is fetched and parsed (``modulepreload`` of a blob), then
  imported once, and shared by every figure.
- Plotly's long tasks (that import, each draw) run one at a time, each in
  a task of its own, and only while no figure's model initializes: before
  a figure opens its comm, :func:`announce_figure` sets the
  :class:`PlotlyModule`'s ``_figure_opening`` to the figure's
  ``_figure_key``, a message that reaches the page before the figure's
  model is created; the figure's ``initialize`` ends its wait, as do 3 s
  (anywidget has decided by then).  No model can be created during a long
  task (the page runs one task at a time), so none straddles one.

One :class:`PlotlyModule` is open per kernel (:func:`plotly_module`): its
model is created in every front end that the kernel's widgets reach, as a
figure's is; a page reloaded, or a second page on the kernel, gets it
again with the figures' models (JupyterLab restores every live model of
the kernel; figures restored so were not announced, and do not hold
plotly's long tasks back).  It has no view.  Without a front end (a test,
a script, ``jupyter nbconvert --execute``) its comm goes nowhere, as a
figure's does.
"""

from __future__ import annotations

import threading
import uuid
from pathlib import Path

import anywidget
import plotly.graph_objects as go
import traitlets

__all__ = ["GLOBAL_KEY", "SHIM", "PlotlyModule", "announce_figure", "plotly_module", "plotly_source"]

#: The module of every figure and of the :class:`PlotlyModule` (see the module's contract).
SHIM = (Path(__file__).with_name("plotly_shim.js")).read_text()

#: The name of the page's plotly state (``Symbol.for`` of it, on ``globalThis``).
GLOBAL_KEY = "diamondlab.plotly"

_lock = threading.RLock()  # one PlotlyModule; announcements one at a time (from any thread)
_opened: PlotlyModule | None = None


def plotly_source() -> str:
    """Plotly's front-end module: the ``_esm`` of plotly's own ``FigureWidget`` (its ``widgetbundle.js``).

    Examples
    --------
    >>> len(plotly_source()) > 1_000_000
    True
    """
    return str(go.FigureWidget._esm)


class PlotlyModule(anywidget.AnyWidget):
    """The model that brings plotly's front-end module to the page and announces figures (see the
    module's contract).

    Examples
    --------
    >>> loader = PlotlyModule()
    >>> loader._plotly_source == plotly_source(), loader._esm == SHIM
    (True, True)
    """

    _esm = SHIM
    #: Plotly's front-end module.
    _plotly_source = traitlets.Unicode().tag(sync=True)
    #: The ``_figure_key`` of the figure whose model the kernel creates next.
    _figure_opening = traitlets.Unicode().tag(sync=True)

    def __init__(self, **kwargs):
        super().__init__(_plotly_source=plotly_source(), **kwargs)


def plotly_module() -> PlotlyModule:
    """The kernel's open :class:`PlotlyModule`, made (and its comm opened) where none is open.

    Examples
    --------
    >>> plotly_module() is plotly_module()
    True
    """
    global _opened
    with _lock:
        if _opened is None or _opened.comm is None:  # the first, or closed (Widget.close_all)
            _opened = PlotlyModule()
        return _opened


def announce_figure() -> str:
    """Tell the page that a figure's model comes next: a new key, for the figure's ``_figure_key``.

    Examples
    --------
    >>> key = announce_figure()
    >>> plotly_module()._figure_opening == key != announce_figure()
    True
    """
    key = uuid.uuid4().hex
    with _lock:
        plotly_module()._figure_opening = key
    return key
