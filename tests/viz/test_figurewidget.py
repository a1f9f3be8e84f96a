"""The figure widget that sends its whole state until a view answers (Run All drew empty axes before)."""

import plotly.graph_objects as go

from diamondlab.viz.figurewidget import FigureWidget

DELTAS = ["_py2js_addTraces", "_py2js_deleteTraces", "_py2js_restyle", "_py2js_relayout", "_py2js_update"]


def _sent(fig):
    """The state a view drawn now reads: what the front end's model holds (the synced traits)."""
    return [t.get("y") for t in fig._widget_data], fig._widget_layout.get("title", {}).get("text")


def _watch(fig) -> list:
    sent = []
    fig.observe(lambda change: change["new"] is not None and sent.append((change["name"], change["new"])),
                names=["_widget_data", *DELTAS])
    return sent


def test_a_figure_built_empty_and_filled_at_once_syncs_its_whole_state_and_no_delta():
    plain, ours = go.FigureWidget(), FigureWidget()
    sent = _watch(ours)
    for fig in (plain, ours):
        with fig.batch_update():
            fig.add_scatter(y=[1, 2, 3])
            fig.layout.title.text = "conoids"
        fig.data[0].y = [4, 5, 6]  # the next cell changes it before its view exists
    assert _sent(plain) == ([], None)  # plotly's: only deltas, lost where the front end is not loaded
    assert _sent(ours) == ([[4, 5, 6]], "conoids")
    assert {name for name, _ in sent} == {"_widget_data"}  # no delta can reach a view still drawing
    with ours.batch_update():  # the trace count changes (what _replace_figure does)
        ours.data = []
        ours.add_scatter(y=[7])
        ours.add_scatter(y=[8, 9])
    assert _sent(ours)[0] == [[7], [8, 9]]


def test_the_first_answer_brings_a_view_that_drew_an_earlier_state_up_to_date():
    fig = FigureWidget(go.Figure(go.Scatter(y=[1, 2])))
    first = fig._last_trace_edit_id  # the state a view rendering now reads: one trace
    with fig.batch_update():
        fig.data[0].y = [3, 4]
        fig.add_scatter(y=[5])
    sent = _watch(fig)
    fig._js2py_traceDeltas = {"trace_deltas": [{}], "trace_edit_id": first}  # it drew the first state
    assert fig.answered
    names = [name for name, _ in sent]
    assert names == ["_py2js_deleteTraces", "_py2js_addTraces", "_py2js_relayout"]
    assert sent[0][1]["delete_inds"] == [0] and [t["y"] for t in sent[1][1]["trace_data"]] == [[3, 4], [5]]
    sent.clear()
    fig.data[0].y = [6, 7]  # drawn and answered: only the delta travels
    names = [name for name, _ in sent]
    assert "_py2js_restyle" in names and "_widget_data" not in names


def test_a_view_that_drew_the_latest_state_is_sent_nothing_more():
    fig = FigureWidget(go.Figure(go.Scatter(y=[1, 2])))
    fig.data[0].y = [3, 4]
    sent = _watch(fig)
    latest = fig._last_trace_edit_id
    fig._js2py_traceDeltas = {"trace_deltas": [{"uid": fig.data[0].uid}], "trace_edit_id": latest}
    assert fig.answered and sent == []
