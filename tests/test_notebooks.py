"""Every notebook runs top to bottom (small sizes, ``DIAMONDLAB_SMALL=1``)."""

import importlib.util
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(path, monkeypatch):
    monkeypatch.setenv("DIAMONDLAB_SMALL", "1")
    nb = nbformat.read(path, as_version=4)
    NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    ).execute()
    outputs = "".join(
        o.get("text", "") for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs
    )
    assert "Traceback" not in outputs, outputs[outputs.find("Traceback") - 1500:][:5000]
    if path.name == "06_paper_figures_and_table_1.ipynb":  # Table 1 from the package, signs restored
        assert "NO=4: C = -5/4, 4/3, -1/12" in outputs and "w_0 = 2 C_0 = -2.5" in outputs
    if path.name == "07_roofline_and_parallel_levels.ipynb":  # Fig. 7's ceilings are the model's
        from diamondlab.engine.measure.perfmodel import H100
        from diamondlab.viz.perf import roofline_ceilings

        loc, rate = roofline_ceilings(2, 4, 32, H100)["torre_row"]
        assert f"torre_row: locality {loc:.3f}, ceiling {rate:7.1f} G/s" in outputs
        assert "stepwise:" in outputs and "diamondtorre:" in outputs
        assert "  1 threads: DiamondTorre" in outputs  # Fig. 10 from one thread up
        assert "no GPU here" in outputs or "blocks of" in outputs  # and by blocks where a GPU is
    if path.name == "04_tuning.ipynb":  # stepwise rows named as stepwise, every point with its spread
        assert "DTS= 0" not in outputs and "Nt=  0" not in outputs
        assert "stepwise NO=2: " in outputs and "DiamondTorre NO=2 DTS=1 Nt=2: " in outputs
        assert "spread" in outputs and "not steady (no conclusion from these):" in outputs
    if path.name == "07_roofline_and_parallel_levels.ipynb":  # the CPU model's bound beside the points
        assert "the CPU model: " in outputs and "-bound" in outputs
    if path.name == "07_roofline_and_parallel_levels.ipynb":  # both equations' bytes from the tile geometry
        from diamondlab.engine.measure.perfmodel import yee_bytes_per_update
        from diamondlab.geometry import locality

        acoustic, maxwell = 4 / locality("torre_row", 2, 2, 8), yee_bytes_per_update("torre_row", 2, 2, 8)
        assert f"torre_row: {acoustic:10.1f} B {maxwell:13.1f} B" in outputs
    if path.name == "08_launch_schemes_and_tilings.ipynb":  # the package's numbers, not hand-written ones
        from diamondlab.geometry import compare_tilings

        torre = next(r for r in compare_tilings(2, 2, 8, ny=8) if r.name == "diamond_torre")
        assert f"one DiamondTorre {torre.locality:9.3f}" in outputs
        assert "a launch per stage" in outputs and "measured on" in outputs
    if path.name == "05_3d_snapshots.ipynb":  # the 3D view rotates where pyvista[jupyter] is installed
        from diamondlab.viz.snapshots import CLIENT_PACKAGES

        client = all(importlib.util.find_spec(m) for m in CLIENT_PACKAGES)
        assert f"jupyter backend: {'client' if client else 'static'}" in outputs
        assert "kitware" not in outputs  # no download of VTK's WebAssembly build (trame-vtklocal)
    if path.name == "09_maxwell_on_diamondtorre.ipynb":  # the slab against Fresnel and the two algorithms
        assert " 16 cells a wavelength: max |R - R_Fresnel| = 0.0" in outputs  # below 0.1, printed
        assert "bit for bit equal: True" in outputs and "M Yee cell updates/s on this CPU" in outputs
    if path.name == "00_quickstart.ipynb":
        assert "bit for bit equal: True" in outputs
        assert "in-place replay problems: []" in outputs
