import json
import os
import signal

import pytest

from diamondlab.engine.run import interrupts
from diamondlab.engine.run.interrupts import deferred_interrupts, terminate_as_interrupt


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


def _in_a_ctypes_callback(action) -> None:
    """Run ``action()`` inside C (libc's ``qsort`` calling back into Python), as Numba's LLVM hooks run."""
    import ctypes

    def call(a, b) -> int:
        action()
        return 0

    compare = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)(call)
    values = (ctypes.c_int * 2)()
    ctypes.CDLL(None).qsort(values, 2, ctypes.sizeof(ctypes.c_int), compare)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_stop_signal_inside_a_compilers_callback_is_raised_after_the_compiling(signum):
    """Issue 27: a KeyboardInterrupt raised in a ctypes callback is printed and lost; held, it is not."""
    import time

    from diamondlab.engine.run.interrupts import held_while_compiling

    reached = []

    def compile_kernels():
        with terminate_as_interrupt(), held_while_compiling():
            _in_a_ctypes_callback(lambda: (os.kill(os.getpid(), signum), time.sleep(0.05)))
            reached.append("compiled after the signal")

    with pytest.raises(KeyboardInterrupt):
        compile_kernels()
    assert reached == ["compiled after the signal"] and interrupts.last_signal == signum


# the command line with a compile phase made long: Python inside C callbacks (as Numba's), then the real one
_SLOW_COMPILE = """
import ctypes, os, pathlib, sys, time
from diamondlab import cli
from diamondlab.engine.backends.cpu import CPUBackend

compile_now = CPUBackend.compile
CMP = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
compare = CMP(lambda a, b: time.sleep(0.002) or 0)


def slow_compile(self):
    pathlib.Path("compiling").touch()
    values = (ctypes.c_int * 8)()
    end = time.monotonic() + float(os.environ["SLOW_COMPILE_SECONDS"])
    while time.monotonic() < end:
        ctypes.CDLL(None).qsort(values, 8, ctypes.sizeof(ctypes.c_int), compare)
    compile_now(self)


CPUBackend.compile = slow_compile
sys.exit(cli.main(sys.argv[1:]))
"""


def _run_and_signal(tmp_path, signals, seconds: float):
    """``diamondlab run`` (fresh cache), ``signals`` sent while compiling: (status, err, out, seconds)."""
    import subprocess
    import sys
    import time

    env = dict(os.environ, DIAMONDLAB_CACHE=str(tmp_path / "cache"), SLOW_COMPILE_SECONDS=str(seconds))
    argv = ["run", "--shape", "24", "--backend", "cpu", "--steps", "40", "--receiver", "12,12,12",
            "--save", "run.npz", "--out", "out", "--no-progress"]  # fmt: skip
    proc = subprocess.Popen([sys.executable, "-c", _SLOW_COMPILE, *argv], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    deadline = time.monotonic() + 240
    while not (tmp_path / "compiling").exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.02)
    start = time.monotonic()
    for signum in signals:
        time.sleep(0.2)
        proc.send_signal(signum)
    out, err = proc.communicate(timeout=240)
    return proc.returncode, err, out, time.monotonic() - start


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_stop_signal_while_kernels_compile_ends_the_run_with_its_status(tmp_path, signum):
    """Issue 27: SIGINT/SIGTERM during compiling ends the command line run with 130/143 and whole outputs
    (the run's state at step 0), where the signal used to be printed as ignored and the run went on."""
    from diamondlab.engine.outputs.io import load_run

    code, err, out, _ = _run_and_signal(tmp_path, [signum], seconds=1.5)
    assert code == 128 + signum, (out, err)
    assert "Exception ignored" not in err and "Traceback" not in err, err
    assert "interrupted at step 0" in out
    assert [p.name for p in tmp_path.rglob(".*")] == []  # no temporary file
    assert load_run(tmp_path / "run.npz")["steps"] == 0
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["interrupted"] and manifest["last_step"] == 0


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_second_stop_signal_while_compiling_ends_the_process_at_once(tmp_path, signum):
    code, err, out, seconds = _run_and_signal(tmp_path, [signum, signum], seconds=60)
    assert code == 128 + signum and seconds < 30, (out, err)
    assert "Exception ignored" not in err and "Traceback" not in err, err
    assert "while compiling: ending now" in err
    assert not (tmp_path / "run.npz").exists() and [p.name for p in tmp_path.rglob(".*")] == []


# ------------------------------------------------ issue 27: a stop signal before the command line's handlers


def _entry_process(tmp_path, hook, *argv):
    """``python -m diamondlab`` waiting at its entry point's test hook; SIGINT ignored by the parent, as a
    shell's background job has it (Python then leaves SIGINT ignored: the signal used to be lost)."""
    import subprocess
    import sys

    env = dict(os.environ, DIAMONDLAB_ENTRY_HOOK=str(hook), PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.Popen(
        [sys.executable, "-m", "diamondlab", *argv], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )  # fmt: skip


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_stop_signal_while_python_starts_ends_the_run_with_its_status(tmp_path, signum):
    """Issue 27 (the hostile run): a SIGTERM before ``cli.main`` set its handlers killed the process (status
    -15, no message) and a SIGINT was lost (status 0); the entry point records them before NumPy loads."""
    import time

    hook = tmp_path / "entered"
    proc = _entry_process(tmp_path, hook, "run", "--shape", "16", "--steps", "8", "--backend", "cpu",
                          "--receiver", "3,3,3", "--save", "run.npz", "--out", "out", "--no-progress")
    deadline = time.monotonic() + 60
    while not hook.exists():  # the handlers are set; NumPy, Numba and the command line are not loaded yet
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.01)
    proc.send_signal(signum)
    time.sleep(0.05)
    hook.unlink()  # the imports go on
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signum, (out, err)
    assert "interrupted before the run started: nothing was written" in err and "Traceback" not in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no output, no lock, no temporary file


def test_the_entry_point_records_stop_signals_before_anything_heavy_is_imported():
    """The window where a stop signal acts as the default would: Python's start and ``import diamondlab``."""
    import subprocess
    import sys

    code = ("import signal, sys; from diamondlab import _entry; from diamondlab.engine.run import interrupts;"
            "held = interrupts.record_stop_signals();"
            "heavy = [m for m in ('numpy', 'numba', 'diamondlab.cli') if m in sys.modules];"
            "assert signal.getsignal(signal.SIGTERM) == held.record, 'no handler'; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stdout + out.stderr
    tomllib = pytest.importorskip("tomllib")
    from pathlib import Path

    project = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    assert project["project"]["scripts"]["diamondlab"] == "diamondlab._entry:main"


def test_a_stop_recorded_before_a_run_acts_before_the_compiling(monkeypatch):
    """A stop recorded before ``Simulation.run`` (the command line's imports) raises before compiling,
    which may take a minute, not after it."""
    from diamondlab.engine.run.interrupts import stop_signals_recorded, take_stop
    from diamondlab.engine.run.simulation import Simulation

    sim = Simulation(shape=(8, 8, 8), backend="cpu", size=1, nt=2)
    compiled = []
    monkeypatch.setattr(sim.backend, "compile", lambda: compiled.append(True))
    with stop_signals_recorded():
        os.kill(os.getpid(), signal.SIGTERM)
        with pytest.raises(KeyboardInterrupt):
            sim.run(4)
        assert take_stop() and not take_stop()  # the command line consumes it once
    assert compiled == [] and sim.time_step == 0 and interrupts.last_signal == signal.SIGTERM


def test_an_import_error_while_a_stop_waits_is_the_stop_not_a_missing_package(tmp_path, monkeypatch):
    """Issue 27: an interrupt inside an import was reported as "VTK snapshots need pyvista" (status 2)."""
    import sys

    from diamondlab.engine.backends import get_backend
    from diamondlab.engine.outputs.snapshots import Snapshots
    from diamondlab.engine.run.interrupts import stop_signals_recorded

    monkeypatch.setitem(sys.modules, "pyvista", None)  # import pyvista raises ImportError
    with pytest.raises(RuntimeError, match="need pyvista"):
        Snapshots(1, tmp_path, ("vti",))
    monkeypatch.setitem(sys.modules, "diamondlab.engine.backends.cpu", None)
    for attempt in (lambda: Snapshots(1, tmp_path, ("vti",)), lambda: get_backend("cpu")):
        with stop_signals_recorded():
            os.kill(os.getpid(), signal.SIGINT)
            with pytest.raises(KeyboardInterrupt):
                attempt()


def test_a_stop_after_the_commands_last_safe_point_is_not_lost(monkeypatch):
    """Recorded, never raised where it lands: a stop after the outputs still ends with 128 + signal."""
    from diamondlab import cli

    monkeypatch.setattr(cli, "_run", lambda args, comm: os.kill(os.getpid(), signal.SIGTERM) or cli.EXIT_OK)
    assert cli.main(["run", "--shape", "8"]) == 128 + signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL  # the handlers are restored


def test_the_entry_point_ends_with_the_stop_signals_ignored(tmp_path):
    """Python's shutdown puts back the default action of a signal with a Python handler: a SIGTERM during
    it killed a finished run (the hostile run: status -15 at 1 s, a warm cache).  Ignored from the end on."""
    import subprocess
    import sys

    code = ("import signal, sys; from diamondlab import _entry; sys.argv = ['diamondlab', 'cache', 'info'];"
            "status = _entry.main(); print(status, [signal.getsignal(s) == signal.SIG_IGN"
            " for s in (signal.SIGINT, signal.SIGTERM)])")
    env = dict(os.environ, DIAMONDLAB_CACHE=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0 and out.stdout.strip().splitlines()[-1] == "0 [True, True]", out
