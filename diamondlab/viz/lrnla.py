"""Plotly views of the LRnLA shapes in (x, y, t), drawn from the geometry layer.

Contract
--------
Every vertex ``(x, y, t)`` (a z column at one time step) is drawn as the
box ``[x - 1/2, x + 1/2] x [y - 1/2, y + 1/2] x [t, t + 1]``; runs of
vertices along x are merged into one box, so a tier of a torre is ``2R - 1``
boxes.  The vertex sets come from :class:`~diamondlab.geometry.Conoid`,
:class:`~diamondlab.geometry.DiamondTorre` and
:class:`~diamondlab.geometry.StageSchedule` (``vertices``, ``contains``,
``tier_rows``, ``time_levels``); nothing here recomputes their shapes.

- :func:`conoid_figure`: a tile's influence and dependence conoids and their
  intersection, which is the DiamondTorre prism (paper 000, figure 5);
- :class:`~diamondlab.viz.stages.SweepPicture` and
  :func:`~diamondlab.viz.stages.stage_row_figure`: a sweep up to a stage,
  coloured by stage, with one torre's dependencies (paper 000, figures 6
  and 8), and one stage's row of torres;
- :func:`time_levels_figure`: steps done per column mid-sweep (figure 9);
- :func:`locality_figure` and :func:`lrnla_summary`: locality and asynchrony
  of the current (NO, DTS, Nt) next to stepwise shapes (section 5).

Which torres a torre reads from is counted exactly by
:func:`~diamondlab.geometry.reads.torre_dependencies` on the schedule's
vertex ownership; the runs of vertices drawn as boxes are
:mod:`diamondlab.geometry.reads`'s.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from diamondlab.geometry import GraphStencil, StageSchedule, asynchrony, locality
from diamondlab.geometry.locality import count_transfers
from diamondlab.geometry.reads import (
    reads_around,
    runs_from_vertices,
    vertices_of_runs,
)
from diamondlab.geometry.tilings import TilingMeasure

__all__ = [
    "CONOID_COLOURS",
    "LEGEND_BELOW",
    "LEGEND_MARGIN",
    "STAGE_COLORSCALE",
    "box_mesh",
    "conoid_figure",
    "hull_mesh",
    "label_side",
    "locality_figure",
    "lrnla_summary",
    "tier_outlines",
    "tilings_figure",
    "time_levels_figure",
]

#: Where a 3D figure's legend goes: below the view, in a bottom margin of ``LEGEND_MARGIN`` pixels kept for
#: it (over the view, at its top left, it hid what the view shows).
LEGEND_BELOW = dict(orientation="h", x=0, xanchor="left", y=0, yanchor="top")
LEGEND_MARGIN = 90

#: colours of stages, right (first) to left (last)
STAGE_COLORSCALE = "Viridis"
_SCENE = dict(
    xaxis_title="x", yaxis_title="y", zaxis_title="t (step)", aspectmode="manual",
    camera=dict(eye=dict(x=1.6, y=-1.6, z=0.9)),
)


_CUBE = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [0, 0, 1], [1, 0, 1], [1, 1, 1], [0, 1, 1]])
_TRIS = np.array([
    [0, 1, 2], [0, 2, 3], [4, 6, 5], [4, 7, 6], [0, 4, 5], [0, 5, 1],
    [1, 5, 6], [1, 6, 2], [2, 6, 7], [2, 7, 3], [3, 7, 4], [3, 4, 0],
])


def box_mesh(runs, tscale: float = 1.0) -> dict[str, np.ndarray]:
    """Vertices and triangles of one box per run, as ``Mesh3d`` keyword arrays (x, y, z, i, j, k)."""
    runs = np.asarray(runs, dtype=np.float64).reshape(-1, 4)
    lo = np.stack([runs[:, 0] - 0.5, runs[:, 2] - 0.5, runs[:, 3] * tscale], axis=1)
    size = np.stack([runs[:, 1] - runs[:, 0] + 1, np.ones(len(runs)), np.full(len(runs), tscale)], axis=1)
    pts = (lo[:, None, :] + _CUBE[None, :, :] * size[:, None, :]).reshape(-1, 3)
    tri = (_TRIS[None, :, :] + 8 * np.arange(len(runs))[:, None, None]).reshape(-1, 3)
    return dict(x=pts[:, 0], y=pts[:, 1], z=pts[:, 2], i=tri[:, 0], j=tri[:, 1], k=tri[:, 2])


def mesh_trace(runs, color: str, name: str, opacity: float = 1.0, tscale: float = 1.0, **kw) -> go.Mesh3d:
    """A ``Mesh3d`` of boxes for ``runs`` in one colour."""
    return go.Mesh3d(
        **box_mesh(runs, tscale), color=color, opacity=opacity, name=name, flatshading=True,
        showlegend=True, hoverinfo="name", lighting=dict(ambient=0.55, diffuse=0.7), **kw,
    )


def hull_mesh(vertices, tscale: float = 1.0) -> dict[str, np.ndarray]:
    """The outer surface of the boxes of ``(x, y, t)`` vertices, as ``Mesh3d`` keyword arrays.

    Only the faces between a vertex of the set and one outside it are kept
    (merged into strips along x, or along y for the faces normal to x), so a
    translucent hull shows what lies inside it: :func:`box_mesh` draws every
    box whole and its inner faces, stacked, hide the inside.
    """
    v = np.asarray(vertices, dtype=np.int64).reshape(-1, 3)
    if len(v) == 0:
        e = np.zeros(0)
        return dict(x=e, y=e, z=e, i=e.astype(int), j=e.astype(int), k=e.astype(int))
    lo = v.min(axis=0) - 1
    occ = np.zeros(tuple(v.max(axis=0) - lo + 2), dtype=bool)
    occ[tuple((v - lo).T)] = True
    corners = []
    for axis in range(3):
        merge = 1 if axis == 0 else 0  # strips run along x, or along y for the x faces
        other = 3 - axis - merge
        for sign in (-1, 1):
            exposed = occ & ~np.roll(occ, -sign, axis=axis)  # the padding: the roll wraps onto empty cells
            e = np.moveaxis(exposed, (axis, other, merge), (0, 1, 2))
            edge = np.diff(np.pad(e, ((0, 0), (0, 0), (1, 1))).astype(np.int8), axis=2)
            a, b, start = np.nonzero(edge == 1)
            end = np.nonzero(edge == -1)[2] - 1  # same (a, b) order: runs never overlap
            n = len(a)
            plane = a + (sign > 0)  # the face's position along ``axis`` in box edges
            quad = np.zeros((n, 4, 3))
            quad[:, :, axis] = plane[:, None]
            quad[:, :, merge] = np.stack([start, end + 1, end + 1, start], axis=1)
            quad[:, :, other] = np.stack([b, b, b + 1, b + 1], axis=1)
            corners.append(quad)
    pts = np.concatenate(corners).reshape(-1, 3) + lo  # box edges: vertex x spans [x, x + 1) here
    pts[:, :2] -= 0.5  # a vertex's box is [x - 1/2, x + 1/2] x [y - 1/2, y + 1/2] x [t, t + 1]
    pts[:, 2] *= tscale
    nq = len(pts) // 4
    base = 4 * np.arange(nq)
    tri = np.concatenate([np.stack([base, base + 1, base + 2], axis=1),
                          np.stack([base, base + 2, base + 3], axis=1)])
    return dict(x=pts[:, 0], y=pts[:, 1], z=pts[:, 2], i=tri[:, 0], j=tri[:, 1], k=tri[:, 2])


def tier_outlines(runs, tscale: float = 1.0) -> dict[str, list]:
    """Lines around every tier of a torre: the outline of its tile at the bottom and top of each step.

    ``runs`` are ``(x_lo, x_hi, y, t)`` with one run per row and step (a
    diamond tier); returns ``Scatter3d`` keyword lists (x, y, z), loops
    separated by ``None``.
    """
    runs = np.asarray(runs, dtype=np.int64).reshape(-1, 4)
    xs, ys, zs = [], [], []
    for t in np.unique(runs[:, 3]).tolist():
        tier = runs[runs[:, 3] == t]
        ox, oy = _outline(np.stack([tier[:, 2], tier[:, 0], tier[:, 1]], axis=1))
        for z in (t * tscale, (t + 1) * tscale):
            xs += [*ox, None]
            ys += [*oy, None]
            zs += [z] * len(ox) + [None]
    return dict(x=xs, y=ys, z=zs)


#: colours of the conoid figure and of the sweep picture (paper 000, figures 5 and 6)
CONOID_COLOURS = {"influence": "#f39c12", "dependence": "#c0392b", "torre": "#2e86c1", "outline": "#0b2545",
                  "reads": "#27ae60"}


def conoid_figure(order: int = 2, size: int = 2, nt: int = 6, tscale: float = 1.0,
                  show_reads: bool = True, equation: str = "acoustic") -> go.Figure:
    """Influence conoid of a bottom tile, dependence conoid of the top tile, and their intersection.

    The intersection is computed with :meth:`Conoid.contains` on the
    influence conoid's vertices and is exactly the
    :class:`~diamondlab.geometry.DiamondTorre` (the figure's title says so,
    with the vertex counts).  The conoids are translucent hulls
    (:func:`hull_mesh`), the torre solid and outlined tier by tier; the
    torres of the sweep it reads from (:func:`~diamondlab.geometry.reads.reads_around`,
    counted on a stage schedule) are drawn in green, hidden in the legend
    unless ``show_reads``.

    Traces, in order: influence conoid, dependence conoid, DiamondTorre,
    its outline, the torres it reads from.

    Parameters
    ----------
    order, size, nt : int
        NO, DTS and Nt of the torre.
    show_reads : bool
        Show the torres it reads from (else one click on the legend shows them).
    equation : {"acoustic", "maxwell"}
        For Maxwell: the engine's torre of ``2 Nt`` half-step tiers of the Yee order's tile, its conoids in
        tiers, and the torres it reads from on the staggered graph
        (:class:`~diamondlab.geometry.stencils.GraphStencil`).
    """
    stencil = GraphStencil(equation, order)
    torre = stencil.torre(size, nt)
    influence, dependence = torre.bottom_conoid(), torre.top_conoid()
    vin = influence.vertices()
    both = vin[dependence.contains(vin[:, 0], vin[:, 1], vin[:, 2])]
    same = {tuple(r) for r in both.tolist()} == {tuple(r) for r in torre.vertices().tolist()}
    runs = runs_from_vertices(both)
    reads = reads_around(order, size, nt, equation)
    hull = dict(flatshading=True, showlegend=True, hoverinfo="name", lighting=dict(ambient=0.7, diffuse=0.5))
    fig = go.Figure([
        go.Mesh3d(**hull_mesh(vin, tscale), color=CONOID_COLOURS["influence"], opacity=0.16,
                  name="influence conoid of the bottom tile", **hull),
        go.Mesh3d(**hull_mesh(dependence.vertices(), tscale), color=CONOID_COLOURS["dependence"],
                  opacity=0.16, name="dependence conoid of the top tile", **hull),
        mesh_trace(runs, CONOID_COLOURS["torre"], "intersection = DiamondTorre", 1.0, tscale),
        go.Scatter3d(**tier_outlines(runs, tscale), mode="lines", name="its tiers",
                     line=dict(color=CONOID_COLOURS["outline"], width=4), hoverinfo="skip"),
        go.Mesh3d(**hull_mesh(vertices_of_runs(reads.runs), tscale), color=CONOID_COLOURS["reads"],
                  opacity=0.35, name=f"the {reads.count} torres it reads from",
                  visible=True if show_reads else "legendonly", **hull),
    ])
    r, tiers = torre.tile.radius, torre.nt
    what = f"NO={order}" if equation == "acoustic" else f"Yee order {order}: {tiers} half steps"
    fig.update_layout(
        title=(f"{what}, DTS={size}, Nt={nt}: R={r}, tile {torre.tile.ncells} columns; intersection "
               f"{len(both)} vertices {'=' if same else '≠'} torre {'' if tiers == nt else '2'}Nt·2R² = "
               f"{torre.nvertices}"),
        scene=dict(_SCENE, aspectratio=dict(x=1, y=1, z=max(0.4, tiers * tscale / (4 * r + 2 * tiers))),
                   camera=dict(eye=dict(x=-1.5, y=-1.5, z=0.8))),  # the torre in front of what it reads
        legend=LEGEND_BELOW, margin=dict(l=0, r=0, t=40, b=LEGEND_MARGIN), height=520 + LEGEND_MARGIN,
        width=820,
    )
    return fig


def time_levels_figure(schedule: StageSchedule, stages_done: int | None = None,
                       width: int = 500, groups: list | None = None, equation: str = "acoustic") -> go.Figure:
    """Steps completed by every column after ``stages_done`` stages (paper 000, figure 9).

    Default: the middle of the sweep.  The bottom tiles of the next stage are
    outlined.  With ``groups`` (a launch order's groups of torres,
    :meth:`~diamondlab.geometry.StageSchedule.launch_groups`) ``stages_done``
    counts those instead.  The figure is ``width`` pixels wide, title (two short
    lines) and colour bar inside it, so that it is never cut beside another figure.
    ``equation="maxwell"``: the schedule's tiers are half steps (the colour bar says so).
    """
    s = schedule
    stencil = GraphStencil(equation, s.tile.order)
    steps = "steps" if stencil.tiers_per_step == 1 else "half steps"
    scheme = f"NO={s.tile.order}" if equation == "acoustic" else f"Yee order {s.tile.order}"
    height = f"Nt={s.nt // stencil.tiers_per_step}"
    height += f" ({s.nt} {steps})" if stencil.tiers_per_step > 1 else ""
    unit = "stages" if groups is None else "launch steps"
    groups = groups if groups is not None else [s.stage_torres(i) for i in range(s.nstages)]
    done = len(groups) // 2 if stages_done is None else int(np.clip(stages_done, 0, len(groups)))
    levels = s.time_levels_after(np.concatenate([*groups[:done], np.zeros(0, dtype=np.int64)]))
    fig = go.Figure(go.Heatmap(
        z=levels.T, zmin=0, zmax=s.nt, colorscale=STAGE_COLORSCALE,
        colorbar=dict(title=dict(text=f"{steps}<br>done"), thickness=16, len=0.9),
        hovertemplate=f"x=%{{x}} y=%{{y}}: %{{z}} {steps}<extra></extra>",
    ))
    if done < len(groups):
        for i in groups[done]:
            rows = s.tier_rows(int(i), 0)
            if len(rows):
                xs, ys = _outline(rows)
                fig.add_scatter(x=xs, y=ys, mode="lines", line=dict(color="white", width=2),
                                hoverinfo="skip", showlegend=False)
    fig.update_layout(
        title=dict(text=f"{steps.capitalize()} done after {done} of {len(groups)} {unit}<br><sup>{scheme}, "
                        f"DTS={s.tile.size}, {height}; the next {unit[:-1]} outlined</sup>",
                   x=0.02, xanchor="left"),
        xaxis=dict(title="x", range=[-0.5, s.nx - 0.5], constrain="domain"),
        yaxis=dict(title="y", range=[-0.5, s.ny - 0.5], scaleanchor="x", constrain="domain"),
        margin=dict(l=50, r=20, t=70, b=40), height=460, width=width,
    )
    return fig


def _outline(rows) -> tuple[list[float], list[float]]:
    """Staircase outline of one clipped tier from its rows ``(y, x_first, x_last)``."""
    right, left = [], []
    for y, lo, hi in np.asarray(rows).tolist():
        right += [(hi + 0.5, y - 0.5), (hi + 0.5, y + 0.5)]
        left += [(lo - 0.5, y - 0.5), (lo - 0.5, y + 0.5)]
    pts = right + left[::-1] + right[:1]
    return [p[0] for p in pts], [p[1] for p in pts]


def lrnla_summary(order: int, size: int, nt: int, shape=(64, 64, 64), equation: str = "acoustic"
                  ) -> dict[str, float]:
    """Locality and asynchrony of the current (NO, DTS, Nt) on ``shape`` (closed formulas and an exact count).

    Keys: ``locality_torre``, ``locality_torre_exact`` (counted on the torre's
    vertices, on the equation's own graph: the staggered one for Maxwell),
    ``locality_row``, ``locality_stepwise``, ``bytes_per_update``
    (``4 / locality_row``), ``async_tile``, ``async_row``, ``async_wavefront``,
    ``torres_per_stage``, ``stages``.  Localities are in the equation's cell
    updates per value moved (:mod:`diamondlab.geometry.locality`).
    """
    torre = GraphStencil(equation, order).torre(size, nt)
    exact = (count_transfers(torre.vertices(), order, equation=equation).locality
             if torre.nvertices <= 20000 else float("nan"))
    row = locality("torre_row", order, size, nt, equation)
    nx, ny, _ = (int(n) for n in shape)
    sched = StageSchedule(torre, nx, ny)
    return dict(
        locality_torre=locality("diamond_torre", order, size, nt, equation), locality_torre_exact=exact,
        locality_row=row, locality_stepwise=locality("stepwise_layer", order, equation=equation),
        bytes_per_update=4.0 / row,
        async_tile=asynchrony("diamond_tile", order, size, nt, tuple(shape), equation),
        async_row=asynchrony("torre_row", order, size, nt, tuple(shape), equation),
        async_wavefront=asynchrony("wavefront", order, size, nt, tuple(shape), equation),
        torres_per_stage=float(np.diff(sched.stage_start).max()), stages=float(sched.nstages),
    )


def locality_figure(order: int, size: int, nt: int, shape=(64, 64, 64), width: int = 900,
                    equation: str = "acoustic") -> go.Figure:
    """Locality of the paper's shapes (closed formulas) with the current (NO, DTS, Nt) highlighted,
    and the asynchrony of a tile, a stage and a wavefront of stages on ``shape``.

    ``equation="maxwell"``: the Yee scheme's numbers (Yee cell updates per value moved; cells of a half
    step at once) next to the acoustic scheme's of the same tile (``NO = 2 M``) and Nt, one bar trace
    each per panel (Maxwell first).  ``width`` pixels wide, the titles on short lines, so that nothing is
    cut on the right.
    """
    from plotly.subplots import make_subplots

    names = ["naive", "stepwise_row", "stepwise_layer", "diamond_tile", "diamond_torre", "torre_row"]
    labels = ["naive (1 vertex)", "stepwise z row", "stepwise layer (max)", "DiamondTile (Nt=1)",
              "one DiamondTorre", "row of torres (a stage)"]
    alabels = ["stepwise z row", "one tile tier", "a stage", "wavefront of stages"]
    stencil = GraphStencil(equation, order)
    both = [(equation, order)] + ([("acoustic", 2 * stencil.reach)] if equation != "acoustic" else [])
    info = lrnla_summary(order, size, nt, shape, equation)
    fig = make_subplots(rows=1, cols=2, column_widths=[0.62, 0.38], horizontal_spacing=0.22,
                        subplot_titles=("locality (updates per value moved)",
                                        "asynchrony<br>(concurrent updates)"))
    for n, (eq, no) in enumerate(both):
        values = [locality(s, no, size, nt, eq) for s in names]
        summary = info if n == 0 else lrnla_summary(no, size, nt, shape, eq)
        avalues = [float(shape[2]), summary["async_tile"], summary["async_row"], summary["async_wavefront"]]
        named = dict(showlegend=False) if len(both) == 1 else dict(
            name=f"Maxwell, Yee order {no}" if eq == "maxwell" else f"acoustic, NO={no}", legendgroup=eq,
            showlegend=True)
        colours = (["#95a5a6"] * 3 + ["#5dade2", "#2e86c1", "#1b4f72"]) if eq == "acoustic" else "#c0392b"
        fig.add_bar(y=labels, x=values, orientation="h", marker_color=colours,
                    text=[f"{v:.3g}" for v in values], textposition="auto", row=1, col=1, **named)
        fig.add_bar(y=alabels, x=avalues, orientation="h", marker_color="#7d3c98" if eq == "acoustic" else
                    "#e59866", text=[f"{v:.3g}" for v in avalues], textposition="auto", row=1, col=2,
                    **(named | dict(showlegend=False)))
    fig.update_xaxes(type="log", row=1, col=2)
    if equation == "acoustic":
        title = (f"NO={order}, DTS={size}, Nt={nt} on {tuple(shape)}: {info['bytes_per_update']:.2f} bytes "
                 f"per update for a stage (stepwise ≥ 12)<br><sup>locality counted exactly on one torre: "
                 f"{info['locality_torre_exact']:.3f}</sup>")
    else:
        title = (f"Yee order {order}, DTS={size}, Nt={nt} on {tuple(shape)}: {info['bytes_per_update']:.1f} "
                 f"bytes per Yee cell update for a stage (stepwise ≥ {4 / info['locality_stepwise']:.0f})"
                 f"<br><sup>one torre: {4 / info['locality_torre']:.1f} B on its tile's symmetric cross, "
                 f"{4 / info['locality_torre_exact']:.1f} B counted exactly on the staggered graph</sup>")
    fig.update_layout(title=title, margin=dict(l=10, r=30, t=100, b=30), height=380 + 40 * (len(both) - 1),
                      width=width, barmode="group", legend=dict(orientation="h", y=-0.12))
    return fig


#: Labels of :func:`~diamondlab.geometry.tilings.compare_tilings`' rows in the figures.
TILING_LABELS = {"stepwise_row": "stepwise z row", "diamond_tile": "DiamondTile (Nt=1)",
                 "diamond_torre": "one DiamondTorre", "trapezoid": "trapezoid (upright)",
                 "xt_diamond": "x-t diamond, all rows", "wavefront_diamond": "x-t diamond, wavefront"}


def label_side(row: TilingMeasure, rows: list[TilingMeasure], decades: float = 0.3) -> str:
    """Where :func:`tilings_figure` writes a tiling's name: below its marker where another tiling less than
    ``decades`` away on the log x axis lies above it (above, the name fell on that marker) or at the same
    locality and earlier in ``rows`` (the two names side by side ran into each other), else above.

    >>> from types import SimpleNamespace as R
    >>> a, b = R(held=720, locality=0.87), R(held=592, locality=1.11)
    >>> c, d = R(held=6, locality=0.9), R(held=480, locality=1.11)
    >>> [label_side(r, [a, b, c, d]) for r in (a, b, c, d)]
    ['bottom center', 'top center', 'top center', 'bottom center']
    """
    tol = 0.02 * max(r.locality for r in rows)
    before = True
    for other in rows:
        if other is row:
            before = False
            continue
        if abs(np.log10(other.held) - np.log10(row.held)) >= decades:
            continue
        if other.locality > row.locality + tol or (before and abs(other.locality - row.locality) <= tol):
            return "bottom center"
    return "top center"


def tilings_figure(rows: list[TilingMeasure], width: int = 900) -> go.Figure:
    """Paper 000 section 5's comparison: each tiling's locality against the fast memory its tile holds
    (z columns one step reads, log axis), the marker's area its asynchrony; data from
    :func:`~diamondlab.geometry.tilings.compare_tilings`."""
    fig = go.Figure()
    most = max(r.asynchrony for r in rows)
    for r in rows:
        fig.add_scatter(
            x=[r.held], y=[r.locality], mode="markers+text", name=TILING_LABELS[r.name],
            text=[TILING_LABELS[r.name]], textposition=label_side(r, rows),
            marker={"size": 10 + 40 * np.sqrt(r.asynchrony / most),
                    "color": "#1b4f72" if r.name.startswith("diamond") else "#95a5a6"},
            customdata=[[r.asynchrony, r.note]],
            hovertemplate="%{text}<br>locality %{y:.3f}<br>holds %{x} columns<br>asynchrony "
                          "%{customdata[0]} columns<br>%{customdata[1]}<extra></extra>",
        )  # fmt: skip
    fig.update_xaxes(type="log", title_text="fast memory a step holds (z columns)")
    fig.update_yaxes(title_text="locality (updates per value moved)", rangemode="tozero")
    fig.update_layout(width=width, height=460, showlegend=False, margin={"t": 60, "r": 40},
                      title="Tilings of section 5: locality against the fast memory it takes<br>"
                            "<sup>marker area: asynchrony of one tile</sup>")
    return fig
