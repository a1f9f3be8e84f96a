"""Check and time the split-tile DiamondTorre sweep against the stepwise kernel.

Three commands (``python -m diamondlab.kernels.cuda_split_bench ...``):

``check NO DTS P NX NY NZ H [H ...]``
    random fields, sweeps of heights ``H`` with the split kernel, the same
    number of steps with ``cuda_kernels(NO, 1).stepwise_step``; exit 1 unless
    both fields are equal bit for bit.  Works under the CUDA simulator
    (``NUMBA_ENABLE_CUDASIM=1``) and on a GPU.
``prebuild OUT [--configs ...]``
    on a machine WITHOUT a GPU (CUDA toolkit with libnvvm and ptxas needed):
    compile the kernels for compute capability 9.0 (Numba front end and NVVM
    here, ``ptxas`` here), print registers and spill bytes, and pickle the
    compiled kernel objects (with their cubins) to ``OUT`` so that a GPU run
    loads them instead of spending minutes compiling.
``bench PREBUILT --shape NX NY NZ``
    on the GPU: load the pickled kernels (or compile), verify bit equality on a
    small odd grid, and time split sweeps, the stepwise kernel and the DTS=1
    sweep on the big grid (medians of CUDA-event timings).
"""

from __future__ import annotations

import argparse
import os
import pickle
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

#: default configurations timed by ``bench``: (P, max_registers, left_from_memory, nt)
DEFAULT_CONFIGS = ("4:0:0", "4:0:1", "8:128:0")


def _schedule_arrays(order: int, size: int, nt: int, nx: int, ny: int):
    from numba import cuda

    from diamondlab.geometry import stage_schedule
    from diamondlab.kernels.cuda import sweep_dependencies

    s = stage_schedule(order=order, size=size, nt=nt, nx=nx, ny=ny)
    deps = sweep_dependencies(s.torre_x0, s.torre_yc, s.stage_start, s.tile.radius)
    return s.ntorres, tuple(cuda.to_device(np.ascontiguousarray(a, dtype=np.int64))
                            for a in (s.torre_x0, s.torre_yc, deps))


class SplitRunner:
    """Fields and synchronisation arrays for repeated split sweeps on one grid."""

    def __init__(self, module, shape, coeffs, kernel=None):
        from numba import cuda

        self.module, self.shape, self.coeffs, self.kernel = module, tuple(shape), coeffs, kernel
        self.cuda = cuda
        self.done = None
        self.counter = cuda.to_device(np.zeros(1, dtype=np.int64))
        self.tickets = 0
        self.epoch = 0
        self.schedules = {}

    def sweep(self, F, G, height: int):
        from diamondlab.kernels.cuda_split import launch_split_sweep

        m = self.module
        if height not in self.schedules:
            self.schedules[height] = _schedule_arrays(m.order, m.size, height, *self.shape[:2])
        ntorres, arrays = self.schedules[height]
        if self.done is None or len(self.done) < ntorres:
            self.done = self.cuda.to_device(np.zeros(ntorres, dtype=np.int64))
        self.epoch += 1
        self.kernel = launch_split_sweep(m, F, G, self.shape, height, arrays,
                                         (self.done, self.counter), self.tickets, self.epoch,
                                         self.coeffs, kernel=self.kernel) or self.kernel
        self.tickets += ntorres
        return (G, F) if height % 2 else (F, G)


def check(order: int, size: int, parts: int, shape, heights, seed: int = 1,
          left_from_memory: bool = False, yz=None, module=None, kernel=None,
          stepwise=None) -> float:
    """Max |difference| of split sweeps against stepwise steps (0.0 means bit for bit)."""
    from numba import cuda

    from diamondlab.kernels.cuda import cuda_kernels, launch_stepwise
    from diamondlab.kernels.cuda_split import split_kernels
    from diamondlab.numerics import WaveParameters

    params = WaveParameters(order=order)
    coeffs = cuda.to_device(np.ascontiguousarray(params.coefficients, dtype=np.float32))
    rng = np.random.default_rng(seed)
    prev = rng.standard_normal(shape).astype(np.float32).ravel()
    curr = rng.standard_normal(shape).astype(np.float32).ravel()
    module = module or split_kernels(order, size, parts, yz=yz, left_from_memory=left_from_memory)
    run = SplitRunner(module, shape, coeffs, kernel)
    F, G = cuda.to_device(curr), cuda.to_device(prev)
    for h in heights:
        F, G = run.sweep(F, G, h)
    sw = stepwise or cuda_kernels(order, 1)
    A, B = cuda.to_device(curr), cuda.to_device(prev)
    for _ in range(sum(heights)):
        launch_stepwise(sw, A, B, shape, coeffs)
        A, B = B, A
    diff = 0.0
    for x, y in ((F, A), (G, B)):
        a, b = x.copy_to_host(), y.copy_to_host()
        if not np.isfinite(a).all():
            return float("inf")
        diff = max(diff, float(np.abs(a - b).max()))
    return diff


# ---------------------------------------------------------------- prebuild (no GPU)
#: the compute capability key Numba-CUDA uses on an H100 (sm_90a code)
CC = (9, 0, "a")


def _fake_cc90() -> None:
    """Let Numba-CUDA compile for compute capability 9.0 on a machine without a GPU."""
    import numba.cuda.codegen as codegen
    import numba.cuda.cudadrv.libs as libs
    import numba.cuda.cudadrv.nvrtc as nvrtc
    import numba.cuda.cudadrv.nvvm as nvvm
    import numba.cuda.dispatcher as dispatcher

    class _Device:
        compute_capability = (9, 0)

    dispatcher.get_current_device = lambda: _Device()
    codegen.CUDACodeLibrary._ensure_cc = lambda self, cc: CC if cc is None else cc
    dispatcher._Kernel.bind = lambda self: None  # loads the module: needs a GPU
    nvrtc.get_supported_ccs = lambda: ((9, 0),)
    home = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    libdevice = str(next(Path(home).glob("nvvm/libdevice/libdevice*.bc")))
    libs.get_libdevice = lambda: libdevice
    nvvm.get_libdevice = lambda: libdevice
    nvvm.open_libdevice = lambda: Path(libdevice).read_bytes()


def _fast_lowering() -> None:
    """Replace Numba-CUDA's quadratic singly-assigned-variable scan by a linear one (same result).

    ``Lower._find_singly_assigned_variable`` rescans a whole block for every
    variable defined in it; the generated torre functions have blocks of
    thousands of statements, where the scan takes a quarter of the compile.
    """
    from collections import Counter, defaultdict

    from numba.cuda import lowering
    from numba.cuda.core import ir

    def find(self):
        sav = set()
        if not self.func_ir.func_id.is_generator:
            blocks = self.func_ir.blocks
            use_defs = lowering.compute_use_defs(blocks)
            alloca_vars = lowering.must_use_alloca(blocks)
            var_assign_map = defaultdict(set)
            for blk, vl in use_defs.defmap.items():
                for var in vl:
                    var_assign_map[var].add(blk)
            var_use_map = defaultdict(set)
            for blk, vl in use_defs.usemap.items():
                for var in vl:
                    var_use_map[var].add(blk)
            counts = Counter()
            for label, block in self.blocks.items():
                for stmt in block.find_insts(ir.assign_types):
                    counts[(label, stmt.target.name)] += 1
            for var, where in var_assign_map.items():
                if var not in alloca_vars and len(where) == 1 and len(var_use_map[var]) == 0:
                    [defblk] = where
                    if counts[(defblk, var)] == 1:
                        sav.add(var)
        self._singly_assigned_vars = sav
        self._blk_local_varmap = {}

    lowering.Lower._find_singly_assigned_variable = find


def _kernel_types(order: int):
    from numba import types

    f32 = types.Array(types.float32, 1, "C")
    i64 = types.Array(types.int64, 1, "C")
    i64_2 = types.Array(types.int64, 2, "C")
    sweep = (f32, f32, types.int64, types.int64, types.int64, types.int64, i64, i64, i64_2, i64,
             i64, types.int64, types.int64, f32)
    stepwise = (f32, f32, types.int64, types.int64, types.int64, types.int64, f32)
    return sweep, stepwise


def _compile_no_cache(dispatcher, types):
    """``dispatcher.compile(types)`` without Numba's disk cache (its index needs a GPU context)."""
    from numba.cuda.core.caching import NullCache

    dispatcher._cache = NullCache()
    return dispatcher.compile(types)


def _ptxas(kernel, max_registers: int | None, workdir: Path, name: str) -> dict:
    """Assemble the kernel's PTX with ptxas for sm_90, store the cubin in it, return resources."""
    lib = kernel._codelibrary
    ptx = lib.get_asm_str(cc=CC)
    src = workdir / f"{name}.ptx"
    src.write_text(ptx)
    cmd = ["ptxas", "-arch=sm_90a", "-v", str(src), "-o", str(workdir / f"{name}.cubin")]
    if max_registers:
        cmd[1:1] = [f"-maxrregcount={max_registers}"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    lib._cubin_cache[CC] = (workdir / f"{name}.cubin").read_bytes()
    info = out.stderr
    res = {"ptxas": " ".join(line.strip() for line in info.splitlines() if "Used" in line
                             or "spill" in line)}
    import re

    m = re.search(r"Used (\d+) registers", info)
    res["registers"] = int(m.group(1)) if m else -1
    m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", info)
    res["stack_spill"] = tuple(int(x) for x in m.groups()) if m else None
    return res


def _parse_config(text: str) -> tuple[int, int | None, bool]:
    p, regs, lfm = (text.split(":") + ["0", "0"])[:3]
    return int(p), (int(regs) or None), bool(int(lfm))


def prebuild(out: Path, order: int, size: int, configs, yz_list, dts1: bool) -> None:
    _fake_cc90()
    _fast_lowering()
    from diamondlab.kernels.cuda import cuda_kernels
    from diamondlab.kernels.cuda_split import split_kernels

    out.mkdir(parents=True, exist_ok=True)
    sweep_t, step_t = _kernel_types(order)
    built = {}
    jobs = []
    for yz in yz_list:
        for c in configs:
            jobs.append(("split", yz, c))
    jobs.append(("stepwise", None, None))
    if dts1:
        jobs += [("dts1", yz, None) for yz in yz_list if yz is not None]
    for kind, yz, c in jobs:
        t0 = time.time()
        if kind == "split":
            parts, regs, lfm = _parse_config(c)
            mod = split_kernels(order, size, parts, max_registers=regs, yz=yz, left_from_memory=lfm)
            kernel = _compile_no_cache(mod.split_sweep, sweep_t)
            key = f"split_p{parts}_r{regs or 0}_l{int(lfm)}_{'x'.join(map(str, yz)) if yz else 'gen'}"
        elif kind == "stepwise":
            regs = None
            kernel = _compile_no_cache(cuda_kernels(order, 1).stepwise_step, step_t)
            key = "stepwise"
        else:
            from diamondlab.kernels.cuda import sweep_register_cap

            regs = sweep_register_cap(order, 1, yz[1], specialised=True)
            mod = cuda_kernels(order, 1, regs, yz)
            kernel = _compile_no_cache(mod.diamondtorre_sweep, sweep_t)
            key = f"dts1_{'x'.join(map(str, yz))}"
        t1 = time.time()
        res = _ptxas(kernel, regs, out, key)
        res["compile_s"] = round(t1 - t0, 1)
        res["ptxas_s"] = round(time.time() - t1, 1)
        with open(out / f"{key}.pkl", "wb") as fh:
            pickle.dump(kernel._reduce_states(), fh)
        built[key] = res
        print(key, res, flush=True)


def load_kernel(path: Path):
    """A compiled kernel object from a pickle written by ``prebuild``."""
    from numba.cuda.dispatcher import _Kernel

    with open(path, "rb") as fh:
        return _Kernel._rebuild(**pickle.load(fh))


# ---------------------------------------------------------------- bench (GPU)
def _median_time(fn, repeats: int) -> float:
    from numba import cuda

    times = []
    for _ in range(repeats):
        start, stop = cuda.event(), cuda.event()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(cuda.event_elapsed_time(start, stop) / 1e3)
    return float(np.median(times)), times


def bench(prebuilt: Path | None, shape, order: int, size: int, configs, nts, repeats: int,
          steps: int, small) -> None:
    from numba import cuda

    from diamondlab.kernels.cuda import (
        cuda_kernels,
        kernel_resources,
        launch_stepwise,
        launch_sweep,
        sweep_dependencies,  # noqa: F401
        sweep_register_cap,
    )
    from diamondlab.kernels.cuda_split import split_kernels
    from diamondlab.numerics import WaveParameters

    def pre(key):
        p = prebuilt / f"{key}.pkl" if prebuilt else None
        if p is not None and p.exists():
            return load_kernel(p)
        return None

    nx, ny, nz = shape
    yzs = "x".join(map(str, (ny, nz)))
    print(f"device {cuda.get_current_device().name.decode() if isinstance(cuda.get_current_device().name, bytes) else cuda.get_current_device().name}",
          flush=True)
    params = WaveParameters(order=order)
    coeffs = cuda.to_device(np.ascontiguousarray(params.coefficients, dtype=np.float32))
    stepwise = cuda_kernels(order, 1)
    step_kernel = pre("stepwise")
    if step_kernel is not None:
        stepwise.compiled[("stepwise_step", _typeof_stepwise(stepwise, coeffs))] = step_kernel
    rows = []
    # ---- correctness on a small odd grid (generic, not specialised kernels)
    for c in configs:
        parts, regs, lfm = _parse_config(c)
        key = f"split_p{parts}_r{regs or 0}_l{int(lfm)}_gen"
        kern = pre(key)
        if kern is None:
            continue
        mod = split_kernels(order, size, parts, max_registers=regs, left_from_memory=lfm)
        t0 = time.time()
        diff = check(order, size, parts, small, (nts[0], 3, nts[0] - 1), seed=7, module=mod,
                     kernel=kern, stepwise=stepwise)
        print(f"check {key} on {small}: max diff {diff} ({time.time() - t0:.1f} s)", flush=True)
    # ---- big grid
    ncells = nx * ny * nz
    rng = np.random.default_rng(3)
    host = rng.standard_normal(ncells, dtype=np.float32) * np.float32(1e-3)
    F = cuda.to_device(host)
    G = cuda.to_device(host[::-1].copy())
    # copy bandwidth
    copy_s, _ = _median_time(lambda: F.copy_to_device(G), repeats)
    print(f"device-to-device copy: {2 * 4 * ncells / copy_s / 1e9:.0f} GB/s", flush=True)
    # stepwise
    launch_stepwise(stepwise, F, G, shape, coeffs)
    cuda.synchronize()

    def run_steps():
        a, b = F, G
        for _ in range(steps):
            launch_stepwise(stepwise, a, b, shape, coeffs)
            a, b = b, a

    t, times = _median_time(run_steps, repeats)
    rate_sw = ncells * steps / t / 1e9
    regs = kernel_resources(stepwise.last_stepwise_kernel)
    rows.append(("stepwise", "-", rate_sw, regs))
    print(f"stepwise: {rate_sw:.1f} G/s {regs} times {times}", flush=True)
    # DTS=1 sweep
    k1 = pre(f"dts1_{yzs}")
    if k1 is not None:
        cap = sweep_register_cap(order, 1, nz, specialised=True)
        mod1 = cuda_kernels(order, 1, cap, (ny, nz))
        for nt in nts:
            ntor, arrays = _schedule_arrays(order, 1, nt, nx, ny)
            done = cuda.to_device(np.zeros(ntor, dtype=np.int64))
            counter = cuda.to_device(np.zeros(1, dtype=np.int64))
            state = {"tickets": 0, "epoch": 0}

            def run_dts1(nt=nt, ntor=ntor, arrays=arrays, done=done, counter=counter, state=state):
                for _ in range(max(1, steps // nt)):
                    state["epoch"] += 1
                    mod1.compiled[("diamondtorre_sweep", None)] = k1
                    _launch_prebuilt_sweep(k1, F, G, shape, nt, arrays, (done, counter),
                                           state["tickets"], state["epoch"], coeffs, order, 1)
                    state["tickets"] += ntor

            run_dts1()
            cuda.synchronize()
            t, times = _median_time(run_dts1, repeats)
            rate = ncells * nt * max(1, steps // nt) / t / 1e9
            rows.append(("dts1", nt, rate, kernel_resources(k1)))
            print(f"DTS=1 sweep nt={nt}: {rate:.1f} G/s {kernel_resources(k1)} times {times}",
                  flush=True)
        del launch_sweep
    # split sweeps
    for c in configs:
        parts, regs, lfm = _parse_config(c)
        key = f"split_p{parts}_r{regs or 0}_l{int(lfm)}_{yzs}"
        kern = pre(key)
        if kern is None and prebuilt is not None:
            print(f"skip {key}: not prebuilt", flush=True)
            continue
        mod = split_kernels(order, size, parts, max_registers=regs, yz=(ny, nz), left_from_memory=lfm)
        for nt in nts:
            run = SplitRunner(mod, shape, coeffs, kern)
            holder = {"F": F, "G": G}

            def run_split(run=run, nt=nt, holder=holder):
                for _ in range(max(1, steps // nt)):
                    holder["F"], holder["G"] = run.sweep(holder["F"], holder["G"], nt)

            run_split()
            cuda.synchronize()
            t, times = _median_time(run_split, repeats)
            rate = ncells * nt * max(1, steps // nt) / t / 1e9
            res = kernel_resources(run.kernel)
            rows.append((key, nt, rate, res))
            print(f"{key} nt={nt}: {rate:.1f} G/s {res} times {times}", flush=True)
    print("\nsummary (shape %s, G cell updates/s):" % (shape,))
    for name, nt, rate, res in rows:
        print(f"  {name:32s} nt={nt!s:4s} {rate:7.1f}  regs={res['registers']} local={res['local_bytes']}")


def _typeof_stepwise(module, coeffs):
    return None


def _launch_prebuilt_sweep(kernel, F, G, shape, nt, schedule_arrays, sync_arrays, ticket_base,
                           epoch, coeffs, order, size):
    from diamondlab.kernels.cuda import _allow_shared, _launch, sweep_block, sweep_shared_bytes

    nx, ny, nz = shape
    torre_x0, torre_yc, deps = schedule_arrays
    done, counter = sync_arrays
    block = sweep_block(nz)
    shared = sweep_shared_bytes(order, size, nz)
    args = (F, G, nx, ny, nz, nt, torre_x0, torre_yc, deps, done, counter,
            np.int64(ticket_base), np.int64(epoch), coeffs)
    if shared > 48 * 1024:
        _allow_shared(kernel, shared)
    _launch(kernel, args, (len(torre_x0), 1, 1), (block, 1, 1), 0, shared)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="cuda_split_bench")
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check")
    c.add_argument("order", type=int)
    c.add_argument("size", type=int)
    c.add_argument("parts", type=int)
    c.add_argument("nx", type=int)
    c.add_argument("ny", type=int)
    c.add_argument("nz", type=int)
    c.add_argument("heights", type=int, nargs="+")
    c.add_argument("--left-from-memory", action="store_true")
    c.add_argument("--specialise", action="store_true")
    p = sub.add_parser("prebuild")
    p.add_argument("out", type=Path)
    p.add_argument("--order", type=int, default=8)
    p.add_argument("--size", type=int, default=2)
    p.add_argument("--configs", nargs="+", default=list(DEFAULT_CONFIGS))
    p.add_argument("--yz", nargs="+", default=["gen", "4096x64"])
    p.add_argument("--dts1", action="store_true")
    b = sub.add_parser("bench")
    b.add_argument("prebuilt", type=Path)
    b.add_argument("--shape", type=int, nargs=3, default=[1024, 4096, 64])
    b.add_argument("--small", type=int, nargs=3, default=[37, 35, 19])
    b.add_argument("--order", type=int, default=8)
    b.add_argument("--size", type=int, default=2)
    b.add_argument("--configs", nargs="+", default=list(DEFAULT_CONFIGS))
    b.add_argument("--nts", type=int, nargs="+", default=[16, 32])
    b.add_argument("--repeats", type=int, default=5)
    b.add_argument("--steps", type=int, default=64)
    a = ap.parse_args(argv)
    if a.cmd == "check":
        shape = (a.nx, a.ny, a.nz)
        diff = check(a.order, a.size, a.parts, shape, a.heights,
                     left_from_memory=a.left_from_memory,
                     yz=shape[1:] if a.specialise else None)
        print(f"NO={a.order} DTS={a.size} P={a.parts} shape={shape} heights={a.heights} "
              f"lfm={a.left_from_memory} spec={a.specialise}: max diff {diff}", flush=True)
        return 0 if diff == 0.0 else 1
    if a.cmd == "prebuild":
        yz = [None if s == "gen" else tuple(int(x) for x in s.split("x")) for s in a.yz]
        prebuild(a.out, a.order, a.size, a.configs, yz, a.dts1)
        return 0
    bench(a.prebuilt, tuple(a.shape), a.order, a.size, a.configs, a.nts, a.repeats, a.steps,
          tuple(a.small))
    return 0


if __name__ == "__main__":
    sys.exit(main())
