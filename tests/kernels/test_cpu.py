import itertools

import numpy as np
import pytest

from diamondlab.geometry import stage_schedule
from diamondlab.kernels.cpu import cpu_kernels, generate_source
from diamondlab.kernels.points import point_tables
from diamondlab.numerics import reference_step, update_coefficients

ORDERS = [2, 4, 6, 8]


def _random_layers(shape, seed=0):
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal(shape).astype(np.float32) for _ in range(2))


def _pad(a, h):
    return np.ascontiguousarray(np.pad(a, h))


def _no_points(shape, h, height):
    return point_tables(shape, h).kernel_args(height)


@pytest.mark.parametrize("order", ORDERS)
def test_stepwise_kernel_equals_numpy_reference(order):
    h = order // 2
    prev, curr = _random_layers((11, 9, 7), seed=order)
    coeffs = update_coefficients(order, 0.3)
    f, g = _pad(curr, h), _pad(prev, h)
    cpu_kernels(order).stepwise_constant(f, g, 1, coeffs, *_no_points(curr.shape, h, 1))
    assert np.array_equal(g[h:-h, h:-h, h:-h], reference_step(curr, prev, coeffs))
    # the halo stays zero: the boundary is never written
    g[h:-h, h:-h, h:-h] = 0
    assert not g.any()


@pytest.mark.parametrize(("order", "size"), list(itertools.product(ORDERS, [1, 2, 3, 4])))
def test_diamondtorre_equals_stepwise_bit_for_bit(order, size):
    h, r = order // 2, order // 2 * size
    kernels = cpu_kernels(order)
    coeffs = update_coefficients(order, 0.25)
    for nx, ny, nz in [(2 * r + 3, 2 * r + 5, 7), (3 * r + 1, 2 * r, 5)]:
        prev, curr = _random_layers((nx, ny, nz), seed=nx)
        for nt in (1, 2, 3, 5, 8):
            s = stage_schedule(order, size, nt, nx, ny)
            f1, g1 = _pad(curr, h), _pad(prev, h)
            f2, g2 = f1.copy(), g1.copy()
            tables = _no_points((nx, ny, nz), h, nt)
            for _ in range(2):  # two sweeps
                kernels.stepwise_constant(f1, g1, nt, coeffs, *tables)
                kernels.diamondtorre_constant(
                    f2, g2, nt, r, s.torre_x0, s.torre_yc, s.stage_start, coeffs, *tables
                )
            assert np.array_equal(f1, f2), (nx, ny, nt)
            assert np.array_equal(g1, g2), (nx, ny, nt)


def test_generated_source_unrolls_every_distance():
    src = generate_source(8)
    for i in range(1, 5):
        assert f"c{i} * (" in src
    assert "fastmath" not in src


def test_the_papers_fig_10_tile_runs_on_the_cpu_bit_for_bit():
    """NO=2 DTS=6 (paper 000's Fig. 10 ran DTS=6, Nt=96; the GPU engine stops at DTS=4 with a clear
    message): DiamondTorre equals stepwise bit for bit on the CPU."""
    import numpy as np
    import pytest

    from diamondlab import Simulation
    from diamondlab.kernels.cuda import check_pair

    sims = [Simulation((56, 48, 8), 2, size=6, nt=24, backend="cpu", algorithm=a, initial="gaussian")
            for a in ("diamondtorre", "stepwise")]
    for sim in sims:
        sim.run(48)
    assert all(np.array_equal(a, b) for a, b in zip(sims[0].fields, sims[1].fields, strict=True))
    assert np.abs(sims[0].field).max() > 0
    with pytest.raises(ValueError, match=r"built for NO=2 with DTS in \(1, 2, 3, 4\); got DTS=6"):
        check_pair(2, 6)


@pytest.mark.parametrize("sponge", [0, 3])
def test_a_decaying_field_is_flushed_to_zero_not_left_subnormal(sponge):
    """A field decayed to the edge of float32 (a wave the sponge absorbed) goes to zero in both
    algorithms alike instead of sitting in subnormal floats, which x86 cores compute 30x slower."""
    import platform

    from diamondlab import Simulation

    if platform.machine().lower() not in ("x86_64", "amd64"):
        pytest.skip("flush-to-zero is set on x86-64 only")
    rng = np.random.default_rng(3)
    tiny = tuple(rng.standard_normal((14, 13, 12), dtype=np.float32) * np.float32(4e-38) for _ in range(2))
    runs = {}
    for algorithm in ("diamondtorre", "stepwise"):
        sim = Simulation((14, 13, 12), 4, backend="cpu", size=1, nt=4, sponge=sponge, algorithm=algorithm,
                         initial=tiny)
        sim.run(24)
        runs[algorithm] = sim.fields
    for dt, sw in zip(runs["diamondtorre"], runs["stepwise"], strict=True):
        assert np.array_equal(dt, sw)  # bit for bit, zeros included
        subnormal = (dt != 0) & (np.abs(dt) < np.finfo(np.float32).tiny)
        assert not subnormal.any() and (dt == 0).any()


def _x86_64() -> bool:
    import platform

    return platform.machine().lower() in ("x86_64", "amd64")


def _subnormal_products() -> tuple:
    """Products with a subnormal result, in NumPy float32 and float64 and in Python floats."""
    return np.float32(1e-40) * np.float32(1), np.float64(1e-310) * 1.0, 1e-310 * 1.0


@pytest.mark.parametrize("algorithm", ["stepwise", "diamondtorre"])
def test_a_cpu_run_leaves_every_threads_float_mode_alone(algorithm):
    """Issue 27: the kernels' flush-to-zero mode is put back, on the calling thread, in Numba's
    threads, and so in threads started after the run (they inherit their creator's mode)."""
    import threading

    import numba

    from diamondlab import Simulation
    from diamondlab.kernels.cpu import float_control

    @numba.njit(parallel=True)
    def worker_modes(n):
        out = np.empty(n, np.uint32)
        for i in numba.prange(n):
            out[i] = float_control()
        return out

    threads = numba.get_num_threads()
    numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
    try:
        before = worker_modes(64)
        Simulation((20, 18, 16), 2, backend="cpu", size=2, nt=4, algorithm=algorithm).run(12)
        after = worker_modes(64)
    finally:
        numba.set_num_threads(threads)
    assert all(p != 0 for p in _subnormal_products())
    later = []
    thread = threading.Thread(target=lambda: later.extend(_subnormal_products()))
    thread.start()
    thread.join()
    assert len(later) == 3 and all(p != 0 for p in later)
    if _x86_64():
        assert np.array_equal(after, before) and not (after & 0x8040).any()  # neither FTZ nor DAZ


def test_flush_subnormals_gives_back_the_mode_it_found():
    """The intrinsics themselves: FTZ and DAZ set within, the thread's own MXCSR put back after
    (that the flags flush is the kernels' test above: LLVM may move lone arithmetic across them)."""
    import numba

    from diamondlab.kernels.cpu import float_control, flush_subnormals, restore_float_control

    if not _x86_64():
        pytest.skip("MXCSR is x86-64's")

    @numba.njit
    def probe():
        before = float_control()
        saved = flush_subnormals()
        during = float_control()
        restore_float_control(saved)
        return before, saved, during, float_control()

    before, saved, during, after = probe()
    assert saved == before == after and not before & 0x8040
    assert during == before | 0x8040
