"""Orthogonal slices of a wavefield, downsampled for live display, and receiver traces.

Contract
--------
:func:`field_slices` cuts the current level ``u^n`` of a simulation (or any
``(nx, ny, nz)`` array) through one point ``(ix, iy, iz)`` into three planes
(``xy`` at ``z = iz``, ``xz`` at ``y = iy``, ``yz`` at ``x = ix``), each
taken with a stride so that no side exceeds ``max_points`` values: a 256^3
run sends three 86 x 86 planes per refresh, not 64 MiB.

Reading the planes must not copy the whole field: for a simulation they
come from :meth:`Simulation.current_planes` (on the CPU slices of a
read-only view, on the GPU gathered on the device so that only the planes
cross the bus).  Call it only between sweeps (the callback of
:meth:`Simulation.run` is such a place).  :func:`current_level` returns
the whole level (:meth:`Simulation.current_view`: a view on the CPU, a host
copy on the GPU).

:func:`slices_figure` makes the three heatmaps once; :func:`update_slices`
replaces their data in one ``batch_update`` when the figure is a
``FigureWidget``, with the colour range ``±vmax`` when one is given (colour
bar ticks from :func:`colour_ticks`: two significant digits, zero as "0").
:func:`colour_range` chooses a first range from what starts the wave (the
initial pulse's maximum, the sources' amplitudes); a live view then follows
the field with :func:`follow_range` (:data:`COLOUR_RULE`): the field's
level (:func:`field_level`) always lies between a quarter of the range and
the range, except where it has faded below :data:`FADED` of the largest
level it reached, which the view reports as the wave's end.
"""

from __future__ import annotations

import contextlib
import math

import numpy as np

from diamondlab.engine.backends import planes_of

__all__ = ["COLOUR_RULE", "FADED", "colour_range", "colour_ticks", "current_level", "field_level",
           "field_slices", "follow_range", "robust_max", "slices_figure", "source_amplitude", "stride_for",
           "traces_figure", "update_slices"]

PLANES = ("xy", "xz", "yz")
AXES = {"xy": ("x", "y"), "xz": ("x", "z"), "yz": ("y", "z")}


def stride_for(n: int, max_points: int) -> int:
    """Smallest stride that leaves at most ``max_points`` of ``n`` samples.

    >>> stride_for(256, 96), stride_for(64, 96)
    (3, 1)
    """
    return max(1, math.ceil(int(n) / int(max_points)))


def current_level(sim) -> np.ndarray:
    """The current level ``u^n`` as an ``(nx, ny, nz)`` array: a view where possible, else a copy."""
    if isinstance(sim, np.ndarray):
        return sim
    return sim.current_view()


def field_slices(source, index=None, max_points: int = 96) -> dict[str, np.ndarray]:
    """Three downsampled planes through ``index = (ix, iy, iz)`` (default: the centre).

    Returns ``{"xy": (nx', ny'), "xz": (nx', nz'), "yz": (ny', nz'), "x", "y", "z", "index", "value"}``
    where ``x``, ``y``, ``z`` are the sampled cell indices along each axis
    (chosen so that they include the point), ``index`` the point the planes
    go through and ``value`` the field there.  A simulation is read through
    :meth:`Simulation.current_planes` (no copy of the whole field).

    >>> u = np.arange(4 * 6 * 8, dtype=np.float32).reshape(4, 6, 8)
    >>> s = field_slices(u, max_points=3)
    >>> s["index"], s["xy"].shape, s["x"].tolist(), s["y"].tolist(), s["z"].tolist()
    ((2, 3, 4), (2, 3), [0, 2], [1, 3, 5], [1, 4, 7])
    >>> s["value"] == float(u[2, 3, 4])
    True
    """
    shape = source.shape
    ix, iy, iz = (n // 2 for n in shape) if index is None else (int(i) for i in index)
    ix, iy, iz = (min(max(i, 0), n - 1) for i, n in zip((ix, iy, iz), shape, strict=True))
    sx, sy, sz = (stride_for(n, max_points) for n in shape)
    ox, oy, oz = ix % sx, iy % sy, iz % sz  # the samples go through the point
    if isinstance(source, np.ndarray):
        xy, xz, yz = planes_of(source, (ix, iy, iz), (sx, sy, sz))
    else:
        xy, xz, yz = source.current_planes((ix, iy, iz), (sx, sy, sz))
    return {
        "xy": np.array(xy, dtype=np.float32),
        "xz": np.array(xz, dtype=np.float32),
        "yz": np.array(yz, dtype=np.float32),
        "x": np.arange(ox, shape[0], sx), "y": np.arange(oy, shape[1], sy), "z": np.arange(oz, shape[2], sz),
        "index": (ix, iy, iz), "value": float(xy[ix // sx, iy // sy]),
    }


def robust_max(arrays, percentile: float = 99.5) -> float:
    """A colour range that a point source's singular cell does not flatten: the ``percentile`` of ``|u|``
    over ``arrays``, at least a hundredth of the largest value (1.0 for an all-zero field).

    >>> robust_max([np.array([0.0, 1.0, 100.0])], percentile=50)
    1.0
    """
    values = np.abs(np.concatenate([np.asarray(a, dtype=np.float64).ravel() for a in arrays]))
    top = float(values.max()) if values.size else 0.0
    if top == 0.0:
        return 1.0
    return max(float(np.percentile(values, percentile)), top / 100.0)


def field_level(arrays) -> float:
    """What a live view scales its colours to: :func:`robust_max` of ``|u|`` over ``arrays``, 0 for a field
    at rest.

    >>> field_level([np.zeros(4)]), field_level([np.array([2.0, -2.0])])
    (0.0, 2.0)
    """
    if not any(np.any(np.asarray(a)) for a in arrays):
        return 0.0
    return robust_max(arrays)


#: A live view's field has faded (the wave has left) below this fraction of the largest level it reached.
FADED = 0.05

#: Headroom of a new colour range over the level it follows, and the fraction of the range under which a
#: level makes the range shrink: between the two the range stays (no flicker from frame to frame).
HEADROOM, SHRINK = 1.25, 0.25

#: The rule of :func:`follow_range`, in words (the live view's caption).
COLOUR_RULE = (
    f"colour ±v: v follows the field, {HEADROOM:g}× its level (the 99.5th percentile of |u| on the three "
    f"slices, so that a point source's own cell does not flatten the rest), set again whenever the level "
    f"rises above v or falls below v/{1 / SHRINK:g}, never below {FADED:g} of the largest level since n = 0 "
    "(a wave that has gone fades instead of its residue filling the colours)")


def follow_range(vmax: float, level: float, floor: float = 0.0) -> float:
    """The next colour range ``±v`` of a live view whose field is at ``level`` (:func:`field_level`).

    ``v`` stays while ``level`` is between ``SHRINK * v`` and ``v``; outside it becomes
    ``HEADROOM * level`` (never below ``floor``); a field at rest (``level`` 0) keeps it.
    So the field's level is never above the range and never below a quarter of it
    (:data:`COLOUR_RULE`).

    >>> follow_range(1.0, 0.5), follow_range(1.0, 2.0), follow_range(1.0, 0.1), follow_range(1.0, 0.0)
    (1.0, 2.5, 0.125, 1.0)
    >>> follow_range(1.0, 0.001, floor=0.01)
    0.01
    """
    vmax, level, floor = float(vmax), float(level), float(floor)
    if level > 0 and not SHRINK * vmax <= level <= vmax:
        vmax = HEADROOM * level
    return max(vmax, floor)


def colour_ticks(vmax: float) -> tuple[list[float], list[str]]:
    """Tick values and labels of a colour bar ``±vmax``: five ticks, two significant digits, zero as "0"
    (never "-0.00").

    >>> colour_ticks(0.00477)
    ([-0.00477, -0.002385, 0.0, 0.002385, 0.00477], ['-0.0048', '-0.0024', '0', '0.0024', '0.0048'])
    >>> colour_ticks(2.5e-5)[1]
    ['-2.5e-05', '-1.3e-05', '0', '1.3e-05', '2.5e-05']
    """
    values = [-vmax, -vmax / 2, 0.0, vmax / 2, vmax]
    return values, [f"{v:.2g}" if v else "0" for v in values]


def source_amplitude(sim) -> float:
    """Largest free-space amplitude of the waves of ``sim``'s sources one wavelength from them.

    A source adds ``dt^2 s(t) / h^3`` to its cell every step, a point force
    ``s(t) delta(x)`` of the wave equation, whose wave is
    ``s(t - r / c) / (4 pi c^2 r)``; at ``r = c / f`` (one wavelength of a named
    wavelet of peak frequency ``f``; 8 cells for a sampled wavelet) that is
    ``max |s| f / (4 pi c^3)``.  ``s`` is the source's own samples
    (:meth:`Source.samples`) and ``c`` the largest velocity.  0 without sources.
    """
    sources = list(getattr(sim, "sources", None) or [])
    if not sources:
        return 0.0
    c = float(sim.physics.velocity_max)
    dt, h = float(sim.params.dt), float(sim.params.spacing)
    out = 0.0
    for src in sources:
        if isinstance(src.wavelet, str):
            # the named wavelets are negligible after a few periods past their delay
            end = (src.delay if src.delay is not None else 1.5 / src.frequency) + 4.0 / src.frequency
            reach = c / src.frequency
        else:
            end = len(src.wavelet) * dt
            reach = 8.0 * h
        peak = float(np.abs(src.samples(int(math.ceil(end / dt)) + 1, dt)).max(initial=0.0))
        out = max(out, peak / (4.0 * math.pi * c * c * reach))
    return out


def colour_range(sim, reference: float | None = None) -> float:
    """A fixed colour range (the ``|u|`` shown at full colour) for live slices of ``sim``.

    Taken from what starts the waves, not from the field of the moment:

    - the initial level's maximum on the planes through the grid centre (the
      initial pulse's peak; call this at the first level), times the
      ratio by which the exact free-space solution of a Gaussian pulse of
      ``sim.pulse_width`` cells (:func:`~diamondlab.numerics.gaussian_pulse`)
      has fallen after travelling ``reference`` cells (default: a quarter of
      the smallest side, half-way to the nearest wall), so that the
      spreading shell stays visible;
    - :func:`source_amplitude` for the sources.

    The larger of the two; 1.0 when both are 0 (a grid at rest).
    """
    from diamondlab.numerics import gaussian_pulse

    shape = tuple(int(n) for n in sim.shape)
    planes = field_slices(sim, index=tuple(n // 2 for n in shape), max_points=max(shape))
    peak = max(float(np.abs(planes[p]).max()) for p in PLANES)
    pulse = 0.0
    if peak > 0:
        width = float(getattr(sim, "pulse_width", max(2.0, min(shape) / 12)))
        travel = min(shape) / 4.0 if reference is None else float(reference)
        n = int(math.ceil(travel + 6.0 * width)) + 2
        line = gaussian_pulse((n, 1, 1), center=(0.0, 0.0, 0.0), width=width, distance=travel)
        pulse = peak * float(np.abs(line).max())
    top = max(pulse, source_amplitude(sim))
    return top if top > 0 else 1.0


def slices_figure(shape, max_points: int = 96, widget: bool = False, zmax: float = 1.0):
    """Three heatmaps (xy, xz, yz) for a grid of ``shape``; a ``FigureWidget`` when ``widget``."""
    from plotly.subplots import make_subplots

    from diamondlab.viz.figurewidget import FigureWidget

    zeros = field_slices(np.zeros(tuple(int(n) for n in shape), dtype=np.float32), max_points=max_points)
    fig = make_subplots(rows=1, cols=3, horizontal_spacing=0.06,
                        subplot_titles=("xy (z = centre)", "xz (y = centre)", "yz (x = centre)"))
    ticks = colour_ticks(zmax)
    for col, plane in enumerate(PLANES, start=1):
        a, b = AXES[plane]
        fig.add_heatmap(
            z=zeros[plane].T, x=zeros[a], y=zeros[b], zmin=-zmax, zmax=zmax, colorscale="RdBu_r",
            showscale=col == 3, colorbar=dict(title="u", len=0.9, thickness=14, exponentformat="power",
                                              tickvals=ticks[0], ticktext=ticks[1]),
            name=plane,
            hovertemplate=f"{a}=%{{x}} {b}=%{{y}} u=%{{z:.3g}}<extra>{plane}</extra>", row=1, col=col,
        )
        fig.update_xaxes(title_text=a, row=1, col=col, constrain="domain")
        fig.update_yaxes(title_text=b, row=1, col=col, scaleanchor=f"x{col if col > 1 else ''}")
    # room on the right for the colour bar's labels (small ranges: -0.00477 and the like)
    fig.update_layout(height=330, margin=dict(l=40, r=90, t=50, b=40), title="u at n = 0")
    return FigureWidget(fig) if widget else fig


def update_slices(fig, slices: dict[str, np.ndarray], title: str | None = None,
                  symmetric: bool = True, vmax: float | None = None) -> None:
    """Put new planes into a figure of :func:`slices_figure` (one message for a ``FigureWidget``).

    The colour range is ``±vmax`` when given (a fixed range, e.g. :func:`colour_range`),
    else ``±`` :func:`robust_max` of these planes.
    """
    vmax = robust_max([slices[p] for p in PLANES]) if vmax is None else float(vmax)
    with fig.batch_update() if hasattr(fig, "batch_update") else contextlib.nullcontext():
        if "index" in slices and len(fig.layout.annotations) >= 3:
            ix, iy, iz = slices["index"]
            for ann, text in zip(fig.layout.annotations[:3], (f"xy (z = {iz})", f"xz (y = {iy})",
                                                              f"yz (x = {ix})"), strict=True):
                ann.text = text
        for i, plane in enumerate(PLANES):
            trace = fig.data[i]
            a, b = AXES[plane]
            if a in slices:  # the sampled cells move with the point the planes go through
                trace.x, trace.y = slices[a], slices[b]
            trace.z = slices[plane].T
            if symmetric:
                trace.zmin, trace.zmax = -vmax, vmax
                trace.colorbar.tickvals, trace.colorbar.ticktext = colour_ticks(vmax)
        if title is not None:
            fig.layout.title.text = title


def traces_figure(names=(), widget: bool = False, title: str = "receivers"):
    """Empty line plot with one trace per receiver name (amplitude against time step)."""
    import plotly.graph_objects as go

    from diamondlab.viz.figurewidget import FigureWidget

    fig = go.Figure([go.Scatter(x=[], y=[], mode="lines", name=str(n)) for n in names])
    fig.update_layout(title=title, xaxis_title="time step", yaxis_title="u", height=330,
                      margin=dict(l=50, r=10, t=50, b=40), legend=dict(orientation="h", y=-0.25))
    return FigureWidget(fig) if widget else fig
