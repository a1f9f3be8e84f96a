"""Maxwell's equations on the Yee grid: the scheme, media and objects, sources and probes, the CPML.

The equation's own facts (NumPy only); ``Simulation(..., equation="maxwell")``
runs them (:class:`~diamondlab.engine.equations.maxwell_simulation.MaxwellSimulation`).
Units are Meep's: ``c = eps0 = mu0 = 1``, lengths in cells, frequencies in
``c / h`` (SI constants in :mod:`diamondlab.maxwell.scheme` convert).
"""

from diamondlab.maxwell.boundaries import CPML
from diamondlab.maxwell.materials import (
    PEC,
    VACUUM,
    Box,
    Cylinder,
    Dielectric,
    Drude,
    IndexArray,
    Slab,
    Sphere,
    material_table,
)
from diamondlab.maxwell.scheme import YeeParameters, yee_courant_limit, yee_frequency, yee_weights
from diamondlab.maxwell.sources import (
    COMPONENTS,
    ContinuousWave,
    Dipole,
    GaussianPulse,
    PlaneWave,
    Probe,
    Ricker,
)

__all__ = [
    "COMPONENTS",
    "CPML",
    "PEC",
    "VACUUM",
    "Box",
    "ContinuousWave",
    "Cylinder",
    "Dielectric",
    "Dipole",
    "Drude",
    "GaussianPulse",
    "IndexArray",
    "PlaneWave",
    "Probe",
    "Ricker",
    "Slab",
    "Sphere",
    "YeeParameters",
    "material_table",
    "yee_courant_limit",
    "yee_frequency",
    "yee_weights",
]
