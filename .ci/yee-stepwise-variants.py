"""Why the stepwise Yee kernel runs at 54-69 % of its bound: variants of its half steps, timed beside it.

    python .ci/yee-stepwise-variants.py --grids 256x256x256 768x512x256 --orders 2 4 --steps 32 --repeats 5

The general kernel (``kernels.yee_cuda``'s ``stepwise``: a block an (x, y) column, a thread a cell, 64-bit
offsets, each component's coefficient through the material index and the table) is latency bound (Nsight,
BENCHMARKS.md).  Each variant changes one thing, on a vacuum grid (every cell medium 0, the PEC faces' index
zeroed here, so every kernel computes the same):

- ``int32``: the same loads with 32-bit offsets;
- ``int32_2``: as ``int32``, two cells a thread (z and z + nz/2), every load of both issued first;
- ``uniform``: one medium, its coefficients read once a thread (no index loads, no dependent table loads);
- ``uniform2``: as ``uniform``, two cells a thread (z and z + nz/2), every load of both issued first.

Every variant must equal the general kernel bit for bit after the timed steps (checked, printed); a row is a
JSON line: G Yee cell updates/s (median, min, max of ``repeats`` runs of ``steps`` steps).
"""

import argparse
import json
import statistics
import time

import numpy as np
from numba import cuda

from diamondlab import Simulation


def variants(order):
    """The H and E half-step kernels of each variant at ``order`` (vacuum: no CPML, points or Drude)."""
    M = order // 2  # noqa: N806
    w1 = np.float32(1.0 if order == 2 else 9.0 / 8.0)
    w2 = np.float32(0.0 if order == 2 else -1.0 / 24.0)

    @cuda.jit(device=True, inline=True)
    def fwd(a, p, s):
        v = w1 * (a[p + s] - a[p])
        if M == 2:
            v += w2 * (a[p + 2 * s] - a[p - s])
        return v

    @cuda.jit(device=True, inline=True)
    def bwd(a, p, s):
        v = w1 * (a[p] - a[p - s])
        if M == 2:
            v += w2 * (a[p + s] - a[p - 2 * s])
        return v

    @cuda.jit
    def h_int32(E, H, mat, table, n, nu, sx, pz, ny, nz):
        X = np.int32(cuda.blockIdx.x)  # noqa: N806
        Y = np.int32(cuda.blockIdx.y)  # noqa: N806
        Z = np.int32(cuda.threadIdx.x)  # noqa: N806
        p = (X + M) * sx + (Y + M) * pz + Z + M
        q = (X * ny + Y) * nz + Z
        dez_dy = fwd(E, 2 * n + p, pz)
        dey_dz = fwd(E, n + p, np.int32(1))
        dex_dz = fwd(E, p, np.int32(1))
        dez_dx = fwd(E, 2 * n + p, sx)
        dey_dx = fwd(E, n + p, sx)
        dex_dy = fwd(E, p, pz)
        H[p] = H[p] - table[mat[q] * 8 + 4] * (dez_dy - dey_dz)
        H[n + p] = H[n + p] - table[mat[nu + q] * 8 + 4] * (dex_dz - dez_dx)
        H[2 * n + p] = H[2 * n + p] - table[mat[2 * nu + q] * 8 + 4] * (dey_dx - dex_dy)

    @cuda.jit
    def e_int32(E, H, mat, table, n, nu, sx, pz, ny, nz):
        X = np.int32(cuda.blockIdx.x)  # noqa: N806
        Y = np.int32(cuda.blockIdx.y)  # noqa: N806
        Z = np.int32(cuda.threadIdx.x)  # noqa: N806
        p = (X + M) * sx + (Y + M) * pz + Z + M
        q = (X * ny + Y) * nz + Z
        dhz_dy = bwd(H, 2 * n + p, pz)
        dhy_dz = bwd(H, n + p, np.int32(1))
        dhx_dz = bwd(H, p, np.int32(1))
        dhz_dx = bwd(H, 2 * n + p, sx)
        dhy_dx = bwd(H, n + p, sx)
        dhx_dy = bwd(H, p, pz)
        m = mat[q] * 8
        E[p] = table[m] * E[p] + table[m + 1] * (dhz_dy - dhy_dz)
        m = mat[nu + q] * 8
        E[n + p] = table[m] * E[n + p] + table[m + 1] * (dhx_dz - dhz_dx)
        m = mat[2 * nu + q] * 8
        E[2 * n + p] = table[m] * E[2 * n + p] + table[m + 1] * (dhy_dx - dhx_dy)

    @cuda.jit
    def h_uniform(E, H, mat, table, n, nu, sx, pz, ny, nz):
        X = np.int32(cuda.blockIdx.x)  # noqa: N806
        Y = np.int32(cuda.blockIdx.y)  # noqa: N806
        Z = np.int32(cuda.threadIdx.x)  # noqa: N806
        c = table[4]
        p = (X + M) * sx + (Y + M) * pz + Z + M
        dez_dy = fwd(E, 2 * n + p, pz)
        dey_dz = fwd(E, n + p, np.int32(1))
        dex_dz = fwd(E, p, np.int32(1))
        dez_dx = fwd(E, 2 * n + p, sx)
        dey_dx = fwd(E, n + p, sx)
        dex_dy = fwd(E, p, pz)
        H[p] = H[p] - c * (dez_dy - dey_dz)
        H[n + p] = H[n + p] - c * (dex_dz - dez_dx)
        H[2 * n + p] = H[2 * n + p] - c * (dey_dx - dex_dy)

    @cuda.jit
    def e_uniform(E, H, mat, table, n, nu, sx, pz, ny, nz):
        X = np.int32(cuda.blockIdx.x)  # noqa: N806
        Y = np.int32(cuda.blockIdx.y)  # noqa: N806
        Z = np.int32(cuda.threadIdx.x)  # noqa: N806
        ca, cb = table[0], table[1]
        p = (X + M) * sx + (Y + M) * pz + Z + M
        dhz_dy = bwd(H, 2 * n + p, pz)
        dhy_dz = bwd(H, n + p, np.int32(1))
        dhx_dz = bwd(H, p, np.int32(1))
        dhz_dx = bwd(H, 2 * n + p, sx)
        dhy_dx = bwd(H, n + p, sx)
        dhx_dy = bwd(H, p, pz)
        E[p] = ca * E[p] + cb * (dhz_dy - dhy_dz)
        E[n + p] = ca * E[n + p] + cb * (dhx_dz - dhz_dx)
        E[2 * n + p] = ca * E[2 * n + p] + cb * (dhy_dx - dhx_dy)

    @cuda.jit
    def h_uniform2(E, H, mat, table, n, nu, sx, pz, ny, nz):
        X = np.int32(cuda.blockIdx.x)  # noqa: N806
        Y = np.int32(cuda.blockIdx.y)  # noqa: N806
        Z = np.int32(cuda.threadIdx.x)  # noqa: N806
        c = table[4]
        p = (X + M) * sx + (Y + M) * pz + Z + M
        r = p + nz // 2
        a0, a1, a2 = fwd(E, 2 * n + p, pz), fwd(E, n + p, np.int32(1)), fwd(E, p, np.int32(1))
        a3, a4, a5 = fwd(E, 2 * n + p, sx), fwd(E, n + p, sx), fwd(E, p, pz)
        b0, b1, b2 = fwd(E, 2 * n + r, pz), fwd(E, n + r, np.int32(1)), fwd(E, r, np.int32(1))
        b3, b4, b5 = fwd(E, 2 * n + r, sx), fwd(E, n + r, sx), fwd(E, r, pz)
        hp0, hp1, hp2 = H[p], H[n + p], H[2 * n + p]
        hr0, hr1, hr2 = H[r], H[n + r], H[2 * n + r]
        H[p] = hp0 - c * (a0 - a1)
        H[n + p] = hp1 - c * (a2 - a3)
        H[2 * n + p] = hp2 - c * (a4 - a5)
        H[r] = hr0 - c * (b0 - b1)
        H[n + r] = hr1 - c * (b2 - b3)
        H[2 * n + r] = hr2 - c * (b4 - b5)

    @cuda.jit
    def e_uniform2(E, H, mat, table, n, nu, sx, pz, ny, nz):
        X = np.int32(cuda.blockIdx.x)  # noqa: N806
        Y = np.int32(cuda.blockIdx.y)  # noqa: N806
        Z = np.int32(cuda.threadIdx.x)  # noqa: N806
        ca, cb = table[0], table[1]
        p = (X + M) * sx + (Y + M) * pz + Z + M
        r = p + nz // 2
        a0, a1, a2 = bwd(H, 2 * n + p, pz), bwd(H, n + p, np.int32(1)), bwd(H, p, np.int32(1))
        a3, a4, a5 = bwd(H, 2 * n + p, sx), bwd(H, n + p, sx), bwd(H, p, pz)
        b0, b1, b2 = bwd(H, 2 * n + r, pz), bwd(H, n + r, np.int32(1)), bwd(H, r, np.int32(1))
        b3, b4, b5 = bwd(H, 2 * n + r, sx), bwd(H, n + r, sx), bwd(H, r, pz)
        ep0, ep1, ep2 = E[p], E[n + p], E[2 * n + p]
        er0, er1, er2 = E[r], E[n + r], E[2 * n + r]
        E[p] = ca * ep0 + cb * (a0 - a1)
        E[n + p] = ca * ep1 + cb * (a2 - a3)
        E[2 * n + p] = ca * ep2 + cb * (a4 - a5)
        E[r] = ca * er0 + cb * (b0 - b1)
        E[n + r] = ca * er1 + cb * (b2 - b3)
        E[2 * n + r] = ca * er2 + cb * (b4 - b5)

    @cuda.jit
    def h_int32_2(E, H, mat, table, n, nu, sx, pz, ny, nz):
        X = np.int32(cuda.blockIdx.x)  # noqa: N806
        Y = np.int32(cuda.blockIdx.y)  # noqa: N806
        Z = np.int32(cuda.threadIdx.x)  # noqa: N806
        p = (X + M) * sx + (Y + M) * pz + Z + M
        r = p + nz // 2
        q = (X * ny + Y) * nz + Z
        s = q + nz // 2
        cp0, cp1, cp2 = table[mat[q] * 8 + 4], table[mat[nu + q] * 8 + 4], table[mat[2 * nu + q] * 8 + 4]
        cr0, cr1, cr2 = table[mat[s] * 8 + 4], table[mat[nu + s] * 8 + 4], table[mat[2 * nu + s] * 8 + 4]
        a0, a1, a2 = fwd(E, 2 * n + p, pz), fwd(E, n + p, np.int32(1)), fwd(E, p, np.int32(1))
        a3, a4, a5 = fwd(E, 2 * n + p, sx), fwd(E, n + p, sx), fwd(E, p, pz)
        b0, b1, b2 = fwd(E, 2 * n + r, pz), fwd(E, n + r, np.int32(1)), fwd(E, r, np.int32(1))
        b3, b4, b5 = fwd(E, 2 * n + r, sx), fwd(E, n + r, sx), fwd(E, r, pz)
        hp0, hp1, hp2 = H[p], H[n + p], H[2 * n + p]
        hr0, hr1, hr2 = H[r], H[n + r], H[2 * n + r]
        H[p] = hp0 - cp0 * (a0 - a1)
        H[n + p] = hp1 - cp1 * (a2 - a3)
        H[2 * n + p] = hp2 - cp2 * (a4 - a5)
        H[r] = hr0 - cr0 * (b0 - b1)
        H[n + r] = hr1 - cr1 * (b2 - b3)
        H[2 * n + r] = hr2 - cr2 * (b4 - b5)

    @cuda.jit
    def e_int32_2(E, H, mat, table, n, nu, sx, pz, ny, nz):
        X = np.int32(cuda.blockIdx.x)  # noqa: N806
        Y = np.int32(cuda.blockIdx.y)  # noqa: N806
        Z = np.int32(cuda.threadIdx.x)  # noqa: N806
        p = (X + M) * sx + (Y + M) * pz + Z + M
        r = p + nz // 2
        q = (X * ny + Y) * nz + Z
        s = q + nz // 2
        mp0, mp1, mp2 = mat[q] * 8, mat[nu + q] * 8, mat[2 * nu + q] * 8
        mr0, mr1, mr2 = mat[s] * 8, mat[nu + s] * 8, mat[2 * nu + s] * 8
        a0, a1, a2 = bwd(H, 2 * n + p, pz), bwd(H, n + p, np.int32(1)), bwd(H, p, np.int32(1))
        a3, a4, a5 = bwd(H, 2 * n + p, sx), bwd(H, n + p, sx), bwd(H, p, pz)
        b0, b1, b2 = bwd(H, 2 * n + r, pz), bwd(H, n + r, np.int32(1)), bwd(H, r, np.int32(1))
        b3, b4, b5 = bwd(H, 2 * n + r, sx), bwd(H, n + r, sx), bwd(H, r, pz)
        ep0, ep1, ep2 = E[p], E[n + p], E[2 * n + p]
        er0, er1, er2 = E[r], E[n + r], E[2 * n + r]
        E[p] = table[mp0] * ep0 + table[mp0 + 1] * (a0 - a1)
        E[n + p] = table[mp1] * ep1 + table[mp1 + 1] * (a2 - a3)
        E[2 * n + p] = table[mp2] * ep2 + table[mp2 + 1] * (a4 - a5)
        E[r] = table[mr0] * er0 + table[mr0 + 1] * (b0 - b1)
        E[n + r] = table[mr1] * er1 + table[mr1 + 1] * (b2 - b3)
        E[2 * n + r] = table[mr2] * er2 + table[mr2 + 1] * (b4 - b5)

    return {"int32": (h_int32, e_int32, 1), "int32_2": (h_int32_2, e_int32_2, 2),
            "uniform": (h_uniform, e_uniform, 1), "uniform2": (h_uniform2, e_uniform2, 2)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--grids", nargs="+", default=["256x256x256"])
    ap.add_argument("--orders", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--steps", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    for grid in a.grids:
        shape = tuple(int(s) for s in grid.split("x"))
        for order in a.orders:
            sim = Simulation(shape, order, equation="maxwell", backend="cuda", algorithm="stepwise")
            b = sim.backend
            b._d_index.copy_to_device(np.zeros(b._d_index.size, np.uint8))  # every cell medium 0 (no PEC)
            rng = np.random.default_rng(1)
            e0 = rng.standard_normal(b._e.size).astype(np.float32) * 1e-3
            h0 = rng.standard_normal(b._h.size).astype(np.float32) * 1e-3
            M = order // 2  # noqa: N806
            nx, ny, nz = shape
            pz = nz + 2 * M
            sx = (ny + 2 * M) * pz
            n = (nx + 2 * M) * sx
            halo = np.ones((nx + 2 * M, ny + 2 * M, pz), bool)
            halo[M:-M, M:-M, M:-M] = False
            e0.reshape(3, -1)[:, halo.ravel()] = 0
            h0.reshape(3, -1)[:, halo.ravel()] = 0
            ints = tuple(np.int32(v) for v in (n, nx * ny * nz, sx, pz, ny, nz))
            kinds = variants(order)

            def general(steps, b=b):
                b.step(steps)

            def make(name, kinds=kinds, b=b, ints=ints, shape=shape):
                h, e, per = kinds[name]
                grid2 = (shape[0], shape[1])

                def half_steps(steps):
                    for _ in range(steps):
                        h[grid2, shape[2] // per](b._e, b._h, b._d_index, b._d_table, *ints)
                        e[grid2, shape[2] // per](b._e, b._h, b._d_index, b._d_table, *ints)
                return half_steps

            runs = {"general": general, **{k: make(k) for k in kinds}}
            results = {}
            for name, run in runs.items():
                b._e.copy_to_device(e0)
                b._h.copy_to_device(h0)
                run(1)  # compile
                cuda.synchronize()
                b._e.copy_to_device(e0)
                b._h.copy_to_device(h0)
                rates = []
                for _ in range(a.repeats):
                    t = time.perf_counter()
                    run(a.steps)
                    cuda.synchronize()
                    rates.append(nx * ny * nz * a.steps / (time.perf_counter() - t) / 1e9)
                results[name] = (b._e.copy_to_host(), b._h.copy_to_host())
                same = bool(np.array_equal(results[name][0], results["general"][0])
                            and np.array_equal(results[name][1], results["general"][1]))
                print(json.dumps({"grid": grid, "order": order, "variant": name, "steps": a.steps,
                                  "median": round(statistics.median(rates), 2), "min": round(min(rates), 2),
                                  "max": round(max(rates), 2), "same_as_general": same}), flush=True)
            del sim, b


if __name__ == "__main__":
    main()
