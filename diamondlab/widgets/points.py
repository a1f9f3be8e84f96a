"""Sources and receivers controllers: add, move (edit the position), remove; wavelet and frequency.

Contract
--------
:class:`PointsPanel` edits two lists shown as rows of widgets: sources
(position in grid cells, wavelet ``"ricker"`` or ``"gaussian_derivative"``,
peak frequency, amplitude) and receivers (position in grid cells), plus the
sponge width and the initial condition.  :meth:`PointsPanel.values` returns
plain tuples for :class:`~diamondlab.widgets.controls.RunConfig`;
:func:`make_points` turns them into :class:`~diamondlab.sources.Source` and
:class:`~diamondlab.sources.Receiver` objects (``units="grid"``).  Adding
the first source switches the initial condition to ``"zero"`` (a quiet
medium excited by the source); every change calls the listeners given to
:meth:`PointsPanel.on_change`, so the controllers validate it at once
(a source outside the grid or a frequency that aliases becomes a message).
"""

from __future__ import annotations

import ipywidgets as widgets

__all__ = ["PointsPanel", "make_points"]

WAVELETS = ("ricker", "gaussian_derivative")


def make_points(sources=(), receivers=()):
    """Source and Receiver lists from ``(x, y, z, wavelet, frequency, amplitude)`` and ``(x, y, z)``."""
    from diamondlab.sources import Receiver, Source

    srcs = [Source((x, y, z), wavelet, frequency=f, amplitude=a, units="grid")
            for x, y, z, wavelet, f, a in sources]
    recs = [Receiver((x, y, z), units="grid", name=f"r{i}") for i, (x, y, z) in enumerate(receivers)]
    return srcs, recs


class _Row:
    def __init__(self, panel, kind: str, position, wavelet="ricker", frequency=0.05, amplitude=1.0):
        lay = widgets.Layout(width="120px")
        self.kind = kind
        self.xyz = [widgets.FloatText(value=float(v), description=a, layout=lay,
                                      style={"description_width": "14px"}) for a, v in zip("xyz", position,
                                                                                         strict=True)]
        self.remove = widgets.Button(icon="trash", tooltip=f"remove this {kind}",
                                     layout=widgets.Layout(width="40px"))
        parts = [*self.xyz]
        if kind == "source":
            self.wavelet = widgets.Dropdown(options=list(WAVELETS), value=wavelet,
                                            layout=widgets.Layout(width="170px"))
            self.frequency = widgets.FloatText(value=frequency, description="f", layout=lay,
                                               style={"description_width": "14px"})
            self.amplitude = widgets.FloatText(value=amplitude, description="amp", layout=lay,
                                               style={"description_width": "30px"})
            parts += [self.wavelet, self.frequency, self.amplitude]
        self.widget = widgets.HBox([*parts, self.remove])
        for w in parts:
            w.observe(lambda _: panel._changed(), names="value")
        self.remove.on_click(lambda _: panel.remove(self))

    def value(self) -> tuple:
        pos = tuple(float(w.value) for w in self.xyz)
        if self.kind == "source":
            return (*pos, self.wavelet.value, float(self.frequency.value), float(self.amplitude.value))
        return pos


class PointsPanel:
    """See the module contract.  ``shape()`` gives the grid (new points go to its centre region)."""

    def __init__(self, shape=lambda: (64, 64, 64), sources=(), receivers=(), sponge: int = 16):
        self.shape = shape
        self.sources: list[_Row] = []
        self.receivers: list[_Row] = []
        self._listeners = []
        self._quiet = False
        self.add_source_button = widgets.Button(description="Add source", icon="plus")
        self.add_receiver_button = widgets.Button(description="Add receiver", icon="plus")
        self.sponge = widgets.BoundedIntText(value=sponge, min=0, max=256, description="sponge (cells)",
                                             style={"description_width": "110px"})
        self.initial = widgets.ToggleButtons(options=["gaussian", "zero"], value="gaussian",
                                             description="initial", style={"description_width": "60px"})
        self.source_box = widgets.VBox()
        self.receiver_box = widgets.VBox()
        self.add_source_button.on_click(lambda _: self.add_source())
        self.add_receiver_button.on_click(lambda _: self.add_receiver())
        self.sponge.observe(lambda _: self._changed(), names="value")
        self.initial.observe(lambda _: self._changed(), names="value")
        self._quiet = True
        for s in sources:
            self.add_source(s[:3], *s[3:])
        for r in receivers:
            self.add_receiver(r)
        self._quiet = False
        self.widget = widgets.VBox([
            widgets.HTML("<b>sources</b> (positions in grid cells; f in 1/time units, dt = Courant·h/c)"),
            self.source_box, self.add_source_button,
            widgets.HTML("<b>receivers</b> (traces recorded every step)"), self.receiver_box,
            self.add_receiver_button, widgets.HBox([self.sponge, self.initial]),
        ])
        self.widget.add_class("diamondlab-points")

    # ------------------------------------------------------------ editing
    def add_source(self, position=None, wavelet: str = "ricker", frequency: float = 0.05,
                   amplitude: float = 1.0) -> None:
        """Add a source (default: at the grid centre, shifted for each new one)."""
        if position is None:
            nx, ny, nz = self.shape()
            k = len(self.sources)
            position = (nx // 2 - 4 * k, ny // 2, nz // 2)
        row = _Row(self, "source", position, wavelet, frequency, amplitude)
        self.sources.append(row)
        if len(self.sources) == 1 and not self._quiet:
            self.initial.value = "zero"
        self._relayout()

    def add_receiver(self, position=None) -> None:
        """Add a receiver (default: a quarter of the grid along x from the centre)."""
        if position is None:
            nx, ny, nz = self.shape()
            k = len(self.receivers)
            position = (min(nx - 1, nx // 2 + nx // 4 - 2 * k), ny // 2, nz // 2)
        self.receivers.append(_Row(self, "receiver", position))
        self._relayout()

    def remove(self, row) -> None:
        """Remove a source or receiver row."""
        for rows in (self.sources, self.receivers):
            if row in rows:
                rows.remove(row)
        self._relayout()

    def move(self, kind: str, index: int, position) -> None:
        """Move source or receiver ``index`` to ``position`` (grid cells)."""
        row = (self.sources if kind == "source" else self.receivers)[index]
        self._quiet = True
        try:
            for w, v in zip(row.xyz, position, strict=True):
                w.value = float(v)
        finally:
            self._quiet = False
        self._changed()

    def _relayout(self) -> None:
        self.source_box.children = [r.widget for r in self.sources]
        self.receiver_box.children = [r.widget for r in self.receivers]
        self._changed()

    # ------------------------------------------------------------- values
    def values(self) -> dict:
        """``{"sources": (...), "receivers": (...), "sponge": int, "initial": str}`` for the run config."""
        return {"sources": tuple(r.value() for r in self.sources),
                "receivers": tuple(r.value() for r in self.receivers),
                "sponge": int(self.sponge.value), "initial": self.initial.value}

    def on_change(self, listener) -> None:
        self._listeners.append(listener)

    def _changed(self) -> None:
        if self._quiet:
            return
        for listener in list(self._listeners):
            listener()

    def set_disabled(self, disabled: bool) -> None:
        """Lock the panel while a run is in progress."""
        for w in (self.add_source_button, self.add_receiver_button, self.sponge, self.initial):
            w.disabled = disabled
        for row in self.sources + self.receivers:
            for w in row.widget.children:
                w.disabled = disabled
