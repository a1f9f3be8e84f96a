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


def test_backend_is_chosen_automatically():
    assert snapshots.jupyter_backend() in ("client", "static")
    if not os.environ.get("DISPLAY"):
        assert os.environ["VTK_DEFAULT_OPENGL_WINDOW"] in ("vtkEGLRenderWindow", "vtkOSOpenGLRenderWindow")


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="mode must be"):
        snapshots.snapshot_plotter(np.zeros((4, 4, 4)), mode="slices")
    with pytest.raises(ValueError, match="3D array"):
        snapshots.to_grid(np.zeros((4, 4)))
