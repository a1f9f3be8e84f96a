"""The y split's exchange model (``engine.scale.mpi.predict_scaling``) against the four-H200 measurement,
and its predictions for 8 GPUs and two nodes, as built and with the exchange overlapped (issue 30).

    python .ci/mpi-model.py        # the table of BENCHMARKS.md "Four H200s: even slabs and an exchange ..."

Anchors (H200s of one host, NV18 through an NVSwitch, NO=2, Nt=32, even slabs, no host wait,
`.ci/mpi-scaling.py`, BENCHMARKS.md, 2026-11-28): one GPU 681.6 G/s on 2048x4096x512; 2 GPUs 1.93x, 4 GPUs
3.57x; weak (1024x2048x512 a GPU) 648.9 G/s -> 96.8 % on four.  Across two hosts a boundary rank's two sides
take two links (the network and NVLink): ``shared=False`` there.
"""

from __future__ import annotations

import argparse

from diamondlab.engine.scale.mpi import predict_scaling

NVLINK = 450e9  # H100 and H200 NV18: 900 GB/s both ways, 450 each way, a GPU's whole (all its links)
INFINIBAND = 50e9  # NDR 400 Gb/s a GPU, each way
MEASURED = {("strong", 2): "1.93x", ("strong", 4): "3.57x", ("weak", 2): "98.0 %", ("weak", 4): "96.8 %"}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rate", type=float, default=681.6e9, help="one GPU's rate, cell updates/s")
    ap.add_argument("--weak-rate", type=float, default=648.9e9, help="one GPU's rate on the weak grid")
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
            shared = link == NVLINK  # across two hosts a boundary rank's sides take two links
            strong = predict_scaling((2048, 4096, 512), args.order, args.nt, ranks, args.rate, link,
                                     overlap=overlap, shared=shared)
            weak = predict_scaling((1024, 2048 * ranks, 512), args.order, args.nt, ranks, args.weak_rate,
                                   link, overlap=overlap, shared=shared)
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
