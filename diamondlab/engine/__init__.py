"""The engine floor: runs and their measurement.

:mod:`~diamondlab.engine.plan` (a run normalised and checked once),
:mod:`~diamondlab.engine.simulation` (the clock and the run loop),
:mod:`~diamondlab.engine.backends` (the backend contract and registry) with
:mod:`~diamondlab.engine.cpu_backend` and :mod:`~diamondlab.engine.cuda_backend`,
:mod:`~diamondlab.engine.physics`, :mod:`~diamondlab.engine.measure` (the one
measurement service), :mod:`~diamondlab.engine.perfmodel` and
:mod:`~diamondlab.engine.launchmodel` (what the hardware allows),
:mod:`~diamondlab.engine.autotune`, :mod:`~diamondlab.engine.io`,
:mod:`~diamondlab.engine.snapshots`, :mod:`~diamondlab.engine.memory` and
:mod:`~diamondlab.engine.interrupts`.  Import what you use from its module.
"""

__all__: list[str] = []
