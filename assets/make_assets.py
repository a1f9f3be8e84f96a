"""Make the README figures from the geometry layer (no plotting library needed).

Run ``python assets/make_assets.py``; it rewrites, atomically:

- ``time_levels.svg``: steps completed by each (x, y) column in the middle of
  a DiamondTorre sweep (paper 000, figure 9), with the torres of the next
  stage outlined;
- ``stages.svg``: the bottom tiles of every torre of the sweep coloured by
  stage (stage 0 is the rightmost), showing how the diamonds tile the domain.
"""

from __future__ import annotations

import colorsys
from pathlib import Path

import numpy as np

from diamondlab.engine.outputs.io import write_atomically
from diamondlab.geometry import stage_schedule

HERE = Path(__file__).resolve().parent
CELL = 12


def _colour(value: float) -> str:
    """Blue (0) to yellow (1)."""
    r, g, b = colorsys.hsv_to_rgb(0.65 - 0.5 * value, 0.75, 0.35 + 0.6 * value)
    return f"#{int(r * 255):02x}{int(g * 255):02x}{int(b * 255):02x}"


def _tile_polygon(s, torre: int, k: int, top: int, **style) -> str:
    """Staircase outline of tier ``k`` of ``torre`` (unclipped; the SVG clips to the domain)."""
    x0 = int(s.torre_x0[torre]) + s.tile.shs * k
    yc = int(s.torre_yc[torre])
    right, left = [], []
    for dy, lo, hi in s.tile.rows():
        y0, y1 = top + (yc + dy) * CELL, top + (yc + dy + 1) * CELL
        right += [((x0 + hi + 1) * CELL, y0), ((x0 + hi + 1) * CELL, y1)]
        left += [((x0 + lo) * CELL, y0), ((x0 + lo) * CELL, y1)]
    points = " ".join(f"{x},{y}" for x, y in right + left[::-1])
    attrs = " ".join(f'{key.replace("_", "-")}="{value}"' for key, value in style.items())
    return f'<polygon points="{points}" {attrs}/>'


def _svg(width: int, height: int, body: list[str], title: str) -> str:
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="13">'
    )
    return "\n".join([head, f"<title>{title}</title>", *body, "</svg>\n"])


def time_levels_svg(order=2, size=3, nt=12, nx=60, ny=30, stages_done=None) -> str:
    s = stage_schedule(order, size, nt, nx, ny)
    done = s.nstages // 2 if stages_done is None else stages_done
    levels = s.time_levels(done)
    top = 28
    body = [
        f'<text x="4" y="18">Steps done after {done} of {s.nstages} stages '
        f"(NO={order}, DTS={size}, Nt={nt}); next stage outlined</text>"
    ]
    for x in range(nx):
        for y in range(ny):
            colour = _colour(levels[x, y] / nt)
            body.append(
                f'<rect x="{x * CELL}" y="{top + y * CELL}" width="{CELL}" height="{CELL}" '
                f'fill="{colour}"><title>({x}, {y}): {levels[x, y]}</title></rect>'
            )
    body.append(f'<clipPath id="domain"><rect x="0" y="{top}" width="{nx * CELL}" height="{ny * CELL}"/>')
    body.append('</clipPath><g clip-path="url(#domain)">')
    nxt = s.stage_torres(done) if done < s.nstages else []
    for i in nxt:
        body.append(_tile_polygon(s, int(i), 0, top, fill="none", stroke="white", stroke_width=2))
    body.append("</g>")
    legend_y = top + ny * CELL + 18
    for k in range(nt + 1):
        body.append(
            f'<rect x="{k * 40}" y="{legend_y}" width="40" height="14" fill="{_colour(k / nt)}"/>'
            f'<text x="{k * 40 + 14}" y="{legend_y + 30}">{k}</text>'
        )
    return _svg(nx * CELL, legend_y + 40, body, "DiamondTorre time levels mid-sweep")


def stages_svg(order=2, size=3, nt=12, nx=60, ny=30) -> str:
    s = stage_schedule(order, size, nt, nx, ny)
    top = 28
    body = [
        f'<text x="4" y="18">Bottom tiles of one sweep by stage '
        f"({s.nstages} stages, run right to left)</text>"
    ]
    body.append(f'<clipPath id="domain"><rect x="0" y="{top}" width="{nx * CELL}" height="{ny * CELL}"/>')
    body.append('</clipPath><g clip-path="url(#domain)">')
    for i in range(s.ntorres):
        colour = _colour(float(s.torre_stage[i]) / max(s.nstages - 1, 1))
        body.append(_tile_polygon(s, i, 0, top, fill=colour, stroke="#111", stroke_width=1))
    body.append("</g>")
    return _svg(nx * CELL, top + ny * CELL + 4, body, "DiamondTorre stages")


def main() -> None:
    for name, text in (("time_levels.svg", time_levels_svg()), ("stages.svg", stages_svg())):
        write_atomically(HERE / name, lambda fh, text=text: fh.write(text), mode="w")
        print(f"wrote {HERE / name}")


if __name__ == "__main__":
    np.seterr(all="raise")
    main()
