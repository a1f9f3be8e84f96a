"""Measurement and models: the one measurement service (:mod:`~diamondlab.engine.measure.timing`),
benchmarks of whole runs (:mod:`~diamondlab.engine.measure.bench`) and the models of what the
hardware allows (:mod:`~diamondlab.engine.measure.perfmodel`, :mod:`~diamondlab.engine.measure.launchmodel`,
:mod:`~diamondlab.engine.measure.memory`)."""

__all__: list[str] = []
