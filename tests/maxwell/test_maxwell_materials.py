"""Media, objects and the material table."""

import numpy as np
import pytest

from diamondlab.maxwell.materials import (
    AVERAGING_LEVELS,
    PEC,
    Box,
    Cylinder,
    Dielectric,
    Drude,
    IndexArray,
    Slab,
    Sphere,
    material_table,
    medium_at,
)


def test_later_objects_cover_earlier_and_components_are_staggered():
    shape = (10, 10, 10)
    glass, metal = Dielectric(2.25), Drude(1.0, 2.0, 0.1)
    scene = [Box((0, 0, 0), (9, 9, 4.6), glass), Sphere((5, 5, 5), 2, metal)]
    t = material_table(scene, shape, dt=0.5, eps_averaging=False)
    assert t.media == (Dielectric(), glass, metal)
    # Ez of cell z=4 sits at z=4.5: in the box; of z=5 at 5.5: not
    assert t.index[2, 1, 1, 4] == 1 and t.index[2, 1, 1, 5] == 0
    assert t.index[0, 1, 1, 4] == 1 and t.index[0, 1, 1, 5] == 0  # Ex of z=4 sits at z=4
    assert t.medium_at(2, (5, 5, 5)) is metal and t.drude
    for c in range(3):  # the table and the point lookup agree everywhere
        for cell in [(5, 5, 5), (1, 1, 4), (3, 5, 5), (8, 8, 8)]:
            assert medium_at(scene, c, cell, eps_averaging=False) is t.medium_at(c, cell)


def test_coefficients():
    dt = 0.4
    t = material_table([Box((0, 0, 0), (3, 3, 3), Dielectric(4.0, sigma=0.5)),
                        Box((4, 4, 4), (5, 5, 5), PEC), Box((6, 6, 6), (7, 7, 7), Drude(2.0, 1.0, 0.2))],
                       (8, 8, 8), dt)
    ca, cb, kj, bj, dh = t.coefficients[1, :5]
    s = 0.5 * dt / 8
    assert ca == np.float32((1 - s) / (1 + s)) and cb == np.float32(dt / 4 / (1 + s)) and kj == bj == 0
    assert tuple(t.coefficients[2, :4]) == (0, 0, 0, 0)  # PEC
    g = 0.2 * dt / 2
    assert t.coefficients[3, 2] == np.float32((1 - g) / (1 + g))
    assert t.coefficients[3, 3] == np.float32(dt / (1 + g))
    assert t.coefficients[3, 1] == np.float32(dt / 2)


def test_pec_faces_hold_tangential_components_only():
    t = material_table([], (6, 6, 6), 0.5, pec_faces=True)
    pec = t.media.index(PEC)
    assert t.index[2, 0, 3, 3] == pec and t.index[1, 0, 3, 3] == pec  # Ez, Ey on an x face
    assert t.index[0, 0, 3, 3] == 0  # Ex is normal to it (at x = 1/2: inside)
    assert t.index[0, 3, 3, 5] == pec and t.index[2, 3, 3, 5] == 0


def test_shapes_and_index_array():
    shape = (8, 8, 8)
    idx = np.zeros(shape, dtype=np.int64)
    idx[:, :, 4:] = 1
    t = material_table([IndexArray(idx, (Dielectric(), Dielectric(3.0)))], shape, 0.5)
    assert t.index[0, 2, 2, 5] == 1 and t.index[0, 2, 2, 3] == 0
    assert bool(Slab("x", 2, 3).contains(2.5, 0, 0)) and not bool(Slab("x", 2, 3).contains(3.5, 0, 0))
    c = Cylinder((4, 4, 4), 1.5, axis="z", height=2)
    assert bool(c.contains(4, 5, 4.9)) and not bool(c.contains(4, 5, 5.1))


def _eps(table, c):
    return table.coefficients[table.index[c], 5].astype(np.float64)


def test_averaging_of_a_plane_interface_is_harmonic_across_and_arithmetic_along():
    """A slab face at x = 3.3: Ex (normal to it) takes the harmonic mean of the cell it crosses, Ey and Ez
    (along it) the arithmetic mean, to the table's 1/64 levels of 1/eps; off the face the staircase."""
    glass = Dielectric(4.0)
    t = material_table([Slab("x", -5, 3.3, glass)], (8, 4, 4), 0.5)
    step = (1 - 1 / 4) / AVERAGING_LEVELS
    # Ex of x=3 sits at 3.5: its cell [3, 4] is 0.3 glass; Ey of x=3 at 3: [2.5, 3.5] is 0.8 glass
    assert abs(1 / _eps(t, 0)[3, 1, 1] - (0.3 / 4 + 0.7)) <= step / 2 + 1e-9
    for c in (1, 2):
        assert abs(1 / _eps(t, c)[3, 1, 1] - 1 / (0.8 * 4 + 0.2)) <= step / 2 + 1e-9
    assert (_eps(t, 0)[:3] == 4).all() and (_eps(t, 0)[4:] == 1).all()
    assert (_eps(t, 1)[:3] == 4).all() and (_eps(t, 1)[4:] == 1).all()
    off = material_table([Slab("x", -5, 3.3, glass)], (8, 4, 4), 0.5, eps_averaging=False)
    assert set(off.media) == {Dielectric(), glass}
    assert _eps(off, 0)[3, 1, 1] == 1 and _eps(off, 1)[3, 1, 1] == 4


def test_averaged_sphere_holds_its_volume_and_the_point_lookup_agrees():
    """A weak sphere's (eps 1.01: eps_eff - 1 is the fill fraction times 0.01 whatever the normal) summed
    eps - 1 is the ball's volume to 0.1 % averaged, 2 % off as a staircase; medium_at gives the table's
    medium cell by cell; Drude, PEC and conductors stay stairs."""
    shape, r = (24, 24, 24), 4.7
    weak = [Sphere((12, 12, 12), r, Dielectric(1.01))]
    exact = 0.01 * 4 / 3 * np.pi * r**3
    for averaging, low, high in ((True, 0, 0.001), (False, 0.02, 1)):
        t = material_table(weak, shape, 0.5, eps_averaging=averaging)
        for c in range(3):
            assert low <= abs((_eps(t, c) - 1).sum() / exact - 1) <= high
    ball = [Sphere((11.7, 12.1, 12.4), 5.3, Dielectric(2.25))]
    on = material_table(ball, shape, 0.5)
    assert len(on.media) - 2 <= AVERAGING_LEVELS - 1
    cells = [(int(a), int(b), int(c)) for a, b, c in np.argwhere(on.index[1] >= 2)[::37]]
    assert len(cells) > 5
    for cell in cells + [(11, 12, 12), (2, 2, 2)]:
        assert medium_at(ball, 1, cell) == on.medium_at(1, cell)
    for medium in (Drude(1.0, 0.5, 0.01), PEC, Dielectric(2.25, sigma=0.1)):
        scene = [Sphere((11.7, 12.1, 12.4), r, medium)]
        assert np.array_equal(material_table(scene, shape, 0.5).index,
                              material_table(scene, shape, 0.5, eps_averaging=False).index)


def test_averaging_sets_up_a_200_cube_with_a_40_cell_sphere_in_seconds():
    import time

    start = time.perf_counter()
    t = material_table([Sphere((100, 100, 100), 20, Dielectric(2.25))], (200, 200, 200), 0.5)
    assert time.perf_counter() - start < 15  # about 2 s on one core
    assert 2 < len(t.media) <= 2 + AVERAGING_LEVELS


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: Dielectric(eps=0.5), "eps must be a finite number >= 1"),
        (lambda: Dielectric(sigma=-1), "sigma must be"),
        (lambda: Drude(wp=-1), "wp must be"),
        (lambda: Drude(gamma=float("nan")), "gamma must be"),
        (lambda: Sphere((1, 2), 3), "three finite numbers"),
        (lambda: Sphere((1, 2, 3), -3), "radius"),
        (lambda: Box((3, 0, 0), (1, 1, 1)), "lo must not exceed hi"),
        (lambda: Slab("w", 0, 1), "axis must be one of"),
        (lambda: Sphere((1, 2, 3), 1, medium="gold"), "must be a Dielectric, Drude or PEC"),
        (lambda: IndexArray(np.zeros((2, 2, 2), int) + 3, (Dielectric(),)), r"lie in \[0, 0\]"),
        (lambda: material_table(["sphere"], (4, 4, 4), 0.5), r"materials\[0\] must be"),
        (lambda: material_table([], (4, 4, 4), 0.5, eps_averaging="yes"), "eps_averaging must be True or"),
    ],
)
def test_bad_media_and_objects(make, match):
    with pytest.raises((ValueError, TypeError), match=match):
        make()
