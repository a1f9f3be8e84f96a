"""The figure widget that sends its whole state until a view answers (Run All drew empty axes before)."""

import comm
import plotly.graph_objects as go
import pytest
from comm.base_comm import BaseComm

from diamondlab.viz.figurewidget import WHOLE_STATE, FigureWidget
from diamondlab.viz.plotly_module import GLOBAL_KEY, SHIM, PlotlyModule, plotly_module, plotly_source

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


@pytest.fixture
def published(monkeypatch) -> list:
    """Every message the widgets built in the test send to the front end: ``(comm id, kind, state)``."""
    messages = []

    class Recorder(BaseComm):
        def publish_msg(self, msg_type, data=None, metadata=None, buffers=None, **keys):
            messages.append((self.comm_id, msg_type, (data or {}).get("state", {})))

    monkeypatch.setattr(comm, "create_comm", lambda **kw: Recorder(**kw))
    return messages


def _of(fig, messages) -> list:
    """``fig``'s messages among ``messages`` (the fixture's): ``(kind, state)``."""
    return [(kind, state) for comm_id, kind, state in messages if comm_id == fig.comm.comm_id]


def test_the_model_is_created_holding_the_figure(published):
    """The comm_open message carries the traces under edit id 0: a view drawn before a later update is
    applied (anywidget holds them until its module loads) draws the figure, not empty axes."""
    fig = FigureWidget(go.Figure(go.Scatter(y=[1, 2]), layout={"title": {"text": "conoids"}}))
    messages = _of(fig, published)
    kind, state = messages[0]
    assert kind == "comm_open" and state["_last_trace_edit_id"] == 0
    assert [t["y"] for t in state["_widget_data"]] == [[1, 2]]
    assert state["_widget_layout"]["title"]["text"] == "conoids"
    assert all("_widget_data" not in s for _, s in messages[1:])  # no second version of edit id 0
    assert fig.comm is not None and len([k for k, _ in messages if k == "comm_open"]) == 1
    plain = go.FigureWidget(go.Figure(go.Scatter(y=[1, 2])))  # plotly's own: created empty, filled later
    kind, state = _of(plain, published)[0]
    assert kind == "comm_open" and state["_widget_data"] == []


def test_a_figure_s_module_is_a_small_shim_that_shares_plotly_s_module_through_the_page():
    """Plotly's 5 MB module imported per figure missed anywidget's 2 s window for a model to initialize on
    a loaded machine (the figure then froze): a figure sends a shim that waits for the page's one."""
    fig = FigureWidget(go.Figure(go.Scatter(y=[1, 2])))
    assert fig._esm == SHIM and len(fig._esm.encode()) < 10_000
    assert len(plotly_source()) > 1_000_000 and plotly_source() not in fig.get_state().values()
    assert f'Symbol.for("{GLOBAL_KEY}")' in SHIM  # the page's plotly module, shared by every figure
    names = PlotlyModule.class_trait_names(sync=True) + FigureWidget.class_trait_names(sync=True)
    assert all(n in SHIM and n in names for n in ("_plotly_source", "_figure_opening", "_figure_key"))
    assert fig._esm != go.FigureWidget()._esm


def test_the_kernel_opens_one_plotly_module_before_its_first_figure_and_again_once_closed(published):
    """The model that brings plotly's module to the page is created in the front end before the figure's
    model, holds plotly's module, and is opened once a kernel (anew where it was closed)."""
    plotly_module().close()  # as Widget.close_all() does: the next figure opens a new one
    published.clear()
    first, second = FigureWidget(), FigureWidget()
    loader = plotly_module()
    opened = [comm_id for comm_id, kind, _ in published if kind == "comm_open"]
    assert opened.index(loader.comm.comm_id) < opened.index(first.comm.comm_id)
    loaders = [s for _, kind, s in published if kind == "comm_open" and "_plotly_source" in s]
    assert len(loaders) == 1 and loaders[0]["_plotly_source"] == plotly_source()
    assert loaders[0]["_esm"] == SHIM and second.comm is not None
    loader.close()
    FigureWidget()
    assert plotly_module() is not loader and plotly_module().comm is not None
    assert len([s for _, kind, s in published if kind == "comm_open" and "_plotly_source" in s]) == 2


def test_the_page_is_told_of_a_figure_before_its_model_comes(published):
    """The kernel's PlotlyModule says which figure's model comes next (the page holds plotly's long tasks
    back until that model has initialized) before the figure opens its comm."""
    plotly_module().close()  # its successor's messages are recorded
    figures = [FigureWidget(), FigureWidget(go.Figure(go.Scatter(y=[1])))]
    loader = plotly_module()
    keys = [fig._figure_key for fig in figures]
    assert len(set(keys)) == 2 and all(len(key) == 32 for key in keys)
    for fig in figures:
        told = [i for i, (comm_id, kind, state) in enumerate(published) if comm_id == loader.comm.comm_id
                and kind == "comm_msg" and state.get("_figure_opening") == fig._figure_key]
        opened = [i for i, (comm_id, kind, state) in enumerate(published)
                  if comm_id == fig.comm.comm_id and kind == "comm_open"]
        assert len(told) == 1 and len(opened) == 1 and told[0] < opened[0], published
        assert published[opened[0]][2]["_figure_key"] == fig._figure_key


def test_a_change_from_a_worker_thread_reaches_the_view_while_the_kernel_takes_a_message(monkeypatch):
    """The kernel's thread takes a view's message under traitlets' hold_trait_notifications, which caches
    and merges every thread's changes to the figure: plotly's change (its message, then None) merged into
    None and never reached the view (notebook 03's receivers stayed empty after Run again).  The worker's
    change now waits for the message to be taken, then travels whole."""
    import threading
    import time

    messages = []

    class Recorder(BaseComm):
        def publish_msg(self, msg_type, data=None, metadata=None, buffers=None, **keys):
            messages.append((msg_type, (data or {}).get("state", {})))

    monkeypatch.setattr(comm, "create_comm", lambda **kw: Recorder(**kw))
    fig = FigureWidget(go.Figure(go.Scatter(x=[], y=[])))
    drawn = fig._last_trace_edit_id  # a view has drawn it and answered: changes travel as deltas
    fig._js2py_traceDeltas = {"trace_deltas": [{"uid": fig.data[0].uid}], "trace_edit_id": drawn}
    assert fig.answered
    inside, release = threading.Event(), threading.Event()
    set_trait = fig.set_trait

    def slow_set_trait(name, value):  # the kernel's thread, in the middle of taking the message
        set_trait(name, value)
        if name == "_js2py_relayout":
            inside.set()
            release.wait(10)

    monkeypatch.setattr(fig, "set_trait", slow_set_trait)
    kernel = threading.Thread(target=fig.set_state, args=({"_js2py_relayout": None},))
    kernel.start()
    assert inside.wait(10)
    messages.clear()

    def worker():  # the live view's refresh after a sweep
        with fig.batch_update():
            fig.data[0].x, fig.data[0].y = [1, 2, 3], [0.5, 0.25, 0.125]

    thread = threading.Thread(target=worker)
    thread.start()
    time.sleep(0.3)  # the worker reaches the figure while the message is being taken
    release.set()
    kernel.join(10)
    thread.join(10)
    updates = [s["_py2js_update"] for kind, s in messages if kind == "comm_msg" and s.get("_py2js_update")]
    assert len(updates) == 1 and updates[0]["style_data"]["y"] == [[0.5, 0.25, 0.125]], messages


def test_each_change_before_an_answer_sends_the_whole_state_in_one_message(published):
    """A model that anywidget gave up on loses the messages it held (diamondlab/viz/plotly_shim.js): the next
    one it takes holds the whole figure, with its edit ids, never a part the lost ones changed."""
    fig = FigureWidget(go.Figure(go.Scatter(y=[1, 2])))
    fig.layout.title.text = "changed"  # the layout alone changes
    fig.data[0].y = [3, 4]  # the traces alone change
    updates = [state for kind, state in _of(fig, published) if kind == "comm_msg" and state]
    assert len(updates) == 2 and all(set(WHOLE_STATE) <= set(state) for state in updates), updates
    assert updates[1]["_widget_layout"]["title"]["text"] == "changed"
    assert [t["y"] for t in updates[0]["_widget_data"]] == [[1, 2]]
