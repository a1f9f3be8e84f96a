"""The one-launch Maxwell sweep on a real GPU: DiamondTorre equals stepwise bit for bit on grids with
many torres in flight (the waits on progress flags are what keeps it exact), per order, DTS, chunk, band.

    python .ci/yee-gpu-exact.py            # prints one line a case, exits 1 on the first mismatch
    python .ci/yee-gpu-exact.py plain      # a plain scene (media only)

Both run the sweep with its tile in registers (the physics scene with the run's features compiled in: CPML,
points, Drude, as ``YeeCUDABackend.registers_for_physics`` turns on; ``caches`` as a second argument runs the
physics scene through the cache-read sweep instead).

    python .ci/yee-gpu-exact.py plain prefetch=1 tiled   # the L2 prefetch one tier ahead, the engine's tiles

``prefetch=N`` sets ``YeeCUDABackend.prefetch`` (tiers ahead); ``tiled`` runs only the engine's DTS per
order (``YeeCUDABackend.TILING``).
"""

import sys

import numpy as np

from diamondlab import Simulation
from diamondlab.maxwell import (
    PEC,
    Box,
    Dielectric,
    Dipole,
    Drude,
    GaussianPulse,
    PlaneWave,
    Probe,
    Ricker,
    Sphere,
)

SHAPE = (96, 160, 64)


def scene(order):
    c = tuple(n // 2 for n in SHAPE)
    box = ((20, 20, 16), (76, 140, 48))
    return dict(materials=[Sphere(c, 10, Drude(1.0, 1.0, 0.05))], pml=8,
                sources=[Dipole((14, 30, 30), "Ez", Ricker(0.1), amplitude=10.0),
                         PlaneWave("+x", "z", GaussianPulse(0.08, 0.04), box)],
                probes=[Probe(c, "Ez"), Probe((60, 100, 30), "Hy")])


def plain_scene(order):
    """Media only (a dielectric sphere, a PEC box), a random start: the register-tile sweep's scene."""
    c = tuple(n // 2 for n in SHAPE)
    return dict(materials=[Sphere(c, 20, Dielectric(4.0)), Box((10, 10, 10), (30, 40, 20), PEC)])


def main(plain: bool, physics_in_registers: bool = True, prefetch: int = 0, tiled: bool = False) -> int:
    from diamondlab.engine.backends.yee_cuda import YeeCUDABackend

    YeeCUDABackend.registers_for_physics = physics_in_registers
    YeeCUDABackend.prefetch = prefetch
    bad = 0
    make = plain_scene if plain else scene
    start = [np.random.default_rng(7).standard_normal((3, *SHAPE)).astype(np.float32) for _ in range(2)]
    for order in (2, 4):
        ref = Simulation(SHAPE, order, equation="maxwell", backend="cuda", algorithm="stepwise",
                         **make(order))
        if plain:
            ref.reset(start)
        ref.run(48)
        e0, h0 = ref.fields
        sizes = ((1, 2, 3) if order == 2 else (1, 2)) if plain else ((1, 2) if order == 2 else (1,))
        for size in (YeeCUDABackend.TILING[order][0],) if tiled else sizes:
            for nt, chunk, band in ((8, 2, None), (8, 1, None), (16, 4, 4), (4, 8, 2)):
                sim = Simulation(SHAPE, order, equation="maxwell", backend="cuda", algorithm="diamondtorre",
                                 size=size, nt=nt, **make(order))
                if plain:
                    sim.reset(start)
                    assert sim.backend.plain and sim.backend.tile_in_registers
                sim.backend.chunk, sim.backend.band = chunk, band
                sim.run(48)
                e, h = sim.fields
                ok = (np.array_equal(e, e0) and np.array_equal(h, h0)
                      and np.array_equal(sim.traces, ref.traces))
                diff = max(float(np.abs(e - e0).max()), float(np.abs(h - h0).max()))
                calm = sim.backend._calm.get(nt) if physics_in_registers and not plain else None
                share = "" if calm is None else f" ({int(calm[0].copy_to_host().sum())} calm torres)"
                print(f"order {order} DTS {size} Nt {nt} chunk {chunk} band {band}{share} "
                      f"prefetch {prefetch}: "
                      f"{'bit for bit' if ok else f'MISMATCH max |diff| {diff:.3g}'}", flush=True)
                bad += not ok
    return 1 if bad else 0


if __name__ == "__main__":
    words = sys.argv[1:]
    ahead = next((int(w.split("=")[1]) for w in words if w.startswith("prefetch=")), 0)
    sys.exit(main("plain" in words, "caches" not in words, ahead, "tiled" in words))
