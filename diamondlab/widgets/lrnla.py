"""LRnLA panels that follow the controllers: conoids and prism, locality and asynchrony, stage explorer.

Contract
--------
:class:`ShapesPanel` shows, for the (NO, DTS, Nt) of a
:class:`~diamondlab.widgets.controls.RunConfig`, the conoid figure and the
locality/asynchrony figure of :mod:`diamondlab.viz.lrnla`, and redraws
both in place (``FigureWidget``, one ``batch_update`` each) when
:meth:`ShapesPanel.update` is called with a new configuration.

:class:`StageExplorer` steps or plays (an ``ipywidgets.Play`` linked to a
slider) through the stages of one sweep of a teaching-size domain with
the current (NO, DTS, Nt): the 3D picture of
:class:`~diamondlab.viz.stages.SweepPicture` (done stages coloured by
stage, the current stage, one torre's dependencies) and, beside it, the
map of time levels after the same number of stages (paper 000, figure 9).
The domain is the run's grid when it is small enough to draw, else the
largest multiple of the tile that is (``SweepPicture.MAX_VERTICES``).
"""

from __future__ import annotations

import ipywidgets as widgets
import plotly.graph_objects as go

from diamondlab.geometry import stage_schedule
from diamondlab.viz.lrnla import conoid_figure, locality_figure, time_levels_figure
from diamondlab.viz.stages import SweepPicture

__all__ = ["ShapesPanel", "StageExplorer", "explorer_domain", "shapes_app"]


def _replace_figure(target: go.FigureWidget, source: go.Figure) -> None:
    """Make ``target`` show ``source`` (same trace count: in place; else traces replaced)."""
    with target.batch_update():
        if len(target.data) == len(source.data):
            for old, new in zip(target.data, source.data, strict=True):
                old.update(new.to_plotly_json(), overwrite=True)
        else:
            target.data = []
            target.add_traces(list(source.data))
        target.layout.update(source.layout.to_plotly_json(), overwrite=True)


class ShapesPanel:
    """Conoids, the DiamondTorre prism, locality and asynchrony for the current configuration."""

    MAX_NT = 32

    def __init__(self, config):
        self.note = widgets.HTML()
        self.conoids = go.FigureWidget(conoid_figure(config.order, config.size, min(config.nt, self.MAX_NT)))
        self.locality = go.FigureWidget(locality_figure(config.order, config.size, config.nt, config.shape))
        self.widget = widgets.VBox([self.note, self.conoids, self.locality])
        self.widget.add_class("diamondlab-shapes")
        self.key = None
        self.update(config)

    def update(self, config, message: str = "") -> None:
        """Redraw for ``config`` (skipped when its NO, DTS, Nt and grid did not change or it cannot run)."""
        key = (config.order, config.size, config.nt, tuple(config.shape))
        if message or key == self.key:
            if message:
                self.note.value = f"<i>not redrawn: {message}</i>"
            return
        nt = min(config.nt, self.MAX_NT)
        clipped = f" (drawn with Nt={nt})" if nt < config.nt else ""
        _replace_figure(self.conoids, conoid_figure(config.order, config.size, nt))
        _replace_figure(self.locality, locality_figure(config.order, config.size, config.nt, config.shape))
        self.note.value = (f"<b>NO={config.order}, DTS={config.size}, Nt={config.nt}</b>{clipped}: the "
                           "torre is the intersection of the two conoids; rotate with the mouse.")
        self.key = key


def explorer_domain(order: int, size: int, nt: int, shape, max_vertices: int | None = None):
    """``(nx, ny)`` of the explorer's domain: the grid's, shrunk to at most ``max_vertices`` vertices."""
    cap = max_vertices or SweepPicture.MAX_VERTICES
    r = (order // 2) * size
    nx, ny = int(shape[0]), int(shape[1])
    while nx * ny * nt > cap and (nx > 2 * r or ny > 2 * r):
        if nx >= ny and nx > 2 * r:
            nx = max(2 * r, nx * 3 // 4)
        else:
            ny = max(2 * r, ny * 3 // 4)
    return nx, ny


class StageExplorer:
    """Step or play through the stages of a sweep; see the module contract."""

    def __init__(self, config, interval_ms: int = 600):
        self.caption = widgets.HTML()
        self.stage = widgets.IntSlider(value=0, min=0, max=1, description="stages done",
                                       continuous_update=True, layout=widgets.Layout(width="420px"))
        self.play = widgets.Play(value=0, min=0, max=1, step=1, interval=interval_ms, description="play")
        widgets.link((self.play, "value"), (self.stage, "value"))
        self.picture = None
        self.view3d = go.FigureWidget()
        self.levels = go.FigureWidget()
        self.stage.observe(self._on_stage, names="value")
        self.widget = widgets.VBox([
            widgets.HBox([self.play, self.stage]), self.caption,
            widgets.HBox([self.view3d, self.levels], layout=widgets.Layout(width="100%")),
        ])
        self.widget.add_class("diamondlab-stages")
        self.key = None
        self.update(config)

    def update(self, config, message: str = "") -> None:
        """Rebuild the sweep for ``config`` (skipped when unchanged or when it cannot run)."""
        if message:
            return
        nx, ny = explorer_domain(config.order, config.size, config.nt, config.shape)
        key = (config.order, config.size, config.nt, nx, ny)
        if key == self.key:
            return
        try:
            schedule = stage_schedule(config.order, config.size, config.nt, nx, ny)
            picture = SweepPicture(schedule)
        except ValueError as err:
            self.caption.value = f"<i>cannot draw this sweep: {err}</i>"
            return
        self.picture, self.key = picture, key
        self._boundary = int(schedule.boundary.sum())
        middle = schedule.nstages // 2
        _replace_figure(self.view3d, picture.figure(middle))
        _replace_figure(self.levels, time_levels_figure(schedule, middle))
        self.view3d.layout.width = None
        with self.stage.hold_trait_notifications():
            self.play.max = self.stage.max = schedule.nstages - 1
            self.stage.value = middle
        self._draw(middle)

    def _on_stage(self, change) -> None:
        if self.picture is not None:
            self._draw(int(change["new"]))

    def _draw(self, stage: int) -> None:
        p = self.picture
        traces = p.traces(stage)
        with self.view3d.batch_update():
            for trace, data in zip(self.view3d.data[:5], traces, strict=True):
                trace.update(data)
            self.view3d.layout.title.text = p.caption(stage)
        _replace_figure(self.levels, time_levels_figure(p.schedule, stage))
        s = p.schedule
        self.caption.value = (
            f"<b>{p.caption(stage)}</b><br>domain {s.nx}×{s.ny} (each column a z line), NO={s.tile.order}, "
            f"DTS={s.tile.size}, Nt={s.nt}: {s.nstages} stages, {s.ntorres} torres, "
            f"{self._boundary} cut by the boundary. Colours: done stages by stage; red the "
            "current stage (its torres are independent); purple one torre, green the torres it reads "
            "from, yellow those that read from it."
        )


def shapes_app(order: int = 2, size: int = 2, nt: int = 8, shape=(64, 64, 64)) -> widgets.VBox:
    """NO, DTS and Nt controllers with a :class:`ShapesPanel` that follows them (notebook 01)."""
    from diamondlab.widgets.controls import RunConfig, check_config

    style = {"description_width": "80px"}
    no = widgets.Dropdown(options=[2, 4, 6, 8], value=order, description="NO", style=style)
    dts = widgets.IntSlider(value=size, min=1, max=8, description="DTS", style=style)
    nts = widgets.IntSlider(value=nt, min=1, max=64, description="Nt", style=style)
    message = widgets.HTML()
    panel = ShapesPanel(RunConfig(order=order, size=size, nt=nt, shape=tuple(shape)))

    def changed(_=None):
        cfg = RunConfig(order=no.value, size=dts.value, nt=nts.value, shape=tuple(shape))
        text = check_config(cfg)
        message.value = f"<span style='color:#c0392b'>{text}</span>" if text else ""
        panel.update(cfg, text)

    for w in (no, dts, nts):
        w.observe(changed, names="value")
    app = widgets.VBox([widgets.HBox([no, dts, nts]), message, panel.widget])
    app.panel = panel
    app.controls = (no, dts, nts)
    return app
