"""A real browser: JupyterLab in headless Chromium runs notebook 03 (the lab renders), notebooks 06-09 (the
paper's figures render, no title or axis label clipped), notebook 05 served as Binder serves it (the
3D view rotates, through jupyter-server-proxy) and the Maxwell lab (``Lab(equation="maxwell")``: a scene
built with its controllers, a run, its messages, then each of its other tabs' figures).

Needs Debian's ``chromium`` (``/usr/bin/chromium``) and the ``playwright``
package (never ``playwright install``: the system browser is used).  Skipped
with a reason where either is missing.  Set ``DIAMONDLAB_SCREENSHOT=path``
to keep the screenshot somewhere (``assets/lab_browser.png`` is made so).
"""

import importlib.util
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from test_notebooks import check_outputs

CHROMIUM = "/usr/bin/chromium"
ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = "03_live_wavefield.ipynb"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-dev-shm-usage"]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(not Path(CHROMIUM).exists(),
                       reason="needs Debian's chromium at /usr/bin/chromium (apt-get install -y chromium)"),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def jupyter(tmp_path, request):
    """JupyterLab serving a copy of ``NOTEBOOK`` (or the notebook given as the fixture's parameter)."""
    pytest.importorskip("jupyterlab", reason="needs jupyterlab (pip install -e '.[test]')")
    notebook, hub = getattr(request, "param", NOTEBOOK), None
    if isinstance(notebook, tuple):  # (notebook, user): served as JupyterHub (Binder) serves a user
        notebook, hub = notebook
    base = f"/user/{hub}/" if hub else "/"
    shutil.copy(ROOT / "notebooks" / notebook, tmp_path / notebook)
    shutil.copytree(ROOT / "notebooks" / "records", tmp_path / "records")  # run records some notebooks read
    # every cell in the page, not only those scrolled into view (JupyterLab 4 renders a window of them)
    settings = tmp_path / "cfg" / "lab" / "user-settings" / "@jupyterlab" / "notebook-extension"
    settings.mkdir(parents=True)
    (settings / "tracker.jupyterlab-settings").write_text('{"windowingMode": "none"}')
    port, token = _free_port(), "diamondlab-test"
    small = os.environ.get("DIAMONDLAB_SMALL", "1")  # DIAMONDLAB_SMALL=0: full size (the README screenshot)
    env = dict(os.environ, DIAMONDLAB_SMALL=small, JUPYTER_CONFIG_DIR=str(tmp_path / "cfg"),
               JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "ws"))
    if hub:
        env["JUPYTERHUB_SERVICE_PREFIX"] = base
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root", f"--port={port}",
           "--ServerApp.ip=127.0.0.1", f"--IdentityProvider.token={token}",
           f"--ServerApp.root_dir={tmp_path}", f"--ServerApp.base_url={base}",
           "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    log = open(tmp_path / "jupyter.log", "w")  # noqa: SIM115 - closed in the teardown
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path)
    url = f"http://127.0.0.1:{port}{base.rstrip('/')}"
    deadline = time.time() + 60
    while True:
        try:
            urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2)
            break
        except OSError:
            if time.time() > deadline or proc.poll() is not None:
                proc.terminate()
                pytest.fail("jupyter lab did not start:\n" + (tmp_path / "jupyter.log").read_text()[-3000:])
            time.sleep(0.3)
    yield url, token
    proc.terminate()
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


def _run_all(page, tries: int = 10) -> None:
    """Run > Run All Cells, again until the cells are queued (the kernel may still be connecting)."""
    from playwright.sync_api import Error as PlaywrightError

    for _ in range(tries):
        page.keyboard.press("Escape")  # close a menu left open by a previous try
        try:
            page.click(".lm-MenuBar-itemLabel:text-is('Run')", timeout=10_000)
            page.click(".lm-Menu-item[data-command='runmenu:run-all']", timeout=10_000)
        except PlaywrightError:
            continue
        deadline = time.time() + 20  # a loaded machine starts a kernel slowly
        while time.time() < deadline:
            prompts = page.locator(".jp-InputPrompt").all_inner_texts()
            if any(re.search(r"\[(\*|\d+)\]", p) for p in prompts):
                return
            time.sleep(0.5)
    pytest.fail("JupyterLab never started running the notebook")


def _wait_until_every_cell_ran(page, seconds: float, reruns: int = 2) -> None:
    """Wait until the kernel is idle with every code cell numbered; run all again (at most ``reruns``
    times) where the kernel went idle with cells left unrun (queued while it was still connecting)."""
    from playwright.sync_api import Error as PlaywrightError

    deadline = time.time() + seconds
    while True:
        left = max(1.0, deadline - time.time())
        try:
            page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=left * 1000)
        except PlaywrightError:
            pytest.fail(f"the kernel was still busy after {seconds} s:\n"
                        + page.locator(".jp-Notebook").inner_text()[-3000:])
        prompts = page.locator(".jp-CodeCell .jp-InputPrompt").all_inner_texts()
        unrun = [p for p in prompts if not re.search(r"\[\d+\]", p)]
        if not unrun:
            return
        text = page.locator(".jp-Notebook").inner_text()
        if time.time() > deadline or "Traceback" in text or (reruns == 0 and "*" not in "".join(unrun)):
            pytest.fail(f"{len(unrun)} of {len(prompts)} code cells never ran:\n" + text[-3000:])
        if "*" in "".join(unrun):  # idle between two queued cells: look again
            time.sleep(1)
            continue
        reruns -= 1
        _run_all(page)


#: The notebook's kernel started, connected and idle: the notebook's toolbar names a kernel and its execution
#: indicator says idle.  The indicator alone says "idle" from the start, before JupyterLab has read the
#: notebook's kernelspec and started its kernel ("No Kernel | Initializing" in the status bar): a Run All
#: then finds no kernel, no preferred one yet, and opens the "Select Kernel" dialog.
_KERNEL_IDLE_JS = """() => {
  const name = (document.querySelector('.jp-KernelName') || {}).textContent || '';
  const status = document.querySelector('.jp-Notebook-ExecutionIndicator');
  return name.trim() !== '' && name.trim() !== 'No Kernel' && !!status && status.dataset.status === 'idle';
}"""


def _open_and_run(playwright, address: str, script: str | None = None):
    """Chromium on a notebook's page in JupyterLab (``script`` run in the page before its own), every cell
    queued: ``(browser, page)``."""
    browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
    page = browser.new_page(viewport={"width": 1400, "height": 1800})
    page.set_default_timeout(90_000)
    if script:
        page.add_init_script(script)
    # the page's errors and warnings, for a failure's message (a widget's update that the front end could
    # not apply says so only here)
    page.console_lines = []
    page.on("console", lambda m: m.type in ("error", "warning") and page.console_lines.append(
        f"{m.type}: {m.text[:300]}"))
    page.on("pageerror", lambda err: page.console_lines.append(f"pageerror: {str(err)[:300]}"))
    page.goto(address)
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90_000)
    page.wait_for_function(_KERNEL_IDLE_JS, timeout=90_000, polling=100)
    _run_all(page)
    return browser, page


def test_notebook_03_runs_in_jupyterlab(jupyter, tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="needs playwright (pip; no browser download)")
    url, token = jupyter
    with sync_api.sync_playwright() as p:
        browser, page = _open_and_run(p, f"{url}/lab/tree/{NOTEBOOK}?reset&token={token}")
        page.wait_for_selector(".diamondlab-lab", timeout=120_000)
        page.wait_for_selector(".diamondlab-throughput", timeout=120_000)
        # the readout is looked up anew at every poll: where the notebook is run again (the kernel went
        # idle with cells unrun) the Lab is built again, and a handle to the first readout stays at 0
        readout = page.locator(".diamondlab-throughput").last
        rate, deadline = None, time.time() + 360  # a loaded 2-core machine compiles slowly
        while time.time() < deadline:
            m = re.search(r"([0-9.]+(?:e[+-]?\d+)?)\s*current", readout.inner_text())
            if m and float(m.group(1)) > 0:
                rate = float(m.group(1))
                break
            time.sleep(0.5)
        _wait_until_every_cell_ran(page, 300)
        news = page.locator(".Toastify button", has_text=re.compile(r"^\s*No\s*$"))
        if news.count():  # JupyterLab asks whether to fetch news: no
            news.first.click()
        assert page.locator(".diamondlab-controls .widget-button").count() >= 4
        assert page.locator(".diamondlab-live .js-plotly-plot").count() >= 3
        page.add_style_tag(content=".Toastify { display: none !important; }")  # notifications off the picture
        shot = os.environ.get("DIAMONDLAB_SCREENSHOT") or str(tmp_path / "lab.png")
        page.locator(".diamondlab-lab").screenshot(path=shot)
        text = page.locator(".jp-Notebook").inner_text()
        checked, clipped = _clipped(page)
        before, problems_before = notebook_figures(page, FIGURES[NOTEBOOK], seconds=30)  # the notebook's run
        ended, again = _run_to_the_end_and_again(page)
        found, problems = notebook_figures(page, FIGURES[NOTEBOOK], seconds=10)
        problems += page.evaluate(_LABELS_JS)  # as the Run All test checks the other notebooks
        console = page.console_lines[-40:]
        browser.close()
    assert not problems_before, f"{problems_before}\n{before}\nthe page's console:\n" + "\n".join(console)
    assert not problems, f"{problems}\n{found}\nthe page's console:\n" + "\n".join(console)
    assert ended[0] > 0 and "The wave has left the grid" in ended[1], ended
    assert 0 < again[0] < ended[0] and again[1] > 0, (ended, again)  # from n = 0 again, with a wave
    assert checked >= 3 and not clipped, f"{checked} labels checked, clipped: {clipped}"
    assert rate is not None and rate > 0, "the readout never showed a positive rate:\n" + text[-2000:]
    assert "Traceback" not in text and "G cell updates/s on average" in text
    check_outputs(NOTEBOOK, text)  # what tests/test_notebooks.py checks where no browser runs it


def _write_notebook(path, cells) -> None:
    """A notebook of these code cells, on the python3 kernel, at ``path``."""
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)


#: anywidget (0.11) gives a model 2 s, wall time, from its creation to the end of its module's ``initialize``
#: (``AbortSignal.timeout(2000)`` in its lab extension's ``Runtime``), then drops every later message of the
#: model (the page's console says "[anywidget] Failed to initialize model."): plotly's 5 MB module, imported
#: per figure, missed it on loaded CI machines (the receivers' figure of notebook 03 kept its first state, 3
#: runs of 9), as a figure does where any long task of the page (a plain plotly figure's drawing) takes the
#: 2 s.  This page script makes anywidget give up on every model at once (its 2 s made 0 ms, which ends
#: before any module can load), so the test does not depend on a race with a busy task.
_GIVE_UP_EVERY_MODEL_JS = """(() => {
  const timeout = AbortSignal.timeout;
  AbortSignal.timeout = ms => timeout.call(AbortSignal, ms === 2000 ? 0 : ms);
})();"""

#: A figure built and shown, then changed by the next cell once anywidget has given up on its model.
GIVEN_UP_CELLS = [
    "import plotly.graph_objects as go\n\nfrom diamondlab.viz.figurewidget import FigureWidget\n\n"
    "fig = FigureWidget(go.Figure(go.Scatter(y=[1, 2, 3]), layout={'title': {'text': 'first'}}))\nfig",
    "import time\n\ntime.sleep(4)  # anywidget has given up on the figure's model by now\n"
    "fig.layout.title.text = 'changed'\nfig.add_scatter(y=[4, 5])\nfig.data[0].y = [6, 7, 8]",
]


def test_a_figure_anywidget_gave_up_on_still_takes_its_changes(jupyter, tmp_path):
    """A long task of the page takes a figure model's 2 s (here every model's, on purpose): the figure's
    model takes its messages itself, and the view shows the figure as the kernel has changed it since."""
    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="needs playwright (pip; no browser download)")
    _write_notebook(tmp_path / "given_up.ipynb", GIVEN_UP_CELLS)
    url, token = jupyter
    with sync_api.sync_playwright() as p:
        browser, page = _open_and_run(p, f"{url}/lab/tree/given_up.ipynb?reset&token={token}",
                                      _GIVE_UP_EVERY_MODEL_JS)
        _wait_until_every_cell_ran(page, 240)

        def shown() -> list:
            return [(f["title"], f["points"]) for f in page.evaluate(_FIGURES_JS)["figures"]]

        changed = _until(lambda: shown() == [("changed", [3, 2])], 60)
        figures, console = shown(), page.console_lines[-40:]
        browser.close()
    assert changed, f"{figures}\nthe page's console:\n" + "\n".join(console)


#: Plotly's module as :func:`test_the_plotly_shim_initializes_at_once_and_draws_one_figure_at_a_time` gives
#: it: it counts its imports, and its widget draws the model's name.
_PLOTLY_STAND_IN = """
globalThis.plotlyImports = (globalThis.plotlyImports || 0) + 1;
export default () => {
  let model;
  return {
    initialize(args) { model = args.model; calls.push(`initialize ${model.get("name")}`); },
    render({ el }) { calls.push(`render ${model.get("name")}`); el.textContent = model.get("name"); },
  };
};
"""

#: The shim driven as anywidget drives it (a module imported from a blob a model, its default export called,
#: then ``initialize``, then ``render`` a view), with two kernels' ``PlotlyModule`` models: figures ``a`` and
#: ``b`` announced, ``a`` initialized and its views rendered (one of them removed at once) before plotly's
#: module is there; then the module, ``b`` still initializing, then ``b`` initialized; then ``c`` announced
#: and never initialized (anywidget gave up on it), and a view of ``b``.
_SHIM_JS = """async ([shim, plotly]) => {
  globalThis.calls = [];
  const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));
  const widget = async () => (await import(URL.createObjectURL(new Blob([shim], {type: "text/javascript"}))))
      .default();
  const model = state => ({get: key => state[key], on: (name, handler) => { state[name] = handler; },
                           set(key, value) { state[key] = value; state[`change:${key}`](); }});
  const kernels = [model({_plotly_source: plotly}), model({_plotly_source: plotly})];
  const [a, b, ...loaders] = await Promise.all([0, 1, 2, 3].map(() => widget()));
  loaders.forEach((loader, i) => loader.initialize({model: kernels[i]}));
  const announce = key => kernels[0].set("_figure_opening", key);
  announce("a"); announce("b");
  const returned = typeof a.initialize({model: model({name: "a", _figure_key: "a"})});
  const els = [0, 1, 2, 3].map(() => document.createElement("div"));
  const removed = new AbortController();
  const views = [a.render({el: els[0], signal: new AbortController().signal}),
                 a.render({el: els[1], signal: removed.signal})];
  removed.abort();
  await sleep(1000);
  const waiting = {calls: [...calls], drawn: els.map(e => e.textContent)};
  b.initialize({model: model({name: "b", _figure_key: "b"})});
  views.push(b.render({el: els[2], signal: new AbortController().signal}));
  await Promise.all(views);
  const drawn = els.map(e => e.textContent);
  announce("c");
  const start = performance.now();
  await b.render({el: els[3], signal: new AbortController().signal});
  return {returned, waiting, drawn, calls, imports: globalThis.plotlyImports,
          after: performance.now() - start, last: els[3].textContent};
}"""


def test_the_plotly_shim_initializes_at_once_and_draws_one_figure_at_a_time():
    """A figure's module (the shim) initializes at once, without plotly's module (anywidget gives up on a
    model after 2 s, wall time); plotly's module comes from the first PlotlyModule model, imported once a
    page, and initializes each figure once; its long tasks (the import, each draw) wait while an announced
    figure is initializing (3 s at most: anywidget has decided by then), and a view removed is not drawn."""
    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="needs playwright (pip; no browser download)")
    from diamondlab.viz.plotly_module import SHIM

    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        done = browser.new_page().evaluate(_SHIM_JS, [SHIM, _PLOTLY_STAND_IN])
        browser.close()
    assert done["returned"] == "undefined", done  # no promise for anywidget to wait on
    assert done["waiting"] == {"calls": [], "drawn": ["", "", "", ""]}, done  # b initializing: not imported
    assert done["imports"] == 1 and done["drawn"] == ["a", "", "b", ""], done
    assert done["calls"] == ["initialize a", "initialize b", "render a", "render b", "render b"], done
    assert done["after"] > 2500 and done["last"] == "b", done  # c never initialized: 3 s held back


def _slices_now(page) -> tuple[int, float]:
    """The step and the field's level the live view's slices show (their title)."""
    title = page.locator(".diamondlab-live .js-plotly-plot .gtitle").first.text_content()
    m = re.search(r"n = (\d+) .*level ([0-9.e+-]+)", title)
    return (int(m.group(1)), float(m.group(2))) if m else (-1, 0.0)


def _until(condition, seconds: float) -> bool:
    deadline = time.time() + seconds
    while not condition():
        if time.time() > deadline:
            return False
        time.sleep(0.3)
    return True


def _run_to_the_end_and_again(page, seconds: float = 240) -> tuple[tuple, tuple]:
    """Unpaced, Run until the lab says the wave has left the grid; then, paced, Run ("Run again") and pause
    once the slices show a wave: ``((step, notice) at the end, (step, level) after Run again)``."""
    notice = page.locator(".diamondlab-ended").last
    page.locator(".diamondlab-live .widget-checkbox input").first.uncheck()  # "paced for watching"
    # "Run again" where the notebook's own run reached the end of the wave already (a small grid): the
    # notice goes (back to n = 0), then comes back at the end of this run
    page.locator(".diamondlab-controls button", has_text=re.compile(r"^\s*Run( again)?\s*$")).last.click()
    _until(lambda: "left the grid" not in notice.inner_text(), 15)
    _until(lambda: "left the grid" in notice.inner_text(), seconds)
    again = page.locator(".diamondlab-controls button", has_text="Run again").last
    again.wait_for(timeout=30_000)
    ended = (_slices_now(page)[0], notice.inner_text())
    # paced again, as a student watches it: the wave stays on the slices for seconds, so a loaded machine's
    # slow polls still see it (unpaced, it can cross the grid between two polls)
    page.locator(".diamondlab-live .widget-checkbox input").first.check()
    again.click()
    shown = (-1, 0.0)

    def a_wave() -> bool:
        nonlocal shown
        shown = _slices_now(page)
        return 0 < shown[0] < ended[0] and shown[1] > 0

    _until(a_wave, 60)
    page.locator(".diamondlab-controls button", has_text="Pause").last.click()
    return ended, shown


def _clipped(page) -> tuple[int, list[str]]:
    """How many titles and axis titles the page's plotly figures have, and those reaching outside their
    figure."""
    out, checked = [], 0
    for plot in page.locator(".js-plotly-plot .svg-container").all():
        frame = plot.bounding_box()
        for label in plot.locator(".gtitle, .g-xtitle text, .g-ytitle text").all():
            box = label.bounding_box()
            if not (box and frame):
                continue
            checked += 1
            right, frame_right = box["x"] + box["width"], frame["x"] + frame["width"]
            if box["x"] < frame["x"] - 1 or right > frame_right + 1 or box["y"] < frame["y"] - 1:
                out.append(label.text_content())
    return checked, out


#: Every notebook run with Run All: at least this many plotly figures (small switch), each holding data.
FIGURES = {
    "00_quickstart.ipynb": 0,
    "01_lrnla_concepts.ipynb": 6,  # the x-t widget, two conoid figures, locality, the "Try it" pair
    "02_diamondtorre_stages.ipynb": 5,  # a stage, the sweep, the time levels, the explorer's pair
    "03_live_wavefield.ipynb": 8,  # the live view's three, the Shapes, Stages and Tuning tabs'
    "04_tuning.ipynb": 1,
    "05_3d_snapshots.ipynb": 0,  # images: the gallery's and the snapshot panel's
    "06_paper_figures_and_table_1.ipynb": 4,
    "07_roofline_and_parallel_levels.ipynb": 3,
    "08_launch_schemes_and_tilings.ipynb": 1,
}


#: The paper's notebooks: how many figures each draws (small switch) and titles it must show.
PAPER_NOTEBOOKS = {
    "06_paper_figures_and_table_1.ipynb": (4, ("Fig. 2", "Fig. 4")),
    "07_roofline_and_parallel_levels.ipynb": (3, ("Fig. 7",)),
    "08_launch_schemes_and_tilings.ipynb": (1, ()),
    "09_maxwell_on_diamondtorre.ipynb": (2, ()),
}


def _titles_and_clipping(page, name: str) -> list[str]:
    """What is wrong with a paper notebook's figures (:data:`PAPER_NOTEBOOKS`): a title it must show
    missing, fewer labels than two a figure, a label reaching outside its figure."""
    figures, wanted = PAPER_NOTEBOOKS[name]
    titles = page.locator(".js-plotly-plot .gtitle").evaluate_all("els => els.map(e => e.textContent)")
    checked, clipped = _clipped(page)
    problems = [f"no title with {w!r} among {titles}" for w in wanted if not any(w in t for t in titles)]
    if checked < 2 * figures or clipped:
        problems.append(f"{checked} labels checked, clipped: {clipped}")
    return problems


# the paper notebooks that the Run All test below does not run (it checks the others' labels too)
@pytest.mark.parametrize("jupyter", [n for n in PAPER_NOTEBOOKS if n not in FIGURES], indirect=True)
def test_the_paper_notebooks_draw_their_figures_unclipped_in_jupyterlab(jupyter, request):
    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="needs playwright (pip; no browser download)")
    url, token = jupyter
    name = request.node.callspec.params["jupyter"]
    figures, wanted = PAPER_NOTEBOOKS[name]
    with sync_api.sync_playwright() as p:
        browser, page = _open_and_run(p, f"{url}/lab/tree/{name}?reset&token={token}")
        _wait_until_every_cell_ran(page, 360)
        try:
            page.wait_for_function(f"document.querySelectorAll('.js-plotly-plot').length >= {figures}",
                                   timeout=180_000)
        except sync_api.TimeoutError:
            shown = page.locator(".jp-Notebook").inner_text()[-3000:]
            pytest.fail(f"fewer than {figures} figures drawn:\n{shown}")
        problems = _titles_and_clipping(page, name)
        text = page.locator(".jp-Notebook").inner_text()
        browser.close()
    assert "Traceback" not in text, text[-2000:]
    assert not problems, problems
    check_outputs(name, text)


@pytest.mark.parametrize("jupyter", [("05_3d_snapshots.ipynb", "binder")], indirect=True)
def test_3d_snapshots_rotate_in_the_browser_through_the_hubs_proxy(jupyter):
    """Notebook 05 served as Binder serves it (a JupyterHub user's base URL, only the Jupyter server
    reachable): the 3D view is drawn by vtk.js in the page, reached through jupyter-server-proxy, and a
    drag of the mouse turns it."""
    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="needs playwright (pip; no browser download)")
    from diamondlab.viz.snapshots import CLIENT_PACKAGES

    if not all(importlib.util.find_spec(m) for m in CLIENT_PACKAGES):
        pytest.skip(f"needs {', '.join(CLIENT_PACKAGES)} (pyvista[jupyter], the lab extra)")
    url, token = jupyter
    with sync_api.sync_playwright() as p:
        browser, page = _open_and_run(p, f"{url}/lab/tree/05_3d_snapshots.ipynb?reset&token={token}")
        _wait_until_every_cell_ran(page, 300)
        text = page.locator(".jp-Notebook").inner_text()
        view = page.wait_for_selector("iframe[src^='/user/binder/proxy/']", timeout=60_000)
        view.scroll_into_view_if_needed()
        view.content_frame().locator("canvas").first.wait_for(timeout=60_000)  # vtk.js draws on canvases
        view.scroll_into_view_if_needed()
        shots = [view.screenshot()]
        for _ in range(30):  # until the first frame is drawn and stays
            time.sleep(1)
            shots.append(view.screenshot())
            if shots[-1] == shots[-2]:
                break
        box = view.bounding_box()
        x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] * 0.6  # below the view's toolbar
        page.mouse.move(x, y)
        page.mouse.down()
        page.mouse.move(x + box["width"] / 4, y + box["height"] / 10, steps=15)
        page.mouse.up()
        time.sleep(2)
        turned = view.screenshot() != shots[-1]
        browser.close()
    assert "jupyter backend: client" in text and "Traceback" not in text, text[-2000:]
    assert shots[-1] == shots[-2], "the 3D view never settled"
    assert turned, "dragging the mouse did not turn the 3D view"


#: The page's plotly figures as their views hold them (``gd.data``: what Plotly drew), its widget outputs
#: and its images; or those inside one element (``locator.evaluate``: a lab's open tab).
_FIGURES_JS = """(root) => {
  const within = root ? (css => root.querySelectorAll(css.replace('.jp-OutputArea ', '')))
                      : (css => document.querySelectorAll(css));
  // an array, or numpy's as plotly sends it (base64 in bdata) where the view left it so
  const size = v => !v ? 0 : typeof v.length === 'number' ? v.length : v.bdata ? v.bdata.length : 0;
  const points = t => Math.max(0, ...['x', 'y', 'z', 'values', 'lat'].map(k => size(t[k])));
  const figures = [...within('.jp-OutputArea .js-plotly-plot')].map(gd => {
    const title = gd.layout && gd.layout.title;
    return {title: String((title && (title.text || title)) || gd.querySelector('.gtitle')?.textContent || ''),
            traces: size(gd.data), points: (gd.data || []).map(points)};
  });
  // a widget's output is a panel holding the widget's renderer: empty where the view was never drawn
  const widgets = [...within('.jp-OutputArea .jp-OutputArea-output.lm-Panel')].map(
      el => ({children: el.querySelectorAll('*').length - 1, text: el.textContent.slice(0, 200)}));
  // an image a widget hides on purpose (display: none on it or a box of it) is not drawn; any other is
  const hidden = img => { for (let e = img; e && !e.classList.contains('jp-OutputArea'); e = e.parentElement)
                            if (e.style && e.style.display === 'none') return true; return false; };
  const images = [...within('.jp-OutputArea img')].filter(img => !hidden(img)).map(
      img => ({loaded: img.complete && img.naturalWidth > 0,
               src: (img.getAttribute('src') || '').slice(0, 40)}));
  return {figures, widgets, images};
}"""


#: What a reader cannot read: a point's label cut by its plot area (or its figure) or lying on another trace's
#: marker, a 3D figure's legend over its scene, a colour bar's tick reading "-0.00" or the like.
_LABELS_JS = r"""() => {
  const out = [];
  const box = e => e.getBoundingClientRect();
  const inside = (a, b) => a.left >= b.left - 1 && a.right <= b.right + 1 && a.top >= b.top - 1
                           && a.bottom <= b.bottom + 1;
  const overlap = (a, b) => Math.min(a.right, b.right) - Math.max(a.left, b.left) > 2
                            && Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 2;
  for (const gd of document.querySelectorAll('.jp-OutputArea .js-plotly-plot')) {
    const full = gd._fullLayout;
    if (!full || !gd.offsetParent) continue;  // not laid out (a hidden tab)
    const name = String((gd.layout && gd.layout.title && (gd.layout.title.text || gd.layout.title)) || '');
    const figure = box(gd.querySelector('.main-svg'));
    const g = gd.getBoundingClientRect(), s = full._size;
    const area = {left: g.left + s.l, right: g.left + s.l + s.w, top: g.top + s.t, bottom: g.top + s.t + s.h};
    const traces = [...gd.querySelectorAll('.scatterlayer .trace')];
    const markers = traces.map(t => [...t.querySelectorAll('.points path.point')].map(box));
    const labels = traces.map(t => [...t.querySelectorAll('.textpoint text')].map(box).filter(b => b.width));
    traces.forEach((t, i) => {
      const trace = (t.__data__ && t.__data__[0] && t.__data__[0].trace) || {};
      for (const text of t.querySelectorAll('.textpoint text')) {
        const b = box(text);
        if (!b.width) continue;
        if (!inside(b, trace.cliponaxis === false ? figure : area))
          out.push(`${name.slice(0, 40)}: label '${text.textContent}' cut by the ${
                    trace.cliponaxis === false ? 'figure' : 'plot area'}`);
        markers.forEach((ms, j) => { if (j !== i && ms.some(m => overlap(b, m)))
          out.push(`${name.slice(0, 40)}: label '${text.textContent}' on another marker`); });
        labels.forEach((ls, j) => { if (j > i && ls.some(l => overlap(b, l)))
          out.push(`${name.slice(0, 40)}: label '${text.textContent}' on another label`); });
      }
    });
    if (full.scene && gd.querySelector('.legend')) {
      const legend = box(gd.querySelector('.legend .bg') || gd.querySelector('.legend'));
      if (overlap(legend, area)) out.push(`${name.slice(0, 40)}: the legend covers the 3D view`);
    }
    for (const tick of gd.querySelectorAll('.colorbar .tick text, .cbaxis .tick text, .cb .ytick text')) {
      const t = tick.textContent.replace('−', '-');
      if (/^-0(\.0*)?$/.test(t)) out.push(`${name.slice(0, 40)}: colour bar tick '${tick.textContent}'`);
    }
  }
  return out;
}"""


#: Notebooks whose labels are not checked yet, and why.
LABELS_UNCHECKED: dict[str, str] = {}

#: A figure that is empty until the reader acts says so in its title.
PLACEHOLDER_TITLE = "press "


def figure_problems(found: dict, wanted: int) -> list[str]:
    """What is wrong with a page's figures (``_FIGURES_JS``'s answer): too few, one without a trace, one
    whose traces hold no point, a widget drawn empty or as an error, an image not loaded."""
    problems = []
    figures = found["figures"]
    if len(figures) < wanted:
        problems.append(f"{len(figures)} plotly figures drawn, {wanted} wanted")
    for f in figures:
        if f["title"].startswith(PLACEHOLDER_TITLE):  # says what fills it (Tuning: "press Measure")
            continue
        if not f["traces"] or not any(f["points"]):
            problems.append(f"figure {f['title']!r} drawn without data: {f['traces']} traces, "
                            f"points {f['points']}")
    for w in found["widgets"]:
        if not w["children"] or "Error displaying widget" in w["text"]:
            problems.append(f"a widget output drawn empty or as an error: {w['text']!r}")
    problems += [f"an image not loaded (a broken-image icon): src {i['src']!r}"
                 for i in found["images"] if not i["loaded"]]
    return problems


def test_figure_problems_finds_what_a_blank_figure_leaves():
    ok = {"figures": [{"title": "a", "traces": 1, "points": [3]}], "widgets": [{"children": 1, "text": ""}],
          "images": [{"loaded": True, "src": "data:"}]}
    assert figure_problems(ok, 1) == []
    empty = {"figures": [{"title": "conoids", "traces": 0, "points": []}], "widgets": [], "images": []}
    assert "conoids" in figure_problems(empty, 1)[0]
    assert figure_problems({**ok, "images": [{"loaded": False, "src": ""}]}, 1)
    assert figure_problems({**ok, "widgets": [{"children": 0, "text": ""}]}, 1)
    assert figure_problems(ok, 2) == ["1 plotly figures drawn, 2 wanted"]
    waiting = {"figures": [{"title": "press Measure", "traces": 0, "points": []}], "widgets": [],
               "images": []}
    assert figure_problems(waiting, 1) == []


def notebook_figures(page, wanted: int, seconds: float = 60, within=None) -> tuple[dict, list[str]]:
    """The page's figures (or those ``within`` a locator's element) once every one holds data (or
    ``seconds`` have passed): ``(found, problems)``."""
    deadline = time.time() + seconds
    while True:
        found = within.evaluate(_FIGURES_JS) if within is not None else page.evaluate(_FIGURES_JS)
        problems = figure_problems(found, wanted)
        if not problems or time.time() > deadline:
            return found, problems
        time.sleep(1)


#: Still failing at times, and why (kept visible: xfail, not strict).  Notebook 01 was here: "JupyterLab
#: opens its 'Select Kernel' dialog in the middle of Run All" came from Run All clicked before JupyterLab had
#: started the notebook's kernel (see ``_KERNEL_IDLE_JS``, which ``_open_and_run`` now waits for).
FLAKY: dict[str, str] = {}


# notebook 03 is run all and checked (figures, labels) by test_notebook_03_runs_in_jupyterlab
@pytest.mark.parametrize("jupyter", [pytest.param(n, marks=pytest.mark.xfail(reason=FLAKY[n], strict=False))
                                     if n in FLAKY else n for n in FIGURES if n != NOTEBOOK], indirect=True)
def test_every_notebook_draws_every_figure_with_data_after_run_all(jupyter, request):
    """Run All, as a student does: every plotly figure's view holds traces with data (none left as empty
    axes because a cell changed it before its view existed), no widget drawn blank, every image loaded."""
    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="needs playwright (pip; no browser download)")
    url, token = jupyter
    name = request.node.callspec.params["jupyter"]
    with sync_api.sync_playwright() as p:
        browser, page = _open_and_run(p, f"{url}/lab/tree/{name}?reset&token={token}")
        _wait_until_every_cell_ran(page, 480)
        found, problems = notebook_figures(page, FIGURES[name])
        if name not in LABELS_UNCHECKED:
            problems += page.evaluate(_LABELS_JS)
        if name in PAPER_NOTEBOOKS:  # their titles, and no label outside its figure
            problems += _titles_and_clipping(page, name)
        text = page.locator(".jp-Notebook").inner_text()
        console = page.console_lines[-40:]
        browser.close()
    assert "Traceback" not in text, text[-2000:]
    assert not problems, f"{name}: {problems}\n{found}\nthe page's console:\n" + "\n".join(console)
    check_outputs(name, text)


#: The Maxwell lab's notebook: the lab alone on a small grid, no object yet, a dipole (the test builds the
#: scene with the controllers).
MAXWELL_CELLS = [
    "from diamondlab.widgets import Lab\n\n"
    "lab = Lab(equation='maxwell', shape=(24, 20, 20), pml=4, radius=3, scene='none', medium='dielectric',\n"
    "          source='dipole', backend='cpu')\n"
    "lab",
]

#: A figure's traces as its view holds them: ``z`` (as text, to compare two reads) and the count of finite
#: ``y`` values (numpy's arrays arrive as lists, typed arrays or base64 in ``bdata``).
_TRACES_JS = """gd => {
  const values = v => {
    if (!v) return [];
    if (Array.isArray(v) || ArrayBuffer.isView(v)) return Array.from(v).flat(Infinity);
    if (v.bdata) {
      const bytes = Uint8Array.from(atob(v.bdata), c => c.charCodeAt(0)).buffer;
      const kind = {f8: Float64Array, f4: Float32Array, i4: Int32Array, u4: Uint32Array, i2: Int16Array,
                    u2: Uint16Array, i1: Int8Array, u1: Uint8Array}[v.dtype];
      return kind ? Array.from(new kind(bytes)) : [];
    }
    return [];
  };
  return (gd.data || []).map(t => ({name: t.name || '', z: JSON.stringify(t.z === undefined ? null : t.z),
                                    finite: values(t.y).filter(Number.isFinite).length}));
}"""


def _controller(page, label: str, kind: str = "select"):
    """The Maxwell lab's controller of that label (``kind``: ``select`` or ``input``)."""
    named = page.locator("label", has_text=re.compile(rf"^\s*{re.escape(label)}\s*$"))
    boxes = page.locator(".diamondlab-maxwell-controls .widget-inline-hbox")
    return boxes.filter(has=named).locator(kind).last


def _button(page, name: str):
    return page.locator(".diamondlab-maxwell-controls button", has_text=re.compile(rf"^\s*{name}\s*$")).last


#: The Maxwell lab's tabs other than Run, and how many figures each draws.
MAXWELL_TABS = {"Shapes": 2, "Stages": 2, "Yee": 2, "Tuning": 1}


def _labelled(within, label: str):
    """The input of the widget labelled ``label`` inside ``within``."""
    named = within.page.locator("label", has_text=re.compile(rf"^\s*{re.escape(label)}\s*$"))
    return within.locator(".widget-inline-hbox").filter(has=named).locator("input").last


def _measure_one_tiling(tab) -> tuple[str, list[str]]:
    """In the Tuning tab (``tab``), the smallest sweep (stepwise and DiamondTorre DTS=2 Nt=4, once each)
    measured with Measure: ``(the log, what is wrong)``."""
    tuning = tab.locator(".diamondlab-tuning")
    for label, value in (("DTS", "2"), ("Nt", "4"), ("repeats", "1")):
        _labelled(tuning, label).fill(value)
        _labelled(tuning, label).press("Enter")
    tuning.locator("button", has_text="Measure").click()
    log = tuning.locator(".widget-html").nth(1)  # progress lines, then "best: ..."; or a refusal instead

    def measured() -> bool:
        text = log.inner_text().strip()
        return "best:" in text or (text != "" and not text.startswith("measuring on"))

    _until(measured, 120)
    title = tab.locator(".js-plotly-plot .gtitle").first
    if _until(lambda: not title.text_content().startswith(PLACEHOLDER_TITLE), 20):
        return log.inner_text(), []
    text = log.inner_text()
    return text, [f"Tuning: the figure still says {title.text_content()!r} after Measure; log {text!r}"]


def _open_the_other_tabs(page) -> tuple[list[str], str]:
    """Each of the Maxwell lab's other tabs (:data:`MAXWELL_TABS`) clicked open in turn, its figures and
    labels checked (Tuning's after :func:`_measure_one_tiling`): ``(problems, the tuning log)``."""
    lab = page.locator(".diamondlab-maxwell-lab").last
    problems, log = [], ""
    for name, wanted in MAXWELL_TABS.items():
        lab.locator(".lm-TabBar-tab", has_text=re.compile(rf"^\s*{name}\s*$")).click()
        shown = lab.locator(".widget-tab-contents > .lm-Widget:not(.lm-mod-hidden)")
        if name == "Tuning":
            log, wrong = _measure_one_tiling(shown)
            problems += wrong
        found, wrong = notebook_figures(page, wanted, seconds=20, within=shown)
        problems += [f"{name}: {w}" for w in wrong + page.evaluate(_LABELS_JS)]
        if wrong:
            problems.append(f"{name}: {found}")
    return problems, log


def test_the_maxwell_lab_builds_a_scene_runs_and_shows_its_messages_in_jupyterlab(jupyter, tmp_path):
    """``Lab(equation="maxwell")`` in JupyterLab, driven with the mouse: a Drude sphere lit by a plane wave
    chosen with the controllers, a bad CPML width shows the engine's message (Run refused) and a good one
    clears it, Step then Run: the planes change, the readout gives a rate in Yee cell updates/s, the probes'
    traces and the R and T spectrum hold data; then, in the same page, the Shapes, Stages, Yee and Tuning
    tabs opened one by one hold figures with data (Tuning after Measure of one DTS and Nt, its rate shown)."""
    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="needs playwright (pip; no browser download)")
    _write_notebook(tmp_path / "maxwell_lab.ipynb", MAXWELL_CELLS)
    url, token = jupyter
    with sync_api.sync_playwright() as p:
        browser, page = _open_and_run(p, f"{url}/lab/tree/maxwell_lab.ipynb?reset&token={token}")
        _wait_until_every_cell_ran(page, 240)
        live = page.locator(".diamondlab-maxwell-live .js-plotly-plot")
        live.first.wait_for(timeout=120_000)
        message = page.locator(".diamondlab-maxwell-lab .diamondlab-message").last
        status = page.locator(".diamondlab-maxwell-lab .diamondlab-status").last
        # the scene, with the controllers
        _controller(page, "object").select_option("sphere")
        _controller(page, "medium").select_option("drude")
        _controller(page, "source").select_option("plane wave")
        ready = _until(lambda: "ready: 1 object, CPML 4, 1 plane waves" in message.inner_text(), 30)
        # a bad setting: a CPML too wide for the plane wave's box (the engine's message, Run refused)
        pml = _controller(page, "CPML width", "input")
        pml.fill("9")
        pml.press("Enter")
        refused = _until(lambda: "cannot run" in message.inner_text(), 30)
        bad = message.inner_text()
        run = _button(page, "Run")
        run_disabled = run.is_disabled()
        pml.fill("4")
        pml.press("Enter")
        fixed = _until(lambda: "ready" in message.inner_text() and not run.is_disabled(), 30)
        # Step, then Run: the planes after a sweep and at the end of the run differ
        _button(page, "Step").click()
        stepped = _until(lambda: "done" in status.inner_text(), 300)  # a cold machine compiles the kernels
        shown = [live.nth(0).evaluate(_TRACES_JS)[:3]]
        steps = int(_controller(page, "steps (0 = ∞)", "input").input_value())
        title = live.nth(0).locator(".gtitle")
        first = re.search(r"n = (\d+)", title.text_content())
        run.click()
        last = int(first.group(1)) + steps if first else -1
        ran = _until(lambda: f"n = {last} " in title.text_content() and "done" in status.inner_text(), 300)
        time.sleep(1)  # the last redraw reaches the figures
        shown.append(live.nth(0).evaluate(_TRACES_JS)[:3])
        readout = page.locator(".diamondlab-maxwell-lab .diamondlab-throughput").last.inner_text()
        traces, spectrum = live.nth(1).evaluate(_TRACES_JS), live.nth(2).evaluate(_TRACES_JS)
        tabs, tuned = _open_the_other_tabs(page)
        text = page.locator(".jp-Notebook").inner_text()
        browser.close()
    assert "Traceback" not in text, text[-2000:]
    assert ready and refused and run_disabled and fixed, (ready, bad, run_disabled, fixed)
    assert "PlaneWave box" in bad, bad  # the engine's own words
    assert stepped and first and int(first.group(1)) > 0 and ran, (stepped, first, last, text[-2000:])
    assert shown[0] != shown[1], "the planes did not change"
    rate = re.search(r"([0-9.]+(?:e[+-]?\d+)?)\s*current", readout)
    assert rate and float(rate.group(1)) > 0 and "G Yee cell updates per second" in readout, readout
    assert len(traces) == 3 and all(t["finite"] >= min(steps, 1000) for t in traces), traces
    measured = {t["name"]: t["finite"] for t in spectrum}
    assert measured["back (scattered)"] > 0 and measured["behind (total)"] > 0, spectrum  # a sphere: not R, T
    assert not tabs, tabs  # Shapes, Stages, Yee and Tuning: every figure holds data
    assert re.search(r"DiamondTorre NO=2 DTS=2 Nt=4: [0-9.e+-]+ G/s", tuned) and "best:" in tuned, tuned
