"""The figure widget whose synced state is whole until a view answers (Run All drew empty axes before)."""

import plotly.graph_objects as go

from diamondlab.viz.figurewidget import FigureWidget


def _sent(fig):
    """The state a view drawn now reads: what the front end's model holds (the synced traits)."""
    return [t.get("y") for t in fig._widget_data], fig._widget_layout.get("title", {}).get("text")


def test_a_figure_built_empty_and_filled_at_once_syncs_its_whole_state():
    plain, ours = go.FigureWidget(), FigureWidget()
    for fig in (plain, ours):
        with fig.batch_update():
            fig.add_scatter(y=[1, 2, 3])
            fig.layout.title.text = "conoids"
        fig.data[0].y = [4, 5, 6]  # the next cell changes it before its view exists
    assert _sent(plain) == ([], None)  # plotly's: only deltas, lost where the front end is not loaded
    assert _sent(ours) == ([[4, 5, 6]], "conoids")
    with ours.batch_update():  # the trace count changes (what _replace_figure does)
        ours.data = []
        ours.add_scatter(y=[7])
        ours.add_scatter(y=[8, 9])
    assert _sent(ours)[0] == [[7], [8, 9]]


def test_once_a_view_answers_only_deltas_travel():
    fig = FigureWidget(go.Figure(go.Scatter(y=[1, 2])))
    sent = []
    fig.observe(lambda change: change["new"] is not None and sent.append((change["name"], change["new"])),
                names=["_widget_data", "_py2js_restyle", "_py2js_deleteTraces", "_py2js_addTraces"])
    fig.data[0].y = [3, 4]
    assert "_widget_data" in [name for name, _ in sent] and not fig.answered
    sent.clear()
    fig._js2py_layoutDelta = {"layout_delta": {}, "layout_edit_id": 0}  # a view drew it and reported
    assert fig.answered
    # whatever it drew while the state was arriving, the view is sent the figure once more, as deltas
    assert [name for name, _ in sent] == ["_py2js_deleteTraces", "_py2js_addTraces"]
    assert sent[1][1]["trace_data"][0]["y"] == [3, 4]
    fig._js2py_layoutDelta = {"layout_delta": {}, "layout_edit_id": 0}  # a later answer: nothing again
    assert len(sent) == 2
    sent.clear()
    fig.data[0].y = [5, 6]  # drawn and answered: only the delta travels
    names = [name for name, _ in sent]
    assert "_py2js_restyle" in names and "_widget_data" not in names
