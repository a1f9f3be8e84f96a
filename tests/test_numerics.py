"""Numerics: validated shapes, zero-sum float32 coefficients, the Gaussian pulse built in blocks."""

from fractions import Fraction

import numpy as np
import pytest

from diamondlab.numerics import (
    SUPPORTED_ORDERS,
    courant_limit,
    gaussian_pulse,
    reference_step,
    stencil_weights,
    update_coefficients,
    validate_shape,
)


@pytest.mark.parametrize("order", SUPPORTED_ORDERS)
@pytest.mark.parametrize("courant", [1e-3, 0.1, 0.2, 0.3, 0.37, 0.45, 0.5, 0.577])
def test_coefficients_sum_to_zero_exactly_and_stay_close_to_k_times_w(order, courant):
    if courant > courant_limit(order):
        pytest.skip("beyond the stability limit")
    c = update_coefficients(order, courant)
    assert c.dtype == np.float32
    assert Fraction(float(c[0])) + 6 * sum(Fraction(float(x)) for x in c[1:]) == 0
    k = Fraction(courant) ** 2
    weights = [Fraction(w) for w in stencil_weights(order)]
    exact = [3 * k * weights[0]] + [k * w for w in weights[1:]]
    ulp = np.spacing(np.float32(abs(c[0])))
    for got, want in zip(c, exact, strict=True):
        assert abs(Fraction(float(got)) - want) <= Fraction(float(ulp)) * 3 / 2


def test_zero_courant_gives_zeros_and_bad_courant_is_refused():
    assert update_coefficients(8, 0.0).tolist() == [0.0] * 5
    with pytest.raises(ValueError, match="courant number must be finite"):
        update_coefficients(4, float("nan"))
    with pytest.raises(ValueError, match="beyond float32"):
        update_coefficients(4, 1e20)


def _leapfrog64(f, g, kappa, weights):
    """Float64 leapfrog with the exact weights (zero outside the grid)."""
    shs = len(weights) - 1
    padded = np.pad(f, shs)
    lap = 3 * weights[0] * f
    for i in range(1, shs + 1):
        for axis in range(3):
            for shift in (i, -i):
                window = [slice(shs, shs + n) for n in f.shape]
                window[axis] = slice(shs + shift, shs + shift + f.shape[axis])
                lap = lap + weights[i] * padded[tuple(window)]
    return 2 * f - g + kappa * lap


@pytest.mark.parametrize("order", [4, 8])
def test_zero_sum_coefficients_cut_the_float32_error_against_a_float64_leapfrog(order):
    courant, steps = 0.45, 60
    weights = stencil_weights(order)
    kappa = courant * courant
    rounded_alone = np.concatenate([[3 * kappa * weights[0]], kappa * weights[1:]]).astype(np.float32)
    pulse = gaussian_pulse((24, 24, 24), width=4.0)
    f, g = pulse.astype(np.float64), pulse.astype(np.float64)
    for _ in range(steps):
        f, g = _leapfrog64(f, g, kappa, weights), f
    errors = []
    for coeffs in (rounded_alone, update_coefficients(order, courant)):
        a, b = pulse, pulse
        for _ in range(steps):
            a, b = reference_step(a, b, coeffs), a
        errors.append(float(np.sqrt(np.mean((a - f) ** 2))))
    assert errors[1] < errors[0] / 4, errors


def test_a_constant_power_of_two_field_stays_exactly_constant():
    for order in SUPPORTED_ORDERS:
        field = np.full((3 * order, 3 * order, 3 * order), 0.5, np.float32)
        shs = order // 2
        inner = (slice(shs, -shs),) * 3
        new = reference_step(field, field, update_coefficients(order, 0.31))
        assert np.all(new[inner] == 0.5)


def test_shape_must_be_whole_numbers():
    assert validate_shape([4, 5.0, 6]) == (4, 5, 6)
    with pytest.raises(ValueError, match="three positive ints"):
        validate_shape((32.5, 32, 32))
    with pytest.raises(ValueError, match="three positive ints"):
        validate_shape((0, 4, 4))
    with pytest.raises(TypeError, match="three ints"):
        validate_shape("abc")


def test_pulse_in_blocks_equals_the_whole_grid_formula(monkeypatch):
    import diamondlab.numerics as numerics

    whole = gaussian_pulse((7, 9, 11), center=(3.2, 4.0, 5.5), width=2.5, distance=1.5)
    monkeypatch.setattr(numerics, "PULSE_BLOCK_CELLS", 13)  # several blocks per plane
    blocks = gaussian_pulse((7, 9, 11), center=(3.2, 4.0, 5.5), width=2.5, distance=1.5)
    assert np.array_equal(whole, blocks)
    ax, ay, az = (np.arange(n) - c for n, c in zip((7, 9, 11), (3.2, 4.0, 5.5), strict=True))
    r = np.sqrt(ax[:, None, None] ** 2 + ay[None, :, None] ** 2 + az[None, None, :] ** 2)
    phi = lambda s: np.exp(-(s * s) / (2 * 2.5**2))  # noqa: E731
    expected = ((r - 1.5) * phi(r - 1.5) + (r + 1.5) * phi(r + 1.5)) / (2 * r)
    np.testing.assert_allclose(blocks, expected, rtol=1e-6, atol=1e-7)


def test_pulse_out_must_fit():
    with pytest.raises(ValueError, match=r"out must be a float32 array of shape \(4, 4, 4\)"):
        gaussian_pulse((4, 4, 4), out=np.zeros((4, 4, 4)))
    frozen = np.zeros((4, 4, 4), np.float32)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="out must be writable"):
        gaussian_pulse((4, 4, 4), out=frozen)


def test_paper_table_1_in_its_own_convention():
    """Paper 000's Table 1 (minus signs restored), and w_0 = 2 C_0 for the weights diamondlab stores."""
    from fractions import Fraction as F

    from diamondlab.numerics import paper_coefficients, stencil_weights

    table = {2: (F(-1), F(1)), 4: (F(-5, 4), F(4, 3), F(-1, 12)),
             6: (F(-49, 36), F(3, 2), F(-3, 20), F(1, 90)),
             8: (F(-205, 144), F(8, 5), F(-1, 5), F(8, 315), F(-1, 560))}
    for order, row in table.items():
        c = paper_coefficients(order)
        assert c == row
        assert 2 * c[0] + 2 * sum(c[1:]) == 0  # the paper's sum counts every C_i twice
        w = stencil_weights(order)
        assert w[0] == float(2 * c[0]) and list(w[1:]) == [float(x) for x in c[1:]]
