"""Run a :class:`~diamondlab.Simulation` in a background thread, sweep by sweep.

Contract
--------
:class:`BackgroundRun` owns one simulation and one persistent worker
thread (a single-thread executor), so that every kernel call of the lab,
runs, tuning and model measurements alike, comes from the same thread and
Numba's thread pool is not duplicated.  :meth:`~BackgroundRun.run` queues a
run and returns at once (the notebook stays responsive),
:meth:`~BackgroundRun.step` runs one sweep (``Nt`` steps),
:meth:`~BackgroundRun.pause` asks the run to stop after the sweep in
progress, :meth:`~BackgroundRun.reset` pauses, waits and puts the
simulation back at ``n = 0``; :meth:`~BackgroundRun.submit` runs any other
job in the worker; :meth:`~BackgroundRun.close` stops the run, ends the
worker thread and lets the simulation go (a closed run refuses new work).
Because :meth:`Simulation.run` only stops between sweeps, a paused or
finished run always sits at one consistent time level.

At the start of a run the worker calls the :meth:`~BackgroundRun.on_start`
listeners; after every sweep (or, where :attr:`~BackgroundRun.report_every`
is set, after the sweep that ends each such interval: the sweeps between
queue back to back on a GPU) it appends a :class:`SweepRecord` to
:attr:`~BackgroundRun.history` and calls the :meth:`~BackgroundRun.on_sweep`
listeners (in the worker thread, between sweeps); state changes
(``"idle"``, ``"compiling"``, ``"running"``, ``"paused"``, ``"done"``,
``"error"``) go to the :meth:`~BackgroundRun.on_state` listeners.  A
listener that raises does not stop the run: its error is kept in
:attr:`~BackgroundRun.listener_error`.  An error of the run itself
becomes state ``"error"`` with the message in :attr:`~BackgroundRun.message`;
nothing here raises into the notebook.  A listener may slow the run down
between sweeps with :meth:`~BackgroundRun.pace` (the live view paces a run
so that a wave can be watched); a pause ends such a wait at once.  A
listener may also end the run with :meth:`~BackgroundRun.finish` (the live
view does when the wave has left the grid): it stops after the sweep in
progress as ``"done"``, with the listener's message.  No widget library is
imported.
"""

from __future__ import annotations

import concurrent.futures
import threading
import time
import warnings
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from diamondlab.engine.measure.timing import LoadProbe

__all__ = ["BackgroundRun", "SweepRecord"]


@dataclass(frozen=True)
class SweepRecord:
    """Throughput after one report: one sweep, or the sweeps since the last record.

    ``current`` is the rate of those ``steps`` alone and ``average`` the rate
    since the last reset, leaving out the simulation's first sweep (which
    may load or compile kernels) once there are others, both in G cell
    updates per second of kernel time
    (:class:`~diamondlab.engine.run.simulation.RunStats`); ``wall`` is the same
    average over wall-clock time, listeners and thread hand-offs included.
    ``busy`` is the share of the machine's CPU other processes took since the
    record before (:class:`~diamondlab.engine.measure.timing.LoadProbe`, the
    measurement rule's; None where unknown): above
    :data:`~diamondlab.engine.measure.timing.BUSY_SHARE` the rates are not steady.
    """

    time_step: int
    steps: int
    current: float
    average: float
    wall: float
    seconds: float
    busy: float | None = None

    @property
    def disturbed(self) -> bool:
        """Whether other processes took more than the rule allows of the machine since the last record."""
        from diamondlab.engine.measure.timing import BUSY_SHARE

        return self.busy is not None and self.busy > BUSY_SHARE


class BackgroundRun:
    """A simulation advanced in a worker thread, with run, pause, step and reset.

    Parameters
    ----------
    sim : Simulation
        The simulation to drive (replace it with :meth:`replace` when idle).

    Examples
    --------
    >>> import diamondlab as dl
    >>> run = BackgroundRun(dl.Simulation((16, 16, 8), backend="cpu", size=1, nt=4))
    >>> run.run(8)
    True
    >>> run.wait(60)
    True
    >>> run.sim.time_step, run.state, len(run.history)
    (8, 'done', 2)
    """

    #: steps asked of Simulation.run per chunk when running "until paused"
    CHUNK_SWEEPS = 1000

    #: Records :attr:`history` keeps at least (the oldest go once there are twice as many: an hour's run
    #: would otherwise keep every record, tens of megabytes).  The averages do not read it.
    HISTORY_KEEP = 10_000

    #: Seconds of running between two records (and sweep-listener calls); 0: after every sweep.  Read
    #: after every sweep, so a listener may change it during a run (the live view asks for every sweep
    #: while it paces a run, and for a few records a second otherwise).
    report_every: float = 0.0

    def __init__(self, sim):
        self.sim = sim
        self.history: list[SweepRecord] = []
        self.listener_error: str | None = None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="diamondlab-run")
        self._future: Future | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._start_listeners: list[Callable] = []
        self._sweep_listeners: list[Callable] = []
        self._state_listeners: list[Callable] = []
        self.closed = False
        self._finish = ""  # a listener's reason to end the run (finish())
        self._restart("")  # state "idle", no history

    # ------------------------------------------------------------ listeners
    def on_start(self, listener: Callable) -> None:
        """Call ``listener(sim)`` at the start of every run, in the worker thread."""
        self._start_listeners.append(listener)

    def on_sweep(self, listener: Callable) -> None:
        """Call ``listener(sim, record)`` with every record (after a sweep, in the worker thread)."""
        self._sweep_listeners.append(listener)

    def on_state(self, listener: Callable) -> None:
        """Call ``listener(state, message)`` whenever the state changes."""
        self._state_listeners.append(listener)

    def off(self, *listeners: Callable) -> None:
        """Stop calling ``listeners`` (whichever of start, sweep and state listeners they are)."""
        for where in (self._start_listeners, self._sweep_listeners, self._state_listeners):
            where[:] = [f for f in where if f not in listeners]

    def _report_every(self) -> float:
        return self.report_every

    def _call(self, listeners: list[Callable], *args) -> None:
        for listener in list(listeners):
            try:
                listener(*args)
            except Exception as err:  # noqa: BLE001 - a view must never stop the run
                self.listener_error = f"{type(err).__name__}: {err}"

    def _set_state(self, state: str, message: str = "") -> None:
        self.state, self.message = state, message
        self._call(self._state_listeners, state, message)

    # -------------------------------------------------------------- control
    @property
    def running(self) -> bool:
        """Whether a run or another job is queued or in progress."""
        return self._future is not None and not self._future.done()

    def submit(self, fn: Callable, *args) -> Future | None:
        """Run ``fn(*args)`` in the worker thread; None if a job is in progress or the run is closed."""
        with self._lock:
            if self.running or self.closed:
                return None
            self._future = self._executor.submit(fn, *args)
            return self._future

    def run(self, steps: int | None = None) -> bool:
        """Start advancing ``steps`` steps (``None`` or 0: until paused); False if running or closed."""
        with self._lock:
            if self.running or self.closed:
                return False
            self._stop.clear()
            self._finish = ""
            self._future = self._executor.submit(self._work, steps)
            return True

    def step(self) -> bool:
        """Advance one sweep (``Nt`` steps) in the background; False if already running."""
        return False if self.closed else self.run(self.sim.nt)

    def pause(self, wait: bool = False, timeout: float | None = None) -> None:
        """Stop after the sweep in progress (the fields stay at one time level)."""
        self._stop.set()
        if wait:
            self.wait(timeout)

    def finish(self, message: str) -> None:
        """End the run in progress after its sweep, as ``"done"`` with ``message`` (called by a listener).

        >>> import diamondlab as dl
        >>> run = BackgroundRun(dl.Simulation((16, 16, 8), backend="cpu", size=1, nt=4))
        >>> run.on_sweep(lambda sim, record: run.finish(f"enough at step {sim.time_step}"))
        >>> run.run(40) and run.wait(60)
        True
        >>> run.state, run.message, run.sim.time_step
        ('done', 'enough at step 4', 4)
        """
        self._finish = message
        self._stop.set()

    def pace(self, seconds: float) -> bool:
        """Wait ``seconds`` in the worker between sweeps; False (at once) when a pause is asked."""
        if seconds > 0:
            return not self._stop.wait(seconds)
        return not self._stop.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the worker to finish; True if it has."""
        future = self._future
        if future is not None:
            try:
                future.exception(timeout)
            except concurrent.futures.TimeoutError:
                return False
        return not self.running

    def reset(self, timeout: float | None = 60.0) -> None:
        """Pause, wait, and put the simulation back at its initial layers (``n = 0``)."""
        if self.closed:
            return
        self.pause(wait=True, timeout=timeout)
        self.sim.reset()
        self._restart("reset to n = 0")

    def replace(self, sim, timeout: float | None = 60.0) -> None:
        """Pause, wait, and drive another simulation from now on (history cleared)."""
        self.pause(wait=True, timeout=timeout)
        self.sim = sim
        self._restart("")

    def _restart(self, message: str) -> None:
        """History and rates from zero, state idle."""
        self.history.clear()
        self._totals = [0, 0.0, 0.0]  # cell updates, kernel seconds, wall seconds (since reset)
        self._first: tuple | None = None  # the first sweep's (updates, seconds, wall), kept apart
        self._set_state("idle", message)

    def close(self, timeout: float | None = 60.0) -> None:
        """Stop the run, end the worker thread and drop the simulation and the listeners (idempotent).

        The run stops after the sweep in progress; if that takes longer than
        ``timeout`` the thread ends after it, without waiting here.
        """
        if self.closed:
            return
        with self._lock:
            self.closed = True
        self._stop.set()
        finished = self.wait(timeout)
        self._executor.shutdown(wait=finished, cancel_futures=True)
        self._future = None
        for where in (self._start_listeners, self._sweep_listeners, self._state_listeners):
            where.clear()
        self.sim = None
        self.history.clear()
        self.state, self.message = "closed", ""

    # --------------------------------------------------------------- worker
    def _work(self, steps: int | None) -> None:
        sim = self.sim
        try:
            self._call(self._start_listeners, sim)
            if not getattr(sim, "_compiled", True):
                self._set_state("compiling", f"compiling the {sim.backend_name} kernels for NO={sim.order} "
                                "(once per order, cached on disk) ...")
            self._set_state("running", "")
            last = {"done": 0, "seconds": 0.0, "wall": time.perf_counter()}
            probe = LoadProbe().start()

            def callback(s, stats):
                now = time.perf_counter()
                busy = probe.stop()
                probe.start()
                d_steps = stats.steps - last["done"]
                d_sec = stats.seconds - last["seconds"]
                sweep = (d_steps * s.cells, d_sec, now - last["wall"])
                if self._first is None:
                    self._first = sweep
                else:
                    self._totals = [a + b for a, b in zip(self._totals, sweep, strict=True)]
                totals = self._totals if self._totals[1] > 0 else list(self._first)
                # listeners run after ``wall`` is taken: their time counts in the next sweep's wall time
                last.update(done=stats.steps, seconds=stats.seconds, wall=now)
                rec = SweepRecord(
                    time_step=s.time_step, steps=d_steps,
                    current=d_steps * s.cells / d_sec / 1e9 if d_sec > 0 else 0.0,
                    average=totals[0] / totals[1] / 1e9 if totals[1] > 0 else 0.0,
                    wall=totals[0] / totals[2] / 1e9 if totals[2] > 0 else 0.0,
                    seconds=d_sec, busy=busy,
                )
                self.history.append(rec)
                if len(self.history) > 2 * self.HISTORY_KEEP:
                    del self.history[: -self.HISTORY_KEEP]
                if self.state != "running":
                    self._set_state("running", "")
                self._call(self._sweep_listeners, s, rec)

            from diamondlab.engine.run.simulation import SourceTimingWarning

            with warnings.catch_warnings():  # the lab runs on until paused: the traces show the sources
                warnings.simplefilter("ignore", SourceTimingWarning)
                if steps:
                    sim.run(int(steps), callback=callback, callback_every=self._report_every,
                            stop_event=self._stop)
                while not steps and not self._stop.is_set():
                    last.update(done=0, seconds=0.0)  # each chunk's stats count from its own start
                    sim.run(self.CHUNK_SWEEPS * sim.nt, callback=callback, callback_every=self._report_every,
                            stop_event=self._stop)
            stopped, finish = self._stop.is_set(), self._finish
            self._finish = ""
            if finish:
                self._set_state("done", finish)
            else:
                self._set_state("paused" if stopped else "done",
                                f"{'paused' if stopped else 'done'} at step {sim.time_step}")
        except Exception as err:  # noqa: BLE001 - shown in the widget, never a traceback
            self._set_state("error", f"{type(err).__name__}: {err}")
