import numpy as np
import pytest

from diamondlab.media import (
    anomaly_model,
    check_velocity,
    damping_profiles,
    example_model,
    layered_model,
    sponge_damping,
)


def test_example_models_have_the_grid_shape_and_positive_values():
    for name in ("layered", "anomaly"):
        m = example_model(name, (10, 12, 14))
        assert m.shape == (10, 12, 14) and m.dtype == np.float32 and (m > 0).all()
        assert len(np.unique(m)) > 1
    assert layered_model((2, 2, 4), (1.0, 3.0), depths=[1])[0, 0].tolist() == [1.0, 3.0, 3.0, 3.0]
    assert anomaly_model((5, 5, 5), 2.0, 1.0, radius=0.5).min() == 1.0


@pytest.mark.parametrize(
    ("velocity", "match"),
    [
        (np.ones((3, 3)), r"shape \(3, 3, 3\); got \(3, 3\)"),
        (np.zeros((3, 3, 3)), "finite and > 0 everywhere; 27 cells are not"),
        (np.full((3, 3, 3), np.nan), "finite and > 0"),
    ],
)
def test_bad_velocity_models(velocity, match):
    with pytest.raises(ValueError, match=match):
        check_velocity(velocity, (3, 3, 3))


def test_sponge_profile():
    s = sponge_damping((30, 30, 30), 6, velocity_max=2.0, spacing=1.0, dt=0.25)
    assert s[6:24, 6:24, 6:24].max() == 0
    edge = s[:7, 15, 15]
    assert (np.diff(edge) < 0).all() and edge[-1] == 0
    eta_max = 3 * 2.0 * np.log(1e2) / (2 * 6)
    assert s[0, 15, 15] == pytest.approx(eta_max * 0.25 / 2, rel=1e-6)
    with pytest.raises(ValueError, match="leaves no interior"):
        sponge_damping((10, 30, 30), 5, 1.0, 1.0, 0.1)


def test_sponge_is_the_maximum_of_three_profiles():
    damp = sponge_damping((21, 18, 25), 5, velocity_max=1.5, spacing=1.0, dt=0.3)
    sx, sy, sz = damping_profiles(damp)
    rebuilt = np.maximum(np.maximum(sx[:, None, None], sy[None, :, None]), sz[None, None, :])
    assert np.array_equal(rebuilt, damp) and rebuilt.dtype == np.float32
    bumpy = damp.copy()
    bumpy[10, 9, 12] = 0.5  # one damped cell inside: not separable
    with pytest.raises(ValueError, match="per-axis profiles"):
        damping_profiles(bumpy)


def test_layered_medium_keeps_k_per_depth_through_cuts_and_swaps():
    from diamondlab.media import Medium

    shape = (6, 5, 4)
    profile = np.float32([0.1, 0.2, 0.3, 0.4])
    m = Medium(profile, None, shape)
    assert m.variant == "layered" and m.kappa.shape == (4,)
    assert np.array_equal(m.kappa_array(), np.broadcast_to(profile, shape))
    assert m.cut(0, 1, 4).variant == "layered" and m.cut(1, 2, 5).kappa.shape == (4,)
    assert np.array_equal(m.cut(2, 1, 3).kappa, profile[1:3])
    swapped = m.swap_xz()  # K now varies along x: per cell
    assert swapped.variant == "model" and np.array_equal(swapped.kappa, m.kappa_array().transpose(2, 1, 0))
    with pytest.raises(ValueError, match="depth profile of length 4"):
        Medium(np.ones(5, np.float32), None, shape)
