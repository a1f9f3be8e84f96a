"""Plot ``diamondlab bench --shapes ... --json FILE`` runs: DiamondTorre / stepwise against grid size.

    python assets/plot_size_sweep.py sweep-constant.json sweep-sources.json --out assets/size_sweep.html

One line per (NO, medium), x the grid's cells (log), y the ratio; a line at
1 marks where stepwise would win.  Writes HTML (plotly); a ``.png`` name
needs kaleido (the ``dev`` dependency group).
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict

import plotly.graph_objects as go


def figure(rows: list[dict]):
    """The ratio figure of ``rows`` (the JSON rows of ``diamondlab bench``)."""
    lines = defaultdict(list)
    for r in rows:
        nx, ny, nz = r["shape"]
        name = "x".join(map(str, r["shape"]))
        lines[(r["order"], r["medium"], r["backend"])].append((nx * ny * nz, r["ratio"], name))
    fig = go.Figure()
    for (order, medium, backend), points in sorted(lines.items()):
        points.sort()
        fig.add_scatter(x=[p[0] for p in points], y=[p[1] for p in points], text=[p[2] for p in points],
                        mode="lines+markers", name=f"NO={order}, {medium} ({backend})")
    fig.add_hline(y=1.0, line=dict(color="#c0392b", dash="dot"), annotation_text="stepwise")
    fig.update_layout(xaxis_type="log", xaxis_title="grid cells", yaxis_title="DiamondTorre / stepwise",
                      title="DiamondTorre against stepwise by grid size", height=480)
    return fig


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("json", nargs="+", help="files written by diamondlab bench --json")
    parser.add_argument("--out", default="size_sweep.html", help="an .html or .png file")
    args = parser.parse_args(argv)
    rows = []
    for path in args.json:
        with open(path) as fh:
            rows += json.load(fh)["rows"]
    fig = figure(rows)
    if args.out.endswith(".html"):
        fig.write_html(args.out)
    else:
        fig.write_image(args.out)


if __name__ == "__main__":
    main()
