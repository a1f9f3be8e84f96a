"""The equations the engine runs, and what differs per equation.

Contract
--------
:data:`SIMULATIONS` names, per equation, the simulation class that runs it
(``"package.module:Class"``, as the backends are registered:
:data:`~diamondlab.engine.backends.BACKENDS`), so that
``Simulation(..., equation=name)`` (:class:`~diamondlab.engine.run.simulation.Simulation`)
loads only the equation asked for: an acoustic run imports nothing of
Maxwell's.  The room holds what an equation adds to the engine's run
(:mod:`~diamondlab.engine.run`): the acoustic equation's physics
(:mod:`~diamondlab.engine.equations.acoustic`; its plan and simulation are
the run's own, :mod:`~diamondlab.engine.run.plan` and
:mod:`~diamondlab.engine.run.simulation`), and the Maxwell equation's plan
and simulation (:mod:`~diamondlab.engine.equations.maxwell_plan`,
:mod:`~diamondlab.engine.equations.maxwell_simulation`); the backends of
both are in :mod:`~diamondlab.engine.backends`.
"""

from __future__ import annotations

import importlib

__all__ = ["EQUATIONS", "SIMULATIONS", "simulation_class"]

#: The simulation class of each equation, by name (loaded when first asked for).
SIMULATIONS = {
    "acoustic": "diamondlab.engine.run.simulation:Simulation",
    "maxwell": "diamondlab.engine.equations.maxwell_simulation:MaxwellSimulation",
}

#: The equations the engine runs.
EQUATIONS = tuple(SIMULATIONS)


def simulation_class(equation: str) -> type:
    """The simulation class that runs ``equation`` (one of :data:`EQUATIONS`).

    >>> simulation_class("maxwell").__name__
    'MaxwellSimulation'
    >>> simulation_class("elastic")
    Traceback (most recent call last):
    ...
    ValueError: equation must be one of ('acoustic', 'maxwell'); got 'elastic'
    """
    if equation not in SIMULATIONS:
        raise ValueError(f"equation must be one of {EQUATIONS}; got {equation!r}")
    module, name = SIMULATIONS[equation].split(":")
    return getattr(importlib.import_module(module), name)
