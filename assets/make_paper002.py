"""Make the README's figures of paper 002 (Zakirov et al., FDTD on DiamondTorre) from the package and the
H100 rows committed under ``assets/bench``.

Run ``python assets/make_paper002.py`` (needs kaleido, the ``dev`` dependency group, with Debian's
``chromium``).  It writes, into ``assets/``:

- ``paper002_fig2_yee_cell.png``: the Yee cell at order 4, what ``Hz`` reads
  (:func:`diamondlab.viz.yee.yee_cell_figure`);
- ``paper002_fig2_diamondtile.png``: paper 002's DiamondTile at order 4, DTS = 1 (its choice), a torre of
  two steps of H and E tiles (:func:`diamondlab.viz.yee.yee_tiles_figure`);
- ``paper002_fig3_rate.png``: Fig. 3, the rate against the blocks of a stage and against TH (our Nt), drawn
  from measured rows only (:func:`fig3_points` says which: Fig. 3's own sweeps of ``.ci/maxwell-fig3-session``
  when their files are in ``assets/bench``), each with :func:`predict_yee`'s line.

Nothing is measured here: the points are the medians the bench rows hold (G Yee cell updates/s), and the
number of blocks of a row is the number of torres in a stage of its sweep (:class:`StageSchedule` of the
row's order, DTS, ``2 Nt`` half-step tiers and grid), which is how many CUDA blocks run at once.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCH = HERE / "bench"

#: one-GPU register-tile sweeps (H100, issue 28): plain scenes, Nt = 4, three grids (two y sizes)
REGISTER_FILES = ("h100-maxwell-registers-256-o2-2026-11-26.jsonl",
                  "h100-maxwell-registers-256-o4-2026-11-26.jsonl",
                  "h100-maxwell-registers-768x512x256-2026-11-26.jsonl",
                  "h100-maxwell-registers-512x512x352-2026-11-26.jsonl")
#: one-launch cache-read sweep at 256^3, Nt = 8 and 16 (the kernel before the register tile)
CACHE_FILE = "h100-maxwell-onelaunch-256-2026-11-26.jsonl"
#: one MPI rank (one H100) of the register sweep on 16384x256x256, Nt = 4 and 16
MPI_FILE = "h100x2-maxwell-mpi-2026-11-27.jsonl"
#: the calculation window (fields in host memory) window by window, order 2, DTS 1, Nt 16, a CPML and a dipole
WINDOW_FILE = "h100x2-maxwell-scale-2026-11-26.jsonl"
#: the streamed calculation window (fields in host memory, copies overlapping the sweep), order 2, vacuum
STREAMED_FILE = "h100-maxwell-window-streamed-2026-11-27.jsonl"
#: Fig. 3's own sweeps (``.ci/maxwell-fig3-session`` on one H100), read when present: ``...-fig3-blocks-...``
#: (512 x ny x 256, ny 32..512, Nt 4) and ``...-fig3-nt-...`` (Nt 2..32 on 512x512x256), order 2 DTS 2 and
#: order 4 DTS 1, plain vacuum register-tile sweeps
SWEEP_FILES = "h100-maxwell-fig3-*-2026-11-27.jsonl"

#: a colour per DTS (the model depends on it most), a marker per order
COLOURS = {1: "#1f77b4", 2: "#2ca02c", 3: "#ff7f0e", 4: "#9467bd"}
SYMBOLS = {2: "circle", 4: "diamond"}


def read_rows(name: str, bench: Path = BENCH) -> list[dict]:
    """The JSON rows of ``bench / name`` (lines that are not JSON, a run's warnings, skipped)."""
    lines = (bench / name).read_text().splitlines()
    return [json.loads(line) for line in lines if line.startswith("{")]


def blocks_per_stage(order: int, size: int, nt: int, shape) -> int:
    """The torres of the largest stage of a Maxwell sweep of ``nt`` steps on ``shape``: the blocks in flight.

    >>> blocks_per_stage(2, 1, 4, (256, 256, 256)), blocks_per_stage(4, 1, 4, (768, 512, 256))
    (128, 129)
    """
    import numpy as np

    from diamondlab.geometry import DiamondTile, DiamondTorre
    from diamondlab.geometry.schedule import StageSchedule

    schedule = StageSchedule(DiamondTorre(DiamondTile(order, size), 2 * nt), shape[0], shape[1])
    return int(np.diff(schedule.stage_start).max())


def model_rate(order: int, size: int, nt: int) -> float:
    """:func:`~diamondlab.engine.measure.perfmodel.predict_yee` of a DiamondTorre sweep on the H100, G/s.

    >>> round(model_rate(2, 2, 4), 1)
    59.7
    """
    from diamondlab.engine.measure.perfmodel import H100, predict_yee

    return predict_yee("diamondtorre", order, size, nt, device=H100).rate / 1e9


def _point(row: dict, rate_key: str, source: str) -> dict:
    return dict(order=row["order"], size=row["size"], nt=row["nt"], shape=tuple(row["shape"]),
                rate=row[rate_key], source=source)


def fig3_points(bench: Path = BENCH) -> dict[str, list[dict]]:
    """The measured points of Fig. 3, each a bench row: ``"blocks"`` (left panel) and ``"nt"`` (right).

    ``"blocks"``: the register-tile DiamondTorre rows of :data:`REGISTER_FILES` (each with its
    ``blocks``), and those of Fig. 3's own sweep over y (:data:`SWEEP_FILES`, kernel ``"sweep"``) when
    present; its Nt sweep joins ``"nt"``.  ``"nt"``: the rows where one kernel on one grid ran at several
    Nt: the register sweep as one MPI rank of :data:`MPI_FILE` on 16384x256x256 (plain scene; its
    4096x256x256 rows have Nt = 4 only) and the cache-read sweep of :data:`CACHE_FILE`, and the calculation
    window's rows of :data:`WINDOW_FILE` (``"window"``) and :data:`STREAMED_FILE` (``"streamed"``).
    A point is ``order, size, nt, shape, rate`` (G/s, the row's
    median), ``source`` (the file) and ``kernel``.
    """
    blocks, nt = [], []
    for path in sorted(bench.glob(SWEEP_FILES)):  # Fig. 3's own sweeps, when they have been measured
        for row in read_rows(path.name, bench):
            if row["algorithm"] != "diamondtorre" or row.get("tile") != "registers" or row["physics"]:
                continue
            p = dict(_point(row, "median", path.name), kernel="sweep")
            if "-fig3-blocks-" in path.name:
                p["blocks"] = blocks_per_stage(p["order"], p["size"], p["nt"], p["shape"])
                blocks.append(p)
            else:
                nt.append(p)
    for name in REGISTER_FILES:
        for row in read_rows(name, bench):
            if row["algorithm"] == "diamondtorre" and row["tile"] == "registers" and not row["physics"]:
                p = _point(row, "median", name)
                p["kernel"] = "registers"
                p["blocks"] = blocks_per_stage(p["order"], p["size"], p["nt"], p["shape"])
                blocks.append(p)
    for row in read_rows(MPI_FILE, bench):
        if row.get("mode") == "mpi" and row["ranks"] == 1 and row.get("plain") and row["shape"][0] == 16384:
            nt.append(dict(_point(row, "rate_gcells", MPI_FILE), kernel="registers"))
    for row in read_rows(CACHE_FILE, bench):
        if row["algorithm"] == "diamondtorre" and not row["physics"]:
            nt.append(dict(_point(row, "median", CACHE_FILE), kernel="caches"))
    for name, kernel in ((WINDOW_FILE, "window"), (STREAMED_FILE, "streamed")):
        for row in read_rows(name, bench):
            if row.get("mode") == "window":
                nt.append(dict(_point(row, "rate_gcells", name), kernel=kernel))
    return {"blocks": blocks, "nt": nt}


def _series(points: list[dict], x: str, by) -> dict[tuple, list[dict]]:
    series: dict[tuple, list[dict]] = {}
    for p in points:
        series.setdefault(by(p), []).append(p)
    for ps in series.values():
        ps.sort(key=lambda p: (p[x], p["rate"]))
    return dict(sorted(series.items()))


def _grid(shape) -> str:
    return "x".join(map(str, shape))


def _model_lines(pairs, nts) -> dict[tuple, tuple[list[int], list[float]]]:
    """:func:`model_rate` over ``nts`` for each (order, DTS) of ``pairs``; pairs whose lines are equal (the
    model counts the tile's bytes, the same for both orders at one DTS) share one, keyed by their orders."""
    lines: dict[tuple, list[int]] = {}
    for order, size in sorted(pairs, key=lambda p: (p[1], p[0])):
        line = tuple(round(model_rate(order, size, n), 9) for n in nts)
        lines.setdefault((size, line), []).append(order)
    return {(size, tuple(orders)): (list(nts), list(line)) for (size, line), orders in lines.items()}


def fig3_figure(points: dict[str, list[dict]]):
    """Paper 002's Fig. 3 from :func:`fig3_points`: rate against blocks (left) and against Nt (right).

    A trace per series of points (markers and lines; colour the DTS, marker the order, dotted open markers
    the cache-read sweep; ``customdata`` holds each point's bench file), then the dashed
    :func:`model_rate` lines (flat against blocks: the model counts bytes, not blocks in flight).
    """
    from plotly.subplots import make_subplots

    from diamondlab.devices import H100

    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.09, subplot_titles=(
        "rate against blocks (torres a stage), Nt = 4", "rate against TH (Nt)"))

    def add(ps, x, col, name, order, size, kernel):
        look = {"caches": "-open", "sweep": "-dot"}.get(kernel, "")
        window = kernel in ("window", "streamed")
        symbol = {"window": "x", "streamed": "star"}.get(kernel, SYMBOLS[order] + look)
        colour = "#000" if window else COLOURS[size]
        fig.add_scatter(x=[p[x] for p in ps], y=[p["rate"] for p in ps], mode="lines+markers", name=name,
                        marker=dict(symbol=symbol, size=10, color=colour),
                        line=dict(color=colour, dash="dot" if kernel == "caches" else "solid",
                                  width=3 if kernel == "sweep" else 2),
                        customdata=[p["source"] for p in ps], row=1, col=col)

    blocks = _series(points["blocks"], "blocks",
                     lambda p: (p["kernel"], p["order"], p["size"], p["shape"][2]))
    for (kernel, order, size, nz), ps in blocks.items():
        what = "registers, 512 x ny x 256" if kernel == "sweep" else f"registers, nz={nz}"
        add(ps, "blocks", 1, f"NO={order} DTS={size}, {what}", order, size, kernel)
    heights = _series(points["nt"], "nt", lambda p: (p["kernel"], p["order"], p["size"], p["shape"]))
    for (kernel, order, size, shape), ps in heights.items():
        what = {"registers": "registers, one MPI rank", "caches": "cache-read sweep",
                "sweep": "registers, one GPU",
                "window": "calculation window (host memory), CPML + dipole, window by window",
                "streamed": "calculation window (host memory), streamed, vacuum"}[kernel]
        add(ps, "nt", 2, f"NO={order} DTS={size}, {what}, {_grid(shape)}", order, size, kernel)
    xs = [p["blocks"] for p in points["blocks"]]
    flat = _model_lines({(p["order"], p["size"]) for p in points["blocks"]}, [4])
    for (size, _orders), (_, (rate,)) in flat.items():
        fig.add_scatter(x=[0, 1.15 * max(xs)], y=[rate, rate], mode="lines", showlegend=False,
                        hoverinfo="skip", line=dict(color=COLOURS[size], dash="dash", width=1), row=1, col=1)
    top = 1.15 * max([p["rate"] for p in points["blocks"]] + [line[1][0] for line in flat.values()])
    fig.add_scatter(x=[H100.multiprocessors] * 2, y=[0, top], mode="lines+text", hoverinfo="skip",
                    line=dict(color="#888", dash="dot"), text=["", f"{H100.multiprocessors} SMs"],
                    textposition="bottom right", showlegend=False, row=1, col=1)
    curves = _model_lines({(p["order"], p["size"]) for p in points["nt"]}, range(2, 33))
    for (size, orders), (nts, rates) in curves.items():
        fig.add_scatter(x=nts, y=rates, mode="lines", line=dict(color=COLOURS[size], dash="dash", width=1),
                        name=f"model DTS={size}, NO={' and '.join(map(str, orders))} (predict_yee, 3.0 TB/s)",
                        row=1, col=2)
    fig.update_xaxes(title_text="blocks in flight (torres of a stage)", rangemode="tozero", row=1, col=1)
    fig.update_xaxes(title_text="TH = Nt (steps a sweep, log)", type="log", row=1, col=2)
    fig.update_yaxes(title_text="G Yee cell updates/s", range=[0, top], row=1, col=1)
    fig.update_yaxes(title_text="G Yee cell updates/s (log)", type="log", row=1, col=2)
    fig.update_layout(title="Paper 002, Fig. 3 on one NVIDIA H100 (measured rows of assets/bench; "
                            "dashed: the model)", legend=dict(font=dict(size=10)), margin=dict(t=80))
    return fig


def main(argv=None) -> None:
    from diamondlab.viz.yee import yee_cell_figure, yee_tiles_figure

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args(argv)
    tile = yee_tiles_figure(order=4, size=1, nt=2, show_reads=False)
    figures = {"paper002_fig2_yee_cell.png": (yee_cell_figure(order=4), 700, 560),
               "paper002_fig2_diamondtile.png": (tile, 820, 560),
               "paper002_fig3_rate.png": (fig3_figure(fig3_points()), 1300, 640)}
    for name, (fig, width, height) in figures.items():
        fig.write_image(HERE / name, width=width, height=height, scale=1)
        print(f"wrote {HERE / name}")


if __name__ == "__main__":
    main()
