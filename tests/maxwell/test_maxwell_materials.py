"""Media, objects and the material table."""

import numpy as np
import pytest

from diamondlab.maxwell.materials import (
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
    t = material_table([Box((0, 0, 0), (9, 9, 4.6), glass), Sphere((5, 5, 5), 2, metal)], shape, dt=0.5)
    assert t.media == (Dielectric(), glass, metal)
    # Ez of cell z=4 sits at z=4.5: in the box; of z=5 at 5.5: not
    assert t.index[2, 1, 1, 4] == 1 and t.index[2, 1, 1, 5] == 0
    assert t.index[0, 1, 1, 4] == 1 and t.index[0, 1, 1, 5] == 0  # Ex of z=4 sits at z=4
    assert t.medium_at(2, (5, 5, 5)) is metal and t.drude
    for c in range(3):  # the table and the point lookup agree everywhere
        for cell in [(5, 5, 5), (1, 1, 4), (3, 5, 5), (8, 8, 8)]:
            assert medium_at([Box((0, 0, 0), (9, 9, 4.6), glass), Sphere((5, 5, 5), 2, metal)], c, cell) \
                is t.medium_at(c, cell)


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
    ],
)
def test_bad_media_and_objects(make, match):
    with pytest.raises((ValueError, TypeError), match=match):
        make()
