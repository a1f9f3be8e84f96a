"""Stop signals: Ctrl-C (SIGINT) and SIGTERM end a run at a consistent level, never in a write.

Contract
--------
:func:`deferred_interrupts` holds SIGINT and SIGTERM while a block runs (a
sweep with its bookkeeping, a file being written) and raises
:class:`KeyboardInterrupt` when the block is done, so that a stop never
leaves fields between two time levels or a file half written.  Only the
main thread can receive signals; elsewhere the block runs unchanged.

:func:`terminate_as_interrupt` makes SIGTERM (what batch schedulers and
``timeout`` send) raise :class:`KeyboardInterrupt` like Ctrl-C, for
programs such as the command line that want one way to stop; it records the
signal that arrived last in :data:`last_signal` so that the exit status can
say which one (``128 + signal number``).
"""

from __future__ import annotations

import contextlib
import signal
import threading

__all__ = ["Held", "deferred_interrupts", "last_signal", "terminate_as_interrupt"]

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

    @property
    def pending(self) -> bool:
        """Whether a stop signal arrived during the block (it raises when the block ends)."""
        return bool(self.caught)


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
            previous[s] = signal.signal(s, lambda signum, frame: held.caught.append(signum))
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
