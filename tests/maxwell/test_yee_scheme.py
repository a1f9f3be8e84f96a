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
