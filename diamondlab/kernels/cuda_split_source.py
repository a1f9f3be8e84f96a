"""Source generator for the split-tile DiamondTorre sweep (the tile's rows spread over P threads).

Contract
--------
:func:`generate_split_source` returns the text of a Python module that
defines, for stencil order ``NO``, tile size ``DTS`` (``R = ShS * DTS``) and
``P`` parts:

``cell_update(...)``
    copied verbatim from :func:`diamondlab.kernels.cuda_source.generate_source`,
    so the split sweep computes every cell exactly like the stepwise kernel
    of :func:`diamondlab.kernels.cuda.cuda_kernels` (bit for bit, ``fastmath``
    off, same summation order).
``split_sweep(F, G, nx, ny, nz, nt, torre_x0, torre_yc, deps, done, counter,
ticket_base, epoch, coeffs)``
    one whole sweep of height ``nt`` in ONE launch of one block per torre,
    with the tickets and ``done`` flags of
    :func:`~diamondlab.kernels.cuda_source.generate_source`'s
    ``diamondtorre_sweep`` (a block waits only on the two torres of the
    previous stage that touch it).

The block is ``(nzb, P)`` threads: ``threadIdx.x`` is z (``nzb >= nz``, a
multiple of 32 on a GPU so that a warp never mixes parts), ``threadIdx.y`` the
part.  The tile's ``2 R - 1`` rows (``v = dy``) are cut into ``P`` contiguous
bands (:func:`split_bands`, balanced by the registers each band needs); part
``p`` keeps its band's two time levels (and the ``ShS``-wide strips left and
right of each row) in scalar registers, every index a compile-time constant:
one generated device function per (part, interior/boundary), dispatched on the
warp-uniform part index.  Every part runs the same ``nt`` tiers with one
``syncthreads`` each.  Per tier a part loads its rows' entering cells and the
y-halo rows beyond the tile that its cells touch, writes its cells' level-n
values to shared memory (double buffered, z-major rows of ``NCP`` slots, so
every shared offset is a constant), synchronises, and updates its cells: x
neighbours from its registers, z neighbours from shared memory, y neighbours
from its registers when they lie in its band or beyond the tile, else from
the shared slot the owning part wrote this tier (the shared row holds the
tile's cells plus those strip cells that another band reads).  Stores: the
cells that leave the torre every tier, all cells on the last two tiers.
Interior torres run without bounds checks; boundary torres check every cell.
Loads use ``ld.global.cg``.  With ``simulator=True`` plain indexing replaces
the CUDA-only intrinsics.
"""

from __future__ import annotations

import re

from diamondlab.kernels.cuda_source import _enc, _Emitter, generate_source, tile_rows
from diamondlab.numerics import validate_order

__all__ = ["generate_split_source", "split_bands", "split_layout", "SplitLayout"]


def _f(u: int, v: int) -> str:
    return f"f_{_enc(u)}_{_enc(v)}"


def _g(u: int, v: int) -> str:
    return f"g_{_enc(u)}_{_enc(v)}"


def _h(u: int, v: int) -> str:
    return f"h_{_enc(u)}_{_enc(v)}"


def _row_cost(order: int, radius: int, v: int) -> int:
    """Registers a row roughly needs: two levels of its 2w cells plus the 2 ShS strip cells."""
    shs = order // 2
    w = radius - abs(v)
    return 4 * w + 2 * shs


def split_bands(order: int, size: int, parts: int) -> list[list[int]]:
    """Contiguous bands of tile rows (``v`` values), one per part, balancing register demand.

    Minimises the largest band's cost (two levels of its cells plus the
    strips, plus the y-halo rows an edge band must load).

    >>> split_bands(8, 2, 4)
    [[-7, -6, -5, -4, -3], [-2, -1], [0, 1], [2, 3, 4, 5, 6, 7]]
    >>> [len(b) for b in split_bands(2, 1, 1)]
    [1]
    """
    shs = validate_order(order) // 2
    radius = shs * size
    rows = [v for v, _ in tile_rows(radius)]
    if not 1 <= parts <= len(rows):
        raise ValueError(f"parts must be between 1 and {len(rows)}; got {parts}")

    def cost(band: list[int]) -> int:
        c = sum(_row_cost(order, radius, v) for v in band)
        # y-halo cells beyond the tile that this band's cells touch
        halo = {
            (u, v + s * d)
            for v in band
            for u in range(1 - (radius - abs(v)), radius - abs(v) + 1)
            for d in range(1, shs + 1)
            for s in (-1, 1)
            if abs(v + s * d) >= radius
        }
        return c + len(halo)

    import functools

    @functools.cache
    def best(start: int, k: int) -> tuple[int, tuple[int, ...]]:
        # split rows[start:] into k bands; return (max cost, cut points)
        if k == 1:
            return cost(rows[start:]), ()
        out = None
        for cut in range(start + 1, len(rows) - k + 2):
            head = cost(rows[start:cut])
            tail, cuts = best(cut, k - 1)
            cand = (max(head, tail), (cut,) + cuts)
            if out is None or cand < out:
                out = cand
        return out

    _, cuts = best(0, parts)
    bounds = [0, *cuts, len(rows)]
    return [rows[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


class SplitLayout:
    """Bands, shared-memory slots and row length ``ncp`` of a split tile.

    ``slot[(u, v)]``: the tile's cells first (row by row), then the strip
    cells that a cell of another band reads as a y neighbour.
    """

    def __init__(self, order: int, size: int, parts: int):
        shs = validate_order(order) // 2
        self.order, self.size, self.parts = order, size, parts
        self.shs = shs
        self.radius = radius = shs * size
        self.rows = tile_rows(radius)
        self.bands = split_bands(order, size, parts)
        self.band_of = {v: p for p, band in enumerate(self.bands) for v in band}
        cells = [(u, v) for v, w in self.rows for u in range(1 - w, w + 1)]
        slots = list(cells)
        seen = set(cells)
        for u, v in cells:
            for d in range(1, shs + 1):
                for s in (-1, 1):
                    vv = v + s * d
                    if abs(vv) < radius and self.band_of[vv] != self.band_of[v] and (u, vv) not in seen:
                        seen.add((u, vv))
                        slots.append((u, vv))
        self.cells = cells
        self.slot = {c: i for i, c in enumerate(slots)}
        self.ncp = len(slots) | 1


def split_layout(order: int, size: int, parts: int) -> SplitLayout:
    """The :class:`SplitLayout` of ``(NO, DTS, P)``.

    >>> lay = split_layout(8, 2, 4)
    >>> len(lay.cells), lay.ncp >= 129, lay.ncp % 2
    (128, True, 1)
    """
    return SplitLayout(order, size, parts)


def _part_function(name: str, lay: SplitLayout, part: int, interior: bool, sim: bool,
                   yz: tuple[int, int] | None, left_from_memory: bool) -> str:
    """Device function that runs part ``part`` of one torre (its band of tile rows)."""
    shs, radius, ncp = lay.shs, lay.radius, lay.ncp
    band = set(lay.bands[part])
    rows = [(v, w) for v, w in lay.rows if v in band]
    cells = [(u, v) for v, w in rows for u in range(1 - w, w + 1)]
    coeff_args = ", ".join(f"c{i}" for i in range(shs + 1))

    def left_strip(v: int, w: int) -> range:
        return range(1 - w - shs, min(-w, w - shs) + 1)

    def addr(u: int, v: int) -> str:
        if yz is not None:
            return f"base + ({u * yz[0] * yz[1] + v * yz[1]})"
        return f"base + ({u}) * sx + ({v}) * nz"

    dims = ("ny", "nz") if yz is None else (str(yz[0]), str(yz[1]))

    def load(array: str, u: int, v: int) -> str:
        idx = addr(u, v)
        return f"{array}[{idx}]" if sim else f"LDCG({array}, {idx})"

    def store(array: str, u: int, v: int, value: str) -> str:
        idx = addr(u, v)
        return f"{array}[{idx}] = {value}" if sim else f"{array}[uint64({idx})] = {value}"

    def shared(offset: int) -> str:
        return f"sh[sbuf + ({offset})]" if sim else f"sh[uint64(sbuf + ({offset}))]"

    def guard(u: int, v: int) -> str:
        return f"yin_{_enc(v)} and xin_{_enc(u)}"

    def get(e, indent, target, array, u, v):
        if interior:
            e(indent, f"{target} = {load(array, u, v)}")
        else:
            e(indent, f"{target} = {load(array, u, v)} if {guard(u, v)} else ZERO")

    yhalo = sorted(
        {
            (u, v + s * d)
            for (u, v) in cells
            for d in range(1, shs + 1)
            for s in (-1, 1)
            if abs(v + s * d) >= radius
        }
    )
    e = _Emitter()
    e(0, "@cuda.jit(device=True)")
    e(0, f"def {name}(F, G, sh, x0, yc, nt, nx, ny, nz, tz, zc, active, stride, {coeff_args}):")
    e(1, "sx = ny * nz")
    e(1, "bufsize = stride * NCP")
    if not interior:
        for v in sorted(band | {v for _, v in yhalo}):
            e(1, f"yv = yc + ({v})")
            e(1, f"yin_{_enc(v)} = yv >= 0 and yv < ny")
    e(1, f"base = (int64(x0) * {dims[0]} + yc) * {dims[1]} + zc")
    if not interior:
        e(1, "ax = x0")
        for u in range(1 - radius - shs, radius + shs + 1):
            e(1, f"xu = ax + ({u})")
            e(1, f"xin_{_enc(u)} = xu >= 0 and xu < nx")
    for v, w in rows:
        for u in range(1 - w - shs, w - shs + 1):
            if left_from_memory and u in left_strip(v, w):
                continue
            get(e, 1, _f(u, v), "F", u, v)
        for u in range(1 - w, w + 1):
            get(e, 1, _g(u, v), "G", u, v)
    e(1, "k = 0")
    e(1, "while k < nt:")
    e(2, "if k % 2 == 0:")
    e(3, "A = F")
    e(3, "B = G")
    e(2, "else:")
    e(3, "A = G")
    e(3, "B = F")
    e(2, f"ax = x0 + {shs} * k")
    e(2, f"base = (int64(ax) * {dims[0]} + yc) * {dims[1]} + zc")
    e(2, "sbuf = (k % 2) * bufsize + (tz + SHS) * NCP")
    if not interior:
        for u in range(1 - radius - shs, radius + shs + 1):
            e(2, f"xu = ax + ({u})")
            e(2, f"xin_{_enc(u)} = xu >= 0 and xu < nx")
    for v, w in rows:
        for u in range(w - shs + 1, w + shs + 1):
            get(e, 2, _f(u, v), "A", u, v)
    if left_from_memory:
        for v, w in rows:
            for u in left_strip(v, w):
                get(e, 2, _f(u, v), "A", u, v)
    for u, v in yhalo:
        get(e, 2, _h(u, v), "A", u, v)
    # level n of this band's slots to shared memory (z derivative, other bands' y neighbours)
    for (u, v), c in lay.slot.items():
        if v in band:
            e(2, f"{shared(c)} = {_f(u, v)} if active else ZERO")
    e(2, "cuda.syncthreads()")

    def ynb(u: int, v: int) -> str:
        if abs(v) >= radius:
            return _h(u, v)
        if v in band:
            return _f(u, v)
        return shared(lay.slot[(u, v)])

    for u, v in cells:
        c = lay.slot[(u, v)]
        args = [_f(u, v), _g(u, v), coeff_args]
        for d in range(1, shs + 1):
            args += [_f(u - d, v), _f(u + d, v), ynb(u, v - d), ynb(u, v + d)]
            args += [shared(c - d * ncp), shared(c + d * ncp)]
        call = f"cell_update({', '.join(args)})"
        if interior:
            e(2, f"{_g(u, v)} = {call}")
        else:
            e(2, f"if {guard(u, v)}:")
            e(3, f"{_g(u, v)} = {call}")
    e(2, "if active:")
    rest = []
    for v, w in rows:
        for u in range(1 - w, w + 1):
            if u >= 1 - w + 2 * shs:
                rest.append((u, v))
                continue
            if interior:
                e(3, store("B", u, v, _g(u, v)))
            else:
                e(3, f"if {guard(u, v)}:")
                e(4, store("B", u, v, _g(u, v)))
    if rest:
        e(3, "if k >= nt - 2:")
        for u, v in rest:
            if interior:
                e(4, store("B", u, v, _g(u, v)))
            else:
                e(4, f"if {guard(u, v)}:")
                e(5, store("B", u, v, _g(u, v)))
    for v, w in rows:
        for u in range(1 - w, w + 1):
            e(2, f"t_{_enc(u)}_{_enc(v)} = {_f(u + shs, v)}")
    for v, w in rows:
        for u in range(1 - w - shs, w - shs + 1):
            if left_from_memory and u in left_strip(v, w):
                continue
            e(2, f"{_f(u, v)} = {_g(u + shs, v)}")
    for v, w in rows:
        for u in range(1 - w, w + 1):
            e(2, f"{_g(u, v)} = t_{_enc(u)}_{_enc(v)}")
    e(2, "k += 1")
    return e.text()


_HEADER = '''\
"""Generated by diamondlab.kernels.cuda_split_source for NO={order}, DTS={size}, P={parts}{simnote}.

Bands (tile rows v per part): {bands}.  Do not edit.
"""
import numpy as np
from numba import cuda, float32, int64, uint64
{ldcg_import}
SHS = {shs}
RADIUS = {radius}
PARTS = {parts}
NCP = {ncp}  # shared-memory row length (slots), odd: no bank conflicts
ZERO = np.float32(0.0)


'''

_LDCG_IMPORT = """
from diamondlab.kernels.cuda import ldcg_intrinsic

LDCG = ldcg_intrinsic()  # ld.global.cg without the negative-index check
"""


def _cell_update_source(order: int, simulator: bool) -> str:
    """The ``cell_update`` function of the stepwise kernel's module, verbatim."""
    src = generate_source(order, 1, simulator=simulator)
    m = re.search(r"@cuda\.jit\(device=True\)\ndef cell_update\(.*?\n    return [^\n]*\n", src, re.S)
    if m is None:  # pragma: no cover - guards against a changed generator
        raise RuntimeError("cell_update not found in cuda_source's output")
    return m.group(0)


def _sweep_kernel(lay: SplitLayout, jit_opts: str, sim: bool) -> str:
    shs, radius = lay.shs, lay.radius
    coeff_args = ", ".join(f"c{i}" for i in range(shs + 1))
    e = _Emitter()
    e(0, f"@cuda.jit({jit_opts})")
    e(0, "def split_sweep(F, G, nx, ny, nz, nt, torre_x0, torre_yc, deps, done, counter,")
    e(0, "                ticket_base, epoch, coeffs):")
    e(1, '"""One DiamondTorre sweep of height nt: one (nzb, PARTS) block per torre, one launch."""')
    e(1, "sh = cuda.shared.array(0, dtype=float32)")
    e(1, "slot = cuda.shared.array(1, dtype=int64)")
    e(1, "tz = cuda.threadIdx.x")
    e(1, "part = cuda.threadIdx.y")
    e(1, "nzb = cuda.blockDim.x")
    e(1, "stride = nzb + 2 * SHS")
    e(1, "if tz == 0 and part == 0:")
    e(2, "t = cuda.atomic.add(counter, 0, 1) - ticket_base")
    e(2, "slot[0] = t")
    for j in range(2):
        e(2, f"d = deps[t, {j}]")
        e(2, "if d >= 0:")
        e(3, "while cuda.atomic.max(done, d, 0) < epoch:")
        e(4, "pass" if sim else "cuda.nanosleep(64)")
    e(2, "cuda.threadfence()")
    e(1, "if tz < SHS:")
    e(2, "for b in range(2):")
    e(3, "c = part")
    e(3, "while c < NCP:")
    e(4, "sh[(b * stride + tz) * NCP + c] = ZERO")
    e(4, "sh[(b * stride + nzb + SHS + tz) * NCP + c] = ZERO")
    e(4, "c += PARTS")
    e(1, "cuda.syncthreads()")
    e(1, "t = slot[0]")
    e(1, "x0 = torre_x0[t]")
    e(1, "yc = torre_yc[t]")
    e(1, "active = tz < nz")
    e(1, "zc = min(tz, nz - 1)")
    for i in range(shs + 1):
        e(1, f"c{i} = coeffs[{i}]")
    lo_x = 1 - radius - shs
    hi_y = radius + shs - 1
    e(1, f"interior = (x0 + ({lo_x}) >= 0 and x0 + {shs} * (nt - 1) + {radius + shs} < nx")
    e(1, f"            and yc >= {hi_y} and yc + {hi_y} < ny)")
    call = f"(F, G, sh, x0, yc, nt, nx, ny, nz, tz, zc, active, stride, {coeff_args})"
    for kind in ("interior", "boundary"):
        e(1, "if interior:" if kind == "interior" else "else:")
        for p in range(lay.parts):
            kw = "if" if p == 0 else "elif" if p < lay.parts - 1 else "else"
            if lay.parts == 1:
                e(2, f"torre_{kind}_p{p}{call}")
                continue
            e(2, f"{kw} part == {p}:" if kw != "else" else "else:")
            e(3, f"torre_{kind}_p{p}{call}")
    e(1, "cuda.syncthreads()")
    e(1, "if tz == 0 and part == 0:")
    e(2, "cuda.threadfence()")
    e(2, "cuda.atomic.max(done, t, epoch)")
    return e.text()


def generate_split_source(order: int, size: int, parts: int, max_registers: int | None = None,
                          simulator: bool = False, yz: tuple[int, int] | None = None,
                          left_from_memory: bool = False) -> str:
    """Python source of the split sweep module for ``(NO, DTS, P)``.

    ``yz = (ny, nz)`` specialises every offset for one grid (the kernel must
    then only be launched on it); ``left_from_memory`` re-reads the tile's
    left strips from L2 every tier instead of keeping them in registers;
    ``max_registers`` caps the sweep kernel's registers (ignored in the
    simulator).

    >>> src = generate_split_source(2, 2, 2, simulator=True)
    >>> "def split_sweep" in src and "def torre_boundary_p1" in src and "def cell_update" in src
    True
    """
    lay = SplitLayout(order, size, parts)
    parts_src = [
        _HEADER.format(
            order=order, size=size, parts=parts, shs=lay.shs, radius=lay.radius, ncp=lay.ncp,
            bands=lay.bands, simnote=" (simulator)" if simulator else "",
            ldcg_import="" if simulator else _LDCG_IMPORT,
        ),
        _cell_update_source(order, simulator),
        "",
    ]
    for kind in ("interior", "boundary"):
        for p in range(parts):
            parts_src += [
                "",
                _part_function(f"torre_{kind}_p{p}", lay, p, kind == "interior", simulator, yz,
                               left_from_memory),
                "",
            ]
    opts = "fastmath=False" if simulator else "fastmath=False, cache=True"
    if max_registers and not simulator:
        opts += f", max_registers={int(max_registers)}"
    parts_src += ["", _sweep_kernel(lay, opts, simulator), ""]
    return "\n".join(parts_src)
