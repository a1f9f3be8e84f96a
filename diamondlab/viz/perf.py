"""The tuning figure: measured and modelled rates against Nt (the measurements are the engine's).

Contract
--------
:func:`tuning_figure` draws the :class:`~diamondlab.engine.measure.TuningRow`
rows of :func:`diamondlab.engine.measure.tuning_sweep`: measured against the
model (:func:`diamondlab.engine.perfmodel.predicted_rate`), per (NO, DTS),
with the stepwise rates as lines and the best measured choice marked.  It
measures nothing.  ``device_numbers`` and ``predicted_rate`` are the
engine's (:mod:`diamondlab.engine.perfmodel`), named here for the views.
"""

from __future__ import annotations

from diamondlab.engine.measure import TuningRow, best
from diamondlab.engine.perfmodel import device_numbers, predicted_rate

__all__ = ["device_numbers", "predicted_rate", "tuning_figure"]


def tuning_figure(rows: list[TuningRow], title: str = ""):
    """Measured (solid) and model (dashed) rate against Nt, one colour per (NO, DTS); best marked."""
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
    if top is not None:
        fig.add_scatter(x=[top.nt], y=[top.measured], mode="markers", name="best measured",
                        marker=dict(symbol="star", size=18, color="#e74c3c",
                                    line=dict(color="black", width=1)))
        title = title or (f"best: NO={top.order} DTS={top.size} Nt={top.nt} at {top.measured:.3g} "
                          f"G cell updates/s ({top.measured / top.model:.0%} of the model)")
    fig.update_layout(title=title, xaxis_title="Nt (torre height)", yaxis_title="G cell updates/s",
                      xaxis_type="log", height=420, margin=dict(l=50, r=10, t=50, b=40))
    return fig
