"""The simulation object that the CLI, the widgets and the notebooks drive.

Contract
--------
A :class:`Simulation` holds two time levels ``u^{n-1}, u^n`` of a float32
field on an ``(nx, ny, nz)`` grid with the zero boundary, a backend that
owns them (``"cpu"``, ``"cuda"`` or ``"auto"``) and an algorithm
(``"diamondtorre"`` or ``"stepwise"``).  :meth:`Simulation.run` advances
any number of steps: DiamondTorre runs whole sweeps of ``Nt`` steps and a
last, shorter sweep for the remainder, so a run always ends with every cell
at the same time level.  A run that is stopped (``stop()``, a
``threading.Event``, or Ctrl-C) stops between sweeps: the fields and the
clock stay consistent, and Ctrl-C is re-raised after the bookkeeping.

One thread uses a simulation at a time: while a run goes on, another
thread that runs, resets or reads the fields gets a
:class:`SimulationBusyError` naming the running thread (the run's own
callbacks may read; ``stop()`` works from anywhere).

Fields come back as NumPy arrays in (x, y, z) order; on the GPU they are
copied only when asked for.  ``last_run`` reports the throughput (cell
updates per second) of the most recent run.
"""

from __future__ import annotations

import contextlib
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from diamondlab.engine.equations import EQUATIONS, simulation_class
from diamondlab.engine.measure.memory import check_trace_memory
from diamondlab.engine.outputs.snapshots import Snapshots
from diamondlab.engine.run.interrupts import deferred_interrupts, held_while_compiling
from diamondlab.engine.run.plan import ALGORITHMS, RunPlan
from diamondlab.numerics import gaussian_pulse, validate_pulse_width

__all__ = [
    "ALGORITHMS",
    "EQUATIONS",
    "NonFiniteFieldError",
    "RunStats",
    "Simulation",
    "SimulationBusyError",
    "SourceTimingWarning",
]

@dataclass(frozen=True)
class RunStats:
    """What one call of :meth:`Simulation.run` did."""

    steps: int
    seconds: float
    cells: int
    algorithm: str
    backend: str
    interrupted: bool = False

    @property
    def cell_updates(self) -> int:
        return self.steps * self.cells

    @property
    def cells_per_second(self) -> float:
        """Cell updates per second (0 when nothing ran)."""
        return self.cell_updates / self.seconds if self.seconds > 0 else 0.0

    @property
    def gcells_per_second(self) -> float:
        return self.cells_per_second / 1e9


class NonFiniteFieldError(FloatingPointError):
    """The field stopped being finite (a blow-up): raised by :meth:`Simulation.run`, which stops there.

    ``step`` is the time level at which it was found and ``where`` says
    where (a cell, a receiver or a source).
    """

    def __init__(self, message: str, step: int, where: str):
        super().__init__(message)
        self.step = step
        self.where = where


class SimulationBusyError(RuntimeError):
    """A :class:`Simulation` asked to run, reset or hand out its fields while another thread runs it.

    One simulation is advanced by one thread at a time: two runs at once
    would interleave their sweeps and give a field that no run gives.  A
    run's own callback may read the fields (it runs in the run's thread)
    but may not start another run or reset.
    """


class SourceTimingWarning(UserWarning):
    """A source adds nothing visible during a run (its wavelet peaks after the run ends)."""


#: Samples per axis (at most) of the planes checked for finiteness after a sweep.
FINITE_CHECK_SAMPLES = 256

#: Largest share of the sweeps' time the sampled-plane check may take: it runs after a sweep only when
#: the sweeps since the last one took at least its own cost / this (always after a run's last sweep).
FINITE_CHECK_BUDGET = 0.02

#: Seconds between two progress-bar updates (each waits for the GPU).
REPORT_SECONDS = 0.2


class Simulation:
    """A 3D acoustic wave simulation run by DiamondTorre or stepwise time stepping.

    Parameters
    ----------
    shape : (nx, ny, nz)
        Grid size in cells.
    order : int
        Stencil order NO (2, 4, 6, 8).
    equation : {"acoustic", "maxwell"}
        The equation (default ``"acoustic"``, this class's parameters);
        ``"maxwell"`` makes a :class:`~diamondlab.engine.equations.maxwell_simulation.MaxwellSimulation`
        (Maxwell's equations on the Yee grid: its own parameters).
    size, nt : int or "auto", optional
        Diamond tile size DTS and torre height Nt; the backend's defaults
        for ``order`` when omitted; ``"auto"`` measures the backend's
        candidates on this grid once and caches the fastest
        (:mod:`diamondlab.engine.run.autotune`).
    courant, dt : float, optional
        Courant number ``c dt / h`` or time step (default: half the limit).
    spacing : float
        Grid spacing ``h``.
    velocity : float or array
        Wave speed ``c``: a constant (the fast path) or a per-cell model of
        the grid's shape (see :mod:`diamondlab.media`); the stability limit
        applies to its maximum.
    backend : {"auto", "cpu", "cuda"}
    backend_options : dict, optional
        Speed options of the backend, e.g. ``{"pipelined": True, "band": 32,
        "chunk": 2}`` for ``"cuda"`` (see
        :class:`~diamondlab.engine.backends.cuda.CUDABackend`); they never change
        results.  Default: the backend's own, or the auto-tuner's choice with
        ``size="auto"`` and ``nt="auto"``.  ``"auto"`` on a machine without a
        GPU ignores them (with a warning); options the GPU cannot take are an
        error, not a reason to fall back to the CPU.
    algorithm : {"auto", "diamondtorre", "stepwise"}
        Default ``"auto"``: DiamondTorre, except where the backend measured
        stepwise faster for this kind of run (on the GPU: a velocity model at
        NO >= 4); it then warns and says why (:attr:`algorithm_reason`).  Both
        give the same fields bit for bit.
    initial : "gaussian", "zero", an array, or a pair of arrays, optional
        Default: ``"zero"`` (at rest) when there are sources or receivers,
        so that traces and snapshots show the sources alone (as in Devito and
        k-Wave), else ``"gaussian"``.  ``"gaussian"``: a pulse of ``pulse_width`` cells at the centre,
        released at rest at ``t = 0`` (``u^0`` the pulse, ``u^{-1}`` the exact
        free-space solution at ``-dt`` for the maximum velocity).  One array: a field at rest
        (both layers equal).  A pair: ``(u^{n-1}, u^n)``.
    sources, receivers : sequences
        :class:`~diamondlab.sources.Source` objects; receivers as
        :class:`~diamondlab.sources.Receiver` or ``(x, y, z)`` positions
        (physical units).  Both work inside DiamondTorre tiers.
    sponge : int, optional
        Width in cells of the absorbing layer; 0 for the zero (reflecting)
        boundary.  Default: 16 cells (at most ``(min(shape) - 1) // 2``) when
        there are sources, else 0.
    pulse_width : float, optional
        Width (cells) of the ``"gaussian"`` initial pulse; default
        ``max(2, min(shape) / 12)``.
    step : int
        Time level ``n`` of ``initial`` (default 0): the clock, the wavelets
        and the trace times go on from it (how a saved run is continued).
    comm : mpi4py communicator, optional
        Split the grid along y over its ranks (run under ``mpiexec``; every
        rank makes the same ``Simulation`` and calls the same methods): each
        rank runs its slab (on the CPU, or on one GPU per rank with
        ``backend="cuda"``: a node's ranks take its GPUs in turn) and
        exchanges ghost rows once per sweep (:mod:`diamondlab.engine.scale.mpi`);
        fields, planes, traces and snapshots are the whole grid's on every
        rank, bit for bit the single-process result.  Snapshot files are
        written by rank 0.
    halo : {"auto", "host", "peer"}
        How MPI ranks exchange ghost rows (:mod:`diamondlab.engine.scale.halo`):
        ``"peer"`` GPU to GPU over CUDA IPC, ``"host"`` through host memory,
        ``"auto"`` (default) peer where every neighbour's GPU is reachable.
    window : int, optional
        The calculation window: the device holds this many x rows at a time
        and the fields live in host memory, bit for bit the in-memory result.
        On the GPU a DiamondTorre sweep streams through it stage group by
        stage group, the copies overlapped with the torres
        (:mod:`diamondlab.engine.scale.cuda_window`); elsewhere it goes window by
        window (:mod:`diamondlab.engine.scale.window`).  For grids larger than the
        GPU's memory.  Default: the whole grid.
    window_dir : path, optional
        With ``window``: keep the two fields in files in this folder
        (``numpy.memmap``, for grids larger than host memory; no file remains)
        instead of (pinned) host memory.  The folder must hold them.

    Examples
    --------
    >>> sim = Simulation((24, 20, 16), order=2, backend="cpu", size=2, nt=4)
    >>> stats = sim.run(10)
    >>> sim.time_step, stats.steps, sim.field.shape
    (10, 10, (24, 20, 16))
    """

    def __new__(cls, *args, equation: str = "acoustic", **kwargs):
        found = simulation_class(equation)  # checks the name; loads only that equation's module
        if cls is Simulation:
            cls = found
        return super().__new__(cls)

    def __init__(
        self,
        shape=(64, 64, 64),
        order: int = 2,
        *,
        equation: str = "acoustic",
        size: int | None = None,
        nt: int | None = None,
        courant: float | None = None,
        dt: float | None = None,
        spacing: float = 1.0,
        velocity=1.0,
        backend: str = "auto",
        backend_options: dict | None = None,
        algorithm: str = "auto",
        initial=None,
        pulse_width: float | None = None,
        sources=(),
        receivers=(),
        sponge: int | None = None,
        step: int = 0,
        comm=None,
        window: int | None = None,
        window_dir=None,
        halo: str = "auto",
    ):
        if equation != "acoustic":
            raise ValueError(f"{type(self).__name__} runs equation='acoustic'; got {equation!r}")
        self._check_start(initial, pulse_width, step)
        plan = RunPlan.build(
            shape, order, size=size, nt=nt, courant=courant, dt=dt, spacing=spacing, velocity=velocity,
            backend=backend, backend_options=backend_options, algorithm=algorithm, sources=sources,
            receivers=receivers, sponge=sponge, comm=comm, window=window, window_dir=window_dir, halo=halo,
            stacklevel=3,
        )  # fmt: skip
        self._start(plan, initial, pulse_width, step)

    @classmethod
    def from_plan(cls, plan: RunPlan, *, initial=None, pulse_width: float | None = None,
                  step: int = 0) -> Simulation:
        """The simulation of an already checked :class:`~diamondlab.engine.run.plan.RunPlan` (not checked
        again).

        For callers that build the plan first to validate a configuration
        (the lab's controllers): the plan is what runs.  ``initial``,
        ``pulse_width`` and ``step`` as for the constructor.

        >>> plan = RunPlan.build((24, 20, 16), 2, backend="cpu", size=2, nt=4)
        >>> Simulation.from_plan(plan).plan is plan
        True
        """
        cls._check_start(initial, pulse_width, step)
        sim = cls.__new__(cls)
        sim._start(plan, initial, pulse_width, step)
        return sim

    @staticmethod
    def _check_start(initial, pulse_width, step) -> None:
        if pulse_width is not None:
            validate_pulse_width(pulse_width, "pulse_width")
        if isinstance(step, bool) or not isinstance(step, (int, np.integer)) or step < 0:
            raise ValueError(f"step (the initial time level) must be an int >= 0; got {step!r}")
        if isinstance(initial, str) and initial not in ("gaussian", "zero"):
            raise ValueError(f"initial must be 'gaussian', 'zero', an array or a pair; got {initial!r}")

    def _start(self, plan: RunPlan, initial, pulse_width, step) -> None:
        """Allocate the plan's backend and set the initial state."""
        if initial is None:
            initial = "zero" if plan.physics.sources or plan.physics.receivers else "gaussian"
        elif not isinstance(initial, str):
            initial = self._check_initial(initial, plan)
        self._first_step = int(step)
        self._busy = threading.Lock()  # held by the thread that runs or resets (never waited for)
        self._owner: threading.Thread | None = None
        self.plan = plan
        self.backend = plan.make_backend()
        self._traces = np.zeros((0, len(plan.physics.receivers)), dtype=np.float32)  # capacity doubles
        self._trace_rows = 0
        self.pulse_width = pulse_width if pulse_width is not None else max(2.0, min(self.shape) / 12)
        self._initial = initial
        self._stop = threading.Event()
        self._compiled = False
        self._plane_check_seconds = 0.0  # the last sampled-plane check's cost (0: check after the next sweep)
        self.last_run: RunStats | None = None
        self.reset()  # the layers checked above, not again

    # ------------------------------------------------------------ state (the plan's, decided once)
    equation = "acoustic"  # the equation this class runs (EQUATIONS)
    physics = property(lambda self: self.plan.physics, doc="Medium, sponge, sources and receivers.")
    params = property(lambda self: self.plan.params, doc="The scheme's WaveParameters.")
    algorithm = property(lambda self: self.plan.algorithm, doc='"diamondtorre" or "stepwise" (what runs).')
    algorithm_reason = property(lambda self: self.plan.algorithm_reason,
                                doc='Why it runs ("asked for", or the reason of algorithm="auto").')
    backend_name = property(lambda self: self.plan.backend, doc="The backend that runs (after 'auto').")
    size = property(lambda self: self.plan.size, doc="DTS, the diamond tile size.")
    nt = property(lambda self: self.plan.nt, doc="Nt, the torre height.")
    shape = property(lambda self: self.plan.shape, doc="Grid size (nx, ny, nz).")
    cells = property(lambda self: self.plan.cells, doc="Cells of the grid.")
    order = property(lambda self: self.plan.params.order, doc="NO, the stencil order.")
    sources = property(lambda self: self.plan.physics.sources, doc="The sources (Source objects).")
    receivers = property(lambda self: self.plan.physics.receivers, doc="The receivers (Receiver objects).")
    backend_options = property(lambda self: dict(self.plan.options),
                               doc="The backend's speed options in force (its defaults filled in).")

    @property
    def time(self) -> float:
        """Physical time ``n dt`` of the current level."""
        return self.time_step * self.params.dt

    def _check_initial(self, initial, plan):
        """``initial`` (not a name) checked against ``plan`` before anything is allocated."""
        return self._check_layers(initial, plan.shape)

    @staticmethod
    def _check_layers(initial, shape) -> tuple[np.ndarray, np.ndarray]:
        """``(u^{n-1}, u^n)`` as float32 from an array (at rest) or a pair, checked against ``shape``."""

        def check(name: str, a) -> np.ndarray:
            a = np.asarray(a)
            if a.shape != shape:
                raise ValueError(f"{name} must have shape {shape} (nx, ny, nz); got {a.shape}")
            if not np.issubdtype(a.dtype, np.floating):
                raise TypeError(f"{name} must be a real floating array (float32 preferred); got {a.dtype}")
            a = a.astype(np.float32, copy=False)
            if not np.all(np.isfinite(a)):
                raise ValueError(f"{name} contains NaN or infinite values (or values beyond float32)")
            return a

        if isinstance(initial, (tuple, list)) and len(initial) == 2:
            return check("initial[0] (u^{n-1})", initial[0]), check("initial[1] (u^n)", initial[1])
        layer = check("initial", initial)
        return layer, layer

    def reset(self, initial=None) -> None:
        """Set the two initial layers (default: those given at construction); the clock goes back to ``step``.

        ``initial`` as in the constructor.  Raises :class:`SimulationBusyError`
        while another thread (or this one's run) is running the simulation.
        """
        with self._exclusive("reset it"):
            self._reset(initial)

    def _reset(self, initial) -> None:
        if initial is None:
            initial = self._initial
        elif not isinstance(initial, str):
            initial = self._check_layers(initial, self.shape)
        # the levels are built in place where the backend lends its fields (no full-size temporary)
        views = self.backend.field_views()
        if initial == "gaussian":
            # released at rest: the solution is even in time, so u^{-1} = u(+dt)
            curr = gaussian_pulse(self.shape, width=self.pulse_width, out=views[1])
            prev = gaussian_pulse(self.shape, width=self.pulse_width, distance=self.params.courant,
                                  out=views[0])
        elif initial == "zero":
            if views[0] is None:
                prev = curr = np.zeros(self.shape, dtype=np.float32)
            else:
                prev, curr = views
                prev.fill(0.0)
                curr.fill(0.0)
        elif isinstance(initial, str):
            raise ValueError(f"initial must be 'gaussian', 'zero', an array or a pair; got {initial!r}")
        else:
            prev, curr = initial
        self._initial = initial
        self.backend.set_fields(prev, curr)
        self._restart_clock()

    def _restart_clock(self) -> None:
        """The clock back to the initial step and a new, empty record of the receivers."""
        self.time_step = self._traces_from = self._first_step
        if self.physics.receivers:
            self.backend.take_traces()  # what a stopped run left queued belongs to the old fields
        self._traces = self._traces[:0].copy()  # a new record: views of the old one keep their values
        self._trace_rows = 0

    @property
    def traces(self) -> np.ndarray:
        """Receiver traces, float32 ``(steps, receivers)``: row ``i`` is level ``i + 1`` since the reset.

        A read-only view of the simulation's record (no copy: a live view reads it after every
        refresh of an hour's run); ``.copy()`` it to keep or change it.
        """
        view = self._traces[: self._trace_rows]
        view.flags.writeable = False
        return view

    @property
    def trace_times(self) -> np.ndarray:
        """Physical times of the rows of :attr:`traces`."""
        return self.params.dt * (self._first_step + np.arange(1, len(self.traces) + 1))

    @property
    def fields(self) -> tuple[np.ndarray, np.ndarray]:
        """Host copies ``(u^{n-1}, u^n)`` in (x, y, z) order (not while another thread runs it)."""
        with self._exclusive("read its fields", read=True):
            return self.backend.fields()

    @property
    def field(self) -> np.ndarray:
        """Host copy of the current level ``u^n`` (not while another thread runs it)."""
        with self._exclusive("read its field", read=True):
            return self.backend.fields()[1]

    def current_view(self) -> np.ndarray:
        """The current level ``u^n`` without a copy where the backend allows it (CPU: a read-only view).

        Valid until the next step: read it between runs or in a ``run`` callback.
        On the GPU it is a host copy, like :attr:`field`.
        """
        with self._exclusive("read its field", read=True):
            return self.backend.current_view()

    def current_planes(self, index, strides=(1, 1, 1)) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Three strided planes of ``u^n`` through ``index = (ix, iy, iz)``: ``(xy, xz, yz)``.

        ``xy = u[ox::sx, oy::sy, iz]``, ``xz = u[ox::sx, iy, oz::sz]``,
        ``yz = u[ix, oy::sy, oz::sz]`` with ``strides = (sx, sy, sz)`` and
        ``(ox, oy, oz) = index % strides``, so that every plane holds the
        point itself.  On the GPU only the planes are copied to the host (what
        the live view reads after each refresh).
        """
        index = tuple(int(i) for i in index)
        strides = tuple(int(s) for s in strides)
        if len(index) != 3 or any(not 0 <= i < n for i, n in zip(index, self.shape, strict=True)):
            raise ValueError(f"index must be a cell (ix, iy, iz) of the grid {self.shape}; got {index}")
        if len(strides) != 3 or min(strides) < 1:
            raise ValueError(f"strides must be three ints >= 1; got {strides}")
        with self._exclusive("read its planes", read=True):
            return self.backend.planes(index, strides)

    # -------------------------------------------------------------- run
    @contextlib.contextmanager
    def _exclusive(self, what: str, read: bool = False) -> Iterator[None]:
        """Hold the simulation for this thread during the block; :class:`SimulationBusyError` if it is held.

        ``read``: the block only reads, which a run's own callback (in the
        run's thread) may do.  The lock is tried, never waited for.
        """
        me = threading.current_thread()
        if read and self._owner is me:  # a run's callback reading between sweeps
            yield
            return
        if not self._busy.acquire(blocking=False):
            owner = self._owner
            where = "in this thread (from its own run's callback)" if owner is me else (
                f"in thread {owner.name!r}" if owner is not None else "in another thread")
            raise SimulationBusyError(
                f"cannot {what}: this Simulation is already running {where}; wait for that run to end "
                "or call stop() (a Lab: pause it)"
            )
        self._owner = me
        try:
            yield
        finally:
            self._owner = None
            self._busy.release()

    def stop(self) -> None:
        """Ask a running :meth:`run` (in another thread) to stop after the current sweep.

        A ``run`` clears this request when it starts; to stop a run that may
        not have started yet, pass it a ``stop_event`` instead.
        """
        self._stop.set()

    def run(
        self,
        steps: int,
        *,
        progress: bool = False,
        callback: Callable[[Simulation, RunStats], None] | None = None,
        callback_every: float | Callable[[], float] = 0.0,
        stop_event: threading.Event | None = None,
        snapshots: Snapshots | None = None,
        snapshot_every: int | None = None,
        snapshot_dir=None,
        snapshot_formats=("npz",),
    ) -> RunStats:
        """Advance ``steps`` time steps; return (and keep in ``last_run``) the throughput.

        ``callback(sim, stats_so_far)`` is called after a sweep (every ``Nt``
        steps for stepwise runs too) once ``callback_every`` seconds have
        passed since it last returned (``0``: after every sweep; a callable
        is asked after every sweep, so that a caller may change its mind
        during the run), and after the last sweep.  Each call waits for the
        device; sweeps between calls queue back to back.  ``progress=True``
        shows a tqdm bar.
        ``snapshot_every=k`` keeps the field every ``k`` steps (and at step 0)
        in ``self.snapshots`` (a :class:`~diamondlab.engine.outputs.snapshots.Snapshots`),
        in memory or, with ``snapshot_dir``, as files in ``snapshot_formats``
        (``"npz"``, ``"vti"``); sweeps are cut to stop at those steps.

        One thread runs a simulation at a time: :class:`SimulationBusyError`
        while another thread runs it (``stop()`` works from any thread).
        """
        if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 0:
            raise ValueError(f"steps must be an int >= 0; got {steps!r}")
        # the receivers' record grows by steps x receivers: refused before any work when it cannot fit
        check_trace_memory(self.shape, self._trace_rows, self._traces.shape, steps)
        with self._exclusive("run it"):
            return self._run(steps, progress, callback, callback_every, stop_event, snapshots, snapshot_every,
                             snapshot_dir, snapshot_formats)

    def _run(self, steps, progress, callback, callback_every, stop_event, snapshots, snapshot_every,
             snapshot_dir, snapshot_formats) -> RunStats:
        self._stop.clear()
        if steps and self.time_step == self._first_step:  # from the initial level: is every source seen?
            for message in self.physics.quiet_sources(self.time_step, steps, self.params.dt):
                warnings.warn(message, SourceTimingWarning, stacklevel=3)
        if snapshots is None and snapshot_every is not None:
            snapshots = Snapshots(snapshot_every, snapshot_dir, snapshot_formats)
        if snapshots is not None:
            self.snapshots = snapshots
            if snapshots.due(self.time_step) and snapshots.last_step != self.time_step:
                with deferred_interrupts():
                    self._snapshot(snapshots)
        bar = None
        if progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=int(steps), unit="step", desc=f"{self.algorithm} ({self.backend_name})")
        every = callback_every if callable(callback_every) else lambda: callback_every
        done, elapsed, interrupted = 0, 0.0, False
        unchecked = 0.0  # seconds of sweeps since the planes were last checked
        self.last_run = self._stats(0, 0.0)
        try:
            # Ctrl-C and SIGTERM are held for the compiling and the whole loop and act where every MPI rank
            # agrees: before the first sweep, or after a sweep, its books and its snapshot (every rank at the
            # same level); held while compiling, where Numba's C callbacks would lose them
            with deferred_interrupts() as held:
                if not self._compiled:
                    # a stop that came before the run (the command line records them from its start) acts
                    # before the compiling, which may take a minute; every rank agrees
                    if self.backend.agree((held.pending,))[0]:
                        raise KeyboardInterrupt
                    if bar is not None:
                        bar.set_postfix_str("compiling kernels (once per order)")
                    with held_while_compiling():
                        self.backend.compile()
                    self._compiled = True
                # the clock: wall time of the sweeps and their books, without the checks and snapshots; the
                # GPU is waited for only where something is read or reported, so that sweeps queue back to
                # back
                mark = reported = time.perf_counter()
                reported_done = 0
                while done < steps:
                    stop, signalled = self.backend.agree((self._stop_asked(stop_event), held.pending))
                    if signalled:  # a stop signal on any rank (in a callback, say): every rank stops here
                        raise KeyboardInterrupt
                    if stop:
                        interrupted = True
                        break
                    height = min(self.nt, steps - done)
                    if snapshots is not None:
                        height = min(height, snapshots.steps_to_next(self.time_step))
                    self._advance(height)
                    done += height
                    now = time.perf_counter()
                    budget = (unchecked + now - mark) * FINITE_CHECK_BUDGET
                    check = done >= steps or budget >= self._plane_check_seconds
                    snap = snapshots is not None and snapshots.due(self.time_step)
                    report = (callback is not None and (done >= steps or now - reported >= every())) or (
                        bar is not None and now - reported >= REPORT_SECONDS)
                    # one decision for every MPI rank (one process: the flags as they are)
                    check, report, signalled = self.backend.agree((check, report, held.pending))
                    if check or snap or report:
                        self.backend.synchronize()
                        self._take_traces()
                    now = time.perf_counter()
                    elapsed, unchecked, mark = elapsed + now - mark, unchecked + now - mark, now
                    if check:
                        self._check_planes()
                        unchecked = 0.0
                    if snap:
                        self._snapshot(snapshots)
                    if signalled:  # a stop signal on any rank: every rank stops here
                        raise KeyboardInterrupt
                    if report:
                        reported, reported_done = self._report(done, elapsed, bar, callback), done
                    mark = time.perf_counter()
            elapsed = self._end_run(done, steps, elapsed, mark, reported_done, bar, callback, unchecked)
        except KeyboardInterrupt:
            interrupted = True
            raise
        finally:
            if bar is not None:
                bar.close()
            if self._traces_from != self.time_step:  # stopped by an error or Ctrl-C: keep what was recorded
                self._take_traces(check=False)
            self.last_run = self._stats(done, elapsed, interrupted)
        return self.last_run

    def _end_run(self, done, steps, elapsed, mark, reported_done, bar, callback, unchecked) -> float:
        """After the last sweep (or a stop): the clock, the traces, the last report; the seconds."""
        if done < steps:  # stopped early: sweeps may still be queued (a full run waited after its last)
            self.backend.synchronize()
            elapsed += time.perf_counter() - mark
        self._take_traces()
        if callback is not None and done > reported_done:  # stopped early: its last sweeps reported too
            self._report(done, elapsed, None, callback)
        if bar is not None:
            bar.update(done - bar.n)
        if unchecked:  # stopped before the last sweep: the level it stopped at is checked too
            self._check_planes()
        return elapsed

    def _report(self, done: int, elapsed: float, bar, callback) -> float:
        """Show the rate so far on the bar and call the callback; return when it reported."""
        stats, reported = self._stats(done, elapsed), time.perf_counter()
        if bar is not None:
            bar.update(done - bar.n)
            bar.set_postfix_str(f"{stats.gcells_per_second:.3g} Gcells/s")
        if callback is not None:
            callback(self, stats)
        return reported

    def _stop_asked(self, stop_event) -> bool:
        """Whether :meth:`stop` or the run's ``stop_event`` asked this process to stop."""
        return self._stop.is_set() or (stop_event is not None and stop_event.is_set())

    def _advance(self, height: int) -> None:
        """Queue ``height`` steps (one sweep) and book the clock; the receivers record on the device."""
        advance = self.backend.sweep if self.algorithm == "diamondtorre" else self.backend.step
        samples = None
        if self.physics.has_points:
            samples = self.physics.source_samples(self.time_step, height, self.params.dt)
            if not np.isfinite(samples).all():
                point, row = np.argwhere(~np.isfinite(samples))[0]
                source = int(self.physics.source_points.owner[point])
                raise NonFiniteFieldError(
                    f"source {source} adds a value that is not finite in float32 at step "
                    f"{self.time_step + row} (amplitude {self.sources[source].amplitude:g}): lower its "
                    "amplitude", self.time_step, f"source {source}",
                )  # fmt: skip
        if samples is None:
            advance(height)
        else:
            advance(height, samples)
        self.time_step += height

    def _take_traces(self, check: bool = True) -> None:
        """Append the receiver values queued since the last call to the traces (waits for the backend);
        ``check``: raise :class:`NonFiniteFieldError` if one is not finite."""
        first, self._traces_from = self._traces_from, self.time_step
        if not self.physics.receivers:
            return
        traces = self.physics.traces(self.backend.take_traces())
        rows = self._trace_rows + len(traces)
        if rows > len(self._traces):  # grown by doubling: appending a sweep's rows costs O(rows) amortised
            grown = np.zeros((max(rows, 2 * len(self._traces), 1024), traces.shape[1]), dtype=np.float32)
            grown[: self._trace_rows] = self._traces[: self._trace_rows]
            self._traces = grown
        self._traces[self._trace_rows : rows] = traces
        self._trace_rows = rows
        if check and not np.isfinite(traces).all():
            row, receiver = np.argwhere(~np.isfinite(traces))[0]
            where = f"receiver {receiver} at {self.receivers[receiver].position}"
            self._blown_up(first + int(row) + 1, where)

    def _check_planes(self) -> None:
        """Raise :class:`NonFiniteFieldError` if sampled planes of ``u^n`` are not finite.

        Three planes through the grid's centre sampled to at most
        ``FINITE_CHECK_SAMPLES`` values per axis (on the GPU only those cross
        the bus).  A blow-up spreads by the stencil reach every step, so it is
        found within a few sweeps of where it starts.  :meth:`run` calls this
        after a sweep only as often as :data:`FINITE_CHECK_BUDGET` allows (the
        copies cost about 0.7 ms on a GPU, half of a 256^3 sweep) and always at
        the end; its own cost is kept in ``_plane_check_seconds``.
        """
        t0 = time.perf_counter()
        centre = tuple(n // 2 for n in self.shape)
        stride = tuple(-(-n // FINITE_CHECK_SAMPLES) for n in self.shape)
        for plane, axes in zip(self.backend.planes(centre, stride), ("xy", "xz", "yz"), strict=True):
            if not np.isfinite(plane).all():
                i, j = np.argwhere(~np.isfinite(plane))[0]
                cell = list(centre)
                for axis, k in zip(axes, (i, j), strict=True):
                    a = "xyz".index(axis)
                    cell[a] = centre[a] % stride[a] + int(k) * stride[a]
                self._blown_up(self.time_step, f"cell {tuple(cell)}")
        self._plane_check_seconds = time.perf_counter() - t0

    def _blown_up(self, step: int, where: str):
        raise NonFiniteFieldError(
            f"the field is not finite at step {step} ({where}; checked after the sweep that ended at "
            f"step {self.time_step}): the run blew up; lower the Courant number, a source's amplitude or "
            "the initial values", step, where,
        )  # fmt: skip

    def _snapshot(self, snapshots: Snapshots) -> None:
        field = self.field  # gathered from every MPI rank (all of them call it)
        if snapshots.directory is not None and self.plan.ranks > 1 and self.plan.comm.rank != 0:
            snapshots.last_step = self.time_step  # rank 0 writes the files
            return
        snapshots.take(self.time_step, self.time, field, self.params.spacing)

    def _stats(self, done: int, elapsed: float, interrupted: bool = False) -> RunStats:
        return RunStats(done, elapsed, self.cells, self.algorithm, self.backend_name, interrupted)

    def __repr__(self) -> str:
        return (
            f"Simulation(shape={self.shape}, order={self.order}, size={self.size}, nt={self.nt}, "
            f"courant={self.params.courant:.4g}, backend={self.backend_name!r}, "
            f"algorithm={self.algorithm!r}, time_step={self.time_step}"
            + "".join(f", {k}={v!r}" for k, v in self.backend.options.items())
            + ")"
        )
