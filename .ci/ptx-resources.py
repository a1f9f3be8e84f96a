"""Registers and spills of the Yee CUDA kernels for an H100 (sm_90), without a GPU: NVVM and ptxas offline.

    python .ci/ptx-resources.py                      # every kernel, every scene part, orders 2 and 4
    python .ci/ptx-resources.py --orders 2 --sizes 2 --scenes plain pml

A kernel's registers per thread decide how many of its blocks a multiprocessor holds, and spilled bytes
go through L1 to memory: the register-tile sweep's physics path measured far below its plain path on the
H100 (BENCHMARKS.md, "calm torres, and why they did not help"), and this says how much of it the
compiled code explains, kernel by kernel, before a device session measures it.

The scene's argument types are recorded by running the backend once under Numba's CUDA simulator (a
subprocess: the simulator replaces numba.cuda), so each kernel is compiled with the types the engine
launches it with; then the GPU text of each kernel (not the simulator's) is compiled to PTX for
compute capability 9.0 and assembled by ptxas with ``-v`` (the register cap the engine would use passed
as ``--maxrregcount``).

Needs NVVM, NVRTC and ptxas, from NVIDIA's wheels (not a dependency of diamondlab)::

    pip install --target /tmp/nvcc nvidia-cuda-nvcc nvidia-cuda-nvrtc
    LD_LIBRARY_PATH=/tmp/nvcc/nvidia/cu13/lib python .ci/ptx-resources.py --nvcc /tmp/nvcc

(the two wheels' ``nvidia/cu13/lib`` folders merged into one).  The numbers are for this toolkit's
NVVM and ptxas; the device's own may allocate a few registers differently.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCENES = ("plain", "pml", "points", "drude", "physics")


def _scene(name: str, shape) -> dict:
    """A scene with the named feature (``physics``: all of them) on ``shape``."""
    from diamondlab.maxwell import CPML, Dielectric, Dipole, Drude, Probe, Ricker, Sphere

    c = tuple(n // 2 for n in shape)
    kw: dict = dict(materials=[Sphere(c, 2.5, Dielectric(4.0))])
    if name in ("pml", "physics"):
        kw["pml"] = CPML(2)
    if name in ("points", "physics"):
        kw["sources"] = [Dipole((c[0] - 3, c[1], 3), "Ez", Ricker(0.2))]
        kw["probes"] = [Probe(c, "Ez")]
    if name in ("drude", "physics"):
        kw["materials"] = [Sphere(c, 2.5, Drude(1.0, 1.0, 0.1))]
    return kw


def record(orders, sizes, scenes) -> dict:
    """Under the simulator: the numba types of every kernel launch of one sweep per case."""

    import numba
    import numpy as np

    import diamondlab.kernels.cuda as kcuda
    from diamondlab import Simulation
    from diamondlab.engine.backends.yee_cuda import YeeCUDABackend

    def typeof(a):
        if hasattr(a, "copy_to_host"):
            a = a.copy_to_host()
        return numba.typeof(a)

    seen: dict = {}
    launch = kcuda.launch_generated

    def spy(module, name, args, *rest, **kw):
        seen["sweep"] = tuple(typeof(a) for a in args)
        return launch(module, name, args, *rest, **kw)

    kcuda.launch_generated = spy
    YeeCUDABackend.registers_for_physics = True
    out = {}
    for order in orders:
        for size in sizes:
            for scene in scenes:
                side = max(12, 2 * order * size)  # two tiles (2R = order * DTS) across x and y
                shape = (side, side, 8)
                sim = Simulation(shape, order, equation="maxwell", backend="cuda", algorithm="diamondtorre",
                                 size=size, nt=1, **_scene(scene, shape))
                seen.clear()
                sim.run(1)
                b = sim.backend
                out[order, size, scene] = dict(sweep=seen.get("sweep"), features=dict(b._features),
                                               plain=b.plain)
    del np
    return out


def sass_counts(cubin: Path, nvcc: Path) -> dict:
    """Static instruction counts of ``cubin``'s SASS (``nvdisasm``): all, integer (``IADD3``, ``IMAD``,
    ``LEA``, ...), global loads, local (spill) loads and stores."""
    text = subprocess.run([str(nvcc / "nvidia" / "cu13" / "bin" / "nvdisasm"), str(cubin)],
                          capture_output=True, text=True, check=True).stdout
    ops = re.findall(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)", text)
    integer = ("IADD3", "IMAD", "LEA", "VIADD", "UIADD3", "UIMAD", "SHF", "ULEA", "IADD", "ISCADD", "SEL",
               "USEL")
    return dict(sass=len(ops), sass_integer=sum(o in integer for o in ops),
                sass_ldg=ops.count("LDG"), sass_ldl=ops.count("LDL"), sass_stl=ops.count("STL"))


def ptxas(ptx: str, nvcc: Path, cap: int | None, sass: bool = False) -> dict:
    """``ptxas -v`` of ``ptx`` for sm_90: registers, spill stores and loads (bytes), stack frame."""
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "k.ptx"
        src.write_text(ptx)
        cmd = [str(nvcc / "nvidia" / "cu13" / "bin" / "ptxas"), "-arch=sm_90", "-v", str(src), "-o",
               str(Path(tmp) / "k.cubin")]
        if cap:
            cmd += ["--maxrregcount", str(cap)]
        text = subprocess.run(cmd, capture_output=True, text=True, check=True).stderr
        counts = sass_counts(Path(tmp) / "k.cubin", nvcc) if sass else {}
    regs = [int(x) for x in re.findall(r"Used (\d+) registers", text)]
    stores = [int(x) for x in re.findall(r"(\d+) bytes spill stores", text)]
    loads = [int(x) for x in re.findall(r"(\d+) bytes spill loads", text)]
    frame = [int(x) for x in re.findall(r"(\d+) bytes stack frame", text)]
    return dict(registers=max(regs), spill_stores=max(stores), spill_loads=max(loads), stack=max(frame),
                **counts)


def compile_all(types: dict, nvcc: Path, threads: int, caps=None, prefetches=(0,),
                sass=False, shape=None) -> list[dict]:
    from types import SimpleNamespace

    import numba.cuda.dispatcher as dispatcher
    from numba import cuda

    # a device function is compiled for the current device's compute capability: none here, so say 9.0
    dispatcher.get_current_device = lambda: SimpleNamespace(compute_capability=(9, 0))
    from diamondlab.kernels.generated import load_generated
    from diamondlab.kernels.yee_cuda import yee_register_cap
    from diamondlab.kernels.yee_cuda_source import generate_yee_source

    rows = []
    for key, rec in types.items():
        order, size, scene = key
        engine = yee_register_cap(order, size, threads, physics=not rec["plain"])
        for ahead in prefetches:
            text = generate_yee_source(order, size, False, None, **rec["features"], prefetch=ahead,
                                       shape=shape)
            module = load_generated(text, f"ptx_yee_no{order}_dts{size}_{scene}")
            ptx, _ = cuda.compile_ptx(module.yee_sweep.py_func, rec["sweep"], cc=(9, 0))
            for cap in caps or [engine]:  # the cap is ptxas's (the engine passes it as max_registers)
                cap = None if cap in (0, None) else cap
                rows.append(dict(kernel="register-tile sweep", order=order, dts=size, scene=scene, cap=cap,
                                 engine_cap=engine, prefetch=ahead, shape=shape,
                                 **ptxas(ptx, nvcc, cap, sass)))
                print(json.dumps(rows[-1]), flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--orders", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--scenes", nargs="+", choices=SCENES, default=list(SCENES))
    ap.add_argument("--threads", type=int, default=256, help="threads a block (nz): the register cap's")
    ap.add_argument("--nvcc", default="/tmp/nvcc", help="where the NVIDIA wheels are installed (--target)")
    ap.add_argument("--caps", type=int, nargs="+", default=None,
                    help="register caps to assemble the sweep with (0: none; default: the engine's)")
    ap.add_argument("--prefetch", type=int, nargs="+", default=[0],
                    help="the sweep's L2 prefetch, tiers ahead (0: none)")
    ap.add_argument("--shape", default=None, help="NXxNYxNZ: the sweep compiled for this grid (its sizes "
                    "constants, as YeeCUDABackend.specialize_shape compiles it)")
    ap.add_argument("--sass", action="store_true", help="also the sweep's static SASS instruction counts")
    ap.add_argument("--record", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.record:
        Path(args.record).write_bytes(pickle.dumps(record(args.orders, args.sizes, args.scenes)))
        return
    nvcc = Path(args.nvcc)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "types.pickle"
        env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
        cmd = [sys.executable, __file__, "--record", str(path), "--orders", *map(str, args.orders),
               "--sizes", *map(str, args.sizes), "--scenes", *args.scenes]
        subprocess.run(cmd, env=env, check=True, cwd=ROOT)
        types = pickle.loads(path.read_bytes())
    sys.path.insert(0, str(nvcc))  # cuda-pathfinder finds NVVM and NVRTC in the wheels' site folder
    shape = None if args.shape is None else tuple(int(v) for v in args.shape.split("x"))
    compile_all(types, nvcc, args.threads, args.caps, args.prefetch, args.sass, shape)


if __name__ == "__main__":
    main()
