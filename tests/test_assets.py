import importlib.util
import xml.etree.ElementTree as ET
from pathlib import Path

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


def test_the_notebooks_are_what_their_generator_writes():
    """assets/make_notebooks.py is the notebooks' one source: every committed cell is in it, and no other."""
    import nbformat

    m = _module("make_notebooks")
    committed = {path.name: path for path in (ROOT / "notebooks").glob("*.ipynb")}
    assert sorted(committed) == sorted(m.NOTEBOOKS), "a notebook without a source, or a source not written"
    for name, cells in m.NOTEBOOKS.items():
        written = _cells(m._nb(cells))
        on_disk = _cells(nbformat.read(committed[name], as_version=4))
        assert on_disk == written, f"notebooks/{name} differs from assets/make_notebooks.py: run it"


def test_the_size_sweep_plot_draws_the_bench_rows():
    plot = _module("plot_size_sweep")
    rows = [{"shape": s, "order": 8, "medium": "constant velocity, sponge 0", "backend": "cuda", "ratio": r}
            for s, r in (([384, 384, 384], 1.10), ([256, 256, 256], 1.19))]
    fig = plot.figure(rows)
    (line,) = [t for t in fig.data if t.name.startswith("NO=8")]
    assert list(line.x) == [256**3, 384**3] and list(line.y) == [1.19, 1.10]
