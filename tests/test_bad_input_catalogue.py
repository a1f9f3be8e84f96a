"""A catalogue of bad and edge inputs, through the command line and the API.

Each row is one input a user can give.  Each must be refused with a message
that names the option or parameter and what is allowed, before any work
(no kernel compiles or runs; rows marked ``ALLOCATES`` are refused after
the fields exist but before anything runs), and the command line must
never print a traceback.
"""

import numpy as np
import pytest

from diamondlab.cli import main
from diamondlab.engine.backends.cpu import CPUBackend
from diamondlab.engine.run.simulation import NonFiniteFieldError, Simulation, SourceTimingWarning
from diamondlab.sources import Receiver, Source

ALLOCATES = "allocates"  # refused after the backend exists, before anything runs


def _rows(rows):
    """``pytest.param`` per catalogue row, its first item the id."""
    return [pytest.param(*row[1:], id=row[0]) for row in rows]


@pytest.fixture
def no_work(monkeypatch):
    """Fail on any kernel work; count the backends that were fully built."""
    built = []
    real_init = CPUBackend.__init__

    def init(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        built.append(self)

    def work(self, *args, **kwargs):
        raise AssertionError("kernel work started before the input was refused")

    monkeypatch.setattr(CPUBackend, "__init__", init)
    for name in ("compile", "sweep", "step"):
        monkeypatch.setattr(CPUBackend, name, work)
    return built


def _record(tmp_path, **changes):
    """A small run record (written by the real engine), optionally with keys changed or removed."""
    path = tmp_path / "rec.npz"
    if not path.exists():
        assert main(["run", "--shape", "16", "--steps", "2", "--backend", "cpu", "--no-progress", "--nt", "2",
                     "--save", str(path)]) == 0  # fmt: skip
    with np.load(path) as data:
        record = dict(data)
    for key, value in changes.items():
        if value is None:
            record.pop(key)
        else:
            record[key] = value
    out = tmp_path / "changed.npz"
    np.savez(out, **record)
    return out


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Paths the CLI rows refer to with ``{name}`` placeholders (made before any kernel is blocked)."""
    tmp_path = tmp_path_factory.mktemp("inputs")
    (tmp_path / "afile").write_text("not a folder")
    (tmp_path / "adir").mkdir()
    (tmp_path / "stale").mkdir()
    (tmp_path / "stale" / "snapshot_0000000.npz").write_bytes(b"")
    np.save(tmp_path / "small_model.npy", np.ones((4, 4, 4)))
    np.save(tmp_path / "model16.npy", np.ones((16, 16, 16)))
    (tmp_path / "corrupt.npz").write_bytes(b"PK\x03\x04 this is not a zip archive")
    good = _record(tmp_path)
    (tmp_path / "truncated.npz").write_bytes(good.read_bytes()[:5000])
    np.savez(tmp_path / "other.npz", a=np.zeros(3))
    return {
        "afile": tmp_path / "afile", "adir": tmp_path / "adir", "stale": tmp_path / "stale",
        "small_model": tmp_path / "small_model.npy", "model16": tmp_path / "model16.npy",
        "corrupt": tmp_path / "corrupt.npz", "truncated": tmp_path / "truncated.npz",
        "other": tmp_path / "other.npz", "record": tmp_path / "rec.npz",
    }  # fmt: skip


RUN = ["run", "--shape", "16", "--backend", "cpu", "--no-progress", "--steps", "4"]
SRC = ["--source", "8,8,8"]

# (id, argv, text the message must contain, stage)
CLI_ROWS = [
    ("odd order", [*RUN, "--order", "3"], "order (NO) must be one of (2, 4, 6, 8)", None),
    ("order 10", [*RUN, "--order", "10"], "order (NO) must be one of", None),
    ("order word", [*RUN, "--order", "two"], "argument --order/--no: invalid int value", None),
    ("courant above limit", [*RUN, "--courant", "0.9"], "above the stability limit", None),
    ("courant zero", [*RUN, "--courant", "0"], "argument --courant: must be a finite number > 0", None),
    ("courant nan", [*RUN, "--courant", "nan"], "argument --courant: must be a finite number > 0", None),
    ("shape zero", [*RUN, "--shape", "0"], "argument --shape: needs three positive sizes", None),
    ("shape two sizes", [*RUN, "--shape", "12x12"], "argument --shape: needs three positive sizes", None),
    ("shape word", [*RUN, "--shape", "big"], "argument --shape: must look like 128x128x128", None),
    ("shape fraction", [*RUN, "--shape", "32.5"], "argument --shape: must look like", None),
    ("shape beyond memory", [*RUN, "--shape", "4000"], "needs about 477.6 GiB of host memory", None),
    ("model beyond memory", [*RUN, "--shape", "4000", "--velocity", "layered"],
     "shape (4000, 4000, 4000) needs about 476.8 GiB of host memory", None),
    ("grid below a tile", [*RUN, "--shape", "3", "--dts", "2"], "grid too small for one tile", None),
    ("dts zero", [*RUN, "--dts", "0"], "argument --dts: must be >= 1", None),
    ("dts fraction", [*RUN, "--dts", "2.5"], "argument --dts: must be a whole number >= 1", None),
    ("nt zero", [*RUN, "--nt", "0"], "argument --nt: must be >= 1", None),
    ("nt word", [*RUN, "--nt", "tall"], "argument --nt: must be a whole number", None),
    ("steps negative", [*RUN, "--steps", "-1"], "argument --steps: must be >= 0", None),
    ("steps fraction", [*RUN, "--steps", "2.5"], "argument --steps: must be a whole number", None),
    ("velocity inf", [*RUN, "--velocity", "inf"], "velocity (c) must be a finite number > 0", None),
    ("velocity nan", [*RUN, "--velocity", "nan"], "velocity (c) must be a finite number > 0", None),
    ("velocity zero", [*RUN, "--velocity", "0"], "velocity (c) must be a finite number > 0", None),
    ("velocity negative", [*RUN, "--velocity=-3"], "velocity (c) must be a finite number > 0", None),
    ("velocity word", [*RUN, "--velocity", "fast"], "--velocity must be a number, FILE.npy", None),
    ("velocity missing file", [*RUN, "--velocity", "{adir}/v.npy"], "--velocity must be a number", None),
    ("velocity model shape", [*RUN, "--velocity", "{small_model}"], "must have the grid's shape", None),
    ("spacing zero", [*RUN, "--spacing", "0"], "argument --spacing: must be a finite number > 0", None),
    ("spacing inf", [*RUN, "--spacing", "inf"], "argument --spacing: must be a finite number > 0", None),
    ("pulse width zero", [*RUN, "--pulse-width", "0"], "argument --pulse-width: must be a finite", None),
    ("pulse width neg", [*RUN, "--pulse-width=-2"], "argument --pulse-width: must be a finite", None),
    ("frequency zero", [*RUN, *SRC, "--frequency", "0"], "argument --frequency: must be a finite", None),
    ("frequency tiny", [*RUN, *SRC, "--frequency", "1e-9"], "peaks at t = 1.5e+09", ALLOCATES),
    ("README's old example", [*RUN, "--shape", "32", "--velocity", "layered", "--source", "16,16,5",
                              "--frequency", "0.02"], "run at least", ALLOCATES),  # fmt: skip
    ("frequency aliases", [*RUN, *SRC, "--frequency", "1"], "aliases below 2", None),
    ("source two numbers", [*RUN, "--source", "1,2"], "argument --source: a position needs three", None),
    ("source words", [*RUN, "--source", "a,b,c"], "argument --source: a position must look like X,Y,Z", None),
    ("source negative", [*RUN, "--source", "-1,8,8"], "source 0 at (-1.0, 8.0, 8.0) lies outside", None),
    ("source negative =", [*RUN, "--source=-1,8,8"], "lies outside the grid (physical units: 0 <= x", None),
    ("source outside", [*RUN, "--source", "40,1,1"], "source 0 at (40.0, 1.0, 1.0) lies outside", None),
    ("receiver outside", [*RUN, "--receiver", "1,1,100"], "receiver 0 at (1.0, 1.0, 100.0) lies", None),
    ("receiver nan", [*RUN, "--receiver", "1,nan,1"], "position must be three finite numbers", None),
    ("sponge negative", [*RUN, "--sponge=-1"], "argument --sponge: must be >= 0", None),
    ("sponge too wide", [*RUN, *SRC, "--sponge", "8"], "sponge width 8 leaves no interior", None),
    ("snapshot every 0", [*RUN, "--snapshot-every", "0"], "argument --snapshot-every: must be >= 1", None),
    ("snapshot format", [*RUN, "--snapshot-every", "2", "--snapshot-format", "png"],
     "snapshot formats must be among ('npz', 'vti')", None),  # fmt: skip
    ("initial misspelt", [*RUN, "--initial", "gausian"], "--initial gausian: no such", None),
    ("initial corrupt", [*RUN, "--initial", "{corrupt}"], "not a run record written by --save", None),
    ("initial truncated", [*RUN, "--initial", "{truncated}"], "not a run record written by --save", None),
    ("initial other npz", [*RUN, "--initial", "{other}"], "not a run record written by --save / save_run "
     "(missing ['final_prev'", None),  # fmt: skip
    ("initial npy", [*RUN, "--initial", "{model16}"], "a single array of shape (16, 16, 16)", None),
    ("initial folder", [*RUN, "--initial", "{adir}"], "not a run record written by --save", None),
    ("continue other shape", ["run", "--initial", "{record}", "--shape", "20"], "conflicts with --initial",
     None),  # fmt: skip
    ("continue with source", ["run", "--initial", "{record}", *SRC], "--source cannot be given with", None),
    ("continue with velocity", ["run", "--initial", "{record}", "--velocity", "2"], "--velocity cannot be",
     None),  # fmt: skip
    ("continue with width", ["run", "--initial", "{record}", "--pulse-width", "3"], "--pulse-width cannot",
     None),  # fmt: skip
    ("save in /proc", [*RUN, "--save", "/proc/x.npz"], "--save /proc/x.npz: cannot write in /proc", None),
    ("save under a file", [*RUN, "--save", "{afile}/run.npz"], "is a file, not a folder", None),
    ("save to a folder", [*RUN, "--save", "{adir}"], "is a folder; give a file name", None),
    ("out is a file", [*RUN, "--snapshot-every", "2", "--out", "{afile}"], "is a file, not a folder", None),
    ("out in /proc", [*RUN, "--receiver", "1,1,1", "--out", "/proc/out"], "--out /proc/out: cannot", None),
    ("out holds a run", [*RUN, "--snapshot-every", "2", "--out", "{stale}"],
     "holds the outputs of an earlier run (1 files: snapshot_0000000.npz)", None),  # fmt: skip
    ("algorithm", [*RUN, "--algorithm", "wavefront"], "argument --algorithm: invalid choice", None),
    ("backend", [*RUN, "--backend", "tpu"], "argument --backend: invalid choice", None),
    ("backend option form", [*RUN, "--backend-option", "band"], "expected KEY=VALUE (e.g. band=32)", None),
    ("backend option cpu", [*RUN, "--backend-option", "band=2"], "do not apply to backend 'cpu'", None),
    ("bench steps 0", ["bench", "--shape", "16", "--steps", "0"], "argument --steps: must be >= 1", None),
    ("bench repeats 0", ["bench", "--shape", "16", "--repeats", "0"], "argument --repeats: must be >= 1",
     None),  # fmt: skip
    ("bench odd order", ["bench", "--shape", "16", "--orders", "3", "--backend", "cpu"],
     "argument --orders: invalid choice: 3 (choose from 2, 4, 6, 8)", None),  # fmt: skip
    ("bench sponge", ["bench", "--shape", "16", "--sponge=-2"], "argument --sponge: must be >= 0", None),
    ("no command", [], "the following arguments are required: command", None),
]


@pytest.mark.parametrize(("argv", "text", "stage"), _rows(CLI_ROWS))
def test_cli_refuses_bad_input_clearly_before_any_work(
    argv, text, stage, files, tmp_path, monkeypatch, capsys, no_work
):
    monkeypatch.chdir(tmp_path)
    no_work.clear()
    argv = [a.format(**files) for a in argv]
    try:
        code = main(argv)
    except SystemExit as exit_:  # argparse's own errors
        code = exit_.code
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith(("diamondlab: error:", "usage:")), err
    if stage is None:
        assert no_work == [], "the fields were allocated before the input was refused"
    assert not list(tmp_path.rglob(".*.tmp")) and not (tmp_path / "diamondlab-out").exists()


SHAPE = (16, 16, 16)

# (id, keyword arguments of Simulation, error, text of the message)
API_ROWS = [
    ("shape fraction", {"shape": (32.5, 32, 32)}, ValueError, "shape must be three positive ints"),
    ("shape zero", {"shape": (0, 16, 16)}, ValueError, "shape must be three positive ints"),
    ("shape two", {"shape": (16, 16)}, ValueError, "shape must be three positive ints"),
    ("shape word", {"shape": "big"}, TypeError, "shape must be three ints"),
    ("size fraction", {"size": 2.5}, ValueError, "size (DTS) must be an int >= 1 or 'auto'"),
    ("size zero", {"size": 0}, ValueError, "size (DTS) must be an int >= 1"),
    ("size bool", {"size": True}, ValueError, "size (DTS) must be an int >= 1"),
    ("nt fraction", {"nt": 4.5}, ValueError, "nt (Nt, torre height) must be an int >= 1 or 'auto'"),
    ("nt word", {"nt": "tall"}, ValueError, "nt (Nt, torre height) must be an int >= 1"),
    ("velocity word", {"velocity": "fast"}, TypeError, "velocity must be a number"),
    ("velocity inf", {"velocity": float("inf")}, ValueError, "velocity (c) must be a finite number > 0"),
    ("velocity zero", {"velocity": 0.0}, ValueError, "velocity (c) must be a finite number > 0"),
    ("model zeros", {"velocity": np.zeros(SHAPE)}, ValueError, "finite and > 0 everywhere; 4096 cells"),
    ("model shape", {"velocity": np.ones((2, 2, 2))}, ValueError, "velocity model must have the grid"),
    ("source tuple", {"sources": [(8, 8, 8)]}, TypeError, "sources[0] must be a diamondlab.sources.Source"),
    ("source alone", {"sources": Source((8, 8, 8))}, TypeError, "sources must be a list"),
    ("receivers flat", {"receivers": (1, 2, 3)}, TypeError, "receivers[0] must be a Receiver or an (x, y"),
    ("receiver two", {"receivers": [(1, 2)]}, TypeError, "receivers[0] must be a Receiver or an (x, y, z)"),
    ("receiver outside", {"receivers": [(100, 1, 1)]}, ValueError, "receiver 0 at (100.0, 1.0, 1.0) lies"),
    ("sponge negative", {"sponge": -1}, ValueError, "sponge must be a width in cells >= 0"),
    ("sponge fraction", {"sponge": 2.5}, ValueError, "sponge must be a width in cells >= 0"),
    ("sponge wide", {"sponge": 8}, ValueError, "sponge width 8 leaves no interior"),
    ("pulse width zero", {"pulse_width": 0}, ValueError, "pulse_width must be a finite width in cells > 0"),
    ("pulse width nan", {"pulse_width": float("nan")}, ValueError, "pulse_width must be a finite width"),
    ("spacing zero", {"spacing": 0.0}, ValueError, "spacing (h) must be a finite number > 0"),
    ("spacing inf", {"spacing": float("inf")}, ValueError, "spacing (h) must be a finite number > 0"),
    ("courant", {"courant": 0.9}, ValueError, "above the stability limit"),
    ("dt negative", {"dt": -1.0}, ValueError, "dt must be > 0"),
    ("courant and dt", {"courant": 0.2, "dt": 0.1}, ValueError, "give either courant or dt, not both"),
    ("order", {"order": 3}, ValueError, "order (NO) must be one of (2, 4, 6, 8)"),
    ("algorithm", {"algorithm": "wavefront"}, ValueError, "algorithm must be one of"),
    ("backend", {"backend": "tpu"}, ValueError, "backend must be one of"),
    ("initial word", {"initial": "noise"}, ValueError, "initial must be 'gaussian', 'zero', an array"),
    ("initial shape", {"initial": np.zeros((3, 3, 3))}, ValueError, "initial must have shape (16, 16, 16)"),
    ("initial ints", {"initial": np.zeros(SHAPE, dtype=int)}, TypeError, "real floating array"),
    ("initial nan", {"initial": np.full(SHAPE, np.nan)}, ValueError, "initial contains NaN or infinite"),
    ("initial beyond float32", {"initial": np.full(SHAPE, 1e300)}, ValueError, "NaN or infinite values"),
    ("step negative", {"step": -1}, ValueError, "step (the initial time level) must be an int >= 0"),
    ("options list", {"backend_options": [1]}, TypeError, "backend_options must be a dict"),
    ("options cpu", {"backend_options": {"band": 2}}, ValueError, "do not apply to backend 'cpu'"),
    ("too much memory", {"shape": (4000, 4000, 4000)}, MemoryError,
     "shape (4000, 4000, 4000) needs about 477.6 GiB of host memory"),
]


@pytest.mark.parametrize(("kwargs", "error", "text"), _rows(API_ROWS))
def test_api_refuses_bad_input_clearly_before_any_work(kwargs, error, text, no_work):
    kwargs = {"shape": SHAPE, "backend": "cpu", **kwargs}
    with pytest.raises(error) as raised:
        Simulation(**kwargs)
    assert text in str(raised.value)
    assert no_work == []


# (id, call, error, text)
OTHER_ROWS = [
    ("frequency zero", lambda: Source((1, 2, 3), "ricker", frequency=0), ValueError,
     "frequency must be a finite number > 0"),
    ("frequency nan", lambda: Source((1, 2, 3), frequency=float("nan")), ValueError, "frequency must be"),
    ("wavelet name", lambda: Source((1, 2, 3), "mexican_hat"), ValueError, "wavelet must be one of"),
    ("wavelet samples", lambda: Source((1, 2, 3), [1.0, np.nan]), ValueError, "wavelet samples must be"),
    ("amplitude inf", lambda: Source((1, 2, 3), amplitude=np.inf), ValueError, "amplitude must be a finite"),
    ("source position", lambda: Source((1, 2)), ValueError, "position must be three finite numbers"),
    ("source units", lambda: Source((1, 2, 3), units="cells"), ValueError, "units must be 'physical' or"),
    ("receiver nan", lambda: Receiver((1, 2, np.nan)), ValueError, "position must be three finite numbers"),
]


@pytest.mark.parametrize(("call", "error", "text"), _rows(OTHER_ROWS))
def test_sources_and_receivers_refuse_bad_values(call, error, text):
    with pytest.raises(error, match=None) as raised:
        call()
    assert text in str(raised.value)


def _sim(**kwargs):
    return Simulation(SHAPE, backend="cpu", nt=4, **kwargs)


# (id, what run() is given, error, text)
RUN_ROWS = [
    ("steps negative", {"steps": -1}, ValueError, "steps must be an int >= 0"),
    ("steps fraction", {"steps": 2.5}, ValueError, "steps must be an int >= 0"),
    ("snapshot every 0", {"steps": 4, "snapshot_every": 0}, ValueError, "snapshot_every must be an int >= 1"),
    ("snapshot format", {"steps": 4, "snapshot_every": 2, "snapshot_formats": ("png",)}, ValueError,
     "snapshot formats must be among"),  # fmt: skip
]


@pytest.mark.parametrize(("kwargs", "error", "text"), _rows(RUN_ROWS))
def test_run_refuses_bad_arguments_before_any_work(kwargs, error, text, no_work):
    sim = _sim()
    with pytest.raises(error) as raised:
        sim.run(**kwargs)
    assert text in str(raised.value) and sim.time_step == 0


def test_documented_warnings():
    """A wavelet that aliases a little, or peaks after the run ends, is a warning that says what to do."""
    with pytest.warns(UserWarning, match=r"grid points per shortest wavelength .* use frequency <="):
        _sim(sources=[Source((8, 8, 8), frequency=0.1)])
    sim = _sim(sources=[Source((8, 8, 8), frequency=0.05)])
    with pytest.warns(SourceTimingWarning, match="peaks at t = 30 .* run at least"):
        sim.run(4)


def test_a_source_too_strong_for_float32_stops_the_run_naming_it():
    sim = _sim(sources=[Source((8, 8, 8), frequency=0.05, amplitude=1e40, delay=0.0)])
    with pytest.raises(NonFiniteFieldError, match="source 0 adds a value that is not finite in float32") as e:
        sim.run(8)
    assert e.value.where == "source 0" and sim.time_step == 0


def test_a_blow_up_in_the_api_names_the_step_and_the_cell():
    initial = np.zeros(SHAPE, dtype=np.float32)
    initial[8, 8, 8] = 3e38
    sim = _sim(initial=initial)
    with pytest.raises(NonFiniteFieldError, match=r"not finite at step 4 \(cell \(") as e:
        sim.run(20)
    assert e.value.step == 4 and sim.time_step == 4 and sim.last_run.steps == 4
    cell = np.array(eval(e.value.where.removeprefix("cell ")))  # noqa: S307 - our own message
    assert np.abs(cell - 8).sum() <= 4  # where the blow-up has spread to after 4 steps at NO=2


# tampered cache entries (issue 27): each run still succeeds, warns naming the file, prints no traceback
def _garbage_module(cache):
    from diamondlab.kernels.cpu import cpu_kernels

    cpu_kernels.cache_clear()  # this process loads the module again, from the cache given
    cpu_kernels(2)
    (path,) = cache.glob("kernels/*/diamondlab_cpu_no2_*.py")
    path.write_bytes(b"\xff\xfe garbage")
    cpu_kernels.cache_clear()
    return path


def _garbage_tunings(cache):
    cache.mkdir()
    (cache / "autotune.json").write_text('{"cpu|NO=2|')
    return cache / "autotune.json"


# (id, tamper(cache folder) -> damaged file, extra argv, what the warning calls it, text of the warning)
CACHE_ROWS = [
    ("kernel module garbage", _garbage_module, [], "kernel module", "does not match the SHA-256 recorded"),
    ("tunings not json", _garbage_tunings, ["--dts", "auto", "--nt", "2"], "cache file", "is not valid JSON"),
]


@pytest.mark.parametrize(("tamper", "argv", "what", "text"), _rows(CACHE_ROWS))
def test_a_tampered_cache_entry_is_rebuilt_with_a_warning(tamper, argv, what, text, tmp_path, monkeypatch,
                                                          capsys):  # fmt: skip
    from diamondlab.kernels.cpu import cpu_kernels

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DIAMONDLAB_CACHE", str(tmp_path / "cache"))
    path = tamper(tmp_path / "cache")
    try:
        assert main([*RUN, *argv]) == 0
    finally:
        cpu_kernels.cache_clear()
    err = capsys.readouterr().err
    assert f"diamondlab: warning: {what} {path} {text}" in err and "Traceback" not in err, err


# Issue 27 (outputs planned before work, --out locked, memory of the whole run): refused like CLI_ROWS.
OUTPUT_ROWS = [
    ("save name too long", [*RUN, "--save", "a" * 300 + ".npz"], "is 304 bytes, longer than the 255", None),
    ("out name too long", [*RUN, "--receiver", "1,1,1", "--out", "o" * 300], "--out oooo", None),
    ("traces beyond memory", [*RUN, "--receiver", "1,1,1", "--steps", "10000000000000"],
     "the traces of 1 --receiver over 10000000000000 --steps", None),  # fmt: skip
    ("save beyond memory", [*RUN, "--shape", "2500", "--save", "r.npz"], "--save's copies of the", None),
]


@pytest.mark.parametrize(("argv", "text", "stage"), _rows(OUTPUT_ROWS))
def test_cli_refuses_outputs_that_cannot_be_made_before_any_work(
    argv, text, stage, files, tmp_path, monkeypatch, capsys, no_work
):
    test_cli_refuses_bad_input_clearly_before_any_work(
        argv, text, stage, files, tmp_path, monkeypatch, capsys, no_work
    )


# ---------------------------------------------------------------- issue 27 (i27-a): pulse widths, numbers,
# communicators, and --initial records whose arrays disagree (each used to end in a traceback)
ISSUE27_API_ROWS = [
    ("pulse width tiny", {"pulse_width": 1e-300}, ValueError, "pulse_width must be a finite width in cells > "
     "0 (from 0.001 to 1e+09); got 1e-300"),  # fmt: skip
    ("pulse width huge", {"pulse_width": 1e300}, ValueError, "(from 0.001 to 1e+09); got 1e+300"),
    ("pulse width text", {"pulse_width": "3"}, TypeError, "pulse_width must be a number (a width in cells)"),
    ("pulse width bool", {"pulse_width": True}, TypeError, "pulse_width must be a number"),
    ("pulse width array", {"pulse_width": np.ones(2)}, TypeError, "pulse_width must be a number"),
    ("dt text", {"dt": "0.1"}, TypeError, "dt must be a number or None; got '0.1'"),
    ("courant text", {"courant": "0.3"}, TypeError, "courant must be a number or None; got '0.3'"),
    ("comm int", {"comm": 3}, TypeError, "comm must be an MPI communicator"),
]


@pytest.mark.parametrize(("kwargs", "error", "text"), _rows(ISSUE27_API_ROWS))
def test_issue27_api_refuses_bad_input_clearly_before_any_work(kwargs, error, text, no_work):
    test_api_refuses_bad_input_clearly_before_any_work(kwargs, error, text, no_work)


def test_issue27_a_gaussian_pulse_refuses_a_degenerate_width():
    from diamondlab.numerics import gaussian_pulse

    with pytest.raises(ValueError, match=r"width must be a finite width in cells > 0 \(from 0.001"):
        gaussian_pulse((4, 4, 4), width=1e-200)


@pytest.fixture(scope="module")
def points_record(tmp_path_factory):
    """A record with a source and a receiver, written by the real engine (before any kernel is blocked)."""
    path = tmp_path_factory.mktemp("points") / "points.npz"
    assert main(["run", "--shape", "16", "--steps", "2", "--backend", "cpu", "--no-progress", "--nt", "2",
                 "--source", "8,8,8", "--receiver", "4,4,4", "--save", str(path),
                 "--out", str(path.parent / "out")]) == 0  # fmt: skip
    with np.load(path) as data:
        return dict(data)


# (id, the record's keys changed (None: removed), text the message must contain)
ISSUE27_RECORD_ROWS = [
    ("source position columns", {"source_position": np.zeros((1, 2))},
     "'source_position' must have shape (n, 3) (x, y, z of each source); got (1, 2)"),
    ("source rows disagree", {"source_position": np.full((2, 3), 8.0)},
     "'source_units' must have shape (2,) (one row per source of 'source_position'); got (1,)"),
    ("source frequencies", {"source_frequency": np.array([0.05, 0.05])}, "'source_frequency' must have"),
    ("source delay 2-D", {"source_delay": np.zeros((1, 1))}, "'source_delay' must have shape (1,)"),
    ("source units numbers", {"source_units": np.array([1.0])}, "'source_units' must hold text; got dtype"),
    ("source amplitude text", {"source_amplitude": np.array(["a"])}, "'source_amplitude' must hold numbers"),
    ("source wavelet gone", {"source_wavelet": None}, "sources are incomplete: ['source_position'"),
    ("source samples gone", {"source_wavelet": np.array(["samples"])},
     "source 0 plays a sampled wavelet, so 'source_0_wavelet' must be a 1-D array of numbers; got nothing"),
    ("receiver position 1-D", {"receiver_position": np.array([4.0, 4.0, 4.0])},
     "'receiver_position' must have shape (n, 3) (x, y, z of each receiver); got (3,)"),
    ("receiver units gone", {"receiver_units": None}, "receivers are incomplete: ['receiver_position']"),
    ("order text", {"order": np.array("abc")}, "'order' must be one integer; got shape (), dtype <U3"),
    ("courant text", {"courant": np.array("x")}, "'courant' must be one number"),
    ("velocity 2-D", {"velocity": np.zeros((2, 2))}, "'velocity' must be one number; got shape (2, 2)"),
    ("shape two sizes", {"shape": np.array([16, 16])}, "'shape' must be three integers; got shape (2,)"),
]  # fmt: skip


@pytest.mark.parametrize(("changes", "text"), _rows(ISSUE27_RECORD_ROWS))
def test_issue27_cli_refuses_a_record_whose_arrays_disagree(
    changes, text, points_record, tmp_path, monkeypatch, capsys, no_work
):
    record = {k: v for k, v in points_record.items() if k not in changes or changes[k] is not None}
    record.update({k: v for k, v in changes.items() if v is not None})
    np.savez(tmp_path / "tampered.npz", **record)
    monkeypatch.chdir(tmp_path)
    code = main(["run", "--initial", "tampered.npz", "--steps", "2", "--backend", "cpu", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("diamondlab: error: --initial tampered.npz: not a consistent run "
                                        "record: ") and text in err and "Traceback" not in err, err
    assert no_work == []


@pytest.mark.parametrize("width", ["1e-300", "1e300"])
def test_issue27_cli_refuses_a_degenerate_pulse_width(width, tmp_path, monkeypatch, capsys, no_work):
    monkeypatch.chdir(tmp_path)
    assert main([*RUN, "--pulse-width", width]) == 2
    err = capsys.readouterr().err
    assert "pulse_width must be a finite width in cells > 0 (from 0.001 to 1e+09)" in err, err
    assert "Traceback" not in err and no_work == []
# ---------------------------------------------------------------- end of issue 27 (i27-a)


# ---------------------------------------------------------------- issue 28: diamondlab run --equation maxwell
MAXWELL = ["run", "--equation", "maxwell", "--shape", "16", "--backend", "cpu", "--no-progress"]
MAXWELL += ["--steps", "4"]
DIPOLE = ["--dipole", "8,8,8", "--frequency", "0.1"]

# (id, argv, text the message must contain); {scene} is a file written from the row's scene text
MAXWELL_CLI_ROWS = [
    ("mx order 6", [*MAXWELL, "--order", "6"], "--order must be 2 or 4 with --equation maxwell"),
    ("mx velocity", [*MAXWELL, "--velocity", "2"], "--velocity does not apply to --equation maxwell"),
    ("mx sponge and source", [*MAXWELL, "--sponge", "4", "--source", "8,8,8"],
     "--sponge, --source do not apply to --equation maxwell (acoustic options; Maxwell takes --scene"),
    ("mx receiver", [*MAXWELL, "--receiver", "8,8,8"], "--receiver does not apply to --equation maxwell"),
    ("mx pulse width", [*MAXWELL, "--pulse-width", "3"], "--pulse-width does not apply"),
    ("mx window", [*MAXWELL, "--shape", "40x16x16", "--nt", "4", "--window", "8"],
     "window must hold more than 2 x 8 ghost rows (the rows a sweep of Nt steps reads beyond a window, on "
     "each side): window >= 17; got 8"),
    ("dipole without maxwell", [*RUN, "--dipole", "8,8,8"], "--dipole needs --equation maxwell"),
    ("pml and view without maxwell", [*RUN, "--pml", "4", "--view", "Hx"],
     "--pml, --view need --equation maxwell"),
    ("scene without maxwell", [*RUN, "--scene", "s.json"], "--scene needs --equation maxwell"),
    ("mx dipole no waveform", [*MAXWELL, "--dipole", "8,8,8"], "--dipole needs a waveform: --frequency F"),
    ("mx fwidth alone", [*MAXWELL, "--fwidth", "0.1"], "--fwidth needs --frequency"),
    ("mx dipole H", [*MAXWELL, *DIPOLE[2:], "--dipole", "8,8,8,Hx"],
     "--dipole 8,8,8,Hx: Dipole component must be one of ('Ex', 'Ey', 'Ez'); got 'Hx'"),
    ("mx dipole two numbers", [*MAXWELL, "--dipole", "8,8"], "argument --dipole: must look like X,Y,Z"),
    ("mx probe fraction", [*MAXWELL, "--probe", "8.5,8,8"], "argument --probe: must look like X,Y,Z"),
    ("mx probe outside", [*MAXWELL, "--probe", "40,8,8"],
     "--probe: probes[0] at (40, 8, 8) lies outside the grid"),
    ("mx dipole in cpml", [*MAXWELL, *DIPOLE[:1], "2,8,8", *DIPOLE[2:], "--pml", "4"],
     "--dipole: sources[0] at (2, 8, 8) lies in the CPML"),
    ("mx pml too wide", [*MAXWELL, "--pml", "8"], "pml must leave at least one cell between the layers"),
    ("mx above nyquist", [*MAXWELL, *DIPOLE[:2], "--frequency", "0.45"], "above the grid's Nyquist limit"),
    ("mx courant", [*MAXWELL, "--courant", "0.6"], "courant must be > 0 and at most 0.57735"),
    ("mx dts auto", [*MAXWELL, "--dts", "auto"], "--dts auto is not available with --equation maxwell"),
    ("mx view", [*MAXWELL, "--view", "Bz"], "argument --view: invalid choice: 'Bz'"),
    ("mx backend option", [*MAXWELL, "--backend-option", "band=2"], "--backend-option does not apply"),
    ("mx scene missing", [*MAXWELL, "--scene", "none.json"], "--scene none.json: cannot read it"),
]  # fmt: skip

# (id, the scene file's text, text the message must contain)
MAXWELL_SCENE_ROWS = [
    ("scene not json", "{materials: []}", "--scene {scene}: not valid JSON: Expecting property name"),
    ("scene a list", "[]", "the scene must be a table of keys"),
    ("scene unknown key", '{"material": []}', "material is not a key here (known: shape, order"),
    ("scene materials not list", '{"materials": {}}', "materials must be a list; got {{}}"),
    ("scene no shape", '{"materials": [{"center": [1, 1, 1], "radius": 1, "medium": "pec"}]}',
     "materials[0].shape is missing (required)"),
    ("scene unknown shape", '{"materials": [{"shape": "cone", "medium": "pec"}]}',
     'materials[0].shape must be one of sphere, box, slab, cylinder; got "cone"'),
    ("scene radius text", '{"materials": [{"shape": "sphere", "center": [1, 1, 1], "radius": "2", '
     '"medium": "pec"}]}', 'materials[0].radius must be a number >= 0; got "2"'),
    ("scene negative wp", '{"materials": [{"shape": "sphere", "center": [1, 1, 1], "radius": 1, "medium": '
     '"pec"}, {"shape": "slab", "axis": "x", "lo": 2, "hi": 3, "medium": {"kind": "drude", "wp": -1}}]}',
     "materials[1].medium.wp must be a number >= 0; got -1"),
    ("scene no medium", '{"materials": [{"shape": "sphere", "center": [1, 1, 1], "radius": 1}]}',
     "materials[0].medium is missing (required)"),
    ("scene eps below 1", '{"materials": [{"shape": "box", "lo": [1, 1, 1], "hi": [2, 2, 2], "medium": '
     '{"kind": "dielectric", "eps": 0.5}}]}', "materials[0].medium.eps must be a number >= 1; got 0.5"),
    ("scene medium word", '{"materials": [{"shape": "box", "lo": [1, 1, 1], "hi": [2, 2, 2], "medium": '
     '"gold"}]}', 'materials[0].medium must be "pec" or a table with a kind'),
    ("scene drude eps key", '{"materials": [{"shape": "box", "lo": [1, 1, 1], "hi": [2, 2, 2], "medium": '
     '{"kind": "drude", "eps": 2}}]}', "materials[0].medium.eps is not a key here (known: kind, eps_inf"),
    ("scene box lo above hi", '{"materials": [{"shape": "box", "lo": [3, 1, 1], "hi": [2, 2, 2], "medium": '
     '"pec"}]}', "materials[0]: Box lo must not exceed hi on any axis"),
    ("scene slab axis", '{"materials": [{"shape": "slab", "axis": "w", "lo": 1, "hi": 2, "medium": "pec"}]}',
     'materials[0].axis must be one of x, y, z; got "w"'),
    ("scene dipole no waveform", '{"sources": [{"position": [8, 8, 8]}]}',
     "sources[0].waveform is missing (required"),
    ("scene dipole position", '{"sources": [{"position": [8, 8, 8.5], "waveform": {"kind": "ricker", '
     '"frequency": 0.1}}]}', "sources[0].position must be a list of three whole numbers (cells)"),
    ("scene waveform kind", '{"waveform": {"kind": "sine", "frequency": 0.1}}',
     'waveform.kind must be one of gaussian, ricker, cw; got "sine"'),
    ("scene waveform frequency", '{"waveform": {"kind": "gaussian", "frequency": 0}}',
     "waveform.frequency must be a number > 0; got 0"),
    ("scene source type", '{"sources": [{"type": "horn", "position": [8, 8, 8]}]}',
     'sources[0].type must be one of dipole, planewave; got "horn"'),
    ("scene probe component", '{"probes": [{"position": [8, 8, 8], "component": "Bz"}]}',
     'probes[0].component must be one of Ex, Ey, Ez, Hx, Hy, Hz; got "Bz"'),
    ("scene probe outside", '{"probes": [{"position": [8, 8, 16]}]}', "probes[0] at (8, 8, 16) lies outside"),
    ("scene pml negative", '{"pml": -2}', "pml must be a width in cells >= 0 or a table"),
    ("scene pml table", '{"pml": {"width": 2, "grading": -1}}', "pml.grading must be a number >= 0"),
    ("scene order 6", '{"order": 6}', "--scene {scene}: order must be 2 or 4 with --equation maxwell"),
    ("scene shape", '{"shape": [16, 16]}', "shape must be a list of three whole numbers (cells) >= 1"),
]  # fmt: skip


@pytest.fixture
def no_yee_work(monkeypatch):
    """Fail on any allocation of a Maxwell run's fields (the refusals come from its plan, before them)."""
    from diamondlab.engine.equations.maxwell_plan import MaxwellPlan

    def allocate(self):
        raise AssertionError("the Maxwell fields were allocated before the input was refused")

    monkeypatch.setattr(MaxwellPlan, "make_backend", allocate)


@pytest.mark.parametrize(("argv", "text"), _rows(MAXWELL_CLI_ROWS))
def test_issue28_cli_refuses_bad_maxwell_input_clearly_before_any_work(
    argv, text, files, tmp_path, monkeypatch, capsys, no_work, no_yee_work
):
    test_cli_refuses_bad_input_clearly_before_any_work(
        argv, text, None, files, tmp_path, monkeypatch, capsys, no_work
    )
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize(("scene", "text"), _rows(MAXWELL_SCENE_ROWS))
def test_issue28_cli_refuses_a_bad_scene_naming_the_key_path(
    scene, text, files, tmp_path, monkeypatch, capsys, no_work, no_yee_work
):
    (tmp_path / "scene.json").write_text(scene)
    monkeypatch.chdir(tmp_path)
    assert main([*MAXWELL, "--scene", "scene.json"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("diamondlab: error: --scene scene.json: ") and "Traceback" not in err, err
    assert text.format(scene="scene.json") in err, err
    assert not (tmp_path / "diamondlab-out").exists()
# ---------------------------------------------------------------- end of issue 28 (mx-h)


# ---------------------------------------------------------------- issue 28: periodic Maxwell faces
def _periodic_plan(shape=(16, 16, 8), order=2, pml=0, direction=None, box=None, **options):
    """Build the plan of a Maxwell run (no field allocated) with a CPML given as ``(width, axes)`` and a
    plane wave along ``direction`` in ``box``."""
    from diamondlab.engine.equations.maxwell_plan import MaxwellPlan
    from diamondlab.maxwell import CPML, GaussianPulse, PlaneWave

    if isinstance(pml, tuple):
        pml = CPML(*pml)
    if direction:
        options["sources"] = [PlaneWave(direction, "z", GaussianPulse(0.1, 0.05), box)]
    return MaxwellPlan.build(shape, order, backend="cpu", pml=pml, **options)


PERIODIC_API_ROWS = [
    ("periodic x", dict(periodic="x"), "periodic: x cannot be periodic: DiamondTorre sweeps its stages from "
     "+x to -x in one pass, and a wrap in x would make the leftmost torres depend on the rightmost ones"),
    ("periodic unknown axis", dict(periodic=("y", "w")),
     "periodic must name axes among 'y' and 'z' once each"),
    ("periodic axis twice", dict(periodic="yy"), "periodic must name axes among 'y' and 'z' once each"),
    ("periodic y, ny not a multiple of 2R (DTS given)",
     dict(shape=(16, 12, 8), order=4, size=2, periodic="y"),
     "periodic y under DiamondTorre needs ny a multiple of 2R = 4 * DTS (the tiles' period in y): 2R = 8 "
     "for DTS=2, got ny=12"),
    ("periodic y, no DTS fits, DiamondTorre asked for",
     dict(shape=(16, 14, 8), order=4, algorithm="diamondtorre", periodic="y"),
     "ny=14 is not a multiple of 4 (DTS=1); or algorithm='stepwise'"),
    ("CPML on a periodic axis", dict(pml=(4, 3.0, 0.05, 0.5, "xy"), periodic="yz"),
     "pml: CPML axes='xy' puts layers on the periodic axis y: a periodic axis has no faces to absorb at"),
    ("CPML axes unknown", dict(pml=(4, 3.0, 0.05, 0.5, "xw")),
     "CPML axes must name axes among 'x', 'y', 'z' once each"),
    ("plane wave box short of a periodic axis",
     dict(periodic="yz", direction="+x", box=((4, 2, 0), (11, 15, 7))),
     "the PlaneWave box ((4, 2, 0), (11, 15, 7)) must span the whole periodic axis y (y0 <= 0 and y1 >= 15)"),
    ("plane wave along a periodic axis", dict(periodic="yz", direction="+y", box=((4, 0, 0), (11, 15, 7))),
     "the PlaneWave travels along '+y', a periodic axis: it would wrap onto itself"),
]  # fmt: skip


@pytest.mark.parametrize(("options", "text"), _rows(PERIODIC_API_ROWS))
def test_issue28_periodic_faces_refuse_bad_input_before_any_work(options, text, no_yee_work):
    with pytest.raises(ValueError, match=".") as err:
        _periodic_plan(**options)
    assert text in str(err.value), str(err.value)


PERIODIC_CLI_ROWS = [
    ("--periodic x", [*MAXWELL, "--periodic", "x"], "--periodic: periodic: x cannot be periodic"),
    ("--periodic y with a DTS whose 2R does not divide ny", [*MAXWELL, "--periodic", "y", "--dts", "3"],
     "--periodic: periodic y under DiamondTorre needs ny a multiple of 2R = 2 * DTS (the tiles' period in "
     "y): 2R = 6 for DTS=3, got ny=16"),
]  # fmt: skip


@pytest.mark.parametrize(("argv", "text"), _rows(PERIODIC_CLI_ROWS))
def test_issue28_cli_refuses_bad_periodic_input(argv, text, files, tmp_path, monkeypatch, capsys, no_work,
                                                 no_yee_work):
    test_cli_refuses_bad_input_clearly_before_any_work(
        argv, text, None, files, tmp_path, monkeypatch, capsys, no_work
    )


@pytest.mark.parametrize(("scene", "text"), [
    ('{"periodic": ["y", "w"]}', "periodic must name axes among x, y, z once each"),
    ('{"pml": {"width": 2, "axes": "xq"}}', "pml.axes must name axes among x, y, z once each"),
    ('{"periodic": "yz", "pml": {"width": 2, "axes": "xz"}}', "pml: CPML axes='xz' puts layers on the "
     "periodic axis z"),
])  # fmt: skip
def test_issue28_a_scene_with_bad_periodic_keys_is_refused(scene, text, files, tmp_path, monkeypatch,
                                                          capsys, no_work, no_yee_work):
    (tmp_path / "scene.json").write_text(scene)
    monkeypatch.chdir(tmp_path)
    assert main([*MAXWELL, "--scene", "scene.json"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("diamondlab: error: --scene scene.json: ") and text in err, err
# ---------------------------------------------------------------- end of issue 28 (periodic)


# ---------------------------------------------------------------- issue 28: Maxwell records (--initial)
@pytest.fixture(scope="module")
def maxwell_records(tmp_path_factory):
    """Maxwell records (saved before any step: nothing compiles) and a scene with a sphere, by name."""
    from diamondlab.engine.equations.maxwell_simulation import MaxwellSimulation
    from diamondlab.engine.outputs.io import save_run

    folder = tmp_path_factory.mktemp("mx-records")
    good = save_run(folder / "mx.npz", MaxwellSimulation((16, 16, 16), 2, backend="cpu", pml=2))
    save_run(folder / "mx12.npz", MaxwellSimulation((12, 12, 12), 2, backend="cpu"))
    with np.load(good) as data:
        arrays = dict(data)
    np.savez(folder / "mx_bad_e.npz", **{**arrays, "E": arrays["E"][:, :8]})
    nan = arrays["H"].copy()
    nan[1, 2, 3, 4] = np.nan
    np.savez(folder / "mx_nan.npz", **{**arrays, "H": nan})
    np.savez(folder / "mx_with_j.npz", **{**arrays, "J": np.zeros_like(arrays["E"])})
    np.savez(folder / "mx_no_h.npz", **{k: v for k, v in arrays.items() if k != "H"})
    (folder / "sphere.json").write_text('{"pml": 2, "materials": [{"shape": "sphere", "center": [8, 8, 8], '
                                        '"radius": 3, "medium": {"kind": "dielectric", "eps": 2.0}}]}')
    names = ("mx", "mx12", "mx_bad_e", "mx_nan", "mx_with_j", "mx_no_h")
    return {**{n: folder / f"{n}.npz" for n in names}, "sphere": folder / "sphere.json"}


MX_RECORD = [*MAXWELL, "--pml", "2", "--initial"]
# (id, argv, text the message must contain); {name} is a file of maxwell_records, {record} an acoustic record
MAXWELL_RECORD_ROWS = [
    ("mx initial gaussian", [*MAXWELL, "--initial", "gaussian"],
     "--initial gaussian is the acoustic equation's pulse: a Maxwell run starts at rest ('zero', the "
     "default)"),
    ("mx initial acoustic record", [*MAXWELL, "--initial", "{record}"],
     "a record of an acoustic run cannot continue a Maxwell run: drop --equation maxwell to continue it"),
    ("acoustic initial maxwell record", ["run", "--initial", "{mx}", "--backend", "cpu", "--steps", "2"],
     "a record of a maxwell run; continue it with --equation maxwell (and its scene)"),
    ("mx initial other shape", [*MAXWELL, "--initial", "{mx12}"],
     "the record's shape (12, 12, 12) differs from this run's (16, 16, 16)"),
    ("mx initial other order", [*MX_RECORD, "{mx}", "--order", "4"],
     "the record's order 2 differs from this run's 4"),
    ("mx initial other courant", [*MX_RECORD, "{mx}", "--courant", "0.3"],
     "differs from this run's 0.3 (the Courant number or the spacing differs)"),
    ("mx initial other pml", [*MAXWELL, "--pml", "3", "--initial", "{mx}"],
     "the record's pml CPML(width=2, grading=3.0, alpha_max=0.05, sigma_ratio=0.75, axes=None) differs "
     "from this run's "
     "CPML(width=3"),
    ("mx initial other materials", [*MAXWELL, "--scene", "{sphere}", "--initial", "{mx}"],
     "the record was made with other materials (another scene) than this run's: give the scene it was saved "
     "with"),
    ("mx initial E shape", [*MX_RECORD, "{mx_bad_e}"],
     "E must have shape (3, 16, 16, 16); got (3, 8, 16, 16)"),
    ("mx initial NaN", [*MX_RECORD, "{mx_nan}"],
     "H must be finite floating values; got dtype float32 with NaN"),
    ("mx initial J without Drude", [*MX_RECORD, "{mx_with_j}"],
     "the record holds a Drude current J but this run has no Drude medium"),
    ("mx initial no H", [*MX_RECORD, "{mx_no_h}"],
     "not a Maxwell run record written by --save / save_run (missing ['H'])"),
    ("mx initial corrupt", [*MX_RECORD, "{corrupt}"], "not a run record written by --save / save_run"),
]  # fmt: skip


@pytest.mark.parametrize(("argv", "text"), _rows(MAXWELL_RECORD_ROWS))
def test_issue28_cli_refuses_a_maxwell_record_of_another_run_before_any_work(
    argv, text, files, maxwell_records, tmp_path, monkeypatch, capsys, no_work, no_yee_work
):
    monkeypatch.chdir(tmp_path)
    names = {**files, **maxwell_records}
    code = main([a.format(**names) for a in argv])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("diamondlab: error: --initial ") and "Traceback" not in err, err
    assert text in err, err
    assert no_work == [] and not (tmp_path / "diamondlab-out").exists()


@pytest.mark.parametrize(
    ("initial", "error", "text"),
    [("gaussian", ValueError, "initial must be 'zero', a pair (E, H), a state or a Maxwell run record"),
     (5, TypeError, "initial must be 'zero', a pair (E, H), a state (MaxwellSimulation.state())"),
     ((np.zeros((3, 16, 16, 16)),), ValueError,
      "initial must be a pair (E, H), a state or a Maxwell run record"),
     ("mx12", ValueError, "initial: the record's shape (12, 12, 12) differs from this run's (16, 16, 16)")],
    ids=["a name", "a number", "one array", "another shape"],
)  # fmt: skip
def test_issue28_api_refuses_a_bad_initial_state_before_allocation(
    initial, error, text, maxwell_records, no_yee_work
):
    from diamondlab.engine.equations.maxwell_simulation import MaxwellSimulation
    from diamondlab.engine.outputs.io import load_run

    if initial == "mx12":
        initial = load_run(maxwell_records["mx12"])
    with pytest.raises(error) as err:
        MaxwellSimulation((16, 16, 16), 2, backend="cpu", pml=2, initial=initial)
    assert text in str(err.value), err.value
# ---------------------------------------------------------------- end of issue 28 (Maxwell records)


# ---------------------------------------------------------------- issue 28 (dft): Maxwell monitors
def _monitor_row(**kw):
    from diamondlab.maxwell import DFTPlane, FluxBox, FluxPlane

    kinds = {"dft": DFTPlane, "flux": FluxPlane, "box": FluxBox}
    kind = kw.pop("kind")
    return lambda: kinds[kind](**kw)


MONITOR_API_ROWS = [
    ("monitor axis", dict(kind="dft", axis="w", index=3, frequencies=[0.1]),
     "DFTPlane axis must be one of 'x', 'y', 'z' (or 0, 1, 2); got 'w'"),
    ("monitor index float", dict(kind="flux", axis="x", index=3.5, frequencies=[0.1]),
     "FluxPlane index must be a whole number (a cell index); got 3.5"),
    ("monitor frequency zero", dict(kind="dft", axis="x", index=3, frequencies=[0.1, 0.0]),
     "DFTPlane frequencies must be one or more finite numbers > 0"),
    ("monitor no frequency", dict(kind="box", box=((2, 2, 2), (6, 6, 6)), frequencies=[]),
     "FluxBox frequencies must be one or more finite numbers > 0"),
    ("monitor component", dict(kind="dft", axis="x", index=3, frequencies=[0.1], components=("Bz",)),
     "DFTPlane components must be distinct names of ('Ex', 'Ey', 'Ez', 'Hx', 'Hy', 'Hz')"),
    ("monitor region inverted", dict(kind="dft", axis="z", index=3, frequencies=[0.1],
                                     region=((4, 2), (0, 3))),
     "DFTPlane region must have lo < hi on both axes"),
    ("monitor direction", dict(kind="flux", axis="z", index=3, frequencies=[0.1], direction=2),
     "FluxPlane direction must be +1 or -1"),
    ("monitor box inverted", dict(kind="box", box=((6, 2, 2), (4, 6, 6)), frequencies=[0.1]),
     "FluxBox box must have x0 < x1, y0 < y1, z0 < z1"),
    # against the grid (16 cells a side), from the plan, before any allocation
    ("monitor index outside", dict(kind="dft", axis="y", index=16, frequencies=[0.1]),
     "monitors[0] index must be in [0, 15] on the y axis of the grid (16, 16, 16); got 16"),
    ("flux plane on the first plane", dict(kind="flux", axis="x", index=0, frequencies=[0.1]),
     "monitors[0] index must be in [1, 15] on the x axis"),
    ("monitor region outside", dict(kind="dft", axis="z", index=3, frequencies=[0.1],
                                    region=((0, 17), (0, 3))),
     "monitors[0] region must lie in [0, 16) along x (the grid (16, 16, 16)); got [0, 17)"),
    ("flux region to the last cell", dict(kind="flux", axis="z", index=3, frequencies=[0.1],
                                          region=((0, 16), (0, 3))),
     "monitors[0] region must lie in [0, 15) along x (the grid (16, 16, 16), faces need the next cell)"),
    ("flux box outside", dict(kind="box", box=((2, 2, 2), (6, 16, 6)), frequencies=[0.1]),
     "monitors[0] box must have its corners within [1, n - 1] on every axis of the grid (16, 16, 16)"),
    ("monitor above Nyquist", dict(kind="dft", axis="z", index=3, frequencies=[0.1, 0.6]),
     "monitors[0] frequencies must be in (0, 0.5] (the grid's Nyquist limit, 2 cells a wavelength); got 0.6"),
]  # fmt: skip


@pytest.mark.parametrize(("kw", "text"), _rows(MONITOR_API_ROWS))
def test_issue28_monitors_refused_naming_the_option_and_range(kw, text, no_yee_work):
    from diamondlab.maxwell import Dipole, Ricker

    with pytest.raises(ValueError, match=r"^(DFTPlane|FluxPlane|FluxBox|monitors\[0\]) ") as err:
        Simulation((16, 16, 16), 2, equation="maxwell", backend="cpu",
                   sources=[Dipole((8, 8, 8), "Ez", Ricker(0.1))], monitors=[_monitor_row(**kw)()])
    assert text in str(err.value), str(err.value)


def test_issue28_monitors_other_refusals(no_yee_work):
    from diamondlab.maxwell import DFTPlane

    plane = DFTPlane("z", 3, [0.1])
    with pytest.raises(ValueError, match="monitors and dft_planes are two names of one list"):
        Simulation((16, 16, 16), 2, equation="maxwell", backend="cpu", monitors=[plane], dft_planes=[plane])
    with pytest.raises(TypeError, match=r"monitors\[1\] must be a DFTPlane or FluxPlane or FluxBox"):
        Simulation((16, 16, 16), 2, equation="maxwell", backend="cpu", monitors=[plane, (3, 3, 3)])


MONITOR_SCENE_ROWS = [
    ("scene monitor type", '{"monitors": [{"type": "probe"}]}',
     'monitors[0].type must be one of dft, flux, fluxbox; got "probe"'),
    ("scene monitor key", '{"monitors": [{"type": "fluxbox", "box": [[2, 2, 2], [6, 6, 6]], "frequencies": '
     '[0.1], "axis": "x"}]}', "monitors[0].axis is not a key here (known: type, box, frequencies)"),
    ("scene monitor frequencies", '{"dft_planes": [{"type": "dft", "axis": "z", "index": 3, "frequencies": '
     '"0.1"}]}', "dft_planes[0].frequencies must be a list of numbers or a table (center, width, count)"),
    ("scene monitor outside", '{"monitors": [{"type": "flux", "axis": "z", "index": 16, "frequencies": '
     '[0.1]}]}', "--scene scene.json: monitors[0] index must be in [1, 15] on the z axis"),
]  # fmt: skip


@pytest.mark.parametrize(("scene", "text"), _rows(MONITOR_SCENE_ROWS))
def test_issue28_cli_refuses_a_bad_monitor_in_the_scene(
    scene, text, files, tmp_path, monkeypatch, capsys, no_work, no_yee_work
):
    test_issue28_cli_refuses_a_bad_scene_naming_the_key_path(
        scene, text, files, tmp_path, monkeypatch, capsys, no_work, no_yee_work
    )
# ---------------------------------------------------------------- end of issue 28 (dft)


# ---------------------------------------------------------------- issue 28 (mie): eps_averaging
EPS_AVERAGING_SCENE_ROWS = [
    ("scene eps_averaging text", '{"eps_averaging": "yes"}',
     'eps_averaging must be true or false; got "yes"'),
    ("scene eps_averaging number", '{"eps_averaging": 1}', "eps_averaging must be true or false; got 1"),
]  # fmt: skip


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_issue28_eps_averaging_must_be_a_bool_before_any_allocation(value, no_yee_work):
    from diamondlab import Simulation

    with pytest.raises(ValueError, match="eps_averaging must be True or False"):
        Simulation((16, 16, 16), 2, equation="maxwell", backend="cpu", eps_averaging=value)


@pytest.mark.parametrize(("scene", "text"), _rows(EPS_AVERAGING_SCENE_ROWS))
def test_issue28_cli_refuses_a_bad_eps_averaging_in_the_scene(
    scene, text, files, tmp_path, monkeypatch, capsys, no_work, no_yee_work
):
    test_issue28_cli_refuses_a_bad_scene_naming_the_key_path(
        scene, text, files, tmp_path, monkeypatch, capsys, no_work, no_yee_work
    )
# ---------------------------------------------------------------- end of issue 28 (mie)


# ---------------------------------------------------------------- issue 28 (scale): Maxwell window and ranks
class _FakeComm:
    """What the plan reads of a communicator (its checks run before any message)."""

    def __init__(self, size, rank=0):
        self.size, self.rank = size, rank


MAXWELL_SCALE_ROWS = [
    ("window below the ghost rows", {"window": 32, "nt": 4, "order": 4},
     "window must hold more than 2 x 16 ghost rows (the rows a sweep of Nt steps reads beyond a window, on "
     "each side): window >= 33; got 32"),
    ("window not an int", {"window": 2.5}, "window must be an int >= 1 (x rows the device holds at a time)"),
    ("window and comm", {"window": 40, "comm": _FakeComm(2)}, "window and comm together are not built yet"),
    ("window_dir without window", {"window_dir": "."},
     "window_dir keeps a calculation window's fields in files"),
    ("more ranks than x rows", {"comm": _FakeComm(80)},
     "80 MPI ranks need nx >= 80 (one row each at least); got nx=60"),
    ("slab too thin for the tile", {"comm": _FakeComm(20), "size": 6},
     "comm: rank 0 of 20 holds 11 of nx=60 rows (owned and ghost rows), too few for this tile"),
    ("halo unknown", {"comm": _FakeComm(2), "halo": "nvlink"},
     "halo must be one of ('auto', 'host', 'peer')"),
    ("halo peer on the CPU", {"comm": _FakeComm(2), "halo": "peer"},
     "halo='peer' (GPU to GPU) needs GPU ranks; backend 'cpu'"),
]  # fmt: skip


@pytest.mark.parametrize(("kwargs", "text"), _rows(MAXWELL_SCALE_ROWS))
def test_issue28_maxwell_window_and_ranks_refuse_bad_input_before_any_allocation(kwargs, text, no_yee_work):
    import re

    from diamondlab.engine.equations.maxwell_plan import MaxwellPlan

    kw = {"order": 2, "size": 1, "nt": 2, **kwargs}
    with pytest.raises(ValueError, match=re.escape(text)):
        MaxwellPlan.build((60, 18, 14), kw.pop("order"), backend="cpu", **kw)
# ---------------------------------------------------------------- end of issue 28 (scale)


# ---------------------------------------------------------------- issue 31: the Maxwell lab and its spectra
MAXWELL_LAB_ROWS = [
    ("wavelength not positive", {"wavelength": 0.0},
     "wavelength must be a number > 0 (the pulse's, in cells); got 0.0"),
    ("pulse periods not positive", {"periods": -1.0},
     "periods must be a number > 0 (the pulse's, in periods); got -1.0"),
    ("medium unknown", {"medium": "gold"},
     "medium must be one of ('drude', 'dielectric', 'pec'); got 'gold'"),
    ("scene unknown", {"scene": "torus"},
     "scene must be one of ('sphere', 'box', 'slab', 'cylinder', 'none'); got 'torus'"),
    ("source unknown", {"source": "laser"}, "source must be one of ('plane wave', 'dipole'); got 'laser'"),
]  # fmt: skip


@pytest.mark.parametrize(("kwargs", "text"), _rows(MAXWELL_LAB_ROWS))
def test_issue31_the_maxwell_lab_refuses_bad_settings_before_any_allocation(kwargs, text, no_yee_work):
    """The lab's own options (the engine's are the engine's: its plan's message is shown as it is)."""
    from diamondlab.widgets.maxwell_controls import MaxwellConfig, plan_maxwell

    assert plan_maxwell(MaxwellConfig(shape=(24, 16, 16), pml=2, radius=2, backend="cpu", **kwargs)) == text


def test_issue31_spectra_refuse_bad_input():
    from diamondlab.maxwell import Dielectric
    from diamondlab.maxwell.spectra import slab_fresnel

    with pytest.raises(ValueError, match=r"thickness must be a finite number of cells >= 0; got -1"):
        slab_fresnel(Dielectric(2.25), -1, [0.1])
# ---------------------------------------------------------------- end of issue 31

# ---------------------------------------------------------------- issue 29: measurement rule, CPU model
MEASUREMENT_ROWS = [
    ("no repeats", {"min_repeats": 0},
     "min_repeats must be >= 1 and max_repeats >= min_repeats; got 0 and 2000"),
    ("fewer most than least", {"min_repeats": 5, "max_repeats": 4},
     "min_repeats must be >= 1 and max_repeats >= min_repeats; got 5 and 4"),
    ("least time not a number", {"min_seconds": float("nan")},
     "min_seconds must be a finite number >= 0; got nan"),
    ("least time negative", {"min_seconds": -1.0}, "min_seconds must be a finite number >= 0; got -1.0"),
]  # fmt: skip


@pytest.mark.parametrize(("kwargs", "text"), _rows(MEASUREMENT_ROWS))
def test_issue29_the_measurement_rule_refuses_bad_input_before_running(kwargs, text):
    import re

    from diamondlab.engine.measure.timing import measure

    calls = []
    with pytest.raises(ValueError, match=re.escape(text)):
        measure(lambda: calls.append(1), 1.0, **kwargs)
    assert calls == []  # refused before the warm-up


def test_issue29_the_cpu_model_refuses_an_unknown_algorithm_or_medium_before_measuring():
    import re

    from diamondlab.engine.measure import cpumodel

    numbers = cpumodel.CPUNumbers("test", 1, (cpumodel.Level("L1", 2**15, 1e11),
                                              cpumodel.Level("memory", float("inf"), 1e10, False)), 0.0)
    with pytest.raises(ValueError, match="algorithm must be 'stepwise' or 'diamondtorre'; got 'naive'"):
        cpumodel.predict_cpu("naive", 2, (8, 8, 8), numbers=numbers, compute=1e9)
    with pytest.raises(ValueError, match=re.escape("variant must be one of ('constant', 'sponge', 'model')")):
        cpumodel.compute_rate(numbers, 2, 8, "vacuum")
# ---------------------------------------------------------------- end of issue 29

# ---------------------------------------------------------------- issue 31: the staggered geometry, drawn
STAGGERED_ROWS = [
    ("unknown equation", ("elastic", 2), "equation must be one of ('acoustic', 'maxwell'); got 'elastic'"),
    ("Yee order 6", ("maxwell", 6), "order must be one of (2, 4) for Maxwell's equations"),
    ("acoustic order 3", ("acoustic", 3), "order (NO) must be one of"),
]  # fmt: skip


@pytest.mark.parametrize(("args", "text"), _rows(STAGGERED_ROWS))
def test_issue31_the_staggered_geometry_refuses_a_bad_equation_or_order(args, text):
    import re

    from diamondlab.geometry import GraphStencil

    with pytest.raises(ValueError, match=re.escape(text)):
        GraphStencil(*args)


def test_issue31_the_yee_figures_and_panels_refuse_bad_input_before_drawing():
    from diamondlab.engine.measure.bench import tuning_sweep
    from diamondlab.geometry import stage_schedule
    from diamondlab.geometry.reads import torre_dependencies
    from diamondlab.maxwell.scheme import curl_reads, yee_read_offsets
    from diamondlab.viz.yee import yee_cell_figure, yee_tiles_figure

    with pytest.raises(ValueError, match="reads must be None or one of"):
        yee_cell_figure(2, reads="Dx")
    with pytest.raises(ValueError, match=r"tier must be an int in \[1, 3\]"):
        yee_tiles_figure(2, 1, 2, tier=4)
    with pytest.raises(ValueError, match="field must be 'H' or 'E'"):
        yee_read_offsets(2, "B")
    with pytest.raises(ValueError, match="component must be one of"):
        curl_reads("Jx")
    with pytest.raises(ValueError, match="the schedule's Nt must be a multiple of it; got 3"):
        torre_dependencies(stage_schedule(2, 1, 3, 8, 8), "maxwell")
    with pytest.raises(ValueError, match="equation must be one of"):
        tuning_sweep((8, 8, 8), equation="heat")  # before any run
# ---------------------------------------------------------------- end of issue 31 (staggered geometry)
# ---------------------------------------------------------------- issue 31: the lab's equation
LAB_EQUATION_ROWS = [
    ("unknown equation", "elastic", "equation must be one of ('acoustic', 'maxwell'); got 'elastic'"),
    ("wrong case", "Maxwell", "equation must be one of ('acoustic', 'maxwell'); got 'Maxwell'"),
    ("not a name", None, "equation must be one of ('acoustic', 'maxwell'); got None"),
]  # fmt: skip


@pytest.mark.parametrize(("equation", "text"), _rows(LAB_EQUATION_ROWS))
def test_issue31_the_lab_refuses_an_unknown_equation_before_building_a_widget(equation, text):
    import re

    from ipywidgets.widgets.widget import _instances  # every widget built stays here until closed

    from diamondlab.widgets import Lab

    before = len(_instances)
    with pytest.raises(ValueError, match=re.escape(text)):
        Lab(equation=equation, shape=(24, 20, 16), backend="cpu")
    assert len(_instances) == before
# ---------------------------------------------------------------- end of issue 31 (the lab's equation)
# ---------------------------------------------------------------- issue 28: Maxwell streamed (window)
STREAMED_YEE_WINDOW_ROWS = [
    ("window too small for Nt", {"window": 20, "nt": 2},
     "window=20 x rows cannot stream this sweep (NO=4, DTS=1, Nt=2): use window >= 29"),
    ("rings beyond the GPU's memory", {"window": 29, "nt": 2, "free": 2**20},
     "the window's rings and the whole grid's material index need"),
]  # fmt: skip


@pytest.mark.parametrize(("kwargs", "text"), _rows(STREAMED_YEE_WINDOW_ROWS))
def test_issue28_a_streamed_maxwell_window_refuses_bad_settings_before_allocating(kwargs, text, monkeypatch):
    import re

    import diamondlab.engine.backends.yee_cuda as yee_cuda
    from diamondlab.engine.equations.maxwell_plan import MaxwellPlan
    from diamondlab.engine.scale.yee_window import StreamedYeeCUDABackend

    free = kwargs.pop("free", 2**40)
    monkeypatch.setattr(yee_cuda.YeeCUDABackend, "available", staticmethod(lambda: True))
    monkeypatch.setattr(yee_cuda, "device_memory", lambda: (free, 2**41))

    def allocated(*args, **kw):
        raise AssertionError("allocated before the check")

    monkeypatch.setattr(StreamedYeeCUDABackend, "_build", allocated)
    with pytest.raises(ValueError, match=re.escape(text)):
        MaxwellPlan.build((80, 16, 8), 4, backend="cuda", size=1, **kwargs).make_backend()
# ---------------------------------------------------------------- end of issue 28 (streamed Maxwell window)
# ---------------------------------------------------------------- issue 31: options of the other lab
LAB_OPTION_ROWS = [
    ("acoustic courant for Maxwell", dict(equation="maxwell", courant=0.3),
     "courant is the acoustic lab's option only: Lab(equation='maxwell') takes ("),
    ("acoustic sponge for Maxwell", dict(equation="maxwell", sponge=8),
     "sponge is the acoustic lab's option only: Lab(equation='maxwell') takes ("),
    ("acoustic paced for Maxwell", dict(equation="maxwell", paced=False),
     "paced is the acoustic lab's option only: Lab(equation='maxwell') takes ("),
    ("acoustic tab for Maxwell", dict(equation="maxwell", panels=("Run", "Snapshot")),
     "panels: 'Snapshot' is the acoustic lab's tab only: Lab(equation='maxwell') has ('Run', 'Shapes', "
     "'Stages', 'Yee', 'Tuning')"),
    ("panels a string", dict(equation="maxwell", panels="Run"),
     "panels must be a tuple of tab names of Lab(equation='maxwell'), some of ('Run', "),
    ("unknown option for Maxwell", dict(equation="maxwell", colour="red"),
     "unknown option colour for Lab(equation='maxwell'), which takes ("),
    ("Maxwell pml for acoustic", dict(pml=6),
     "pml is the maxwell lab's option only: Lab(equation='acoustic') takes ("),
    ("Maxwell tab for acoustic", dict(panels=("Run", "Yee")),
     "panels: 'Yee' is the maxwell lab's tab only: Lab(equation='acoustic') has ('Run', 'Shapes', 'Stages', "
     "'Tuning', 'Snapshot')"),
    ("unknown tab for acoustic", dict(panels=("Run", "Plots")),
     "panels must name tabs of Lab(equation='acoustic'), some of ('Run', 'Shapes', 'Stages', 'Tuning', "
     "'Snapshot'); got 'Plots'"),
]  # fmt: skip


@pytest.mark.parametrize(("options", "text"), _rows(LAB_OPTION_ROWS))
def test_issue31_an_option_of_the_other_lab_is_refused_before_building_a_widget(options, text):
    """An option only the other equation's lab takes (``Lab(equation="maxwell", courant=...)`` was a
    ``TypeError`` of the Maxwell configuration) is a ValueError naming it and what this lab takes, raised
    before any widget is built or any lab closed."""
    import re

    from ipywidgets.widgets.widget import _instances  # every widget built stays here until closed

    from diamondlab.widgets import Lab
    from diamondlab.widgets.labbase import LabBase

    open_labs = len(LabBase._live)
    before = len(_instances)
    with pytest.raises(ValueError, match=re.escape(text)):
        Lab(**{"shape": (24, 20, 16), "backend": "cpu", **options})
    assert len(_instances) == before and len(LabBase._live) == open_labs
    if "takes (" in text:  # the list of what the lab takes is the lab's own
        from diamondlab.widgets import lab, maxwell_lab

        takes = maxwell_lab.OPTIONS if options.get("equation") == "maxwell" else lab.OPTIONS
        with pytest.raises(ValueError, match=re.escape(str(tuple(sorted(takes))))):
            Lab(**{"shape": (24, 20, 16), "backend": "cpu", **options})
# ---------------------------------------------------------------- end of issue 31 (options of the other lab)


# ---------------------------------------------------------------- issue 31: bench --equation maxwell
MAXWELL_BENCH = ["bench", "--equation", "maxwell", "--shape", "16", "--backend", "cpu", "--no-progress"]

# (id, argv, text of the message)
MAXWELL_BENCH_ROWS = [
    ("velocity", [*MAXWELL_BENCH, "--velocity", "2"],
     "--velocity does not apply to bench --equation maxwell (acoustic options; its scene is --medium vacuum "
     "or physics)"),
    ("sponge and option", [*MAXWELL_BENCH, "--sponge", "4", "--backend-option", "chunk=2"],
     "--sponge, --backend-option do not apply to bench --equation maxwell"),
    ("matrix", [*MAXWELL_BENCH, "--matrix"], "--matrix does not apply to bench --equation maxwell"),
    ("order 6", [*MAXWELL_BENCH, "--orders", "2", "6"],
     "--orders must be 2 or 4 with --equation maxwell (the Yee scheme's order in space); got 6"),
    ("order 3", [*MAXWELL_BENCH, "--orders", "3"],
     "argument --orders: invalid choice: 3 (choose from 2, 4, 6, 8)"),
    ("acoustic medium", [*MAXWELL_BENCH, "--medium", "model"],
     "--medium model is a medium of --equation acoustic: --equation maxwell takes --medium vacuum or "
     "physics"),
    ("maxwell medium", ["bench", "--shape", "16", "--backend", "cpu", "--medium", "physics"],
     "--medium physics is a medium of --equation maxwell: --equation acoustic takes --medium constant, "
     "sources or model"),
    ("equation", ["bench", "--equation", "yee", "--shape", "16"],
     "argument --equation: invalid choice: 'yee'"),
]  # fmt: skip


@pytest.mark.parametrize(("argv", "text"), _rows(MAXWELL_BENCH_ROWS))
def test_issue31_bench_refuses_what_maxwell_cannot_take_before_any_work(
    argv, text, tmp_path, monkeypatch, capsys, no_work, no_yee_work
):
    """An acoustic option, order or medium given to ``bench --equation maxwell`` (or a Maxwell medium to the
    acoustic bench) is named with what is allowed, before any field, kernel or JSON file."""
    from diamondlab.engine.measure import bench

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(bench, "Simulation", None)  # a simulation made would fail otherwise
    try:
        code = main([*argv, "--json", "rows.json"])
    except SystemExit as exit_:  # argparse's own errors
        code = exit_.code
    err = capsys.readouterr().err
    assert code == 2 and text in err and "Traceback" not in err, err
    assert no_work == [] and list(tmp_path.iterdir()) == []
# ---------------------------------------------------------------- end of issue 31 (bench --equation maxwell)
