"""3D snapshots render off screen (EGL or OSMesa, no display, no GPU)."""

import os

import numpy as np
import pytest

from diamondlab.numerics import gaussian_pulse

snapshots = pytest.importorskip("diamondlab.viz.snapshots")
needs_gl = pytest.mark.skipif(not snapshots.offscreen_available(),
                              reason="no display, libEGL or libOSMesa: apt-get install libegl1 libosmesa6")


@needs_gl
@pytest.mark.parametrize("mode", ["volume", "isosurfaces", "both"])
def test_render_png(mode):
    u = gaussian_pulse((24, 20, 16), width=3.0) - 0.5 * gaussian_pulse((24, 20, 16), width=6.0)
    png = snapshots.render_png(u, mode, window_size=(240, 180))
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 1000


def test_backend_is_chosen_automatically(monkeypatch):
    import importlib.util

    import pyvista as pv

    proxy = pv.global_theme.trame.server_proxy_enabled
    installed = all(importlib.util.find_spec(m) for m in snapshots.CLIENT_PACKAGES)
    assert snapshots.jupyter_backend() == ("client" if installed else "static")
    assert pv.global_theme.trame.server_proxy_enabled is proxy  # pyvista's own choice, left alone
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda m: None if m == "jupyter_server_proxy" else real(m))
    assert snapshots.jupyter_backend() == "static"
    if not os.environ.get("DISPLAY"):
        assert os.environ["VTK_DEFAULT_OPENGL_WINDOW"] in ("vtkEGLRenderWindow", "vtkOSOpenGLRenderWindow")


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="mode must be"):
        snapshots.snapshot_plotter(np.zeros((4, 4, 4)), mode="slices")
    with pytest.raises(ValueError, match="3D array"):
        snapshots.to_grid(np.zeros((4, 4)))



def _complain():
    import vtk

    lut = vtk.vtkLookupTable()
    lut.SetRange(1, 0)  # VTK: "Bad table range"
    lut.Build()
    vtk.vtkOutputWindow.GetInstance().DisplayWarningText("a render window warning\n")


def test_vtk_messages_stay_off_the_output(capfd):
    _complain()
    shown = capfd.readouterr()
    assert "Bad table range" in shown.err + shown.out  # what a notebook shows under the cell
    messages = []
    with snapshots.quiet_vtk(messages):
        _complain()
    shown = capfd.readouterr()
    assert "Bad table range" not in shown.err + shown.out and "warning" not in shown.err + shown.out
    assert any("Bad table range" in m for m in messages) and "a render window warning" in messages


@needs_gl
def test_snapshot_panel_renders_without_vtk_output(capfd, monkeypatch):
    from diamondlab.widgets.snapshot import SnapshotPanel

    plotter = snapshots.snapshot_plotter

    def complaining_plotter(*args, **kw):  # as VTK does on some machines while it sets up a render window
        _complain()
        return plotter(*args, **kw)

    monkeypatch.setattr(snapshots, "snapshot_plotter", complaining_plotter)

    class Sim:
        field = gaussian_pulse((16, 16, 16), width=3.0)
        time_step, shape = 0, (16, 16, 16)

    panel = SnapshotPanel(lambda: Sim)
    assert panel.snapshot() and panel.image.value[:4] == b"\x89PNG"
    shown = capfd.readouterr()
    assert "Bad table range" not in shown.err + shown.out and "warning" not in shown.err + shown.out
    assert "a render window warning" in panel.vtk_messages and "VTK" not in panel.message.value


def test_the_client_view_starts_no_download_of_vtks_webassembly():
    """trame-vtklocal (installed with pyvista[jupyter]) fetches VTK's WebAssembly build when its trame
    module loads; the client backend keeps it out while pyvista starts the server, and only then."""
    import sys

    name = "trame.widgets.vtklocal"
    had = sys.modules.pop(name, None)
    try:
        with snapshots._without_vtk_wasm(), pytest.raises(ImportError):
            __import__(name)
        assert name not in sys.modules
    finally:
        if had is not None:
            sys.modules[name] = had
