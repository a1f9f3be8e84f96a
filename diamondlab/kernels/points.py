"""Column tables of point sources and receivers for the kernels.

Contract
--------
Sources and receivers reach the kernels as *points*: single grid cells (a
source or receiver off the grid is split into up to eight cells with
trilinear weights before this layer).  The kernels visit the field column by
column, so the points are grouped by their (x, y) column: after a column
reaches its new level at step ``k`` the kernel adds ``src_samples[slot, k]``
to each source point of the column, then stores each receiver point's new
value in ``rec_vals[k, slot]``.  Within a column, sources come first, then
receivers, each in the order given, so every kernel does the same float32
additions in the same order (bit-for-bit equal algorithms).

:class:`PointTables` holds, in padded indices (halo ``h``), ``colstart`` and
``colcount`` (int64 ``(nx + 2h, ny + 2h)``; ``-1`` where a column has no
point), ``xcount`` (points per padded x plane) and per point ``pt_z``
(padded z), ``pt_kind`` (0 source, 1 receiver)
and ``pt_slot`` (row of ``src_samples`` or column of ``rec_vals``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["PointTables", "point_tables"]


@dataclass(frozen=True)
class PointTables:
    """Plain-array tables of the source and receiver points, grouped by column."""

    xcount: np.ndarray
    colstart: np.ndarray
    colcount: np.ndarray
    pt_z: np.ndarray
    pt_kind: np.ndarray
    pt_slot: np.ndarray
    nsources: int
    nreceivers: int
    columns: np.ndarray = field(repr=False)

    def kernel_args(self, height: int, src_samples: np.ndarray | None = None) -> tuple:
        """The trailing kernel arguments: tables, source samples and a fresh receiver buffer."""
        samples = self.source_samples(height) if src_samples is None else src_samples
        return (
            self.xcount, self.colstart, self.colcount, self.pt_z, self.pt_kind, self.pt_slot,
            samples, self.receiver_buffer(height),
        )  # fmt: skip

    def source_samples(self, height: int) -> np.ndarray:
        """An all-zero ``(nsources, height)`` float32 array (at least one row, for the kernels)."""
        return np.zeros((max(self.nsources, 1), height), dtype=np.float32)

    def receiver_buffer(self, height: int) -> np.ndarray:
        """A ``(height, nreceivers)`` float32 array for the kernels to fill (at least one column)."""
        return np.zeros((height, max(self.nreceivers, 1)), dtype=np.float32)


def point_tables(shape, halo: int, sources=(), receivers=()) -> PointTables:
    """Build :class:`PointTables` from integer ``(x, y, z)`` domain cells.

    >>> t = point_tables((4, 4, 4), 1, sources=[(1, 2, 3)], receivers=[(1, 2, 0), (3, 3, 3)])
    >>> int(t.colstart[2, 3]), int(t.colcount[2, 3]), t.pt_kind.tolist(), t.pt_z.tolist()
    (0, 2, [0, 1, 1], [4, 1, 4])
    """
    nx, ny, nz = (int(n) for n in shape)
    src = np.asarray(sources, dtype=np.int64).reshape(-1, 3)
    rec = np.asarray(receivers, dtype=np.int64).reshape(-1, 3)
    for name, pts in (("source", src), ("receiver", rec)):
        bad = (pts < 0).any(axis=1) | (pts >= np.array([nx, ny, nz])).any(axis=1)
        if bad.any():
            raise ValueError(
                f"{name} cell {tuple(pts[bad][0].tolist())} lies outside the grid "
                f"0 <= x < {nx}, 0 <= y < {ny}, 0 <= z < {nz}"
            )
    pts = np.concatenate([src, rec])
    kind = np.concatenate([np.zeros(len(src), np.int64), np.ones(len(rec), np.int64)])
    slot = np.concatenate([np.arange(len(src)), np.arange(len(rec))]).astype(np.int64)
    column = (pts[:, 0] + halo) * (ny + 2 * halo) + (pts[:, 1] + halo)
    order = np.lexsort((slot, kind, column))  # by column, sources first, then given order
    pts, kind, slot, column = pts[order], kind[order], slot[order], column[order]
    colstart = np.full((nx + 2 * halo, ny + 2 * halo), -1, dtype=np.int64)
    colcount = np.zeros_like(colstart)
    uniq, first, counts = np.unique(column, return_index=True, return_counts=True)
    colstart.reshape(-1)[uniq] = first
    colcount.reshape(-1)[uniq] = counts
    xcount = np.zeros(nx + 2 * halo, dtype=np.int64)
    np.add.at(xcount, pts[:, 0] + halo, 1)
    return PointTables(
        xcount=xcount,
        colstart=colstart,
        colcount=colcount,
        pt_z=pts[:, 2] + halo,
        pt_kind=kind,
        pt_slot=slot,
        nsources=len(src),
        nreceivers=len(rec),
        columns=pts[:, :2],
    )
