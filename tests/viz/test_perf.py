"""The tuning figure draws the engine's measurements and marks the best choice."""

from diamondlab.engine.measure.bench import TuningRow, best
from diamondlab.viz import perf


def test_tuning_figure_marks_the_best_measured_row():
    rows = [TuningRow("stepwise", 2, 0, 0, 1.0, 2.0), TuningRow("diamondtorre", 2, 1, 2, 1.5, 3.0),
            TuningRow("diamondtorre", 2, 1, 4, 2.5, 3.0)]
    fig = perf.tuning_figure(rows)
    star = [t for t in fig.data if t.name == "best measured"]
    assert best(rows) is rows[2] and star[0].y[0] == 2.5 and "best: NO=2 DTS=1 Nt=4" in fig.layout.title.text
    measured = [t for t in fig.data if t.name == "NO=2 DTS=1 measured"][0]
    assert list(measured.x) == [2, 4] and list(measured.y) == [1.5, 2.5]


def test_roofline_ceilings_are_the_models():
    """Fig. 7: the stepwise and row-of-torres ceilings are perfmodel.predict's rates on the same device."""
    import pytest

    from diamondlab.engine.measure.perfmodel import H100, DeviceNumbers, predict
    from diamondlab.viz.perf import ROOFLINE_SHAPES, roofline_ceilings, roofline_figure

    for order, size, nt in ((2, 4, 32), (8, 1, 16)):
        c = roofline_ceilings(order, size, nt, H100)
        assert c["torre_row"][1] == pytest.approx(predict("diamondtorre", order, size, nt, H100).rate / 1e9)
        assert c["stepwise_layer"][1] == pytest.approx(predict("stepwise", order, device=H100).rate / 1e9)
    cpu = DeviceNumbers("a CPU", 20e9, float("inf"))  # no compute roof: the memory roof alone
    fig = roofline_figure(2, 2, 8, cpu, measured=[("DiamondTorre", 0.5, 3.0)])
    names = [t.name for t in fig.data]
    assert names[0] == "a CPU: roofline" and names[-1] == "measured: DiamondTorre"
    assert set(ROOFLINE_SHAPES.values()) <= set(names)
    assert fig.data[0].y[-1] == pytest.approx(20e9 * fig.data[0].x[-1] / 4 / 1e9)


def test_order_size_figure_keeps_the_best_nt_per_pair():
    from diamondlab.engine.measure.bench import TuningRow
    from diamondlab.viz.perf import order_size_figure

    rows = [TuningRow("stepwise", 2, 0, 0, 1.0, 2.0), TuningRow("diamondtorre", 2, 1, 4, 1.5, 3.0),
            TuningRow("diamondtorre", 2, 1, 8, 1.8, 3.5), TuningRow("diamondtorre", 4, 1, 4, 1.2, 2.5)]
    fig = order_size_figure(rows)
    bars = fig.data[0]
    assert list(bars.x) == ["2/1", "4/1"] and list(bars.y) == [1.8, 1.2] and list(bars.customdata) == [8, 4]
    assert list(fig.data[1].y) == [3.5, 2.5]


def test_parallel_levels_figure_draws_the_thread_sweep():
    from diamondlab.viz.perf import parallel_levels_figure

    fig = parallel_levels_figure([(1, 2.0, 1.0), (2, 3.5, 1.8), (4, 6.0, 2.0)])
    assert list(fig.data[0].y) == [2.0, 3.5, 6.0] and list(fig.data[1].y) == [1.0, 1.8, 2.0]
    assert list(fig.data[2].y) == [2.0, 4.0, 8.0]  # perfect scaling from one thread


def test_memory_hierarchy_figure_draws_the_measured_and_the_tabled_levels():
    """Fig. 1: the CPU's points as measured, the GPU's levels from devices (registers fastest)."""
    from diamondlab.engine.measure.perfmodel import gpu_hierarchy, measure_cpu_hierarchy
    from diamondlab.viz.perf import memory_hierarchy_figure

    cpu = measure_cpu_hierarchy([2**14, 2**24], traffic=2e7)
    assert [b for b, _ in cpu] == [2**14, 2**24] and all(r > 1e8 for _, r in cpu)
    gpu = gpu_hierarchy()
    assert [name for name, _, _ in gpu] == ["registers", "shared memory", "device memory"]
    assert gpu[0][2] > gpu[1][2] > gpu[2][2] and gpu[0][1] < gpu[2][1]
    fig = memory_hierarchy_figure(cpu, gpu)
    assert list(fig.data[0].x) == [2**14, 2**24] and list(fig.data[1].text) == [n for n, _, _ in gpu]
    # the largest level's name ("device memory") reads left of its point, unclipped by the plot area
    assert list(fig.data[1].textposition) == ["top right", "top right", "top left"]
    assert fig.data[1].cliponaxis is False


def test_block_levels_figure_draws_a_line_per_block_size_and_marks_the_multiprocessors():
    from diamondlab.engine.measure.bench import BlockLevel

    rows = [BlockLevel((64, 8 * t, nz), t, nz, 10.0 * t, 5.0 * t) for nz in (64, 256) for t in (1, 2, 4)]
    fig = perf.block_levels_figure(rows, multiprocessors=132)
    names = [t.name for t in fig.data]
    assert names == ["DiamondTorre, 64 threads (2 warps) a block", "stepwise, nz = 64",
                     "DiamondTorre, 256 threads (8 warps) a block", "stepwise, nz = 256"]
    assert list(fig.data[2].x) == [1, 2, 4] and list(fig.data[2].y) == [10.0, 20.0, 40.0]
    assert fig.layout.shapes[0].x0 == 132


def test_figures_of_flagged_measurements_say_they_are_not_steady():
    """A wide spread or a busy machine is written on the figure, and the best row's title says so."""
    from diamondlab.engine.measure.timing import Measurement

    busy = Measurement((1.0,) * 5, 2.5e9, busy=0.6)
    quiet = Measurement((1.0,) * 5, 1.5e9, busy=0.0)
    rows = [TuningRow("stepwise", 2, 0, 0, 1.0, 2.0, measurement=quiet),
            TuningRow("diamondtorre", 2, 1, 2, 1.5, 3.0, measurement=quiet),
            TuningRow("diamondtorre", 2, 1, 4, 2.5, 3.0, measurement=busy)]
    for fig in (perf.tuning_figure(rows), perf.order_size_figure(rows)):
        notes = [a.text for a in fig.layout.annotations if a.text.startswith("Not steady")]
        assert len(notes) == 1 and "machine busy (others 60 % of its CPU)" in notes[0]
    assert perf.tuning_figure(rows).layout.title.text.endswith(": not steady")
    steady = [TuningRow(r.algorithm, r.order, r.size, r.nt, r.measured, r.model, measurement=quiet)
              for r in rows]
    assert not any(a.text.startswith("Not steady") for a in perf.tuning_figure(steady).layout.annotations)
    levels = perf.parallel_levels_figure([(1, 2.0, 1.0, ""), (2, 3.5, 1.8, "stepwise: spread 30 % (wide)")])
    assert "2 threads: stepwise: spread 30 % (wide)" in levels.layout.annotations[0].text


def test_roofline_of_the_yee_scheme_is_predict_yee():
    """Both equations on one roofline model: Maxwell's ceilings are predict_yee's rates, its x axis 4 B over
    the model's bytes per Yee update, its compute roof the Yee flops."""
    import pytest

    from diamondlab.engine.measure.perfmodel import H100, predict_yee, yee_flops_per_update
    from diamondlab.geometry import locality
    from diamondlab.viz.perf import roofline_ceilings, roofline_figure

    for order, size, nt in ((2, 1, 8), (4, 2, 16)):
        c = roofline_ceilings(order, size, nt, H100, equation="maxwell")
        row, step = predict_yee("diamondtorre", order, size, nt, H100), predict_yee("stepwise", order)
        assert c["torre_row"] == pytest.approx((4 / row.bytes_per_update, row.rate / 1e9))
        assert c["stepwise_layer"] == pytest.approx((4 / step.bytes_per_update, step.rate / 1e9))
        # the fields' share is the tile geometry's: the material's 3 bytes a sweep on top
        fields = 4 / locality("torre_row", order, size, nt, "maxwell")
        assert row.bytes_per_update == pytest.approx(fields + 3 / nt)
        assert c["torre_row"][0] < roofline_ceilings(order, size, nt, H100)["torre_row"][0]
    fig = roofline_figure(4, 2, 16, H100, equation="maxwell")
    assert fig.data[0].y[-1] == pytest.approx(H100.fp32_rate / yee_flops_per_update(4) / 1e9)
    assert fig.layout.yaxis.title.text == "G Yee cell updates/s" and "Yee order 4" in fig.layout.title.text
    with pytest.raises(ValueError, match="equation must be one of"):
        roofline_ceilings(2, 1, 8, H100, equation="heat")
def test_roofline_labels_are_placed_apart_from_each_other_and_the_stars():
    """Fig. 7 at the notebook's NO=2 DTS=4 Nt=32 on the H100 with its two measured stars: the DiamondTile
    and stepwise ceilings are close (0.28, 0.33), so their labels cannot both sit above the roof, and the
    stepwise star lies under its ceiling (the browser test checks the drawn page)."""
    from diamondlab.engine.measure.perfmodel import H100
    from diamondlab.viz.perf import CHAR_PX, LINE_PX, place_labels, roofline_figure

    fig = roofline_figure(2, 4, 32, H100, [("stepwise", 1 / 3, 208.8), ("DiamondTorre", 0.966, 413.2)])
    where = {t.name: (t.textposition, list(t.text)) for t in fig.data if t.text is not None}
    assert len(where) == 5 and all(sum(1 for s in text if s) == 1 for _, text in where.values())
    assert where["DiamondTile (Nt=1)"][0] != "top left" or where["stepwise (whole layer)"][0] != "top left"
    # the placer: a label whose every place covers a marker takes the one covering least
    crowded = [[(50, 50, p) for p in ("top left", "bottom right")]]
    box = CHAR_PX * 4, LINE_PX
    assert place_labels(crowded, ["abcd"], [(50 - 6 - box[0] / 2, 50 - 6 - box[1] / 2, 3)], (200, 200)) == [1]


def test_two_ceilings_at_one_point_take_different_places():
    """The Yee roofline at order 2 DTS 1 Nt 4 (notebook 07): the stepwise layer's ceiling and the row of
    torres' lie at one point; their labels must not both take its one free place (they did: one label on
    the other in the browser)."""
    from diamondlab.engine.measure.perfmodel import H100, yee_bytes_per_update
    from diamondlab.viz.perf import roofline_figure

    stars = [("stepwise", 4 / yee_bytes_per_update("stepwise_layer", 2, 1, 4), 22.2),
             ("diamondtorre", 4 / yee_bytes_per_update("torre_row", 2, 1, 4), 33.2)]
    fig = roofline_figure(2, 1, 4, H100, stars, equation="maxwell")
    at = {t.name: (t.x[-1], t.y[-1], t.textposition, tuple(t.y)) for t in fig.data if t.text is not None}
    layer, row = at["stepwise (whole layer)"], at["row of DiamondTorres"]
    assert abs(layer[0] / row[0] - 1) < 0.02 and abs(layer[1] / row[1] - 1) < 0.02  # one point
    # another place at the top, or one of them lower on its dotted line (a third point carries it)
    assert layer[2] != row[2] or len(layer[3]) != len(row[3])
