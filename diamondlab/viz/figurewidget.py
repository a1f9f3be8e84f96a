"""A plotly ``FigureWidget`` that shows what it holds whatever order the notebook's cells run in.

Contract
--------
Plotly's ``FigureWidget`` syncs its whole state (``_widget_data``,
``_widget_layout``) when it is built or displayed by itself; every later
change travels as a delta message (add traces, restyle, relayout) that the
front end's plotly code applies.  That code is loaded asynchronously
(anywidget imports a 5 MB module) when the figure's model is created: a
delta that arrives before it has loaded changes nothing, and the view then
draws the figure's first state.  This is what "Run All" does to a figure
built empty in a box and filled at once, or changed by the next cell before
its view exists (notebook 01's "Try it" conoids were empty axes).

:class:`FigureWidget` sends, after every delta, the whole state as well,
until a view of it has answered (plotly's views report their layout and
traces back after drawing): from then on the front end's code is loaded
and keeps the state current itself, so only the deltas travel.  A figure
never drawn (a test, a script, a tab never opened) pays one copy of its
state per change.

A view that renders while its model's state is still arriving draws what
the model held then, and a delta that reaches it before it has finished
drawing is lost too (notebook 01's "Try it" conoids, again empty axes).  So
when a view first answers, the figure sends itself once more as deltas
(its traces replaced, its layout set): the view applies them, whatever it
drew first.
"""

from __future__ import annotations

from copy import deepcopy

import plotly.graph_objects as go

__all__ = ["FigureWidget"]

#: The messages a view sends back once it has drawn (its layout, its traces): the front end is loaded.
ANSWERS = ("_js2py_layoutDelta", "_js2py_traceDeltas")


class FigureWidget(go.FigureWidget):
    """``plotly.graph_objects.FigureWidget`` whose synced state stays whole until a view answers.

    Examples
    --------
    >>> fig = FigureWidget()
    >>> _ = fig.add_scatter(x=[0, 1], y=[1, 2])
    >>> fig.layout.title.text = "filled after it was built"
    >>> fig.answered, [t["x"] for t in fig._widget_data], fig._widget_layout["title"]["text"]
    (False, [[0, 1]], 'filled after it was built')
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._answered = False
        self.observe(self._on_answer, names=list(ANSWERS))

    @property
    def answered(self) -> bool:
        """Whether a view has reported back (the front end applies deltas itself from then on)."""
        return self._answered

    def _on_answer(self, change) -> None:
        if change["new"] is not None and not self._answered:
            self._answered = True
            self._resend()

    def _resend(self) -> None:
        """Send the whole figure again as deltas to the view that has just answered.

        A view draws the state its model holds when it renders; a delta that
        arrives while it is still drawing is lost, and the whole state that
        follows does not redraw it.  Its first answer comes once it has drawn:
        from then on it applies deltas, so the traces and the layout sent now
        make it show what the figure holds (once per figure).
        """
        if self._data:
            super()._send_deleteTraces_msg(list(range(len(self._data))))
            super()._send_addTraces_msg(deepcopy(self._data))
        super()._send_relayout_msg(deepcopy(self._layout_obj._props))

    def _sync_state(self) -> None:
        """Send the whole state (what a view that is drawn next reads) while no view has answered."""
        if not getattr(self, "_answered", True):  # False from __init__ on; before it, plotly builds the state
            self._widget_layout = deepcopy(self._layout_obj._props)
            self._widget_data = deepcopy(self._data)

    def _send_addTraces_msg(self, new_traces_data):
        super()._send_addTraces_msg(new_traces_data)
        self._sync_state()

    def _send_deleteTraces_msg(self, delete_inds):
        super()._send_deleteTraces_msg(delete_inds)
        self._sync_state()

    def _send_moveTraces_msg(self, current_inds, new_inds):
        super()._send_moveTraces_msg(current_inds, new_inds)
        self._sync_state()

    def _send_restyle_msg(self, restyle_data, trace_indexes=None, source_view_id=None):
        super()._send_restyle_msg(restyle_data, trace_indexes, source_view_id)
        self._sync_state()

    def _send_relayout_msg(self, layout_data, source_view_id=None):
        super()._send_relayout_msg(layout_data, source_view_id)
        self._sync_state()

    def _send_update_msg(self, restyle_data, relayout_data, trace_indexes=None, source_view_id=None):
        super()._send_update_msg(restyle_data, relayout_data, trace_indexes, source_view_id)
        self._sync_state()
