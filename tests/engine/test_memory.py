"""Host memory: estimated and refused before any allocation; built in place; freed with the simulation."""

import gc
import subprocess
import sys
import textwrap
import weakref

import pytest

import diamondlab.engine.measure.memory as memory
from diamondlab.engine.measure.memory import check_host_memory, host_bytes
from diamondlab.engine.run.simulation import Simulation


def test_estimate_counts_fields_halo_and_medium():
    cells = 40 * 50 * 60
    assert host_bytes((40, 50, 60), 4, "cuda") == 8 * cells
    assert host_bytes((40, 50, 60), 4, "cpu") == 8 * 44 * 54 * 64
    assert host_bytes((40, 50, 60), 4, "cpu", velocity_model=True) == 12 * 44 * 54 * 64 + 4 * cells


def test_a_run_too_big_for_the_host_is_refused_before_anything_is_allocated(monkeypatch):
    monkeypatch.setattr(memory, "available_host_memory", lambda: 10 * 2**20)
    made = []
    monkeypatch.setattr("diamondlab.engine.backends.cpu.CPUBackend._build", lambda *a, **k: made.append(a))
    with pytest.raises(
        MemoryError,
        match=r"shape \(128, 128, 128\) needs about 0.0 GiB of host memory .* "
        r"0.0 GiB are available: use a smaller shape",
    ):
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
        from diamondlab.engine.run.simulation import Simulation
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
        from diamondlab.engine.run.simulation import Simulation
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


def _tree(root, files: dict):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_cgroup_limits_of_v1_v2_and_nested_groups_are_read(tmp_path):
    # v2: the job's group has no limit, its parent has (4 GiB, 1 GiB used)
    _tree(tmp_path / "v2", {"proc": "0::/batch/job/step\n", "fs/batch/memory.max": str(4 * 2**30),
                            "fs/batch/memory.current": str(2**30), "fs/batch/job/memory.max": "max",
                            "fs/batch/job/memory.current": "5"})  # fmt: skip
    assert memory._cgroup_room(tmp_path / "v2" / "proc", tmp_path / "v2" / "fs") == 3 * 2**30
    # v1: the memory controller's hierarchy; the tighter of the group and its parent counts
    _tree(tmp_path / "v1", {"proc": "4:memory:/a/b\n3:cpu:/\n",
                            "fs/memory/a/b/memory.limit_in_bytes": str(2 * 2**30),
                            "fs/memory/a/b/memory.usage_in_bytes": str(2**29),
                            "fs/memory/a/memory.limit_in_bytes": str(2**30),
                            "fs/memory/a/memory.usage_in_bytes": str(2**29),
                            "fs/memory/memory.limit_in_bytes": "9223372036854771712"})  # fmt: skip
    assert memory._cgroup_room(tmp_path / "v1" / "proc", tmp_path / "v1" / "fs") == 2**29
    _tree(
        tmp_path / "none",
        {"proc": "4:memory:/gone\n", "fs/memory/memory.limit_in_bytes": "9223372036854771712"},
    )
    assert memory._cgroup_room(tmp_path / "none" / "proc", tmp_path / "none" / "fs") is None


def test_the_run_estimate_counts_saved_copies_traces_and_snapshots():
    field = 4 * 100**3
    parts = memory.run_host_bytes((100,) * 3, 2, "cpu", saved=True, steps=10**6, receivers=1000,
                                  snapshot_formats=("npz", "vti"))  # fmt: skip
    assert parts["the fields"] == host_bytes((100,) * 3, 2, "cpu")
    assert parts["--save's copies of the initial and final layers"] == 4 * field
    assert parts["the traces of 1000 --receiver over 1000000 --steps"] == 3 * 4 * 10**6 * 1000
    assert parts["a snapshot being written"] == field  # beyond the two saved copies held meanwhile


def test_a_long_run_of_many_receivers_is_refused_before_work(monkeypatch):
    monkeypatch.setattr(memory, "available_host_memory", lambda: 2**30)
    sim = Simulation((16, 16, 16), backend="cpu", nt=2, receivers=[(4, 4, 4)] * 3000)
    with pytest.raises(MemoryError, match=r"the traces of 3000 receivers over 100000 steps 3.35 GiB"):
        sim.run(100_000)
    assert sim.time_step == 0


@pytest.mark.slow
def test_the_run_estimate_is_at_least_the_measured_peak():
    """The peak resident memory (VmHWM) of CLI runs in subprocesses, less a 16^3 run's (imports, kernels):
    the estimate holds."""
    script = textwrap.dedent(r"""
        import re, sys, tempfile, os
        from diamondlab.cli import main
        os.chdir(tempfile.mkdtemp())
        assert main(sys.argv[1:]) == 0
        # VmHWM: this process's own peak (ru_maxrss keeps a forking parent's across exec: a big pytest
        # worker's peak then hid the run's)
        print(int(re.search(r"VmHWM:\s+(\d+) kB", open("/proc/self/status").read()).group(1)) * 1024)
    """)

    def peak(n, *extra):
        argv = [
            "run",
            "--shape",
            str(n),
            "--steps",
            "4",
            "--nt",
            "2",
            "--backend",
            "cpu",
            "--no-progress",
            *extra,
        ]
        out = subprocess.run(
            [sys.executable, "-c", script, *argv], capture_output=True, text=True, check=True
        )
        return int(out.stdout.split()[-1])

    peak(16)  # compiles into the cache: the runs below and the baseline then load the kernels alike
    base = peak(16)
    for n, extra, saved in ((240, (), False), (240, ("--save", "r.npz"), True)):
        estimate = sum(memory.run_host_bytes((n,) * 3, 2, "cpu", saved=saved).values())
        measured = peak(n, *extra) - base
        print(f"{n}^3 {extra}: measured {measured / 2**30:.3f} GiB, estimated {estimate / 2**30:.3f} GiB")
        assert measured <= estimate * 1.02 + 16 * 2**20, (measured, estimate)
        assert estimate <= 2 * measured + 64 * 2**20, (measured, estimate)


def test_a_calculation_window_counts_its_own_buffers():
    """The window's two levels (CPU) or, with the fields in files, its pinned staging buffers (GPU)."""
    plane = 4 * 64 * 32
    cpu = memory.run_host_bytes((512, 64, 32), 2, "cpu", window=100, nt=8)
    assert cpu["the window's two levels (100 rows and their ghost rows)"] == 2 * (100 + 2 * 8) * plane
    gpu = memory.run_host_bytes((512, 64, 32), 2, "cuda", window=100, nt=8, fields=False)
    assert gpu["the window's pinned buffers (100 rows)"] == 4 * 3 * 100 * plane
    assert "the fields" not in gpu
    whole = memory.run_host_bytes((512, 64, 32), 2, "cpu", window=600, nt=8)  # the grid fits: no window
    assert not any("window" in k for k in whole)
