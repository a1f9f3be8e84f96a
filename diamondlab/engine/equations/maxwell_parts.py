"""The Maxwell equation as the calculation window and the MPI ranks see it: its state, reach and cuts.

Contract
--------
:data:`MAXWELL` is the :class:`~diamondlab.engine.scale.subdomain.EquationParts`
of the Yee backends (``PARTS``): the window (:mod:`~diamondlab.engine.scale.window`)
and the ranks (:mod:`~diamondlab.engine.scale.mpi`) run Maxwell's equations through
the same code as the acoustic equation, on this description:

- **state**: ``E`` and ``H`` (``(3, nx, ny, nz)`` each, the fields), the
  Drude current ``J`` where a Drude medium is in the table, and the CPML's
  ``psi`` per axis (``(4, 2w, ny, nz)``, ``(4, nx, 2w, nz)``,
  ``(4, nx, ny, 2w)``: along its own axis only the layer cells have a slot,
  numbered in order on every part);
- **reach**: a step is two half steps (``tiers = 2``), each reading
  ``order / 2`` rows beyond a cell (the Yee stencil's), so a sweep of
  ``Nt`` steps needs ``Nt * order`` ghost rows a side;
- **split axis** x: ``E``, ``H``, ``J`` and ``psi`` are C-ordered with x the
  slowest cell axis, so a rank's rows are whole runs of memory (on the GPU:
  one copy per component);
- **cut**: the material index (1 byte a component and cell: 3 bytes a cell)
  and the CPML profiles of the axis are cut to the part's rows (the global
  table's media and coefficients, the grid's PEC faces where they lie; a
  cut face is no wall: its zeros reach only ghost rows); dipoles and TFSF
  correction points whose cell the part holds read the run's sample rows
  unchanged; probes and the monitors' points are kept by the part that owns
  their cell (:func:`cut_monitors`), so each point's DFT sum is summed by one
  part, in the order of the whole run.

A material table is cut from the whole grid's, so a plan hands the backend
a rasterised :class:`~diamondlab.maxwell.materials.MaterialTable`
(:meth:`~diamondlab.engine.equations.maxwell_plan.MaxwellPlan.make_backend`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from diamondlab.engine.scale.subdomain import (
    EquationParts,
    PartPhysics,
    StateArray,
    inside,
    renumbered,
    shifted,
)
from diamondlab.maxwell.boundaries import CPML, AxisProfile
from diamondlab.maxwell.materials import MaterialTable
from diamondlab.maxwell.monitors import MonitorLayout

__all__ = ["MAXWELL", "CutCPML", "MaxwellParts", "cut_monitors"]


@dataclass(frozen=True)
class CutCPML:
    """The CPML ``pml`` of a grid of ``whole`` cells as a part holding rows ``[held)`` along ``axis`` sees
    it: the profiles of that axis cut (slots renumbered from 0), the others whole; the widths (and so the
    ``psi`` arrays' slot counts) the whole grid's.

    >>> cut = CutCPML(CPML(2), (10, 6, 6), 0, (1, 9))
    >>> cut.axis_profiles((8, 6, 6), 0.5)[0].layer.tolist()
    [0, -1, -1, -1, -1, -1, -1, 1]
    """

    pml: CPML
    whole: tuple
    axis: int
    held: tuple

    @property
    def width(self) -> int:
        return self.pml.width

    def axis_widths(self, periodic=()) -> tuple[int, int, int]:
        return self.pml.axis_widths(periodic)

    def axis_profiles(self, shape, dt: float, periodic=()) -> list[AxisProfile]:
        """The whole grid's profiles, the cut axis's cut to the part's rows (``shape``: the part's)."""
        profiles = self.pml.axis_profiles(self.whole, dt, periodic)
        lo, hi = self.held
        p = profiles[self.axis]
        cut = (np.ascontiguousarray(a[lo:hi]) for a in (p.b_e, p.a_e, p.b_h, p.a_h))
        profiles[self.axis] = AxisProfile(renumbered(p.layer, lo, hi), *cut)
        return profiles


@dataclass(frozen=True)
class MaxwellParts(EquationParts):
    """Maxwell's equations on the Yee grid (see the module contract).

    >>> from types import SimpleNamespace
    >>> run = SimpleNamespace(pml=CPML(2), shape=(8, 6, 6), table=SimpleNamespace(drude=True), periodic="")
    >>> [(a.name, a.shape) for a in MAXWELL.layout(run, (8, 6, 6))][2:4]
    [('J', (3, 8, 6, 6)), ('psi_x', (4, 4, 6, 6))]
    >>> MAXWELL.ghost_rows(4, 16), MAXWELL.split_axis
    (64, 0)
    """

    tiers: int = 2
    split_axis: int = 0
    name: str = field(default="maxwell")

    def layout(self, backend, shape) -> tuple[StateArray, ...]:
        """``E``, ``H``, ``J`` (with a Drude medium), ``psi`` of the three axes, on a grid of ``shape`` (the
        backend's, or the whole grid of which it runs a part)."""
        nx, ny, nz = (int(n) for n in shape)
        pml, periodic = backend.pml, getattr(backend, "periodic", "")
        if tuple(shape) != tuple(backend.shape) and isinstance(pml, CutCPML):
            pml = pml.pml  # the whole grid's
        wx, wy, wz = (max(2 * w, 1) for w in pml.axis_widths(periodic))
        cells = (3, nx, ny, nz)
        arrays = [StateArray(name, cells, (1, 2, 3), field=True) for name in ("E", "H")]
        if backend.table.drude:
            arrays.append(StateArray("J", cells, (1, 2, 3)))
        lx, ly, lz = (p.layer for p in pml.axis_profiles((nx, ny, nz), 1.0, periodic))
        arrays += [StateArray("psi_x", (4, wx, ny, nz), (1, 2, 3), (lx, None, None)),
                   StateArray("psi_y", (4, nx, wy, nz), (1, 2, 3), (None, ly, None)),
                   StateArray("psi_z", (4, nx, ny, wz), (1, 2, 3), (None, None, lz))]
        return tuple(arrays)

    def current(self, state, view=None) -> np.ndarray:
        """The component ``view`` (``"Ez"`` by default) of the host state."""
        from diamondlab.maxwell.sources import COMPONENTS

        c = COMPONENTS.index(view or "Ez")
        return state[c // 3][c % 3]

    def cut(self, physics: tuple, axis: int, held: tuple[int, int], owned: tuple[int, int]) -> PartPhysics:
        """Cut ``set_physics`` arguments ``(table, points, probes, pml, periodic[, monitors, ...])`` of a Yee
        backend: a rasterised :class:`~diamondlab.maxwell.materials.MaterialTable` of the whole grid, source
        points (dipoles, TFSF corrections: ``position``, ``component``, ``row``), probes, a CPML, the
        periodic axes (y, z: whole on every part) and a
        :class:`~diamondlab.maxwell.monitors.MonitorLayout`."""
        physics = tuple(physics)
        table, points, probes, pml, periodic = physics[:5] + (None, (), (), None, "")[len(physics[:5]):]
        monitors = physics[5] if len(physics) > 5 else None
        probes = tuple(probes)
        columns = inside([p.position for p in probes], axis, owned)
        if table is None:
            return PartPhysics((), None, columns, len(probes))
        if not isinstance(table, MaterialTable):
            raise TypeError("a Maxwell run through a window or MPI ranks cuts the rasterised material table "
                            f"of the whole grid (a MaterialTable); got {type(table).__name__}")
        whole = table.index.shape[1:]
        index = [slice(None)] * 4
        index[axis + 1] = slice(*held)
        part = MaterialTable(np.ascontiguousarray(table.index[tuple(index)]), table.media, table.coefficients)
        points = tuple(points)
        kept = inside([p.position for p in points], axis, held)
        mine = [points[i]._replace(position=shifted(points[i].position, axis, held[0])) for i in kept]
        seen = [dataclasses.replace(probes[i], position=shifted(probes[i].position, axis, held[0]))
                for i in columns]
        cut_pml = CutCPML(pml if pml is not None else CPML(0), whole, axis, held)
        args = (part, mine, seen, cut_pml, periodic)
        if monitors is None or not monitors.npoints:
            return PartPhysics(args, None, columns, len(probes))
        layout, monitor_columns = cut_monitors(monitors, axis, held[0], owned)
        shapes = tuple((len(f), int(b - a)) for f, a, b in
                       zip(monitors.frequencies, monitors.starts[:-1], monitors.starts[1:], strict=True))
        return PartPhysics((*args, layout, *physics[6:]), None, columns, len(probes), monitor_columns, shapes)


def cut_monitors(layout: MonitorLayout, axis: int, origin: int, owned: tuple[int, int]):
    """The points of the monitors' ``layout`` whose cell the part owning rows ``[owned)`` along ``axis``
    records (each point has one owner), in the coordinates of a part whose row 0 is grid row ``origin``;
    and per monitor, which of its points (columns of its DFT sums) they are.

    >>> from diamondlab.maxwell.monitors import DFTPlane, monitor_layout
    >>> lay = monitor_layout([DFTPlane("y", 2, [0.1], ("Ez",))], (6, 4, 3))
    >>> part, columns = cut_monitors(lay, 0, 2, (3, 5))
    >>> part.npoints, part.cells[:, 0].tolist(), columns[0].tolist()
    (6, [1, 1, 1, 2, 2, 2], [9, 10, 11, 12, 13, 14])
    """
    keep = (layout.cells[:, axis] >= owned[0]) & (layout.cells[:, axis] < owned[1])
    bounds = zip(layout.starts[:-1], layout.starts[1:], strict=True)
    columns = tuple(np.flatnonzero(keep[a:b]) for a, b in bounds)
    cells = layout.cells[keep].copy()
    cells[:, axis] -= origin
    starts = np.concatenate([[0], np.cumsum([len(c) for c in columns])]).astype(np.int64)
    part = dataclasses.replace(layout, cells=cells, components=layout.components[keep],
                               half=layout.half[keep], starts=starts)
    return part, columns


#: Maxwell's equations on the Yee grid: E, H, J, psi; two half steps a step; ranks split along x.
MAXWELL = MaxwellParts()
