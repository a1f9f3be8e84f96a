"""The readout-overhead benchmark runs (the numbers themselves are in BENCHMARKS.md, not asserted)."""

import pytest

from diamondlab.widgets.bench import measure


def test_measure_alternates_plain_and_watched_runs():
    result = measure(shape=(24, 24, 16), order=2, sweeps=2, trials=2, size=1, nt=4)
    assert len(result["trials"]) == 2 and result["steps_per_trial"] == 8
    assert result["plain_gcells"] > 0 and result["watched_gcells"] > 0 and result["refreshes"] >= 1
    assert result["record_seconds"] > 0 and result["readout_gcells"] > 0  # cadence, lab average
    assert (result["busy"] is None) == (result["flag"] == "machine load unknown")  # the rule's load probe
    assert result["flag"] in ("", "machine load unknown") or result["flag"].startswith("machine busy (others")
    every_sweep = measure(shape=(24, 24, 16), order=2, sweeps=3, trials=1, size=1, nt=4, record_seconds=0.0)
    assert every_sweep["record_seconds"] == 0.0 and every_sweep["refreshes"] >= 1


@pytest.mark.slow  # the Yee CPU kernels' compile, shared with tests/engine/test_maxwell_simulation.py
def test_the_maxwell_view_is_measured_by_the_same_rule_with_the_readout_next_to_the_engine(tmp_path, capsys):
    """``python -m diamondlab.widgets.bench --here --equation maxwell --backend cpu``: plain and watched
    Maxwell runs alternated in one worker, the Maxwell lab's view refreshing, and the readout's average
    next to the engine's own measurement of the same sweeps (the same kernel time: equal to rounding)."""
    import json

    from diamondlab.widgets.bench import main

    out = tmp_path / "rows.jsonl"
    main(["--here", "--equation", "maxwell", "--backend", "cpu", "--shape", "16", "16", "8", "--order", "2",
          "--size", "1", "--nt", "2", "--sweeps", "3", "--trials", "2", "--json", str(out)])
    printed = capsys.readouterr().out
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert (row["equation"], row["scene"], row["shape"], row["size"], row["nt"]) == ("maxwell", "plain",
                                                                                     [16, 16, 8], 1, 2)
    assert len(row["trials"]) == 2 and row["steps_per_trial"] == 6 and row["refreshes"] >= 1
    assert row["plain_gcells"] > 0 and row["watched_gcells"] > 0 and row["record_seconds"] > 0
    assert row["readout_gcells"] > 0 and row["engine_gcells"] > 0
    # the lab's average adds the engine's kernel time of the same sweeps (all but the first): equal
    assert row["readout_to_engine"] == pytest.approx(1.0, rel=1e-9)
    assert "maxwell (plain) cpu (16, 16, 8) NO=2 DTS=1 Nt=2" in printed and "G Yee cell updates/s" in printed
    assert f"against the engine's {row['engine_gcells']:.3f} for the same sweeps" in printed
    lab = measure(shape=(40, 32, 32), order=2, sweeps=2, trials=1, size=1, nt=2, equation="maxwell",
                  scene="lab")  # the Maxwell lab's default scene: a Drude sphere, a plane wave, a CPML
    assert lab["scene"] == "lab" and lab["plain_gcells"] > 0 and lab["refreshes"] >= 1


def test_measure_refuses_a_bad_equation_or_scene_before_building_anything():
    with pytest.raises(ValueError, match="equation must be one of"):
        measure(shape=(8, 8, 8), equation="elastic")
    with pytest.raises(ValueError, match="scene must be one of"):
        measure(shape=(8, 8, 8), equation="maxwell", scene="sphere")
    with pytest.raises(ValueError, match="needs equation='maxwell'"):
        measure(shape=(8, 8, 8), scene="lab")
