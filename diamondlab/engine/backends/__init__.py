"""Backends: where the fields live and which kernels advance them; the registry.

Contract
--------
A backend is a subclass of :class:`Backend`.  Its class states what it can
run (:attr:`Backend.OPTIONS`, :attr:`Backend.RUNS_PHYSICS`, the tiling
tables behind :meth:`~Backend.default_tiling` and the tuner's candidates)
and :meth:`Backend.check` validates a problem against that *without
allocating* (it returns the speed options with the backend's defaults
filled in).  :class:`~diamondlab.engine.run.plan.RunPlan` calls it once;
:meth:`Backend.from_plan` then builds the backend from the checked values
without checking them again.  ``Backend(params, shape, size, nt, **options)``
does both for direct use.

An instance owns the two field arrays (levels ``n - 1`` and ``n``) and
offers::

    compile()                # build or load the kernels (called before the first timing)
    set_fields(prev, curr)   # host float32 arrays of shape (nx, ny, nz)
    field_views()            # writable host views of the two levels, or (None, None)
    fields() -> (prev, curr) # host copies, in (x, y, z) order
    current_view()           # u^n for reading between steps: a view where possible
    planes(index, strides)   # (xy, xz, yz) of u^n through index, sampled from index % strides
    set_physics(medium, sources, receivers)   # a media.Medium and integer (x, y, z) cells
    step(nsteps[, src_samples])   # queue stepwise time stepping
    sweep(height[, src_samples])  # queue one DiamondTorre sweep, 1 <= height <= nt
    take_traces()            # receiver values recorded since the last call (waits for the work)
    state_layout(), state_views(), state(), set_state(arrays)   # every state array (window, MPI)
    get_rows(lo, hi)         # rows [lo, hi) of the state along the split axis: flat host float32
    set_rows(lo, hi, rows)   # the inverse (the ghost rows of an MPI slab)
    agree(flags)             # clock-based decisions made common to the processes of a run (MPI)
    synchronize()            # wait until queued work is done (timing)
    options                  # the speed options in force (a dict; may be empty)

where ``src_samples`` is ``(npoints, steps)`` float32 (what each source point
adds at each step) and the receiver values are ``(steps, nreceivers)``, one row per step in the
order the steps were queued.  Steps and sweeps may return before the work
is done (the GPU): nothing waits for it but ``take_traces``, ``fields``,
``planes`` and ``synchronize``.
Both engines run DiamondTorre bit for bit equal to their stepwise kernel
with all of it switched on.  The simulation object
(:mod:`diamondlab.engine.run.simulation`) keeps the clock.

Backends are registered by name with the module that defines them, so that
looking one up imports only that backend (``"cuda"`` imports numba.cuda).
What runs a grid on another backend (an MPI slab, a calculation window, the
swapped axes of a tall column) derives from :class:`Wrapper`.

The room: :mod:`~diamondlab.engine.backends.cpu` and
:mod:`~diamondlab.engine.backends.cuda` (the acoustic equation),
:mod:`~diamondlab.engine.backends.yee_cpu` and
:mod:`~diamondlab.engine.backends.yee_cuda` (Maxwell's, on the Yee grid) and
:mod:`~diamondlab.engine.backends.axes` (x and z swapped: a tall column).
"""

from __future__ import annotations

import abc
import importlib
from typing import ClassVar

import numpy as np

from diamondlab.engine.scale.subdomain import ACOUSTIC, EquationParts, rows_index, rows_size

__all__ = [
    "BACKENDS", "Backend", "Wrapper", "available_backends", "get_backend", "planes_of", "register_backend",
    "resolve_backend", "size_for_threads",
]


class Backend(abc.ABC):
    """The base of every backend: its capabilities as class facts and the methods of the contract."""

    #: Registry name.
    name: ClassVar[str]
    #: Names of the speed options the constructor takes (they never change results).
    OPTIONS: ClassVar[tuple[str, ...]] = ()
    #: Whether it runs velocity models, sponges, sources and receivers (:meth:`set_physics`).
    RUNS_PHYSICS: ClassVar[bool] = True
    #: Whether it offers ``pack_rows``/``unpack_rows`` on device buffers that CUDA IPC can reach
    #: (:class:`~diamondlab.engine.scale.halo.PeerHalo`: MPI ghost rows from GPU to GPU).
    PEER_HALO: ClassVar[bool] = False
    #: The equation as the window and the MPI ranks see it (:mod:`~diamondlab.engine.scale.subdomain`).
    PARTS: ClassVar[EquationParts] = ACOUSTIC

    # ------------------------------------------------------------ class facts
    @staticmethod
    def available() -> bool:
        """Whether this machine can run the backend (default: always, as the CPU engines)."""
        return True

    @staticmethod
    def unavailable_reason() -> str:
        """Why not, and what to do instead (for the error when it is asked for anyway)."""
        return ""

    #: Default (DTS, Nt) per order, where one pair serves every shape and medium
    TILING: dict = {}

    @classmethod
    def default_tiling(cls, order: int, shape=None, medium: str = "constant") -> tuple[int, int]:
        """Default (DTS, Nt) for stencil order ``order`` (on ``shape`` where it matters; ``medium``:
        the run's :attr:`~diamondlab.media.Medium.variant`, where the backend's best tile may differ);
        :attr:`TILING`'s unless a backend knows better."""
        return cls.TILING[order]

    @classmethod
    def choose_algorithm(cls, order: int, shape, medium: str = "constant") -> tuple[str, str]:
        """``(algorithm, why)`` for ``algorithm="auto"``: DiamondTorre unless this backend measured
        stepwise faster for such a run (default: DiamondTorre everywhere, and the reason says that
        nothing was measured for it: on a CPU its lead depends on the cores and their caches, e.g.
        1.08x, 0.98x and 0.90x at NO=2, 4, 8 on a 128^3 grid on a 2-core VM, BENCHMARKS.md)."""
        return "diamondtorre", (
            f"DiamondTorre, the default on backend {cls.name!r} (no measurement there picks stepwise for "
            f"such a run; `diamondlab bench --backend {cls.name}` compares the two on this machine)"
        )

    @classmethod
    def fit_size(cls, order: int, size: int, shape) -> int:
        """The largest DTS up to ``size`` that the backend runs well on ``shape`` (default: ``size``)."""
        return size

    @classmethod
    @abc.abstractmethod
    def tuning_candidates(cls, order: int) -> list[tuple[int, int]]:
        """(DTS, Nt) pairs the auto-tuner measures."""

    @classmethod
    def tuning_options(cls, order: int, size: int) -> list[dict]:
        """Option sets the auto-tuner tries per (DTS, Nt) (``[{}]``: none)."""
        return [{}]

    @classmethod
    def check(cls, params, shape: tuple[int, int, int], size: int, nt: int, options: dict) -> dict:
        """Validate a problem without allocating it; return ``options`` with the defaults filled in.

        ``shape`` is validated already.  Raises ``ValueError`` naming the
        option and what is allowed; unknown option names are refused here.
        """
        if unknown := sorted(set(options) - set(cls.OPTIONS)):
            allowed = ", ".join(cls.OPTIONS) if cls.OPTIONS else "none"
            raise ValueError(f"backend_options {unknown} do not apply to backend {cls.name!r} "
                             f"(it takes: {allowed})")
        return cls._check(params, shape, size, nt, dict(options))

    @classmethod
    @abc.abstractmethod
    def _check(cls, params, shape, size: int, nt: int, options: dict) -> dict:
        """The backend's own checks of :meth:`check` (option names known)."""

    @classmethod
    def swaps_xz(cls, order: int, shape) -> bool:
        """Whether the backend runs ``shape`` with x and z swapped (:mod:`diamondlab.engine.backends.axes`:
        a z column taller than it holds, an x axis that is not; default: never)."""
        return False

    @classmethod
    def claim_device(cls, comm) -> None:
        """Bind this process to its device before anything is allocated, given the MPI ranks that share
        the run (the CPU engine: nothing to choose)."""
        return None

    # ------------------------------------------------------------ building
    def __init__(self, params, shape, size: int, nt: int, **options):
        from diamondlab.numerics import validate_shape

        shape = validate_shape(shape)
        self._build(params, shape, size, nt, self.check(params, shape, size, nt, options))

    @classmethod
    def from_plan(cls, plan) -> Backend:
        """The backend of a :class:`~diamondlab.engine.run.plan.RunPlan` (checked already: not again)."""
        self = cls.__new__(cls)
        self._build(plan.params, plan.shape, plan.size, plan.nt, dict(plan.options))
        return self

    @abc.abstractmethod
    def _build(self, params, shape, size: int, nt: int, options: dict) -> None:
        """Allocate the fields (the problem is valid)."""

    # ------------------------------------------------------------ instance contract
    @property
    def options(self) -> dict:
        """The speed options in force."""
        return {}

    def agree(self, flags: tuple) -> tuple:
        """Decisions taken from this process's clock, made common to every process that shares the
        run (MPI ranks: :class:`~diamondlab.engine.scale.mpi.SlabBackend`); one process: unchanged."""
        return tuple(flags)

    def field_views(self):
        """Writable host views ``(u^{n-1}, u^n)`` of the two levels, or ``(None, None)`` (not on the host)."""
        return None, None

    # ------------------------------------------------------------ the state, by rows (window, MPI ranks)
    def state_layout(self, shape=None) -> tuple:
        """The state arrays of this run's physics on a grid of ``shape`` (default: the backend's):
        :meth:`~diamondlab.engine.scale.subdomain.EquationParts.layout` of :attr:`PARTS`."""
        return self.PARTS.layout(self, self.shape if shape is None else shape)

    def state_views(self):
        """Writable host views of the state arrays (:meth:`state_layout`), or None (not on the host)."""
        views = self.field_views()
        return None if views[0] is None else tuple(views)

    def state(self) -> tuple:
        """Host copies of the state arrays."""
        return tuple(self.fields())

    def set_state(self, arrays) -> None:
        """Write the state arrays (host arrays as :meth:`state` returns them)."""
        self.set_fields(*arrays)

    def _row_pieces(self, lo: int, hi: int, views) -> list:
        """``(view, index)`` of rows ``[lo, hi)`` along the split axis in each of the state's ``views``."""
        axis = self.PARTS.split_axis
        pieces = [(v, rows_index(a, axis, lo, hi)) for a, v in zip(self.state_layout(), views, strict=True)]
        return [(v, i) for v, i in pieces if i is not None]

    def rows_size(self, lo: int, hi: int) -> int:
        """Floats in :meth:`get_rows` of rows ``[lo, hi)``."""
        return rows_size(self.state_layout(), self.PARTS.split_axis, lo, hi)

    def get_rows(self, lo: int, hi: int):
        """Rows ``[lo, hi)`` along the split axis (:attr:`PARTS`) of every state array, flat float32 on the
        host, valid until the next call (the halo an MPI neighbour needs; a backend whose state is on a
        device copies it all here unless it moves only the rows)."""
        views = self.state_views()
        pieces = self._row_pieces(lo, hi, self.state() if views is None else views)
        return np.concatenate([v[i].ravel() for v, i in pieces])

    def set_rows(self, lo: int, hi: int, rows) -> None:
        """Write ``rows`` (as :meth:`get_rows` returns them) into rows ``[lo, hi)`` of the state."""
        views = self.state_views()
        state = self.state() if views is None else views
        rows, at = np.asarray(rows).reshape(-1), 0
        for v, i in self._row_pieces(lo, hi, state):
            n = v[i].size
            v[i] = rows[at:at + n].reshape(v[i].shape)
            at += n
        if views is None:
            self.set_state(state)

    def set_physics(self, medium=None, sources=(), receivers=()) -> None:  # pragma: no cover - contract
        raise NotImplementedError(f"backend {self.name!r} does not run velocity models, sponges, sources "
                                  "or receivers")

    @abc.abstractmethod
    def compile(self) -> None: ...

    @abc.abstractmethod
    def set_fields(self, prev, curr) -> None: ...

    @abc.abstractmethod
    def fields(self): ...

    @abc.abstractmethod
    def current_view(self): ...

    @abc.abstractmethod
    def planes(self, index, strides): ...

    @abc.abstractmethod
    def step(self, nsteps: int, src_samples=None): ...

    @abc.abstractmethod
    def sweep(self, height: int, src_samples=None): ...

    @abc.abstractmethod
    def take_traces(self): ...

    @abc.abstractmethod
    def synchronize(self) -> None: ...


class Wrapper:
    """A backend that runs its grid on another one, ``inner`` (an MPI slab, a calculation window, the
    swapped axes): what it passes on unchanged, the speed options, compiling, the clock's decisions
    and waiting."""

    def __init__(self, inner: Backend, shape, name: str):
        self.inner, self.shape, self.name = inner, tuple(int(n) for n in shape), name
        self.params, self.size, self.nt = inner.params, inner.size, inner.nt

    @property
    def options(self) -> dict:
        return self.inner.options

    def agree(self, flags: tuple) -> tuple:
        return self.inner.agree(flags)

    def compile(self) -> None:
        self.inner.compile()

    def synchronize(self) -> None:
        self.inner.synchronize()

    def resources(self) -> dict[str, int] | None:
        """The inner backend's last sweep kernel's registers and bytes (None where it has no kernel)."""
        resources = getattr(self.inner, "resources", None)
        return resources() if resources is not None else None


#: name -> "module:Class"
BACKENDS: dict[str, str] = {
    "cpu": "diamondlab.engine.backends.cpu:CPUBackend",
    "cuda": "diamondlab.engine.backends.cuda:CUDABackend",
}


def planes_of(u, index, strides):
    """The ``planes(index, strides)`` of the contract, cut from an ``(nx, ny, nz)`` host array (copies).

    Samples start at ``index % strides`` so that every plane holds the point.

    >>> import numpy as np
    >>> u = np.arange(4 * 5 * 6).reshape(4, 5, 6)
    >>> xy, xz, yz = planes_of(u, (1, 2, 3), (2, 2, 2))
    >>> xy.shape, bool(xy[0, 1] == u[1, 2, 3]), yz.shape
    ((2, 3), True, (3, 3))
    """
    (ix, iy, iz), (sx, sy, sz) = index, strides
    ox, oy, oz = ix % sx, iy % sy, iz % sz
    return (np.array(u[ox::sx, oy::sy, iz]), np.array(u[ox::sx, iy, oz::sz]), np.array(u[ix, oy::sy, oz::sz]))


def register_backend(name: str, target: str) -> None:
    """Register a backend class given as ``"package.module:Class"``."""
    if ":" not in target:
        raise ValueError(f"target must look like 'package.module:Class'; got {target!r}")
    BACKENDS[name] = target


def get_backend(name: str):
    """The backend class registered as ``name``."""
    if name not in BACKENDS:
        raise ValueError(f"backend must be one of {sorted(BACKENDS) + ['auto']}; got {name!r}")
    module, attr = BACKENDS[name].split(":")
    try:
        cls = getattr(importlib.import_module(module), attr)
    except ImportError as err:
        from diamondlab.engine.run.interrupts import raise_if_stopped

        raise_if_stopped()  # an import cut short by a stop signal is the stop, not a missing package
        raise RuntimeError(
            f"backend {name!r} cannot be loaded ({err}); install diamondlab[{name}] or use backend='cpu'"
        ) from err
    if not (isinstance(cls, type) and issubclass(cls, Backend)):
        raise TypeError(f"backend {name!r} ({BACKENDS[name]}) must be a subclass of "
                        "diamondlab.engine.backends.Backend")
    return cls


def _usable(name: str) -> bool:
    """Whether backend ``name`` loads and can run on this machine."""
    try:
        return bool(get_backend(name).available())
    except RuntimeError:
        return False


def available_backends() -> list[str]:
    """Names of the registered backends that can run on this machine."""
    return [name for name in BACKENDS if _usable(name)]


def resolve_backend(name: str) -> str:
    """Turn ``"auto"`` into ``"cuda"`` where a GPU is present, else ``"cpu"``; check the rest."""
    if name == "auto":
        return "cuda" if _usable("cuda") else "cpu"
    cls = get_backend(name)
    if not cls.available():
        raise RuntimeError(cls.unavailable_reason())
    return name


def size_for_threads(order: int, size: int, ny: int, threads: int) -> int:
    """The largest DTS up to ``size`` whose stages give each of ``threads`` threads a whole torre.

    A stage's torres stand side by side along y, ``2R = order * DTS`` cells apart, so a stage holds
    ``ny // 2R`` whole torres (and clipped ones at the faces); a CPU backend runs a stage's torres in
    parallel, so with fewer torres than threads the other cores wait. DTS 1 where no DTS gives enough.

    >>> size_for_threads(2, 8, 128, 2), size_for_threads(2, 8, 128, 16), size_for_threads(2, 8, 200, 16)
    (8, 4, 6)
    >>> size_for_threads(4, 4, 128, 16), size_for_threads(2, 8, 16, 64)
    (2, 1)
    """
    fits = [s for s in range(1, int(size) + 1) if int(ny) // (order * s) >= threads]
    return max(fits, default=1)
