"""Paper 000's Figs. 2-4 in x-t: the dependency graph, a light cone, stepwise and LRnLA subdivisions.

Contract
--------
The figures draw what :mod:`diamondlab.geometry.graph` computes; they
compute no geometry themselves.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from diamondlab.geometry.graph import (
    SUBDIVISIONS,
    dependency_edges,
    dependency_offsets,
    light_cone,
    shape_neighbours,
    subdivision,
)

__all__ = ["dependency_graph_figure", "diamond_xt_figure", "light_cone_figure", "subdivisions_figure"]

_TITLES = {"stepwise": "stepwise layers", "domain_decomposition": "domain decomposition",
           "lrnla": "LRnLA diamonds"}


def dependency_graph_figure(order: int, nx: int = 11, nt: int = 5, width: int = 700) -> go.Figure:
    """Fig. 2: the graph's vertices and edges on an ``nx x nt`` window, the edges of the top middle
    vertex drawn bold (its stencil: ``ShS`` cells each side a step back, itself two steps back)."""
    edges = dependency_edges(order, nx, nt)
    top = (nx // 2, nt - 1)
    mine = edges[(edges[:, 0] == top[0]) & (edges[:, 1] == top[1])]
    fig = go.Figure()
    for drawn, line, name in ((edges, {"color": "#ccc", "width": 1}, "all edges"),
                              (mine, {"color": "#c0392b", "width": 3}, f"what ({top[0]}, {top[1]}) reads")):
        xs, ts = [], []
        for x, t, xs_, ts_ in drawn.tolist():
            xs += [x, xs_, None]
            ts += [t, ts_, None]
        fig.add_scatter(x=xs, y=ts, mode="lines", line=line, name=name)
    grid_t, grid_x = np.mgrid[0:nt, 0:nx]
    fig.add_scatter(x=grid_x.ravel(), y=grid_t.ravel(), mode="markers", marker={"color": "#1b4f72"},
                    name="vertices")
    fig.update_layout(title=f"Dependency graph, NO={order} (paper 000, Fig. 2)<br><sup>what a vertex reads, "
                            f"(dx, dt): {dependency_offsets(order)}</sup>", width=width, height=380,
                      xaxis_title="x", yaxis_title="t", margin={"t": 60})
    return fig


def light_cone_figure(order: int, depth: int = 6, width: int = 700) -> go.Figure:
    """Fig. 3: the vertices one vertex depends on, ``depth`` steps down: a cone of slope ``ShS``."""
    cone = light_cone(order, (0, depth), depth)
    fig = go.Figure()
    fig.add_scatter(x=cone[:, 0], y=cone[:, 1], mode="markers", marker={"color": "#d68910", "size": 9},
                    name="in the light cone")
    shs = order // 2
    fig.add_scatter(x=[-shs * depth, 0, shs * depth], y=[0, depth, 0], mode="lines",
                    line={"dash": "dot", "color": "#555"}, name=f"slope ShS = {shs}")
    fig.update_layout(title=f"Light cone of one vertex, NO={order} (paper 000, Fig. 3)", width=width,
                      height=360, xaxis_title="x", yaxis_title="t", margin={"t": 60})
    return fig


def subdivisions_figure(order: int = 2, nx: int = 32, nt: int = 12, width_cells: int = 8,
                        width: int = 960) -> go.Figure:
    """Fig. 4: the same x-t window cut three ways, each shape one colour: stepwise layers, a domain
    decomposition of each layer, LRnLA diamonds (:func:`~diamondlab.geometry.graph.subdivision`)."""
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=3, subplot_titles=[_TITLES[k] for k in SUBDIVISIONS],
                        horizontal_spacing=0.05)
    for col, kind in enumerate(SUBDIVISIONS, start=1):
        ids = subdivision(kind, order, nx, nt, width_cells)
        _, codes = np.unique(ids, return_inverse=True)
        fig.add_heatmap(z=(codes.reshape(ids.shape) * 7919) % 23, colorscale="Turbo", showscale=False,
                        customdata=ids, hovertemplate="x %{x}, t %{y}: shape %{customdata}<extra></extra>",
                        row=1, col=col)
        fig.update_xaxes(title_text="x", row=1, col=col)
    fig.update_yaxes(title_text="t", row=1, col=1)
    fig.update_layout(title=f"Subdivisions of the dependency graph, NO={order} (paper 000, Fig. 4)",
                      width=width, height=360, margin={"t": 80})
    return fig


def diamond_xt_figure(order: int = 2, width_cells: int = 8, pick: tuple[int, int] | None = None,
                      nx: int = 48, nt: int = 24, width: int = 760) -> go.Figure:
    """The 1D picture before the 3D torre: LRnLA diamonds of diagonal ``width_cells`` tiling x-t, the
    diamond of vertex ``pick = (x, t)`` (default: the middle), the diamonds it reads from and those
    that read from it (:func:`~diamondlab.geometry.graph.shape_neighbours`), and the slope ``ShS``
    of their sides: the stencil's reach per step, which is why a diamond needs nothing from above it.
    """
    ids = subdivision("lrnla", order, nx, nt, width_cells)
    x, t = pick if pick is not None else (nx // 2, nt // 2)
    me = int(ids[min(max(t, 0), nt - 1), min(max(x, 0), nx - 1)])
    reads, feeds = shape_neighbours(ids, order, me)
    role = np.zeros(ids.shape)  # 0 other, 1 reads, 2 feeds, 3 the diamond
    role[np.isin(ids, reads)], role[np.isin(ids, feeds)], role[ids == me] = 1, 2, 3
    _, codes = np.unique(ids, return_inverse=True)
    shade = ((codes.reshape(ids.shape) * 7919) % 5) / 40.0  # neighbouring diamonds told apart, faintly
    fig = go.Figure()
    fig.add_heatmap(z=role + shade, zmin=0, zmax=3.2, showscale=False, customdata=ids,
                    colorscale=[[0, "#f2f3f4"], [0.06, "#d5d8dc"], [0.3, "#27ae60"], [0.36, "#82e0aa"],
                                [0.62, "#f4d03f"], [0.68, "#f9e79f"], [0.93, "#8e44ad"], [1, "#bb8fce"]],
                    hovertemplate="x %{x}, t %{y}: diamond %{customdata}<extra></extra>")
    fig.add_scatter(x=[x], y=[t], mode="markers", marker={"symbol": "x", "size": 12, "color": "#000"},
                    name=f"picked ({x}, {t})")
    fig.update_layout(
        title=f"x-t diamonds, NO={order}, diagonal {width_cells}: picked (purple), reads {len(reads)} "
              f"(green), read by {len(feeds)} (yellow)",
        width=width, height=420, xaxis_title="x", yaxis_title="t (time step)", margin={"t": 70},
        showlegend=False, title_font_size=13)
    return fig
