"""Plotly views of the staggered scheme on DiamondTorre (paper 002): the Yee cell, the H and E tiles and what
each reads, drawn from the scheme and the geometry layer.

Contract
--------
- :func:`yee_cell_figure`: one Yee cell in 3D, its six components as arrows
  at :data:`~diamondlab.maxwell.scheme.YEE_POSITIONS` (``E`` on the edges,
  ``H`` on the faces; the samples of the neighbouring cells on the cube's
  other edges and faces faint), and, for a chosen component, the samples of
  the other field its update reads (:func:`~diamondlab.maxwell.scheme.curl_reads`
  and :func:`~diamondlab.maxwell.scheme.yee_read_offsets` at order 2 or 4).
- :func:`yee_tiles_figure`: a torre of the staggered scheme in (x, y, half
  step): its tiers alternately ``H`` and ``E`` tiles (the engine's tile,
  :meth:`~diamondlab.geometry.stencils.GraphStencil.tile`), leaning
  :attr:`~diamondlab.geometry.stencils.GraphStencil.slope` cells a half step,
  the cells one tier reads on the tier below
  (:meth:`~diamondlab.geometry.stencils.GraphStencil.tile_reads`), split into
  those the torre computed and those earlier torres did, and the torres of the
  sweep it reads from (:func:`~diamondlab.geometry.reads.reads_around` on the
  staggered graph).

Nothing here recomputes a shape: the traces' data are the geometry's.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from diamondlab.geometry.reads import reads_around, runs_from_vertices, vertices_of_runs
from diamondlab.geometry.stencils import GraphStencil
from diamondlab.maxwell.scheme import YEE_POSITIONS, curl_reads, yee_read_offsets
from diamondlab.viz.lrnla import LEGEND_BELOW, LEGEND_MARGIN, box_mesh, hull_mesh, tier_outlines

__all__ = ["FIELD_COLOURS", "yee_cell_figure", "yee_cell_samples", "yee_tiles_figure"]

#: colours of the two fields (and of what a tier reads)
FIELD_COLOURS = {"E": "#c0392b", "H": "#2471a3", "reads": "#27ae60", "earlier": "#f39c12", "cell": "#555"}
_ARROW = 0.3  # arrow length in cells


def yee_cell_samples(component: str, lo=(0, 0, 0), hi=(1, 1, 1)) -> np.ndarray:
    """Positions of ``component`` (of any cell) inside the box ``[lo, hi]`` (cells), an ``(n, 3)`` array.

    >>> yee_cell_samples("Ez").tolist()  # the four z edges of the unit cube
    [[0.0, 0.0, 0.5], [0.0, 1.0, 0.5], [1.0, 0.0, 0.5], [1.0, 1.0, 0.5]]
    """
    p = np.array(YEE_POSITIONS[component])
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    axes = [np.arange(np.ceil(lo[a] - p[a]), np.floor(hi[a] - p[a]) + 1) + p[a] for a in range(3)]
    grid = np.meshgrid(*axes, indexing="ij")
    return np.stack([g.ravel() for g in grid], axis=1)


def _arrows(points, component: str, name: str, colour: str, opacity: float = 1.0, size: float = 1.0,
            **kw) -> go.Cone:
    axis = "xyz".index(component[1])
    d = np.zeros((len(points), 3))
    d[:, axis] = _ARROW
    return go.Cone(x=points[:, 0], y=points[:, 1], z=points[:, 2], u=d[:, 0], v=d[:, 1], w=d[:, 2],
                   anchor="center", sizemode="raw", sizeref=size, showscale=False, opacity=opacity,
                   colorscale=[[0, colour], [1, colour]], name=name, hoverinfo="name",
                   **({"showlegend": True} | kw))


def _cube_edges(lo, hi) -> dict[str, list]:
    xs, ys, zs = [], [], []
    corners = [(a, b, c) for a in (lo[0], hi[0]) for b in (lo[1], hi[1]) for c in (lo[2], hi[2])]
    for p in corners:
        for q in corners:
            if p < q and sum(u != v for u, v in zip(p, q, strict=True)) == 1:
                xs += [p[0], q[0], None]
                ys += [p[1], q[1], None]
                zs += [p[2], q[2], None]
    return dict(x=xs, y=ys, z=zs)


def yee_cell_figure(order: int = 2, reads: str | None = "Hz", width: int = 640) -> go.Figure:
    """The Yee cell ``[0, 1]^3`` with its six components, and what ``reads``' update reads at ``order``.

    Traces, in order: the cell's edges; its three ``E`` and three ``H`` components (one ``Cone`` trace
    each, at :data:`~diamondlab.maxwell.scheme.YEE_POSITIONS`, pointing along their axes); the samples of
    the neighbouring cells on the cube's other edges and faces (``E``, then ``H``, faint); with ``reads``
    (a component name, or None), the samples of the other field its update reads (green) and their labels.
    """
    stencil = GraphStencil("maxwell", order)  # checks the order
    if reads is not None and reads not in YEE_POSITIONS:
        raise ValueError(f"reads must be None or one of {tuple(YEE_POSITIONS)}; got {reads!r}")
    fig = go.Figure()
    fig.add_scatter3d(**_cube_edges((0, 0, 0), (1, 1, 1)), mode="lines", name="the cell (i, j, k)",
                      line=dict(color=FIELD_COLOURS["cell"], width=3), hoverinfo="skip")
    for c, p in YEE_POSITIONS.items():
        fig.add_trace(_arrows(np.array([p]), c, f"{c} at {tuple(p)}", FIELD_COLOURS[c[0]]))
    for field in "EH":
        pts = [(c, q) for c in YEE_POSITIONS if c[0] == field for q in yee_cell_samples(c).tolist()
               if tuple(q) != YEE_POSITIONS[c]]
        comps = sorted({c for c, _ in pts})
        xs = {c: np.array([q for cc, q in pts if cc == c]) for c in comps}
        for n, c in enumerate(comps):
            fig.add_trace(_arrows(xs[c], c, f"{field} of the neighbouring cells", FIELD_COLOURS[field],
                                  opacity=0.3, size=0.7, legendgroup=f"nb{field}", showlegend=n == 0))
    title = "The Yee cell: E on its edges, H on its faces, all six stored at index (i, j, k)"
    if reads is not None:
        field = reads[0]
        offsets = yee_read_offsets(order, field)
        pts, labels = [], []
        for comp, axis in curl_reads(reads):
            for d in offsets.tolist():
                shift = np.zeros(3)
                shift[axis] = d
                pts.append(np.array(YEE_POSITIONS[comp]) + shift)
                labels.append(f"{comp}[{'ijk'[axis]}{d:+d}]" if d else f"{comp}")
            comp_pts = np.array(pts[-len(offsets):])
            fig.add_trace(_arrows(comp_pts, comp, f"{reads} reads {comp} along {'xyz'[axis]}",
                                  FIELD_COLOURS["reads"], size=0.8))
        pts = np.array(pts)
        fig.add_scatter3d(x=pts[:, 0], y=pts[:, 1], z=pts[:, 2], mode="text", text=labels,
                          textposition="top center", name="storage offsets read", hoverinfo="skip",
                          textfont=dict(color=FIELD_COLOURS["reads"], size=11))
        title += (f"<br><sup>order {order} (reach M={stencil.reach}): {reads} reads "
                  f"{' and '.join(c for c, _ in curl_reads(reads))} at offsets "
                  f"{offsets.tolist()} along the derivative's axis</sup>")
    fig.update_layout(title=title, legend=LEGEND_BELOW, width=width, height=520 + LEGEND_MARGIN,
                      margin=dict(l=0, r=0, t=60, b=LEGEND_MARGIN),
                      scene=dict(xaxis_title="x (i)", yaxis_title="y (j)", zaxis_title="z (k)",
                                 aspectmode="data", camera=dict(eye=dict(x=1.5, y=-1.7, z=1.0))))
    return fig


def yee_tiles_figure(order: int = 2, size: int = 2, nt: int = 2, tier: int = 1, show_reads: bool = True,
                     width: int = 820) -> go.Figure:
    """A torre of the staggered scheme, ``nt`` Yee steps (``2 nt`` half-step tiers), with what ``tier`` reads.

    Traces, in order: the ``H`` tiers, the ``E`` tiers (boxes, one per x run), the torre's outline tier by
    tier, the cells of tier ``tier - 1`` that tier ``tier``'s tile reads that the torre computed itself,
    those computed by earlier torres, and the torres of the sweep it reads from (hidden in the legend
    unless ``show_reads``).  A tier ``t`` is drawn from ``t`` to ``t + 1`` (half steps).
    """
    stencil = GraphStencil("maxwell", order)
    torre = stencil.torre(size, nt)
    if isinstance(tier, bool) or not isinstance(tier, (int, np.integer)) or not 1 <= tier < torre.nt:
        raise ValueError(f"tier must be an int in [1, {torre.nt - 1}] (a tier above the torre's first); "
                         f"got {tier!r}")
    v = torre.vertices()
    is_h = v[:, 2] % 2 == 0
    ax, ay = torre.tier_anchor(tier)
    rx, ry = stencil.tile_reads(size, tier, ax, ay)
    bx, by = torre.tier_anchor(tier - 1)
    own = torre.tile.contains(rx, ry, bx, by)
    below = np.full(len(rx), tier - 1)
    read_own = np.stack([rx[own], ry[own], below[own]], axis=1)
    read_earlier = np.stack([rx[~own], ry[~own], below[~own]], axis=1)
    around = reads_around(order, size, nt, "maxwell")
    runs = runs_from_vertices(v)
    solid = dict(flatshading=True, hoverinfo="name", showlegend=True,
                 lighting=dict(ambient=0.55, diffuse=0.7))
    field, other = stencil.field(tier), stencil.field(tier - 1)
    fig = go.Figure([
        go.Mesh3d(**box_mesh(runs_from_vertices(v[is_h])), color=FIELD_COLOURS["H"], opacity=0.55,
                  name="H tiles (even half steps)", **solid),
        go.Mesh3d(**box_mesh(runs_from_vertices(v[~is_h])), color=FIELD_COLOURS["E"], opacity=0.55,
                  name="E tiles (odd half steps)", **solid),
        go.Scatter3d(**tier_outlines(runs), mode="lines", line=dict(color="#0b2545", width=3),
                     name="its tiers", hoverinfo="skip"),
        go.Mesh3d(**box_mesh(runs_from_vertices(read_own)), color=FIELD_COLOURS["reads"], opacity=1.0,
                  name=f"{other} that {field} tier {tier} reads: computed by this torre ({len(read_own)})",
                  **solid),
        go.Mesh3d(**box_mesh(runs_from_vertices(read_earlier)), color=FIELD_COLOURS["earlier"],
                  opacity=1.0, name=f"... computed by earlier torres ({len(read_earlier)})", **solid),
        go.Mesh3d(**hull_mesh(vertices_of_runs(around.runs)), color=FIELD_COLOURS["reads"], opacity=0.25,
                  name=f"the {around.count} torres it reads from",
                  visible=True if show_reads else "legendonly", flatshading=True, hoverinfo="name",
                  showlegend=True),
    ])
    h, e = stencil.cross(0).tolist(), stencil.cross(1).tolist()
    r = torre.tile.radius
    fig.update_layout(
        title=(f"Yee order {order}, DTS={size}, Nt={nt}: {torre.nt} half-step tiers of {torre.tile.ncells} "
               f"columns, leaning {stencil.slope} cell(s) a half step "
               f"({stencil.tiers_per_step * stencil.slope} a step)"
               f"<br><sup>H reads E at x{h[0]:+d}..x{h[-1]:+d}, E reads H at x{e[0]:+d}..x{e[-1]:+d} "
               f"(and in y): the reach M={stencil.reach} on either side sets the slope</sup>"),
        legend=LEGEND_BELOW, width=width, height=520 + LEGEND_MARGIN,
        margin=dict(l=0, r=0, t=60, b=LEGEND_MARGIN),
        scene=dict(xaxis_title="x", yaxis_title="y", zaxis_title="t (half step)", aspectmode="manual",
                   aspectratio=dict(x=1, y=1, z=max(0.4, torre.nt / (4 * r + 2 * torre.nt))),
                   camera=dict(eye=dict(x=-1.5, y=-1.5, z=0.8))),
    )
    return fig
