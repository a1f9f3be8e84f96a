"""LRnLA panels that follow the controllers: conoids and prism, locality and asynchrony, stage explorer.

Contract
--------
:class:`ShapesPanel` shows, for the (NO, DTS, Nt) of a
:class:`~diamondlab.widgets.controls.RunConfig`, the conoid figure and the
locality/asynchrony figure of :mod:`diamondlab.viz.lrnla`, and redraws
both in place (``FigureWidget``, one ``batch_update`` each) when
:meth:`ShapesPanel.update` is called with a new configuration; a checkbox
shows or hides the torres the torre reads from.

:class:`StageExplorer` steps or plays (an ``ipywidgets.Play`` linked to a
slider) through the stages of one sweep of a teaching-size domain with
the current (NO, DTS, Nt): the 3D picture of
:class:`~diamondlab.viz.stages.SweepPicture` (done stages coloured by
stage, the current stage, one torre outlined and its dependencies, which a
checkbox shows through translucent stages) and, beside it, the map of time
levels after the same number of stages (paper 000, figure 9); the two
figures have fixed widths and wrap on a narrow screen instead of being cut.
The domain is the run's grid when it is small enough to draw, else the
largest multiple of the tile that is (``SweepPicture.MAX_VERTICES``).  Its
"order" menu plays the sweep stage by stage (paper 000, section 6) or in
the launch order of the CUDA engine's sweep: diagonal bands of ``B`` torres,
stage by stage inside a band (:meth:`~diamondlab.geometry.StageSchedule.launch_groups`),
with the engine's own ``B`` for the (NO, DTS) among the choices
(:meth:`~diamondlab.engine.backends.cuda.CUDABackend.launch_band`).

Both panels take ``equation="maxwell"`` (a
:class:`~diamondlab.widgets.maxwell_controls.MaxwellConfig`, or any
configuration with ``order``, ``size``, ``nt`` and ``shape``; ``size``/``nt``
0: the Yee backend's defaults): the torre, its conoids and the torres it reads
from are then the staggered scheme's (``2 Nt`` half-step tiers of the Yee
order's tile, :mod:`diamondlab.viz.yee`), the locality figure puts the Yee
numbers next to the acoustic ones of the same tile, and the explorer plays
the Yee sweep half step by half step in the Yee CUDA engine's order.

:class:`YeePanel` (Maxwell only) draws paper 002's Fig. 2 for the
configuration: the Yee cell with what a chosen component's update reads
(:func:`~diamondlab.viz.yee.yee_cell_figure`) and a torre of H and E tiles
with what a chosen tier reads on the tier below
(:func:`~diamondlab.viz.yee.yee_tiles_figure`); both redrawn in place by
:meth:`YeePanel.update` (a new order, DTS or Nt) and by its own menus.
"""

from __future__ import annotations

import ipywidgets as widgets
import plotly.graph_objects as go

from diamondlab.engine.backends.cuda import CUDABackend
from diamondlab.geometry import GraphStencil, stage_schedule
from diamondlab.viz.figurewidget import FigureWidget
from diamondlab.viz.lrnla import conoid_figure, locality_figure, time_levels_figure
from diamondlab.viz.stages import SweepPicture

__all__ = ["ShapesPanel", "StageExplorer", "YeePanel", "explorer_domain", "shapes_app", "xt_app"]

READS_LABEL = "show the torres it reads from"


def _tiling(config, equation: str) -> tuple[int, int]:
    """``(DTS, Nt)`` of ``config``; for Maxwell a 0 is the Yee backend's default."""
    size, nt = int(config.size), int(config.nt)
    if equation == "maxwell" and not (size and nt):
        from diamondlab.engine.backends.yee_cpu import YeeCPUBackend

        default_size, default_nt = YeeCPUBackend.default_tiling(int(config.order))
        size, nt = size or default_size, nt or default_nt
    return size, nt


def _replace_figure(target: go.FigureWidget | None, source: go.Figure) -> go.FigureWidget:
    """Make ``target`` show ``source`` (same trace count: in place; else traces replaced) and return it; with
    no ``target`` yet, a figure widget built with ``source``'s data (a view drawn from its first state, as
    Run All may draw it, shows the figure, not empty axes)."""
    if target is None:
        return FigureWidget(source)
    with target.batch_update():
        if len(target.data) == len(source.data):
            for old, new in zip(target.data, source.data, strict=True):
                old.update(new.to_plotly_json(), overwrite=True)
        else:
            target.data = []
            target.add_traces(list(source.data))
        target.layout.update(source.layout.to_plotly_json(), overwrite=True)
    return target


class ShapesPanel:
    """Conoids, the DiamondTorre prism, locality and asynchrony for the current configuration.

    The "show the torres it reads from" checkbox shows or hides them in the
    conoid figure.  The note above the figures says what they show, or why
    they were not redrawn for a configuration that cannot run (until a valid
    one comes).
    """

    MAX_NT = 32

    def __init__(self, config, equation: str = "acoustic"):
        GraphStencil(equation, config.order)  # the equation and its order checked before anything is drawn
        self.equation = equation
        self.note = widgets.HTML()
        self.show_reads = widgets.Checkbox(value=True, description=READS_LABEL, indent=False)
        self.conoids = self.locality = None  # built by update() with their data
        self.show_reads.observe(self._toggle_reads, names="value")
        self.key = None
        self._text = ""
        self.update(config)
        self.conoids = self.conoids or FigureWidget()  # a first configuration that cannot run: empty
        self.locality = self.locality or FigureWidget()
        self.widget = widgets.VBox([self.note, self.show_reads, self.conoids, self.locality])
        self.widget.add_class("diamondlab-shapes")

    def update(self, config, message: str = "") -> None:
        """Redraw for ``config`` (skipped when its NO, DTS, Nt and grid did not change or it cannot run)."""
        if message:
            self.note.value = f"<i>not redrawn: {message}</i>"
            return
        size, full = _tiling(config, self.equation)
        key = (config.order, size, full, tuple(config.shape))
        if key != self.key:
            stencil = GraphStencil(self.equation, config.order)
            nt = min(full, self.MAX_NT // stencil.tiers_per_step)
            clipped = f" (drawn with Nt={nt})" if nt < full else ""
            self.conoids = _replace_figure(self.conoids, conoid_figure(
                config.order, size, nt, show_reads=self.show_reads.value, equation=self.equation))
            locality = locality_figure(config.order, size, full, config.shape, equation=self.equation)
            self.locality = _replace_figure(self.locality, locality)
            scheme = (f"NO={config.order}" if self.equation == "acoustic" else
                      f"Yee order {config.order} (tiers are half steps, H then E; the torre leans "
                      f"{stencil.slope} cell(s) a half step)")
            self._text = (f"<b>{scheme}, DTS={size}, Nt={full}</b>{clipped}: the torre "
                          "(blue, outlined tier by tier) is the intersection of the two conoids; green: the "
                          "torres of the sweep it reads from. Rotate with the mouse.")
            self.key = key
        self.note.value = self._text  # a valid choice: no message of an earlier one stays

    def _toggle_reads(self, change) -> None:
        if self.conoids is not None and len(self.conoids.data) >= 5:
            self.conoids.data[4].visible = True if change["new"] else "legendonly"


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
    """Step or play through the stages of a sweep; see the module contract.

    The "show the torres it reads from" checkbox draws them apart (green,
    solid) and the done and current stages translucent, or leaves them among
    the done stages (:meth:`SweepPicture.traces`).
    """

    def __init__(self, config, interval_ms: int = 600, equation: str = "acoustic"):
        self.stencil = GraphStencil(equation, config.order)  # checked before anything is built
        self.equation = equation
        self.caption = widgets.HTML()
        self.stage = widgets.IntSlider(value=0, min=0, max=1, description="stages done",
                                       continuous_update=True, layout=widgets.Layout(width="420px"))
        self.play = widgets.Play(value=0, min=0, max=1, step=1, interval=interval_ms, description="play")
        self.show_reads = widgets.Checkbox(value=True, description=READS_LABEL, indent=False)
        self.order = widgets.Dropdown(options=[("stage by stage (paper 000, section 6)", 0)], value=0,
                                      description="order", layout=widgets.Layout(width="360px"))
        widgets.link((self.play, "value"), (self.stage, "value"))
        self.picture = None
        self.view3d = self.levels = None  # built by update() with their data
        self._quiet = False
        self.stage.observe(self._on_stage, names="value")
        self.show_reads.observe(self._on_stage, names="value")
        self.order.observe(self._on_order, names="value")
        self.key = None
        self.update(config)
        self.view3d = self.view3d or FigureWidget()  # a first sweep that cannot be drawn: empty
        self.levels = self.levels or FigureWidget()
        self.widget = widgets.VBox([
            widgets.HBox([self.play, self.stage, self.show_reads]), self.order, self.caption,
            # fixed widths, wrapped on a narrow screen: plotly widgets do not share a row by themselves
            widgets.HBox([self.view3d, self.levels],
                         layout=widgets.Layout(width="100%", flex_flow="row wrap")),
        ])
        self.widget.add_class("diamondlab-stages")

    def update(self, config, message: str = "") -> None:
        """Rebuild the sweep for ``config`` (skipped when unchanged or when it cannot run)."""
        if message:
            return
        self.stencil = GraphStencil(self.equation, config.order)
        size, nt = _tiling(config, self.equation)
        tiers = self.stencil.tiers(nt)
        nx, ny = explorer_domain(2 * self.stencil.reach, size, tiers, config.shape)
        key = (config.order, size, tiers, nx, ny)
        if key == self.key:
            if self.picture is not None:  # a valid choice again: no message of an earlier one stays
                self._caption(int(self.stage.value))
            return
        engine = self._engine_launch_band(config.order, size)
        options = [("stage by stage (paper 000, section 6)", 0)] + [
            (f"diagonal bands of {b}" + (" (the CUDA engine's for this NO, DTS)" if b == engine else ""), b)
            for b in sorted({2, 4, engine} - {0})]
        self._quiet = True
        try:
            self.order.options, self.order.value = options, 0
        finally:
            self._quiet = False
        self._engine_band = engine
        if self._build(config.order, size, tiers, nx, ny):
            self.key = key

    def _engine_launch_band(self, order: int, size: int) -> int:
        """Torres per diagonal band of the GPU engine's sweep (0: stage by stage)."""
        if self.equation == "maxwell":
            from diamondlab.engine.backends.yee_cuda import YeeCUDABackend

            return int(YeeCUDABackend.band or 0)
        return CUDABackend.launch_band(order, size)

    def _on_order(self, change) -> None:
        if self.picture is not None and not self._quiet:
            s = self.picture.schedule
            self._build(self.stencil.order, s.tile.size, s.nt, s.nx, s.ny)

    def _build(self, order: int, size: int, tiers: int, nx: int, ny: int) -> bool:
        """Draw the sweep (``tiers`` tiers) in the order chosen, at its middle step; False (and a message)
        if it cannot."""
        try:
            schedule = stage_schedule(2 * self.stencil.reach, size, tiers, nx, ny)
            picture = SweepPicture(schedule, band=int(self.order.value), equation=self.equation)
        except ValueError as err:
            self.caption.value = f"<i>cannot draw this sweep: {err}</i>"
            return False
        self.picture = picture
        self._boundary = int(schedule.boundary.sum())
        middle = picture.nsteps // 2
        self._quiet = True
        try:
            with self.stage.hold_trait_notifications():
                self.play.max = self.stage.max = picture.nsteps - 1
                self.stage.value = middle
                self.stage.description = f"{picture.unit}s done"
        finally:
            self._quiet = False
        figure = picture.figure(middle, show_reads=self.show_reads.value)
        figure.layout.width = 600
        self.view3d = _replace_figure(self.view3d, figure)
        self._draw(middle, view=False)
        return True

    def _on_stage(self, change) -> None:
        if self.picture is not None and not self._quiet:
            self._draw(int(self.stage.value))

    def _draw(self, stage: int, view: bool = True) -> None:
        p = self.picture
        if view:  # else the 3D view was just drawn whole
            show = bool(self.show_reads.value)
            traces, opacity = p.traces(stage, show_reads=show), p.opacities(show)
            with self.view3d.batch_update():
                for n, (trace, data) in enumerate(zip(self.view3d.data[:6], traces, strict=True)):
                    trace.update(data)
                    if n < len(opacity):
                        trace.opacity = opacity[n]
                self.view3d.layout.title.text = p.title(stage)
        groups = p.groups if p.band else None
        self.levels = _replace_figure(self.levels, time_levels_figure(p.schedule, stage, groups=groups,
                                                                      equation=self.equation))
        self._caption(stage)

    def _caption(self, stage: int) -> None:
        p, s = self.picture, self.picture.schedule
        scheme = (f"NO={s.tile.order}, DTS={s.tile.size}, Nt={s.nt}" if self.equation == "acoustic" else
                  f"Yee order {self.stencil.order}, DTS={s.tile.size}, Nt={s.nt // 2} ({s.nt} half steps: H "
                  f"reads E at x{self.stencil.cross(0)[0]:+d}..x{self.stencil.cross(0)[-1]:+d}, E reads H at "
                  f"x{self.stencil.cross(1)[0]:+d}..x{self.stencil.cross(1)[-1]:+d})")
        self.caption.value = (
            f"<b>{p.caption(stage)}</b><br>domain {s.nx}×{s.ny} (each column a z line), {scheme}: "
            f"{s.nstages} stages, {s.ntorres} torres, "
            f"{self._boundary} cut by the boundary. Colours: done {p.unit}s by {p.unit}; red the "
            f"current {p.unit} (its torres are independent); purple one torre, outlined tier by tier, green "
            "the torres it reads from, yellow those that read from it.<br>" + self._order_note()
        )

    def _order_note(self) -> str:
        engine = self._engine_band
        if self.equation == "maxwell":
            from diamondlab.engine.backends.yee_cuda import YeeCUDABackend

            said = ("The Yee CUDA engine's sweep hands torres out "
                    + (f"in diagonal bands of {engine}" if engine else "stage by stage"))
            return (said + f" (one launch; each torre waits for the two it reads from every "
                    f"{YeeCUDABackend.chunk} half steps, so several stages run at once); the CPU engine runs "
                    "stage by stage.")
        said = (f"The CUDA engine's sweep hands torres out in diagonal bands of {engine}, stage by stage "
                "inside a band" if engine else "The CUDA engine's sweep runs this NO, DTS stage by stage")
        return (said + " (one launch; each torre waits only for the two it reads from, so several stages run "
                "at once); the CPU engine runs stage by stage.")


class YeePanel:
    """The Yee cell and a torre of the staggered scheme's tiles for a Maxwell configuration (module contract).

    ``reads`` (a menu: a component, or none) picks whose reads the cell shows; ``tier`` (a slider over the
    torre's half-step tiers above the first) picks the tier whose reads the torre shows; the "show the torres
    it reads from" checkbox shows or hides those.  The torre is drawn at most :attr:`MAX_NT` steps tall (the
    note says so).  A configuration that cannot run leaves the figures and says why.

    >>> from diamondlab.widgets.maxwell_controls import MaxwellConfig
    >>> panel = YeePanel(MaxwellConfig(order=4, size=1, nt=2))
    >>> panel.tier.max, panel.cell.layout.title.text.split("<br>")[1][:32]
    (3, '<sup>order 4 (reach M=2): Hz rea')
    """

    #: the tallest torre drawn, in Yee steps
    MAX_NT = 4

    def __init__(self, config, reads: str = "Hz"):
        from diamondlab.maxwell.scheme import YEE_POSITIONS

        GraphStencil("maxwell", config.order)  # the order checked before anything is drawn
        self.note = widgets.HTML()
        self.reads = widgets.Dropdown(options=[*YEE_POSITIONS, "none"], value=reads or "none",
                                      description="reads of", layout=widgets.Layout(width="200px"))
        self.tier = widgets.IntSlider(value=1, min=1, max=1, description="tier", continuous_update=False,
                                      layout=widgets.Layout(width="320px"))
        self.show_reads = widgets.Checkbox(value=False, description=READS_LABEL, indent=False)
        self.cell = self.tiles = None
        self.key = None
        self.update(config)
        self.cell = self.cell or FigureWidget()
        self.tiles = self.tiles or FigureWidget()
        self.reads.observe(lambda _: self._draw_cell(), names="value")
        self.tier.observe(lambda _: self._draw_tiles(), names="value")
        self.show_reads.observe(self._toggle_reads, names="value")
        self.widget = widgets.VBox([
            self.note, widgets.HBox([self.reads, self.tier, self.show_reads]),
            widgets.HBox([self.cell, self.tiles], layout=widgets.Layout(width="100%", flex_flow="row wrap")),
        ])
        self.widget.add_class("diamondlab-yee")

    def update(self, config, message: str = "") -> None:
        """Redraw for ``config`` (skipped when its order, DTS and Nt did not change, or with a ``message``:
        the configuration cannot run, the note says why)."""
        if message:
            self.note.value = f"<i>not redrawn: {message}</i>"
            return
        size, full = _tiling(config, "maxwell")
        key = (int(config.order), size, full)
        if key != self.key:
            self.key = key
            stencil = GraphStencil("maxwell", key[0])
            nt = min(full, self.MAX_NT)
            self._drawn = (key[0], size, nt)
            with self.tier.hold_trait_notifications():
                self.tier.max = stencil.tiers(nt) - 1
                self.tier.value = min(self.tier.value, self.tier.max)
            self._draw_cell()
            self._draw_tiles()
            clipped = f" (drawn {nt} steps tall)" if nt < full else ""
            self._text = (f"<b>Yee order {key[0]}, DTS={size}, Nt={full}</b>{clipped}: left, the cell's six "
                          "components (E on the edges, H on the faces) and, green, the samples the chosen "
                          "component's update reads; right, the torre's half-step tiers, H (blue) and E "
                          "(red) in turn, and the cells of the tier below that the chosen tier reads: green "
                          "those the torre computed itself, orange those of earlier torres.")
        self.note.value = self._text

    def _draw_cell(self) -> None:
        from diamondlab.viz.yee import yee_cell_figure

        self.cell = _replace_figure(self.cell, yee_cell_figure(
            self._drawn[0], reads=None if self.reads.value == "none" else self.reads.value, width=520))

    def _draw_tiles(self) -> None:
        from diamondlab.viz.yee import yee_tiles_figure

        order, size, nt = self._drawn
        self.tiles = _replace_figure(self.tiles, yee_tiles_figure(order, size, nt, tier=int(self.tier.value),
                                                                  show_reads=self.show_reads.value,
                                                                  width=640))

    def _toggle_reads(self, change) -> None:
        if self.tiles is not None and len(self.tiles.data) >= 6:
            self.tiles.data[5].visible = True if change["new"] else "legendonly"


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


def xt_app(order: int = 2, width_cells: int = 8, nx: int = 48, nt: int = 24) -> widgets.VBox:
    """The 1D (x-t) intuition before the 3D torre (notebook 01): NO, the diamond's diagonal and a picked
    vertex (x, t) as sliders; :func:`~diamondlab.viz.graph.diamond_xt_figure` redrawn in place."""
    from diamondlab.viz.graph import diamond_xt_figure

    style = {"description_width": "110px"}
    no = widgets.Dropdown(options=[2, 4, 6, 8], value=order, description="NO", style=style)
    diag = widgets.IntSlider(value=width_cells, min=2, max=16, description="diamond (cells)", style=style)
    px = widgets.IntSlider(value=nx // 2, min=0, max=nx - 1, description="picked x", style=style)
    pt = widgets.IntSlider(value=nt // 2, min=0, max=nt - 1, description="picked t", style=style)
    figure = FigureWidget(diamond_xt_figure(order, width_cells, (px.value, pt.value), nx, nt))

    def changed(_=None):
        _replace_figure(figure, diamond_xt_figure(no.value, diag.value, (px.value, pt.value), nx, nt))

    for w in (no, diag, px, pt):
        w.observe(changed, names="value")
    app = widgets.VBox([widgets.HBox([no, diag]), widgets.HBox([px, pt]), figure])
    app.figure = figure
    app.controls = (no, diag, px, pt)
    return app
