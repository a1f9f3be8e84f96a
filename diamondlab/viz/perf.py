"""The performance figures: the tuning figure, the roofline of paper 000's Fig. 7 and the rate per NO/DTS
of its Fig. 11 (the measurements and the model are the engine's).

Contract
--------
:func:`tuning_figure` draws the :class:`~diamondlab.engine.measure.bench.TuningRow`
rows of :func:`diamondlab.engine.measure.bench.tuning_sweep`: measured against the
model (:func:`diamondlab.engine.measure.perfmodel.predicted_rate`), per (NO, DTS),
with the stepwise rates as lines and the best measured choice marked.
:func:`roofline_figure` draws the roofline with the locality parameter on
the x axis (paper 000, Fig. 7): the memory roof ``bandwidth x locality / 4 B``,
the compute roof ``fp32 rate / flops per update``, the ceilings of the
paper's shapes and measured points; with ``equation="maxwell"`` the rate is
in Yee cell updates (both half steps of the six components), the x axis is
``4 / bytes per Yee update`` of the model
(:func:`~diamondlab.engine.measure.perfmodel.yee_bytes_per_update`: the tile
geometry of the staggered scheme and its material bytes) and the compute roof
``fp32 rate / Yee flops per update``.  :func:`order_size_figure` draws
measured against model rates per ``NO/DTS`` (Fig. 11).  They measure
nothing.  ``device_numbers`` and ``predicted_rate`` are the
engine's (:mod:`diamondlab.engine.measure.perfmodel`), named here for the views.

A figure whose measurements are flagged by the measurement rule (a wide
spread, a busy machine: :attr:`~diamondlab.engine.measure.timing.Measurement.flag`)
says so on the figure (:func:`say_unsteady`): its points are not drawn as
a conclusion.
"""

from __future__ import annotations

import math

from diamondlab.engine.measure.bench import TuningRow, best
from diamondlab.engine.measure.perfmodel import (
    DeviceNumbers,
    device_numbers,
    flops_per_update,
    predicted_rate,
    yee_bytes_per_update,
    yee_flops_per_update,
)
from diamondlab.geometry.locality import locality

__all__ = ["ROOFLINE_SHAPES", "block_levels_figure", "device_numbers",
           "memory_hierarchy_figure", "order_size_figure", "parallel_levels_figure",
           "predicted_rate", "roofline_ceilings", "roofline_figure", "say_unsteady", "tuning_figure"]

#: What a figure with flagged measurements says above its plot.
UNSTEADY = "Not steady: {what}. Rerun on a quiet machine before reading a conclusion from these points."


def say_unsteady(fig, flags) -> bool:
    """Write on ``fig`` that its measurements are not steady when any of ``flags`` (the rule's
    :attr:`~diamondlab.engine.measure.timing.Measurement.flag` strings, '' for a steady one) is set;
    returns whether it did.

    >>> import plotly.graph_objects as go
    >>> fig = go.Figure()
    >>> say_unsteady(fig, ["", "machine busy (others 40 % of its CPU)"]), fig.layout.annotations[0].text[:11]
    (True, 'Not steady:')
    >>> say_unsteady(go.Figure(), ["", ""])
    False
    """
    flags = sorted({f for f in flags if f})
    if not flags:
        return False
    what = "; ".join(flags[:2]) + (f" and {len(flags) - 2} more" if len(flags) > 2 else "")
    fig.add_annotation(text=UNSTEADY.format(what=what), xref="paper", yref="paper", x=0, y=1.0,
                       xanchor="left", yanchor="bottom", showarrow=False, align="left",
                       font={"color": "#c0392b", "size": 11}, bgcolor="rgba(255,255,255,0.85)")
    return True

#: The shapes whose ceilings the roofline marks, with their labels (paper 000, section 5).
ROOFLINE_SHAPES = {"naive": "naive (one cell)", "stepwise_row": "stepwise z row",
                   "stepwise_layer": "stepwise (whole layer)", "diamond_tile": "DiamondTile (Nt=1)",
                   "torre_row": "row of DiamondTorres"}


def tuning_figure(rows: list[TuningRow], title: str = "", equation: str = "acoustic"):
    """Measured (solid) and model (dashed) rate against Nt, one colour per (NO, DTS); best marked
    (``equation="maxwell"``: rates in G Yee cell updates/s)."""
    import plotly.graph_objects as go
    from plotly.colors import qualitative

    fig = go.Figure()
    keys = sorted({(r.order, r.size) for r in rows if r.algorithm == "diamondtorre"})
    for c, (order, size) in enumerate(keys):
        colour = qualitative.Plotly[c % len(qualitative.Plotly)]
        sel = sorted((r for r in rows
                      if r.algorithm == "diamondtorre" and (r.order, r.size) == (order, size)),
                     key=lambda r: r.nt)
        x = [r.nt for r in sel]
        fig.add_scatter(x=x, y=[r.measured for r in sel], mode="lines+markers", line=dict(color=colour),
                        name=f"NO={order} DTS={size} measured")
        fig.add_scatter(x=x, y=[r.model for r in sel], mode="lines", line=dict(color=colour, dash="dash"),
                        name=f"NO={order} DTS={size} model", opacity=0.6)
    for r in rows:
        if r.algorithm == "stepwise":
            fig.add_hline(y=r.measured, line=dict(color="#555", dash="dot"),
                          annotation_text=f"stepwise NO={r.order} measured {r.measured:.3g}",
                          annotation_position="bottom right")
    top = best(rows)
    given = bool(title)
    cell = "Yee cell" if equation == "maxwell" else "cell"
    if top is not None:
        fig.add_scatter(x=[top.nt], y=[top.measured], mode="markers", name="best measured",
                        marker=dict(symbol="star", size=18, color="#e74c3c",
                                    line=dict(color="black", width=1)))
        share = f"{top.measured / top.model:.0%} of the model" if top.model > 0 else "no model"
        title = title or (f"best: NO={top.order} DTS={top.size} Nt={top.nt} at {top.measured:.3g} "
                          f"G {cell} updates/s ({share})")
    say_unsteady(fig, [r.flag for r in rows])
    if top is not None and top.flag and not given:
        title += ": not steady"
    fig.update_layout(title=title, xaxis_title="Nt (torre height)", yaxis_title=f"G {cell} updates/s",
                      xaxis_type="log", height=420, margin=dict(l=50, r=10, t=50, b=40))
    return fig


def _flops(order: int, equation: str) -> int:
    if equation == "maxwell":
        return yee_flops_per_update(order)
    if equation != "acoustic":
        raise ValueError(f"equation must be one of ('acoustic', 'maxwell'); got {equation!r}")
    return flops_per_update(order)


def roofline_ceilings(order: int, size: int, nt: int, device: DeviceNumbers,
                      equation: str = "acoustic") -> dict[str, tuple[float, float]]:
    """``{shape: (locality, attainable G cell updates/s)}`` of :data:`ROOFLINE_SHAPES` on ``device``:
    ``min(bandwidth x locality / 4 B, fp32 rate / flops per update)``, the model of
    :func:`diamondlab.engine.measure.perfmodel.predict` (a value moved is 4 bytes); for Maxwell the
    locality is ``4 / yee_bytes_per_update`` (:func:`~diamondlab.engine.measure.perfmodel.predict_yee`'s
    bytes, material included) and the rate in G Yee cell updates/s."""
    compute = device.fp32_rate / _flops(order, equation)
    out = {}
    for shape in ROOFLINE_SHAPES:
        loc = (4.0 / yee_bytes_per_update(shape, order, size, nt) if equation == "maxwell"
               else locality(shape, order, size, nt))
        out[shape] = (loc, min(device.bandwidth * loc / 4.0, compute) / 1e9)
    return out


#: The locality axis of the roofline per equation (its roof is drawn over this range; the Yee scheme moves
#: three components a cell and reaches lower).
LOCALITY_AXIS = {"acoustic": (0.03, 3.0), "maxwell": (0.005, 3.0)}
#: Where a ceiling's label may go at its top (plotly's ``textposition``), the first that covers nothing
#: preferred: above the roof on the left covers no marker (the measured points lie under the roof).
LABEL_PLACES = ("top left", "bottom right", "bottom left", "top right", "middle left", "middle right")
#: Else beside its dotted line, this many label heights under its top (on either side).
LABEL_DROPS = (1.5, 3.0)
#: A label's estimated size in pixels (plotly's 12 px font): per character, its height; and the gap to its
#: marker.
CHAR_PX, LINE_PX, GAP_PX = 6.6, 14.0, 6.0


def _label_box(x: float, y: float, place: str, chars: int) -> tuple[float, float, float, float]:
    """``(left, top, right, bottom)`` in pixels of a label of ``chars`` characters at ``place`` of (x, y)."""
    w, h = CHAR_PX * chars, LINE_PX
    vertical, horizontal = place.split()
    top = {"top": y - GAP_PX - h, "bottom": y + GAP_PX, "middle": y - h / 2}[vertical]
    left = {"left": x - GAP_PX - w, "right": x + GAP_PX}[horizontal]
    return left, top, left + w, top + h


def _overlap(a, b) -> float:
    return max(0.0, min(a[2], b[2]) - max(a[0], b[0])) * max(0.0, min(a[3], b[3]) - max(a[1], b[1]))


def place_labels(options: list[list[tuple[float, float, str]]], texts: list[str],
                 markers: list[tuple[float, float, float]], area: tuple[float, float]) -> list[int]:
    """Which of its places each label takes so that none covers another, a marker or the plot's edge.

    Parameters
    ----------
    options : list of list of (x, y, place)
        For each label, the points it may be written at (pixels from the plot area's top left corner)
        with a plotly ``textposition``, the preferred first.
    texts : list of str
        The labels (their sizes are estimated: :data:`CHAR_PX`, :data:`LINE_PX`).
    markers : list of (x, y, radius)
        What a label must not cover, in pixels: every marker drawn and points along the lines.
    area : (width, height)
        The plot area in pixels: a label must lie inside it.

    Returns
    -------
    list of int
        For each label, the index of its place in ``options``: of every choice, the one covering the least
        area (other labels, markers, outside the plot), and among equals the most preferred.

    Examples
    --------
    Two labels close together on a rising line: one above it on the left, the other under it on the
    right.

    >>> where = [[(x, y, "top left"), (x, y, "bottom right")] for x, y in ((100, 200), (110, 190))]
    >>> place_labels(where, ["naive", "z row"], [(100, 200, 4), (110, 190, 4)], (400, 300))
    [0, 1]
    """
    from itertools import product

    inside = (0.0, 0.0, float(area[0]), float(area[1]))
    taken = [(x - r, y - r, x + r, y + r) for x, y, r in markers]
    boxes = [[_label_box(x, y, place, len(text)) for x, y, place in mine]
             for mine, text in zip(options, texts, strict=True)]
    alone = [[(b[2] - b[0]) * (b[3] - b[1]) - _overlap(b, inside) + sum(_overlap(b, t) for t in taken)
              for b in mine] for mine in boxes]
    # a label's first five places that cover nothing by themselves and its two least covering others: few to
    # combine, and a choice left where two labels' free places are the same few (two ceilings at one point)
    keep = [sorted(range(len(cost)), key=lambda k, cost=cost: (cost[k] > 0, cost[k] if cost[k] > 0 else k))
            for cost in alone]
    keep = [[k for k in ks if alone[i][k] == 0][:5] + [k for k in ks if alone[i][k] > 0][:2]
            for i, ks in enumerate(keep)]
    best, best_key = None, None
    for choice in product(*keep):
        covered = sum(alone[i][c] for i, c in enumerate(choice))
        covered += sum(_overlap(boxes[i][choice[i]], boxes[j][choice[j]])
                       for i in range(len(choice)) for j in range(i + 1, len(choice)))
        key = (covered, sum(choice))
        if best_key is None or key < best_key:
            best, best_key = choice, key
    return list(best)


def _place_ceiling_labels(fig, width: int, height: int, margin: dict, axis=LOCALITY_AXIS["acoustic"]) -> None:
    """Place ``fig``'s ceiling labels (:func:`place_labels`): at the ceiling's top (its ``textposition``)
    or beside its dotted line lower down (a point added on the line); the plot area is estimated from the
    figure's size, margins and legend, as plotly lays out a log-log chart over the locality ``axis``."""
    points = [(x, y, t) for t in fig.data for x, y in zip(t.x, t.y, strict=True) if x > 0 and y > 0]
    legend = max(len(t.name or "") for t in fig.data) * CHAR_PX + 50
    w = width - margin.get("l", 80) - margin.get("r", 80) - legend
    h = height - margin.get("t", 100) - margin.get("b", 80)
    lx0, lx1 = (math.log10(v) for v in axis)
    ly = [math.log10(y) for _, y, _ in points]
    pad = 0.05 * (max(ly) - min(ly))  # plotly pads an autoranged axis holding markers
    ly0, ly1 = min(ly) - pad, max(ly) + pad

    def px(x, y):
        return (math.log10(x) - lx0) / (lx1 - lx0) * w, (ly1 - math.log10(y)) / (ly1 - ly0) * h

    markers = []
    for t in fig.data:
        size = t.marker.size
        sizes = list(size) if isinstance(size, (list, tuple)) else [size] * len(t.x)
        for x, y, size in zip(t.x, t.y, sizes, strict=True):
            if x > 0 and y > 0 and "markers" in (t.mode or "") and size != 0:
                markers.append((*px(x, y), (size or 6) / 2 + 1))
            elif x > 0 and y > 0 and t.mode == "lines":  # the roof: a label across it is hard to read
                markers.append((*px(x, y), 1.0))
    labelled = [t for t in fig.data if t.text is not None and len(t.y) == 2]
    options = []
    for t in labelled:
        x, y = px(t.x[1], t.y[1])
        options.append([(x, y, place) for place in LABEL_PLACES]
                       + [(x, y + drop * LINE_PX, f"middle {side}") for drop in LABEL_DROPS
                          for side in ("right", "left")])
    chosen = place_labels(options, [t.text[1] for t in labelled], markers, (w, h))
    for t, mine, c in zip(labelled, options, chosen, strict=True):
        _, y, place = mine[c]
        if c >= len(LABEL_PLACES):  # a point on its dotted line, under its top, carries the label
            low = 10 ** (ly1 - y / h * (ly1 - ly0))
            t.update(y=[t.y[0], low, t.y[1]], x=[t.x[0]] * 3, text=["", t.text[1], ""],
                     marker={"size": [0, 0, t.marker.size[1]]})
        t.textposition = place


def roofline_figure(order: int, size: int, nt: int, device: DeviceNumbers, measured=(), width: int = 860,
                    flags=(), equation: str = "acoustic"):
    """Paper 000's Fig. 7 for ``device``: rate against locality, the memory and compute roofs, the
    ceilings of the paper's shapes at (NO, DTS, Nt) and ``measured`` points ``(label, locality, G/s)``
    (``flags``: their measurements' flags, said on the figure where set); ``equation="maxwell"``: the Yee
    scheme's (module contract)."""
    import numpy as np
    import plotly.graph_objects as go

    fig = go.Figure()
    compute = device.fp32_rate / _flops(order, equation) / 1e9
    x = np.geomspace(*LOCALITY_AXIS[equation], 120)
    roof = np.minimum(device.bandwidth * x / 4.0 / 1e9, compute)
    fig.add_scatter(x=x, y=roof, mode="lines", name=f"{device.name}: roofline", line={"color": "#1b4f72"})
    for shape, (loc, rate) in roofline_ceilings(order, size, nt, device, equation).items():
        fig.add_scatter(x=[loc, loc], y=[0, rate], mode="lines+markers+text", name=ROOFLINE_SHAPES[shape],
                        text=["", ROOFLINE_SHAPES[shape]], textposition="top left",
                        line={"dash": "dot", "width": 1}, marker={"size": [0, 8]})
    for label, loc, rate in measured:
        fig.add_scatter(x=[loc], y=[rate], mode="markers", name=f"measured: {label}",
                        marker={"symbol": "star", "size": 14, "line": {"color": "black", "width": 1}})
    say_unsteady(fig, flags)
    bound = "" if math.isinf(compute) else f", compute roof {compute:.4g} G/s"
    cell = "Yee cell" if equation == "maxwell" else "cell"
    scheme = f"Yee order {order}" if equation == "maxwell" else f"NO={order}"
    fig.update_xaxes(type="log", title_text=f"locality ({cell} updates per value moved"
                     + (" = 4 B / bytes an update)" if equation == "maxwell" else ")"))
    fig.update_yaxes(type="log", title_text=f"G {cell} updates/s")
    fig.update_layout(width=width, height=480, margin={"t": 70, "r": 20},
                      title=f"Roofline (paper 000, Fig. 7): {scheme} DTS={size} Nt={nt}<br><sup>"
                            f"{device.bandwidth / 1e9:.0f} GB/s{bound}</sup>")
    # no two labels, or a label and a star, meet
    _place_ceiling_labels(fig, width, 480, {"t": 70, "r": 20}, LOCALITY_AXIS[equation])
    return fig


def order_size_figure(rows: list[TuningRow], title: str = "Rate per NO/DTS (paper 000, Fig. 11)"):
    """Paper 000's Fig. 11 from :func:`~diamondlab.engine.measure.bench.tuning_sweep` rows: the best measured
    DiamondTorre rate per ``NO/DTS`` (over Nt) next to its model, stepwise per NO as a line."""
    import plotly.graph_objects as go

    best_of: dict[tuple[int, int], TuningRow] = {}
    for r in rows:
        if r.algorithm == "diamondtorre" and (
                (r.order, r.size) not in best_of or r.measured > best_of[(r.order, r.size)].measured):
            best_of[(r.order, r.size)] = r
    keys = sorted(best_of)
    labels = [f"{o}/{s}" for o, s in keys]
    fig = go.Figure()
    fig.add_bar(x=labels, y=[best_of[k].measured for k in keys], name="measured (best Nt)",
                customdata=[best_of[k].nt for k in keys], hovertemplate="NO/DTS %{x}: %{y:.3g} G/s at "
                "Nt=%{customdata}<extra></extra>")
    fig.add_scatter(x=labels, y=[best_of[k].model for k in keys], mode="markers+lines", name="model",
                    line={"dash": "dash"})
    for r in rows:
        if r.algorithm == "stepwise":
            fig.add_scatter(x=[f"{o}/{s}" for o, s in keys if o == r.order],
                            y=[r.measured for o, _ in keys if o == r.order], mode="lines+markers",
                            name=f"stepwise NO={r.order}", line={"color": "#555", "dash": "dot"},
                            marker={"symbol": "line-ew-open", "size": 40})  # one DTS: a mark, not a line
    say_unsteady(fig, [r.flag for r in rows])
    fig.update_layout(title=title, xaxis_title="NO/DTS", yaxis_title="G cell updates/s", height=420,
                      margin={"l": 50, "r": 10, "t": 50, "b": 40})
    return fig


def parallel_levels_figure(rows, title: str = "Rate against parallel level (paper 000, Fig. 10): threads"):
    """Paper 000's Fig. 10 on the CPU from :func:`~diamondlab.engine.measure.bench.thread_sweep` rows
    ``(threads, DiamondTorre G/s, stepwise G/s[, flag])``, with perfect scaling from one thread dotted
    (a flagged point is said on the figure)."""
    import plotly.graph_objects as go

    threads = [r[0] for r in rows]
    fig = go.Figure()
    fig.add_scatter(x=threads, y=[r[1] for r in rows], mode="lines+markers", name="DiamondTorre")
    fig.add_scatter(x=threads, y=[r[2] for r in rows], mode="lines+markers", name="stepwise")
    fig.add_scatter(x=threads, y=[rows[0][1] * n / threads[0] for n in threads], mode="lines",
                    name="DiamondTorre, perfect scaling", line={"dash": "dot", "color": "#888"})
    say_unsteady(fig, [f"{r[0]} threads: {r[3]}" if r[3] else "" for r in rows if len(r) > 3])
    fig.update_layout(title=title, xaxis_title="threads", yaxis_title="G cell updates/s", height=400,
                      xaxis_type="log", margin={"l": 50, "r": 10, "t": 50, "b": 40})
    return fig


def block_levels_figure(rows, multiprocessors: int | None = None,
                        title: str = "Rate against parallel level (paper 000, Fig. 10): blocks and threads"):
    """Paper 000's Fig. 10 on the GPU from :func:`~diamondlab.engine.measure.bench.block_sweep` rows: the rate
    against the blocks in flight (torres a stage, one launch per stage), one line per block size
    (threads = the z column), stepwise on the same grids dotted, the multiprocessor count marked."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for threads in sorted({r.threads for r in rows}):
        mine = sorted((r for r in rows if r.threads == threads), key=lambda r: r.torres)
        warps = -(-threads // 32)
        fig.add_scatter(x=[r.torres for r in mine], y=[r.diamondtorre for r in mine], mode="lines+markers",
                        name=f"DiamondTorre, {threads} threads ({warps} warps) a block")
        fig.add_scatter(x=[r.torres for r in mine], y=[r.stepwise for r in mine], mode="lines",
                        name=f"stepwise, nz = {threads}", line={"dash": "dot"})
    if multiprocessors:
        fig.add_vline(x=multiprocessors, line={"color": "#888", "dash": "dash"},
                      annotation_text=f"{multiprocessors} multiprocessors")
    fig.update_layout(title=title, xaxis_title="blocks in flight (torres a stage)", xaxis_type="log",
                      yaxis_title="G cell updates/s", height=420, margin={"l": 50, "r": 10, "t": 50, "b": 40})
    return fig


def memory_hierarchy_figure(cpu_points, gpu_levels, cpu_name: str = "this CPU, one core",
                            gpu_name: str = "NVIDIA H100"):
    """Paper 000's Fig. 1, log-log: bandwidth against capacity, this CPU's hierarchy measured
    (:func:`~diamondlab.engine.measure.perfmodel.measure_cpu_hierarchy`) against a GPU's levels
    (:func:`~diamondlab.engine.measure.perfmodel.gpu_hierarchy`)."""
    import plotly.graph_objects as go

    fig = go.Figure()
    fig.add_scatter(x=[b for b, _ in cpu_points], y=[r for _, r in cpu_points], mode="lines+markers",
                    name=f"{cpu_name} (measured: b += a)")
    # each level's name right of its point, the largest's left of it: right of it, the plot area cut it
    widest = max(b for _, b, _ in gpu_levels)
    fig.add_scatter(x=[b for _, b, _ in gpu_levels], y=[r for _, _, r in gpu_levels],
                    mode="lines+markers+text", text=[name for name, _, _ in gpu_levels],
                    textposition=["top left" if b == widest else "top right" for _, b, _ in gpu_levels],
                    cliponaxis=False, name=f"{gpu_name} (from its tables)")
    fig.update_xaxes(type="log", title_text="capacity / working set (bytes)")
    fig.update_yaxes(type="log", title_text="bandwidth (bytes/s)")
    fig.update_layout(title="Memory hierarchy (paper 000, Fig. 1): the higher the level, the smaller and "
                            "faster", height=440, margin={"t": 60})
    return fig
