"""The command line's entry point: stop signals recorded before anything heavy is imported.

``diamondlab`` (the console script) and ``python -m diamondlab`` start here.
Importing NumPy, Numba and the kernels takes from a fraction of a second to
several on a loaded machine; a SIGINT or SIGTERM then would end the process
with nothing written (SIGTERM's default), be lost (a SIGINT that the parent
ignored) or surface as a ``KeyboardInterrupt`` inside an import (reported as
a missing package).  So the first thing done, with nothing of NumPy loaded
(``import diamondlab`` is light), is :func:`~diamondlab.engine.run.interrupts.record_stop_signals`:
from then on a stop signal is recorded and the command acts on it at its
next safe point (status 130 or 143, :data:`diamondlab.cli.EXIT_STATUSES`).
"""

from __future__ import annotations

import os
import signal
import sys


def main() -> int:
    """Record stop signals, then run :func:`diamondlab.cli.main`; return its exit status.

    At the end the stop signals are ignored: Python's shutdown puts the
    default action back for signals that have a Python handler, so a SIGTERM
    then (NumPy's and Numba's teardown takes a while) would kill a process
    whose work is done; one recorded before still sets the status.
    """
    from diamondlab.engine.run import interrupts

    interrupts.record_stop_signals()
    status = None
    try:
        hook = os.environ.get("DIAMONDLAB_ENTRY_HOOK")
        if hook:  # tests: say that the signals are recorded, then wait as a slow import would
            _wait_for_test(hook)
        from diamondlab.cli import main as cli_main

        status = cli_main()
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, signal.SIG_IGN)
    if status == 0 and interrupts.take_stop():  # came after the command's last check
        status = 128 + int(interrupts.last_signal)
    return status


def _wait_for_test(path: str) -> None:
    """Touch ``path``, then wait until it is removed (at most a minute): a test's deterministic window."""
    import time

    open(path, "w").close()
    end = time.monotonic() + 60
    while os.path.exists(path) and time.monotonic() < end:
        time.sleep(0.01)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
