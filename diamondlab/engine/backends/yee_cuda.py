"""CUDA backend of the Maxwell equation: Yee fields on the GPU, run by :mod:`diamondlab.kernels.yee_cuda`.

Contract: that of :class:`~diamondlab.engine.backends.yee_cpu.YeeCPUBackend`
(the scene, dipoles, probes and CPML are prepared on the host by the same
code, then copied once), with the fields ``E``, ``H``, the Drude current,
``psi`` and the material index on the device; ``fields()`` and the component
views copy to the host.  A sweep is one launch (a block per torre, ``z``
across its threads, tickets and tier-level waits on progress flags kept on
the device); stepwise time stepping two launches a step.
Without a usable GPU the constructor raises ``RuntimeError``; a column over
:data:`~diamondlab.kernels.yee_cuda.MAX_NZ` cells or fields beyond the
device's free memory are refused by :meth:`check` before anything is
allocated.
"""

from __future__ import annotations

import functools

import numpy as np

from diamondlab.engine.backends.cuda import MEMORY_MARGIN_BYTES, CUDABackend, SampleRing, device_memory
from diamondlab.engine.backends.yee_cpu import YeeCPUBackend, wrap_halo
from diamondlab.geometry import DiamondTile
from diamondlab.kernels.cuda import PreparedLaunch
from diamondlab.kernels.yee_cuda import (
    MAX_GRID_Y,
    MAX_NZ,
    plain_offsets,
    point_lists,
    segment_copy_kernels,
    stepwise_launches,
    yee_cuda_kernels,
    yee_register_cap,
    yee_register_sweep,
    yee_shared_bytes,
    z_slabs,
)

__all__ = ["YeeCUDABackend"]

_AT_0 = (np.uint32(0),) * 3  # the origin of a box of the plain kernel with 32-bit offsets: the whole grid


def _profiles(prof, which: str) -> tuple[np.ndarray, np.ndarray]:
    """The three axes' ``(b, a)`` profiles at the ``E`` or ``H`` points as two ``(3, max n)`` arrays."""
    n = max(len(p.layer) for p in prof)
    b, a = np.ones((3, n), np.float32), np.zeros((3, n), np.float32)
    for axis, p in enumerate(prof):
        b[axis, : len(p.layer)] = getattr(p, f"b_{which}")
        a[axis, : len(p.layer)] = getattr(p, f"a_{which}")
    return b, a


def _point_cells(points, shape, halo: int) -> np.ndarray:
    """One byte a cell, 1 where a source or probe point lies (a thread looks no further elsewhere)."""
    colstart, colcount, pt_z = points[:3]
    flags = np.zeros(shape, np.uint8)
    cols = np.argwhere(colstart >= 0)
    counts = colcount[cols[:, 0], cols[:, 1]]
    first = colstart[cols[:, 0], cols[:, 1]]
    k = np.repeat(first, counts) + np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    xy = np.repeat(cols, counts, axis=0) - halo
    flags[xy[:, 0], xy[:, 1], pt_z[k] - halo] = 1
    return flags.ravel()


@functools.cache
def _device_register_cap(order: int, size: int, threads: int, physics: bool = False) -> int | None:
    """:func:`~diamondlab.kernels.yee_cuda.yee_register_cap` on this process's GPU (asked once, not per
    sweep)."""
    from diamondlab.devices import current_gpu

    gpu = current_gpu()
    if gpu is None:
        return None
    return yee_register_cap(order, size, threads, gpu.registers_per_sm, gpu.max_registers_per_thread,
                            physics)


class YeeCUDABackend(YeeCPUBackend):
    """Yee fields on the GPU (see the module contract)."""

    name = "cuda"
    #: (DTS, Nt) per order: the register-tile sweep's fastest on an H100 at 768x512x256 (2.25 GiB;
    #: BENCHMARKS.md, "Maxwell on the GPU: the tile in registers")
    TILING = {2: (2, 4), 4: (1, 4)}
    #: What ``algorithm="auto"`` runs here, and why: a plain scene (media only) runs DiamondTorre with its
    #: tile in registers (1.25-2.06x stepwise on an H100); with a CPML, points, Drude currents or periodic
    #: faces the sweeps measured 0.38-0.88x stepwise (the physics scene at 256^3, 2026-11-27)
    AUTO = ("diamondtorre", "DiamondTorre, its tile in registers (1.25-2.06x stepwise on an H100; "
                            "BENCHMARKS.md)")
    AUTO_PHYSICS = ("stepwise", "stepwise: with a CPML, sources, probes, monitors, Drude media or periodic "
                                "faces DiamondTorre's Maxwell sweeps on the GPU measured 0.38-0.88x stepwise "
                                "(BENCHMARKS.md)")
    #: launches whose source samples may be on their way up at once (:class:`SampleRing`'s pinned buffers)
    SAMPLE_RING = 8
    #: tiers between a torre's waits on its two dependencies (2: one step)
    chunk = 2
    #: launch order: None stage by stage, B diagonal bands of B torres
    band = None
    #: the register-tile sweep's L2 prefetch per order: each tier of an interior torre prefetches what the
    #: tier this many tiers later loads first; the fastest on an H200 at 768x512x256 (order 2: 2 tiers,
    #: 52.7 against 48.7 G/s, 1 tier 44.4; order 4: 1 tier, 33.3 against 29.8; BENCHMARKS.md "The Yee
    #: register-tile sweep: the tier ahead's lines prefetched into L2")
    PREFETCH = {2: 2, 4: 1}
    #: tiers ahead the register-tile sweep prefetches (0: none; None: :attr:`PREFETCH`'s); the values are the
    #: same either way
    prefetch = None
    #: the register-tile sweep compiled for the run's grid, its sizes constants in the code (a compile per
    #: grid, cached on disk): ptxas offline (sm_90) counts 27 % fewer instructions and 12 / 24 bytes spilled
    #: instead of 92 / 100 at order 2 (DTS 2, cap 128), 184 registers instead of 245 at order 4; not yet
    #: measured on a GPU (BENCHMARKS.md, "The sweep compiled for its grid: offline, before the device measures
    #: it"), so off.  The values are the same either way.  Before it is turned on by default, :meth:`compile`
    #: must compile the grid's kernel too (the first sweep compiles it now, inside the run's clock)
    specialize_shape = False
    #: the sweep whose tile lives in registers (:mod:`diamondlab.kernels.yee_cuda_source`) runs plain scenes;
    #: False: the sweep that reads every value through the caches runs every scene
    tile_in_registers = True
    #: whether the register-tile sweep also runs scenes with a CPML, sources, probes or Drude media (not
    #: periodic faces). It is exact there but measured slower than the cache-read sweep (the physics scene
    #: at 256^3 on an H100 ran 6.5 and 4.3 G/s at orders 2 and 4, stepwise 10.6 and 9.8, BENCHMARKS.md), so
    #: it is off by default
    registers_for_physics = False
    #: whether the register-tile sweep of a physics scene runs its calm torres (no CPML layer across x or y,
    #: no Drude medium, points on a few z planes: :func:`~diamondlab.kernels.yee_cuda_source.calm_torres`)
    #: with the plain tile's code; False: every torre takes the physics path (the same results)
    calm_torres = True
    #: whether a stepwise half step of a scene with a CPML, points or Drude media launches a kernel per group
    #: of columns and the points after them (:meth:`_stepwise_launches`), or one kernel with the scene's
    #: features for every column. Both give the same values. None: the groups where the grid has at least
    #: :attr:`GROUP_CELLS` cells a launch of theirs.  On an H200 (the bench's physics scene, split at the z
    #: layers, the launches kept between calls; BENCHMARKS.md, "The Maxwell physics scene's stepwise half
    #: step: points as lists, ..."), the groups ran 512x512x256 1.16x and 1.09x (orders 2 and 4), 256^3
    #: 1.00x and 1.10x, and 128^3 0.54x, where a launch costs the host about 17 us and the GPU less
    stepwise_groups: bool | None = None
    #: the fewest cells a launch of the column groups for :attr:`stepwise_groups` None: 256^3 with a Drude
    #: sphere (eight launches a half step) has 2.1 million, 128^3 a quarter of a million
    GROUP_CELLS = 1_500_000
    #: whether the column groups (:attr:`stepwise_groups`) split the columns no x or y layer crosses at the
    #: CPML's z layers: their cells between the layers run the kernel without a CPML (blocks y fastest, as a
    #: plain scene's), the layers' cells of all of them one launch of whole columns' slabs
    #: (``stepwise_slabs``); False: each of those columns whole in one kernel that checks the z layers
    split_z_layers = True
    #: the most threads a block of the split groups' z slabs (``stepwise_slabs``) holds, in whole runs of a
    #: column's z layers
    SLAB_THREADS = 128
    #: whether a plain scene's stepwise half steps run the kernel with 32-bit offsets (``stepwise_plain`` and
    #: ``stepwise_plain_yx``: half the general kernel's instructions a cell, the same values) where every
    #: offset fits in 32 bits, and so do the column groups' boxes between the z layers that hold no Drude
    #: medium (``stepwise_plain_box_yx``);
    #: None: at order 4, where an H200 ran it 2-5 % faster than the general kernel, not at order 2, where
    #: it ran 3 % slower (BENCHMARKS.md, "The Yee stepwise kernel: columns launched in memory order")
    lean_stepwise: bool | None = None
    #: the order of a stepwise launch's blocks (a block a column): ``"yx"``, y fastest, so that consecutive
    #: blocks take neighbouring columns in memory, or ``"xy"``, x fastest (columns a padded y-z plane
    #: apart); None: ``"yx"`` on a plain scene (an H200 ran it 9-13 % faster at order 2, 2-5 % at order
    #: 4), ``"xy"`` on a scene with a CPML, points or Drude media (4-5 % slower with ``"yx"``)
    block_order: str | None = None

    @staticmethod
    def plain_scene(pml: bool, points: bool, drude: bool, periodic: str) -> bool:
        """Whether the register-tile sweep runs a scene: no CPML, source or probe points (monitors are
        points), Drude current or periodic face."""
        return not (pml or points or drude or periodic)

    @classmethod
    def auto(cls, physics) -> tuple[str, str]:
        plain = cls.plain_scene(any(physics.pml_widths), bool(physics.has_points or physics.monitors),
                                physics.drude, physics.periodic)
        return cls.AUTO if plain else cls.AUTO_PHYSICS

    available = staticmethod(CUDABackend.available)
    unavailable_reason = staticmethod(CUDABackend.unavailable_reason)
    #: one GPU a rank, chosen as the acoustic CUDA backend chooses it (its rank on its node)
    claim_device = classmethod(CUDABackend.claim_device.__func__)
    #: MPI neighbours on one node exchange ghost rows GPU to GPU
    #: (:class:`~diamondlab.engine.scale.halo.PeerHalo`, through :meth:`pack_rows` and :meth:`unpack_rows`)
    PEER_HALO = True

    @classmethod
    def _check(cls, params, shape, size: int, nt: int, options: dict) -> dict:
        """The geometry's checks, a column a block can hold, the fields in the device's free memory."""
        super()._check(params, shape, size, nt, options)
        if shape[2] > MAX_NZ:
            raise ValueError(f"shape: nz={shape[2]} exceeds {MAX_NZ}, the tallest column a block holds on "
                             "the GPU for the Maxwell equation; put the longest axis along x")
        if not cls.available():
            raise RuntimeError(cls.unavailable_reason())
        cells = int(np.prod([n + 2 * params.reach for n in shape], dtype=np.int64))
        need = 3 * 4 * cells * 3 + 4 * int(np.prod(shape, dtype=np.int64))  # E, H, J (worst), index, points
        cls.check_state_bytes(shape, need, "the Maxwell fields")
        return {}

    @classmethod
    def check_state_bytes(cls, shape, need: int, what: str = "the run's state") -> None:
        """``ValueError`` where ``need`` bytes (the plan counts the scene's: E, H, J, index, the CPML's psi,
        the monitors' sums and a sweep of their values) do not fit the device's free memory."""
        from diamondlab.kernels.cuda import simulator_enabled

        free = None if simulator_enabled() else device_memory()[0]
        if free is not None and need + MEMORY_MARGIN_BYTES > free:
            raise ValueError(f"shape {tuple(shape)}: {what} need {need / 2**30:.1f} GiB of GPU memory, "
                             f"{free / 2**30:.1f} GiB are free: use a smaller shape or fewer monitors")

    def _build(self, params, shape, size: int, nt: int, options: dict) -> None:
        from numba import cuda

        self._cuda = cuda
        self.params, self.shape, self.size, self.nt = params, shape, size, nt
        self.halo = params.reach
        self._padded = (3, *(n + 2 * self.halo for n in shape))
        self._e, self._h = self._allocate_fields()
        self._schedules = {}
        self._stage_lists: dict[tuple, tuple] = {}
        self._counter = cuda.to_device(np.zeros(1, dtype=np.int64))  # tickets taken, never reset
        self._tickets = 0
        self._epochs: dict[int, int] = {}  # sweeps run per height (their flags: epoch * 2**20 + tiers)
        self.view = "Ez"
        self.set_physics()

    def _allocate_fields(self) -> tuple:
        """``E`` and ``H`` on the device, flat (the kernels' layout; :meth:`reset` zeroes them)."""
        size = int(np.prod(self._padded, dtype=np.int64))
        return tuple(self._cuda.device_array(size, dtype=np.float32) for _ in range(2))

    def _device_current(self):
        """The Drude current where the kernels read it: the host's ``J`` copied whole (a placeholder of three
        cells without a Drude medium)."""
        return self._cuda.to_device(self._j.ravel())

    def _device_psi(self) -> tuple:
        """The CPML's ``psi`` of the three axes where the kernels read them: the host's copied whole."""
        return tuple(self._cuda.to_device(p) for p in self._psi)

    def set_physics(self, materials=(), dipoles=(), probes=(), pml=None, periodic: str = "",
                    monitors=None, eps_averaging=True) -> None:
        """As on the CPU (the same host tables), then copied to the device; fields start at zero."""
        self._prepared: dict[int, tuple] = {}  # the old scene's launches let go of its arrays first
        super().set_physics(materials, dipoles, probes, pml, periodic, monitors, eps_averaging)
        self._stage_lists = {}  # the schedule follows periodic y
        self._placeholders: dict = {}  # the launches' unused source and record arrays, per height
        if getattr(self, "_samples", None) is not None:
            self._cuda.synchronize()  # the old scene's copies have run before its ring goes
        self._samples = None  # the sources' samples on their way up (a SampleRing, made at the first launch)
        self._blocks: dict[tuple[int, int], list] = {}  # row blocks of the state arrays about to be made
        pml = any(self.pml.axis_widths(self.periodic))
        points = bool(self.ndipoles or self.nrecorded)
        self.kernels = yee_cuda_kernels(self.params.order, pml=pml, points=points, drude=self._drude)
        self._features = {"pml": pml, "points": points, "drude": self._drude}
        #: nothing but media: the register-tile sweep runs it
        self.plain = self.plain_scene(pml, points, self._drude, self.periodic)
        to = self._cuda.to_device
        prof = self.pml.axis_profiles(self.shape, self.params.dt, self.periodic)
        self._d_table = to(self.table.coefficients.ravel())
        self._d_index = to(self.table.index.ravel())
        self._d_j = self._device_current()
        self._d_psi = self._device_psi()
        layers = tuple(to(p.layer) for p in prof)
        bh, ah = _profiles(prof, "h")
        be, ae = _profiles(prof, "e")
        self._d_pml = (*layers, to(bh), to(ah), to(be), to(ae))
        cells = _point_cells(self._points, self.shape, self.halo)
        self._d_points = (*(to(a) for a in self._points), to(cells))
        self._stepwise_launches(prof, cells if points else None)
        self._calm: dict[int, tuple] = {}  # calm torres of the register-tile sweep, per height
        lay = self.monitors
        # a monitor none of whose points this part holds (an MPI rank's, a window's) has no device arrays
        self._d_half = [] if lay is None else [to(lay.half[a:b]) if b > a else None for a, b in
                                               zip(lay.starts[:-1], lay.starts[1:], strict=True)]
        self.reset()

    def _stepwise_launches(self, prof, cells) -> None:
        """What a stepwise half step launches: one kernel with the scene's features for every column (a
        plain scene's with 32-bit offsets where :attr:`lean_stepwise` says so; its blocks in
        :attr:`block_order`), or, with :attr:`stepwise_groups`, a kernel per box or list of columns
        (:func:`~diamondlab.kernels.yee_cuda.stepwise_launches`: the columns an x or y layer of the CPML
        crosses, the box of the Drude columns, the rest), each with only its columns' loads and branches,
        none with the points'; then, where the scene has points, a thread a cell with points adds them
        (``points_after``: the same values; BENCHMARKS.md, "Maxwell stepwise physics by column groups")."""
        to = self._cuda.to_device
        self._prepared = {}  # the launches prepared, by their place (_step_launches)
        lean = self.params.order == 4 if self.lean_stepwise is None else self.lean_stepwise
        sizes = plain_offsets(self.shape, self.params.order) if lean and self.plain else None
        yx = (self.block_order or ("yx" if self.plain else "xy")) == "yx"
        if self.shape[0 if yx else 1] > MAX_GRID_Y:  # too many blocks along the launch's second axis
            yx = not yx
        # one kernel for every cell (points too); a plain scene whose offsets fit in 32 bits: the lean kernel
        # (its sizes the launch's values)
        name = ("stepwise_plain" if sizes is not None else "stepwise") + ("_yx" if yx else "")
        grid = self.shape[1::-1] if yx else self.shape[:2]
        one = [(self.kernels, name, grid, self.shape[2], () if sizes is None else (*sizes, *_AT_0))]
        self._stepwise, self._point_lists = one, None
        if self.plain or self.stepwise_groups is False or self.shape[0] > MAX_GRID_Y:
            return  # nothing to group (no layer, point or Drude medium), or the groups' x too wide a launch
        z_layer = prof[2].layer >= 0
        below, above = z_slabs(z_layer) if self.split_z_layers else (0, 0)
        # the 32-bit kernel writes no periodic images: the boxes of a periodic scene take the general one
        lean_boxes = plain_offsets(self.shape, self.params.order) if lean and not self.periodic else None
        nz, split = self.shape[2], 0 < below + above < self.shape[2]
        drude_xy, drude_z = self._drude_columns() if self._drude else (None, None)
        launches = stepwise_launches(prof[0].layer >= 0, prof[1].layer >= 0, drude_xy)
        self._stepwise, boxes = [], []
        for _layered, drude, where in launches:
            if not isinstance(where, tuple):  # a list of columns: every feature of the scene they hold
                kernels = yee_cuda_kernels(self.params.order, pml=True, points=False, drude=drude)
                self._stepwise.append((kernels, "stepwise_listed", where.shape[1], nz, (to(where),)))
            elif split:  # a box's cells between the z layers: no CPML, its blocks y fastest
                x0, y0, wx, wy = where
                kernels = yee_cuda_kernels(self.params.order, pml=False, points=False, drude=drude)
                if lean_boxes and not drude:  # the plain scene's kernel with 32-bit offsets, on the box
                    origin = tuple(np.uint32(a) for a in (x0, y0, below))
                    self._stepwise.append((kernels, "stepwise_plain_box_yx", (wy, wx), nz - below - above,
                                           (*lean_boxes, *origin)))
                else:
                    self._stepwise.append((kernels, "stepwise_box_yx", (wy, wx), nz - below - above,
                                           (x0, y0, below)))
                boxes.append(where)
            else:  # a box of whole columns that check the z layers, their blocks y fastest
                kernels = yee_cuda_kernels(self.params.order, pml=bool(z_layer.any()), points=False,
                                           drude=drude, pml_xy=False)
                self._stepwise.append((kernels, "stepwise_box_yx", where[:1:-1], nz, (*where[:2], 0)))
        if boxes:  # the z layers of every box in one launch, as many runs of them a block as 128 threads hold
            x0, y0 = min(b[0] for b in boxes), min(b[1] for b in boxes)
            wx, wy = max(b[0] + b[2] for b in boxes) - x0, max(b[1] + b[3] for b in boxes) - y0
            per = below + above
            columns = max(1, self.SLAB_THREADS // per)
            kernels = yee_cuda_kernels(self.params.order, pml=True, points=False, pml_xy=False,
                                       drude=bool(self._drude and drude_z[z_layer].any()))
            self._stepwise.append((kernels, "stepwise_slabs", (-(-(wy + 1) // columns), wx), columns * per,
                                   (x0, y0, wy, below, above)))
        count = len(self._stepwise) + (cells is not None)
        if self.stepwise_groups is None and np.prod(self.shape) < self.GROUP_CELLS * count:
            self._stepwise = one  # too few cells a launch: the host's time for the launches would bound it
            return
        if cells is not None:  # the points' launch: its arrays and blocks (points_after)
            lists = point_lists(*self._points, self._padded[1:])
            most = max(int(lists[0][1]), int(lists[0][2] - lists[0][1]), 1)
            self._point_lists = (tuple(to(a) for a in lists), -(-most // 128))

    def _new_sums(self) -> None:
        """The DFT sums on the device, zero: a float64 ``(nf, npoints)`` pair (real, imaginary) a monitor."""
        super()._new_sums()
        self._set_sums(self._dft)

    def _set_sums(self, sums: list) -> None:
        to = self._cuda.to_device
        self._d_dft = [(to(np.ascontiguousarray(a.real)), to(np.ascontiguousarray(a.imag))) if a.size else a
                       for a in sums]  # an empty monitor stays on the host

    def dft_sums(self, which=None) -> list[np.ndarray]:
        """As on the CPU; only the monitors asked for cross the bus."""
        chosen = self._d_dft if which is None else [self._d_dft[k] for k in which]
        return [s.copy() if isinstance(s, np.ndarray) else s[0].copy_to_host() + 1j * s[1].copy_to_host()
                for s in chosen]

    def plane_flux(self, m: int, table, dims) -> np.ndarray:
        """:func:`~diamondlab.maxwell.monitors.plane_flux_sum` of a flux plane of monitor ``m`` (its
        ``face_table`` and face counts ``dims``) from the sums on the device: ``nf`` float64 values cross
        the bus, not the plane's sums."""
        from diamondlab.kernels.dft import FLUX_THREADS, dft_cuda_kernels

        re, im = self._d_dft[m]
        nfaces = int(dims[0]) * int(dims[1])
        grid = (-(-nfaces // FLUX_THREADS), re.shape[0])
        out = self._cuda.device_array((grid[1], grid[0]), np.float64)  # a sum a block and frequency
        dft_cuda_kernels().plane_flux[grid, FLUX_THREADS](re, im, self._cuda.to_device(table), int(dims[1]),
                                                          nfaces, out)
        return out.copy_to_host().sum(axis=1)

    def _transform(self, rec, height: int) -> None:
        """The sweep's monitor values, still on the device, into the device's DFT sums (a thread a point):
        only the phase factors ``(2, nf, height)`` cross the bus."""
        from diamondlab.kernels.dft import dft_cuda_kernels
        from diamondlab.maxwell.monitors import dft_phases

        lay, kernels, to = self.monitors, dft_cuda_kernels(), self._cuda.to_device
        for m, sums in enumerate(self._d_dft):
            a, b = int(lay.starts[m]), int(lay.starts[m + 1])
            if b == a:
                continue
            re, im = sums
            w = dft_phases(lay.frequencies[m], self._clock, height, self.params.dt)
            blocks = -(-(b - a) // 128)
            w_re, w_im = (to(np.ascontiguousarray(part)) for part in (w.real, w.imag))
            kernels.accumulate[blocks, 128](rec, self.nprobes + a, self._d_half[m], w_re, w_im, re, im)

    def reset(self) -> None:
        from diamondlab.kernels.cuda import simulator_enabled

        for a in (self._e, self._h, self._d_j, *self._d_psi):
            if simulator_enabled():
                a.copy_to_device(np.zeros(a.shape, np.float32))
            else:
                from numba.cuda.cudadrv.driver import device_memset

                device_memset(a, 0, a.nbytes)
        self._taken = []
        self._new_sums()

    def set_fields(self, e, h) -> None:
        for dev, host in ((self._e, e), (self._h, h)):
            padded = np.zeros(self._padded, np.float32)
            padded[self._interior] = host
            wrap_halo(padded, self.halo, self.periodic)
            dev.copy_to_device(padded.ravel())

    def field_views(self):
        return None, None

    def _device_state(self) -> tuple:
        """The state arrays on the device (flat), as :meth:`state_views` orders them on the CPU."""
        return (self._e, self._h, *((self._d_j,) if self._drude else ()), *self._d_psi)

    def state_views(self):
        return None

    def state(self) -> tuple:
        """Host copies of ``E``, ``H``, ``J`` (with a Drude medium) and the three ``psi``."""
        out = list(self.fields())
        if self._drude:
            out.append(np.ascontiguousarray(self._d_j.copy_to_host().reshape(self._padded)[self._interior]))
        return (*out, *(p.copy_to_host() for p in self._d_psi))

    # ghost rows of MPI ranks (split along x): whole runs of each device array, copied as they lie
    def _row_runs(self, lo: int, hi: int) -> list:
        """x rows ``[lo, hi)`` of every state array as equal runs of a flat device array: ``(array, device
        starts, starts in the packed rows (device), starts, length)`` per array, a run per component of
        ``E``, ``H``, ``J`` (with their y and z padding, zero) and per slot of each ``psi``, in
        :meth:`get_rows`' order; made once per range and physics (an MPI exchange asks for the same rows
        every sweep)."""
        return self._rows_of(lo, hi)[0]

    def _row_blocks(self, lo: int, hi: int) -> list:
        """The runs of :meth:`_row_runs` as device views, one a run."""
        return self._rows_of(lo, hi)[1]

    def _rows_of(self, lo: int, hi: int) -> tuple:
        cached = self._blocks.get((lo, hi))
        if cached is None:
            runs = self._new_row_runs(lo, hi)
            blocks = [flat[s:s + length] for flat, _, _, starts, length in runs for s in starts]
            cached = self._blocks[lo, hi] = (runs, blocks)
        return cached

    def _new_row_runs(self, lo: int, hi: int) -> list:
        from diamondlab.engine.scale.subdomain import rows_index

        _, px, py, pz = self._padded
        plane, m = py * pz, self.halo
        runs = [(dev, [c * px * plane + (lo + m) * plane for c in range(3)], (hi - lo) * plane)
                for dev in self._device_state()[:3 if self._drude else 2]]
        for a, dev in zip(self.state_layout()[-3:], self._d_psi, strict=True):
            index = rows_index(a, 0, lo, hi)
            if index is not None:  # psi[k, rows, ...]: a run per slot k
                rows, inner = index[1], int(np.prod(dev.shape[2:], dtype=np.int64))
                runs.append((dev.reshape(dev.size), [k * dev.shape[1] * inner + rows.start * inner
                                                     for k in range(dev.shape[0])],
                             (rows.stop - rows.start) * inner))
        out, at = [], 0
        for flat, starts, length in runs:
            packed = at + length * np.arange(len(starts), dtype=np.int64)
            out.append((flat, self._cuda.to_device(np.array(starts, np.int64)), self._cuda.to_device(packed),
                        starts, length))
            at += len(starts) * length
        return out

    def rows_size(self, lo: int, hi: int) -> int:
        return sum(int(b.size) for b in self._row_blocks(lo, hi))

    def get_rows(self, lo: int, hi: int) -> np.ndarray:
        """x rows ``[lo, hi)`` of the state on the host: only those rows cross the bus."""
        blocks = self._row_blocks(lo, hi)
        out, at = np.empty(sum(int(b.size) for b in blocks), np.float32), 0
        for b in blocks:
            b.copy_to_host(out[at:at + b.size])
            at += b.size
        return out

    def set_rows(self, lo: int, hi: int, rows) -> None:
        rows, at = np.ascontiguousarray(rows, dtype=np.float32).reshape(-1), 0
        for b in self._row_blocks(lo, hi):
            b.copy_to_device(rows[at:at + b.size])
            at += b.size

    def pack_rows(self, lo: int, hi: int, out) -> None:
        """x rows ``[lo, hi)`` of the state into the flat device buffer ``out`` (as :meth:`get_rows` lays
        them out), device to device: the ghost rows for a neighbour on another GPU, a launch per state array
        (:func:`~diamondlab.kernels.yee_cuda.segment_copy_kernels`; a copy per run cost 3.7 ms a side on an
        H100, BENCHMARKS.md)."""
        copy = segment_copy_kernels().copy_runs
        for flat, starts, packed, first, length in self._row_runs(lo, hi):
            copy[(min(-(-length // 256), 1024), len(first)), 256](flat, starts, out, packed, length)

    def unpack_rows(self, lo: int, hi: int, rows) -> None:
        """The flat device buffer ``rows`` (as :meth:`pack_rows` fills it) into x rows ``[lo, hi)``."""
        copy = segment_copy_kernels().copy_runs
        for flat, starts, packed, first, length in self._row_runs(lo, hi):
            copy[(min(-(-length // 256), 1024), len(first)), 256](rows, packed, flat, starts, length)

    def set_state(self, arrays) -> None:
        arrays = list(arrays)
        self.set_fields(arrays[0], arrays[1])
        for dev, host in zip(self._device_state()[2:], arrays[2:], strict=True):
            if dev is self._d_j:
                padded = np.zeros(self._padded, np.float32)
                padded[self._interior] = host
                host = padded.ravel()
            dev.copy_to_device(np.ascontiguousarray(host, dtype=np.float32))

    def fields(self) -> tuple[np.ndarray, np.ndarray]:
        return tuple(np.ascontiguousarray(f.copy_to_host().reshape(self._padded)[self._interior])
                     for f in (self._e, self._h))

    def component_view(self, name: str) -> np.ndarray:
        """Host copy of one component's interior."""
        from diamondlab.maxwell.sources import COMPONENTS

        c = COMPONENTS.index(name)
        field = self._e if c < 3 else self._h
        n = field.size // 3
        one = field[(c % 3) * n : (c % 3 + 1) * n].copy_to_host().reshape(self._padded[1:])
        return np.ascontiguousarray(one[self._interior[1:]])

    def planes(self, index, strides):
        """Strided planes ``(xy, xz, yz)`` of the component :attr:`view` through ``index``, gathered on the
        device: only they cross the bus (the finite check after a sweep reads them)."""
        from diamondlab.maxwell.sources import COMPONENTS

        c = COMPONENTS.index(self.view)
        field = self._e if c < 3 else self._h
        (ix, iy, iz), (sx, sy, sz) = index, strides
        counts = [len(range(o % s, n, s)) for o, s, n in zip(index, strides, self.shape, strict=True)]
        out = [self._cuda.device_array(shape, np.float32) for shape in
               ((counts[0], counts[1]), (counts[0], counts[2]), (counts[1], counts[2]))]
        side = max(counts)
        blocks = (-(-side // 16), -(-side // 16))
        _, px, py, pz = self._padded
        base = (c % 3) * px * py * pz
        self.kernels.gather_planes[blocks, (16, 16)](field, base, py, pz, ix, iy, iz, sx, sy, sz, *out)
        return tuple(a.copy_to_host() for a in out)

    def compile(self) -> None:
        """Compile both kernels on a one-tile grid with this run's features (once per process and order)."""
        tile = DiamondTile(self.params.order, 1)
        probe = YeeCUDABackend(self.params, (2 * tile.radius, 2 * tile.radius, 1), 1, 1)
        probe.kernels = self.kernels  # this run's features
        if self._drude:
            probe._drude = True
            probe._d_j = self._cuda.to_device(np.zeros(int(np.prod(probe._padded)), np.float32))
        probe.plain, probe._features = self.plain, self._features
        # this run's stepwise kernels, each on all of the probe's columns (as a box or as a list)
        grid = probe._stepwise[0][2]
        every = np.indices(grid[::-1]).reshape(2, -1)[::-1].astype(np.int32)  # (x, y), x fastest
        sizes = plain_offsets(probe.shape, self.params.order)
        where = {"stepwise": (grid, 1, ()), "stepwise_yx": (grid, 1, ()),
                 "stepwise_box_yx": (grid[::-1], 1, (0, 0, 0)),
                 "stepwise_slabs": (grid[::-1], 1, (0, 0, 1, 1, 0)),
                 "stepwise_plain": (grid, 1, (*sizes, *_AT_0)),
                 "stepwise_plain_yx": (grid, 1, (*sizes, *_AT_0)),
                 "stepwise_plain_box_yx": (grid[::-1], 1, (*sizes, *_AT_0)),
                 "stepwise_listed": (every.shape[1], 1, (self._cuda.to_device(every),))}
        probe._stepwise = [(kernels, name, *where[name]) for kernels, name, *_ in self._stepwise]
        probe.tile_in_registers = self.tile_in_registers
        probe.registers_for_physics = self.registers_for_physics
        probe.specialize_shape = False  # a kernel for the probe's grid alone would be compiled for nothing
        probe.sweep(1)
        probe.step(1)
        if self.monitors is not None:
            from diamondlab.kernels.dft import dft_cuda_kernels

            k, to = dft_cuda_kernels(), self._cuda.to_device
            rec, z = to(np.zeros((1, 1), np.float32)), np.zeros((2, 1, 1))
            k.accumulate[1, 1](rec, 0, to(np.zeros(1, np.int64)), to(z), to(z), to(np.zeros((1, 1))),
                               to(np.zeros((1, 1))))
            k.take_columns[(1, 1), (1, 1)](rec, self._cuda.device_array((1, 1), np.float32))
        probe.synchronize()

    def _device_args(self, height: int, src_samples) -> tuple:
        """The physics arguments of a launch of ``height`` steps: the sources' samples on the device, a new
        array for the recorded points' rows.  A copy to the device from pageable memory (or an allocation)
        waits for the launch before it to finish, so each sweep would start only after the host had queued
        it, which cost the plain register-tile sweep 9-15 % on an H100 (BENCHMARKS.md, "a copy a sweep"):
        a scene without source points reuses one placeholder per height, and one with them copies its
        samples through a ring of pinned buffers, asynchronously, on the stream its launches run on
        (:class:`~diamondlab.engine.backends.cuda.SampleRing`); a scene without recorded points reuses a
        placeholder for their rows."""
        if src_samples is None and not self.ndipoles:
            src = self._placeholder(("src", height), (1, height))
        else:
            if self._samples is None:
                self._samples = SampleRing(self._cuda, max(self.ndipoles, 1), max(height, self.nt),
                                           getattr(self, "_stream", None), self.SAMPLE_RING)
            src = self._samples.upload(height, src_samples)
        if self.nrecorded:
            rec = self._cuda.device_array((height, self.nrecorded), np.float32)
        else:  # never written: no point records into it
            rec = self._placeholder(("rec", height), (height, 1))
        return (*self._d_pml, *self._d_psi, *self._d_points, src, rec, *self._wrap)

    def _placeholder(self, key, shape):
        """A zero float32 device array of ``shape``, made once per ``key`` (per scene: see set_physics)."""
        held = self._placeholders.get(key)
        if held is None:
            held = self._placeholders[key] = self._cuda.to_device(np.zeros(shape, np.float32))
        return held

    def step(self, nsteps: int, src_samples=None) -> None:
        args = self._device_args(nsteps, src_samples)
        launches = self._step_launches(args)
        for k in range(2 * nsteps):
            for launch in launches:
                launch(k % 2, k // 2)
        self._keep(args)

    def _step_launches(self, args: tuple) -> list:
        """The launches of a stepwise half step (:attr:`_stepwise`, then the points'), each prepared with this
        call's arguments (:class:`~diamondlab.kernels.cuda.PreparedLaunch`) and called with the half step and
        the step: a launch then costs the host about 17 us instead of the 65 of typing and marshalling its 36
        arguments, which a half step cut into groups of columns waited for (BENCHMARKS.md, "The Maxwell
        physics scene's stepwise half step, launch by launch").

        Preparing costs as much as a launch did, so a launch is kept from call to call while its kernel,
        grid and block are the same and every one of its arguments is the same object (the fields, tables
        and layers are made anew with a new scene).  A kernel without the points' code is given placeholders
        for the sources' samples and the records; a launch with the points' code keeps its other arguments
        and swaps in each call's samples and records (:meth:`~diamondlab.kernels.cuda.PreparedLaunch.swap`:
        100-270 us less host time a call of 4 steps at 128^3 on the H200's host)."""
        *_, src, rec, wy, wz = args
        fields = (self._e, self._h, self._d_j, self._drude, self._d_index, self._d_table)
        lean = (self._e, self._h, self._d_index, self._d_table, 0)
        pointless = (*args[:-4], self._placeholder(("src", 1), (1, 1)), self._placeholder(("rec", 1), (1, 1)),
                     wy, wz)
        wanted = []  # (kernels, name, arguments, grid, threads, varying scalars, swapped arrays)
        for kernels, name, grid, threads, where in self._stepwise:
            if name.startswith("stepwise_plain"):  # where: the grid's sizes (plain_offsets)
                wanted.append((kernels, name, (*lean, *where), grid, threads, (4,), ()))
            else:
                own = args if kernels is self.kernels and self._features["points"] else pointless
                values = (*fields, 0, 0, *where, *own)
                swapped = (len(values) - 4, len(values) - 3) if own is args else ()
                wanted.append((kernels, name, values, grid, threads, (6, 7), swapped))
        lists = self._point_lists
        if lists is not None:  # a thread a cell with points of the half step
            values = (self._e, self._h, 0, 0, *lists[0], src, rec, *self._padded[2:], wy, wz)
            wanted.append((self.kernels, "points_after", values, lists[1], 128, (2, 3), (9, 10)))
        launches = []
        for i, (kernels, name, values, grid, threads, varying, swapped) in enumerate(wanted):
            kept = self._prepared.get(i)
            if kept is None or kept[0] is not kernels or kept[1] != (name, grid, threads) or len(
                    kept[2]) != len(values) or any(a is not b for j, (a, b) in enumerate(
                        zip(kept[2], values, strict=True)) if j not in swapped):
                prepared = PreparedLaunch(kernels, name, values, grid, threads, varying=varying)
                kept = self._prepared[i] = (kernels, (name, grid, threads), values, prepared)
            elif any(kept[2][j] is not values[j] for j in swapped):  # new samples or records: their words
                kept[3].swap({j: values[j] for j in swapped})
                kept = self._prepared[i] = (*kept[:2], values, kept[3])
            launch = kept[3]
            launches.append(launch if len(varying) == 2 else (lambda half, step, p=launch: p(half)))
        return launches

    def _stages(self, height: int) -> tuple:
        """Device copies of the schedule's torre tables, launch order and dependencies, and its progress
        flags, kept per height."""
        key = (height, self.band)
        cached = self._stage_lists.get(key)
        if cached is None:
            s = self.schedule(height)
            to = self._cuda.to_device
            cached = self._stage_lists[key] = (
                s.tile.radius, to(s.torre_x0), to(s.torre_yc), to(s.launch_order(self.band)),
                to(s.dependencies()), to(np.zeros(s.ntorres, np.int64)), s.ntorres)
        return cached

    def sweep(self, height: int, src_samples=None) -> None:
        """One launch: every torre a block, ``2 height`` tiers each, waits every :attr:`chunk` tiers."""
        ntorres = self._stages(height)[-1]
        flag0 = self._next_flags(height)
        args = self._device_args(height, src_samples)
        self._launch_sweep(height, (self._e, self._h, self._d_j), args, flag0, ntorres)
        self._tickets += ntorres
        self._keep(args)

    def _next_flags(self, height: int) -> int:
        """The first progress flag of the next sweep of ``height`` (its epoch's), the epoch counted."""
        from diamondlab.kernels.cuda_source import PIPELINE_FLAG_STRIDE

        epoch = self._epochs[height] = self._epochs.get(height, 0) + 1
        return epoch * PIPELINE_FLAG_STRIDE

    def _launch_sweep(self, height: int, fields: tuple, args: tuple, flag0: int, blocks: int,
                      stream=0) -> None:
        """Queue ``blocks`` blocks of a sweep of ``height`` steps on ``fields`` ``(E, H, J)`` (flat device
        arrays, or a calculation window's views of its rings): they take the next ``blocks`` tickets of the
        sweep that began at :attr:`_tickets`.  The register-tile sweep where it runs the scene, else the one
        that reads through the caches."""
        radius, x0, yc, order, deps, done, _ = self._stages(height)
        e, h, j = fields
        if self.tile_in_registers and (self.plain or (self.registers_for_physics and not self.periodic)):
            self._register_sweep(height, fields, x0, yc, order, deps, done, blocks, flag0, args, stream)
        else:
            self.kernels.diamondtorre[blocks, self.shape[2], stream](
                e, h, j, self._drude, self._d_index, self._d_table, radius, x0, yc, order, deps, done,
                self._counter, self._tickets, flag0, 2 * height, self.chunk, *args)

    @property
    def tiers_prefetched(self) -> int:
        """Tiers ahead the register-tile sweep prefetches: :attr:`prefetch`, or :attr:`PREFETCH`'s for the
        order."""
        return self.PREFETCH.get(self.params.order, 0) if self.prefetch is None else self.prefetch

    def _register_sweep(self, height: int, fields: tuple, x0, yc, order, deps, done, blocks: int, flag0: int,
                        args: tuple, stream=0):
        """The sweep with its tile in registers: the same tickets, waits and flags as the cache-read one, the
        run's features compiled in (returns the compiled kernel, None under the simulator)."""
        from diamondlab.kernels.cuda import launch_generated, simulator_enabled

        threads, sim = self.shape[2], simulator_enabled()
        cap = None if sim else _device_register_cap(self.params.order, self.size, threads, not self.plain)
        # compiled for the grid only where the fields are the whole padded grid (not a window's rings)
        whole = all(int(f.size) == int(np.prod(self._padded)) for f in fields[:2])
        shape = self.shape if self.specialize_shape and whole else None
        module = yee_register_sweep(self.params.order, self.size, sim, cap, **self._features,
                                    prefetch=self.tiers_prefetched, shape=shape)
        shared = yee_shared_bytes(self.params.order, self.size, threads)
        nx, ny, nz = self.shape
        i64 = np.int64
        values = (*fields, self._d_index, self._d_table, x0, yc, order, deps, done,
                  self._counter, i64(self._tickets), i64(flag0), i64(2 * height), i64(self.chunk), i64(nx),
                  i64(ny), i64(nz), *args[:-2])  # the CPML's, the points', src and rec (no periodic flags)
        return launch_generated(module, "yee_sweep", values + self._calm_tables(height), blocks, threads,
                                shared, stream)

    def _calm_tables(self, height: int) -> tuple:
        """The device tables ``(calm, calm_z)`` of the register-tile sweep of ``height``
        (:func:`~diamondlab.kernels.yee_cuda_source.calm_torres`; none calm in a plain scene, which has no
        such path, or with :attr:`calm_torres` off), made once per height and physics."""
        from diamondlab.kernels.yee_cuda_source import CALM_POINT_PLANES, calm_torres

        tables = self._calm.get(height)
        if tables is None:
            s = self.schedule(height)
            calm = np.zeros(s.ntorres, bool)
            point_z = np.full((s.ntorres, CALM_POINT_PLANES), -1, np.int32)
            if not self.plain and self.calm_torres:  # the host tables asked again (a byte a cell, not kept)
                prof = self.pml.axis_profiles(self.shape, self.params.dt, self.periodic)
                cells = _point_cells(self._points, self.shape, self.halo).reshape(self.shape)
                calm, point_z = calm_torres(self.params.order, self.size, 2 * height, s.torre_x0,
                                            s.torre_yc, prof[0].layer >= 0, prof[1].layer >= 0,
                                            self._drude_columns()[0], cells)
            tables = self._calm[height] = (self._cuda.to_device(calm.astype(np.uint8)),
                                           self._cuda.to_device(point_z))
        return tables

    def _drude_columns(self) -> tuple[np.ndarray, np.ndarray]:
        """``(nx, ny)`` booleans, the columns with a cell of a Drude medium (any component), and ``(nz,)``
        booleans, the z planes with one."""
        drude = self.table.coefficients.reshape(-1, 8)[:, 3] != 0
        columns, planes = np.zeros(self.shape[:2], bool), np.zeros(self.shape[2], bool)
        if drude.any():
            for c in range(3):
                cells = drude[self.table.index[c]]
                columns |= cells.any(axis=2)
                planes |= cells.any(axis=(0, 1))
        return columns, planes

    def _keep(self, args) -> None:
        rec = args[-3]  # before the two periodic flags
        if self.monitors is not None:
            self._transform(rec, rec.shape[0])
            if self.nprobes:  # the probes' slots alone, gathered on the device
                from diamondlab.kernels.dft import dft_cuda_kernels

                out = self._cuda.device_array((rec.shape[0], self.nprobes), np.float32)
                grid = (-(-rec.shape[0] // 16), -(-self.nprobes // 16))
                dft_cuda_kernels().take_columns[grid, (16, 16)](rec, out)
                rec = out
        self._clock += rec.shape[0]
        if self.nprobes:
            self._taken.append(rec)

    def take_traces(self) -> np.ndarray:
        rows, self._taken = self._taken, []
        rows = [r.copy_to_host()[:, : self.nprobes] for r in rows]
        return np.concatenate(rows) if rows else np.zeros((0, self.nprobes), dtype=np.float32)

    def synchronize(self) -> None:
        self._cuda.synchronize()
