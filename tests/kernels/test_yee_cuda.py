"""The host side of the Maxwell CUDA kernels: what a stepwise half step launches."""

import numpy as np
import pytest

from diamondlab.kernels.yee_cuda import stepwise_launches


def _columns(where):
    """The (x, y) columns of a launch: a box's or a list's."""
    if isinstance(where, tuple):
        x0, y0, wx, wy = where
        xs, ys = np.meshgrid(np.arange(x0, x0 + wx), np.arange(y0, y0 + wy), indexing="ij")
        return xs.ravel(), ys.ravel()
    assert where.dtype == np.int32
    assert np.all(np.diff(where[1] * 10**6 + where[0]) > 0)  # x fastest, as a grid's blocks run
    return where[0], where[1]


@pytest.mark.parametrize("seed", range(6))
def test_every_column_is_launched_once_by_a_kernel_with_its_layers_and_media(seed):
    rng = np.random.default_rng(seed)
    nx, ny = rng.integers(1, 14, size=2)
    lo, hi = rng.integers(0, 4, size=2)
    x_layer = np.zeros(nx, bool)
    x_layer[:lo], x_layer[nx - hi:] = True, True
    y_layer = np.zeros(ny, bool)
    y_layer[: rng.integers(0, 3)] = True
    drude = rng.random((nx, ny)) < 0.1 * seed
    seen = np.zeros((nx, ny), int)
    for layered, has_drude, where in stepwise_launches(x_layer, y_layer, drude):
        x, y = _columns(where)
        assert x.size > 0
        assert np.array_equal(x_layer[x] | y_layer[y], np.full(x.size, layered))
        assert has_drude or not drude[x, y].any()  # a Drude column never runs without the current
        seen[x, y] += 1
    assert np.all(seen == 1)


def test_the_drude_branch_runs_only_in_the_box_of_the_drude_columns():
    drude = np.zeros((10, 8), bool)
    drude[4:6, 3:5] = True
    launches = stepwise_launches(np.zeros(10, bool), np.zeros(8, bool), drude)
    assert [(d, w) for _, d, w in launches if d] == [(True, (4, 3, 2, 2))]
    assert sum(w[2] * w[3] for *_, w in launches) == 80


def test_layers_inside_the_grid_are_refused():
    with pytest.raises(ValueError, match="at the faces"):
        stepwise_launches(np.array([0, 1, 0], bool), np.zeros(2, bool))
