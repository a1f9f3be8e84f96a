"""The readout-overhead benchmark runs (the numbers themselves are in BENCHMARKS.md, not asserted)."""

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
