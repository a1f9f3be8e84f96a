"""The interactive lab for JupyterLab (ipywidgets 8, plotly ``FigureWidget``, pyvista).

Contract
--------
``from diamondlab.widgets import Lab; Lab()`` shows the whole lab (``Lab(equation="maxwell")``: the
Maxwell lab below):
controllers of NO, DTS, Nt, the grid, the backend, the algorithm and the
Courant number with Run / Pause / Step / Reset; the live wavefield with its
throughput readout; the LRnLA shapes and the stage explorer; the tuning
sweep; 3D snapshots.  The pieces are usable alone:

``MaxwellLab()`` (or ``Lab(equation="maxwell")``) is the lab of Maxwell's equations (paper 002): a scene of
the geometry helpers with its medium, a plane wave or a dipole, live fields
on three planes, probe traces, the flux spectrum and the Yee throughput
(:mod:`diamondlab.widgets.maxwell_lab`).

- :class:`~diamondlab.widgets.runner.BackgroundRun`: a simulation in a
  worker thread (no widget library needed);
- :class:`~diamondlab.widgets.controls.Controls`, :class:`~diamondlab.widgets.live.LiveView`,
  :class:`~diamondlab.widgets.lrnla.ShapesPanel`, :class:`~diamondlab.widgets.lrnla.StageExplorer`,
  :class:`~diamondlab.widgets.tuning.TuningPanel`, :class:`~diamondlab.widgets.snapshot.SnapshotPanel`.

Names are imported on first use, so ``import diamondlab.widgets`` does not
load ipywidgets or plotly until one is asked for.
"""

from __future__ import annotations

import importlib

__all__ = [
    "BackgroundRun",
    "Controls",
    "Lab",
    "LiveView",
    "MaxwellControls",
    "MaxwellLab",
    "MaxwellView",
    "RunConfig",
    "ShapesPanel",
    "SnapshotPanel",
    "StageExplorer",
    "TuningPanel",
]

_WHERE = {
    "BackgroundRun": "runner",
    "Controls": "controls",
    "RunConfig": "controls",
    "Lab": "lab",
    "LiveView": "live",
    "MaxwellControls": "maxwell_controls",
    "MaxwellLab": "maxwell_lab",
    "MaxwellView": "maxwell_lab",
    "ShapesPanel": "lrnla",
    "StageExplorer": "lrnla",
    "TuningPanel": "tuning",
    "SnapshotPanel": "snapshot",
}


def __getattr__(name):
    if name in _WHERE:
        return getattr(importlib.import_module(f"diamondlab.widgets.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'diamondlab.widgets' has no attribute {name!r}")
