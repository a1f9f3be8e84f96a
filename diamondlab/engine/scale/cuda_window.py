"""The calculation window on the GPU: DiamondTorre sweeps streamed through a ring of x rows (paper 002).

Contract
--------
:class:`RingStream` streams any equation's DiamondTorre sweep through a
ring of ``window`` x rows on the GPU: the arrays the equation streams
(:class:`RingArray`: each a whole array in pinned host memory, or in files,
and a ring of rows on the device; the acoustic equation's two levels and a
velocity model's ``K``, Maxwell's ``E``, ``H`` and Drude current) are
moved by one code.  A sweep runs as groups of consecutive stages
(:func:`~diamondlab.engine.scale.window.stream_plan`): before a group runs,
the x rows it touches first are copied in (at their old level: no torre has
touched them yet); after it, the rows no later group touches are copied out
(final).  Three streams overlap the work: the next group's rows load on one
copy engine and the last group's rows store on the other while the current
group computes; an event per copy orders only what shares rows (the device
rows a copy reuses, the host rows a later sweep reloads), so the next
sweep's first rows load while this one's last rows store.  The kernels are
the in-memory ones, unchanged: each group gets each ring as a flat array
whose element of grid row ``x`` lies at ring row ``x - base`` (a view that
starts ``base`` rows, and the array's padding rows, before the ring; an
array of several components, as ``E``, lies component after component, so
the view's length is the components times the ring's rows and the kernels'
``E.size // 3`` is a ring component's size).  Under Numba's CUDA simulator,
which has no device pointers, a view is a whole-array stand-in with NaN
outside the ring, and stored rows are poisoned with NaN in the ring: a plan
that let a kernel read a row the ring does not hold gives NaN, not the
in-memory result.

:class:`StreamedCUDABackend` (the acoustic equation) and
:class:`~diamondlab.engine.scale.yee_window.StreamedYeeCUDABackend`
(Maxwell's) say only which arrays stream and how a group's kernels are
launched.  Each sweep moves every streamed cell across the bus exactly once
each way (acoustic: 8 bytes in, 8 out, 12 in with a velocity model; Maxwell:
24 in, 24 out, 36 each way with a Drude current), so with ``B`` bytes/s per
direction a sweep of ``Nt`` steps is capped near ``B * Nt / (bytes out a
cell)`` cell updates/s (:meth:`RingStream.bytes_per_sweep`); the result is
the in-memory result bit for bit.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from diamondlab.engine.backends import Backend, planes_of
from diamondlab.engine.backends.cuda import CUDABackend
from diamondlab.engine.scale.window import StreamGroup, host_fields, rows_overlap, stream_plan
from diamondlab.geometry import DiamondTile, DiamondTorre, StageSchedule

__all__ = ["RingArray", "RingStream", "StreamedCUDABackend", "streamed_sweep"]

#: Groups a sweep is cut into at most (fewer where the window cannot hold such groups): each adds
#: a launch and its tail, and the first load and the last store of a sweep overlap less.
GROUPS_PER_SWEEP = 32


def streamed_sweep(schedule, window: int, tiers: int = 1) -> tuple[StreamGroup, ...]:
    """The stream plan of ``schedule`` through ``window`` rows: the largest groups (up to
    1/:data:`GROUPS_PER_SWEEP` of the stages) that the window holds (``tiers``: the schedule's tiers a step,
    for the error's Nt).

    Raises ``ValueError`` naming the smallest window that works when even one stage a group does not fit.

    >>> from diamondlab.geometry import stage_schedule
    >>> s = stage_schedule(order=2, size=1, nt=4, nx=40, ny=8)
    >>> plan = streamed_sweep(s, 20)
    >>> len(plan), plan[0].tickets  # one stage a group in so small a window
    (44, (0, 4))
    >>> streamed_sweep(s, 12)
    Traceback (most recent call last):
    ...
    ValueError: window=12 x rows cannot stream this sweep (NO=2, DTS=1, Nt=4): use window >= 14
    """
    radius = schedule.tile.radius
    reach = schedule.torre_rows()
    span = int((reach[:, 1] - reach[:, 0]).max())
    most = max(1, min((window - 2 * span) // (4 * radius), -(-schedule.nstages // GROUPS_PER_SWEEP)))
    for stages in range(most, 0, -1):
        try:
            return stream_plan(schedule, window, stages)
        except ValueError:
            continue
    lo, hi = window, schedule.nx  # the smallest window that streams one stage a group: bisect
    while hi - lo > 1:
        mid = (lo + hi) // 2
        try:
            stream_plan(schedule, mid, 1)
            hi = mid
        except ValueError:
            lo = mid
    tile = schedule.tile
    raise ValueError(f"window={window} x rows cannot stream this sweep (NO={tile.order}, DTS={tile.size}, "
                     f"Nt={schedule.nt // tiers}): use window >= {hi}")


class RingArray(NamedTuple):
    """One array a sweep streams (:class:`RingStream`).

    ``ring``: flat on the device, ``components`` blocks of the ring's rows; ``host``: the whole array as
    ``(components, host rows, floats a row)`` (a view of pinned memory or of a file); ``offset``: host rows
    before grid row 0 (Maxwell's padding); ``stored``: copied out after the sweep (a velocity model's ``K``
    is only read); ``row_shape``: where the kernels take the array as ``(components, x, *row_shape)`` (the
    CPML's ``psi``), else None (flat).

    >>> a = RingArray(None, np.zeros((3, 12, 20), np.float32), 2)
    >>> a.components, a.row, a.host_rows(1, 4, 6).shape
    (3, 20, (40,))
    """

    ring: object
    host: np.ndarray
    offset: int = 0
    stored: bool = True
    row_shape: tuple | None = None

    @property
    def components(self) -> int:
        return self.host.shape[0]

    @property
    def row(self) -> int:
        return self.host.shape[2]

    def host_rows(self, c: int, lo: int, hi: int) -> np.ndarray:
        """Component ``c`` of grid rows ``[lo, hi)`` on the host, flat (a view)."""
        return self.host[c, lo + self.offset:hi + self.offset].reshape(-1)

    def ring_rows(self, c: int, lo: int, hi: int):
        """Component ``c`` of ring rows ``[lo, hi)`` on the device (a view)."""
        at = c * (len(self.ring) // self.components)
        return self.ring[at + lo * self.row:at + hi * self.row]


class RingStream:
    """A DiamondTorre sweep streamed through ``window`` device rows (see the module contract), for any
    equation: a CUDA backend mixes it in before its in-memory class, builds its rings with
    :meth:`_new_ring`, names them in :meth:`_rings` and queues each sweep through :meth:`_stream_sweep`.
    Its ``window`` and ``_window_dir`` come from the plan (:meth:`from_plan`)."""

    #: Nt of a streamed run where none is given (None: the in-memory default): a sweep of Nt steps moves the
    #: streamed arrays across the bus once each way, so the bus caps the rate near ``B Nt / (bytes a cell
    #: each way)``; an equation whose in-memory Nt leaves that cap below its in-memory rate sets a taller one
    WINDOW_NT: int | None = None

    @classmethod
    def window_nt(cls, params, shape, size: int, nt: int, window: int, options: dict) -> int:
        """Nt of a streamed run not given one: :attr:`WINDOW_NT`, halved while its sweep does not stream
        through ``window`` rows, down to ``nt`` (the in-memory default)."""
        height = cls.WINDOW_NT or nt
        while height > nt:
            try:
                cls.check_window(params, shape, size, height, window, options)
                return height
            except ValueError:
                height //= 2
        return nt

    @classmethod
    def streams(cls, physics) -> bool:
        """Whether this class streams a run of ``physics`` (else the plan runs the window by
        :class:`~diamondlab.engine.scale.window.WindowBackend`): every run, unless an equation says."""
        return True

    @classmethod
    def check_window(cls, params, shape, size: int, nt: int, window: int, options: dict) -> None:
        """Raise ``ValueError`` unless sweeps of ``nt`` steps stream through ``window`` x rows (``options``
        as checked by :meth:`~diamondlab.engine.backends.Backend.check`)."""
        if options.get("band"):
            raise ValueError("a calculation window streams the sweep stage by stage: backend option band "
                             f"must be 0 with window; got band={options['band']}")
        tile, tiers = DiamondTile(params.order, size), cls.PARTS.tiers
        streamed_sweep(StageSchedule(DiamondTorre(tile, tiers * nt), shape[0], shape[1]), window, tiers)

    @classmethod
    def from_plan(cls, plan):
        self = cls.__new__(cls)
        self.window = int(plan.window)
        self._window_dir = plan.window_dir
        self._build(plan.params, plan.shape, plan.size, plan.nt, dict(plan.options))
        return self

    @property
    def _simulated(self) -> bool:
        from diamondlab.kernels.cuda import simulator_enabled

        return simulator_enabled()

    @property
    def _pad(self) -> int:
        """Ring rows kept beyond each end: a stray read past a group's rows stays inside the ring."""
        return self.params.order // 2 * (self.size + 1)

    def _new_ring(self, components: int, row: int):
        """A ring of ``window`` rows (and the margins) of ``row`` floats, ``components`` blocks; NaN under the
        simulator (a row read before it was loaded gives NaN), else zero."""
        n = components * (self.window + 2 * self._pad) * row
        if self._simulated:
            return self._cuda.to_device(np.full(n, np.nan, dtype=np.float32))
        from numba.cuda.cudadrv.driver import device_memset

        ring = self._cuda.device_array(n, dtype=np.float32)
        device_memset(ring, 0, ring.nbytes)
        return ring

    def _start_stream(self) -> None:
        """The streams, events, plans and bounce buffers of the stream (after the rings exist)."""
        cuda = self._cuda
        self.name = f"{type(self).name}, streamed through a window of {self.window} x rows"
        self._stream = cuda.stream()  # the kernels and the moves
        self._copy_in, self._copy_out = cuda.stream(), cuda.stream()
        self._loaded = cuda.event()
        self._computed = cuda.event()
        self._plans: dict[int, tuple[StreamGroup, ...]] = {}
        self._views: dict[tuple[int, int], object] = {}
        self._stores: list[tuple] = []  # (sweep, host rows, device rows, event) of the copies out
        self._sweeps = 0
        # state in files: copies go through two pinned buffers each way, a copy out's rows reaching the
        # files once the buffer is needed again (or at synchronize)
        self._bounces: dict[str, list] = {"in": [], "out": []}
        self._next_bounce = {"in": 0, "out": 0}
        self._written: dict[int, tuple] = {}  # out buffer -> (rows, arrays) still to write

    def _rings(self) -> tuple[RingArray, ...]:
        """Every array the groups stream."""
        raise NotImplementedError

    def step(self, nsteps: int, src_samples=None) -> None:
        raise NotImplementedError("the streamed window runs DiamondTorre sweeps; a stepwise run with a "
                                  "window goes window by window (engine.scale.window.WindowBackend)")

    # ------------------------------------------------------------------ what crosses the bus
    def bytes_per_sweep(self) -> int:
        """Bytes a sweep moves across the bus: every ring's rows in, the stored ones' out (with their
        padding: Maxwell's rows hold the y and z halo)."""
        return sum(4 * a.components * a.row * (1 + a.stored) for a in self._rings()) * self.shape[0]

    def traffic(self) -> dict:
        """What a sweep moves across the bus (:func:`~diamondlab.engine.scale.window.describe_traffic`)."""
        schedule = StageSchedule(DiamondTorre(DiamondTile(self.params.order, self.size),
                                              self.PARTS.tiers * self.nt), *self.shape[:2])
        return {"groups": len(self._stream_plan(self.nt, schedule)),
                "bytes_per_cell_sweep": self.bytes_per_sweep() / int(np.prod(self.shape, dtype=np.int64)),
                "overlapped": True}

    # ------------------------------------------------------------------ the stream
    def _device_rows(self, rows: tuple[int, int], base: int) -> tuple[int, int]:
        return rows[0] - base + self._pad, rows[1] - base + self._pad

    def _wait_stores(self, stream, rows: tuple[int, int], device_rows: tuple[int, int]) -> None:
        """Make ``stream`` wait for the last copy out that shares host ``rows`` or ``device_rows``."""
        for _, host, device, event in reversed(self._stores):  # copies out run in order: the last suffices
            if rows_overlap(host, rows) or rows_overlap(device, device_rows):
                event.wait(self._stream if stream is None else stream)
                return

    def _load(self, group: StreamGroup) -> None:
        a, b = group.load
        p0, p1 = self._device_rows(group.load, group.base)
        if a < b:
            self._wait_stores(self._copy_in, group.load, (p0, p1))
            bounce = None
            if self._window_dir is not None:
                self._write_back(group.load)  # what the files still owe these rows
                bounce, event = self._bounce("in", b - a)
            i = 0
            for array in self._rings():
                n = (b - a) * array.row
                for c in range(array.components):
                    source = array.host_rows(c, a, b)
                    if bounce is not None:
                        bounce[i, :n] = source
                        source = bounce[i, :n]
                    array.ring_rows(c, p0, p1).copy_to_device(source, stream=self._copy_in)
                    i += 1
            if bounce is not None:
                event.record(self._copy_in)
        self._loaded.record(self._copy_in)

    def _move(self, group: StreamGroup) -> None:
        lo, hi, old = group.move
        s0, s1 = self._device_rows((lo, hi), old)
        d0, d1 = self._device_rows((lo, hi), group.base)
        self._wait_stores(self._stream, (0, 0), (d0, d1))
        for array in self._rings():
            for c in range(array.components):
                array.ring_rows(c, d0, d1).copy_to_device(array.ring_rows(c, s0, s1), stream=self._stream)

    def _store(self, group: StreamGroup) -> None:
        c0, c1 = group.store
        if c0 == c1:
            return
        p0, p1 = self._device_rows(group.store, group.base)
        self._computed.wait(self._copy_out)
        bounce = None
        if self._window_dir is not None:
            bounce, buffer_event = self._bounce("out", c1 - c0)
        stored = [a for a in self._rings() if a.stored]
        i = 0
        for array in stored:
            n = (c1 - c0) * array.row
            for c in range(array.components):
                target = array.host_rows(c, c0, c1) if bounce is None else bounce[i, :n]
                rows = array.ring_rows(c, p0, p1)
                rows.copy_to_host(target, stream=self._copy_out)
                if self._simulated:  # what left the ring is gone: a plan that reads it again gives NaN
                    rows[:] = np.nan
                i += 1
        if bounce is not None:
            buffer_event.record(self._copy_out)
            self._written[self._next_bounce["out"] ^ 1] = (group.store, stored)
        event = self._cuda.event()
        event.record(self._copy_out)
        self._stores.append((self._sweeps, group.store, (p0, p1), event))

    def _bounce(self, kind: str, rows: int) -> tuple:
        """The next of the two pinned buffers of ``kind`` ("in", "out") for ``rows`` rows of each array's
        components, free (its last copy done and, for "out", its rows written to the files), and its event."""
        pairs = self._bounces[kind]
        arrays = self._rings()
        blocks, row = sum(a.components for a in arrays), max(a.row for a in arrays)
        if not pairs or pairs[0][0].shape[1] < rows * row or pairs[0][0].shape[0] < blocks:
            self.synchronize()  # the buffers in use go: every copy done, every row written
            size = max(rows, *(g.load[1] - g.load[0] for p in self._plans.values() for g in p),
                       *(g.store[1] - g.store[0] for p in self._plans.values() for g in p))
            pairs[:] = [(self._cuda.pinned_array((blocks, size * row), dtype=np.float32), self._cuda.event())
                        for _ in range(2)]
        k = self._next_bounce[kind]
        self._next_bounce[kind] ^= 1
        buffer, event = pairs[k]
        event.synchronize()
        if kind == "out" and k in self._written:
            self._write_back(index=k)
        return buffer, event

    def _write_back(self, rows: tuple[int, int] | None = None, index: int | None = None) -> None:
        """Copy out buffers' rows into the files: buffer ``index``, those holding any of ``rows``, or all."""
        for k, ((c0, c1), arrays) in list(self._written.items()):
            if (index is None or k == index) and (rows is None or rows_overlap(rows, (c0, c1))):
                buffer, event = self._bounces["out"][k]
                event.synchronize()
                i = 0
                for array in arrays:
                    for c in range(array.components):
                        array.host_rows(c, c0, c1)[:] = buffer[i, :(c1 - c0) * array.row]
                        i += 1
                del self._written[k]

    def synchronize(self) -> None:
        super().synchronize()
        self._write_back()

    def _view(self, array: RingArray, base: int):
        """``array``'s ring as the whole array the kernels address: grid row ``x`` of component ``c`` at ring
        row ``x - base + pad`` of ring component ``c``."""
        ring, row = array.ring, array.row
        shift = (self._pad - base - array.offset) * row  # host row r lands at ring row r + shift / row
        rows = array.host.shape[1] if self._simulated else len(ring) // (array.components * row)
        shape = (len(ring),) if array.row_shape is None else (array.components, rows, *array.row_shape)
        if self._simulated:
            whole = np.full(array.host.shape, np.nan, dtype=np.float32).reshape(array.components, -1)
            held = ring.copy_to_host().reshape(array.components, -1)
            lo, hi = max(0, -shift), min(whole.shape[1], held.shape[1] - shift)
            whole[:, lo:hi] = held[:, lo + shift:hi + shift]
            return self._cuda.to_device(whole.reshape(-1 if array.row_shape is None else shape))
        key = (id(ring), base)
        if key not in self._views:
            from numba.cuda.cudadrv.devicearray import DeviceNDArray

            strides = tuple(4 * int(np.prod(shape[i + 1:], dtype=np.int64)) for i in range(len(shape)))
            view = DeviceNDArray(shape, strides, np.float32, gpu_data=ring.gpu_data.view(4 * shift))
            self._views[key] = (view, ring)  # the ring is kept alive with its view
        return self._views[key][0]

    def _unview(self, array: RingArray, view, base: int) -> None:
        """Under the simulator: what the kernels wrote into the whole-array stand-in, back into the ring."""
        if self._simulated:
            shift = (self._pad - base - array.offset) * array.row
            whole = view.copy_to_host().reshape(array.components, -1)
            held = array.ring.copy_to_host().reshape(array.components, -1)
            lo, hi = max(0, -shift), min(whole.shape[1], held.shape[1] - shift)
            held[:, lo + shift:hi + shift] = whole[:, lo:hi]
            array.ring.copy_to_device(held.reshape(-1))

    def _stream_plan(self, height: int, schedule) -> tuple[StreamGroup, ...]:
        plan = self._plans.get(height)
        if plan is None:
            plan = self._plans[height] = streamed_sweep(schedule, self.window)
        return plan

    def _stream_sweep(self, plan: tuple[StreamGroup, ...], launch) -> None:
        """Queue a sweep's groups: ``launch(group, view)`` queues a group's kernels on ``self._stream``, its
        arrays passed through ``view``, which turns a ring of :meth:`_rings` into its view for the group (and
        returns anything else as it is)."""
        self._sweeps += 1
        # copies out of sweeps before the last are ordered before this one's loads (every row was reloaded)
        self._stores = [s for s in self._stores if s[0] >= self._sweeps - 1]
        self._load(plan[0])
        for i, group in enumerate(plan):
            if group.move is not None:
                self._move(group)
            self._loaded.wait(self._stream)
            arrays = self._rings()
            views = {id(a.ring): self._view(a, group.base) for a in arrays}
            launch(group, lambda x, views=views: views.get(id(x), x))
            for a in arrays:
                self._unview(a, views[id(a.ring)], group.base)
            self._computed.record(self._stream)
            if i + 1 < len(plan):
                self._load(plan[i + 1])
            self._store(group)


class StreamedCUDABackend(RingStream, CUDABackend):
    """DiamondTorre sweeps of a grid held in pinned host memory, streamed through ``window`` device rows.

    Built by :meth:`~diamondlab.engine.run.plan.RunPlan.make_backend` for a CUDA run with a window (see
    the module contract); the sweep options are the in-memory backend's, stage by stage (band 0).  It
    streams both levels and a velocity model's ``K`` (loaded, never stored).
    """

    def _build(self, params, shape, size: int, nt: int, options: dict) -> None:
        super()._build(params, shape, size, nt, options)
        self._host_kappa = None
        self._start_stream()

    def _allocate_fields(self) -> tuple:
        """Pinned host fields of the whole grid; a ring of ``window`` rows (and a margin) of each on the
        GPU."""
        nx, ny, nz = self.shape
        need = 2 * 4 * nx * ny * nz
        if self._window_dir is not None:  # in files (zero): every copy goes through pinned buffers
            self._host_prev, self._host_curr = host_fields(self.shape, self._window_dir)
        else:
            try:
                self._host_prev = self._cuda.pinned_array(self.shape, dtype=np.float32)
                self._host_curr = self._cuda.pinned_array(self.shape, dtype=np.float32)
            except Exception as err:  # the driver's out-of-memory error, or MemoryError
                raise MemoryError(f"the calculation window keeps both fields in pinned host memory: it needs "
                                  f"{need / 2**30:.2f} GiB ({err})") from err
            self._host_prev[...] = 0.0
            self._host_curr[...] = 0.0
        return self._new_ring(1, ny * nz), self._new_ring(1, ny * nz)

    def _device_kappa(self, kappa: np.ndarray):
        """A velocity model's ``K``: the whole grid pinned on the host (as given, with fields in files),
        a ring of rows on the GPU."""
        if self._window_dir is not None:
            self._host_kappa = np.ascontiguousarray(kappa, dtype=np.float32)
        else:
            self._host_kappa = self._cuda.pinned_array(self.shape, dtype=np.float32)
            self._host_kappa[...] = kappa
        return self._new_ring(1, self.shape[1] * self.shape[2])

    def set_physics(self, medium=None, sources=(), receivers=()) -> None:
        self._host_kappa = None  # a model's K comes back through _device_kappa
        self._views.clear()  # views of a K ring about to be replaced
        super().set_physics(medium, sources, receivers)

    def _rings(self) -> tuple[RingArray, ...]:
        """Both levels (``u^{n-1}``, ``u^n``) and a velocity model's ``K`` (loaded, never stored)."""
        nx, ny, nz = self.shape

        def whole(host):
            return host.reshape(1, nx, ny * nz)

        arrays = (RingArray(self._prev, whole(self._host_prev)),
                  RingArray(self._curr, whole(self._host_curr)))
        if self._host_kappa is not None:
            arrays += (RingArray(self._medium["K"], whole(self._host_kappa), stored=False),)
        return arrays

    # ------------------------------------------------------------------ fields (on the host)
    def field_views(self):
        self.synchronize()
        return self._host_prev, self._host_curr

    def set_fields(self, prev, curr) -> None:
        self.synchronize()
        self._host_prev.reshape(-1)[:] = self._host(prev, "prev")
        self._host_curr.reshape(-1)[:] = self._host(curr, "curr")

    def fields(self):
        self.synchronize()
        return np.array(self._host_prev), np.array(self._host_curr)  # plain arrays, also of fields in files

    def current_view(self) -> np.ndarray:
        self.synchronize()
        view = self._host_curr.view()
        view.flags.writeable = False
        return view

    def planes(self, index, strides):
        return planes_of(self.current_view(), index, strides)

    # the fields are on the host: the contract's own row copies (not the device packing of CUDABackend)
    get_rows = Backend.get_rows
    set_rows = Backend.set_rows

    def sweep(self, height: int, src_samples: np.ndarray | None = None) -> None:
        """Queue one DiamondTorre sweep, streamed group by group (see the module contract)."""
        if not 1 <= height <= self.nt:
            raise ValueError(f"sweep height must be between 1 and nt={self.nt}; got {height}")
        ntorres, arrays, schedule, _ = self._schedule(height)
        plan = self._stream_plan(height, schedule)
        points = () if self._points is None else self._point_buffers(height, src_samples)
        values = self._sweep_values(height, points)
        coeffs = self._medium_args()[0]
        self._epoch += 1
        starts = schedule.stage_start

        def launch(group: StreamGroup, view) -> None:
            t0, t1 = group.tickets
            stages = np.diff(starts[(starts >= t0) & (starts <= t1)])  # per-stage launches: one by one
            for blocks in [t1 - t0] if self.launch == "sweep" else stages:
                self.last_sweep_kernel = self._kernels_api.launch_sweep(
                    self.kernels, self.params.order, self.size, view(self._curr), view(self._prev),
                    self.shape, height, arrays, (self._done, self._counter), self._tickets, self._epoch,
                    coeffs, stream=self._stream, values={k: view(v) for k, v in values.items()},
                    blocks=int(blocks),
                ) or self.last_sweep_kernel

        self._stream_sweep(plan, launch)
        self._tickets += ntorres
        if height % 2:
            self._prev, self._curr = self._curr, self._prev
            self._host_prev, self._host_curr = self._host_curr, self._host_prev
