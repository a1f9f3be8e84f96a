"""Scale: a grid beyond one device's memory or one process.

The calculation window (:mod:`~diamondlab.engine.scale.window`, streamed on
the GPU by :mod:`~diamondlab.engine.scale.cuda_window`, for Maxwell's
equations by :mod:`~diamondlab.engine.scale.yee_window`), MPI ranks that split
the grid into slabs (:mod:`~diamondlab.engine.scale.mpi`), the ghost rows and
the physics of a part (:mod:`~diamondlab.engine.scale.subdomain`) and the
exchange of ghost rows between ranks (:mod:`~diamondlab.engine.scale.halo`).
"""

__all__: list[str] = []
