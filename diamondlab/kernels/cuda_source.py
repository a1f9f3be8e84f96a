"""Source generator for the Numba-CUDA kernels of one (NO, DTS).

Contract
--------
:func:`generate_source` returns the text of a Python module that defines,
for stencil order ``NO`` and tile size ``DTS`` (``R = ShS * DTS``):

``cell_update(f0, g, c0.., x1m, x1p, y1m, y1p, z1m, z1p, ...)``
    the per-cell float32 update of :mod:`diamondlab.numerics`, a plain
    ``device=True`` function that both kernels call, so that DiamondTorre
    equals stepwise bit for bit (``fastmath`` off).
``stepwise_step(A, B, nx, ny, nz, xchunk, coeffs)``
    one time step ``B <- 2A - B + lap(A)``: z across the threads of a block
    (coalesced), y across the block's second dimension, each thread streaming
    over ``xchunk`` x planes with the x neighbours in a register queue.
``diamondtorre_sweep(F, G, nx, ny, nz, nt, torre_x0, torre_yc, deps, done, ...)``
    (then ``counter, ticket_base, epoch, coeffs``): one whole sweep of height
    ``nt`` in ONE launch of one block per torre.
    Blocks take tickets from ``counter`` in schedule order (stage by stage);
    a block waits (thread 0 spinning on ``done``) only until the two torres
    of the previous stage whose rows touch its own (``deps``) are finished,
    then runs its torre and publishes ``done[t] = epoch``.  A block only ever
    waits on smaller tickets, which resident blocks hold, so the launch cannot
    deadlock; there is no barrier between or inside stages.

Inside a torre the threads of the block run along z (``blockDim.x >= nz``,
one z per thread).  The tile's two time levels live in scalar registers
(named per tile cell; every index is a compile-time constant, the tile code
is fully unrolled).  Per tier and per tile row the block loads the ``2 ShS``
cells that enter the window (the tile's new right strip and the right halo),
the y-halo rows beyond the tile, writes the tile's level-n values to shared
memory (double buffered, one ``syncthreads`` per tier; z-major rows of
``NCP`` cells, so every shared offset is a compile-time constant) for the z
derivative, and stores only the cells that leave the torre (those not in the
tier two steps up), everything on the last two tiers.  Interior torres take
a path without bounds checks; boundary torres check every cell against the
domain (outside values are zero) through small device functions (``pick``,
``load_if``, ``store_if``) rather than branches, which keeps Numba's compile
time down.  With ``segments = S > 0`` (tiles whose two levels do not fit in
registers, :func:`shared_layout`) level n-1 lives in shared memory, one slot
per cell and thread, and the z exchange runs in ``S`` column segments.
Loads use ``ld.global.cg`` (L2 only, through
:func:`diamondlab.kernels.cuda.ldcg_intrinsic`, without Numba's negative-index
check) so that values written by other blocks of the same launch are never
read from a stale L1 line.

With ``simulator=True`` the same code is emitted with plain indexing in place
of the CUDA-only intrinsics (``ldcg``, ``nanosleep``, unsigned casts), which
the CUDA simulator lacks.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from diamondlab.geometry import DiamondTile
from diamondlab.kernels.tile_plan import TilePlan, tile_rows
from diamondlab.numerics import validate_order

__all__ = ["TorreVariant", "generate_source", "guarded_access", "shared_layout", "tile_rows"]


def shared_layout(order: int, size: int, segments: int = 0) -> tuple[int, int]:
    """Shared-memory row lengths of the sweep: ``(NSP, NCG)``.

    A block of ``nzb`` threads holds two z-exchange buffers of ``nzb + NO``
    rows of ``NSP`` floats and, with ``segments > 0``, ``NCG`` floats of level
    n-1 per thread: ``(2 NSP (nzb + NO) + NCG nzb) * 4`` bytes.

    >>> shared_layout(2, 4), shared_layout(6, 2, segments=4)
    ((33, 0), (19, 73))
    """
    ncells = 2 * (order // 2 * size) ** 2
    if segments == 0:
        return ncells | 1, 0
    if segments < 0 or segments % 2 or segments > ncells:
        raise ValueError(f"segments must be 0 or an even number in 2..{ncells}; got {segments}")
    return -(-ncells // segments) | 1, ncells | 1


def _enc(n: int) -> str:
    return f"m{-n}" if n < 0 else f"p{n}"


def _f(u: int, v: int) -> str:
    return f"f_{_enc(u)}_{_enc(v)}"


def _g(u: int, v: int) -> str:
    return f"g_{_enc(u)}_{_enc(v)}"


def _h(u: int, v: int) -> str:
    return f"h_{_enc(u)}_{_enc(v)}"


def _n(u: int, v: int) -> str:
    return f"n_{_enc(u)}_{_enc(v)}"


class _Emitter:
    def __init__(self):
        self.lines: list[str] = []

    def __call__(self, indent: int, text: str) -> None:
        self.lines.append("    " * indent + text)

    def text(self) -> str:
        return "\n".join(self.lines)


#: Where a boundary torre's damping factors live (:class:`TorreVariant`).
BOUNDARY_PROFILES = ("held", "x_at_use", "at_use")
#: What a tier's z exchange waits for (:class:`TorreVariant`): the whole block, or the neighbouring warps.
EXCHANGE_BARRIERS = ("block", "neighbours")
#: Tiers ahead a sweep's L2 prefetch may reach (:class:`TorreVariant`; 0: none).
PREFETCH_TIERS = (0, 1, 2)
#: The most warps a block may have with ``exchange_barrier="neighbours"`` (pairs of warps on the named
#: barriers 1..15; barrier 0 is the block's).
NEIGHBOUR_BARRIER_WARPS = 16

@dataclass(frozen=True)
class TorreVariant:
    """How a torre function is printed: which checks, medium, events and waits it has.

    ``interior`` drops every bounds check.  ``calm`` (an interior torre with a
    medium whose x and y damping factors are all 1 over the torre, as the sweep
    checks): a cell's ``1 - s`` and ``1 / (1 + s)`` are its thread's z factors,
    exactly the minima the other torres take, without their per-cell minima and
    per-column loads.  With ``yz = (ny, nz)`` the strides are compile-time
    constants: every cell's offset from the tier's base index is a literal (no
    address registers).  With ``medium`` (``"sponge"``: one ``K`` for all cells,
    ``kap``; ``"layered"``: ``K`` per depth from ``KZ``, one register a thread;
    ``"model"``: ``K`` per cell from ``Kappa``, loaded per cell and tier, or with
    ``kappa_in_registers`` kept in registers and shifted with the tile like
    level n, so that a tier loads only the entering cells' ``K``) cell updates are
    damped with ``1 - s = min(AX[x], AY[y], AZ[z])`` and ``1 / (1 + s) =
    min(RX[x], RY[y], RZ[z])`` (no division in the kernel): the z and y profiles
    are read once per torre, the x ones once per tier and column; with ``points``
    the tier's source and receiver events (``events[ev:ev_hi]``, sorted by tier)
    act on the new level in registers before anything is stored.  With
    ``pipelined`` the torre works in chunks of ``chunk`` tiers: before tier
    ``k = 0, chunk, 2 chunk, ...`` it publishes its progress (``done[t] = flag0 +
    tiers done``) and waits until its dependencies ``d0``, ``d1`` have finished
    tier ``min(k + chunk, nt) - 1``, at least the tier ``k`` that
    :meth:`~diamondlab.geometry.StageSchedule.pipeline_violations` asks for.
    The tile's own layout (held, entering, leaving cells; ``segments``;
    ``left_from_memory``) is the :class:`~diamondlab.kernels.tile_plan.TilePlan`'s.
    ``boundary_profiles`` (a boundary torre with a medium): ``"held"`` keeps its
    rows' y factors for the torre and its columns' x factors for the tier in
    registers; ``"x_at_use"`` loads the x factors in each cell's update instead,
    ``"at_use"`` both (one value for the whole block, so one load a warp: fewer
    live registers against more load instructions; the same values either way).
    ``exchange_barrier``: after a group's cells are in shared memory, ``"block"``
    waits for every thread of the block (``syncthreads``); ``"neighbours"`` only
    for the warps whose rows the z derivative reads (the warp above and the one
    below, ``ShS < 32``): warp ``w`` syncs on the named barrier of the pair
    ``(w, w + 1)`` and of ``(w - 1, w)``, even warps the upper pair first, odd
    warps the lower, so that a slow warp holds up its neighbours, not the
    block.  Safe with the double buffer: a warp writes a buffer again only
    after its neighbours passed the next barrier, so after they read it.
    ``prefetch`` (interior torres): with its first group's loads, a tier
    prefetches into L2 what the tier ``prefetch`` tiers later loads (level n of
    its entering cells and, with a per-cell ``K``, the entering cells' ``K``);
    0: none.  Under the simulator a prefetch checks that its element lies in its
    array.
    """

    interior: bool
    sim: bool = False
    yz: tuple[int, int] | None = None
    medium: str | None = None
    points: bool = False
    pipelined: bool = False
    kappa_in_registers: bool = False
    calm: bool = False
    boundary_profiles: str = "held"
    exchange_barrier: str = "block"
    prefetch: int = 0

    def check(self, plan: TilePlan) -> None:
        """``ValueError`` for a combination no sweep builds."""
        if self.kappa_in_registers and (self.medium != "model" or plan.segments):
            raise ValueError("kappa_in_registers needs medium='model' and level n-1 in registers "
                             "(segments=0)")
        if self.calm and not (self.medium and self.interior):
            raise ValueError("a calm torre is an interior torre with a medium")
        if self.exchange_barrier not in EXCHANGE_BARRIERS:
            raise ValueError(f"exchange_barrier must be one of {EXCHANGE_BARRIERS}; "
                             f"got {self.exchange_barrier!r}")
        if self.prefetch not in PREFETCH_TIERS:
            raise ValueError(f"prefetch must be one of {PREFETCH_TIERS} tiers ahead; got {self.prefetch!r}")
        if self.boundary_profiles not in BOUNDARY_PROFILES:
            raise ValueError(f"boundary_profiles must be one of {BOUNDARY_PROFILES}; "
                             f"got {self.boundary_profiles!r}")

    @property
    def x_at_use(self) -> bool:
        """Whether a cell's x damping factors are loaded where the cell's update uses them (boundary torres
        with ``boundary_profiles`` ``"x_at_use"`` or ``"at_use"``), not held a tier."""
        return bool(self.medium) and not self.interior and self.boundary_profiles != "held"

    @property
    def y_at_use(self) -> bool:
        """Whether a cell's y damping factors are loaded at use (``"at_use"``), not held a torre."""
        return bool(self.medium) and not self.interior and self.boundary_profiles == "at_use"


class _TorrePrinter:
    """Prints the device function that runs one torre: a :class:`TilePlan` in a :class:`TorreVariant`.

    Names: ``f_u_v`` level n in registers (``h_u_v`` beyond the tile's rows),
    ``g_u_v`` level n-1 and then n+1 in registers (with ``segments``: level n-1
    in shared memory, ``sh[gb + i]``, and n+1 in ``n_u_v``), ``k_u_v`` a
    cell's ``K``.  Every method prints one part of the function, in order.
    """

    def __init__(self, plan: TilePlan, variant: TorreVariant):
        variant.check(plan)
        self.plan, self.var, self.e = plan, variant, _Emitter()
        self.shs, self.radius = plan.shs, plan.radius
        self.in_shared = plan.segments > 0
        self.row = shared_layout(plan.tile.order, plan.tile.size, plan.segments)[0]  # NSP: a z row's cells
        self.coeff_args = ", ".join(f"c{i}" for i in range(self.shs + 1))
        self.dims = "ny, nz" if variant.yz is None else f"{variant.yz[0]}, {variant.yz[1]}"

    # ---- names and expressions
    def level_n(self, u: int, v: int) -> str:
        return _f(u, v) if abs(v) < self.radius else _h(u, v)

    def new(self, u: int, v: int) -> str:
        return _n(u, v) if self.in_shared else _g(u, v)

    def previous(self, u: int, v: int) -> str:
        i = self.plan.cell_index[(u, v)]
        return f"sh[gb + {i}]" if self.var.sim else f"sh[uint64(gb + {i})]"

    def addr(self, u: int, v: int) -> str:
        yz = self.var.yz
        if yz is not None:
            return f"base + ({u * yz[0] * yz[1] + v * yz[1]})"
        return f"base + ({u}) * sx + ({v}) * nz"

    def load(self, array: str, u: int, v: int) -> str:
        """Level n or n-1 at ``(u, v)``: unchecked (interior) or zero outside the domain."""
        if not self.var.interior:
            return f"load_if({array}, {self.addr(u, v)}, {self.guard(u, v)})"
        return f"{array}[{self.addr(u, v)}]" if self.var.sim else f"LDCG({array}, {self.addr(u, v)})"

    def store(self, u: int, v: int) -> str:
        value = self.new(u, v)
        if not self.var.interior:
            return f"store_if(B, {self.addr(u, v)}, {value}, {self.guard(u, v)})"
        if self.var.sim:
            return f"B[{self.addr(u, v)}] = {value}"
        return f"B[uint64({self.addr(u, v)})] = {value}"

    # guards are bitwise and guarded loads, stores and selections are calls: the boundary torre
    # has no branch per cell (Numba's compile time grows with the branches of a function)
    @staticmethod
    def guard(u: int, v: int) -> str:
        return f"(yin_{_enc(v)} & xin_{_enc(u)})"

    @staticmethod
    def inside(var: str, n: str) -> str:
        return f"({var} >= 0) & ({var} < {n})"

    def load_ro(self, array: str, u: int, v: int) -> str:
        # read-only during the launch: a plain (L1-cached) load is safe
        idx = self.addr(u, v)
        return f"{array}[{idx}]" if self.var.sim else f"{array}[uint64({idx})]"

    def factor(self, p: str, u: int, v: int) -> str:
        """Cell ``(u, v)``'s damping factor ``p`` (``"a"``: ``1 - s``, ``"r"``: ``1 / (1 + s)``), the minimum
        of its x, y and z profiles' (a profile outside the domain counts as 1: never the minimum)."""
        var, big = self.var, p.upper()
        x = f"load_ro_if({big}X, ax + ({u}), xin_{_enc(u)}, ONE)" if var.x_at_use else f"{p}x_{_enc(u)}"
        yz = f"{p}yz_{_enc(v)}"
        if var.y_at_use:
            yz = f"lower(load_ro_if({big}Y, yc + ({v}), yin_{_enc(v)}, ONE), {p}z)"
        return f"lower({x}, {yz})"

    def kappa_at(self, u: int, v: int) -> str:
        if self.var.interior:
            return self.load_ro("Kappa", u, v)
        # the update runs for outside cells too
        return f"load_ro_if(Kappa, {self.addr(u, v)}, {self.guard(u, v)}, ZERO)"

    def zshared(self, buf: str, offset: int) -> str:
        # z-major layout: cell j of z row r at r * NSP + j, so every offset is a constant
        return f"sh[{buf} + ({offset})]" if self.var.sim else f"sh[uint64({buf} + ({offset}))]"

    def base(self, anchor: str) -> str:
        return "base = (int64({}) * {} + yc) * {} + zc".format(anchor, *self.dims.split(", "))

    # ---- the function, part by part
    def print(self, name: str) -> str:
        self.signature(name)
        self.row_guards()
        self.damping_rows()
        self.initial_state()
        self.e(1, "k = 0")
        self.e(1, "while k < nt:")
        self.waits()
        self.tier_head()
        for i, group in enumerate(self.plan.groups):
            self.group(i, group)
        self.events()
        self.stores()
        self.shift()
        self.e(2, "k += 1")
        return self.e.text()

    def signature(self, name: str) -> None:
        var, e = self.var, self.e
        e(0, "@cuda.jit(device=True)")
        e(0, f"def {name}({_torre_parameters(self.plan.tile.order, var.medium, var.points, var.pipelined)}):")
        e(1, "sx = ny * nz")
        e(1, "bufsize = stride * NSP")
        if var.exchange_barrier == "neighbours":  # the named barriers of the pairs (w, w +- 1); 0: none
            e(1, "wi = tz // 32")
            e(1, "nwarps = (stride - 2 * SHS + 31) // 32")
            e(1, "wa = wi + 1 - 2 * (wi % 2)")  # even warps: the upper pair first
            e(1, "wb = 2 * wi - wa")
            e(1, "bar_a = min(wi, wa) + 1 if wa >= 0 and wa < nwarps else 0")
            e(1, "bar_b = min(wi, wb) + 1 if wb >= 0 and wb < nwarps else 0")
        if self.in_shared:
            e(1, "sb0 = (tz + SHS) * NSP")
            e(1, "sb1 = sb0 + bufsize")
            e(1, "gb = 2 * bufsize + tz * NCG")

    def row_guards(self) -> None:
        if self.var.interior:
            return
        for v in [v for v, _ in self.plan.rows] + list(self.plan.y_halo_rows):
            self.e(1, f"yv = yc + ({v})")
            self.e(1, f"yin_{_enc(v)} = {self.inside('yv', 'ny')}")

    def damping_rows(self) -> None:
        """The torre's damping rows: ``min(AY[y], AZ[z])``, ``min(RY[y], RZ[z])`` (rows outside: unused)."""
        var, e = self.var, self.e
        if not var.medium:
            return
        e(1, "az = AZ[zc]")
        e(1, "rz = RZ[zc]")
        if var.medium == "layered":
            e(1, "kz = KZ[zc]")
        for v, _ in self.plan.rows if not (var.calm or var.y_at_use) else ():
            for p in ("a", "r"):
                row = f"lower({p.upper()}Y[yc + ({v})], {p}z)"
                if var.interior:
                    e(1, f"{p}yz_{_enc(v)} = {row}")
                else:
                    e(1, f"{p}yz_{_enc(v)} = {row} if yin_{_enc(v)} else {p}z")

    def x_guards(self, indent: int) -> None:
        for u in self.plan.x_span:
            self.e(indent, f"xu = ax + ({u})")
            self.e(indent, f"xin_{_enc(u)} = {self.inside('xu', 'nx')}")

    def initial_state(self) -> None:
        """Level n on the prefix (``T_{-1}``), level n-1 on ``T_0``, row by row; the tile's ``K``."""
        plan, e = self.plan, self.e
        e(1, self.base("x0"))
        if not self.var.interior:
            e(1, "ax = x0")
            self.x_guards(1)
        for v, _ in plan.rows:
            for u, _ in (c for c in plan.held if c[1] == v):
                e(1, f"{_f(u, v)} = {self.load('F', u, v)}")
            for u, _ in (c for c in plan.cells if c[1] == v):
                e(1, f"{self.previous(u, v) if self.in_shared else _g(u, v)} = {self.load('G', u, v)}")
        if self.var.kappa_in_registers:  # K of the tile at tier 0 but its entering columns (the tier's)
            for u, v in plan.kappa_held:
                e(1, f"k_{_enc(u)}_{_enc(v)} = {self.kappa_at(u, v)}")

    def waits(self) -> None:
        """At a chunk start tier k-1 is stored by every thread: publish it, then wait until the
        dependencies finished the chunk's last tier."""
        if self.var.pipelined:
            print_waits(self.e, self.var.sim, "nt")

    def tier_head(self) -> None:
        e = self.e
        e(2, "if k % 2 == 0:")
        e(3, "A = F")
        e(3, "B = G")
        e(2, "else:")
        e(3, "A = G")
        e(3, "B = F")
        e(2, f"ax = x0 + {self.shs} * k")
        e(2, self.base("ax"))
        if not self.in_shared:
            e(2, "sbuf = (k % 2) * bufsize + (tz + SHS) * NSP")
        if not self.var.interior:
            self.x_guards(2)

    def group(self, i: int, group: tuple) -> None:
        """Group ``i``: its loads, (first group) the entering ``K`` and the x damping, level n of its
        cells to shared memory for the z derivative, then their updates."""
        plan, var, e = self.plan, self.var, self.e
        for u, v in plan.loads:
            if plan.load_group[(u, v)] == i:
                e(2, f"{self.level_n(u, v)} = {self.load('A', u, v)}")
        if var.kappa_in_registers and i == 0:
            for u, v in plan.kappa_entering:
                e(2, f"k_{_enc(u)}_{_enc(v)} = {self.kappa_at(u, v)}")
        if var.medium and not (var.calm or var.x_at_use) and i == 0:
            for u in range(1 - self.radius, self.radius + 1):
                for p in ("a", "r"):
                    if var.interior:
                        e(2, f"{p}x_{_enc(u)} = {p.upper()}X[ax + ({u})]")
                    else:
                        e(2, f"{p}x_{_enc(u)} = load_ro_if({p.upper()}X, ax + ({u}), xin_{_enc(u)}, ONE)")
        if i == 0 and var.prefetch and var.interior:
            self.prefetches()
        buf = f"sb{i % 2}" if self.in_shared else "sbuf"
        index = {c: j for j, c in enumerate(group)}
        for (u, v), j in index.items():
            e(2, f"{self.zshared(buf, j)} = pick(active, {_f(u, v)}, ZERO)")
        e(2, "neighbour_sync(bar_a, bar_b)" if var.exchange_barrier == "neighbours" else "cuda.syncthreads()")
        for (u, v), j in index.items():
            self.update(u, v, j, buf)

    def prefetches(self) -> None:
        """L2 prefetches, ``D`` (``prefetch``) tiers ahead, of that tier's level-n loads (from ``B`` where
        ``D`` is odd: the array this tier writes, which that tier reads) and, with a per-cell ``K``, its
        entering cells' ``K``: this tier's addresses moved ``D ShS`` along x."""
        plan, e, ahead = self.plan, self.e, self.var.prefetch
        field, shift = ("B" if ahead % 2 else "A"), ahead * self.shs
        e(2, f"if k + {ahead} < nt:")
        for u, v in plan.loads:
            e(3, f"PREFETCH({field}, {self.addr(u + shift, v)})")
        if self.var.medium == "model":
            for u, v in plan.kappa_entering:
                e(3, f"PREFETCH(Kappa, {self.addr(u + shift, v)})")

    def update(self, u: int, v: int, j: int, buf: str) -> None:
        var, e = self.var, self.e
        args = [_f(u, v), self.previous(u, v) if self.in_shared else _g(u, v)]
        if var.medium:
            if var.medium == "sponge":
                kap = "kap"
            elif var.medium == "layered":
                kap = "kz"
            elif var.kappa_in_registers:
                kap = f"k_{_enc(u)}_{_enc(v)}"
            else:
                kap = self.kappa_at(u, v)
            args += [kap, *(["az", "rz"] if var.calm else [self.factor(p, u, v) for p in "ar"])]
        args.append(self.coeff_args)
        for d in range(1, self.shs + 1):
            args += [_f(u - d, v), _f(u + d, v), self.level_n(u, v - d), self.level_n(u, v + d)]
            args += [self.zshared(buf, j - d * self.row), self.zshared(buf, j + d * self.row)]
        call = f"{'cell_update_medium' if var.medium else 'cell_update'}({', '.join(args)})"
        if var.interior:
            e(2, f"{self.new(u, v)} = {call}")
        else:  # outside cells keep level n-1 (zero)
            outside = "ZERO" if self.in_shared else _g(u, v)
            e(2, f"{self.new(u, v)} = pick({self.guard(u, v)}, {call}, {outside})")
        if self.in_shared:  # level n of (u, v) at the next tier: this tier's f at u + ShS
            e(2, f"{self.previous(u, v)} = {_f(u + self.shs, v)}")

    def events(self) -> None:
        """Sources add to, receivers read, the new level of their cell (in registers), in event order."""
        e = self.e
        if not self.var.points:
            return
        e(2, "while ev < ev_hi and events[ev, 0] == k:")
        e(3, "if active and zc == events[ev, 1]:")
        e(4, "c = events[ev, 2]")
        e(4, "slot = events[ev, 4]")
        e(4, "if events[ev, 3] == 0:")
        e(5, "val = src_samples[slot, k]")
        for (u, v), c in self.plan.cell_index.items():
            e(5, f"{'if' if c == 0 else 'elif'} c == {c}:")
            e(6, f"{self.new(u, v)} = {self.new(u, v)} + val")
        e(4, "else:")
        e(5, "val = ZERO")
        for (u, v), c in self.plan.cell_index.items():
            e(5, f"{'if' if c == 0 else 'elif'} c == {c}:")
            e(6, f"val = {self.new(u, v)}")
        e(5, "rec_vals[k, slot] = val")
        e(3, "ev += 1")

    def stores(self) -> None:
        """Leaving cells every tier, the rest on the last two tiers."""
        e = self.e
        e(2, "if active:")
        for u, v in self.plan.leaving:
            e(3, self.store(u, v))
        if self.plan.kept:
            e(3, "if k >= nt - 2:")
            for u, v in self.plan.kept:
                e(4, self.store(u, v))

    def shift(self) -> None:
        """Shift the window by ShS: level n+1 on ``T_k`` becomes the prefix, level n on ``T_{k+1}``
        the g's."""
        plan, e, shs = self.plan, self.e, self.shs
        if self.in_shared:
            for u, v in plan.held:
                e(2, f"{_f(u, v)} = {_n(u + shs, v)}")
        else:
            for u, v in plan.cells:
                e(2, f"t_{_enc(u)}_{_enc(v)} = {_f(u + shs, v)}")
            for u, v in plan.held:
                e(2, f"{_f(u, v)} = {_g(u + shs, v)}")
            for u, v in plan.cells:
                e(2, f"{_g(u, v)} = t_{_enc(u)}_{_enc(v)}")
        if self.var.kappa_in_registers:
            for u, v in plan.kappa_held:
                e(2, f"k_{_enc(u)}_{_enc(v)} = k_{_enc(u + shs)}_{_enc(v)}")


#: The guarded accesses of a boundary torre, as calls (``{ldcg_call}``, ``{store_index}`` filled by
#: :func:`guarded_access`): shared by this generator and :mod:`diamondlab.kernels.yee_cuda_source`.
_GUARDED_ACCESS = '''@cuda.jit(device=True)
def pick(c, a, b):
    """``a if c else b`` as a call: no branch in the caller's Numba IR (LLVM makes it a select)."""
    return a if c else b


@cuda.jit(device=True)
def load_if(A, i, ok):
    """Level-n value at flat index ``i`` where ``ok`` (inside the domain), else zero."""
    if ok:
        return {ldcg_call}
    return ZERO


@cuda.jit(device=True)
def load_ro_if(A, i, ok, other):
    """A read-only array's value at ``i`` where ``ok``, else ``other``."""
    if ok:
        return A[i]
    return other


@cuda.jit(device=True)
def store_if(B, i, value, ok):
    """Store ``value`` at flat index ``i`` where ``ok`` (inside the domain)."""
    if ok:
        B[{store_index}] = value
'''


def _neighbour_sync(simulator: bool) -> str:
    """Source of ``neighbour_sync(bar_a, bar_b)``: a warp's two pair barriers (0: none; a lone warp syncs
    its lanes).  The simulator has no named barriers: there it is the block's barrier, which orders more."""
    head, body = "", "    cuda.syncthreads()"
    if not simulator:
        head = ("from diamondlab.kernels.cuda import bar_sync_intrinsic\n\n"
                "BAR_SYNC = bar_sync_intrinsic()\n\n\n")
        body = ("    if bar_a > 0:\n        BAR_SYNC(bar_a, 64)\n"
                "    if bar_b > 0:\n        BAR_SYNC(bar_b, 64)\n"
                "    if bar_a == 0 and bar_b == 0:\n        cuda.syncwarp()")
    return (head + "@cuda.jit(device=True)\ndef neighbour_sync(bar_a, bar_b):\n"
            '    """Wait for the neighbouring warps (TorreVariant exchange_barrier="neighbours")."""\n'
            f"{body}\n\n")


def guarded_access(simulator: bool) -> str:
    """Source of ``pick``, ``load_if`` (``ld.global.cg`` on a GPU), ``load_ro_if`` and ``store_if`` for a
    generated module (which defines ``ZERO`` and, on a GPU, ``LDCG`` and ``uint64``).

    >>> "def store_if" in guarded_access(True) and "LDCG" in guarded_access(False)
    True
    """
    return _GUARDED_ACCESS.format(ldcg_call="A[i]" if simulator else "LDCG(A, i)",
                                  store_index="i" if simulator else "uint64(i)")


_HEADER = '''\
"""Generated by diamondlab.kernels.cuda_source for NO={order}, DTS={size}{simnote}. Do not edit."""
import numpy as np
from numba import cuda, float32, int64, uint64
{ldcg_import}
SHS = {shs}
RADIUS = {radius}
NCELLS = {ncells}
NCP = {ncp}  # NCELLS rounded up to odd (no bank conflicts)
NSP = {nsp}  # row length of a z-exchange buffer (odd)
NCG = {ncg}  # level n-1 slots per thread in shared memory (0: level n-1 in registers)
ZERO = np.float32(0.0)
ONE = np.float32(1.0)


@cuda.jit(device=True)
def cell_update(f0, g, {coeff_args}, {nb_args}):
    """Level n+1 of one cell from level n (f0 and its neighbours) and level n-1 (g)."""
    lap = c0 * f0
{lap_lines}
    return ((f0 + f0) - g) + lap


@cuda.jit(device=True)
def cell_update_medium(f0, g, kap, a, r, {coeff_args}, {nb_args}):
    """As cell_update with the bare weights, K = kap per cell and a sponge s = eta dt / 2.

    ``u+ = ((2u - a u-) + K lap) r`` with ``a = 1 - s`` and ``r = 1 / (1 + s)``
    given (a division per cell costs the unrolled tile its speed), the
    formula of the CPU engine's ``column_sponge``/``column_model``.
    """
    lap = c0 * f0
{lap_lines}
    return (((f0 + f0) - a * g) + kap * lap) * r


{guarded_access}

{neighbour_sync}
@cuda.jit(device=True)
def lower(a, b):
    """The smaller of two profile values (exact: any grouping of min gives the same float)."""
    return a if a < b else b
'''

#: The medium's values by name, in the kernels' order (after the coefficients): ``K`` (printed as
#: :data:`K_NAMES`), the damping profiles and the prefix counts of damped x and y cells (``DX[i]``:
#: cells below ``i`` whose factors are not 1).
MEDIUM_VALUES = ("K", "AX", "AY", "AZ", "RX", "RY", "RZ", "DX", "DY")
#: What ``K`` is called in the kernels of each medium variant.
K_NAMES = {"sponge": "kap", "layered": "KZ", "model": "Kappa"}
#: The stepwise kernel's and the sweep's leading parameters; the points kernel's.
STEPWISE_HEAD = ("A", "B", "nx", "ny", "nz", "xchunk", "coeffs")
SWEEP_HEAD = ("F", "G", "nx", "ny", "nz", "nt", "torre_x0", "torre_yc", "deps", "done", "counter",
              "ticket_base", "epoch", "coeffs")
POINTS_PARAMETERS = ("B", "k", "pt_index", "pt_kind", "pt_slot", "src_samples", "rec_vals")


def kernel_parameters(kernel: str, medium: str | None = None, points: bool = False,
                      pipelined: bool = False) -> tuple[str, ...]:
    """The parameters of a generated kernel by name, in order (``"K"`` for the medium's ``K``).

    The generated module records them (``STEPWISE_PARAMETERS``, ``SWEEP_PARAMETERS``,
    ``POINTS_PARAMETERS``), so that a caller passes values by name and never orders them.

    >>> kernel_parameters("sweep", "sponge", pipelined=True)[-10:]
    ('K', 'AX', 'AY', 'AZ', 'RX', 'RY', 'RZ', 'DX', 'DY', 'chunk')
    """
    if kernel == "points":
        return POINTS_PARAMETERS
    medium_values = MEDIUM_VALUES if medium else ()
    if kernel == "stepwise":
        return STEPWISE_HEAD + medium_values
    if kernel != "sweep":
        raise ValueError(f"kernel must be 'stepwise', 'sweep' or 'points'; got {kernel!r}")
    return (SWEEP_HEAD + medium_values + (("ev_ptr", "events", "src_samples", "rec_vals") if points else ())
            + (("chunk",) if pipelined else ()))


def _torre_parameters(order: int, medium: str | None, points: bool, pipelined: bool) -> str:
    """The parameters of a torre device function, as its ``def`` line and the sweep's call print them."""
    names = ["F", "G", "sh", "x0", "yc", "nt", "nx", "ny", "nz", "tz", "zc", "active", "stride"]
    names += [f"c{i}" for i in range(order // 2 + 1)]
    names += [_printed(MEDIUM_VALUES, medium)] if medium else []
    names += ["events", "ev", "ev_hi", "src_samples", "rec_vals"] if points else []
    names += ["done", "t", "d0", "d1", "flag0", "chunk"] if pipelined else []
    return ", ".join(names)


def _printed(names: tuple[str, ...], medium: str | None) -> str:
    """Parameter names as the kernel's ``def`` line prints them (``K`` under its variant's name)."""
    return ", ".join(K_NAMES[medium] if n == "K" else n for n in names)


_LDCG_IMPORT = """
from diamondlab.kernels.cuda import ldcg_intrinsic, prefetch_l2_intrinsic

LDCG = ldcg_intrinsic()  # ld.global.cg without the negative-index check
PREFETCH = prefetch_l2_intrinsic()  # prefetch.global.L2: a later tier's lines on their way to L2
"""

#: The simulator's ``PREFETCH`` (a GPU's prefetch is only a hint): the element must lie in its array.
PREFETCH_CHECK = """

@cuda.jit(device=True)
def PREFETCH(A, i):
    \"\"\"The simulator's prefetch: the element must lie in the array (a GPU's prefetch is only a hint).\"\"\"
    if i < 0 or i >= A.size:
        raise IndexError("a prefetch outside its array")
"""


def _stepwise_kernel(order: int, jit_opts: str, sim: bool, medium: str | None = None) -> str:
    shs = order // 2
    coeff_args = ", ".join(f"c{i}" for i in range(shs + 1))
    e = _Emitter()

    def at(array: str, idx: str) -> str:
        return f"{array}[{idx}]" if sim else f"{array}[uint64({idx})]"

    e(0, f"@cuda.jit({jit_opts})")
    e(0, f"def stepwise_step({_printed(kernel_parameters('stepwise', medium), medium)}):")
    e(1, '"""One step B <- level n+1; z across threads, streaming over x with a register queue."""')
    e(1, "z = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x")
    e(1, "y = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y")
    e(1, "if z >= nz or y >= ny:")
    e(2, "return")
    for i in range(shs + 1):
        e(1, f"c{i} = coeffs[{i}]")
    e(1, "xs = cuda.blockIdx.z * xchunk")
    e(1, "xe = min(xs + xchunk, nx)")
    e(1, "sx = int64(ny) * nz")
    e(1, "col = int64(y) * nz + z")
    for d in range(1, shs + 1):
        e(1, f"ym{d}ok = y >= {d}")
        e(1, f"yp{d}ok = y + {d} < ny")
        e(1, f"zm{d}ok = z >= {d}")
        e(1, f"zp{d}ok = z + {d} < nz")
    for d in range(-shs, shs + 1):
        e(1, f"xq = xs + ({d})")
        e(1, f"q{_enc(d)} = {at('A', 'xq * sx + col')} if xq >= 0 and xq < nx else ZERO")
    if medium:
        e(1, "ayz = lower(AY[y], AZ[z])")
        e(1, "ryz = lower(RY[y], RZ[z])")
    if medium == "layered":
        e(1, "kz = KZ[z]")
    e(1, "for x in range(xs, xe):")
    e(2, "i = x * sx + col")
    args = [f"q{_enc(0)}", "gv"]
    if medium:
        kap = {"sponge": "kap", "layered": "kz"}.get(medium) or at("Kappa", "i")
        args += [kap, "lower(AX[x], ayz)", "lower(RX[x], ryz)"]
    args.append(coeff_args)
    for d in range(1, shs + 1):
        e(2, f"ym{d} = {at('A', f'i - {d} * nz')} if ym{d}ok else ZERO")
        e(2, f"yp{d} = {at('A', f'i + {d} * nz')} if yp{d}ok else ZERO")
        e(2, f"zm{d} = {at('A', f'i - {d}')} if zm{d}ok else ZERO")
        e(2, f"zp{d} = {at('A', f'i + {d}')} if zp{d}ok else ZERO")
        args += [f"q{_enc(-d)}", f"q{_enc(d)}", f"ym{d}", f"yp{d}", f"zm{d}", f"zp{d}"]
    e(2, f"gv = {at('B', 'i')}")
    e(2, f"{at('B', 'i')} = {'cell_update_medium' if medium else 'cell_update'}({', '.join(args)})")
    for d in range(-shs, shs):
        e(2, f"q{_enc(d)} = q{_enc(d + 1)}")
    e(2, f"xq = x + {shs + 1}")
    e(2, f"q{_enc(shs)} = {at('A', 'xq * sx + col')} if xq < nx else ZERO")
    return e.text()


_APPLY_POINTS = '''
@cuda.jit({jit_opts})
def apply_points(B, k, pt_index, pt_kind, pt_slot, src_samples, rec_vals):
    """After stepwise step k: every point in order (one thread: points in one cell add in order)."""
    if cuda.grid(1) == 0:
        for j in range(pt_index.shape[0]):
            p = pt_index[j]
            if pt_kind[j] == 0:
                B[p] = B[p] + src_samples[pt_slot[j], k]
            else:
                rec_vals[k, pt_slot[j]] = B[p]
'''


#: Pipelined sweeps publish ``done[t] = epoch * PIPELINE_FLAG_STRIDE + tiers done`` (``nt`` below it).
PIPELINE_FLAG_STRIDE = 1 << 20


def _sweep_kernel(order: int, size: int, jit_opts: str, sim: bool, medium: str | None = None,
                  points: bool = False, pipelined: bool = False, calm: bool = False) -> str:
    shs = order // 2
    radius = shs * size
    e = _Emitter()
    e(0, f"@cuda.jit({jit_opts})")
    parameters = kernel_parameters("sweep", medium, points, pipelined)
    wrap = SWEEP_HEAD.index("ticket_base")  # the def line breaks there
    e(0, f"def diamondtorre_sweep({_printed(parameters[:wrap], medium)},")
    e(0, f"                       {_printed(parameters[wrap:], medium)}):")
    e(1, '"""One DiamondTorre sweep of height nt: one block per torre, one launch per sweep."""')
    e(1, "sh = cuda.shared.array(0, dtype=float32)")
    e(1, "slot = cuda.shared.array(1, dtype=int64)")
    e(1, "tz = cuda.threadIdx.x")
    e(1, "nzb = cuda.blockDim.x")
    e(1, "stride = nzb + 2 * SHS")
    e(1, "if tz == 0:")
    e(2, "t = cuda.atomic.add(counter, 0, 1) - ticket_base")
    e(2, "slot[0] = t")
    if not pipelined:  # wait until both dependencies are done; pipelined torres wait per tier
        for j in range(2):
            e(2, f"d = deps[t, {j}]")
            e(2, "if d >= 0:")
            e(3, "while cuda.atomic.max(done, d, 0) < epoch:")
            e(4, "pass" if sim else "cuda.nanosleep(64)")
        e(2, "cuda.threadfence()")
    e(1, "if tz < SHS:")
    e(2, "for b in range(2):")
    e(3, "for c in range(NSP):")
    e(4, "sh[(b * stride + tz) * NSP + c] = ZERO")
    e(4, "sh[(b * stride + nzb + SHS + tz) * NSP + c] = ZERO")
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
    if points:
        e(1, "ev = ev_ptr[t]")
        e(1, "ev_hi = ev_ptr[t + 1]")
    if pipelined:
        e(1, f"flag0 = epoch * {PIPELINE_FLAG_STRIDE}  # done[t] = flag0 + tiers done in this sweep")
        e(1, "d0 = deps[t, 0]")
        e(1, "d1 = deps[t, 1]")
    call = f"({_torre_parameters(order, medium, points, pipelined)})"
    if calm:  # no x or y damping over the torre: its cells take their thread's z factors
        e(1, f"calm = interior and DX[x0 + {shs} * (nt - 1) + {radius + 1}] == DX[x0 + {1 - radius}]")
        e(1, f"calm = calm and DY[yc + {radius}] == DY[yc + {1 - radius}]")
        e(1, "if calm:")
        e(2, f"torre_calm{call}")
        e(1, "elif interior:")
    else:
        e(1, "if interior:")
    print_torre_calls(e, call, "flag0 + nt" if pipelined else "epoch")
    return e.text()


def print_waits(e: _Emitter, sim: bool, ntiers: str) -> None:
    """A pipelined torre's waits, printed into a tier loop over ``k``: before tiers ``0, chunk, ...`` thread 0
    publishes the tiers done (``done[t] = flag0 + k``) and waits until both dependencies ``d0``, ``d1``
    are a chunk ahead (``min(k + chunk, ntiers)``); every thread waits for it (also the Yee sweep's)."""
    e(2, "if k % chunk == 0:")
    e(3, "cuda.syncthreads()")
    e(3, "if tz == 0:")
    e(4, "if k > 0:")
    e(5, "cuda.threadfence()")
    e(5, "cuda.atomic.max(done, t, flag0 + k)")
    e(4, f"need = flag0 + min(k + chunk, {ntiers})")
    for d in ("d0", "d1"):
        e(4, f"if {d} >= 0:")
        e(5, f"while cuda.atomic.max(done, {d}, 0) < need:")
        e(6, "pass" if sim else "cuda.nanosleep(32)")
    e(4, "cuda.threadfence()")
    e(3, "cuda.syncthreads()")


def print_torre_calls(e: _Emitter, call: str, published: str) -> None:
    """The end of a sweep kernel after its ``if interior:`` line: the interior or the boundary torre, then
    thread 0 publishes ``done[t] = published`` once every thread has stored."""
    e(2, f"torre_interior{call}")
    e(1, "else:")
    e(2, f"torre_boundary{call}")
    e(1, "cuda.syncthreads()")
    e(1, "if tz == 0:")
    e(2, "cuda.threadfence()")
    e(2, f"cuda.atomic.max(done, t, {published})")


def generate_source(
    order: int,
    size: int,
    max_registers: int | None = None,
    simulator: bool = False,
    yz: tuple[int, int] | None = None,
    left_from_memory: bool = False,
    medium: str | None = None,
    points: bool = False,
    pipelined: bool = False,
    segments: int = 0,
    kappa_in_registers: bool = False,
    boundary_profiles: str = "held",
    exchange_barrier: str = "block",
    prefetch: int = 0,
) -> str:
    """Python source of the kernel module for ``(NO, DTS)``.

    Parameters
    ----------
    order, size : int
        Stencil order NO and tile size DTS.
    max_registers : int, optional
        Register cap of the sweep kernel (ignored with ``simulator=True``).
    simulator : bool
        Emit code the CUDA simulator can run (no ``ldcg``/``nanosleep``).
    yz : (ny, nz), optional
        Specialise the sweep for these y and z sizes (constant offsets, fewer
        registers); the kernel must then only be launched on such grids.
    left_from_memory : bool
        Re-read the tile's left neighbours from L2 each tier (fewer registers).
    medium : None, "sponge", "layered" or "model"
        Both kernels take the bare weights as ``coeffs``, then ``K`` (the float32
        ``kap`` for ``"sponge"``, the depth profile ``KZ`` for ``"layered"``, the
        per-cell array ``Kappa`` for ``"model"``)
        and the damping profiles ``AX, AY, AZ`` of ``1 - s`` and ``RX, RY, RZ`` of
        ``1 / (1 + s)`` (each the minimum of its three profiles), then ``DX, DY``
        (int64, :func:`diamondlab.media.damped_counts`): with ``segments=0`` the sweep runs torres
        with no x or y damping as calm torres (the z factors only).
    points : bool
        The sweep takes source and receiver events (``ev_ptr, events,
        src_samples, rec_vals``, see :func:`diamondlab.kernels.cuda.sweep_events`);
        the stepwise kernel is unchanged and ``apply_points`` follows each step.
    pipelined : bool
        Tier-level waits: the sweep takes one more argument, ``chunk``; a
        torre publishes its progress every ``chunk`` tiers and runs tiers
        ``k .. k + chunk - 1`` once its two dependencies finished tier
        ``k + chunk - 1``, instead of waiting for them whole (``done`` then
        holds ``epoch * 2**20 + tiers``).
    segments : int
        0: level n-1 of the tile in registers, one z exchange per tier.  An
        even ``S > 0``: level n-1 in shared memory and ``S`` z exchanges per
        tier (for tiles whose two levels do not fit in registers; see
        :func:`shared_layout`).
    kappa_in_registers : bool
        With ``medium="model"`` and ``segments=0``: the sweep keeps the tile's
        ``K`` in registers, shifted with the tile, and loads only the entering
        cells' ``K`` each tier (``2 R^2`` more registers a thread) instead of
        every cell's.
    boundary_profiles : {"held", "x_at_use", "at_use"}
        With a ``medium``: where the boundary torre's damping factors live
        (:class:`TorreVariant`).
    exchange_barrier : {"block", "neighbours"}
        What the sweep's z exchange waits for (:class:`TorreVariant`); with
        ``"neighbours"`` the kernel must be launched on blocks of at most
        :data:`NEIGHBOUR_BARRIER_WARPS` warps.
    prefetch : {0, 1, 2}
        Tiers ahead whose loads an interior torre's tier prefetches into L2
        (:class:`TorreVariant`); 0: none.

    Examples
    --------
    >>> src = generate_source(2, 1, simulator=True)
    >>> "def diamondtorre_sweep" in src and "def stepwise_step" in src
    True
    """
    shs = validate_order(order) // 2
    radius = shs * size
    nsp, ncg = shared_layout(order, size, segments)
    plan = TilePlan(DiamondTile(order, size), segments, left_from_memory)
    variant = TorreVariant(interior=True, sim=simulator, yz=yz, medium=medium, points=points,
                           pipelined=pipelined, kappa_in_registers=kappa_in_registers,
                           boundary_profiles=boundary_profiles, exchange_barrier=exchange_barrier,
                           prefetch=prefetch)
    nb_args = ", ".join(f"x{d}m, x{d}p, y{d}m, y{d}p, z{d}m, z{d}p" for d in range(1, shs + 1))
    coeff_args = ", ".join(f"c{i}" for i in range(shs + 1))
    lap = "\n".join(
        f"    lap = lap + c{d} * (((x{d}m + x{d}p) + (y{d}m + y{d}p)) + (z{d}m + z{d}p))"
        for d in range(1, shs + 1)
    )
    parts = [
        _HEADER.format(
            order=order,
            size=size,
            shs=shs,
            radius=radius,
            ncells=2 * radius**2, ncp=(2 * radius**2) | 1,
            nsp=nsp, ncg=ncg,
            coeff_args=coeff_args,
            nb_args=nb_args,
            lap_lines=lap,
            simnote=" (simulator)" if simulator else "",
            ldcg_import=PREFETCH_CHECK if simulator else _LDCG_IMPORT,
            guarded_access=guarded_access(simulator),
            neighbour_sync=_neighbour_sync(simulator) if exchange_barrier == "neighbours" else "",
        ),
        *(_TorrePrinter(plan, replace(variant, interior=interior)).print(name) + "\n"
          for name, interior in (("torre_interior", True), ("torre_boundary", False))),
    ]
    calm = bool(medium) and not segments  # (level n-1 in shared memory: slower with a calm torre, measured)
    if calm:
        parts.append(_TorrePrinter(plan, replace(variant, calm=True)).print("torre_calm") + "\n")
    opts = "fastmath=False" if simulator else "fastmath=False, cache=True"
    sweep_opts = opts
    if max_registers and not simulator:
        sweep_opts += f", max_registers={int(max_registers)}"
    parts += [
        "",
        _stepwise_kernel(order, opts, simulator, medium),
        "",
        _APPLY_POINTS.format(jit_opts=opts),
        "",
        _sweep_kernel(order, size, sweep_opts, simulator, medium, points, pipelined, calm),
        "",
        "# the kernels' parameters by name (diamondlab.kernels.cuda passes values by these names)",
        f"STEPWISE_PARAMETERS = {kernel_parameters('stepwise', medium)!r}",
        f"SWEEP_PARAMETERS = {kernel_parameters('sweep', medium, points, pipelined)!r}",
        f"POINTS_PARAMETERS = {kernel_parameters('points')!r}",
        "",
    ]
    return "\n".join(parts)
