"""The register-tile Yee sweep's source: what its L2 prefetches name (the values are checked under the
simulator, tests/engine/yee_cuda_sim_cases.py)."""

import re

import pytest

from diamondlab.kernels.yee_cuda_source import generate_yee_source

FIELD = re.compile(r"(LDCG|PREFETCH)\((E|H), base \+ (0|n|n2) \+ \((-?\d+)\) \* sx \+ \((-?\d+)\) \* pz\)")
MEDIUM = re.compile(r"(mat\[uint64\(|PREFETCH\(mat, )q \+ (0|nu|nu2) \+ "
                    r"\((-?\d+)\) \* nyz \+ \((-?\d+)\) \* nz")
# an interior tier's loads of a cell's three material indices: its index once, then the three components
MEDIUM_ROW = re.compile(r"mq = (?:uint64)?\(q \+ \((-?\d+)\) \* nyz \+ \((-?\d+)\) \* nz\)\n"
                        r"\s+mi0_\w+ = mat\[mq \+ 0\]\n\s+mi1_\w+ = mat\[mq \+ u?nu\]\n"
                        r"\s+mi2_\w+ = mat\[mq \+ u?nu2\]")


def _tiers(source: str, torre: str) -> list[str]:
    """The two tiers' code (H, then E) of the device function ``torre``."""
    body = source.split(f"def {torre}(")[1].split("\n@cuda.jit")[0]
    return body.split("while k < nt2:")[1].split("k += 1")[:2]


def _reads(tier: str, kind: str) -> tuple[set, set]:
    """``(fields, media)`` the tier loads (``kind`` "LDCG") or prefetches (``kind`` "PREFETCH"):
    ``(array, component, u, v)`` and ``(component, u, v)``."""
    fields = {(a, c, int(u), int(v)) for k, a, c, u, v in FIELD.findall(tier) if k == kind}
    if kind == "LDCG":
        media = {(c, int(u), int(v)) for u, v in MEDIUM_ROW.findall(tier) for c in ("0", "nu", "nu2")}
    else:
        media = {(c, int(u), int(v)) for k, c, u, v in MEDIUM.findall(tier) if k.startswith(kind)}
    return fields, media


@pytest.mark.parametrize(("order", "size"), [(2, 1), (2, 2), (4, 1)])
@pytest.mark.parametrize("ahead", [1, 2])
def test_a_tier_prefetches_what_the_tier_ahead_loads_first(order, size, ahead):
    """Tier k prefetches, ``ahead`` tiers early, every field value tier k + ahead loads (its entering cells
    and y-halo rows, of the array that tier reads) and the material of the cells its tile holds first; the
    boundary torres (guarded loads) prefetch nothing."""
    m = order // 2
    source = generate_yee_source(order, size, prefetch=ahead)
    tiers = _tiers(source, "torre_interior")
    for half in (0, 1):
        later = tiers[(half + ahead) % 2]
        loads, media = _reads(later, "LDCG")
        # the tier ahead's medium loads: those of cells no earlier tier's tile held (its front)
        front = {(c, u, v) for c, u, v in media if (c, u + m, v) not in media}
        fetched, fetched_media = _reads(tiers[half], "PREFETCH")
        assert fetched == {(a, c, u + ahead * m, v) for a, c, u, v in loads}
        assert fetched_media == {(c, u + ahead * m, v) for c, u, v in front}
        assert front and loads
        assert f"if k + {ahead} < nt2:" in tiers[half]
    assert "PREFETCH(" not in source.split("def torre_boundary(")[1].split("\n@cuda.jit")[0]
    assert "PREFETCH(" not in generate_yee_source(order, size)


@pytest.mark.parametrize(("order", "size"), [(2, 1), (2, 2), (4, 1)])
@pytest.mark.parametrize("physics", [False, True])
def test_a_sweep_compiled_for_its_grid_has_its_sizes_as_constants(order, size, physics):
    """``shape`` puts the grid's sizes in every torre's code (the kernel's arguments of the same names are
    not read), and nothing else changes; a shape that is not three whole sizes is refused."""
    nx, ny, nz = 96, 64, 32
    m = order // 2
    pz, sx = nz + 2 * m, (ny + 2 * m) * (nz + 2 * m)
    n, nu = (nx + 2 * m) * sx, nx * ny * nz
    expected = dict(nx=nx, ny=ny, nz=nz, pz=pz, sx=sx, n=n, n2=2 * n, nyz=ny * nz, nu=nu, nu2=2 * nu)
    features = dict(pml=physics, points=physics, drude=physics)
    generic = generate_yee_source(order, size, prefetch=1, **features)
    fixed = generate_yee_source(order, size, prefetch=1, shape=(nx, ny, nz), **features)
    torres = ("torre_interior", "torre_boundary") + (("torre_calm",) if physics else ())
    for torre in torres:
        code = [text.split(f"def {torre}(")[1].split("\n@cuda.jit")[0] for text in (generic, fixed)]
        head, after = code[1].split("unu = uint64(nu)")
        sizes = dict(re.findall(r"^    (\w+) = (\d+)$", head, re.MULTILINE))
        assert sizes == {k: str(v) for k, v in expected.items()}
        assert "E.size" not in code[1] and "n = E.size // 3" in code[0]
        assert code[0].split("unu = uint64(nu)")[1] == after and "(E, base + " in after
    with pytest.raises(ValueError, match="shape must be three whole sizes"):
        generate_yee_source(2, 2, shape=(4, 4))
    with pytest.raises(ValueError, match="shape must be three whole sizes"):
        generate_yee_source(2, 2, shape=(4, 4.5, 4))


def test_prefetch_is_checked():
    with pytest.raises(ValueError, match="prefetch must be one of"):
        generate_yee_source(2, 1, prefetch=3)
