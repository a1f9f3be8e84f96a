"""Every notebook runs top to bottom (small sizes, ``DIAMONDLAB_SMALL=1``)."""

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


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
    assert "Traceback" not in outputs
    if path.name == "00_quickstart.ipynb":
        assert "bit for bit equal: True" in outputs
        assert "in-place replay problems: []" in outputs
