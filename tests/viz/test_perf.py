"""The tuning sweep measures, compares with the model and marks the best choice."""

from diamondlab.viz import perf


def test_device_numbers_are_measured():
    d = perf.device_numbers("cpu", 2)
    assert d.bandwidth > 1e8 and d.fp32_rate > 1e6


def test_tuning_sweep_and_figure():
    notes = []
    rows = perf.tuning_sweep((24, 24, 16), orders=(2,), sizes=(1, 20), nts=(2, 4), repeats=1,
                             progress=notes.append)
    assert [r.algorithm for r in rows].count("stepwise") == 1
    dt = [r for r in rows if r.algorithm == "diamondtorre"]
    assert {(r.size, r.nt) for r in dt} == {(1, 2), (1, 4)}
    assert all(r.measured > 0 and r.model > 0 for r in rows)
    assert any("skipped" in n and "DTS=20" in n for n in notes)  # a tile larger than the grid
    fig = perf.tuning_figure(rows)
    top = perf.best(rows)
    star = [t for t in fig.data if t.name == "best measured"]
    assert star and star[0].y[0] == top.measured and "best: NO=2" in fig.layout.title.text
