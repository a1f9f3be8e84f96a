"""diamondlab: the DiamondTorre (LRnLA) algorithm for the 3D acoustic wave equation.

``import diamondlab`` is light: it loads no NumPy (the command line's entry
point records stop signals before anything heavy, :mod:`diamondlab._entry`);
the geometry and numerics layers and the names exported from them load when
first used, Numba when a kernel is first built, and widgets, plotting and
numba.cuda only when asked for.  In a container with a CPU
quota it sets ``NUMBA_NUM_THREADS`` to the cores the process may use
(:func:`diamondlab.devices.usable_cpus`) unless it is set already.
"""

import os as _os

from diamondlab.devices import usable_cpus as _usable_cpus

# Numba runs as many threads as the host has cores, a container's CPU quota notwithstanding; unless the
# user chose (or Numba was imported first: it reads this once), take the cores this process may use
if "NUMBA_NUM_THREADS" not in _os.environ and _usable_cpus() < (_os.cpu_count() or 1):
    _os.environ["NUMBA_NUM_THREADS"] = str(_usable_cpus())

#: name -> the module it is exported from (loaded at the first use: :func:`__getattr__`)
_LAZY = {
    "geometry": "diamondlab", "numerics": "diamondlab",
    "Conoid": "diamondlab.geometry", "DiamondTile": "diamondlab.geometry",
    "DiamondTorre": "diamondlab.geometry",
    "StageSchedule": "diamondlab.geometry", "stage_schedule": "diamondlab.geometry",
    "WaveParameters": "diamondlab.numerics", "courant_limit": "diamondlab.numerics",
    "gaussian_pulse": "diamondlab.numerics", "stencil_weights": "diamondlab.numerics",
    "Simulation": "diamondlab.engine.run.simulation",
}  # fmt: skip

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
    import importlib

    if name == "__version__":  # the one version: pyproject.toml's, as installed
        from importlib.metadata import PackageNotFoundError, version

        try:
            value = version("diamondlab")
        except PackageNotFoundError:  # pragma: no cover - imported from a source tree never installed
            value = "0+unknown"
    elif name in _LAZY:
        where = _LAZY[name]
        value = importlib.import_module(f"diamondlab.{name}") if where == "diamondlab" else getattr(
            importlib.import_module(where), name)  # fmt: skip
    else:
        raise AttributeError(f"module 'diamondlab' has no attribute {name!r}")
    if name != "Simulation":  # Simulation stays lazy: its module may be reloaded in tests
        globals()[name] = value
    return value


def __dir__():
    return sorted({*globals(), *__all__})
