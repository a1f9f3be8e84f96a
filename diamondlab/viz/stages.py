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
of it in purple with the torres it reads from in green and those that read
from it in yellow (the colours of paper 000, figure 6).  The stage explorer
widget updates one figure through :meth:`SweepPicture.traces`.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from diamondlab.geometry import StageSchedule
from diamondlab.viz.lrnla import _SCENE, STAGE_COLORSCALE, box_mesh, rows_to_runs

__all__ = ["SweepPicture", "stage_row_figure", "torre_dependencies", "vertex_owner"]

#: paper 000, figure 6: dependencies green, the torre purple, dependents yellow, independent red
COLOURS = {"reads": "#27ae60", "focus": "#8e44ad", "feeds": "#f1c40f", "stage": "#e74c3c"}


def vertex_owner(schedule: StageSchedule) -> np.ndarray:
    """Torre index computing every ``(x, y, step)`` vertex, an int array ``(nx, ny, Nt)``."""
    out = np.full((schedule.nx, schedule.ny, schedule.nt), -1, dtype=np.int64)
    for _, i, k, rows in schedule.iter_tiers():
        for y, lo, hi in rows:
            out[lo : hi + 1, y, k] = i
    return out


def torre_dependencies(schedule: StageSchedule) -> list[np.ndarray]:
    """For every torre, the sorted torres (of the same sweep) whose computed values it reads.

    >>> from diamondlab.geometry import stage_schedule
    >>> s = stage_schedule(order=2, size=1, nt=2, nx=6, ny=4)
    >>> deps = torre_dependencies(s)
    >>> all(s.torre_stage[d].max(initial=-1) < s.torre_stage[i] for i, d in enumerate(deps))
    True
    """
    owner = vertex_owner(schedule)
    nx, ny, nt = owner.shape
    shs = schedule.tile.shs
    # (dx, dy, dt) of the values a vertex reads
    offsets = [(0, 0, 1), (0, 0, 2)]
    for d in range(1, shs + 1):
        offsets += [(d, 0, 1), (-d, 0, 1), (0, d, 1), (0, -d, 1)]
    pairs = []
    for dx, dy, dt in offsets:
        if dt >= nt:
            continue
        # reader at (x, y, t) reads source at (x + dx, y + dy, t - dt)
        xr = slice(max(0, -dx), nx - max(0, dx))
        yr = slice(max(0, -dy), ny - max(0, dy))
        xs = slice(max(0, dx), nx - max(0, -dx))
        ys = slice(max(0, dy), ny - max(0, -dy))
        reader = owner[xr, yr, dt:]
        source = owner[xs, ys, : nt - dt]
        pairs.append(np.stack([reader.ravel(), source.ravel()], axis=1))
    pairs = np.unique(np.concatenate(pairs), axis=0)
    pairs = pairs[(pairs[:, 0] != pairs[:, 1]) & (pairs[:, 1] >= 0)]
    out = [np.zeros(0, dtype=np.int64) for _ in range(schedule.ntorres)]
    for reader in np.unique(pairs[:, 0]):
        out[reader] = pairs[pairs[:, 0] == reader, 1]
    return out


class SweepPicture:
    """Boxes and dependencies of one sweep, ready to draw stage by stage.

    Parameters
    ----------
    schedule : StageSchedule
        The sweep; keep it small (a teaching size: up to ~30 000 vertices).
    tscale : float
        Height of one time step in the drawing (cells).
    """

    MAX_VERTICES = 30000

    def __init__(self, schedule: StageSchedule, tscale: float = 1.0):
        nv = schedule.nx * schedule.ny * schedule.nt
        if nv > self.MAX_VERTICES:
            raise ValueError(
                f"the stage explorer draws up to {self.MAX_VERTICES} (x, y, t) vertices; "
                f"nx*ny*Nt = {schedule.nx}*{schedule.ny}*{schedule.nt} = {nv}: use a smaller grid or Nt"
            )
        self.schedule = schedule
        self.tscale = tscale
        self.runs = []
        for i in range(schedule.ntorres):
            parts = [rows_to_runs(schedule.tier_rows(i, k), k) for k in range(schedule.nt)]
            self.runs.append(np.concatenate(parts))
        self.reads = torre_dependencies(schedule)
        self.feeds = [np.zeros(0, dtype=np.int64) for _ in range(schedule.ntorres)]
        for a, deps in enumerate(self.reads):
            for b in deps:
                self.feeds[b] = np.append(self.feeds[b], a)

    @property
    def nstages(self) -> int:
        return self.schedule.nstages

    def focus_of(self, stage: int) -> int:
        """Default focus torre of a stage: its most central torre that is not cut by the boundary."""
        torres = self.schedule.stage_torres(stage)
        sizes = np.array([len(self.runs[i]) for i in torres])
        full = torres[sizes == sizes.max()]
        return int(full[len(full) // 2])

    def _mesh(self, torres, **kw) -> dict:
        runs = [self.runs[i] for i in torres]
        runs = np.concatenate(runs) if runs else np.zeros((0, 4))
        return box_mesh(runs, self.tscale) | kw

    def traces(self, stage: int, focus: int | None = None) -> list[dict]:
        """Trace data (Mesh3d keyword dicts) for the picture after ``stage`` stages, in a fixed order.

        Order: done stages (intensity = stage), the current stage, the focus
        torre, the torres it reads from, the torres that read from it.
        """
        s = self.schedule
        stage = int(np.clip(stage, 0, s.nstages - 1))
        focus = self.focus_of(stage) if focus is None else int(focus)
        done = np.flatnonzero(s.torre_stage < stage)
        current = [i for i in s.stage_torres(stage) if i != focus]
        done_mesh = self._mesh(done)
        done_mesh["intensity"] = np.repeat(s.torre_stage[done].astype(float),
                                           [8 * len(self.runs[i]) for i in done]) if len(done) else []
        return [
            done_mesh,
            self._mesh(current),
            self._mesh([focus]),
            self._mesh(self.reads[focus]),
            self._mesh(self.feeds[focus]),
        ]

    def caption(self, stage: int, focus: int | None = None) -> str:
        """One line about the picture (stage, torres, dependencies)."""
        s = self.schedule
        stage = int(np.clip(stage, 0, s.nstages - 1))
        focus = self.focus_of(stage) if focus is None else int(focus)
        rs = sorted({int(s.torre_stage[j]) for j in self.reads[focus]})
        return (f"stage {stage + 1} of {s.nstages}: {len(s.stage_torres(stage))} independent torres; "
                f"torre {focus} reads from {len(self.reads[focus])} torres of stages {rs or '-'} and "
                f"feeds {len(self.feeds[focus])}")

    def figure(self, stage: int | None = None, focus: int | None = None) -> go.Figure:
        """The picture after ``stage`` stages (default: the middle of the sweep)."""
        s = self.schedule
        stage = s.nstages // 2 if stage is None else stage
        t = self.traces(stage, focus)
        common = dict(flatshading=True, lighting=dict(ambient=0.55, diffuse=0.7), hoverinfo="name")
        data = [
            go.Mesh3d(**t[0], colorscale=STAGE_COLORSCALE, cmin=0, cmax=max(s.nstages - 1, 1),
                      name="done stages (colour = stage)", showscale=True,
                      colorbar=dict(title="stage", len=0.6), **common),
            go.Mesh3d(**t[1], color=COLOURS["stage"], name="current stage (independent)", **common),
            go.Mesh3d(**t[2], color=COLOURS["focus"], name="focus torre", **common),
            go.Mesh3d(**t[3], color=COLOURS["reads"], name="it reads from", opacity=0.55, **common),
            go.Mesh3d(**t[4], color=COLOURS["feeds"], name="reads from it", opacity=0.35, **common),
        ]
        for trace in data:
            trace.showlegend = True
        fig = go.Figure(data)
        zmax = s.nt * self.tscale
        fig.add_scatter3d(**_domain_box(s.nx, s.ny, zmax), mode="lines", line=dict(color="#555", width=2),
                          name="domain", hoverinfo="skip")
        fig.update_layout(
            title=self.caption(stage, focus),
            scene=dict(_SCENE, aspectratio=dict(x=1, y=s.ny / s.nx, z=max(0.45, min(1.0, zmax / s.nx))),
                       camera=dict(eye=dict(x=-1.5, y=-1.6, z=1.1)),
                       xaxis=dict(range=[-0.5 - 2 * s.tile.radius, s.nx + 2 * s.tile.radius]),
                       yaxis=dict(range=[-0.5, s.ny - 0.5]), zaxis=dict(range=[0, zmax])),
            legend=dict(x=0, y=1), margin=dict(l=0, r=0, t=40, b=0), height=540,
        )
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
    zmax = s.nt * picture.tscale
    fig.add_scatter3d(**_domain_box(s.nx, s.ny, zmax), mode="lines", line=dict(color="#555", width=2),
                      name="domain", hoverinfo="skip")
    r = s.tile.radius
    fig.update_layout(
        title=(f"stage {stage + 1} of {s.nstages}: {len(s.stage_torres(stage))} independent torres at x0 = "
               f"{int(s.torre_x0[s.stage_start[stage]])}, 2R = {2 * r} apart in y"),
        scene=dict(_SCENE, aspectratio=dict(x=1, y=s.ny / s.nx, z=max(0.45, min(1.0, zmax / s.nx))),
                   camera=dict(eye=dict(x=-1.5, y=-1.6, z=1.1)),
                   xaxis=dict(range=[-0.5 - 2 * r, s.nx + 2 * r]), yaxis=dict(range=[-0.5, s.ny - 0.5]),
                   zaxis=dict(range=[0, zmax])),
        margin=dict(l=0, r=0, t=40, b=0), height=480,
    )
    return fig


def _domain_box(nx: int, ny: int, top: float) -> dict[str, list]:
    x0, x1, y0, y1 = -0.5, nx - 0.5, -0.5, ny - 0.5
    xs, ys, zs = [], [], []
    for z in (0.0, top):
        xs += [x0, x1, x1, x0, x0, None]
        ys += [y0, y0, y1, y1, y0, None]
        zs += [z, z, z, z, z, None]
    for x, y in ((x0, y0), (x1, y0), (x1, y1), (x0, y1)):
        xs += [x, x, None]
        ys += [y, y, None]
        zs += [0.0, top, None]
    return dict(x=xs, y=ys, z=zs)
