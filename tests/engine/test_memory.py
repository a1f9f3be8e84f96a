"""Host memory: estimated and refused before any allocation; built in place; freed with the simulation."""

import gc
import subprocess
import sys
import textwrap
import weakref

import pytest

import diamondlab.engine.memory as memory
from diamondlab.engine.memory import check_host_memory, host_bytes
from diamondlab.engine.simulation import Simulation


def test_estimate_counts_fields_halo_and_medium():
    cells = 40 * 50 * 60
    assert host_bytes((40, 50, 60), 4, "cuda") == 8 * cells
    assert host_bytes((40, 50, 60), 4, "cpu") == 8 * 44 * 54 * 64
    assert host_bytes((40, 50, 60), 4, "cpu", velocity_model=True) == 12 * 44 * 54 * 64 + 4 * cells


def test_a_run_too_big_for_the_host_is_refused_before_anything_is_allocated(monkeypatch):
    monkeypatch.setattr(memory, "available_host_memory", lambda: 10 * 2**20)
    made = []
    monkeypatch.setattr("diamondlab.engine.cpu_backend.CPUBackend._build", lambda *a, **k: made.append(a))
    with pytest.raises(MemoryError, match=r"shape \(128, 128, 128\) needs about 0.0 GiB of host memory .* "
                                          r"0.0 GiB are available: use a smaller shape"):
        Simulation((128, 128, 128), backend="cpu")
    assert not made
    check_host_memory((8, 8, 8), 10 * 2**20)  # exactly what is available: runs


def test_unknown_availability_checks_nothing(monkeypatch):
    assert memory.available_host_memory() > 0  # Linux: MemAvailable
    monkeypatch.setattr(memory, "available_host_memory", lambda: None)
    check_host_memory((4000,) * 3, 10**15)


def test_peak_memory_of_a_default_simulation_is_close_to_its_fields():
    # a subprocess, so that ru_maxrss is this simulation's peak; a tiny one first loads the kernels
    script = textwrap.dedent("""
        import resource
        from diamondlab.engine.simulation import Simulation
        Simulation((16, 16, 16), backend="cpu")
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        sim = Simulation((256, 256, 256), backend="cpu")
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print((peak - base) * 1024 / (2 * 4 * 256**3))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert float(out.stdout) <= 1.3


def test_a_sponge_and_sources_add_no_3d_array_to_the_fields():
    """Constant velocity with a sponge: K stays a number and the sponge three profiles (issue 12)."""
    script = textwrap.dedent("""
        import resource
        from diamondlab.engine.simulation import Simulation
        from diamondlab.sources import Source
        def sim(n):
            return Simulation((n, n, n), backend="cpu", algorithm="stepwise", sponge=16,
                              sources=[Source((n // 2,) * 3, frequency=0.05, units="grid")])
        sim(40).run(1)
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        s = sim(256)
        s.run(1)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print((peak - base) * 1024 / (2 * 4 * 256**3), s.backend._medium[0])
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    ratio, variant = out.stdout.split()
    assert variant == "sponge" and float(ratio) <= 1.15  # two more 3D arrays would be about 2


def test_deleted_simulations_are_freed():
    sim = Simulation((24, 24, 16), order=2, backend="cpu", size=2, nt=4)
    sim.run(8)  # builds and keeps a schedule
    refs = weakref.ref(sim), weakref.ref(sim.backend)
    del sim
    gc.collect()
    assert [r() for r in refs] == [None, None]
