"""diamondlab: the DiamondTorre (LRnLA) algorithm for the 3D acoustic wave equation.

``import diamondlab`` is light: it loads NumPy and the geometry and numerics
layers; Numba is imported when a kernel is first built, and widgets,
plotting and numba.cuda only when asked for.  In a container with a CPU
quota it sets ``NUMBA_NUM_THREADS`` to the cores the process may use
(:func:`diamondlab.devices.usable_cpus`) unless it is set already.
"""

import os as _os
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _version

from diamondlab.devices import usable_cpus as _usable_cpus

# Numba runs as many threads as the host has cores, a container's CPU quota notwithstanding; unless the
# user chose (or Numba was imported first: it reads this once), take the cores this process may use
if "NUMBA_NUM_THREADS" not in _os.environ and _usable_cpus() < (_os.cpu_count() or 1):
    _os.environ["NUMBA_NUM_THREADS"] = str(_usable_cpus())

from diamondlab import geometry, numerics
from diamondlab.geometry import Conoid, DiamondTile, DiamondTorre, StageSchedule, stage_schedule
from diamondlab.numerics import WaveParameters, courant_limit, gaussian_pulse, stencil_weights

try:  # the one version: pyproject.toml's, as installed
    __version__ = _version("diamondlab")
except PackageNotFoundError:  # pragma: no cover - imported from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = [
    "Conoid",
    "DiamondTile",
    "DiamondTorre",
    "Simulation",
    "StageSchedule",
    "WaveParameters",
    "__version__",
    "courant_limit",
    "gaussian_pulse",
    "geometry",
    "numerics",
    "stage_schedule",
    "stencil_weights",
]


def __getattr__(name):
    if name == "Simulation":
        from diamondlab.engine.simulation import Simulation

        return Simulation
    raise AttributeError(f"module 'diamondlab' has no attribute {name!r}")
