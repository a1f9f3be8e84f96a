"""CPU backend of the Maxwell equation: padded Yee fields advanced by :mod:`diamondlab.kernels.yee_cpu`.

Contract: that of :mod:`diamondlab.engine.backends` for an equation whose
state is ``E`` and ``H`` (plus the Drude current and the CPML's ``psi``):
``fields()`` returns host copies ``(E, H)`` of shape ``(3, nx, ny, nz)``;
``current_view()`` and ``planes()`` read one component (:attr:`view`,
``"Ez"`` unless set).  A sweep of height ``h`` steps is a DiamondTorre
sweep of ``2h`` tiers (half steps) on the tile of the acoustic stencil of
the same order (:mod:`diamondlab.kernels.yee_cpu`).  ``src_samples`` are
``(nrows, steps)``: what each row of source points (a dipole's, or a TFSF
plane wave's corrections on ``E`` and ``H``) adds at each step;
``take_traces`` gives ``(steps, nprobes)``.  ``set_physics(...,
periodic="yz")`` makes y and/or z periodic: no perfect conductor on their
faces, objects wrapped (:func:`~diamondlab.maxwell.materials.periodic_images`),
the halo kept as the image of the other side (:func:`wrap_halo` where fields
are set, the kernels' mirrored writes while they run) and, on a periodic y,
the ``periodic_y`` stage schedule (``ny`` a multiple of ``2R``: the plan
checks it).
"""

from __future__ import annotations

import numpy as np

from diamondlab.engine.backends import Backend, planes_of, size_for_threads
from diamondlab.engine.equations.maxwell_parts import MAXWELL
from diamondlab.geometry import DiamondTile, DiamondTorre, StageSchedule
from diamondlab.kernels.yee_cpu import column_materials, yee_cpu_kernels
from diamondlab.maxwell.boundaries import CPML
from diamondlab.maxwell.materials import MaterialTable, material_table, periodic_images
from diamondlab.maxwell.sources import COMPONENTS

__all__ = ["PSI_NAMES", "YeeCPUBackend", "wrap_halo"]

#: The CPML's memory arrays of the x, y and z layers, by name (:meth:`YeeCPUBackend.state`).
PSI_NAMES = ("psi_x", "psi_y", "psi_z")


def wrap_halo(padded: np.ndarray, halo: int, periodic: str) -> None:
    """Fill the halo of ``padded`` (``(3, X, Y, Z)``, a halo of ``halo`` cells) on the ``periodic`` axes
    (``"y"``, ``"z"``) with the cells it stands for on the other side, in place.

    >>> f = np.zeros((3, 1, 6, 1), np.float32); f[0, 0, 1:5, 0] = [1, 2, 3, 4]
    >>> wrap_halo(f, 1, "y"); f[0, 0, :, 0].tolist()
    [4.0, 1.0, 2.0, 3.0, 4.0, 1.0]
    """
    for axis in (2, 3):
        if "xyz"[axis - 1] in periodic:
            n = padded.shape[axis] - 2 * halo
            padded[...] = np.take(padded, halo + np.arange(-halo, n + halo) % n, axis=axis)


def _column_tables(padded_xy, halo: int, points, extra=None) -> tuple:
    """Kernel tables of ``points`` (``(cell, component index, kind, slot)``; kind 0 a source (a dipole, a TFSF
    correction: on E or H), 1 probe) and of ``extra`` (arrays ``(cells (N, 3), components, slots)`` of more
    probe points: the monitors'), grouped by column, in z order within a column and sources first within a
    cell (a GPU thread finds its cell's points by bisection): ``(colstart, colcount, pt_z, pt_comp, pt_kind,
    pt_slot)``."""
    cells = [np.asarray([p[0] for p in points], dtype=np.int64).reshape(-1, 3)]
    comp = [np.asarray([p[1] for p in points], dtype=np.int64)]
    kind = [np.asarray([p[2] for p in points], dtype=np.int64)]
    slot = [np.asarray([p[3] for p in points], dtype=np.int64)]
    if extra is not None:
        cells.append(np.asarray(extra[0], np.int64).reshape(-1, 3))
        comp.append(np.asarray(extra[1], np.int64))
        kind.append(np.ones(len(extra[1]), np.int64))
        slot.append(np.asarray(extra[2], np.int64))
    cells, comp, kind, slot = (np.concatenate(a) for a in (cells, comp, kind, slot))
    n = len(comp)
    X, Y = cells[:, 0] + halo, cells[:, 1] + halo  # noqa: N806 - padded indices, as in the kernels
    order = np.lexsort((np.arange(n), kind, cells[:, 2], Y, X))  # by column, z, sources first, as given
    colstart = np.full(padded_xy, -1, dtype=np.int64)
    colcount = np.zeros(padded_xy, dtype=np.int64)
    np.add.at(colcount, (X, Y), 1)
    xs, ys = X[order], Y[order]
    first = np.ones(n, dtype=bool)
    first[1:] = (xs[1:] != xs[:-1]) | (ys[1:] != ys[:-1])
    colstart[xs[first], ys[first]] = np.flatnonzero(first)
    pt_z, pt_comp, pt_kind, pt_slot = (np.zeros(max(n, 1), dtype=np.int64) for _ in range(4))
    pt_z[:n], pt_comp[:n] = cells[order, 2] + halo, comp[order]
    pt_kind[:n], pt_slot[:n] = kind[order], slot[order]
    return colstart, colcount, pt_z, pt_comp, pt_kind, pt_slot


class YeeCPUBackend(Backend):
    """Yee fields in host memory, kernels compiled with Numba (parallel over torres of a stage)."""

    #: What ``algorithm="auto"`` runs on this backend, and the reason the plan reports
    AUTO = ("diamondtorre", "DiamondTorre, the default")
    #: Numba threads up to which ``algorithm="auto"`` runs DiamondTorre: on a 16-core Xeon it ran 1.05-1.44x
    #: stepwise on 1, 2 and 4 threads and 0.68-0.84x on 8 and 16, where a stage's few torres a thread and its
    #: barrier cost more than the memory traffic the tile saves (BENCHMARKS.md, "The CPU's DiamondTorre
    #: against the thread count")
    AUTO_MAX_THREADS = 4

    @classmethod
    def check_state_bytes(cls, shape, need: int, what: str = "the run's state") -> None:
        """Where the state lives in device memory, ``ValueError`` if ``need`` bytes do not fit (host memory:
        the plan checks it for every backend)."""
        return None

    @classmethod
    def auto(cls, physics) -> tuple[str, str]:
        """What ``algorithm="auto"`` runs for ``physics`` (a checked scene), and why: :attr:`AUTO` on up to
        :attr:`AUTO_MAX_THREADS` Numba threads, stepwise on more.

        >>> import numba
        >>> YeeCPUBackend.auto(None)[0] == ("diamondtorre" if numba.get_num_threads() <= 4 else "stepwise")
        True
        """
        import numba

        threads = int(numba.get_num_threads())
        if threads <= cls.AUTO_MAX_THREADS:
            return cls.AUTO
        return ("stepwise", f"stepwise: on {threads} threads the CPU's DiamondTorre ran 0.68-0.84x stepwise "
                            f"(8 and 16 threads of a 16-core Xeon; ahead up to {cls.AUTO_MAX_THREADS}: "
                            "BENCHMARKS.md); algorithm='diamondtorre' runs it")

    name = "cpu"
    PARTS = MAXWELL
    #: (DTS, Nt) per order: tiles of radius 8 to 12 cells, Nt in steps (2 Nt tiers)
    TILING = {2: (8, 16), 4: (4, 16)}

    @classmethod
    def default_tiling(cls, order: int, shape=None, medium: str = "constant") -> tuple[int, int]:
        """:attr:`TILING`'s (DTS, Nt), on ``shape`` with DTS lowered by :meth:`fit_size` (a torre a thread in
        every stage) and Nt with it (Nt = 2R, as the tuning's candidates).

        >>> import numba
        >>> wide = (128, 16 * numba.get_num_threads(), 64)  # a torre of DTS 8 a thread
        >>> YeeCPUBackend.default_tiling(2), YeeCPUBackend.default_tiling(2, wide)
        ((8, 16), (8, 16))
        >>> numba.get_num_threads() < 2 or YeeCPUBackend.default_tiling(2, (128, 16, 64)) == (4, 8)
        True
        """
        size, nt = cls.TILING[order]
        if shape is None:
            return size, nt
        fitted = cls.fit_size(order, size, shape)
        return fitted, max(1, nt * fitted // size)

    @classmethod
    def fit_size(cls, order: int, size: int, shape) -> int:
        """The largest DTS up to ``size`` whose stages hold a whole torre for each of Numba's threads
        (:func:`~diamondlab.engine.backends.size_for_threads`): on 16 threads the 128^3 grid's stages held
        8 torres of DTS 8, and DiamondTorre ran at 0.60x stepwise (BENCHMARKS.md)."""
        import numba

        return size_for_threads(order, size, int(shape[1]), int(numba.get_num_threads()))

    @classmethod
    def tuning_candidates(cls, order: int) -> list[tuple[int, int]]:
        shs = order // 2
        return [(max(1, r // shs), 2 * r) for r in (8, 12, 16)]

    @classmethod
    def _check(cls, params, shape, size: int, nt: int, options: dict) -> dict:
        """DTS, Nt (in steps: 2 Nt tiers) and the domain (at least one tile), from the geometry."""
        StageSchedule.check(DiamondTorre(DiamondTile(params.order, size), 2 * nt), shape[0], shape[1])
        return {}

    def _build(self, params, shape, size: int, nt: int, options: dict) -> None:
        self.params, self.shape, self.size, self.nt = params, shape, size, nt
        self.halo = params.reach
        self.kernels = yee_cpu_kernels(params.order)
        self._padded = (3, *(n + 2 * self.halo for n in shape))
        self._e = np.zeros(self._padded, dtype=np.float32)
        self._h = np.zeros(self._padded, dtype=np.float32)
        self._schedules: dict[int, StageSchedule] = {}
        self.view = "Ez"
        self.set_physics()

    def set_physics(self, materials=(), dipoles=(), probes=(), pml: CPML | None = None,
                    periodic: str = "", monitors=None, eps_averaging: bool = True) -> None:
        """The scene (objects of :mod:`diamondlab.maxwell.materials`, or their rasterised table: a window's or
        an MPI rank's cut), the dipoles and probes (:mod:`diamondlab.maxwell.sources`), the CPML (or a
        part's, :class:`~diamondlab.engine.equations.maxwell_parts.CutCPML`), the periodic axes (``"y"``,
        ``"z"``, ``"yz"``: checked by the plan) and the monitors' points (a
        :class:`~diamondlab.maxwell.monitors.MonitorLayout`: recorded after the probes, transformed each
        sweep; ``eps_averaging``: the subpixel averaging of dielectric interfaces, where a scene is given);
        fields, currents, ``psi`` and the DFT sums start at zero."""
        dt = self.params.dt
        if "x" in periodic:
            raise ValueError("periodic: x cannot be periodic (DiamondTorre sweeps x in one pass)")
        self.periodic = "".join(a for a in "yz" if a in periodic)
        self._wrap = ("y" in self.periodic, "z" in self.periodic)
        self._schedules = {}
        if isinstance(materials, MaterialTable):
            self.table = materials
        else:
            walls = "".join(a for a in "xyz" if a not in self.periodic)
            self.table = material_table(periodic_images(materials, self.shape, self.periodic), self.shape, dt,
                                        pec_faces=walls, eps_averaging=eps_averaging)
        self._drude = self.table.drude
        self._j = np.zeros(self._padded if self._drude else (3, 1, 1, 1), dtype=np.float32)
        pml = pml or CPML(0)
        self.pml = pml
        prof = pml.axis_profiles(self.shape, dt, self.periodic)
        self._pml_h = (*(p.layer for p in prof), *(a for p in prof for a in (p.b_h, p.a_h)))
        self._pml_e = (*(p.layer for p in prof), *(a for p in prof for a in (p.b_e, p.a_e)))
        self._mat = (self.table.index, column_materials(self.table.index, prof[2].layer))
        nx, ny, nz = self.shape
        wx, wy, wz = (max(2 * w, 1) for w in pml.axis_widths(self.periodic))
        self._psi = (np.zeros((4, wx, ny, nz), np.float32), np.zeros((4, nx, wy, nz), np.float32),
                     np.zeros((4, nx, ny, wz), np.float32))
        rows = [getattr(d, "row", i) for i, d in enumerate(dipoles)]  # a Dipole, or a SourcePoint
        points = [(d.position, COMPONENTS.index(d.component), 0, r)
                  for d, r in zip(dipoles, rows, strict=True)]
        points += [(p.position, COMPONENTS.index(p.component), 1, i) for i, p in enumerate(probes)]
        self.ndipoles, self.nprobes = (max(rows) + 1 if rows else 0), len(probes)
        self.monitors = monitors if monitors is not None and monitors.npoints else None
        extra = None
        if self.monitors is not None:
            extra = (monitors.cells, monitors.components, self.nprobes + np.arange(monitors.npoints))
        self._points = _column_tables(self._padded[1:3], self.halo, points, extra)
        self.nrecorded = self.nprobes + (monitors.npoints if self.monitors is not None else 0)
        self._taken: list[np.ndarray] = []
        self._new_sums()
        self._clock = 0

    # ------------------------------------------------------------------ the monitors' running DFT
    def _new_sums(self) -> None:
        """The DFT sums of every monitor, zero (complex128 ``(nf, npoints)`` each)."""
        lay = self.monitors
        if lay is None:
            self._dft = []
            return
        bounds = zip(lay.frequencies, lay.starts[:-1], lay.starts[1:], strict=True)
        self._dft = [np.zeros((len(f), b - a), np.complex128) for f, a, b in bounds]

    def start_monitors(self, step: int) -> None:
        """The DFT sums to zero, the next sweep's first step ``step`` (the simulation's clock)."""
        self._new_sums()
        self._clock = int(step)

    def resume_monitors(self, step: int, sums) -> None:
        """The DFT sums set to ``sums`` (one ``(nf, npoints)`` complex array a monitor, as :meth:`dft_sums`
        gives them), the next sweep's first step ``step``: a calculation window's part goes on from where
        the whole run's sums are."""
        if self.monitors is not None:  # else the part holds none of their points
            self._set_sums([np.array(a, np.complex128) for a in sums])
        self._clock = int(step)

    def _set_sums(self, sums: list) -> None:
        self._dft = sums

    def dft_sums(self, which=None) -> list[np.ndarray]:
        """Host copies of the DFT sums, one ``(nf, npoints)`` complex128 array a monitor (``which``: the
        monitors' indices; None: every monitor)."""
        return [self._dft[k].copy() for k in (range(len(self._dft)) if which is None else which)]

    def _transform(self, rec, height: int) -> None:
        """Add the sweep's recorded monitor values (``rec``'s slots after the probes) to the DFT sums."""
        from diamondlab.kernels.dft import dft_accumulate
        from diamondlab.maxwell.monitors import dft_phases

        lay = self.monitors
        for m, acc in enumerate(self._dft):
            a, b = int(lay.starts[m]), int(lay.starts[m + 1])
            w = dft_phases(lay.frequencies[m], self._clock, height, self.params.dt)
            dft_accumulate(rec, self.nprobes + a, lay.half[a:b], w, acc)

    def reset(self) -> None:
        """Every field, current, ``psi`` and DFT sum to zero."""
        for a in (self._e, self._h, self._j, *self._psi):
            a.fill(0.0)
        self._taken = []
        self._new_sums()

    @property
    def _interior(self):
        h = self.halo
        return (slice(None), *(slice(h, h + n) for n in self.shape))

    def set_fields(self, e, h) -> None:
        """Copy ``E`` and ``H`` (each ``(3, nx, ny, nz)``) into the padded fields."""
        self._e[self._interior] = e
        self._h[self._interior] = h
        for f in (self._e, self._h):
            wrap_halo(f, self.halo, self.periodic)

    def field_views(self):
        return self._e[self._interior], self._h[self._interior]

    def state_views(self):
        """``E``, ``H``, ``J`` (with a Drude medium) and the three ``psi``
        (:mod:`~diamondlab.engine.equations.maxwell_parts`)."""
        currents = (self._j[self._interior],) if self._drude else ()
        return (*self.field_views(), *currents, *self._psi)

    def state(self) -> tuple:
        return tuple(np.array(a) for a in self.state_views())

    def set_state(self, arrays) -> None:
        for mine, values in zip(self.state_views(), arrays, strict=True):
            mine[...] = values
        self._wrap_halos()

    def set_rows(self, lo: int, hi: int, rows) -> None:
        """As the contract's, then the periodic halos (a window's or a rank's rows come without them)."""
        super().set_rows(lo, hi, rows)
        self._wrap_halos()

    def _wrap_halos(self) -> None:
        for f in (self._e, self._h):  # a periodic axis's halo holds the cells it stands for
            wrap_halo(f, self.halo, self.periodic)

    def fields(self) -> tuple[np.ndarray, np.ndarray]:
        return self._e[self._interior].copy(), self._h[self._interior].copy()

    def component_view(self, name: str) -> np.ndarray:
        """Read-only view of one component's interior (``"Ex"`` .. ``"Hz"``; no copy)."""
        c = COMPONENTS.index(name)
        view = (self._e if c < 3 else self._h)[(c % 3, *self._interior[1:])]
        view.flags.writeable = False
        return view

    def current_view(self) -> np.ndarray:
        return self.component_view(self.view)

    def planes(self, index, strides):
        return planes_of(self.current_view(), index, strides)

    def schedule(self, height: int) -> StageSchedule:
        """The stage schedule of a sweep of ``height`` steps (``2 height`` tiers), kept per height."""
        cached = self._schedules.get(height)
        if cached is None:
            tile = DiamondTile(self.params.order, self.size)
            cached = self._schedules[height] = StageSchedule(DiamondTorre(tile, 2 * height), *self.shape[:2],
                                                             periodic_y=self._wrap[0])
        return cached

    def compile(self) -> None:
        """Compile both algorithms' kernels on a one-tile grid with this run's features."""
        tile = DiamondTile(self.params.order, 1)
        probe = YeeCPUBackend(self.params, (2 * tile.radius, 2 * tile.radius, 1), 1, 1)
        probe._drude, probe._j = self._drude, np.zeros(probe._e.shape if self._drude else (3, 1, 1, 1),
                                                       np.float32)
        from diamondlab.kernels.generated import compiling, record_compiled

        with compiling(f"diamondlab_yee_cpu_no{self.params.order}"):  # another process compiling: its code
            probe.sweep(1)
            probe.step(1)
            if self.monitors is not None:
                from diamondlab.kernels.dft import dft_accumulate

                dft_accumulate(np.zeros((1, 1), np.float32), 0, np.zeros(1, np.int64),
                               np.zeros((2, 1, 1), np.complex128), np.zeros((1, 1), np.complex128))

        record_compiled()  # the digests of Numba's files, checked before the next import

    def _args(self, height: int, src_samples) -> tuple:
        src = np.zeros((max(self.ndipoles, 1), height), np.float32) if src_samples is None else src_samples
        rec = np.zeros((height, max(self.nrecorded, 1)), np.float32)
        return (self._pml_h, self._pml_e, self._psi, self._points, src, rec, self._wrap)

    def _keep(self, args) -> None:
        rec = args[-2]  # before the periodic flags
        if self.monitors is not None:
            self._transform(rec, len(rec))
        self._clock += len(rec)
        if self.nprobes:
            probes = rec[:, : self.nprobes]
            self._taken.append(probes if self.monitors is None else probes.copy())  # not the monitors' too

    def step(self, nsteps: int, src_samples=None) -> None:
        args = self._args(nsteps, src_samples)
        self.kernels.stepwise(self._e, self._h, self._j, self._drude, self._mat,
                              self.table.coefficients, nsteps, *args)
        self._keep(args)

    def sweep(self, height: int, src_samples=None) -> None:
        s = self.schedule(height)
        args = self._args(height, src_samples)
        self.kernels.diamondtorre(self._e, self._h, self._j, self._drude, self._mat,
                                  self.table.coefficients, s.tile.radius, s.torre_x0, s.torre_yc,
                                  s.stage_start, 2 * height, *args)
        self._keep(args)

    def take_traces(self) -> np.ndarray:
        rows, self._taken = self._taken, []
        return np.concatenate(rows) if rows else np.zeros((0, self.nprobes), dtype=np.float32)

    def synchronize(self) -> None:
        return None
