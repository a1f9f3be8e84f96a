"""A plotly ``FigureWidget`` that shows what it holds whatever order the notebook's cells run in.

Contract
--------
Plotly's ``FigureWidget`` syncs its whole state (``_widget_data``,
``_widget_layout``) when it is built or displayed by itself; every later
change travels as a delta message (add traces, restyle, relayout) that the
front end's plotly code applies.  That code is loaded asynchronously
(plotly's 5 MB module) after the figure's model is created: a delta that
arrives before it has loaded changes nothing, and the view then draws the
figure's first state.  This is what "Run All" does to a figure
built empty in a box and filled at once, or changed by the next cell before
its view exists (notebook 01's "Try it" conoids were empty axes).

:class:`FigureWidget` therefore sends no delta until a view of it has
answered (plotly's views report their traces back once they have drawn):
each change sends the whole state instead, with a new edit id.  A view that
renders reads that state; a delta that reached a view still drawing was
lost, and could leave it empty (notebook 01's "Try it" conoids).  The
first answer says which state the view drew; if the figure has changed
since, it is sent once more as deltas (that state's traces replaced, the
layout set), which the view, drawn by then, applies.  From then on the
front end's code is loaded and keeps the state current itself: only deltas
travel.  A figure never drawn (a test, a script, a tab never opened) pays
one copy of its state per change.

The figure's first state travels in the message that creates its model
(``comm_open``).  Plotly's own constructor opens the comm before it sets
``_widget_data`` and ``_widget_layout``: the model is created empty and
the figure follows in an update, both under edit id 0.  anywidget holds a
model's messages until its module has loaded (plotly's 5 MB one, before
the shim below), and a view waiting for that module drew at once when it
had (in the same call), before the held update was applied: under Run All
on a busy machine the view drew no traces and answered "edit id 0", the id
of the full state, so nothing was sent again (notebook 01's "Try it"
conoids, empty in about half of the runs).  :class:`FigureWidget`
therefore opens its comm only once the figure is set, so edit id 0 names
one state, the full one, wherever a view reads it.

A figure's anywidget module (``_esm``) is a shim of about 4 kB
(:data:`~diamondlab.viz.plotly_module.SHIM`), not plotly's 5 MB module:
anywidget gives a model 2 s to import its module and run its
``initialize`` before it gives up on the model for good (the model takes
no message again, the figure stays as it was created, and the page's
console says "[anywidget] Failed to initialize model."), and on a loaded
machine plotly's module, imported once a figure, missed it.  The shim's
``initialize`` returns at once; plotly's module is imported once a page,
from the one :class:`~diamondlab.viz.plotly_module.PlotlyModule` of the
kernel, and shared by every figure.  Once it has loaded, plotly
initializes the figure's model, and the figure's views, which wait for
that, draw, one at a time and never while an announced figure's model
initializes: :meth:`FigureWidget.open` announces the figure (its
``_figure_key``) through the ``PlotlyModule`` before it opens its comm
(see :mod:`diamondlab.viz.plotly_module`).  No delta can be lost while
plotly's module loads: none is sent before a view answers (above).

A figure changed from a worker thread (the lab's live view, after each
sweep) must not change while the kernel's thread takes a message from its
view: ipywidgets takes it under traitlets' ``hold_trait_notifications``,
which replaces the figure's ``notify_change`` by one that caches changes
and merges those of one trait, on the instance, so for every thread.
Plotly sends a change by setting a trait to the message and at once to
``None``; caught in that window, the two merge into ``None`` and the
change never reaches the view (the receivers' traces of notebook 03 stayed
empty after "Run again", in two CI runs of five). :data:`FIGURES_LOCK` is
held by :meth:`FigureWidget.set_state` (the kernel's thread) and around
every change a figure sends and every :meth:`FigureWidget.batch_update`
(any thread), so the two never overlap.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from copy import deepcopy

import plotly.graph_objects as go
import traitlets

from diamondlab.viz.plotly_module import SHIM, announce_figure

__all__ = ["FIGURES_LOCK", "FigureWidget"]

#: Held while a figure takes a message from the front end and while a figure changes and sends its
#: change (see the module's contract, last paragraph): one lock for every figure, re-entrant.
FIGURES_LOCK = threading.RLock()

#: The messages a view sends back once it has drawn (its layout, its traces): the front end is loaded.
ANSWERS = ("_js2py_layoutDelta", "_js2py_traceDeltas")

#: What a figure sends whole, in one message, at each change before a view has answered.
WHOLE_STATE = ("_last_trace_edit_id", "_last_layout_edit_id", "_widget_layout", "_widget_data")


class FigureWidget(go.FigureWidget):
    """``plotly.graph_objects.FigureWidget`` that sends its whole state, never a delta, until a view answers.

    Examples
    --------
    >>> fig = FigureWidget()
    >>> _ = fig.add_scatter(x=[0, 1], y=[1, 2])
    >>> fig.layout.title.text = "filled after it was built"
    >>> fig.answered, [t["x"] for t in fig._widget_data], fig._widget_layout["title"]["text"]
    (False, [[0, 1]], 'filled after it was built')
    >>> fig._esm == SHIM  # plotly's module comes once a page (see the module's contract)
    True
    """

    _esm = SHIM
    #: The figure's name in the page, announced before its model is created (see the module's contract).
    _figure_key = traitlets.Unicode().tag(sync=True)

    #: Whether ``open`` waits (plotly's constructor, which sets the figure after the widget opens its comm).
    _opening_later = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._answered = False
        self._traces_of = {self._last_trace_edit_id: len(self._data)}  # state sent -> its trace count
        self.observe(self._on_answer, names=list(ANSWERS))
        self._opening_later = False
        self.open()  # the model is created holding the figure (see the module's contract)

    def set_state(self, sync_data):
        """A message from the front end, taken while no thread changes a figure (:data:`FIGURES_LOCK`)."""
        with FIGURES_LOCK:
            super().set_state(sync_data)

    @contextmanager
    def batch_update(self):
        """Plotly's ``batch_update``, holding :data:`FIGURES_LOCK` (its changes are sent as it exits)."""
        with FIGURES_LOCK, super().batch_update():
            yield

    def open(self) -> None:
        """Open the comm to the front end, once the constructor has set the figure's state, and once the
        page knows the figure comes (:func:`~diamondlab.viz.plotly_module.announce_figure`)."""
        if not self._opening_later:
            self._figure_key = self._model_id = announce_figure()  # its name in the page: its model's id
            super().open()

    @property
    def answered(self) -> bool:
        """Whether a view has reported back (the front end applies deltas itself from then on)."""
        return self._answered

    def _on_answer(self, change) -> None:
        if change["new"] is None or self._answered:
            return
        self._answered = True
        drawn = change["new"].get("trace_edit_id", change["new"].get("layout_edit_id"))
        if drawn != self._last_trace_edit_id:  # the view drew an earlier state: send it this one
            self._resend(self._traces_of.get(drawn, 0))
        self._traces_of = {}

    def _resend(self, drawn: int) -> None:
        """Replace the ``drawn`` traces of the view that has just answered, and set its layout."""
        if drawn:
            super()._send_deleteTraces_msg(list(range(drawn)))
        if self._data:
            super()._send_addTraces_msg(deepcopy(self._data))
        super()._send_relayout_msg(deepcopy(self._layout_obj._props))

    def _sync_state(self) -> bool:
        """Before a view has answered: send the whole state instead of a delta (True); else False."""
        if getattr(self, "_answered", True):  # answered, or plotly building the figure in __init__
            return False
        with self.hold_sync():  # one message: a view reads the state and its edit id together
            self._last_trace_edit_id += 1
            self._last_layout_edit_id += 1
            self._widget_layout = deepcopy(self._layout_obj._props)
            self._widget_data = deepcopy(self._data)
            self._states_to_send.update(WHOLE_STATE)  # the part unchanged too: the message holds it all
        self._traces_of[self._last_trace_edit_id] = len(self._data)
        return True

    def _send_addTraces_msg(self, new_traces_data):
        with FIGURES_LOCK:
            if not self._sync_state():
                super()._send_addTraces_msg(new_traces_data)

    def _send_deleteTraces_msg(self, delete_inds):
        with FIGURES_LOCK:
            if not self._sync_state():
                super()._send_deleteTraces_msg(delete_inds)

    def _send_moveTraces_msg(self, current_inds, new_inds):
        with FIGURES_LOCK:
            if not self._sync_state():
                super()._send_moveTraces_msg(current_inds, new_inds)

    def _send_restyle_msg(self, restyle_data, trace_indexes=None, source_view_id=None):
        with FIGURES_LOCK:
            if not self._sync_state():
                super()._send_restyle_msg(restyle_data, trace_indexes, source_view_id)

    def _send_relayout_msg(self, layout_data, source_view_id=None):
        with FIGURES_LOCK:
            if not self._sync_state():
                super()._send_relayout_msg(layout_data, source_view_id)

    def _send_update_msg(self, restyle_data, relayout_data, trace_indexes=None, source_view_id=None):
        with FIGURES_LOCK:
            if not self._sync_state():
                super()._send_update_msg(restyle_data, relayout_data, trace_indexes, source_view_id)
