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


def test_a_sweep_compiled_for_its_grid_has_its_sizes_as_constants():
    """``shape`` puts the grid's sizes in the torres' code (the kernel's arguments of the same names are not
    read), and nothing else changes; a shape that is not three sizes is refused."""
    generic = generate_yee_source(2, 2, prefetch=2)
    fixed = generate_yee_source(2, 2, prefetch=2, shape=(96, 64, 32))
    for line in ("nx = 96", "ny = 64", "nz = 32", "pz = 34", "sx = 2244", "n = 219912", "nyz = 2048",
                 "nu = 196608"):
        assert f"\n    {line}\n" in fixed.split("def torre_boundary(")[0]
    assert "n = E.size // 3" in generic and "n = E.size // 3" not in fixed
    for torre in ("torre_interior", "torre_boundary"):  # the code after the sizes: the same
        after = [text.split(f"def {torre}(")[1].split("\n@cuda.jit")[0].split("unu2 = uint64(nu2)")[1]
                 for text in (generic, fixed)]
        assert after[0] == after[1] and "(E, base + " in after[0]
    with pytest.raises(ValueError, match="shape must be three sizes"):
        generate_yee_source(2, 2, shape=(4, 4))


def test_prefetch_is_checked():
    with pytest.raises(ValueError, match="prefetch must be one of"):
        generate_yee_source(2, 1, prefetch=3)
