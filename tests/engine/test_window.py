"""The calculation window: the grid streamed through the device window by window, bit for bit."""

import warnings

import numpy as np
import pytest

from diamondlab import Simulation
from diamondlab.engine.backends import get_backend
from diamondlab.engine.backends.cuda import CUDABackend
from diamondlab.engine.run.plan import RunPlan
from diamondlab.engine.scale.cuda_window import StreamedCUDABackend, streamed_sweep
from diamondlab.engine.scale.window import stream_plan, streamed_backend, window_chunks
from diamondlab.geometry import stage_schedule
from diamondlab.media import layered_model
from diamondlab.sources import Receiver, Source


@pytest.mark.parametrize(("nx", "window", "ghosts"),
                         [(20, 8, 2), (30, 7, 3), (64, 20, 4), (9, 9, 4), (50, 49, 6)])
def test_windows_own_a_partition_and_every_owned_row_is_ghosts_away_from_a_cut(nx, window, ghosts):
    chunks = window_chunks(nx, window, ghosts)
    owned = [x for _, _, o0, o1 in chunks for x in range(o0, o1)]
    assert owned == list(range(nx))
    for e0, e1, o0, o1 in chunks:
        assert e1 - e0 == min(window, nx) and e0 <= o0 < o1 <= e1
        assert (e0 == 0 or o0 - e0 >= ghosts) and (e1 == nx or e1 - o1 >= ghosts)


def test_bad_windows_are_clear_errors_before_any_allocation():
    with pytest.raises(ValueError, match=r"window must be an int >= 1 \(x rows the device holds"):
        RunPlan.build((30, 14, 10), 2, backend="cpu", window=0)
    with pytest.raises(ValueError, match=r"more than 2 x 6 ghost rows .*: window >= 13; got 12"):
        RunPlan.build((30, 14, 10), 2, backend="cpu", size=1, nt=6, window=12)
    assert RunPlan.build((30, 14, 10), 2, backend="cpu", size=1, nt=2, window=30).window is None  # it fits


SHAPE = (30, 14, 10)
PHYSICS = {
    "initial": "gaussian", "velocity": layered_model(SHAPE, (1.0, 1.5)), "sponge": 3,
    "sources": [Source((8.5, 5.2, 5.0), frequency=0.08, delay=4.0),
                Source((22, 7, 4), frequency=0.08, delay=6.0)],
    "receivers": [Receiver((3, 4, 7.5)), Receiver((15, 6, 4)), Receiver((26, 9, 6))],
}


@pytest.mark.parametrize("algorithm", ["diamondtorre", "stepwise"])
@pytest.mark.parametrize("window", [7, 10, 16])
def test_a_window_run_equals_the_in_memory_run_bit_for_bit(algorithm, window):
    """Fields, traces and planes with a layered model, a sponge, sources and receivers."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sims = [Simulation(SHAPE, 2, backend="cpu", size=1, nt=3, algorithm=algorithm, window=w, **PHYSICS)
                for w in (window, None)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the second source peaks after the run: not the point here
        sims[0].run(7)
        sims[0].run(6)
        sims[1].run(13)
    windowed, whole = sims
    assert len(windowed.backend.chunks) >= 2 and windowed.backend.inner.shape == (window, 14, 10)
    assert all(np.array_equal(a, b) for a, b in zip(windowed.fields, whole.fields, strict=True))
    assert np.array_equal(windowed.traces, whole.traces) and np.abs(whole.traces).max() > 0
    assert all(np.array_equal(a, b) for a, b in zip(windowed.current_planes((9, 6, 5)),
                                                     whole.current_planes((9, 6, 5)), strict=True))
    assert windowed.backend.bytes_per_sweep() == 16 * len(windowed.backend.chunks) * window * 14 * 10


def test_cli_window_reports_its_traffic_and_writes_the_in_memory_traces(tmp_path, capsys):
    from diamondlab.cli import main

    run = ["run", "--shape", "40x16x12", "--steps", "90", "--backend", "cpu", "--dts", "2", "--nt", "3",
           "--source", "20,8,6", "--frequency", "0.06", "--receiver", "5,8,6", "--receiver", "33,4,5",
           "--no-progress", "--initial", "gaussian"]
    assert main([*run, "--window", "14", "--out", str(tmp_path / "w")]) == 0
    out = capsys.readouterr().out
    assert "window: 14 of 40 x rows on the device, 5 windows a sweep" in out and "bytes a cell a sweep" in out
    assert main([*run, "--out", str(tmp_path / "m")]) == 0
    (tmp_path / "files").mkdir()
    in_files = ["--window", "14", "--window-dir", str(tmp_path / "files"), "--out", str(tmp_path / "f")]
    assert main([*run, *in_files]) == 0
    traces = [np.load(tmp_path / d / "traces.npz")["traces"] for d in ("w", "m", "f")]
    assert np.array_equal(*traces[:2]) and np.array_equal(*traces[1:]) and np.abs(traces[1]).max() > 0
    assert list((tmp_path / "files").iterdir()) == []
    assert main([*run, "--window", "6", "--out", str(tmp_path / "bad")]) == 2
    assert "window must hold more than 2 x 3 ghost rows" in capsys.readouterr().err


def test_bench_with_a_window_reports_what_crosses_the_bus(tmp_path, capsys):
    """``diamondlab bench --window``: both algorithms through the window, equal bit for bit, with the bytes
    a sweep moves and the bus cap's factor ``Nt / bytes``."""
    import json

    from diamondlab.cli import main

    assert main(["bench", "--backend", "cpu", "--shape", "30x16x8", "--orders", "2", "--nt", "2",
                 "--dts", "1", "--repeats", "1", "--no-progress", "--window", "12",
                 "--json", str(tmp_path / "w.json")]) == 0
    (row,) = json.loads((tmp_path / "w.json").read_text())["rows"]
    traffic = row["window_traffic"]
    assert row["bit_equal"] and row["window"] == 12 and traffic["windows"] == 4  # 10 + 8 + 8 + 4 owned rows
    assert traffic["bytes_per_cell_sweep"] == 16 * 4 * 12 / 30 and not traffic["overlapped"]
    assert "window of 12 x rows (NO=2: 4 windows" in capsys.readouterr().out


@pytest.mark.parametrize(("order", "size", "nt", "nx", "ny", "window"),
                         [(2, 1, 4, 40, 8, 20), (2, 4, 8, 160, 40, 90), (4, 2, 5, 90, 30, 60),
                          (8, 1, 6, 120, 20, 110), (2, 2, 1, 30, 10, 14), (6, 2, 3, 70, 26, 60)])
def test_a_streamed_sweep_loads_every_row_once_before_use_and_stores_it_once_after(order, size, nt, nx, ny,
                                                                                    window):
    """Replay the plan row by row: where each row sits on the device, and that nothing it needs is missing."""
    s = stage_schedule(order=order, size=size, nt=nt, nx=nx, ny=ny)
    plan = streamed_sweep(s, window)
    reach = s.torre_rows()
    loaded, stored, device = np.full(nx, -1), np.full(nx, -1), {}
    assert [g.tickets[0] for g in plan] == [0] + [g.tickets[1] for g in plan[:-1]]
    assert plan[-1].tickets[1] == s.ntorres and len(plan) > 1
    used = None
    for i, g in enumerate(plan):
        if g.move is not None:
            lo, hi, old = g.move
            assert all(device[x] == x - old for x in range(lo, hi))
            device.update({x: x - g.base for x in range(lo, hi)})
            # where the group's rows go is clear of what the group before used (it may still run)
            assert not set(range(g.live[0] - g.base, g.live[1] - g.base)) & set(range(*used))
        for x in range(*g.load):
            assert loaded[x] == -1  # once
            loaded[x], device[x] = i, x - g.base
        t0, t1 = g.tickets
        need = range(int(reach[t0:t1, 0].min()), int(reach[t0:t1, 1].max()))
        assert all(stored[x] == -1 and device.get(x) == x - g.base for x in need)  # on the device, in place
        assert g.live[0] <= need.start and need.stop <= g.live[1] and g.live[0] - g.base >= 0
        assert g.live[1] - g.base <= window
        for x in range(*g.store):
            assert stored[x] == -1
            stored[x] = i
        used = (g.live[0] - g.base, g.live[1] - g.base)
    last = np.full(nx, -1)
    for i, g in enumerate(plan):
        t0, t1 = g.tickets
        last[int(reach[t0:t1, 0].min()):int(reach[t0:t1, 1].max())] = i
    assert (loaded >= 0).all() and np.array_equal(stored, last)  # out once, after the last group needing it


def test_the_scale_room_names_the_backend_that_streams_a_window():
    """The CUDA backend's windows stream (a subclass as its base does); the CPU's run window by window."""

    class Tuned(CUDABackend):
        pass

    assert streamed_backend(get_backend("cuda")) is StreamedCUDABackend
    assert streamed_backend(Tuned) is StreamedCUDABackend
    assert streamed_backend(get_backend("cpu")) is None


def test_a_window_too_small_to_stream_names_one_that_works():
    s = stage_schedule(order=4, size=2, nt=5, nx=90, ny=30)
    with pytest.raises(ValueError, match=r"window=30 x rows cannot stream this sweep \(NO=4, DTS=2, Nt=5\): "
                                         r"use window >= (\d+)") as err:
        streamed_sweep(s, 30)
    enough = int(str(err.value).rsplit(" ", 1)[1])
    assert len(stream_plan(s, enough, 1)) > 1
    with pytest.raises(ValueError, match="cannot move"):
        stream_plan(s, enough - 1, 1)


def test_a_streamed_window_takes_no_diagonal_bands():
    from diamondlab.numerics import WaveParameters

    params = WaveParameters(order=2)
    with pytest.raises(ValueError, match=r"band must be 0 with window; got band=16"):
        StreamedCUDABackend.check_window(params, (80, 30, 8), 2, 4, 40, {"band": 16})
    StreamedCUDABackend.check_window(params, (80, 30, 8), 2, 4, 40, {"band": 0})


@pytest.mark.gpu
@pytest.mark.parametrize(("order", "size", "nt", "window", "options", "in_files"),
                         [(2, 4, 8, 96, None, False), (8, 1, 4, 110, None, False),
                          (2, 2, 6, 80, {"launch": "per-stage"}, False), (2, 4, 8, 96, None, True)])
def test_a_streamed_window_on_the_gpu_equals_the_in_memory_gpu_run_bit_for_bit(order, size, nt, window,
                                                                                 options, in_files, tmp_path):
    """Device rows past the ring are real memory here (not NaN): a plan that read them would differ; with
    the fields in files (``window_dir``) the copies go through pinned buffers."""
    shape = (300, 40, 36)
    physics = {"initial": "gaussian", "velocity": layered_model(shape, (1.0, 1.5)), "sponge": 4,
               "sources": [Source((150, 20, 18), units="grid", frequency=0.1, delay=2.0)],
               "receivers": [Receiver((145, 20, 18), units="grid"), Receiver((156, 16, 15), units="grid")]}
    sims = [Simulation(shape, order, backend="cuda", algorithm="diamondtorre", size=size, nt=nt, window=w,
                       window_dir=tmp_path if in_files and w else None, backend_options=options, **physics)
            for w in (window, None)]
    for sim in sims:
        sim.run(3 * nt + 1)
    streamed, whole = sims
    assert type(streamed.backend).__name__ == "StreamedCUDABackend"
    assert all(np.array_equal(a, b) for a, b in zip(streamed.fields, whole.fields, strict=True))
    assert np.array_equal(streamed.traces, whole.traces) and np.abs(whole.traces).max() > 0


def test_a_window_in_files_equals_the_in_memory_run_and_leaves_no_file(tmp_path):
    """``window_dir``: the fields as ``numpy.memmap`` files that no name points to, bit for bit in memory."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sims = [Simulation(SHAPE, 2, backend="cpu", size=1, nt=3, window=w, window_dir=d, **PHYSICS)
                for w, d in ((10, tmp_path), (None, None))]
        for sim in sims:
            sim.run(13)
    in_files, whole = sims
    assert isinstance(in_files.backend.field_views()[1], np.memmap) and list(tmp_path.iterdir()) == []
    assert all(np.array_equal(a, b) for a, b in zip(in_files.fields, whole.fields, strict=True))
    assert np.array_equal(in_files.traces, whole.traces)


def test_window_dir_needs_a_window_and_a_folder_that_holds_the_fields(tmp_path):
    with pytest.raises(ValueError, match="window_dir keeps a calculation window's fields in files"):
        RunPlan.build((30, 14, 10), 2, backend="cpu", window_dir=tmp_path)
    with pytest.raises(ValueError, match="window_dir must be a writable folder"):
        RunPlan.build((30, 14, 10), 2, backend="cpu", window=10, window_dir=tmp_path / "missing")
    from diamondlab.engine.scale.window import check_window_dir

    with pytest.raises(ValueError, match=r"GiB free; the fields need"):
        check_window_dir(tmp_path, 2**62)
