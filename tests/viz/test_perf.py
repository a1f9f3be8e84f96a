"""The tuning figure draws the engine's measurements and marks the best choice."""

from diamondlab.engine.measure import TuningRow, best
from diamondlab.viz import perf


def test_tuning_figure_marks_the_best_measured_row():
    rows = [TuningRow("stepwise", 2, 0, 0, 1.0, 2.0), TuningRow("diamondtorre", 2, 1, 2, 1.5, 3.0),
            TuningRow("diamondtorre", 2, 1, 4, 2.5, 3.0)]
    fig = perf.tuning_figure(rows)
    star = [t for t in fig.data if t.name == "best measured"]
    assert best(rows) is rows[2] and star[0].y[0] == 2.5 and "best: NO=2 DTS=1 Nt=4" in fig.layout.title.text
    measured = [t for t in fig.data if t.name == "NO=2 DTS=1 measured"][0]
    assert list(measured.x) == [2, 4] and list(measured.y) == [1.5, 2.5]
