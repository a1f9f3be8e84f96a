"""Source generator of the Yee sweep with its tile in registers: one module per (order, DTS).

Contract
--------
:func:`generate_yee_source` returns the text of a Python module that defines
``yee_sweep``, a whole DiamondTorre sweep of the Yee scheme in one launch,
with the tickets, tier-level waits and results (bit for bit) of
:func:`~diamondlab.kernels.yee_cuda.yee_cuda_kernels`' ``diamondtorre`` and
its arrays (:data:`SWEEP_PARAMETERS`), for scenes without periodic faces:
``E``, ``H``, the material index and table, and with ``pml``, ``points``,
``drude`` the CPML's ``psi``, the source and probe points and the Drude
current compiled in (the backend runs plain scenes here by default: with
the physics this sweep measured slower than the cache-read one).

A tier of the Yee scheme is a half step, and it is a tier of the acoustic
scheme of the same order seen with other names: the field a tier reads
(``E`` for an ``H`` tier) is the acoustic level n, the field it updates is
level n-1, and the next tier swaps them.  So the tile's layout is the
acoustic :class:`~diamondlab.kernels.tile_plan.TilePlan` of ``DiamondTile(order,
DTS)``, a cell of it three components: the read field on the tile's prefix
and the updated field on the tile live in registers (``a{c}_u_v``,
``b{c}_u_v``), each tier loads only its entering cells and the y-halo rows
its differences read (the upper rows for ``H``'s forward differences, the
lower for ``E``'s backward ones, the ``x`` and ``z`` components only),
exchanges the ``x`` and ``y`` components of the tile through shared memory
for the ``z`` differences (double buffered, z-major rows of ``NSP`` floats,
one ``syncthreads`` a tier), and stores the cells leaving the torre.  The
loop runs a step (an ``H`` tier and an ``E`` tier) per iteration, so a
tier's field roles are constants of its code.

Every cell's arithmetic is the expression of ``h_cell`` and ``e_cell`` in
:mod:`diamondlab.kernels.yee_cuda` on the same values, without ``fastmath``,
so the two sweeps and the stepwise kernel agree bit for bit.  Interior
torres have no bounds checks; boundary torres read zero outside the domain
(what the zero halo holds) and store only inside.
"""

from __future__ import annotations

import numpy as np

from diamondlab.geometry import DiamondTile
from diamondlab.kernels.cuda_source import (
    PREFETCH_CHECK,
    PREFETCH_TIERS,
    _Emitter,
    _enc,
    guarded_access,
    print_torre_calls,
    print_waits,
)
from diamondlab.kernels.tile_plan import TilePlan

__all__ = ["CALM_POINT_PLANES", "calm_torres", "generate_yee_source", "interior_torres", "yee_shared_row"]

Cell = tuple[int, int]

#: A cell's three material indices in a tier of an interior torre: from its x component's flat index ``mq``
#: (``uint64``), the y and z components a uniform add on, where an index each computed from the tier's anchor
#: took more registers and instructions: order 2 ran 53.3 -> 58.8 G/s at 768x512x256 on an H200.  The
#: ``+ 0`` (an ``int64`` index) is as measured: the same loads through ``mat[mq]`` (``uint64``) spilled 156
#: bytes instead of 92 (176 loaded instead of 100) and ran 6 % slower (BENCHMARKS.md, "The Yee register-tile
#: sweep under Nsight Compute, and one index a cell").  Under the simulator the index is a plain integer
#: (NumPy 1's ``uint64 + 0`` is a float): :data:`SIMULATED_MEDIUM_PLANES`.
MEDIUM_PLANES = ("mq + 0", "mq + unu", "mq + unu2")
SIMULATED_MEDIUM_PLANES = ("mq + 0", "mq + nu", "mq + nu2")

#: The components a z difference reads (``x`` and ``y``) and a y difference reads (``x`` and ``z``).
Z_READ = (0, 1)
Y_READ = (0, 2)


def yee_shared_row(order: int, size: int) -> int:
    """Floats a z row of one exchange buffer holds: the tile's ``x`` and ``y`` components, odd.

    >>> yee_shared_row(2, 1), yee_shared_row(2, 2), yee_shared_row(4, 1)
    (5, 17, 17)
    """
    return (2 * 2 * (order // 2 * size) ** 2) | 1


def _interior_reach(order: int, size: int) -> tuple[int, int, int]:
    """``(lo, hi, y)``: a torre at ``(x0, yc)`` of ``nt2`` tiers touches x from ``x0 + lo`` to ``x0 + M (nt2 -
    1) + hi`` and y within ``yc -+ y`` (its tile, the x reach of its last tier, its y-halo rows)."""
    m, radius = order // 2, order // 2 * size
    return 1 - radius - m, radius + m, radius + m - 1


def interior_torres(order: int, size: int, nt2: int, torre_x0, torre_yc, nx: int, ny: int):
    """Which torres run the sweep's interior path (no bounds checks): those that touch only cells inside
    the domain over their ``nt2`` tiers (NumPy arrays in, a boolean array out).

    >>> import numpy as np
    >>> interior_torres(2, 1, 4, np.array([0, 1, 9]), np.array([3, 3, 3]), 14, 9).tolist()
    [False, True, False]
    """
    lo, hi, y = _interior_reach(order, size)
    return ((torre_x0 + lo >= 0) & (torre_x0 + order // 2 * (nt2 - 1) + hi < nx)
            & (torre_yc >= y) & (torre_yc + y < ny))


#: z planes of source and probe points a calm torre carries at most (its threads at those planes apply their
#: cells' points; a torre whose points lie on more planes runs the physics path): 8, as a TFSF box's
#: two z faces take 8 planes at order 4 (a face's corrections lie on 4)
CALM_POINT_PLANES = 8


def _box_counts(counts, x_lo, x_hi, y_lo, y_hi):
    """Sums of the 2D array ``counts`` over each box ``[x_lo, x_hi) x [y_lo, y_hi)`` (clipped to it)."""
    nx, ny = counts.shape
    s = np.zeros((nx + 1, ny + 1), np.int64)
    s[1:, 1:] = np.cumsum(np.cumsum(counts, axis=0, dtype=np.int64), axis=1)
    a, b = np.clip(x_lo, 0, nx), np.clip(x_hi, 0, nx)
    c, d = np.clip(y_lo, 0, ny), np.clip(y_hi, 0, ny)
    return s[b, d] - s[a, d] - s[b, c] + s[a, c]


def calm_torres(order: int, size: int, nt2: int, torre_x0, torre_yc, x_layer, y_layer, drude_columns,
                point_cells, planes: int = CALM_POINT_PLANES):
    """The torres of a physics scene that run the sweep's calm path, and the z planes of their points.

    A calm torre is an interior torre (:func:`interior_torres`) whose reach over its ``nt2`` tiers holds no
    cell of a CPML layer across x or y (``x_layer``, ``y_layer``: booleans per x and per y) and no column
    with a Drude medium (``drude_columns``, booleans ``(nx, ny)``), and whose source and probe points
    (``point_cells``, ``(nx, ny, nz)``, nonzero where one lies) lie on at most ``planes`` z planes.  Its
    code is the plain tile's with a z layer and the points left to the threads they concern: a thread
    damps its z differences only in a z layer and applies its cells' points only on those planes.

    Returns ``(calm, point_z)``: booleans a torre and the ``(ntorres, planes)`` int32 z of its point planes
    (-1 where none).

    >>> import numpy as np
    >>> nx, ny, nz = 30, 12, 6
    >>> x0, yc = np.array([4, 10, 10]), np.array([6, 6, 6])
    >>> xl, yl = np.zeros(nx, bool), np.zeros(ny, bool)
    >>> xl[:4] = True  # a CPML layer across x: the first torre reaches x = 3
    >>> points = np.zeros((nx, ny, nz), np.uint8)
    >>> points[12, 6, [1, 4]] = 1
    >>> calm, z = calm_torres(2, 1, 4, x0, yc, xl, yl, np.zeros((nx, ny), bool), points)
    >>> calm.tolist(), z[1, :3].tolist()
    ([False, True, True], [1, 4, -1])
    """
    nx, ny = drude_columns.shape
    lo, hi, y = _interior_reach(order, size)
    x_lo, x_hi = torre_x0 + lo, torre_x0 + order // 2 * (nt2 - 1) + hi + 1
    y_lo, y_hi = torre_yc - y, torre_yc + y + 1
    calm = interior_torres(order, size, nt2, torre_x0, torre_yc, nx, ny)
    layers = np.asarray(x_layer, bool)[:, None] | np.asarray(y_layer, bool)[None, :]
    calm &= _box_counts(layers, x_lo, x_hi, y_lo, y_hi) == 0
    calm &= _box_counts(np.asarray(drude_columns, bool), x_lo, x_hi, y_lo, y_hi) == 0
    point_z = np.full((len(calm), planes), -1, np.int32)
    count = np.zeros(len(calm), np.int64)
    for z in np.flatnonzero(point_cells.any(axis=(0, 1))):
        hit = calm & (_box_counts(point_cells[:, :, z] != 0, x_lo, x_hi, y_lo, y_hi) > 0)
        fits = hit & (count < planes)
        point_z[fits, count[fits]] = z
        count += hit
    calm &= count <= planes
    point_z[~calm] = -1
    return calm, point_z


def _reg(prefix: str, c: int, u: int, v: int) -> str:
    return f"{prefix}{c}_{_enc(u)}_{_enc(v)}"


class _YeeTorrePrinter:
    """Prints the device function running one torre (``interior``: no bounds checks; ``calm``: an interior
    torre of :func:`calm_torres`, the physics left to the threads it concerns)."""

    def __init__(self, plan: TilePlan, interior: bool, sim: bool, features: frozenset = frozenset(),
                 calm: bool = False, prefetch: int = 0, shape: tuple[int, int, int] | None = None):
        if calm and not interior:
            raise ValueError("a calm torre is an interior torre")
        self.plan, self.interior, self.sim, self.features, self.calm = plan, interior, sim, features, calm
        self.prefetch = prefetch if interior else 0  # tiers ahead (interior torres)
        self.shape = shape  # the grid (nx, ny, nz) compiled in as constants, or None: the kernel's arguments
        self.m = plan.shs
        self.e = _Emitter()
        self.slot = {c: 2 * j for j, c in enumerate(plan.cells)}  # a cell's x component in a z row

    # ---- expressions
    def guard(self, u: int, v: int) -> str:
        return f"(yin_{_enc(v)} & xin_{_enc(u)})"

    def offset(self, c: int, u: int, v: int) -> str:
        return f"base + {('0', 'n', 'n2')[c]} + ({u}) * sx + ({v}) * pz"

    def load(self, array: str, c: int, u: int, v: int) -> str:
        at = self.offset(c, u, v)
        if not self.interior:
            return f"load_if({array}, {at}, {self.guard(u, v)})"
        return f"{array}[{at}]" if self.sim else f"LDCG({array}, {at})"

    def store(self, array: str, c: int, u: int, v: int) -> str:
        at, value = self.offset(c, u, v), _reg("b", c, u, v)
        if not self.interior:
            return f"store_if({array}, {at}, {value}, {self.guard(u, v)})"
        return f"{array}[{at}] = {value}" if self.sim else f"{array}[uint64({at})] = {value}"

    @staticmethod
    def medium_offset(c: int, u: int, v: int) -> str:
        return f"q + {('0', 'nu', 'nu2')[c]} + ({u}) * nyz + ({v}) * nz"

    def medium_row(self, u: int, v: int) -> str:
        """The flat index (``uint64``; under the simulator a plain integer) of cell ``(u, v)``'s x component
        in the material indices; its y and z components lie ``nu`` and ``2 nu`` on."""
        at = f"q + ({u}) * nyz + ({v}) * nz"
        return f"({at})" if self.sim else f"uint64({at})"

    def medium(self, c: int, u: int, v: int) -> str:
        at = self.medium_offset(c, u, v)
        if not self.interior:
            return f"index_if(mat, {at}, {self.guard(u, v)})"
        return f"mat[{at}]" if self.sim else f"mat[uint64({at})]"

    def zrow(self, buf: str, j: int, dz: int) -> str:
        at = f"{buf} + ({j})" if dz == 0 else f"{buf} + ({j} + ({dz}) * NSP)"
        return f"sh[{at}]" if self.sim else f"sh[uint64({at})]"

    def value(self, c: int, u: int, v: int, dz: int, buf: str) -> str:
        """Component ``c`` of the read field at ``(u, v)`` and ``z + dz``."""
        if dz == 0:
            return _reg("a", c, u, v)
        return self.zrow(buf, self.slot[(u, v)] + Z_READ.index(c), dz)

    def offsets(self, forward: bool) -> range:
        """The offsets a difference reads: ``p - s .. p + 2 s`` forward (``H``), ``p - 2 s .. p + s``
        backward (``E``), at order 4; ``p .. p + s`` and ``p - s .. p`` at order 2."""
        m = self.m
        return range(1 - m, m + 1) if forward else range(-m, m)

    def y_halo(self, forward: bool) -> list[Cell]:
        """The cells beyond the tile's rows that this tier's y differences read (of the plan's
        :attr:`~diamondlab.kernels.tile_plan.TilePlan.y_halo`)."""
        radius = self.plan.radius
        need = {(u, v + d) for u, v in self.plan.cells for d in self.offsets(forward) if abs(v + d) >= radius}
        return [c for c in self.plan.y_halo if c in need]

    def difference(self, c: int, axis: int, u: int, v: int, forward: bool, buf: str) -> str:
        """The call of ``fwd``/``bwd`` on component ``c`` along ``axis`` at ``(u, v)``."""
        offsets = self.offsets(forward)

        def at(d: int) -> str:
            du, dv, dz = ((d, 0, 0), (0, d, 0), (0, 0, d))[axis]
            return self.value(c, u + du, v + dv, dz, buf)

        return f"{'fwd' if forward else 'bwd'}({', '.join(at(d) for d in offsets)})"

    # ---- the function
    def print(self, name: str) -> str:
        e, plan = self.e, self.plan
        e(0, "@cuda.jit(device=True)")
        e(0, f"def {name}({TORRE_PARAMETERS}):")
        if self.shape is None:
            e(1, "pz = nz + 2 * M")
            e(1, "sx = (ny + 2 * M) * pz")
            e(1, "n = E.size // 3")
            e(1, "n2 = n + n")
            e(1, "nyz = ny * nz")
            e(1, "nu = nx * nyz")
            e(1, "nu2 = nu + nu")
        else:  # the grid's sizes as constants: an offset's sum folds, fewer registers hold sizes
            nx, ny, nz = self.shape
            m = self.m
            pz, sx = nz + 2 * m, (ny + 2 * m) * (nz + 2 * m)
            n, nu = (nx + 2 * m) * sx, nx * ny * nz
            for size, value in (("nx", nx), ("ny", ny), ("nz", nz), ("pz", pz), ("sx", sx), ("n", n),
                                ("n2", 2 * n), ("nyz", ny * nz), ("nu", nu), ("nu2", 2 * nu)):
                e(1, f"{size} = {value}")
        e(1, "unu = uint64(nu)")
        e(1, "unu2 = uint64(nu2)")
        e(1, "bufsize = stride * NSP")
        if self.calm and "pml" in self.features:  # the thread's z layer, if any
            e(1, "zl = active and lz[zc] >= 0")
        if self.calm and "points" in self.features:  # the thread's z on one of the torre's point planes
            planes = " | ".join(f"(calm_z[t, {i}] == zc)" for i in range(CALM_POINT_PLANES))
            e(1, f"zp = active & ({planes})")
        if not self.interior:
            for v in sorted({v for v, _ in plan.rows} | set(plan.y_halo_rows)):
                e(1, f"yv = yc + ({v})")
                e(1, f"yin_{_enc(v)} = (yv >= 0) & (yv < ny)")
        self.anchor(1, "x0")
        for u, v in plan.held:  # the read field (E) on the prefix, the updated one (H) on the tile
            for c in range(3):
                e(1, f"{_reg('a', c, u, v)} = {self.load('E', c, u, v)}")
        for u, v in plan.cells:
            for c in range(3):
                e(1, f"{_reg('b', c, u, v)} = {self.load('H', c, u, v)}")
        e(1, "k = 0")
        e(1, "while k < nt2:")
        for half, (read, written) in enumerate((("E", "H"), ("H", "E"))):
            self.waits()
            self.tier(half, read, written)
            e(2, "k += 1")
        return e.text()

    def anchor(self, indent: int, x: str) -> None:
        e = self.e
        e(indent, f"ax = {x}")
        e(indent, "base = (int64(ax + M) * (ny + 2 * M) + (yc + M)) * (nz + 2 * M) + (zc + M)")
        e(indent, "q = (int64(ax) * ny + yc) * nz + zc")
        if not self.interior:
            for u in self.plan.x_span:
                e(indent, f"xu = ax + ({u})")
                e(indent, f"xin_{_enc(u)} = (xu >= 0) & (xu < nx)")

    def waits(self) -> None:
        """Before tiers ``0, chunk, ...``: publish the tiers done, wait until both dependencies are a chunk
        ahead (as ``diamondtorre`` of :mod:`diamondlab.kernels.yee_cuda` does)."""
        print_waits(self.e, self.sim, "nt2")

    def tier(self, half: int, read: str, written: str) -> None:
        """Tier ``k`` (``half`` 0: ``H`` from ``E``; 1: ``E`` from ``H``): loads, z exchange, updates,
        stores, and the shift of the tile by ``M``."""
        plan, e, m = self.plan, self.e, self.m
        forward = half == 0
        self.anchor(2, f"x0 + {m} * k")
        for c, u, v in self.front_loads(forward):
            e(2, f"{_reg('a', c, u, v)} = {self.load(read, c, u, v)}")
        # the tile's material indices before the exchange's barrier (they need no exchange): the coefficient
        # loads that wait on them leave the tier's critical path (+5-10 % a sweep, BENCHMARKS.md)
        for u, v in plan.cells:
            if self.interior:  # one index a cell (+10 % at order 2, fewer spills)
                e(2, f"mq = {self.medium_row(u, v)}")
                for c, at in enumerate(SIMULATED_MEDIUM_PLANES if self.sim else MEDIUM_PLANES):
                    e(2, f"{_reg('mi', c, u, v)} = mat[{at}]")
                continue
            for c in range(3):
                e(2, f"{_reg('mi', c, u, v)} = {self.medium(c, u, v)}")
        if self.prefetch:
            self.prefetches(half, read, written)
        buf = "sbuf"
        e(2, f"sbuf = {half} * bufsize + (tz + M) * NSP")
        for u, v in plan.cells:
            for c in Z_READ:
                e(2, f"{self.zrow(buf, self.slot[(u, v)] + Z_READ.index(c), 0)} = "
                     f"pick(active, {_reg('a', c, u, v)}, ZERO)")
        e(2, "cuda.syncthreads()")
        for u, v in plan.cells:
            self.update(u, v, forward, buf)
        e(2, "if active:")
        for u, v in plan.leaving:
            for c in range(3):
                e(3, self.store(written, c, u, v))
        if plan.kept:
            e(3, "if k >= nt2 - 2:")
            for u, v in plan.kept:
                for c in range(3):
                    e(4, self.store(written, c, u, v))
        for u, v in plan.cells:  # the next tier updates the read field on the shifted tile ...
            for c in range(3):
                e(2, f"{_reg('t', c, u, v)} = {_reg('a', c, u + m, v)}")
        for u, v in plan.held:  # ... and reads this tier's new values on its prefix
            for c in range(3):
                e(2, f"{_reg('a', c, u, v)} = {_reg('b', c, u + m, v)}")
        for u, v in plan.cells:
            for c in range(3):
                e(2, f"{_reg('b', c, u, v)} = {_reg('t', c, u, v)}")

    def front_loads(self, forward: bool) -> list[tuple[int, int, int]]:
        """``(component, u, v)`` of what a tier loads that no tier before it did, in the order it loads them:
        the three components of its entering cells, then the y-halo rows' (``forward``: the H half step's)."""
        return ([(c, u, v) for u, v in self.plan.entering for c in range(3)]
                + [(c, u, v) for u, v in self.y_halo(forward) for c in Y_READ])

    def prefetches(self, half: int, read: str, written: str) -> None:
        """L2 prefetches of what tier ``k + D`` (``D``: :attr:`prefetch`) loads that no tier before it did:
        its entering cells and y-halo rows (of ``written`` where ``D`` is odd) and the material indices of its
        tile's front cells, at this tier's anchor moved ``D M`` along x.  Issued with this tier's own loads,
        they reach L2 while this tier waits for its loads, exchanges and updates."""
        plan, e, m, ahead = self.plan, self.e, self.m, self.prefetch
        field = written if ahead % 2 else read
        forward = (half + ahead) % 2 == 0
        e(2, f"if k + {ahead} < nt2:")
        for c, u, v in self.front_loads(forward):
            e(3, f"PREFETCH({field}, {self.offset(c, u + ahead * m, v)})")
        for u, v in plan.kappa_entering:  # the tile's front: the cells no earlier tier's tile held
            for c in range(3):
                e(3, f"PREFETCH(mat, {self.medium_offset(c, u + ahead * m, v)})")

    def update(self, u: int, v: int, forward: bool, buf: str) -> None:
        """One cell's three components, as ``h_cell``/``e_cell`` compute them: the six differences (``dca``:
        component ``c`` along axis ``a``), the CPML's ``psi`` where the cell is in a layer, the curl
        ``(d c2 / d a1 - d c1 / d a2)`` over the cyclic (component, axis) pairs, the Drude current in
        Drude media, then the cell's source and probe points on the new values."""
        e, features = self.e, self.features

        def d(c: int, axis: int) -> str:
            return self.difference(c, axis, u, v, forward, buf)

        ok = "active" if self.interior else f"(active & {self.guard(u, v)})"
        if features:
            e(2, f"x = ax + ({u})")
            e(2, f"y = yc + ({v})")
            e(2, f"ok = {ok}")
        for c, axis in ((2, 1), (1, 2), (0, 2), (2, 0), (1, 0), (0, 1)):
            e(2, f"d{c}{axis} = {d(c, axis)}")
        pb, pa = ("pbh", "pah") if forward else ("pbe", "pae")
        if "pml" in features and self.calm:
            e(2, f"d12, d02 = z_layer(x, y, zc, zl, lz, {pb}, {pa}, psiz, {2 if forward else 0}, d12, d02)")
        elif "pml" in features:
            damped = "d20, d10, d21, d01, d12, d02"
            e(2, f"{damped} = layers(x, y, zc, ok, lx, ly, lz, {pb}, {pa}, psix, psiy, psiz, "
                 f"{2 if forward else 0}, {damped})")
        curls = (("d21", "d12"), ("d02", "d20"), ("d10", "d01"))
        for c, (plus, minus) in enumerate(curls):
            b, mid = _reg("b", c, u, v), _reg("mi", c, u, v)
            if forward:
                new = f"{b} - table[{mid} * 8 + 4] * ({plus} - {minus})"
            elif "drude" in features and not self.calm:  # a calm torre holds no Drude medium
                new = f"e_new({b}, {plus} - {minus}, {mid}, table, J, {self.offset(c, u, v)}, ok)"
            else:
                new = f"cuda.fma(table[{mid} * 8], {b}, table[{mid} * 8 + 1] * ({plus} - {minus}))"
            e(2, f"{b} = {new}" if self.interior else f"{b} = pick({self.guard(u, v)}, {new}, {b})")
        if "points" in features:
            cell = ", ".join(_reg("b", c, u, v) for c in range(3))
            ok = "zp" if self.calm else "ok"
            e(2, f"{cell} = cell_points({cell}, {ok}, {0 if forward else 1}, k // 2, x, y, zc, ny, nz, "
                 "colstart, colcount, pt_z, pt_comp, pt_kind, pt_slot, pt_cell, src, rec)")


#: The parameters of a torre's device function (the sweep kernel's, less the schedule's tables, plus what
#: the kernel derives: the shared buffers, the torre's anchor and dependencies, the thread's z).
TORRE_PARAMETERS = ", ".join((
    "E, H, J, mat, table, sh, x0, yc, nt2, nx, ny, nz, tz, zc, active, stride, done, t, d0, d1, flag0, chunk",
    "lx, ly, lz, pbh, pah, pbe, pae, psix, psiy, psiz",
    "colstart, colcount, pt_z, pt_comp, pt_kind, pt_slot, pt_cell, src, rec, calm_z"))

#: The sweep kernel's parameters: those of the cache-read sweep (``diamondtorre`` of
#: :func:`~diamondlab.kernels.yee_cuda.yee_cuda_kernels`) without its Drude and periodic flags, with the
#: grid's extent and, for a physics scene, :func:`calm_torres`' tables (``calm``, ``calm_z``; a plain
#: scene's kernel reads neither).
SWEEP_PARAMETERS = ", ".join((
    "E, H, J, mat, table, torre_x0, torre_yc, order, deps, done, counter, ticket_base, flag0, nt2, chunk",
    "nx, ny, nz, lx, ly, lz, pbh, pah, pbe, pae, psix, psiy, psiz",
    "colstart, colcount, pt_z, pt_comp, pt_kind, pt_slot, pt_cell, src, rec, calm, calm_z"))

#: Device functions of the physics, as kernels.yee_cuda's ``layer``, ``e_comp`` and ``cell_points`` compute
#: them (the same expressions: the two sweeps and stepwise agree bit for bit).
_PHYSICS = '''
from diamondlab.kernels.yee_cuda import point_range, yee_cuda_kernels

points_of = point_range()  # the bisections for a cell's points, the cache-read kernels' own
damp = yee_cuda_kernels(2 * M).damp  # the CPML's damped differences, the cache-read kernels' own

@cuda.jit(device=True)
def layer(psi, k, i, j, m, b, a, d):
    """A derivative ``d`` in the CPML: ``psi <- b psi + a d`` (this cell's own), then ``d + psi``."""
    psi[k, i, j, m] = cuda.fma(a, d, b * psi[k, i, j, m])
    return d + psi[k, i, j, m]


@cuda.jit(device=True)
def layers(x, y, z, ok, lx, ly, lz, pb, pa, psix, psiy, psiz, k, d20, d10, d21, d01, d12, d02):
    """The six differences of cell (x, y, z) damped where it lies in a layer of each axis (``k``: the psi
    slots of the half step, 2 for H, 0 for E), where ``ok``."""
    if ok:
        return damp(x, y, z, lx, ly, lz, pb, pa, psix, psiy, psiz, k, d20, d10, d21, d01, d12, d02)
    return d20, d10, d21, d01, d12, d02


@cuda.jit(device=True)
def z_layer(x, y, z, ok, lz, pb, pa, psiz, k, d12, d02):
    """``layers`` on the z axis alone: a calm torre's cell, its thread in a z layer (``ok``)."""
    if ok:
        iz = lz[z]
        d12 = layer(psiz, k, x, y, iz, pb[2, z], pa[2, z], d12)
        d02 = layer(psiz, k + 1, x, y, iz, pb[2, z], pa[2, z], d02)
    return d12, d02


@cuda.jit(device=True)
def e_new(old, curl, m, table, J, p, ok):
    """``E <- ca E + cb (curl H - J)``, the Drude current first where the medium has one."""
    if ok and table[m * 8 + 3] != 0:
        cur = cuda.fma(table[m * 8 + 2], J[p], table[m * 8 + 3] * old)
        J[p] = cur
        curl = curl - cur
    return cuda.fma(table[m * 8], old, table[m * 8 + 1] * curl)


@cuda.jit(device=True)
def cell_points(b0, b1, b2, ok, half, step, x, y, z, ny, nz, colstart, colcount, pt_z, pt_comp, pt_kind,
                pt_slot, pt_cell, src, rec):
    """After the half step ``half`` of cell (x, y, z): its source points add to the new values, in order,
    and its probes record them."""
    if ok and pt_cell[(x * ny + y) * nz + z]:
        lo, end = points_of(colstart, colcount, pt_z, x + M, y + M, z + M)
        for k in range(lo, end):
            c = pt_comp[k]
            if (c >= 3) != (half == 0):
                continue
            c = c - 3 if c >= 3 else c
            if pt_kind[k] == 0:
                val = src[pt_slot[k], step]
                if c == 0:
                    b0 += val
                elif c == 1:
                    b1 += val
                else:
                    b2 += val
            elif c == 0:
                rec[step, pt_slot[k]] = b0
            elif c == 1:
                rec[step, pt_slot[k]] = b1
            else:
                rec[step, pt_slot[k]] = b2
    return b0, b1, b2
'''


_HEADER = '''\
"""Generated by diamondlab.kernels.yee_cuda_source: the Yee sweep of order {order}, DTS={size}{simnote}.

Do not edit."""
import numpy as np
from numba import cuda, float32, int64, uint64
{ldcg_import}
M = {m}
NSP = {nsp}  # a z row of an exchange buffer: x and y components of the tile's cells (odd)
ZERO = np.float32(0.0)
W1 = np.float32({w1!r})
W2 = np.float32({w2!r})


@cuda.jit(device=True)
def fwd({fwd_args}):
    """A forward difference (H's), as kernels.yee_cuda's ``fwd``."""
    v = W1 * ({fwd_main})
{fwd_more}    return v


@cuda.jit(device=True)
def bwd({bwd_args}):
    """A backward difference (E's), as kernels.yee_cuda's ``bwd``."""
    v = W1 * ({bwd_main})
{bwd_more}    return v


{guarded_access}

@cuda.jit(device=True)
def index_if(A, i, ok):
    """A cell's medium inside the domain, else medium 0 (its update is not kept)."""
    if ok:
        return A[i]
    return A[0]
'''

_LDCG_IMPORT = """
from diamondlab.kernels.cuda import ldcg_intrinsic, prefetch_l2_intrinsic

LDCG = ldcg_intrinsic()  # ld.global.cg: values other blocks wrote in this launch, never a stale L1 line
PREFETCH = prefetch_l2_intrinsic()  # prefetch.global.L2: a later tier's lines on their way to L2
"""


def _sweep_kernel(plan: TilePlan, jit_opts: str, calm: bool) -> str:
    e, m = _Emitter(), plan.shs
    e(0, f"@cuda.jit({jit_opts})")
    e(0, f"def yee_sweep({SWEEP_PARAMETERS}):")
    e(1, '"""A whole sweep in one launch: a block per torre, tickets in ``order``, tier-level waits."""')
    e(1, "sh = cuda.shared.array(0, dtype=float32)")
    e(1, "slot = cuda.shared.array(1, dtype=int64)")
    e(1, "tz = cuda.threadIdx.x")
    e(1, "nzb = cuda.blockDim.x")
    e(1, "stride = nzb + 2 * M")
    e(1, "if tz == 0:")
    e(2, "slot[0] = cuda.atomic.add(counter, 0, 1) - ticket_base")
    e(1, "if tz < M:  # the z halo rows of both buffers read zero")
    e(2, "for b in range(2):")
    e(3, "for c in range(NSP):")
    e(4, "sh[(b * stride + tz) * NSP + c] = ZERO")
    e(4, "sh[(b * stride + nzb + M + tz) * NSP + c] = ZERO")
    e(1, "cuda.syncthreads()")
    e(1, "t = order[slot[0]]")
    e(1, "x0 = torre_x0[t]")
    e(1, "yc = torre_yc[t]")
    e(1, "d0 = deps[t, 0]")
    e(1, "d1 = deps[t, 1]")
    e(1, "active = tz < nz")
    e(1, "zc = min(tz, nz - 1)")
    lo, hi, y = _interior_reach(plan.tile.order, plan.tile.size)
    e(1, f"interior = (x0 + ({lo}) >= 0 and x0 + {m} * (nt2 - 1) + {hi} < nx")
    e(1, f"            and yc >= {y} and yc + {y} < ny)  # as interior_torres says")
    call = f"({TORRE_PARAMETERS})"
    if calm:
        e(1, "if calm[t]:")
        e(2, f"torre_calm{call}")
        e(1, "elif interior:")
    else:
        e(1, "if interior:")
    print_torre_calls(e, call, "flag0 + nt2")
    return e.text()


def generate_yee_source(order: int, size: int, simulator: bool = False,
                        max_registers: int | None = None, pml: bool = False, points: bool = False,
                        drude: bool = False, prefetch: int = 0,
                        shape: tuple[int, int, int] | None = None) -> str:
    """Python source of the register-tile Yee sweep of ``order`` (2 or 4) and tile size ``size`` (DTS).

    ``simulator``: plain indexing instead of the CUDA-only ``ld.global.cg`` and ``nanosleep``.
    ``pml``, ``points``, ``drude``: the CPML's ``psi``, the source and probe points, the Drude current are
    handled (a run without one gets a kernel without its loads and branches, as the cache-read sweep).
    ``prefetch``: interior torres prefetch into L2, with each tier's loads, what the tier ``prefetch``
    tiers later loads first (0: none; under the simulator a prefetch checks that its element lies in its
    array).  ``shape``: the grid ``(nx, ny, nz)`` compiled in, its sizes constants in the torres' code
    (a kernel for that grid only: the caller passes fields of exactly its padded size); None: the sizes are
    the kernel's arguments.  Values and results are the same.

    Examples
    --------
    >>> src = generate_yee_source(2, 1, simulator=True)
    >>> "def yee_sweep" in src and "def torre_interior" in src and "def torre_boundary" in src
    True
    """
    if order not in (2, 4):
        raise ValueError(f"order must be 2 or 4 for the Yee scheme; got {order!r}")
    plan = TilePlan(DiamondTile(order, size))
    m = order // 2
    fwd_offsets, bwd_offsets = range(1 - m, m + 1), range(-m, m)
    names = {d: f"a{_enc(d)}" for d in range(-m, m + 1)}
    fwd_args = ", ".join(names[d] for d in fwd_offsets)
    bwd_args = ", ".join(names[d] for d in bwd_offsets)
    more = m == 2
    header = _HEADER.format(
        order=order, size=size, m=m, nsp=yee_shared_row(order, size),
        simnote=" (simulator)" if simulator else "",
        w1=1.0 if order == 2 else 9.0 / 8.0, w2=0.0 if order == 2 else -1.0 / 24.0,
        fwd_args=fwd_args, bwd_args=bwd_args,
        fwd_main=f"{names[1]} - {names[0]}", bwd_main=f"{names[0]} - {names[-1]}",
        fwd_more=f"    v += W2 * ({names[2]} - {names[-1]})\n" if more else "",
        bwd_more=f"    v += W2 * ({names[1]} - {names[-2]})\n" if more else "",
        ldcg_import=PREFETCH_CHECK if simulator else _LDCG_IMPORT,
        guarded_access=guarded_access(simulator),
    )
    opts = "fastmath=False" if simulator else "fastmath=False, cache=True"
    sweep_opts = opts + (f", max_registers={int(max_registers)}" if max_registers and not simulator else "")
    features = frozenset(f for f, on in (("pml", pml), ("points", points), ("drude", drude)) if on)
    parts = [header, _PHYSICS if features else ""]
    if prefetch not in PREFETCH_TIERS:
        raise ValueError(f"prefetch must be one of {PREFETCH_TIERS} tiers ahead; got {prefetch!r}")
    if shape is not None and (len(shape) != 3 or any(int(n) != n or n < 1 for n in shape)):
        raise ValueError(f"shape must be three whole sizes >= 1 (nx, ny, nz); got {shape!r}")
    shape = None if shape is None else tuple(int(n) for n in shape)
    parts += [_YeeTorrePrinter(plan, interior, simulator, features, prefetch=prefetch, shape=shape)
              .print(name) + "\n" for name, interior in (("torre_interior", True), ("torre_boundary", False))]
    if features:  # the physics scene's calm torres (calm_torres)
        calm = _YeeTorrePrinter(plan, True, simulator, features, calm=True, prefetch=prefetch, shape=shape)
        parts.append(calm.print("torre_calm") + "\n")
    parts += ["", _sweep_kernel(plan, sweep_opts, bool(features)), ""]
    return "\n".join(parts)
