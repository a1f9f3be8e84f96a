"""Every notebook runs top to bottom (small sizes, ``DIAMONDLAB_SMALL=1``) and prints what it must.

Where the browser tests run (Chromium, playwright, JupyterLab: tests/test_browser.py), each notebook is
run there with Run All and its page's text checked by :func:`check_outputs`, so it is not run here a second
time; ``DIAMONDLAB_NOTEBOOKS_HERE=1`` runs it here too.
"""

import importlib.util
import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


def run_in_the_browser_tests() -> bool:
    """Whether tests/test_browser.py runs every notebook here, with Run All in JupyterLab, and checks its
    outputs with :func:`check_outputs` (Chromium, playwright and JupyterLab present): then the notebooks
    are not run a second time here."""
    from test_browser import CHROMIUM

    return Path(CHROMIUM).exists() and all(importlib.util.find_spec(m) for m in ("playwright", "jupyterlab"))


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(path, monkeypatch):
    if run_in_the_browser_tests() and os.environ.get("DIAMONDLAB_NOTEBOOKS_HERE") != "1":
        pytest.skip("run with Run All in JupyterLab and checked there (tests/test_browser.py; "
                    "DIAMONDLAB_NOTEBOOKS_HERE=1 runs it here too)")
    monkeypatch.setenv("DIAMONDLAB_SMALL", "1")
    nb = nbformat.read(path, as_version=4)
    NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    ).execute()
    outputs = "".join(
        o.get("text", "") for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs
    )
    check_outputs(path.name, outputs)


def check_outputs(name: str, outputs: str) -> None:
    """What notebook ``name``'s printed ``outputs`` must hold (the text of its run, here or in the
    browser)."""
    assert "Traceback" not in outputs, outputs[outputs.find("Traceback") - 1500:][:5000]
    if name == "06_paper_figures_and_table_1.ipynb":  # Table 1 from the package, signs restored
        assert "NO=4: C = -5/4, 4/3, -1/12" in outputs and "w_0 = 2 C_0 = -2.5" in outputs
    if name == "07_roofline_and_parallel_levels.ipynb":  # Fig. 7's ceilings are the model's
        from diamondlab.engine.measure.perfmodel import H100
        from diamondlab.viz.perf import roofline_ceilings

        loc, rate = roofline_ceilings(2, 4, 32, H100)["torre_row"]
        assert f"torre_row: locality {loc:.3f}, ceiling {rate:7.1f} G/s" in outputs
        assert "stepwise:" in outputs and "diamondtorre:" in outputs
        assert "  1 threads: DiamondTorre" in outputs  # Fig. 10 from one thread up
        assert "no GPU here" in outputs or "blocks of" in outputs  # and by blocks where a GPU is
    if name == "04_tuning.ipynb":  # stepwise rows named as stepwise, every point with its spread
        assert "DTS= 0" not in outputs and "Nt=  0" not in outputs
        assert "stepwise NO=2: " in outputs and "DiamondTorre NO=2 DTS=1 Nt=2: " in outputs
        assert "spread" in outputs and "not steady (no conclusion from these):" in outputs
    if name == "07_roofline_and_parallel_levels.ipynb":  # the CPU model's bound beside the points
        assert "the CPU model: " in outputs and "-bound" in outputs
    if name == "07_roofline_and_parallel_levels.ipynb":  # both equations' bytes from the tile geometry
        from diamondlab.engine.measure.perfmodel import yee_bytes_per_update
        from diamondlab.geometry import locality

        acoustic, maxwell = 4 / locality("torre_row", 2, 2, 8), yee_bytes_per_update("torre_row", 2, 2, 8)
        assert f"torre_row: {acoustic:10.1f} B {maxwell:13.1f} B" in outputs
    if name == "08_launch_schemes_and_tilings.ipynb":  # the package's numbers, not hand-written ones
        from diamondlab.geometry import compare_tilings

        torre = next(r for r in compare_tilings(2, 2, 8, ny=8) if r.name == "diamond_torre")
        assert f"one DiamondTorre {torre.locality:9.3f}" in outputs
        assert "a launch per stage" in outputs and "measured on" in outputs
    if name == "05_3d_snapshots.ipynb":  # the 3D view rotates where pyvista[jupyter] is installed
        from diamondlab.viz.snapshots import CLIENT_PACKAGES

        client = all(importlib.util.find_spec(m) for m in CLIENT_PACKAGES)
        assert f"jupyter backend: {'client' if client else 'static'}" in outputs
        assert "kitware" not in outputs  # no download of VTK's WebAssembly build (trame-vtklocal)
    if name == "09_maxwell_on_diamondtorre.ipynb":  # the slab against Fresnel and the two algorithms
        assert " 16 cells a wavelength: max |R - R_Fresnel| = 0.0" in outputs  # below 0.1, printed
        assert "bit for bit equal: True" in outputs and "M Yee cell updates/s on this CPU" in outputs
    if name == "00_quickstart.ipynb":
        assert "bit for bit equal: True" in outputs
        assert "in-place replay problems: []" in outputs


def test_every_notebook_is_run_and_checked_by_a_browser_test():
    """The browser tests that stand in for :func:`test_notebook_runs` cover every notebook: Run All on each
    of :data:`test_browser.FIGURES`, notebook 03 in its own test, the paper notebooks the Run All test
    leaves out in theirs."""
    import test_browser

    covered = set(test_browser.FIGURES) | set(test_browser.PAPER_NOTEBOOKS) | {test_browser.NOTEBOOK}
    assert {p.name for p in NOTEBOOKS} <= covered, sorted({p.name for p in NOTEBOOKS} - covered)
