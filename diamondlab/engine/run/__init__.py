"""The run and its plan: a run checked once (:mod:`~diamondlab.engine.run.plan`), tuned where asked
(:mod:`~diamondlab.engine.run.autotune`), run by :class:`~diamondlab.engine.run.simulation.Simulation`,
stopped safely (:mod:`~diamondlab.engine.run.interrupts`)."""

__all__: list[str] = []
