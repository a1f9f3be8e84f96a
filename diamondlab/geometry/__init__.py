"""LRnLA geometry of DiamondTorre: tiles, torres, conoids, stage schedules, locality.

NumPy only; every object is a frozen dataclass that validates its input.
"""

from diamondlab.geometry.locality import Transfers, asynchrony, count_transfers, locality
from diamondlab.geometry.schedule import StageSchedule, stage_schedule
from diamondlab.geometry.stencils import EQUATIONS, GraphStencil, graph_stencil
from diamondlab.geometry.tiles import Conoid, DiamondTile, DiamondTorre
from diamondlab.geometry.tilings import TILINGS, TilingMeasure, compare_tilings

__all__ = [
    "Conoid",
    "DiamondTile",
    "DiamondTorre",
    "EQUATIONS",
    "GraphStencil",
    "StageSchedule",
    "TILINGS",
    "TilingMeasure",
    "Transfers",
    "asynchrony",
    "compare_tilings",
    "count_transfers",
    "graph_stencil",
    "locality",
    "stage_schedule",
]
