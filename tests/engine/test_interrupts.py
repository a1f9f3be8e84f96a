import os
import signal

import pytest

from diamondlab.engine import interrupts
from diamondlab.engine.interrupts import deferred_interrupts, terminate_as_interrupt


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_stop_signal_is_held_until_the_block_is_done(signum):
    reached = []

    def sweep_and_book():
        with terminate_as_interrupt(), deferred_interrupts():
            os.kill(os.getpid(), signum)
            reached.append("booked after the signal")

    with pytest.raises(KeyboardInterrupt):
        sweep_and_book()
    assert reached == ["booked after the signal"]
    assert interrupts.last_signal == signum


def test_handlers_are_restored():
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    with terminate_as_interrupt(), deferred_interrupts():
        pass
    assert {s: signal.getsignal(s) for s in before} == before


def test_sigterm_outside_the_command_line_keeps_its_handler():
    with deferred_interrupts():
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
