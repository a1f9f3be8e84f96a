"""The y split's exchange model (``engine.scale.mpi.predict_scaling``) against the four-H100 measurement,
and its predictions for 8 GPUs and two nodes, as built and with the exchange overlapped (issue 30).

    python .ci/mpi-model.py        # the table of BENCHMARKS.md "Four GPUs and past them: the exchange model"

Anchors (H100s of one host, NV18, NO=2, Nt=32, `.ci/mpi-scaling.py`, BENCHMARKS.md): one GPU 632.4 G/s on
2048x4096x512; 2 GPUs 1.88x, 4 GPUs 3.42x; weak (1024x2048x512 a GPU) 608.5 G/s -> 93 % on four.
"""

from __future__ import annotations

import argparse

from diamondlab.engine.scale.mpi import predict_scaling

NVLINK = 450e9  # H100 NV18: 900 GB/s both ways, 450 each way
INFINIBAND = 50e9  # NDR 400 Gb/s a GPU, each way
MEASURED = {("strong", 2): "1.88x", ("strong", 4): "3.42x", ("weak", 4): "93 %"}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rate", type=float, default=632.4e9, help="one GPU's rate, cell updates/s")
    ap.add_argument("--weak-rate", type=float, default=608.5e9, help="one GPU's rate on the weak grid")
    ap.add_argument("--nt", type=int, default=32)
    ap.add_argument("--order", type=int, default=2)
    args = ap.parse_args(argv)
    host = "NVLink (one host)"
    rows = [(2, host, NVLINK), (4, host, NVLINK), (8, host, NVLINK),
            (8, "two hosts of 4, InfiniBand between them", INFINIBAND),
            (16, "two hosts of 8, InfiniBand between them", INFINIBAND)]
    print("| GPUs | links | mode | strong 2048x4096x512: speed-up (efficiency) | weak 1024x2048x512 a GPU | "
          "measured |")
    print("|---:|---|---|---:|---:|---:|")
    for ranks, name, link in rows:
        for overlap in (False, True):
            strong = predict_scaling((2048, 4096, 512), args.order, args.nt, ranks, args.rate, link,
                                     overlap=overlap)
            weak = predict_scaling((1024, 2048 * ranks, 512), args.order, args.nt, ranks, args.weak_rate,
                                   link, overlap=overlap)
            seen = []
            if not overlap and link == NVLINK:
                seen = [f"{kind} {MEASURED[(kind, ranks)]}" for kind in ("strong", "weak")
                        if (kind, ranks) in MEASURED]
            print(f"| {ranks} | {name} | {'overlapped' if overlap else 'as built'} | "
                  f"{strong['speedup']:.2f}x ({100 * strong['efficiency']:.0f} %; exchange "
                  f"{1e3 * strong['exchange']:.2f} ms, {1e3 * strong['hidden']:.2f} hidden, of "
                  f"{1e3 * strong['compute']:.1f} ms) | {100 * weak['efficiency']:.1f} % | "
                  f"{', '.join(seen) or '-'} |")


if __name__ == "__main__":
    main()
