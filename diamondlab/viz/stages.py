"""The stages of a DiamondTorre sweep in (x, y, t): which torres run together, which depend on which.

Contract
--------
:class:`SweepPicture` precomputes, from one
:class:`~diamondlab.geometry.StageSchedule`, the boxes of every torre
(:meth:`StageSchedule.tier_rows`, merged rows) and the exact data
dependencies between torres: torre ``a`` *reads from* torre ``b`` when a
vertex of ``a`` needs a value (level ``t - 1`` of its cross, level ``t - 2``
of itself, within the domain) that a vertex of ``b`` computes in the same
sweep.  :func:`torre_dependencies` counts that on the schedule's vertex
ownership; the tests check that every torre reads only from earlier stages
(the schedule is valid) and never from a torre of its own stage (a stage is
asynchronous).

:meth:`SweepPicture.figure` draws the sweep after ``stage`` stages: done
stages coloured by stage, the current stage in red, and one *focus* torre
of it in purple, outlined tier by tier, with the torres it reads from in
green and those that read from it in yellow (the colours of paper 000,
figure 6).  The torres it reads from lie among the done stages: with
``show_reads`` they are drawn apart from them and the done and current
stages turn translucent, so that the green torres show.  The stage explorer
widget updates one figure through :meth:`SweepPicture.traces`.

:func:`torre_reads` counts the torres that one torre reads from with the
schedule's :meth:`~diamondlab.geometry.StageSchedule.owner` (no ownership
array), and :func:`reads_around` places them around a torre anchored at
``(0, 0)``, the frame of :class:`~diamondlab.geometry.DiamondTorre` and of
the conoid figure.

``equation="maxwell"`` draws the staggered scheme's sweep: the schedule's
tiers are half steps (even ones ``H``, odd ones ``E``), the dependencies
those of the staggered graph (:class:`~diamondlab.geometry.stencils.GraphStencil`),
and the caption says so.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from diamondlab.geometry import GraphStencil, StageSchedule
from diamondlab.geometry.reads import torre_dependencies, torre_runs
from diamondlab.viz.lrnla import (
    _SCENE,
    LEGEND_BELOW,
    LEGEND_MARGIN,
    STAGE_COLORSCALE,
    box_mesh,
    tier_outlines,
)

__all__ = ["SweepPicture", "stage_row_figure"]

#: paper 000, figure 6: dependencies green, the torre purple, dependents yellow, independent red
COLOURS = {"reads": "#27ae60", "focus": "#8e44ad", "feeds": "#f1c40f", "stage": "#e74c3c"}


class SweepPicture:
    """Boxes and dependencies of one sweep, ready to draw step by step in a launch order.

    A *step* is one group of :meth:`StageSchedule.launch_groups`: a stage
    (``band=None``, the paper's order) or, with ``band=B``, the torres of one
    stage inside one diagonal band of ``B`` torres, in the order the CUDA
    engine's sweep hands them out.

    Parameters
    ----------
    schedule : StageSchedule
        The sweep; keep it small (a teaching size: up to ~30 000 vertices).
    tscale : float
        Height of one time step in the drawing (cells).
    band : int, optional
        Diagonal bands of ``band`` torres (the engine's ``band`` option); ``None`` or 0: stage by stage.
    equation : {"acoustic", "maxwell"}
        Whose graph the dependencies are counted on; for Maxwell the schedule's Nt counts half steps (the
        engine's ``2 Nt`` tiers, an even number) and its tile is the Yee order's.
    """

    MAX_VERTICES = 30000

    def __init__(self, schedule: StageSchedule, tscale: float = 1.0, band: int | None = None,
                 equation: str = "acoustic"):
        nv = schedule.nx * schedule.ny * schedule.nt
        if nv > self.MAX_VERTICES:
            raise ValueError(
                f"the stage explorer draws up to {self.MAX_VERTICES} (x, y, t) vertices; "
                f"nx*ny*Nt = {schedule.nx}*{schedule.ny}*{schedule.nt} = {nv}: use a smaller grid or Nt"
            )
        self.stencil = GraphStencil(equation, schedule.tile.order)
        self.equation = equation
        self.schedule = schedule
        self.tscale = tscale
        self.band = band or None
        self.groups = schedule.launch_groups(self.band)
        self.group_of = np.empty(schedule.ntorres, dtype=np.int64)
        for n, torres in enumerate(self.groups):
            self.group_of[torres] = n
        self.runs = [torre_runs(schedule, i) for i in range(schedule.ntorres)]
        self.reads = torre_dependencies(schedule, equation)
        self.feeds = [np.zeros(0, dtype=np.int64) for _ in range(schedule.ntorres)]
        for a, deps in enumerate(self.reads):
            for b in deps:
                self.feeds[b] = np.append(self.feeds[b], a)

    @property
    def nstages(self) -> int:
        return self.schedule.nstages

    @property
    def nsteps(self) -> int:
        """Steps of the launch order (the stages, or a stage's torres per band)."""
        return len(self.groups)

    def focus_of(self, stage: int) -> int:
        """Default focus torre of a step: its most central torre that is not cut by the boundary."""
        torres = self.groups[stage]
        sizes = np.array([len(self.runs[i]) for i in torres])
        full = torres[sizes == sizes.max()]
        return int(full[len(full) // 2])

    def _mesh(self, torres, **kw) -> dict:
        runs = [self.runs[i] for i in torres]
        runs = np.concatenate(runs) if runs else np.zeros((0, 4))
        return box_mesh(runs, self.tscale) | kw

    def traces(self, stage: int, focus: int | None = None, show_reads: bool = True) -> list[dict]:
        """Trace data for the picture after ``stage`` stages, in a fixed order.

        Order: done stages (``Mesh3d`` keywords, intensity = stage), the
        current stage, the focus torre, the torres it reads from, the
        torres that read from it, and the focus torre's outline
        (``Scatter3d`` keywords).  With ``show_reads`` the torres it reads
        from are left out of the done stages (drawn once, in green), else
        they stay there and their own trace is empty.
        """
        stage = int(np.clip(stage, 0, self.nsteps - 1))
        focus = self.focus_of(stage) if focus is None else int(focus)
        reads = self.reads[focus] if show_reads else np.zeros(0, dtype=np.int64)
        done = np.setdiff1d(np.flatnonzero(self.group_of < stage), reads)
        current = [i for i in self.groups[stage] if i != focus]
        done_mesh = self._mesh(done)
        done_mesh["intensity"] = np.repeat(self.group_of[done].astype(float),
                                           [8 * len(self.runs[i]) for i in done]) if len(done) else []
        return [
            done_mesh,
            self._mesh(current),
            self._mesh([focus]),
            self._mesh(reads),
            self._mesh(self.feeds[focus]),
            tier_outlines(self.runs[focus], self.tscale),
        ]

    @property
    def unit(self) -> str:
        """What a step is called: ``"stage"`` or ``"launch step"``."""
        return "stage" if self.band is None else "launch step"

    @staticmethod
    def opacities(show_reads: bool = True) -> list[float]:
        """Opacity of the five meshes of :meth:`traces`: the done and current stages are translucent
        while the torres the focus reads from are shown, so that those show through."""
        return [0.22, 0.55, 1.0, 1.0, 0.4] if show_reads else [1.0, 1.0, 1.0, 0.55, 0.4]

    def caption(self, stage: int, focus: int | None = None) -> str:
        """One line about the picture (step, torres, dependencies)."""
        s = self.schedule
        stage = int(np.clip(stage, 0, self.nsteps - 1))
        focus = self.focus_of(stage) if focus is None else int(focus)
        rs = sorted({int(s.torre_stage[j]) for j in self.reads[focus]})
        torres = self.groups[stage]
        where = (f"stage {stage + 1} of {s.nstages}" if self.band is None else
                 f"launch step {stage + 1} of {self.nsteps} (stage {int(s.torre_stage[torres[0]]) + 1}, "
                 f"a band of {self.band})")
        if self.stencil.tiers_per_step > 1:
            where += f" (Yee order {s.tile.order}: {s.nt} half steps, H then E)"
        return (f"{where}: {len(torres)} independent torres; "
                f"torre {focus} reads from {len(self.reads[focus])} torres of stages {rs or '-'} and "
                f"feeds {len(self.feeds[focus])}")

    def title(self, stage: int, focus: int | None = None) -> str:
        """:meth:`caption` on two lines (a figure's title, kept inside a narrow figure)."""
        first, second = self.caption(stage, focus).split("; ", 1)
        return f"{first};<br><sup>{second}</sup>"

    def figure(self, stage: int | None = None, focus: int | None = None,
               show_reads: bool = True) -> go.Figure:
        """The picture after ``stage`` steps (default: the middle of the sweep); see :meth:`traces`."""
        s = self.schedule
        stage = self.nsteps // 2 if stage is None else stage
        t = self.traces(stage, focus, show_reads)
        op = self.opacities(show_reads)
        common = dict(flatshading=True, lighting=dict(ambient=0.55, diffuse=0.7), hoverinfo="name")
        data = [
            go.Mesh3d(**t[0], colorscale=STAGE_COLORSCALE, cmin=0, cmax=max(self.nsteps - 1, 1),
                      name=f"done {self.unit}s (colour = {self.unit})", showscale=True, opacity=op[0],
                      colorbar=dict(title=self.unit, len=0.6), **common),
            go.Mesh3d(**t[1], color=COLOURS["stage"], name=f"current {self.unit} (independent)",
                      opacity=op[1], **common),
            go.Mesh3d(**t[2], color=COLOURS["focus"], name="focus torre", opacity=op[2], **common),
            go.Mesh3d(**t[3], color=COLOURS["reads"], name="it reads from", opacity=op[3], **common),
            go.Mesh3d(**t[4], color=COLOURS["feeds"], name="reads from it", opacity=op[4], **common),
            go.Scatter3d(**t[5], mode="lines", line=dict(color="#2c0a3a", width=4),
                         name="focus torre's tiers", hoverinfo="skip"),
        ]
        for trace in data:
            trace.showlegend = True
        fig = go.Figure(data)
        # the legend below the 3D view, in the margin kept for it: over the view it hid the torres
        scene = _add_domain(fig, s, self.tscale)
        if self.stencil.tiers_per_step > 1:
            scene["zaxis_title"] = "t (half step: H even, E odd)"
        fig.update_layout(title=self.title(stage, focus), scene=scene,
                          legend=LEGEND_BELOW,
                          margin=dict(l=0, r=0, t=60, b=LEGEND_MARGIN), height=540 + LEGEND_MARGIN)
        return fig


def stage_row_figure(picture: SweepPicture, stage: int | None = None) -> go.Figure:
    """One stage alone: its row of torres along y, one colour each (they never exchange data)."""
    s = picture.schedule
    stage = s.nstages // 2 if stage is None else int(np.clip(stage, 0, s.nstages - 1))
    from plotly.colors import qualitative

    fig = go.Figure()
    for n, i in enumerate(s.stage_torres(stage)):
        runs = picture.runs[int(i)]
        if len(runs):
            colour = qualitative.Bold[n % len(qualitative.Bold)]
            fig.add_mesh3d(**box_mesh(runs, picture.tscale), color=colour, flatshading=True,
                           name=f"torre {int(i)} (yc = {int(s.torre_yc[i])})", showlegend=True,
                           hoverinfo="name", lighting=dict(ambient=0.55, diffuse=0.7))
    fig.update_layout(
        title=(f"stage {stage + 1} of {s.nstages}: {len(s.stage_torres(stage))} independent torres at x0 = "
               f"{int(s.torre_x0[s.stage_start[stage]])}, 2R = {2 * s.tile.radius} apart in y"),
        scene=_add_domain(fig, s, picture.tscale), margin=dict(l=0, r=0, t=40, b=0), height=480,
    )
    return fig


def _add_domain(fig: go.Figure, s: StageSchedule, tscale: float) -> dict:
    """Outline the sweep's domain (``Nt`` steps tall) in ``fig``; return the scene that frames it."""
    x0, x1, y0, y1, top = -0.5, s.nx - 0.5, -0.5, s.ny - 0.5, s.nt * tscale
    xs, ys, zs = [], [], []
    for z in (0.0, top):
        xs += [x0, x1, x1, x0, x0, None]
        ys += [y0, y0, y1, y1, y0, None]
        zs += [z, z, z, z, z, None]
    for x, y in ((x0, y0), (x1, y0), (x1, y1), (x0, y1)):
        xs += [x, x, None]
        ys += [y, y, None]
        zs += [0.0, top, None]
    fig.add_scatter3d(x=xs, y=ys, z=zs, mode="lines", line=dict(color="#555", width=2), name="domain",
                      hoverinfo="skip")
    r = s.tile.radius
    return dict(_SCENE, aspectratio=dict(x=1, y=s.ny / s.nx, z=max(0.45, min(1.0, top / s.nx))),
                camera=dict(eye=dict(x=-1.5, y=-1.6, z=1.1)), xaxis=dict(range=[-0.5 - 2 * r, s.nx + 2 * r]),
                yaxis=dict(range=[-0.5, s.ny - 0.5]), zaxis=dict(range=[0, top]))
