"""Sources, receivers, velocity models, the sponge and snapshots, inside DiamondTorre."""

import numpy as np
import pytest

from diamondlab.engine.equations.acoustic import DEFAULT_SPONGE
from diamondlab.engine.run.simulation import Simulation
from diamondlab.media import layered_model
from diamondlab.sources import Receiver, Source, ricker

SHAPE = (27, 23, 14)


def _full_physics(order, algorithm, **kw):
    velocity = layered_model(SHAPE, (1.0, 1.3, 0.8))
    sources = [
        Source((6.3, 7.7, 5.2), "ricker", frequency=0.05, units="grid", delay=1.0),
        Source((20, 15, 9), [0.0, 1.0, -2.0, 0.5, 3.0], units="grid", amplitude=0.5),
        Source((6.3, 7.7, 5.2), "gaussian_derivative", frequency=0.04, units="grid", delay=0.5),  # same cells
    ]
    receivers = [(3.5, 4.0, 2.25), Receiver((24, 20, 13), units="grid"), (13.0, 11.0, 7.0)]
    return Simulation(
        SHAPE, order, backend="cpu", algorithm=algorithm, velocity=velocity, sources=sources,
        receivers=receivers, sponge=3, initial="zero", courant=0.3, **kw,
    )  # fmt: skip


@pytest.mark.parametrize("order", [2, 4, 6, 8])
@pytest.mark.parametrize(("size", "nt"), [(1, 4), (2, 5)])
def test_diamondtorre_equals_stepwise_with_all_physics(order, size, nt):
    if 2 * order // 2 * size > min(SHAPE[:2]):
        pytest.skip("tile larger than the grid")
    dt = _full_physics(order, "diamondtorre", size=size, nt=nt)
    sw = _full_physics(order, "stepwise", size=size, nt=nt)
    for sim in (dt, sw):
        sim.run(5)  # the array wavelet's 5 samples are all in this run
        sim.run(12)
    assert np.array_equal(dt.fields[0], sw.fields[0]) and np.array_equal(dt.fields[1], sw.fields[1])
    assert np.array_equal(dt.traces, sw.traces)
    assert dt.traces.shape == (17, 3) and np.abs(dt.traces).max() > 1e-4


def test_point_source_matches_the_3d_greens_function():
    """s(t - r/c) / (4 pi c^2 r) at receivers 1.5 to 2.5 peak wavelengths away, within 5 percent."""
    n, f, courant = 81, 0.06, 0.3
    c0 = (n - 1) / 2
    distances = [10.0, 16.0]
    receivers = [(c0 + r, c0, c0) for r in distances]
    diagonal = 16.0 / np.sqrt(3.0)
    receivers.append((c0 + diagonal, c0 + diagonal, c0 + diagonal))  # off the grid: trilinear
    sim = Simulation(
        (n, n, n), 4, courant=courant, backend="cpu", initial="zero", velocity=1.0,
        sources=[Source((c0, c0, c0), "ricker", frequency=f)], receivers=receivers,
    )  # fmt: skip
    steps = int((3.0 / f + 16.0) / courant)
    sim.run(steps)
    for trace, r in zip(sim.traces.T, [*distances, 16.0], strict=True):
        exact = ricker(sim.trace_times - r, f) / (4 * np.pi * r)
        assert np.abs(trace - exact).max() <= 0.05 * np.abs(exact).max(), r


def _trace_at_8_cells(n, sponge, steps):
    c = (n - 1) / 2  # source at the centre of an n^3 box, receiver 8 cells along x
    sim = Simulation(
        (n, n, n), 4, courant=0.3, backend="cpu", initial="zero", size=2, nt=8, sponge=sponge,
        sources=[Source((c, c, c), frequency=0.06)], receivers=[(c + 8.0, c, c)],
    )  # fmt: skip
    sim.run(steps)
    return sim.traces[:, 0]


def test_sponge_cuts_the_boundary_reflection_by_20_db():
    """Reflections = trace in a 61^3 box minus the trace in a 141^3 box (no echo back in time)."""
    steps = 360  # the echo of the nearest face (52 cells of path) has come and gone
    reference = _trace_at_8_cells(141, 0, steps)
    echo_zero = np.abs(_trace_at_8_cells(61, 0, steps) - reference).max()
    echo_sponge = np.abs(_trace_at_8_cells(61, DEFAULT_SPONGE, steps) - reference).max()
    ratio_db = 20 * np.log10(echo_zero / echo_sponge)
    print(f"reflection: zero boundary {echo_zero:.3g}, sponge {echo_sponge:.3g}: {ratio_db:.1f} dB less")
    assert echo_zero > 0.1 * np.abs(reference).max()  # the zero boundary does reflect
    assert ratio_db >= 20.0


def test_snapshots_stop_diamondtorre_at_their_steps_and_survive_a_stop(tmp_path):
    sim = Simulation(SHAPE, 2, backend="cpu", size=2, nt=8)
    ref = Simulation(SHAPE, 2, backend="cpu", algorithm="stepwise")

    def stop_after_12(s, stats):
        if s.time_step >= 12:
            s.stop()

    stats = sim.run(40, snapshot_every=5, snapshot_dir=tmp_path, callback=stop_after_12)
    assert stats.interrupted and sim.time_step == 15  # sweeps of 5: 5, 10, 15
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == [f"snapshot_{k:07d}.npz" for k in (0, 5, 10, 15)]
    for k in (5, 10, 15):
        ref.run(5)
        with np.load(tmp_path / f"snapshot_{k:07d}.npz") as data:
            assert int(data["step"]) == k
            assert np.array_equal(data["field"], ref.field)
    memory = Simulation(SHAPE, 2, backend="cpu")
    memory.run(7, snapshot_every=3)
    assert [k for k, _ in memory.snapshots.frames] == [0, 3, 6]


def test_vti_snapshots_are_read_by_pyvista(tmp_path):
    pv = pytest.importorskip("pyvista")
    sim = Simulation(SHAPE, 2, backend="cpu", spacing=2.0)
    sim.run(4, snapshot_every=4, snapshot_dir=tmp_path, snapshot_formats=("vti", "npz"))
    grid = pv.read(tmp_path / "snapshot_0000004.vti")
    assert grid.dimensions == SHAPE and grid.spacing == (2.0, 2.0, 2.0)
    u = np.asarray(grid.point_data["u"]).reshape(SHAPE, order="F")
    assert np.array_equal(u, sim.field)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (
            {"sources": [Source((30, 1, 1), units="grid")]},
            ValueError,
            r"source 0 at \(30.0, 1.0, 1.0\) lies outside",
        ),
        ({"receivers": [(1, 1, -1)]}, ValueError, "receiver 0 at .* lies outside the grid"),
        ({"velocity": np.ones((3, 3, 3))}, ValueError, "velocity model must have the grid's shape"),
        ({"velocity": -np.ones(SHAPE)}, ValueError, "finite and > 0"),
        ({"sponge": -2}, ValueError, "sponge must be a width in cells >= 0"),
        ({"sponge": 12}, ValueError, "leaves no interior"),
        ({"sources": [Source((3, 3, 3), frequency=0.5, units="grid")]}, ValueError, "aliases below 2"),
    ],
)
def test_bad_physics_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        Simulation(SHAPE, 2, backend="cpu", **kwargs)


def test_stability_uses_the_largest_velocity():
    v = np.ones(SHAPE)
    v[3, 3, 3] = 2.0
    with pytest.raises(ValueError, match="above the stability limit"):
        Simulation(SHAPE, 2, backend="cpu", velocity=v, dt=0.4)
    assert Simulation(SHAPE, 2, backend="cpu", velocity=v, dt=0.25).params.courant == pytest.approx(0.5)


def test_a_reused_snapshot_collector_does_not_repeat_the_boundary_frame():
    from diamondlab.engine.outputs.snapshots import Snapshots

    sim = Simulation(SHAPE, 2, backend="cpu", size=1, nt=4)
    shots = Snapshots(5, formats="npz")
    sim.run(10, snapshots=shots)
    sim.run(10, snapshots=shots)
    assert [k for k, _ in shots.frames] == [0, 5, 10, 15, 20]


def test_a_layered_model_is_k_per_depth_with_the_per_cell_values():
    """Physics finds a layered model (every column equal) and keeps K per depth, the very float32 values
    a per-cell model gets (the kernels' equality: tests/kernels/cuda_sim_cases.py); one changed cell makes
    it a per-cell model again."""
    from diamondlab.engine.equations.acoustic import Physics

    velocity = layered_model(SHAPE, (1.0, 1.3, 0.8))
    physics = Physics(SHAPE, 0.5, velocity, sponge=3)
    medium = physics.medium(0.3)
    assert medium.variant == "layered" and medium.kappa.shape == (SHAPE[2],)
    assert physics.summary() == "layered velocity model, sponge 3"
    per_cell = ((velocity.astype(np.float64) * 0.3 / 0.5) ** 2).astype(np.float32)
    assert np.array_equal(medium.kappa_array(), per_cell)
    bumped = velocity.copy()
    bumped[3, 4, 5] *= 1.01
    model = Physics(SHAPE, 0.5, bumped).medium(0.3)
    cell = np.ravel_multi_index((3, 4, 5), SHAPE)
    assert model.variant == "model"
    assert np.array_equal(np.delete(model.kappa.ravel(), cell), np.delete(per_cell.ravel(), cell))
