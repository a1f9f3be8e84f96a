"""3D snapshots of a wavefield with pyvista: volume rendering and isosurfaces, off screen.

Contract
--------
:func:`configure_offscreen` must run before pyvista or VTK is imported (this
module calls it at import): on a machine without a display it selects VTK's
EGL render window (``VTK_DEFAULT_OPENGL_WINDOW=vtkEGLRenderWindow``, Mesa
llvmpipe where there is no GPU) or, where libEGL is missing, OSMesa
(``vtkOSOpenGLRenderWindow``, needs libosmesa6), and turns pyvista's
off-screen mode on.  A value already in the environment is kept.

:func:`snapshot_plotter` builds a plotter of one ``(nx, ny, nz)`` field
(downsampled to at most ``max_points`` per side) with a volume rendering
(``mode="volume"``: a diverging colour map, transparent near zero),
isosurfaces at ``±level`` of the largest amplitude (``"isosurfaces"``) or
both.  :func:`render_png` renders one to PNG bytes (what the lab's snapshot
panel and the README assets use); :func:`jupyter_backend` picks the Jupyter
backend for interactive display: ``"client"`` (trame, rendering in the
browser, no GPU needed on the server) when ``pyvista[jupyter]`` is installed
(the ``lab`` extra), else ``"static"`` (a PNG rendered here).

VTK prints its warnings and errors (an EGL device it could not use, a
volume mapper falling back to another) straight to the process's error
stream, which a notebook shows under the cell in red; :func:`quiet_vtk`
keeps them out of it while :func:`render_png` renders, and hands them to a
list for whoever wants to read them.
"""

from __future__ import annotations

import contextlib
import ctypes.util
import importlib.util
import io
import os
import sys

import numpy as np

__all__ = ["CLIENT_PACKAGES", "configure_offscreen", "jupyter_backend", "offscreen_available", "quiet_vtk",
           "render_png", "show_snapshot", "snapshot_plotter"]


def configure_offscreen() -> str:
    """Select a headless VTK render window unless there is a display; return the window class chosen."""
    if os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"):
        return os.environ.get("VTK_DEFAULT_OPENGL_WINDOW", "")
    if "VTK_DEFAULT_OPENGL_WINDOW" not in os.environ:
        egl = ctypes.util.find_library("EGL")
        osmesa = ctypes.util.find_library("OSMesa")
        choice = "vtkEGLRenderWindow" if egl or not osmesa else "vtkOSOpenGLRenderWindow"
        os.environ["VTK_DEFAULT_OPENGL_WINDOW"] = choice
    return os.environ["VTK_DEFAULT_OPENGL_WINDOW"]


def offscreen_available() -> bool:
    """Whether VTK can render here: a display, libEGL or libOSMesa (without any, VTK would crash)."""
    if os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"):
        return True
    return bool(ctypes.util.find_library("EGL") or ctypes.util.find_library("OSMesa"))


configure_offscreen()

import pyvista as pv  # noqa: E402 - after choosing the render window

pv.OFF_SCREEN = not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


@contextlib.contextmanager
def quiet_vtk(messages: list | None = None):
    """Keep VTK's warnings and errors off the output while inside; append them to ``messages``.

    VTK's output window (``vtkWarningMacro``, ``vtkErrorMacro``) is swapped
    for one that keeps the text (:class:`pyvista.VtkErrorCatcher`, not sent
    to logging, whose last-resort handler would print it again), and VTK's
    logger is silenced (:func:`pyvista.vtk_verbosity`, pyvista >= 0.45).
    """
    verbosity = getattr(pv, "vtk_verbosity", None)
    with contextlib.ExitStack() as stack:
        if verbosity is not None:
            stack.enter_context(verbosity("off"))
        catcher = stack.enter_context(pv.VtkErrorCatcher(send_to_logging=False))
        try:
            yield catcher
        finally:
            if messages is not None:
                messages.extend(str(e).strip() for e in getattr(catcher, "events", None) or [])


#: What the ``"client"`` backend needs (``pyvista[jupyter]``, the ``lab`` extra): trame's VTK views, and
#: jupyter-server-proxy where the page reaches them through the Jupyter server.
CLIENT_PACKAGES = ("trame", "trame_vtk", "trame_vuetify", "jupyter_server_proxy")


def jupyter_backend() -> str:
    """``"client"`` where :data:`CLIENT_PACKAGES` are installed, else ``"static"`` (a PNG rendered here).

    The client backend draws the scene with vtk.js in the browser (it rotates,
    no GPU or display needed on the server) from a trame server in the kernel.
    The page reaches that server at ``localhost:<port>`` (a browser on the same
    machine), or through jupyter-server-proxy at ``<prefix><port>/`` where
    pyvista's theme says so: on Binder and JupyterHub pyvista sets it from
    ``JUPYTERHUB_SERVICE_PREFIX`` itself, and a server reached over an SSH
    tunnel sets ``PYVISTA_TRAME_SERVER_PROXY_PREFIX=<base_url>proxy/`` (pyvista's
    variable) before the kernel starts.  Nothing is changed here.
    """
    return "client" if all(importlib.util.find_spec(m) for m in CLIENT_PACKAGES) else "static"


def to_grid(field: np.ndarray, max_points: int = 128, spacing: float = 1.0):
    """A ``pyvista.ImageData`` with point data ``"u"`` from ``field``, strided to ``max_points`` per side."""
    u = np.asarray(field, dtype=np.float32)
    if u.ndim != 3:
        raise ValueError(f"field must be a 3D array (nx, ny, nz); got shape {u.shape}")
    stride = max(1, -(-max(u.shape) // max_points))
    u = u[::stride, ::stride, ::stride]
    grid = pv.ImageData(dimensions=u.shape, spacing=(spacing * stride,) * 3)
    grid.point_data["u"] = u.ravel(order="F")
    return grid


def snapshot_plotter(field: np.ndarray, mode: str = "both", level: float = 0.3, max_points: int = 128,
                     window_size=(720, 540), title: str | None = None, off_screen: bool | None = None,
                     vmax: float | None = None):
    """A pyvista plotter showing ``field`` (``mode``: ``"volume"``, ``"isosurfaces"`` or ``"both"``).

    Colours and isosurface levels are relative to ``vmax`` (default: the
    99.9th percentile of ``|u|``, so that a point source's own cell does not
    hide the waves; give one value to compare several snapshots).
    """
    if mode not in ("volume", "isosurfaces", "both"):
        raise ValueError(f"mode must be 'volume', 'isosurfaces' or 'both'; got {mode!r}")
    if not 0 < level < 1:
        raise ValueError(f"level must be between 0 and 1 (a fraction of max |u|); got {level}")
    grid = to_grid(field, max_points)
    if not vmax:
        from diamondlab.viz.fields import robust_max

        vmax = robust_max([grid.point_data["u"]], percentile=99.9)
    p = pv.Plotter(off_screen=pv.OFF_SCREEN if off_screen is None else off_screen, window_size=window_size)
    p.add_mesh(grid.outline(), color="#444444")
    if mode in ("volume", "both"):
        p.add_volume(grid, scalars="u", cmap="RdBu_r", clim=(-vmax, vmax),
                     opacity=[0.8, 0.45, 0.12, 0.0, 0.12, 0.45, 0.8], show_scalar_bar=mode == "volume",
                     scalar_bar_args=dict(title="u"))
    if mode in ("isosurfaces", "both"):
        for sign, colour in ((1, "#c0392b"), (-1, "#2471a3")):
            surf = grid.contour([sign * level * vmax], scalars="u")
            if surf.n_points:
                p.add_mesh(surf, color=colour, opacity=0.55 if mode == "both" else 0.9, smooth_shading=True)
    p.add_axes()
    p.camera_position = "iso"
    if title:
        p.add_text(title, font_size=10)
    return p


def render_png(field: np.ndarray, mode: str = "both", level: float = 0.3, max_points: int = 128,
               window_size=(720, 540), title: str | None = None, vmax: float | None = None,
               messages: list | None = None) -> bytes:
    """Render ``field`` off screen and return the PNG bytes (arguments of :func:`snapshot_plotter`).

    What VTK reports meanwhile is kept off the output (:func:`quiet_vtk`) and
    appended to ``messages`` when given.
    """
    from PIL import Image

    if not offscreen_available():
        raise RuntimeError("no way to render off screen here: install libegl1 (EGL, Mesa) or libosmesa6")
    with quiet_vtk(messages):
        p = snapshot_plotter(field, mode, level, max_points, window_size, title, off_screen=True, vmax=vmax)
        try:
            img = p.screenshot(return_img=True)
        finally:
            p.close()
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, format="PNG")
    return buf.getvalue()


@contextlib.contextmanager
def _without_vtk_wasm():
    """Keep trame-vtklocal out of the trame server pyvista starts.

    trame-pyvista loads trame-vtklocal where it is installed (``pyvista[jupyter]``
    installs it), whose set-up fetches VTK's WebAssembly build from
    gitlab.kitware.com in the background: tens of MB where the machine is
    online, a traceback under the cell where it is not.  The ``"client"``
    backend draws with vtk.js and needs none of it; an import of the module
    that already happened is left alone.
    """
    name = "trame.widgets.vtklocal"
    if name in sys.modules:
        yield
        return
    sys.modules[name] = None  # its import raises ImportError, which trame-pyvista skips
    try:
        yield
    finally:
        if sys.modules.get(name, False) is None:
            del sys.modules[name]


def show_snapshot(field: np.ndarray, mode: str = "both", level: float = 0.3, backend: str | None = None,
                  **kw):
    """Show ``field`` in Jupyter with :func:`jupyter_backend` (or ``backend``)."""
    p = snapshot_plotter(field, mode, level, **kw)
    with _without_vtk_wasm():
        return p.show(jupyter_backend=backend or jupyter_backend())
