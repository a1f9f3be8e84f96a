"""The acoustic sweep's SASS offline (no GPU): instructions per tier of each torre loop, by opcode.

    python .ci/sweep-sass.py ORDER [constant|sponge] [--yz NY,NZ] [--out DIR] [--options JSON]

Records the sweep the engine builds for a small grid under the CUDA simulator (its argument types and
generator options), generates the same kernel for the GPU (specialised for ``--yz`` as the engine does
from ``specialise_min_cells`` up), compiles it with NVVM to PTX and with ``ptxas`` for sm_90, disassembles
it with ``nvdisasm`` and prints, for every loop of more than 50 instructions (the torre functions' tier
loops), its length and its opcode counts.  Needs the CUDA 13 compiler wheels in ``/tmp/nvcc`` (NOTES.md:
``pip install --target /tmp/nvcc nvidia-cuda-nvcc nvidia-cuda-nvrtc``; nvdisasm from
``nvidia-cuda-nvdisasm``) and ``LD_LIBRARY_PATH=/tmp/nvcc/nvidia/cu13/lib``.  Used for BENCHMARKS.md
("The NO=2 sweep on the H200: what bounds it"); a NO=2 compile takes 1-5 minutes on 2 cores.
"""

import argparse
import collections
import json
import os
import pickle
import re
import subprocess
import sys
import tempfile
from pathlib import Path

NVCC = Path("/tmp/nvcc/nvidia/cu13/bin")


def record(order: int, medium: str) -> dict:
    """Under the simulator: the sweep's argument types and the generator options the engine passes."""
    import numba

    import diamondlab.kernels.cuda as kcuda
    from diamondlab import Simulation

    seen = {}
    launch, build = kcuda.launch_generated, kcuda.cuda_kernels

    def typeof(a):
        return numba.typeof(a.copy_to_host() if hasattr(a, "copy_to_host") else a)

    def spy_launch(module, name, args, *rest, **kw):
        if name == "diamondtorre_sweep":
            seen["types"] = tuple(typeof(a) for a in args)
        return launch(module, name, args, *rest, **kw)

    def spy_build(*a, **kw):
        seen["build"] = (a, kw)
        return build(*a, **kw)

    kcuda.launch_generated = spy_launch
    for module in list(sys.modules.values()):
        if getattr(module, "cuda_kernels", None) is build:
            module.cuda_kernels = spy_build
    sim = Simulation((48, 48, 32), order, backend="cuda", algorithm="diamondtorre",
                     **({"sponge": 2} if medium == "sponge" else {}))
    sim.run(sim.nt)
    return seen


def loops(sass: str):
    """(first line, length, opcode counts) of every backward branch's loop body."""
    lines = sass.splitlines()
    labels = {m.group(1): i for i, line in enumerate(lines) if (m := re.match(r"^(\.L_x_\d+):", line))}
    for i, line in enumerate(lines):
        m = re.search(r"BRA `\((\.L_x_\d+)\)", line)
        if m and labels[m.group(1)] < i:
            body = [x for x in lines[labels[m.group(1)]:i + 1] if re.match(r"^\s+/\*[0-9a-f]+\*/", x)]
            ops = collections.Counter(
                re.match(r"^\s+/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_]+)", x).group(1) for x in body)
            yield labels[m.group(1)], len(body), ops


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("order", type=int)
    parser.add_argument("medium", nargs="?", default="constant", choices=("constant", "sponge"))
    parser.add_argument("--yz", default=None, help="NY,NZ: the sweep specialised for this grid")
    parser.add_argument("--out", default=None, help="keep the .ptx, .cubin and .sass here")
    parser.add_argument("--options", type=json.loads, default={},
                        help="generator options over the engine's, JSON "
                             '(e.g. \'{"exchange_barrier": "neighbours"}\')')
    parser.add_argument("--record", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.record:  # the child process, under the simulator
        Path(args.record).write_bytes(pickle.dumps(record(args.order, args.medium)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(args.out or tmp)
        out.mkdir(parents=True, exist_ok=True)
        recorded = Path(tmp) / "recorded.pickle"
        subprocess.run([sys.executable, __file__, str(args.order), args.medium, "--record", str(recorded)],
                       env=dict(os.environ, NUMBA_ENABLE_CUDASIM="1"), check=True)
        seen = pickle.loads(recorded.read_bytes())
        sys.path.insert(0, "/tmp/nvcc")
        from types import SimpleNamespace

        import numba.cuda.dispatcher as dispatcher
        from numba import cuda

        dispatcher.get_current_device = lambda: SimpleNamespace(compute_capability=(9, 0))
        from diamondlab.kernels.cuda import SHARED_PREVIOUS_SEGMENTS
        from diamondlab.kernels.cuda_source import generate_source
        from diamondlab.kernels.generated import load_generated

        (order, size, cap, *_), options = seen["build"]
        options = dict(options)
        if options.get("segments") is None:
            options["segments"] = SHARED_PREVIOUS_SEGMENTS.get((order, size), 0)
        if args.yz:
            options["yz"] = tuple(int(v) for v in args.yz.split(","))
        options.update(args.options)
        cap = cap or 128
        print(f"NO={order} DTS={size} cap={cap} {options}", flush=True)
        module = load_generated(generate_source(order, size, max_registers=cap, **options), "sass_probe")
        ptx = cuda.compile_ptx(module.diamondtorre_sweep.py_func, seen["types"], cc=(9, 0))[0]
        (out / "sweep.ptx").write_text(ptx)
        report = subprocess.run([NVCC / "ptxas", "-arch=sm_90", "-v", "--maxrregcount", str(cap),
                                 str(out / "sweep.ptx"), "-o", str(out / "sweep.cubin")],
                                capture_output=True, text=True, check=True).stderr
        print("\n".join(line for line in report.splitlines() if "registers" in line or "spill" in line))
        sass = subprocess.run([NVCC / "nvdisasm", "-c", str(out / "sweep.cubin")], capture_output=True,
                              text=True, check=True).stdout
        (out / "sweep.sass").write_text(sass)
        for first, length, ops in loops(sass):
            if length > 50:
                print(f"loop at line {first}: {length} instructions: {dict(ops.most_common(16))}")


if __name__ == "__main__":
    main()
