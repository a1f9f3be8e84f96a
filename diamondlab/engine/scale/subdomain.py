"""A part of the grid cut along one axis, with ghost rows: what MPI slabs and calculation windows share.

Contract
--------
The window (:mod:`~diamondlab.engine.scale.window`) and the MPI ranks
(:mod:`~diamondlab.engine.scale.mpi`) run any equation whose backend names an
:class:`EquationParts` (``Backend.PARTS``): the equation as a value, saying

- its **state**, :meth:`EquationParts.layout`: the host arrays a run holds
  (:class:`StateArray`: the acoustic equation's two levels of ``u``;
  Maxwell's ``E``, ``H``, the Drude current and the CPML's ``psi``), each
  with the array axis of each grid axis and, where an axis holds only some
  cells (``psi`` of a CPML layer), which slot each cell has;
- its **reach**: a step is ``tiers`` updates (1; Maxwell's two half steps),
  each reading ``order / 2`` rows beyond a cell, so a sweep of ``Nt`` steps
  reads :meth:`EquationParts.ghost_rows` ``= Nt * tiers * order / 2`` rows
  beyond a part; a part that holds those rows beyond the rows it owns
  computes its owned rows exactly;
- the **axis** MPI ranks split (the one whose rows lie in long runs of the
  backend's memory);
- how to **cut its physics** to a part, :meth:`EquationParts.cut`: a
  :class:`PartPhysics` holding what the part's backend gets
  (``set_physics`` arguments: the medium's rows, the sources whose cell the
  part holds, ghost rows included: they feed the owned rows; the receivers
  whose cell it owns, each recorded once; all moved to the part's
  coordinates), which rows of the run's source samples it reads and where
  its receivers' values go among all of them.

Rows of a state array along an axis (:func:`rows_index`) are what a window
streams and what ranks exchange; nothing else in those modules depends on
the equation.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "ACOUSTIC", "EquationParts", "PartPhysics", "StateArray", "cut_shape", "ghost_rows", "inside",
    "renumbered", "rows_index", "rows_size", "shifted",
]


def ghost_rows(order: int, nt: int, tiers: int = 1) -> int:
    """Rows a sweep of ``nt`` steps of ``tiers`` updates each reads beyond a part (``order / 2`` an update).

    >>> ghost_rows(2, 8), ghost_rows(8, 16), ghost_rows(4, 6, tiers=2)
    (8, 64, 24)
    """
    return nt * tiers * (order // 2)


@dataclass(frozen=True)
class StateArray:
    """One array of an equation's state on the host: its ``shape``, the array axis of grid axis x, y, z
    (``axes``) and, per grid axis, None (the axis runs over all its cells) or ``slots``: whether each
    cell has a slot along that array axis (``>= 0``; the CPML's ``psi``: only layer cells).  Slots follow
    the cells' order from 0 on every part (a part holds its own cells' slots, renumbered).
    ``field``: one of what ``fields()`` returns."""

    name: str
    shape: tuple
    axes: tuple
    slots: tuple = (None, None, None)
    field: bool = False


def _held(slots: np.ndarray, lo: int, hi: int) -> int:
    return int(np.count_nonzero(slots[lo:hi] >= 0))


def rows_index(array: StateArray, axis: int, lo: int, hi: int, origin: int = 0):
    """The index of grid rows ``[lo, hi)`` along grid ``axis`` into ``array`` held by a part whose row 0
    is grid row ``origin`` (``origin <= lo``); None where it holds none of them.

    >>> e = StateArray("E", (3, 8, 4, 4), (1, 2, 3))
    >>> rows_index(e, 0, 2, 5, origin=1)
    (slice(None, None, None), slice(1, 4, None))
    >>> psi = StateArray("psi_x", (4, 4, 4, 4), (1, 2, 3), (np.array([0, 1, -1, -1, 2, 3]), None, None))
    >>> rows_index(psi, 0, 1, 5), rows_index(psi, 0, 4, 6, origin=3), rows_index(psi, 0, 2, 4)
    ((slice(None, None, None), slice(1, 3, None)), (slice(None, None, None), slice(0, 2, None)), None)
    """
    slots = array.slots[axis]
    if slots is None:
        index = slice(lo - origin, hi - origin)
    else:
        first = _held(slots, origin, lo)
        index = slice(first, first + _held(slots, lo, hi))
        if index.stop == index.start:
            return None
    return (slice(None),) * array.axes[axis] + (index,)


def cut_shape(array: StateArray, axis: int, lo: int, hi: int) -> tuple:
    """The shape of ``array``'s rows ``[lo, hi)`` along ``axis``.

    >>> cut_shape(StateArray("E", (3, 8, 4, 4), (1, 2, 3)), 0, 2, 5)
    (3, 3, 4, 4)
    """
    shape = list(array.shape)
    slots = array.slots[axis]
    shape[array.axes[axis]] = hi - lo if slots is None else _held(slots, lo, hi)
    return tuple(shape)


def rows_size(layout, axis: int, lo: int, hi: int) -> int:
    """Values that rows ``[lo, hi)`` along ``axis`` hold in the arrays of ``layout``.

    >>> rows_size(ACOUSTIC.layout(None, (4, 5, 6)), 1, 1, 3)
    96
    """
    return sum(int(np.prod(cut_shape(a, axis, lo, hi))) for a in layout)


def renumbered(slots: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """The slots of cells ``[lo, hi)`` as a part that holds them numbers them (from 0, in order; -1 none).

    >>> renumbered(np.array([0, 1, -1, -1, 2, 3]), 1, 5).tolist()
    [0, -1, -1, 1]
    """
    part = np.asarray(slots[lo:hi])
    return np.where(part >= 0, np.cumsum(part >= 0) - 1, -1).astype(part.dtype)


@dataclass(frozen=True)
class PartPhysics:
    """What the part ``[held)`` along ``axis`` that owns ``[owned)`` hands its backend, and how its source
    samples and receiver values map to the whole run's."""

    args: tuple  # set_physics(*args) of the part's backend
    source_rows: np.ndarray | None  # which rows of the whole run's samples the part reads (None: all)
    receiver_columns: np.ndarray  # which columns of the whole run's traces its receivers are
    nreceivers: int  # receivers of the whole run
    #: per monitor, which of its points (columns of its ``(nf, npoints)`` DFT sums) the part records
    monitor_columns: tuple = ()
    #: per monitor, the shape ``(nf, npoints)`` of the whole run's DFT sums
    monitor_shapes: tuple = ()

    def apply(self, backend) -> None:
        """Hand the part's medium and points to the backend that runs it."""
        backend.set_physics(*self.args)

    def samples(self, src_samples):
        """The part's rows of the run's ``(nrows, steps)`` samples (one zero row where it holds none)."""
        if src_samples is None or self.source_rows is None:
            return src_samples
        rows = src_samples[self.source_rows]
        return rows if len(rows) else np.zeros((1, src_samples.shape[1]), dtype=np.float32)

    def place(self, values: np.ndarray, out: np.ndarray) -> None:
        """Put the part's receiver values ``(steps, n)`` into their columns of ``out``."""
        if len(self.receiver_columns):
            out[:, self.receiver_columns] = values

    def sums_of(self, whole: list) -> list:
        """The part's columns of the whole run's DFT sums (one ``(nf, npoints)`` array a monitor)."""
        return [np.ascontiguousarray(w[:, c]) for w, c in zip(whole, self.monitor_columns, strict=True)]

    def place_sums(self, sums: list, whole: list, which=None) -> None:
        """Put the part's DFT sums into their columns of the whole run's ``whole`` (in place; ``sums`` empty:
        the part holds no monitor point); ``which``: the monitors ``sums`` and ``whole`` hold (None: all)."""
        columns = self.monitor_columns if which is None else [self.monitor_columns[k] for k in which]
        for w, c, mine in zip(whole, columns, sums or [None] * len(whole), strict=True):
            if len(c):
                w[:, c] = mine


def inside(positions, axis: int, rows: tuple[int, int]) -> np.ndarray:
    """Indices of the ``positions`` (cells) whose coordinate along ``axis`` lies in ``[rows)``.

    >>> inside([(1, 5, 2), (1, 9, 2)], 1, (4, 8)).tolist()
    [0]
    """
    cells = np.asarray(positions, dtype=np.int64).reshape(-1, 3)
    return np.flatnonzero((cells[:, axis] >= rows[0]) & (cells[:, axis] < rows[1]))


def shifted(cell, axis: int, origin: int) -> tuple:
    """``cell`` in the coordinates of a part whose row 0 is grid row ``origin`` along ``axis``."""
    return tuple(int(c) - origin if a == axis else int(c) for a, c in enumerate(cell))


@dataclass(frozen=True)
class EquationParts:
    """The acoustic equation as the window and the ranks see it (see the module contract); an equation
    with other state subclasses it (:class:`~diamondlab.engine.equations.maxwell_parts.MaxwellParts`).

    >>> [a.name for a in ACOUSTIC.layout(None, (4, 3, 2))], ACOUSTIC.ghost_rows(4, 6), ACOUSTIC.split_axis
    (['u_prev', 'u'], 12, 1)
    """

    #: updates a step (each reaching order / 2 rows)
    tiers: int = 1
    #: the axis MPI ranks split
    split_axis: int = 1
    name: str = field(default="acoustic")

    def ghost_rows(self, order: int, nt: int) -> int:
        """Rows a sweep of ``nt`` steps reads beyond a part."""
        return ghost_rows(order, nt, self.tiers)

    def layout(self, backend, shape) -> tuple[StateArray, ...]:
        """The state arrays of a run of ``backend``'s physics on a grid of ``shape``."""
        shape = tuple(int(n) for n in shape)
        return tuple(StateArray(n, shape, (0, 1, 2), field=True) for n in ("u_prev", "u"))

    def current(self, state, view=None) -> np.ndarray:
        """What ``current_view()`` shows of the host ``state`` arrays."""
        return state[1]

    def cut(self, physics: tuple, axis: int, held: tuple[int, int], owned: tuple[int, int]) -> PartPhysics:
        """Cut ``set_physics`` arguments ``(medium, sources, receivers)``: a
        :class:`~diamondlab.media.Medium` or None, and ``(x, y, z)`` cells.

        >>> p = ACOUSTIC.cut((None, [(1, 5, 2), (1, 9, 2)], [(0, 6, 1)]), 1, (4, 8), (5, 7))
        >>> p.args[1].tolist(), p.source_rows.tolist(), p.args[2].tolist()
        ([[1, 1, 2]], [0], [[0, 2, 1]])
        """
        medium, sources, receivers = (tuple(physics) + (None, (), ()))[:3]
        sources = np.asarray(sources, dtype=np.int64).reshape(-1, 3)
        receivers = np.asarray(receivers, dtype=np.int64).reshape(-1, 3)
        rows, columns = inside(sources, axis, held), inside(receivers, axis, owned)
        shift = np.zeros(3, dtype=np.int64)
        shift[axis] = held[0]
        part = None if medium is None else medium.cut(axis, *held)
        return PartPhysics((part, sources[rows] - shift, receivers[columns] - shift), rows, columns,
                           len(receivers))


#: The scalar wave equation: two levels of ``u``, one update a step, ranks split along y.
ACOUSTIC = EquationParts()
