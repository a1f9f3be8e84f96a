import numpy as np
import pytest

from diamondlab.sources import (
    Receiver,
    Source,
    check_resolution,
    gaussian_derivative,
    ricker,
    trilinear_points,
)


def test_ricker_peaks_at_its_delay_and_starts_near_zero():
    t = np.linspace(0, 0.3, 3001)
    w = ricker(t, 10.0)
    assert t[np.argmax(w)] == pytest.approx(0.15, abs=1e-4)
    assert abs(w[0]) < 1e-8
    assert abs(gaussian_derivative(0.15, 10.0)) < 1e-12


def test_source_samples_named_and_user_wavelets():
    src = Source((1, 2, 3), "ricker", frequency=5.0, amplitude=2.0)
    assert np.allclose(src.samples(4, 0.01, first_step=2), 2.0 * ricker(np.arange(2, 6) * 0.01, 5.0))
    user = Source((0, 0, 0), wavelet=[1.0, 2.0, 3.0])
    assert user.samples(5, 0.1, first_step=1).tolist() == [2.0, 3.0, 0.0, 0.0, 0.0]


def test_trilinear_weights_sum_to_one_and_interpolate_linear_fields():
    cells, w = trilinear_points((2.5, 3.25, 0.75), (8, 8, 8), 0.5, "physical", "receiver 0")
    assert w.sum() == pytest.approx(1.0)
    # a linear field is reproduced exactly: position (5, 6.5, 1.5) in cells
    assert (w @ (cells @ np.array([1.0, 10.0, 100.0]))) == pytest.approx(5 + 65 + 150)
    assert trilinear_points((7, 7, 7), (8, 8, 8), 1.0, "grid", "x")[0].tolist() == [[7, 7, 7]]


@pytest.mark.parametrize("position", [(-0.1, 1, 1), (1, 8.01, 1), (1, 1, 100)])
def test_points_outside_the_grid_are_refused(position):
    with pytest.raises(ValueError, match=r"source 3 at .* lies outside the grid \(grid units: 0 <= x <= 8"):
        trilinear_points(position, (9, 9, 9), 1.0, "grid", "source 3")


def test_bad_descriptions():
    with pytest.raises(ValueError, match="wavelet must be one of"):
        Source((0, 0, 0), "sinc")
    with pytest.raises(ValueError, match="frequency must be a finite number > 0"):
        Source((0, 0, 0), frequency=0)
    with pytest.raises(ValueError, match="three finite numbers"):
        Receiver((0, 0))
    with pytest.raises(ValueError, match="units must be"):
        Receiver((0, 0, 0), units="km")


def test_resolution_warns_then_refuses():
    check_resolution([Source((0, 0, 0), frequency=10.0)], velocity_min=1500.0, spacing=5.0)  # 12 ppw
    with pytest.warns(UserWarning, match=r"source 0: 3.00 grid points per shortest wavelength"):
        check_resolution([Source((0, 0, 0), frequency=20.0)], velocity_min=1500.0, spacing=10.0)
    with pytest.raises(ValueError, match="aliases below 2: use frequency <= 30"):
        check_resolution([Source((0, 0, 0), frequency=80.0)], velocity_min=1500.0, spacing=10.0)
