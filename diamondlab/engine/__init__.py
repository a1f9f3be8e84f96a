"""The engine floor: runs of either equation, their backends, their scale, their measurement, their outputs.

One room per concern; a module is imported from its room (no name is
re-exported here, so that ``import diamondlab.engine`` stays light):

- :mod:`~diamondlab.engine.equations`: the equations the engine runs, by
  name, and what differs per equation (the acoustic physics, the Maxwell
  plan and simulation);
- :mod:`~diamondlab.engine.run`: the run and its plan
  (:mod:`~diamondlab.engine.run.plan`: a run normalised and checked once;
  :mod:`~diamondlab.engine.run.simulation`: the clock and the run loop;
  :mod:`~diamondlab.engine.run.autotune`; :mod:`~diamondlab.engine.run.interrupts`);
- :mod:`~diamondlab.engine.backends`: the backend contract and registry, the
  CPU and CUDA backends of both equations, and the swapped axes of a tall column;
- :mod:`~diamondlab.engine.scale`: beyond one device's memory or one process,
  the calculation window (host and GPU) and MPI ranks (slabs, their ghost rows);
- :mod:`~diamondlab.engine.measure`: the measurement service
  (:mod:`~diamondlab.engine.measure.timing`), benchmarks of whole runs
  (:mod:`~diamondlab.engine.measure.bench`) and the models of what the hardware
  allows (:mod:`~diamondlab.engine.measure.perfmodel`,
  :mod:`~diamondlab.engine.measure.launchmodel`, :mod:`~diamondlab.engine.measure.memory`);
- :mod:`~diamondlab.engine.outputs`: run records and snapshots written safely.

No import circle joins two modules (``tests/test_layout.py`` checks it, with
the floors of the package).
"""

__all__: list[str] = []
