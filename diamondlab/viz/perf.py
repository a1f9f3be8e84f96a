"""The performance model on the machine at hand, and a DTS x Nt (x NO) tuning sweep.

Contract
--------
The roofline of :mod:`diamondlab.engine.perfmodel` needs a memory bandwidth
and a compute ceiling.  :func:`device_numbers` takes them from the engine,
so that the lab and ``diamondlab bench`` predict the same:
:func:`~diamondlab.engine.perfmodel.cpu_device_numbers` (a ``b += a``
bandwidth probe on all cores; no compute bound) and
:func:`~diamondlab.engine.perfmodel.cuda_device_numbers` (copy bandwidth,
FP32 rate from the device, :mod:`diamondlab.devices`), measured once per
process.

:func:`tuning_sweep` measures DiamondTorre for every (NO, DTS, Nt) asked for
and stepwise once per NO, on one grid and one backend, medians of
``repeats`` timed runs after a warm-up, and returns one :class:`TuningRow`
each with the model's prediction; :func:`tuning_figure` plots measured
against the model and marks the best measured choice.  Combinations the
backend refuses (a tile larger than the grid, an (NO, DTS) the CUDA engine
does not build) are skipped with their reason.
"""

from __future__ import annotations

import functools
import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from diamondlab.engine.perfmodel import DeviceNumbers, predict

__all__ = ["TuningRow", "device_numbers", "predicted_rate", "tuning_figure", "tuning_sweep"]


@functools.cache
def device_numbers(backend: str = "cpu", order: int = 2) -> DeviceNumbers:
    """Bandwidth and compute ceiling of ``backend`` on this machine (measured once per process)."""
    from diamondlab.engine import perfmodel

    if backend == "cpu":
        return perfmodel.cpu_device_numbers()
    if backend == "cuda":
        return perfmodel.cuda_device_numbers()
    raise ValueError(f"backend must be 'cpu' or 'cuda'; got {backend!r}")


def predicted_rate(algorithm: str, order: int, size: int, nt: int, backend: str = "cpu") -> float:
    """The model's rate in G cell updates per second for this configuration and backend."""
    return predict(algorithm, order, size, nt, device_numbers(backend, order)).rate / 1e9


@dataclass(frozen=True)
class TuningRow:
    """One measured configuration: rates in G cell updates per second."""

    algorithm: str
    order: int
    size: int
    nt: int
    measured: float
    model: float
    note: str = ""


def tuning_sweep(shape, orders: Iterable[int] = (2,), sizes: Iterable[int] = (1, 2, 4),
                 nts: Iterable[int] = (4, 8, 16), backend: str = "cpu", steps: int | None = None,
                 repeats: int = 3, progress: Callable[[str], None] | None = None,
                 stop: Callable[[], bool] | None = None) -> list[TuningRow]:
    """Measure DiamondTorre per (NO, DTS, Nt) and stepwise per NO on one grid; see the module contract.

    ``steps`` per timed run defaults to ``Nt`` (one sweep); ``stop()``
    returning True ends the sweep early (what was measured is returned).
    """
    from diamondlab.engine.simulation import Simulation

    rows: list[TuningRow] = []
    say = progress or (lambda text: None)
    rng = np.random.default_rng(0)
    init = rng.standard_normal(tuple(shape), dtype=np.float32) * 1e-3
    for order in orders:
        jobs = [("stepwise", 1, max(nts))] + [("diamondtorre", s, t) for s in sizes for t in nts]
        for algorithm, size, nt in jobs:
            if stop is not None and stop():
                return rows
            try:
                sim = Simulation(shape, order, size=size, nt=nt, backend=backend, algorithm=algorithm,
                                 initial=init)
            except (ValueError, RuntimeError, TypeError) as err:
                say(f"NO={order} DTS={size} Nt={nt}: skipped ({err})")
                continue
            n = max(nt, steps or nt)
            sim.run(n)  # compile and warm up
            rates = [sim.run(n).gcells_per_second for _ in range(repeats)]
            model = predicted_rate(algorithm, order, size, nt, sim.backend_name)
            row = TuningRow(algorithm, order, size if algorithm == "diamondtorre" else 0,
                            nt if algorithm == "diamondtorre" else 0, statistics.median(rates), model)
            rows.append(row)
            say(f"NO={order} {algorithm} DTS={row.size} Nt={row.nt}: {row.measured:.3g} G/s "
                f"(model {model:.3g})")
    return rows


def best(rows: list[TuningRow]) -> TuningRow | None:
    """The fastest measured DiamondTorre row (None when there is none)."""
    dt = [r for r in rows if r.algorithm == "diamondtorre"]
    return max(dt, key=lambda r: r.measured) if dt else None


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
