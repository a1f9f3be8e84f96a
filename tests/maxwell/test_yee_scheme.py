"""The Yee scheme's facts: weights, Courant limits, the dispersion relation, parameter checks."""

import numpy as np
import pytest

from diamondlab.maxwell.scheme import YeeParameters, yee_courant_limit, yee_frequency, yee_weights


@pytest.mark.parametrize("order", [2, 4])
def test_weights_are_a_first_derivative_of_the_order(order):
    # sum_m w_m ((m - 1/2)^(2j+1)) matches d/dx of x^(2j+1) at 0 up to the order: consistency
    w = yee_weights(order)
    m = np.arange(1, len(w) + 1)
    assert np.isclose((w * (2 * m - 1)).sum(), 1.0)
    if order == 4:
        assert np.isclose((w * (2 * m - 1) ** 3).sum(), 0.0)


def test_courant_limits():
    assert yee_courant_limit(2) == pytest.approx(1 / np.sqrt(3))
    assert yee_courant_limit(4) == pytest.approx(6 / (7 * np.sqrt(3)))


@pytest.mark.parametrize("order", [2, 4])
def test_dispersion_tends_to_light_at_long_wavelengths(order):
    k = np.array([[0.02, 0.01, 0.005]])
    w = yee_frequency(k, order, dt=0.3)[0]
    assert w == pytest.approx(np.linalg.norm(k), rel=1e-3)
    # and lags it at short ones where the spatial error leads (small dt)
    kk = np.array([[0.6, 0.0, 0.0]])
    assert yee_frequency(kk, order, dt=0.05)[0] < 0.6


def _forward(f, axis, order):
    """The order's forward difference of ``f`` along a periodic ``axis`` (at ``i + 1/2``)."""
    return sum(w * (np.roll(f, -m, axis) - np.roll(f, m - 1, axis))
               for m, w in enumerate(yee_weights(order).astype(np.float32).astype(np.float64), start=1))


@pytest.mark.parametrize("order", [2, 4])
def test_a_plane_wave_on_the_grid_follows_the_yee_dispersion_relation(order):
    """A standing plane wave ``Ex = cos(k . r)``, ``k = 2 pi (0, 1/6, 1/8)`` oblique in a periodic y, z cell
    (6 and 8 cells a wavelength), started from the exact discrete mode (``H^{-1/2} = dt curl E^0 / 2`` with
    the order's stencil), equals ``cos(w n dt) Ex^0`` after 60 steps, ``w`` from :func:`yee_frequency` of
    the order, to float32 rounding (1.8e-6 and 4.1e-7 found at orders 2 and 4); the continuous ``w = |k|``
    (0.72, 0.23) and the other order's ``w`` (1.1, 1.0) are off by far more.  The x faces are perfect
    conductors; at order 4 their stencil reads zeros beyond the wall, which disturbs this x-uniform field
    (Ey, Ez up to 0.01), 3 cells a step at most: the grid is long enough in x that the middle never hears
    it."""
    from diamondlab import Simulation

    steps, ny, nz = 60, 12, 8
    nx = 6 * steps + 8
    k = np.array([0.0, 2 * np.pi / 6, 2 * np.pi / 8])
    y, z = np.arange(ny)[None, :, None], np.arange(nz)[None, None, :]
    e0 = np.zeros((3, nx, ny, nz))
    e0[0] = np.cos(k[1] * y + k[2] * z) * np.ones((nx, 1, 1))  # Ex at (i + 1/2, j, k)
    sim = Simulation((nx, ny, nz), order, equation="maxwell", backend="cpu", periodic="yz")
    dt = sim.params.dt
    h = np.zeros_like(e0)
    h[1] = dt / 2 * _forward(e0[0], 2, order)   # (curl E)_y = dEx/dz
    h[2] = -dt / 2 * _forward(e0[0], 1, order)  # (curl E)_z = -dEx/dy
    sim.reset((e0.astype(np.float32), h.astype(np.float32)))
    sim.run(steps)
    middle = sim.E[0, nx // 2 - 1 : nx // 2 + 1].astype(np.float64)

    def error(w):
        return np.abs(middle - np.cos(w * steps * dt) * e0[0, :2]).max()

    err = error(yee_frequency(k[None], order, dt)[0])
    assert err < 1e-5, err  # float32 rounding over 60 steps
    assert error(np.linalg.norm(k)) > 1000 * err
    assert error(yee_frequency(k[None], 6 - order, dt)[0]) > 1000 * err
    walls = np.abs(sim.E[1:]).max()  # what the x faces stir up: nothing at order 2, seen at order 4
    assert (walls == 0) if order == 2 else (walls > 1e-3)


def test_fourth_order_disperses_less():
    k = np.array([[0.5, 0.0, 0.0]])
    e2 = abs(yee_frequency(k, 2, dt=0.2)[0] - 0.5)
    e4 = abs(yee_frequency(k, 4, dt=0.2)[0] - 0.5)
    assert e4 < e2 / 4


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"order": 3}, "order must be one of"),
        ({"order": 2, "courant": 0.58}, "courant must be > 0 and at most 0.57735"),
        ({"order": 4, "courant": 0.5}, "at most 0.494872"),
        ({"order": 2, "courant": -1}, "courant"),
        ({"order": 2, "dt": float("nan")}, "dt must be a finite"),
        ({"order": 2, "dt": 0.7}, "from dt=0.7"),
        ({"order": 2, "spacing": 0}, "spacing must be"),
        ({"order": 2, "courant": 0.3, "dt": 0.3}, "not both"),
    ],
)
def test_bad_parameters_name_themselves(kwargs, match):
    with pytest.raises(ValueError, match=match):
        YeeParameters(**kwargs)
