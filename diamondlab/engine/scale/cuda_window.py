"""The calculation window on the GPU: DiamondTorre sweeps streamed through a ring of x rows (paper 002).

Contract
--------
:class:`StreamedCUDABackend` is the CUDA backend of a grid longer in x than
the device holds.  Both fields (and a velocity model's ``K``) live in pinned
host memory; the device holds a ring of ``window`` x rows of each.  A sweep
runs as groups of consecutive stages (:func:`~diamondlab.engine.scale.window.stream_plan`):
before a group runs, the x rows it touches first are copied in (at their old
level: no torre has touched them yet); after it, the rows no later group
touches are copied out (final).  Three streams overlap the work: the next
group's rows load on one copy engine and the last group's rows store on the
other while the current group computes; an event per copy orders only what
shares rows (the device rows a copy reuses, the host rows a later sweep
reloads), so the next sweep's first rows load while this one's last rows
store.  The kernels are the in-memory ones, unchanged: each group gets the
ring as a flat array whose element of grid cell ``(x, y, z)`` lies at device
row ``x - base`` (a view of the ring that starts ``base`` rows before it;
the kernels touch only the group's rows, which the plan put in the ring).
Under Numba's CUDA simulator, which has no device pointers, that view is a
whole-grid array with NaN outside the ring, and stored rows are poisoned
with NaN in the ring: a plan that let a kernel read a row the ring does not
hold would give NaN, not the in-memory result.

Each sweep moves every cell across the bus exactly once each way (8 bytes
in, 8 out; 12 in with a velocity model), so with ``B`` bytes/s per
direction a sweep of ``Nt`` steps is capped near ``B * Nt / 8`` cell
updates/s (:meth:`StreamedCUDABackend.bytes_per_sweep`); the result is the
in-memory result bit for bit.
"""

from __future__ import annotations

import numpy as np

from diamondlab.engine.backends import Backend, planes_of
from diamondlab.engine.backends.cuda import CUDABackend
from diamondlab.engine.scale.window import StreamGroup, host_fields, rows_overlap, stream_plan
from diamondlab.geometry import DiamondTile, DiamondTorre, StageSchedule

__all__ = ["StreamedCUDABackend", "streamed_sweep"]

#: Groups a sweep is cut into at most (fewer where the window cannot hold such groups): each adds
#: a launch and its tail, and the first load and the last store of a sweep overlap less.
GROUPS_PER_SWEEP = 32


def streamed_sweep(schedule, window: int) -> tuple[StreamGroup, ...]:
    """The stream plan of ``schedule`` through ``window`` rows: the largest groups (up to
    1/:data:`GROUPS_PER_SWEEP` of the stages) that the window holds.

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
                     f"Nt={schedule.nt}): use window >= {hi}")


class StreamedCUDABackend(CUDABackend):
    """DiamondTorre sweeps of a grid held in pinned host memory, streamed through ``window`` device rows.

    Built by :meth:`~diamondlab.engine.run.plan.RunPlan.make_backend` for a CUDA run with a window (see
    the module contract); the sweep options are the in-memory backend's, stage by stage (band 0).
    """

    @classmethod
    def check_window(cls, params, shape, size: int, nt: int, window: int, options: dict) -> None:
        """Raise ``ValueError`` unless sweeps of ``nt`` stream through ``window`` x rows (``options`` as
        checked by :meth:`~diamondlab.engine.backends.Backend.check`)."""
        if options.get("band"):
            raise ValueError("a calculation window streams the sweep stage by stage: backend option band "
                             f"must be 0 with window; got band={options['band']}")
        tile = DiamondTile(params.order, size)
        streamed_sweep(StageSchedule(DiamondTorre(tile, nt), shape[0], shape[1]), window)

    @classmethod
    def from_plan(cls, plan) -> StreamedCUDABackend:
        self = cls.__new__(cls)
        self.window = int(plan.window)
        self._window_dir = plan.window_dir
        self._build(plan.params, plan.shape, plan.size, plan.nt, dict(plan.options))
        return self

    def _build(self, params, shape, size: int, nt: int, options: dict) -> None:
        super()._build(params, shape, size, nt, options)
        cuda = self._cuda
        self.name = f"cuda, window of {self.window} x rows"
        self._stream = cuda.stream()  # the kernels and the moves
        self._copy_in, self._copy_out = cuda.stream(), cuda.stream()
        self._loaded = cuda.event()
        self._computed = cuda.event()
        self._plans: dict[int, tuple[StreamGroup, ...]] = {}
        self._views: dict[tuple[int, int], object] = {}
        self._host_kappa = None
        self._stores: list[tuple] = []  # (sweep, host rows, device rows, event) of the copies out
        self._sweeps = 0
        # fields in files: copies go through two pinned buffers each way, a copy out's rows reaching the
        # files once the buffer is needed again (or at synchronize)
        self._bounces: dict[str, list] = {"in": [], "out": []}
        self._next_bounce = {"in": 0, "out": 0}
        self._written: dict[int, tuple] = {}  # out buffer -> (rows, host arrays) still to write
        if self._simulated:
            for ring in (self._prev, self._curr):
                ring[:] = np.nan

    @property
    def _simulated(self) -> bool:
        return self._kernels_api.simulator_enabled()

    def _allocate_fields(self) -> tuple:
        """Pinned host fields of the whole grid; a ring of ``window`` rows (and a margin) of each on the
        GPU."""
        nx, ny, nz = self.shape
        self._row = ny * nz
        self._pad = self.params.order // 2 * (self.size + 1)  # a stray read past a group's rows stays inside
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
        ncells = (self.window + 2 * self._pad) * self._row
        return self._zeros(ncells), self._zeros(ncells)

    def _device_kappa(self, kappa: np.ndarray):
        """A velocity model's ``K``: the whole grid pinned on the host (as given, with fields in files),
        a ring of rows on the GPU."""
        if self._window_dir is not None:
            self._host_kappa = np.ascontiguousarray(kappa, dtype=np.float32)
        else:
            self._host_kappa = self._cuda.pinned_array(self.shape, dtype=np.float32)
            self._host_kappa[...] = kappa
        ring = self._zeros(len(self._curr))
        if self._simulated:
            ring[:] = np.nan
        return ring

    def set_physics(self, medium=None, sources=(), receivers=()) -> None:
        self._host_kappa = None  # a model's K comes back through _device_kappa
        self._views.clear()  # views of a K ring about to be replaced
        super().set_physics(medium, sources, receivers)

    # ------------------------------------------------------------------ fields (on the host)
    @property
    def _bytes_per_cell(self) -> int:
        """Both levels in and out once a sweep, ``K`` in once with a model."""
        return 16 + 4 * (self._host_kappa is not None)

    def bytes_per_sweep(self) -> int:
        """Bytes a sweep moves across the bus."""
        return self._bytes_per_cell * int(np.prod(self.shape, dtype=np.int64))

    def traffic(self) -> dict:
        """What a sweep moves across the bus (:func:`~diamondlab.engine.scale.window.describe_traffic`)."""
        return {"groups": len(self._stream_plan(self.nt, self._schedule(self.nt)[2])),
                "bytes_per_cell_sweep": float(self._bytes_per_cell),
                "overlapped": True}

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

    def step(self, nsteps: int, src_samples=None) -> None:
        raise NotImplementedError("the streamed window runs DiamondTorre sweeps; a stepwise run with a "
                                  "window goes window by window (engine.window.WindowBackend)")

    # ------------------------------------------------------------------ the stream
    def _rings(self) -> tuple:
        """``(device ring, host array)`` of every array the groups stream (K is loaded, never stored)."""
        pairs = [(self._prev, self._host_prev), (self._curr, self._host_curr)]
        if self._host_kappa is not None:
            pairs.append((self._medium["K"], self._host_kappa))
        return tuple(pairs)

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
            n, bounce = (b - a) * self._row, None
            if self._window_dir is not None:
                self._write_back(group.load)  # what the files still owe these rows
                bounce, event = self._bounce("in", b - a)
            for i, (ring, host) in enumerate(self._rings()):
                source = host[a:b].reshape(-1)
                if bounce is not None:
                    bounce[i, :n] = source
                    source = bounce[i, :n]
                ring[p0 * self._row:p1 * self._row].copy_to_device(source, stream=self._copy_in)
            if bounce is not None:
                event.record(self._copy_in)
        self._loaded.record(self._copy_in)

    def _move(self, group: StreamGroup) -> None:
        lo, hi, old = group.move
        s0, s1 = self._device_rows((lo, hi), old)
        d0, d1 = self._device_rows((lo, hi), group.base)
        self._wait_stores(self._stream, (0, 0), (d0, d1))
        for ring, _ in self._rings():
            ring[d0 * self._row:d1 * self._row].copy_to_device(ring[s0 * self._row:s1 * self._row],
                                                               stream=self._stream)

    def _store(self, group: StreamGroup) -> None:
        c, d = group.store
        if c == d:
            return
        p0, p1 = self._device_rows(group.store, group.base)
        self._computed.wait(self._copy_out)
        n, bounce = (d - c) * self._row, None
        if self._window_dir is not None:
            bounce, buffer_event = self._bounce("out", d - c)
        for i, (ring, host) in enumerate(self._rings()[:2]):
            target = host[c:d].reshape(-1) if bounce is None else bounce[i, :n]
            ring[p0 * self._row:p1 * self._row].copy_to_host(target, stream=self._copy_out)
            if self._simulated:  # what left the ring is gone: a plan that reads it again gives NaN
                ring[p0 * self._row:p1 * self._row] = np.nan
        if bounce is not None:
            buffer_event.record(self._copy_out)
            self._written[self._next_bounce["out"] ^ 1] = (group.store, (self._host_prev, self._host_curr))
        event = self._cuda.event()
        event.record(self._copy_out)
        self._stores.append((self._sweeps, group.store, (p0, p1), event))

    def _bounce(self, kind: str, rows: int) -> tuple:
        """The next of the two pinned buffers of ``kind`` ("in", "out") for ``rows`` rows of each array, free
        (its last copy done and, for "out", its rows written to the files), and its event."""
        pairs = self._bounces[kind]
        if not pairs or pairs[0][0].shape[1] < rows * self._row:
            self.synchronize()  # the buffers in use go: every copy done, every row written
            size = max(rows, *(g.load[1] - g.load[0] for p in self._plans.values() for g in p),
                       *(g.store[1] - g.store[0] for p in self._plans.values() for g in p))
            pairs[:] = [(self._cuda.pinned_array((3, size * self._row), dtype=np.float32), self._cuda.event())
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
        for k, ((c, d), hosts) in list(self._written.items()):
            if (index is None or k == index) and (rows is None or rows_overlap(rows, (c, d))):
                buffer, event = self._bounces["out"][k]
                event.synchronize()
                for i, host in enumerate(hosts):
                    host[c:d].reshape(-1)[:] = buffer[i, :(d - c) * self._row]
                del self._written[k]

    def synchronize(self) -> None:
        super().synchronize()
        self._write_back()

    def _view(self, ring, base: int):
        """``ring`` as a whole-grid flat array: grid row ``x`` at ring row ``x - base + pad``."""
        shift = (self._pad - base) * self._row
        if self._simulated:
            whole = np.full(int(np.prod(self.shape, dtype=np.int64)), np.nan, dtype=np.float32)
            lo, hi = max(0, -shift), min(len(whole), len(ring) - shift)
            whole[lo:hi] = ring.copy_to_host()[lo + shift:hi + shift]
            return self._cuda.to_device(whole)
        key = (id(ring), base)
        if key not in self._views:
            from numba.cuda.cudadrv.devicearray import DeviceNDArray

            n = int(np.prod(self.shape, dtype=np.int64))
            view = DeviceNDArray((n,), (4,), np.float32, gpu_data=ring.gpu_data.view(4 * shift))
            self._views[key] = (view, ring)  # the ring is kept alive with its view
        return self._views[key][0]

    def _unview(self, ring, view, base: int) -> None:
        """Under the simulator: what the kernels wrote into the whole-grid stand-in, back into the ring."""
        if self._simulated:
            shift = (self._pad - base) * self._row
            whole = view.copy_to_host()
            lo, hi = max(0, -shift), min(len(whole), len(ring) - shift)
            ring[lo + shift:hi + shift] = whole[lo:hi]

    def _stream_plan(self, height: int, schedule) -> tuple[StreamGroup, ...]:
        plan = self._plans.get(height)
        if plan is None:
            plan = self._plans[height] = streamed_sweep(schedule, self.window)
        return plan

    def sweep(self, height: int, src_samples: np.ndarray | None = None) -> None:
        """Queue one DiamondTorre sweep, streamed group by group (see the module contract)."""
        if not 1 <= height <= self.nt:
            raise ValueError(f"sweep height must be between 1 and nt={self.nt}; got {height}")
        ntorres, arrays, schedule, _ = self._schedule(height)
        plan = self._stream_plan(height, schedule)
        points = () if self._points is None else self._point_buffers(height, src_samples)
        values = self._sweep_values(height, points)
        model = self._host_kappa is not None
        coeffs = self._medium_args()[0]
        self._sweeps += 1
        self._epoch += 1
        # copies out of sweeps before the last are ordered before this one's loads (every row was reloaded)
        self._stores = [s for s in self._stores if s[0] >= self._sweeps - 1]
        self._load(plan[0])
        for i, group in enumerate(plan):
            if group.move is not None:
                self._move(group)
            self._loaded.wait(self._stream)
            f = self._view(self._curr, group.base)
            g = self._view(self._prev, group.base)
            k = self._view(self._medium["K"], group.base) if model else None
            t0, t1 = group.tickets
            starts = schedule.stage_start  # per-stage launches: the group's stages one by one
            stages = np.diff(starts[(starts >= t0) & (starts <= t1)])
            for blocks in [t1 - t0] if self.launch == "sweep" else stages:
                self.last_sweep_kernel = self._kernels_api.launch_sweep(
                    self.kernels, self.params.order, self.size, f, g, self.shape, height, arrays,
                    (self._done, self._counter), self._tickets, self._epoch, coeffs, stream=self._stream,
                    values={**values, "K": k} if model else values, blocks=int(blocks),
                ) or self.last_sweep_kernel
            self._unview(self._curr, f, group.base)
            self._unview(self._prev, g, group.base)
            self._computed.record(self._stream)
            if i + 1 < len(plan):
                self._load(plan[i + 1])
            self._store(group)
        self._tickets += ntorres
        if height % 2:
            self._prev, self._curr = self._curr, self._prev
            self._host_prev, self._host_curr = self._host_curr, self._host_prev

