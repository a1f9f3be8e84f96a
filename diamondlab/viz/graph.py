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
    subdivision,
)

__all__ = ["dependency_graph_figure", "light_cone_figure", "subdivisions_figure"]

_TITLES = {"stepwise": "stepwise layers", "domain_decomposition": "domain decomposition",
           "lrnla": "LRnLA diamonds"}


def dependency_graph_figure(order: int, nx: int = 11, nt: int = 5, width: int = 700) -> go.Figure:
    """Fig. 2: the graph's vertices and edges on an ``nx x nt`` window, the edges of the top middle
    vertex drawn bold (its stencil: ``ShS`` cells each side a step back, itself two steps back)."""
    edges = dependency_edges(order, nx, nt)
    fig = go.Figure()
    xs, ts = [], []
    for x, t, xs_, ts_ in edges.tolist():
        xs += [x, xs_, None]
        ts += [t, ts_, None]
    fig.add_scatter(x=xs, y=ts, mode="lines", line={"color": "#ccc", "width": 1}, name="all edges")
    top = (nx // 2, nt - 1)
    mine = edges[(edges[:, 0] == top[0]) & (edges[:, 1] == top[1])]
    bx, bt = [], []
    for x, t, xs_, ts_ in mine.tolist():
        bx += [x, xs_, None]
        bt += [t, ts_, None]
    fig.add_scatter(x=bx, y=bt, mode="lines", line={"color": "#c0392b", "width": 3},
                    name=f"what ({top[0]}, {top[1]}) reads")
    grid_t, grid_x = np.mgrid[0:nt, 0:nx]
    fig.add_scatter(x=grid_x.ravel(), y=grid_t.ravel(), mode="markers", marker={"color": "#1b4f72"},
                    name="vertices")
    fig.update_layout(title=f"Dependency graph, NO={order} (paper 000, Fig. 2): offsets "
                            f"{dependency_offsets(order)}", width=width, height=380,
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
