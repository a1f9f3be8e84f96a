"""Figures of diamondlab: LRnLA shapes, wavefield slices, tuning plots, 3D snapshots.

Contract
--------
Every function here *returns* a figure (a ``plotly.graph_objects.Figure`` or
a pyvista plotter) built from the package's own objects: the geometry layer
(:mod:`diamondlab.geometry`) for the LRnLA shapes, a
:class:`~diamondlab.Simulation` or a NumPy field for the wavefield, and the
roofline model (:mod:`diamondlab.engine.measure.perfmodel`) for performance.  Nothing
here re-derives the geometry: cells, tiers, stages and time levels come from
``Conoid``, ``DiamondTorre`` and ``StageSchedule``.

Submodules are imported on first use, so ``import diamondlab.viz`` costs
nothing until a figure is asked for:

- :mod:`diamondlab.viz.lrnla`: conoids and the DiamondTorre prism, the
  time-level map, locality and asynchrony (plotly);
- :mod:`diamondlab.viz.stages`: a sweep stage by stage, one stage's row of
  torres, and which torres depend on which (either equation);
- :mod:`diamondlab.viz.yee`: the Yee cell, the H and E tiles of the staggered
  scheme and what each reads (paper 002);
- :mod:`diamondlab.viz.fields`: orthogonal, downsampled slices and receiver traces;
- :mod:`diamondlab.viz.perf`: the roofline of this machine and the DTS/Nt tuning sweep;
- :mod:`diamondlab.viz.snapshots`: pyvista volume rendering and isosurfaces,
  with an off-screen backend picked automatically.
"""

from __future__ import annotations

import importlib

__all__ = ["fields", "lrnla", "perf", "snapshots", "stages", "yee"]


def __getattr__(name):
    if name in __all__:
        return importlib.import_module(f"diamondlab.viz.{name}")
    raise AttributeError(f"module 'diamondlab.viz' has no attribute {name!r}")
