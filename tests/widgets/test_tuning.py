"""The tuning panel measures on the current backend, plots against the model and applies the best."""

import pytest

from diamondlab.widgets.controls import Controls, RunConfig
from diamondlab.widgets.tuning import TuningPanel


def test_tuning_panel_measures_and_applies_best():
    controls = Controls(RunConfig(shape=(24, 24, 16), order=2, size=1, nt=2))
    panel = TuningPanel(controls)
    panel.sizes.value, panel.nts.value, panel.repeats.value = "1, 2", "2, 4", 1
    assert panel.measure(wait=True)
    assert panel.rows and any(t.name == "best measured" for t in panel.figure.data)
    assert panel.widget.children[-1] is panel.figure  # the panel shows the measured figure (a new widget)
    panel.apply_best()
    cfg = controls.config()
    top = max((r for r in panel.rows if r.algorithm == "diamondtorre"), key=lambda r: r.measured)
    assert (cfg.size, cfg.nt) == (top.size, top.nt)


def test_bad_lists_are_messages():
    panel = TuningPanel(Controls(RunConfig(shape=(24, 24, 16))))
    panel.nts.value = "4, eight"
    assert panel.measure() is False and "whole numbers" in panel.log.value


@pytest.mark.slow  # the Yee CPU kernels' compile, shared with tests/engine/test_maxwell_simulation.py
def test_tuning_panel_measures_maxwell_in_yee_cell_updates():
    from diamondlab.widgets.maxwell_controls import MaxwellConfig, MaxwellControls

    controls = MaxwellControls(MaxwellConfig(shape=(16, 16, 8), order=2, size=1, nt=2, backend="cpu"))
    panel = TuningPanel(controls, equation="maxwell")
    panel.sizes.value, panel.nts.value, panel.repeats.value = "1, 2", "2", 1
    assert panel.measure(wait=True), panel.log.value
    assert [r.algorithm for r in panel.rows] == ["stepwise", "diamondtorre", "diamondtorre"]
    assert all(r.measured > 0 and r.model != r.model for r in panel.rows)  # no CPU model of Maxwell: NaN
    assert panel.figure.layout.yaxis.title.text == "G Yee cell updates/s"
    panel.apply_best()
    top = max(panel.rows[1:], key=lambda r: r.measured)
    assert (controls.config().size, controls.config().nt) == (top.size, top.nt)
    with pytest.raises(ValueError, match="equation must be one of"):
        TuningPanel(controls, equation="elastic")
