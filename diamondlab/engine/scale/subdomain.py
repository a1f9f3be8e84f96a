"""A part of the grid cut along one axis, with ghost rows: what MPI slabs and calculation windows share.

Contract
--------
A sweep of ``Nt`` steps reads :func:`ghost_rows` rows beyond a part; a part
that holds those rows beyond the rows it owns computes its owned rows
exactly.  :class:`PartPhysics` cuts the medium and the points to a part:
the sources whose cell the part holds (ghost rows included: they feed the
owned rows), the receivers whose cell it owns (each recorded once), both
moved to the part's coordinates; it picks the part's rows of the source
samples and places its receivers' values among all of them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["PartPhysics", "ghost_rows"]


def ghost_rows(order: int, nt: int) -> int:
    """Rows a sweep of ``nt`` steps reads beyond a part: ``nt`` times the stencil radius.

    >>> ghost_rows(2, 8), ghost_rows(8, 16)
    (8, 64)
    """
    return nt * (order // 2)


@dataclass(frozen=True)
class PartPhysics:
    """The medium and the points of the part ``[held)`` along ``axis`` that owns ``[owned)``."""

    medium: object
    sources: np.ndarray  # (n, 3) cells in the part's coordinates
    receivers: np.ndarray
    source_rows: np.ndarray  # which rows of the whole run's samples these sources are
    receiver_columns: np.ndarray  # which columns of the whole run's traces these receivers are
    nreceivers: int  # receivers of the whole run

    @classmethod
    def cut(cls, medium, sources, receivers, axis: int, held: tuple[int, int], owned: tuple[int, int]):
        """Cut ``medium`` (a :class:`~diamondlab.media.Medium` or None) and the ``(x, y, z)`` cells.

        >>> p = PartPhysics.cut(None, [(1, 5, 2), (1, 9, 2)], [(0, 6, 1)], 1, (4, 8), (5, 7))
        >>> p.sources.tolist(), p.source_rows.tolist(), p.receivers.tolist()
        ([[1, 1, 2]], [0], [[0, 2, 1]])
        """
        sources = np.asarray(sources, dtype=np.int64).reshape(-1, 3)
        receivers = np.asarray(receivers, dtype=np.int64).reshape(-1, 3)
        rows = np.flatnonzero((sources[:, axis] >= held[0]) & (sources[:, axis] < held[1]))
        columns = np.flatnonzero((receivers[:, axis] >= owned[0]) & (receivers[:, axis] < owned[1]))
        shift = np.zeros(3, dtype=np.int64)
        shift[axis] = held[0]
        part = None if medium is None else medium.cut(axis, *held)
        return cls(part, sources[rows] - shift, receivers[columns] - shift, rows, columns, len(receivers))

    def apply(self, backend) -> None:
        """Hand the part's medium and points to the backend that runs it."""
        backend.set_physics(self.medium, self.sources, self.receivers)

    def samples(self, src_samples):
        """The part's rows of the run's ``(npoints, steps)`` samples (one zero row where it holds none)."""
        if src_samples is None:
            return None
        rows = src_samples[self.source_rows]
        return rows if len(rows) else np.zeros((1, src_samples.shape[1]), dtype=np.float32)

    def place(self, values: np.ndarray, out: np.ndarray) -> None:
        """Put the part's receiver values ``(steps, n)`` into their columns of ``out``."""
        if len(self.receiver_columns):
            out[:, self.receiver_columns] = values
