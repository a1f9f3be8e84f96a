"""Stop signals: Ctrl-C (SIGINT) and SIGTERM end a run at a consistent level, never in a write.

Contract
--------
:func:`deferred_interrupts` holds SIGINT and SIGTERM while a block runs (a
sweep with its bookkeeping, a file being written) and raises
:class:`KeyboardInterrupt` when the block is done, so that a stop never
leaves fields between two time levels or a file half written.  Only the
main thread can receive signals; elsewhere the block runs unchanged.

:func:`held_while_compiling` holds them the same way while Numba compiles
(or the auto-tuner measures): Numba runs Python inside LLVM's C callbacks
(ctypes), where an exception raised by a signal handler is printed
("Exception ignored on calling ctypes callback") and lost, so the run went
on.  A second stop signal within such a block ends the process at once with
status ``128 + signal number`` (no output is being written while compiling).

:func:`terminate_as_interrupt` makes SIGTERM (what batch schedulers and
``timeout`` send) raise :class:`KeyboardInterrupt` like Ctrl-C, for
programs that want one way to stop; the signal that arrived last is kept in
:data:`last_signal` so that an exit status can say which one (``128 +
signal number``).

:func:`record_stop_signals` is the command line's way, from its first line
(:mod:`diamondlab._entry`, before NumPy or Numba is imported) to its end:
SIGINT and SIGTERM are only recorded, never raised where they land (an
import, a C callback, a write), and act at the command's safe points: before
each phase (:func:`raise_if_stopped`), at the run loop's checks (every
:func:`deferred_interrupts` block joins the recording), after the outputs
(:func:`take_stop`).  :func:`stop_signals_recorded` is the same for a block
(``cli.main`` called from Python).  A second stop signal while the recorded
signal waits for a compile ends the process at once; the callbacks
registered with :func:`on_ending_now` (the ``--out`` lock's release) run
first.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading

__all__ = [
    "Held", "deferred_interrupts", "held_while_compiling", "last_signal", "on_ending_now", "raise_if_stopped",
    "record_stop_signals", "stop_pending", "stop_signals_recorded", "take_stop", "terminate_as_interrupt",
]

#: The number of the stop signal received last (``signal.SIGINT`` until another arrives).
last_signal: int = signal.SIGINT

_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _note(signum: int) -> None:
    global last_signal
    last_signal = signum


def _raise_interrupt(signum, frame) -> None:
    _note(signum)
    raise KeyboardInterrupt


@contextlib.contextmanager
def terminate_as_interrupt():
    """Within the block, SIGTERM (and SIGINT) raise ``KeyboardInterrupt``; restore the handlers after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _note(signal.SIGINT)  # a new block: an interrupt with no signal behind it (raised in code) is Ctrl-C's
    previous = {s: signal.signal(s, _raise_interrupt) for s in _STOP_SIGNALS}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


class Held:
    """The stop signals a :func:`deferred_interrupts` block has held so far."""

    def __init__(self):
        self.caught: list[int] = []
        #: Whether a :func:`held_while_compiling` block runs now (a second signal ends the process).
        self.compiling = False

    @property
    def pending(self) -> bool:
        """Whether a stop signal arrived during the block (it raises when the block ends)."""
        return bool(self.caught)

    def record(self, signum, frame) -> None:
        """The signal handler of a block: note the signal, never raise (it may run inside a C callback).

        While compiling, a second stop signal ends the process at once with
        status ``128 + signum``.
        """
        self.caught.append(signum)
        _note(signum)
        if self.compiling and len(self.caught) > 1:
            _end_now(signum)

    def take(self) -> bool:
        """Whether a stop signal is held; it is consumed (the caller stops now)."""
        caught, self.caught[:] = bool(self.caught), []
        return caught


#: What :func:`_end_now` calls before it ends the process (:func:`on_ending_now`).
_ending_now: list = []


@contextlib.contextmanager
def on_ending_now(callback):
    """Within the block, ``callback()`` runs before a second stop signal ends the process at once.

    For what must not outlive the process (the ``--out`` lock); an
    exception it raises is ignored.
    """
    _ending_now.append(callback)
    try:
        yield
    finally:
        _ending_now.remove(callback)


def _end_now(signum: int) -> None:
    """End the process now with status ``128 + signum`` (from a signal handler: no exception to lose)."""
    for callback in reversed(_ending_now):
        with contextlib.suppress(Exception):
            callback()
    with contextlib.suppress(Exception):  # a handler may interrupt a write to these very streams
        sys.stdout.flush()
        sys.stderr.flush()
    with contextlib.suppress(OSError):
        os.write(2, f"diamondlab: stopped by signal {signum} while compiling: ending now\n".encode())
    os._exit(128 + signum)


#: The outermost block holding signals now (inner blocks join it).
_holding: list[Held] = []
#: The recording of :func:`record_stop_signals` (the whole process), if any.
_process: Held | None = None


def record_stop_signals() -> Held:
    """For the rest of the process, record SIGINT and SIGTERM; never raise them where they land.

    The command line's entry point calls this first (:mod:`diamondlab._entry`).
    Every :func:`deferred_interrupts` and :func:`held_while_compiling` block
    joins the recording, so that a run stops at its loop's next check; the
    program asks at its safe points (:func:`raise_if_stopped`,
    :func:`take_stop`).  A SIGINT that the parent ignored (a shell's
    background job) is recorded too: ``kill -INT`` stops the run.  Call it in
    the main thread; a second call returns the same recording.
    """
    global _process
    if _process is None:
        held = Held()
        for s in _STOP_SIGNALS:
            signal.signal(s, held.record)
        _holding.insert(0, held)
        _process = held
    return _process


@contextlib.contextmanager
def stop_signals_recorded():
    """:func:`record_stop_signals` for the block (joined where the process records already); restored after.

    Yields the :class:`Held` recording; never raises at its end (the
    program decides, :func:`take_stop`).  Outside the main thread it
    yields a recording that no signal reaches.
    """
    if threading.current_thread() is not threading.main_thread():
        yield Held()
        return
    if _holding and _holding[0] is _process and all(signal.getsignal(s) == _process.record
                                                    for s in _STOP_SIGNALS):
        # the status says the signal recorded, or Ctrl-C's for an interrupt raised in code
        _note(_process.caught[-1] if _process.caught else signal.SIGINT)
        yield _process
        return
    _note(signal.SIGINT)  # a new recording: nothing of an earlier block's signals carries over
    held = Held()
    previous = {s: signal.signal(s, held.record) for s in _STOP_SIGNALS}
    _holding.insert(0, held)
    try:
        yield held
    finally:
        _holding.remove(held)
        for s, handler in previous.items():
            signal.signal(s, handler)


def _recording() -> Held | None:
    """The outermost recording of this process (main thread only), or None."""
    if _holding and threading.current_thread() is threading.main_thread():
        return _holding[0]
    return None


def stop_pending() -> bool:
    """Whether a stop signal is recorded and not acted on yet (never, outside a recording)."""
    held = _recording()
    return held is not None and held.pending


def take_stop() -> bool:
    """Whether a stop signal was recorded; it is consumed (the caller acts on it: ``128 + last_signal``)."""
    held = _recording()
    return held is not None and held.take()


def raise_if_stopped() -> None:
    """A safe point: raise ``KeyboardInterrupt`` when a stop signal is recorded (and consume it).

    Also where an error might hide a stop: an ``ImportError`` caught while a
    signal waits is reported as the stop, not as a missing package.
    """
    if take_stop():
        raise KeyboardInterrupt


@contextlib.contextmanager
def deferred_interrupts():
    """Hold SIGINT and SIGTERM until the block is done, then raise ``KeyboardInterrupt``.

    Yields a :class:`Held` whose ``pending`` says whether a signal is held,
    so that a loop can stop at a point of its choosing (MPI ranks: a point
    they agree on) by raising ``KeyboardInterrupt`` itself.  A block inside
    another joins it: the signal is raised when the outermost block ends.
    A SIGTERM is held only where it would have become an interrupt anyway
    (inside :func:`terminate_as_interrupt`); elsewhere its handler (the
    default ends the process) is left alone.

    >>> with deferred_interrupts() as held:
    ...     x = 1
    >>> x, held.pending
    (1, False)
    """
    if threading.current_thread() is not threading.main_thread():
        yield Held()
        return
    if _holding:
        yield _holding[0]
        return
    held = Held()
    previous = {}
    for s in _STOP_SIGNALS:
        if s == signal.SIGINT or signal.getsignal(s) is _raise_interrupt:
            previous[s] = signal.signal(s, held.record)
    _holding.append(held)
    try:
        yield held
    finally:
        _holding.pop()
        for s, handler in previous.items():
            signal.signal(s, handler)
        if held.caught:
            _note(held.caught[-1])
            raise KeyboardInterrupt


@contextlib.contextmanager
def held_while_compiling():
    """:func:`deferred_interrupts` for a block that compiles kernels (or tunes them, or imports Numba).

    Numba calls back into Python from LLVM (ctypes callbacks), where a
    ``KeyboardInterrupt`` raised by a signal handler would be printed and
    lost; here the signal is only recorded and raised when the outermost
    block ends (inside a :func:`deferred_interrupts` block it joins that
    block, whose owner decides where to stop).  A second stop signal while
    this block runs ends the process at once with status ``128 + signal
    number``: compiling can take a minute and writes nothing of the run's.

    >>> with held_while_compiling() as held:
    ...     held.compiling
    True
    """
    with deferred_interrupts() as held:
        before, held.compiling = held.compiling, True
        try:
            yield held
        finally:
            held.compiling = before
