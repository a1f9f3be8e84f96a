"""Outputs: run records, traces and fields written safely (:mod:`~diamondlab.engine.outputs.io`) and
snapshots as ``.npz`` and ``.vti`` (:mod:`~diamondlab.engine.outputs.snapshots`)."""

__all__: list[str] = []
