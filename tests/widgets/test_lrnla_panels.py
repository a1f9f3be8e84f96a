"""The LRnLA panels take the equation: the Yee scheme's torre, locality and sweep, stage by stage."""

import numpy as np

from diamondlab.geometry import GraphStencil, stage_schedule
from diamondlab.geometry.reads import torre_dependencies
from diamondlab.widgets.controls import RunConfig
from diamondlab.widgets.lrnla import ShapesPanel, StageExplorer
from diamondlab.widgets.maxwell_controls import MaxwellConfig


def test_stage_explorer_plays_the_yee_sweep_half_step_by_half_step():
    cfg = MaxwellConfig(shape=(20, 12, 8), order=4, size=1, nt=2)
    e = StageExplorer(cfg, equation="maxwell")
    s = e.picture.schedule
    assert (s.nt, s.tile.order, s.nx, s.ny) == (4, 4, 20, 12)  # 2 Nt half-step tiers of the Yee tile
    deps = torre_dependencies(stage_schedule(4, 1, 4, 20, 12), "maxwell")
    assert all(np.array_equal(a, b) for a, b in zip(e.picture.reads, deps, strict=True))
    assert "Yee order 4, DTS=1, Nt=2 (4 half steps" in e.caption.value
    assert "stage by stage" in e.caption.value and "every 2 half steps" in e.caption.value
    e.stage.value = 1
    assert e.view3d.layout.title.text.startswith("stage 2 of")
    assert "Half steps done after 1" in e.levels.layout.title.text
    e.update(MaxwellConfig(shape=(20, 12, 8), order=2, size=2, nt=1))
    assert (e.picture.schedule.nt, e.picture.schedule.tile.radius) == (2, 2)


def test_shapes_panel_draws_the_yee_torre_and_both_equations_locality():
    panel = ShapesPanel(MaxwellConfig(shape=(24, 16, 16), order=2, size=2, nt=3), equation="maxwell")
    torre = GraphStencil("maxwell", 2).torre(2, 3)
    assert f"2Nt·2R² = {torre.nvertices}" in panel.conoids.layout.title.text
    assert [t.name for t in panel.locality.data][::2] == ["Maxwell, Yee order 2", "acoustic, NO=2"]
    assert "Yee order 2" in panel.note.value
    acoustic = ShapesPanel(RunConfig(order=2, size=2, nt=3, shape=(24, 16, 16)))
    assert len(acoustic.locality.data) == 2 and "NO=2" in acoustic.note.value


def test_yee_panel_redraws_the_cell_and_the_tiles_from_its_menus_and_the_configuration():
    from diamondlab.maxwell.scheme import curl_reads
    from diamondlab.viz.yee import yee_tiles_figure
    from diamondlab.widgets.lrnla import YeePanel

    panel = YeePanel(MaxwellConfig(shape=(24, 16, 16), order=2, size=2, nt=8))
    assert "Yee order 2, DTS=2, Nt=8</b> (drawn 4 steps tall)" in panel.note.value
    assert panel.tier.max == 7 and panel.tiles.data[5].visible == "legendonly"
    names = [t.name for t in panel.cell.data]
    reads = [f"Hz reads {c} along {'xyz'[a]}" for c, a in curl_reads("Hz")]
    assert reads == [n for n in names if " reads " in n]
    panel.reads.value = "none"
    assert not [t for t in panel.cell.data if " reads " in (t.name or "")]
    panel.tier.value = 4  # an H tier: it reads E on the tier below
    want = yee_tiles_figure(2, 2, 4, tier=4)
    assert panel.tiles.data[3].name == want.data[3].name and "E that H tier 4 reads" in want.data[3].name
    assert np.array_equal(np.asarray(panel.tiles.data[3].x, float), np.asarray(want.data[3].x, float))
    panel.show_reads.value = True
    assert panel.tiles.data[5].visible is True
    panel.update(MaxwellConfig(order=4, size=1, nt=2), "cannot run: a reason")
    assert "not redrawn: cannot run" in panel.note.value and panel.tier.max == 7
    panel.update(MaxwellConfig(order=4, size=1, nt=2))
    assert panel.tier.max == 3 and panel.tier.value == 3
    assert panel.tiles.layout.title.text.startswith("Yee order 4, DTS=1, Nt=2")
    panel.reads.value = "Ex"
    assert "order 4 (reach M=2): Ex reads" in panel.cell.layout.title.text
    assert "Yee order 4, DTS=1, Nt=2</b>:" in panel.note.value
