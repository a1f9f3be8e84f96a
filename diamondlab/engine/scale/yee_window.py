"""Maxwell through the calculation window on the GPU: Yee sweeps streamed through a ring of x rows.

Contract
--------
:class:`StreamedYeeCUDABackend` is the CUDA Yee backend of a grid longer in
x than the device holds, streamed by the equation-free ring of
:class:`~diamondlab.engine.scale.cuda_window.RingStream` (loads, moves,
stores, events, bounce buffers for ``window_dir``, views): ``E`` and ``H``
(and a Drude medium's current ``J``, laid out as ``E``) live whole in pinned
host memory, padded as the kernels address them (``(3, nx + 2M, ny + 2M,
nz + 2M)``, ``M = order / 2``); the device holds a ring of ``window`` x rows
(and margins) of each, component after component, and the kernels are the
in-memory ones, unchanged (:meth:`~diamondlab.engine.backends.yee_cuda.YeeCUDABackend._launch_sweep`):
a view of a ring that starts ``base - pad + M`` rows before it and is three
ring components long puts component ``c`` of grid row ``x`` at ring row
``x - base + pad`` (the kernels' component stride is ``E.size // 3``).
A CPML's ``psi_y`` and ``psi_z`` (``(4, nx, 2w, nz)``, ``(4, nx, ny, 2w)``:
x rows) stream the same way, as 4-d views; ``psi_x`` holds only the x
layers' ``2w`` slots, indexed by slot, so it stays whole on the device (and
is copied to the host where the state is read).

The material index stays whole on the device: 3 bytes a cell (one medium a
component), an eighth of the 24 bytes a cell of ``E`` and ``H`` that the
host holds, and the kernels address it by the whole grid's ``nx`` (streaming
it would add 3 bytes a cell a sweep to the bus and a stride argument to
both sweeps).  So a window run holds on the GPU the rings (24 bytes a cell
of the window, 36 with ``J``, plus ``psi``'s rows) plus 4 bytes a cell of
the whole grid (the index and the point flags), and moves 24 bytes a cell in and 24 out a sweep (36 each
way with ``J``; the rows' y and z halo and ``psi``'s rows on top).

Which scenes stream (:meth:`StreamedYeeCUDABackend.streams`): every scene
without a periodic face: media (dielectrics, PEC, a material index, Drude
media), a CPML, dipoles, TFSF plane waves, probes and monitors.  The point
tables stay whole on the device (the flags of the cells with points, 1 byte a
cell, as in memory; the columns' tables, a few bytes a column), as do the
monitors' sums; each sweep's source samples and probe
values go as in memory, on the default stream (so with points a sweep's
first load waits for the last one's last store).  A scene with periodic
faces goes window by window (:class:`~diamondlab.engine.scale.window.WindowBackend`):
the plan decides it where it knows the physics
(:attr:`~diamondlab.engine.run.plan.PlanCore.streamed`).
Every streamed sweep is the register-tile one, with the scene's features
compiled in: its boundary torres test every load, so it reads nothing
outside the domain, where the sweep that reads through the caches reads the
zero x halo, rows no ring holds.  Where ``nt`` is not given a streamed run
takes Nt = :attr:`StreamedYeeCUDABackend.WINDOW_NT` (the bus caps a sweep of
Nt steps near ``B Nt / 24`` Yee updates/s, ``B`` the bytes/s a way).
"""

from __future__ import annotations

import numpy as np

from diamondlab.engine.backends import Backend
from diamondlab.engine.backends.yee_cpu import YeeCPUBackend
from diamondlab.engine.backends.yee_cuda import YeeCUDABackend
from diamondlab.engine.scale.cuda_window import RingArray, RingStream
from diamondlab.engine.scale.window import StreamGroup, host_arrays

__all__ = ["StreamedYeeCUDABackend"]


class StreamedYeeCUDABackend(RingStream, YeeCUDABackend):
    """Yee sweeps of a grid held in pinned host memory, streamed through ``window`` device rows (see the
    module contract); built by the plan for a CUDA Maxwell run with a window whose scene streams."""

    #: always the register-tile sweep, a Drude scene's too: it reads no cell outside the domain (its boundary
    #: torres test every load), where the sweep that reads through the caches reads the zero x halo, rows
    #: that no ring holds (both sweeps equal stepwise bit for bit, so the run equals the in-memory one)
    tile_in_registers = True
    registers_for_physics = True
    #: 24 bytes a cell each way a sweep: at Nt = 4 (the in-memory default) a bus of about 50 GB/s a way caps
    #: the window near 8 G Yee updates/s, against 30-46 in memory on an H100 (BENCHMARKS.md); at Nt = 32 the
    #: cap is about 67 G/s, above both orders' in-memory rates (a model: not yet measured)
    WINDOW_NT = 32

    @classmethod
    def streams(cls, physics) -> bool:
        """Every scene without a periodic face (which the register-tile sweep does not run)."""
        return not physics.periodic

    @classmethod
    def check_window(cls, params, shape, size: int, nt: int, window: int, options: dict) -> None:
        """The stream plan fits ``window`` rows, and the rings (``E``, ``H``, ``J``: the worst) and the whole
        grid's material index and point flags (4 bytes a cell) fit the device's free memory."""
        super().check_window(params, shape, size, nt, window, options)
        m = params.order // 2
        row = (shape[1] + 2 * m) * (shape[2] + 2 * m)
        rings = 3 * 3 * 4 * (window + 2 * m * (size + 1)) * row
        cls.check_state_bytes(shape, rings + 4 * int(np.prod(shape, dtype=np.int64)),
                              "the window's rings and the whole grid's material index")

    def _allocate_fields(self) -> tuple:
        """``E`` and ``H`` padded and whole on the host (pinned, or in files), a ring of each on the GPU."""
        e, h = (self._host_array() for _ in range(2))
        row = self._padded[2] * self._padded[3]
        self._ring_e, self._ring_h = self._new_ring(3, row), self._new_ring(3, row)
        self._start_stream()  # before set_physics, whose reset synchronizes
        return e, h

    def _host_array(self, shape=None) -> np.ndarray:
        """A whole array of ``shape`` (default: padded ``(3, X, Y, Z)``) on the host, zero: pinned, or a
        file."""
        shape = self._padded if shape is None else tuple(shape)
        if self._window_dir is not None:
            return host_arrays([shape], self._window_dir)[0]
        try:
            a = self._cuda.pinned_array(shape, dtype=np.float32)
        except Exception as err:  # the driver's out-of-memory error, or MemoryError
            need = 4 * int(np.prod(shape, dtype=np.int64))
            raise MemoryError(f"the calculation window keeps E and H (and J, psi) in pinned host memory: "
                              f"{need / 2**30:.2f} GiB more did not fit ({err})") from err
        a[...] = 0.0
        return a

    def set_physics(self, *args, **kwargs) -> None:
        self._views.clear()  # views of J and psi rings about to be replaced
        super().set_physics(*args, **kwargs)

    def _device_current(self):
        """A Drude medium's current: whole on the host, a ring on the GPU (else the kernels' placeholder)."""
        if not self._drude:
            return super()._device_current()
        self._j = self._host_array()
        return self._new_ring(3, self._padded[2] * self._padded[3])

    def _device_psi(self) -> tuple:
        """``psi_x`` (the x layers' slots) whole on the GPU and on the host; ``psi_y`` and ``psi_z`` (x rows)
        whole on the host, a ring on the GPU, where their axis has layers (else the kernels' placeholders)."""
        widths = self.pml.axis_widths(self.periodic)
        host, device = list(self._psi), [self._cuda.to_device(self._psi[0])]
        for axis in (1, 2):
            if widths[axis]:
                host[axis] = self._host_array(self._psi[axis].shape)
                device.append(self._new_ring(4, int(np.prod(self._psi[axis].shape[2:]))))
            else:
                device.append(self._cuda.to_device(self._psi[axis]))
        self._psi = tuple(host)
        return tuple(device)

    def _rings(self) -> tuple[RingArray, ...]:
        """``E``, ``H``, a Drude current and the rows of ``psi_y`` and ``psi_z``, as the kernels take them."""
        _, px, py, pz = self._padded
        arrays = [(self._ring_e, self._e), (self._ring_h, self._h)] + [(self._d_j, self._j)] * self._drude
        rings = [RingArray(ring, host.reshape(3, px, py * pz), self.halo) for ring, host in arrays]
        widths = self.pml.axis_widths(self.periodic)
        for axis in (1, 2):
            if widths[axis]:
                host = self._psi[axis]
                rings.append(RingArray(self._d_psi[axis], host.reshape(4, self.shape[0], -1),
                                       row_shape=host.shape[2:]))
        return tuple(rings)

    def _pull_psi_x(self) -> None:
        """``psi_x``, which the kernels keep whole on the GPU, into its host copy (after synchronize)."""
        self._d_psi[0].copy_to_host(self._psi[0])

    def _push_psi_x(self) -> None:
        self._cuda.synchronize()
        self._d_psi[0].copy_to_device(self._psi[0])

    # ------------------------------------------------------------------ the state (on the host)
    def field_views(self):
        self.synchronize()
        return YeeCPUBackend.field_views(self)

    def state_views(self):
        self.synchronize()
        self._pull_psi_x()
        return YeeCPUBackend.state_views(self)

    def state(self) -> tuple:
        return tuple(np.array(a) for a in self.state_views())  # plain arrays, also of state in files

    def fields(self) -> tuple[np.ndarray, np.ndarray]:
        return tuple(np.array(a) for a in self.field_views())

    def set_state(self, arrays) -> None:
        YeeCPUBackend.set_state(self, arrays)  # into state_views
        self._push_psi_x()

    def set_rows(self, lo: int, hi: int, rows) -> None:
        YeeCPUBackend.set_rows(self, lo, hi, rows)
        self._push_psi_x()

    def set_fields(self, e, h) -> None:
        self.synchronize()
        YeeCPUBackend.set_fields(self, e, h)

    def reset(self) -> None:
        self.synchronize()
        YeeCPUBackend.reset(self)
        self._push_psi_x()

    def component_view(self, name: str) -> np.ndarray:
        self.synchronize()
        return YeeCPUBackend.component_view(self, name)

    current_view = YeeCPUBackend.current_view
    planes = YeeCPUBackend.planes
    # the state is on the host: the contract's own row copies (not the device blocks of YeeCUDABackend)
    get_rows = Backend.get_rows
    rows_size = Backend.rows_size

    # ------------------------------------------------------------------ the stream
    def sweep(self, height: int, src_samples=None) -> None:
        """Queue one Yee sweep, streamed group by group (see the module contract)."""
        if not 1 <= height <= self.nt:
            raise ValueError(f"sweep height must be between 1 and nt={self.nt}; got {height}")
        ntorres = self._stages(height)[-1]
        plan = self._stream_plan(height, self.schedule(height))
        flag0 = self._next_flags(height)
        args = self._device_args(height, src_samples)

        def launch(group: StreamGroup, view) -> None:
            t0, t1 = group.tickets
            fields = tuple(view(a) for a in (self._ring_e, self._ring_h, self._d_j))
            self._launch_sweep(height, fields, tuple(view(a) for a in args), flag0, t1 - t0, self._stream)

        self._stream_sweep(plan, launch)
        self._tickets += ntorres
        self._keep(args)
