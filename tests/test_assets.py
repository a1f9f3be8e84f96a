import importlib.util
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _module(name: str = "make_assets"):
    spec = importlib.util.spec_from_file_location(name, ROOT / "assets" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_figures_are_drawn_from_the_schedule():
    m = _module()
    svg = ET.fromstring(m.time_levels_svg(order=2, size=1, nt=4, nx=10, ny=6, stages_done=3))
    ns = "{http://www.w3.org/2000/svg}"
    cells = [r for r in svg.iter(f"{ns}rect") if r.find(f"{ns}title") is not None]
    assert len(cells) == 60
    stages = ET.fromstring(m.stages_svg(order=2, size=1, nt=4, nx=10, ny=6))
    assert len(list(stages.iter(f"{ns}polygon"))) > 0


def test_committed_figures_are_current():
    m = _module()
    assert (ROOT / "assets" / "time_levels.svg").read_text() == m.time_levels_svg()
    assert (ROOT / "assets" / "stages.svg").read_text() == m.stages_svg()


def _cells(nb) -> list[tuple[str, str]]:
    return [(cell.cell_type, cell.source) for cell in nb.cells]


def _check_generated(folder: Path) -> None:
    """Every notebook in ``folder`` has the cells assets/make_notebooks.py writes (outputs aside)."""
    import nbformat

    m = _module("make_notebooks")
    committed = {path.name: path for path in folder.glob("*.ipynb")}
    assert sorted(committed) == sorted(m.NOTEBOOKS), "a notebook without a source, or a source not written"
    for name, cells in m.NOTEBOOKS.items():
        written = _cells(m._nb(cells))
        on_disk = _cells(nbformat.read(committed[name], as_version=4))
        assert on_disk == written, f"notebooks/{name} differs from assets/make_notebooks.py: run it"


def test_the_notebooks_are_what_their_generator_writes():
    """assets/make_notebooks.py is the notebooks' one source: every committed cell is in it, and no other."""
    _check_generated(ROOT / "notebooks")


def _ran(nb):
    """``nb`` as JupyterLab saves it after Run All: plotly and widget outputs, counts, widget state."""
    import nbformat

    for n, cell in enumerate(c for c in nb.cells if c.cell_type == "code"):
        cell.execution_count = n + 1
        cell.outputs = [
            nbformat.v4.new_output("display_data", data={
                "application/vnd.plotly.v1+json": {"data": [], "layout": {}},
                "application/vnd.jupyter.widget-view+json": {"model_id": "abc", "version_major": 2,
                                                             "version_minor": 0}}),
            nbformat.v4.new_output("stream", text="printed\n")]
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    return nb


def _git_notebook(name: str) -> str | None:
    """The staged text of ``notebooks/name`` (what a commit takes), None outside a git checkout."""
    run = subprocess.run(["git", "show", f":notebooks/{name}"], cwd=ROOT, capture_output=True, text=True)
    return run.stdout if run.returncode == 0 else None


def test_the_committed_notebooks_hold_no_outputs():
    """What git commits (the index; the files outside a checkout) has no outputs: a user's run may leave
    them in the working tree, never in a commit."""
    import nbformat

    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        text = _git_notebook(path.name)
        nb = nbformat.reads(path.read_text() if text is None else text, as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert code and not any(c.outputs or c.execution_count for c in code), (
            f"notebooks/{path.name} is staged with outputs: turn on the filter (README, 'Notebooks') and "
            f"git add it again, or run python assets/make_notebooks.py")
        assert "widgets" not in nb.metadata, path.name


def test_notebooks_run_and_saved_leave_the_tests_and_the_docs_copies_clean(tmp_path):
    """A user opens, runs and saves every notebook: the cells still match their source, the docs build's
    copies have no outputs, and git's clean filter (``--strip``) gives back the committed bytes."""
    import nbformat

    m = _module("make_notebooks")
    ran = tmp_path / "notebooks"
    shutil.copytree(ROOT / "notebooks", ran)
    for path in ran.glob("*.ipynb"):
        nbformat.write(_ran(nbformat.read(path, as_version=4)), path)
    _check_generated(ran)
    written = m.copy_stripped(ran, tmp_path / "docs")
    assert len(written) == len(m.NOTEBOOKS) and (tmp_path / "docs" / "records").is_dir()
    for path in written:
        nb = nbformat.read(path, as_version=4)
        assert not any(c.get("outputs") for c in nb.cells) and "widgets" not in nb.metadata
    name = "03_live_wavefield.ipynb"
    clean = subprocess.run([sys.executable, str(ROOT / "assets" / "make_notebooks.py"), "--strip"],
                           input=(ran / name).read_text(), capture_output=True, text=True, check=True)
    assert "widget-view" in (ran / name).read_text()
    assert clean.stdout == nbformat.writes(m._nb(m.NOTEBOOKS[name])) + "\n"


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_gits_clean_filter_commits_a_run_notebook_without_outputs(tmp_path):
    """The filter .gitattributes names, turned on as the README says: a notebook run, saved and committed
    is committed without its outputs: no change to see or to commit."""
    import nbformat

    def git(*args):
        return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=tmp_path,
                              capture_output=True, text=True, check=True).stdout

    m = _module("make_notebooks")
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "assets").mkdir()
    shutil.copy(ROOT / ".gitattributes", tmp_path / ".gitattributes")
    shutil.copy(ROOT / "assets" / "make_notebooks.py", tmp_path / "assets" / "make_notebooks.py")
    name = "00_quickstart.ipynb"
    shutil.copy(ROOT / "notebooks" / name, tmp_path / "notebooks" / name)
    git("init", "-q")
    git("config", "filter.notebook-outputs.clean", f"{sys.executable} assets/make_notebooks.py --strip")
    git("add", ".")
    git("commit", "-qm", "notebooks")
    path = tmp_path / "notebooks" / name
    nbformat.write(_ran(nbformat.read(path, as_version=4)), path)
    assert git("diff", "--stat") == ""  # ran and saved: no change to see
    git("add", "-A")
    assert git("status", "--porcelain") == ""  # and nothing to commit
    assert git("show", f"HEAD:notebooks/{name}") == nbformat.writes(m._nb(m.NOTEBOOKS[name])) + "\n"


def test_the_size_sweep_plot_draws_the_bench_rows():
    plot = _module("plot_size_sweep")
    rows = [{"shape": s, "order": 8, "medium": "constant velocity, sponge 0", "backend": "cuda", "ratio": r}
            for s, r in (([384, 384, 384], 1.10), ([256, 256, 256], 1.19))]
    fig = plot.figure(rows)
    (line,) = [t for t in fig.data if t.name.startswith("NO=8")]
    assert list(line.x) == [256**3, 384**3] and list(line.y) == [1.19, 1.10]


def _bench_rows(name: str) -> list[dict]:
    import json

    return [json.loads(line) for line in (ROOT / "assets" / "bench" / name).read_text().splitlines()
            if line.startswith("{")]


def test_paper002_fig3_draws_the_bench_rows_and_the_model():
    """Every point of paper 002's Fig. 3 is a committed H100 row (its median, order, DTS, Nt and grid), every
    register-tile row is drawn against its blocks, and the dashed lines are predict_yee's."""
    from diamondlab.engine.measure.perfmodel import H100, predict_yee

    m = _module("make_paper002")
    points = m.fig3_points()
    for p in points["blocks"] + points["nt"]:
        key = (p["order"], p["size"], p["nt"], p["shape"])
        rows = _bench_rows(p["source"])
        assert any(r.get("median", r.get("rate_gcells")) == p["rate"] and
                   (r["order"], r["size"], r["nt"], tuple(r["shape"])) == key for r in rows), p
    registers = [r for name in m.REGISTER_FILES for r in _bench_rows(name) if r.get("tile") == "registers"]
    assert len([p for p in points["blocks"] if p["source"] in m.REGISTER_FILES]) == len(registers) == 9
    by_key = {(p["order"], p["size"], p["shape"]): p for p in points["blocks"] if p["kernel"] == "registers"}
    # order 2, DTS 1: a torre every 2 rows of y; DTS 2 (and order 4, DTS 1): every 4
    assert by_key[2, 1, (256, 256, 256)]["blocks"] == 128 and by_key[2, 1, (768, 512, 256)]["blocks"] == 256
    dts2 = by_key[2, 2, (256, 256, 256)]
    assert dts2["blocks"] == 65 and round(dts2["rate"], 2) == 41.75
    tall = sorted((p["order"], p["nt"], round(p["rate"], 2)) for p in points["nt"]
                  if p["kernel"] == "registers")
    assert tall == [(2, 4, 46.45), (2, 4, 46.46), (2, 16, 43.66), (4, 4, 29.78), (4, 16, 26.88)]
    assert [(p["nt"], p["rate"]) for p in points["nt"] if p["kernel"] == "window"] == [(16, 0.306)]
    assert [(p["nt"], p["rate"]) for p in points["nt"] if p["kernel"] == "streamed"] == [(32, 42.947)]

    fig = m.fig3_figure(points)
    drawn = sorted((t.xaxis, x, y, src) for t in fig.data if t.customdata is not None
                   for x, y, src in zip(t.x, t.y, t.customdata, strict=True))
    expected = sorted([("x", p["blocks"], p["rate"], p["source"]) for p in points["blocks"]]
                      + [("x2", p["nt"], p["rate"], p["source"]) for p in points["nt"]])
    assert drawn == expected
    models = [t for t in fig.data if t.name and t.name.startswith("model DTS=2")]
    assert len(models) == 1 and models[0].name.startswith("model DTS=2, NO=2 and 4")
    for nt, rate in zip(models[0].x, models[0].y, strict=True):
        assert rate == pytest.approx(predict_yee("diamondtorre", 4, 2, nt, device=H100).rate / 1e9)


def test_paper002_fig3_reads_its_own_sweeps_when_present(tmp_path):
    """Fig. 3's sweeps of ``.ci/maxwell-fig3-session`` (``h100-maxwell-fig3-*-2026-11-27.jsonl``) join the
    figure when they are in the bench folder (DiamondTorre register-tile vacuum rows only: blocks from the y
    sweep, TH from the Nt sweep, each a series of its own) and change nothing when they are not.  The rows
    here are made up in a folder of the test's own, in the session's format; the committed rows are linked."""
    import json

    m = _module("make_paper002")
    for f in (ROOT / "assets" / "bench").iterdir():
        if not f.name.startswith("h100-maxwell-fig3-"):
            (tmp_path / f.name).symlink_to(f)
    without = m.fig3_points(tmp_path)
    assert not [p for p in without["blocks"] + without["nt"] if p["kernel"] == "sweep"]

    def row(shape, order, size, nt, rate, algorithm="diamondtorre", tile="registers", physics=""):
        return json.dumps(dict(backend="cuda", order=order, algorithm=algorithm, shape=list(shape),
                               size=size, nt=nt, tile=tile, physics=physics, median=rate, min=rate, max=rate,
                               model=60.0))

    ys = (32, 64, 128)
    (tmp_path / "h100-maxwell-fig3-blocks-2026-11-27.jsonl").write_text("\n".join(
        [row((512, y, 256), 2, 2, 4, 10.0 + y / 10) for y in ys] + [row((512, 32, 256), 4, 1, 4, 9.0),
         "warning: not a row"]) + "\n")
    (tmp_path / "h100-maxwell-fig3-nt-2026-11-27.jsonl").write_text("\n".join(
        [row((512, 512, 256), 2, 2, n, 40.0 + n) for n in (2, 4, 8)]
        + [row((512, 512, 256), 2, 2, 4, 20.0, algorithm="stepwise", tile=None),
           row((512, 512, 256), 2, 2, 4, 30.0, physics="drude")]) + "\n")
    points = m.fig3_points(tmp_path)
    sweep = [p for p in points["blocks"] if p["kernel"] == "sweep"]
    assert sorted((p["order"], p["shape"][1], p["rate"]) for p in sweep) == [(2, 32, 13.2), (2, 64, 16.4),
                                                                              (2, 128, 22.8), (4, 32, 9.0)]
    assert all(p["blocks"] == m.blocks_per_stage(p["order"], p["size"], 4, p["shape"]) for p in sweep)
    assert [p["blocks"] for p in sorted(sweep, key=lambda p: p["shape"][1]) if p["order"] == 2] == [9, 17, 33]
    tall = sorted((p["nt"], p["rate"]) for p in points["nt"] if p["kernel"] == "sweep")
    assert tall == [(2, 42.0), (4, 44.0), (8, 48.0)]  # no stepwise, no physics row
    assert [p for p in points["blocks"] if p["kernel"] != "sweep"] == without["blocks"]
    fig = m.fig3_figure(points)
    names = [t.name for t in fig.data]
    assert "NO=2 DTS=2, registers, 512 x ny x 256" in names and "NO=2 DTS=2, registers, nz=256" in names
    (line,) = [t for t in fig.data if t.name == "NO=2 DTS=2, registers, one GPU, 512x512x256"]
    assert list(line.x) == [2, 4, 8] and list(line.y) == [42.0, 44.0, 48.0]


def test_every_picture_the_readme_shows_is_committed():
    """Each ``![...](assets/...)`` of the README names a file of the repository."""
    import re

    names = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", (ROOT / "README.md").read_text())
    assert "assets/lab_maxwell.png" in names and "assets/paper002_fig3_rate.png" in names
    assert [n for n in names if not (ROOT / n).is_file()] == []
