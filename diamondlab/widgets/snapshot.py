"""Snapshot panel: a 3D picture (pyvista, off screen) of the current field.

Contract
--------
:class:`SnapshotPanel` takes a host copy of ``u^n`` when "Snapshot" is
pressed (only while the run is paused or done, so the copy is at one time
level), renders it off screen with :func:`diamondlab.viz.snapshots.render_png`
(volume rendering, isosurfaces or both; isosurface level as a fraction of
the largest amplitude) and shows the PNG in an ``ipywidgets.Image``: this
works in any JupyterLab, with or without a GPU or a display.  Until the
first snapshot the image is hidden and a line says how to take one (an
empty image is a broken-image icon in the browser).  What VTK
prints while rendering (warnings about the render window it picked) stays
out of the notebook: it is kept in :attr:`SnapshotPanel.vtk_messages`.  For a view
you can rotate, ``diamondlab.viz.snapshots.show_snapshot(panel.field)``
picks trame's client-side rendering where it is installed.  The last
snapshot is kept in :attr:`SnapshotPanel.field` (a NumPy array).
"""

from __future__ import annotations

import ipywidgets as widgets

__all__ = ["PLACEHOLDER", "SnapshotPanel", "gallery"]

#: What the panel says before its first snapshot (in place of an empty image).
PLACEHOLDER = "No snapshot yet: pause the run (or let it finish), then press Snapshot."


class SnapshotPanel:
    """See the module contract.  ``source()`` returns the simulation to photograph."""

    def __init__(self, source, busy=None):
        self.source = source
        self.busy = busy or (lambda: False)
        self.mode = widgets.ToggleButtons(options=["both", "volume", "isosurfaces"], value="both",
                                          description="show")
        self.level = widgets.FloatSlider(value=0.3, min=0.05, max=0.95, step=0.05,
                                         description="iso level", readout_format=".2f")
        self.take = widgets.Button(description="Snapshot", icon="camera", button_style="info")
        self.message = widgets.HTML(f"<i style='color:#555'>{PLACEHOLDER}</i>")
        self.image = widgets.Image(format="png", layout=widgets.Layout(max_width="720px", display="none"))
        self.field = None
        self.title = ""
        self.vtk_messages: list[str] = []
        self.take.on_click(lambda _: self.snapshot())
        self.mode.observe(lambda _: self.render(), names="value")
        self.level.observe(lambda _: self.render(), names="value")
        self.widget = widgets.VBox([widgets.HBox([self.take, self.mode]), self.level, self.message,
                                    self.image])
        self.widget.add_class("diamondlab-snapshot")

    def snapshot(self) -> bool:
        """Copy the current field and render it; False (with a message) while the run is running."""
        if self.busy():
            self.message.value = "<span style='color:#c0392b'>pause the run first</span>"
            return False
        sim = self.source()
        self.field = sim.field
        self.title = f"u at n = {sim.time_step}, grid {sim.shape}"
        return self.render()

    def render(self) -> bool:
        """Render the kept field with the current mode and level."""
        if self.field is None:
            return False
        try:
            from diamondlab.viz.snapshots import render_png

            self.vtk_messages = []
            self.image.value = render_png(self.field, self.mode.value, self.level.value, title=self.title,
                                          messages=self.vtk_messages)
            self.image.layout.display = None  # shown from the first picture on
            self.message.value = f"{self.title}: {self.mode.value}, rendered off screen"
            return True
        except Exception as err:  # noqa: BLE001 - shown in the panel
            text = f"cannot render: {type(err).__name__}: {err}"
            self.message.value = f"<span style='color:#c0392b'>{text}</span>"
            return False


def gallery(frames, mode: str = "both", level: float = 0.3, width: int = 320) -> widgets.HBox:
    """Off-screen renderings of ``(step, field)`` frames side by side (e.g. ``sim.snapshots.frames``)."""
    from diamondlab.viz.snapshots import render_png

    images = []
    for step, field in frames:
        png = render_png(field, mode, level, window_size=(width, int(width * 0.8)), title=f"n = {step}")
        images.append(widgets.Image(value=png, format="png", layout=widgets.Layout(width=f"{width}px")))
    return widgets.HBox(images, layout=widgets.Layout(flex_flow="row wrap"))
