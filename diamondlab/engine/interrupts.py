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
programs such as the command line that want one way to stop; it records the
signal that arrived last in :data:`last_signal` so that the exit status can
say which one (``128 + signal number``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading

from diamondlab.files import release_held_locks

__all__ = ["Held", "deferred_interrupts", "held_while_compiling", "last_signal", "terminate_as_interrupt"]

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
        if self.compiling and len(self.caught) > 1:
            _end_now(signum)


def _end_now(signum: int) -> None:
    """End the process now with status ``128 + signum`` (from a signal handler: no exception to lose)."""
    with contextlib.suppress(Exception):  # a handler may interrupt a write to these very streams
        sys.stdout.flush()
        sys.stderr.flush()
    with contextlib.suppress(OSError):
        os.write(2, f"diamondlab: stopped by signal {signum} while compiling: ending now\n".encode())
    with contextlib.suppress(Exception):  # the finally blocks that would release them do not run
        release_held_locks()
    os._exit(128 + signum)


#: The outermost block holding signals now (inner blocks join it).
_holding: list[Held] = []


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
