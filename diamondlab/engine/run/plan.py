"""The run plan: everything a run needs, normalised and checked once, before any field is allocated.

Contract
--------
:meth:`RunPlan.build` takes what the user asked for (the arguments of
:class:`~diamondlab.engine.run.simulation.Simulation` but the initial state)
and returns a frozen :class:`RunPlan`: the shape as ints, the
:class:`~diamondlab.numerics.WaveParameters`, the backend resolved from
``"auto"``, the algorithm (``"auto"``: the backend's choice,
:meth:`~diamondlab.engine.backends.Backend.choose_algorithm`, with its
reason), DTS and Nt with the backend's defaults (clipped to the grid) or
the auto-tuner's choice, the backend's speed options with its defaults
filled in, and the :class:`~diamondlab.engine.equations.acoustic.Physics`.
It checks, in this order and without allocating a grid: the algorithm, the
shape and the tiling values, the physics (velocity, sources, receivers,
sponge), the time step, the backend's name and availability, the host
memory, and the backend's own :meth:`~diamondlab.engine.backends.Backend.check`
(DTS, Nt, the domain, the options; on the GPU the (NO, DTS) pair, nz and the
device memory).  Every failure is a ``ValueError``, ``TypeError``,
``RuntimeError`` (backend unusable here) or ``MemoryError`` that names the
option; warnings (a source the run will not show, ``algorithm="auto"``
choosing stepwise and why, options ignored by
``"auto"`` on the CPU, the GPU declining a problem that the CPU then runs)
are issued here.

The simulation, the CLI, the lab's controllers and the tuner consume the
plan: they do not check again.  ``size="auto"`` or ``nt="auto"`` measure
(the only case that allocates: the tuner runs the candidates on the grid,
once per device and shape, then reads its cache).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field, replace
from types import MappingProxyType

import numpy as np

from diamondlab.engine.backends import Backend, get_backend, resolve_backend
from diamondlab.engine.backends.axes import SwappedXZBackend
from diamondlab.engine.equations.acoustic import Physics
from diamondlab.engine.measure.memory import check_host_memory, host_bytes
from diamondlab.engine.run.autotune import autotune
from diamondlab.engine.scale.halo import HALO_CHOICES
from diamondlab.engine.scale.mpi import SlabBackend
from diamondlab.engine.scale.subdomain import ACOUSTIC
from diamondlab.engine.scale.window import WindowBackend, check_window_dir, streamed_backend, window_chunks
from diamondlab.numerics import WaveParameters, validate_shape

__all__ = [
    "ALGORITHMS", "ALGORITHM_CHOICES", "PlanCore", "RunPlan", "check_scale", "check_window", "claim_ranks",
    "default_tiling", "device_shape_of", "fitted_size",
]

#: What a plan runs.
ALGORITHMS = ("diamondtorre", "stepwise")
#: What a user may ask for: ``"auto"`` lets the backend pick (:meth:`Backend.choose_algorithm`).
ALGORITHM_CHOICES = ("auto", *ALGORITHMS)


def _check_tiling_value(name: str, value) -> None:
    if value is None or value == "auto":
        return
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be an int >= 1 or 'auto' (default: the backend's); got {value!r}")


def _clip_to_grid(size: int, order: int, shape) -> int:
    """The largest DTS up to ``size`` whose tile (``2 DTS ShS`` cells across) fits the grid's x and y."""
    return max(1, min(int(size), min(int(shape[0]), int(shape[1])) // order))


def default_tiling(backend: str | type[Backend], order: int, shape,
                   medium: str = "constant") -> tuple[int, int]:
    """The backend's default (DTS, Nt) for ``order`` on ``shape``, DTS lowered until a tile fits the grid.

    ``backend`` is a registered name (``"auto"`` resolved) or a backend class;
    ``medium``: the run's :attr:`~diamondlab.media.Medium.variant` (``"constant"``, ``"sponge"``,
    ``"layered"`` or ``"model"``).

    >>> default_tiling("cpu", 2, (16, 16, 16))
    (8, 48)
    """
    cls = _backend_class(backend) if isinstance(backend, str) else backend
    size, nt = cls.default_tiling(order, shape, medium)
    return _clip_to_grid(size, order, shape), nt


def fitted_size(backend: str, order: int, size: int, shape) -> int:
    """The largest DTS up to ``size`` that ``backend`` runs well on ``shape`` (the GPU: a block holds nz).

    >>> fitted_size("cpu", 2, 4, (64, 64, 2000))
    4
    """
    return _backend_class(backend).fit_size(order, size, shape)


def _backend_class(name: str) -> type[Backend]:
    """The class of a backend name; ``"auto"`` is resolved, a named one need not be usable here."""
    return get_backend(resolve_backend(name) if name == "auto" else name)


def device_shape_of(shape, order: int, nt: int, ranks: int, rank: int, window, swap_xz: bool, parts=None):
    """What one device runs (:attr:`PlanCore.device_shape`) of a run of ``ranks`` MPI ranks or a ``window``;
    ``nt=0`` leaves out an MPI slab's ghost rows
    (rank 0's own rows are the widest); ``parts``: the equation's
    (:class:`~diamondlab.engine.scale.subdomain.EquationParts`, default the acoustic one)."""
    if ranks > 1:
        return SlabBackend.slab_shape(shape, order, nt, ranks, rank, parts or ACOUSTIC)
    if swap_xz:
        return shape[::-1]
    return shape if window is None else (window, *shape[1:])


def _check_slab(backend_class, params, shape, slab, size, nt, options, rank, ranks) -> dict:
    """The backend's check of one MPI rank's slab, its failure said as the slab's."""
    try:
        return backend_class.check(params, slab, size, nt, options)
    except ValueError as err:
        a = backend_class.PARTS.split_axis
        raise ValueError(f"comm: rank {rank} of {ranks} holds {slab[a]} of n{'xyz'[a]}={shape[a]} rows "
                         f"(owned and ghost rows), too few for this tile: {err}; use fewer ranks or a "
                         "smaller size (DTS)") from err


def check_window(backend_class, params, shape, nt: int, window) -> None:
    """A calculation window of ``window`` x rows must hold the ghost rows of the equation's sweep.

    >>> from diamondlab.engine.backends.cpu import CPUBackend
    >>> from diamondlab.numerics import WaveParameters
    >>> try:
    ...     check_window(CPUBackend, WaveParameters(order=2), (30, 8, 8), 6, 12)
    ... except ValueError as err:
    ...     print(str(err)[-20:])
    window >= 13; got 12
    """
    window_chunks(shape[0], window, backend_class.PARTS.ghost_rows(params.order, nt))


def check_scale(shape, comm, window, window_dir, halo: str, state_bytes: int):
    """Normalise and check ``comm``, ``window``, ``window_dir`` and ``halo`` of any equation's plan (before
    the backend is known); returns ``(ranks, window, window_dir)``."""
    if comm is not None and not all(isinstance(getattr(comm, a, None), (int, np.integer))
                                    for a in ("size", "rank")):
        raise TypeError(f"comm must be an MPI communicator (e.g. mpi4py's MPI.COMM_WORLD) or None; "
                        f"got {comm!r}")
    ranks = 1 if comm is None else int(comm.size)
    if window is not None:
        if isinstance(window, bool) or not isinstance(window, (int, np.integer)) or window < 1:
            raise ValueError(f"window must be an int >= 1 (x rows the device holds at a time) or None; "
                             f"got {window!r}")
        window = None if window >= shape[0] else int(window)  # the whole grid fits: no window
        if window is not None and ranks > 1:
            raise ValueError("window and comm together are not built yet: use one of them")
    if window_dir is not None:
        if window is None:
            raise ValueError("window_dir keeps a calculation window's fields in files: give window (x "
                             "rows the device holds) too, smaller than the grid's nx")
        window_dir = check_window_dir(window_dir, state_bytes)
    if halo not in HALO_CHOICES:
        raise ValueError(f"halo must be one of {HALO_CHOICES}; got {halo!r}")
    return ranks, window, window_dir


def claim_ranks(backend_class, comm, halo: str) -> None:
    """With several MPI ranks: the exchange path ``halo`` must suit ``backend_class``, and each rank binds
    its device (before the backend's check opens one)."""
    if comm is None or comm.size < 2:
        return
    if halo == "peer" and not backend_class.PEER_HALO:
        raise ValueError(f"halo='peer' (GPU to GPU) needs GPU ranks; backend {backend_class.name!r} "
                         "exchanges through the host: use halo='auto' or 'host'")
    backend_class.claim_device(comm)


@dataclass(frozen=True)
class PlanCore:
    """What every equation's run plan holds: the grid, the scheme's parameters, the algorithm, the backend,
    DTS and Nt, the backend's options and the equation's physics (:class:`RunPlan`,
    :class:`~diamondlab.engine.equations.maxwell_plan.MaxwellPlan`)."""

    shape: tuple[int, int, int]
    params: object
    algorithm: str
    backend: str
    size: int
    nt: int
    options: MappingProxyType
    physics: object = field(repr=False)
    #: why this algorithm runs (``"asked for"``, or the backend's reason for ``algorithm="auto"``)
    algorithm_reason: str = "asked for"
    #: the MPI communicator whose ranks split the grid (along the equation's axis; None: one process)
    comm: object = field(default=None, repr=False, compare=False)
    #: x rows the device holds at a time (:mod:`~diamondlab.engine.scale.window`); None: the whole grid
    window: int | None = None
    #: how MPI ranks exchange ghost rows (:data:`~diamondlab.engine.scale.halo.HALO_CHOICES`)
    halo: str = "auto"
    #: a calculation window's state in files in this folder
    #: (:func:`~diamondlab.engine.scale.window.host_arrays`)
    window_dir: str | None = None
    #: the backend runs the grid with x and z swapped (:mod:`~diamondlab.engine.backends.axes`: a tall
    #: column)
    swap_xz: bool = False

    @property
    def cells(self) -> int:
        nx, ny, nz = self.shape
        return nx * ny * nz

    @property
    def ranks(self) -> int:
        """MPI ranks that share the grid (1: this process alone)."""
        return 1 if self.comm is None else self.comm.size

    @property
    def device_shape(self) -> tuple[int, int, int]:
        """The shape the backend allocates: the window's with a calculation window, this rank's slab with
        MPI ranks, the grid's with x and z swapped for a tall column, else the grid's."""
        rank = 0 if self.comm is None else self.comm.rank
        return device_shape_of(self.shape, self.params.order, self.nt, self.ranks, rank, self.window,
                             self.swap_xz, self.backend_class.PARTS)

    @property
    def streamed(self) -> type | None:
        """The backend class that streams this run's DiamondTorre sweeps through its calculation window on
        the device (:func:`~diamondlab.engine.scale.window.streamed_backend`), or None: no window, another
        algorithm, a backend or a scene that goes window by window."""
        if self.window is None or self.algorithm != "diamondtorre":
            return None
        return streamed_backend(self.backend_class, self.physics)

    def check_slabs(self) -> None:
        """Every rank's slab (owned rows and ghost rows) must hold the backend's tile (MPI ranks)."""
        parts = self.backend_class.PARTS
        for rank in range(self.ranks):  # slab_shape refuses ranks that would hold no row
            slab = SlabBackend.slab_shape(self.shape, self.params.order, self.nt, self.ranks, rank, parts)
            _check_slab(self.backend_class, self.params, self.shape, slab, self.size, self.nt,
                        dict(self.options), rank, self.ranks)

    def assemble_backend(self) -> Backend:
        """The backend of this plan, any equation's: on a tall column's swapped axes, streamed through a
        calculation window (the device's own streaming, else window by window), this rank's slab of MPI
        ranks, or the whole grid; the physics not yet handed over."""
        streamed = self.streamed
        if self.swap_xz:
            return SwappedXZBackend(self.backend_class.from_plan(replace(self, shape=self.device_shape,
                                                                         swap_xz=False)))
        if self.window is not None and streamed is not None:
            return streamed.from_plan(self)
        if self.window is not None:
            inner = self.backend_class.from_plan(replace(self, shape=self.device_shape, window=None))
            return WindowBackend(inner, self.shape, self.window_dir)
        if self.ranks > 1:
            inner = self.backend_class.from_plan(replace(self, shape=self.device_shape, comm=None))
            return SlabBackend(inner, self.shape, self.comm, self.halo)
        return self.backend_class.from_plan(self)


@dataclass(frozen=True)
class RunPlan(PlanCore):
    """A validated run (see the module contract); build it with :meth:`build`.

    Examples
    --------
    >>> plan = RunPlan.build((32, 32, 16), 4, backend="cpu")
    >>> plan.backend, plan.size, plan.nt, plan.params.order, dict(plan.options)
    ('cpu', 6, 48, 4, {})
    >>> RunPlan.build((32, 32, 16), 4, backend="cpu", backend_options={"band": 2})
    Traceback (most recent call last):
    ...
    ValueError: backend_options ['band'] do not apply to backend 'cpu' (it takes: none)
    """

    @property
    def backend_class(self) -> type[Backend]:
        return get_backend(self.backend)

    def make_backend(self) -> Backend:
        """Allocate the backend's fields and hand it the medium and the points (one kernel variant);
        with several MPI ranks, this rank's slab (:class:`~diamondlab.engine.scale.mpi.SlabBackend`)."""
        backend = self.assemble_backend()
        if self.physics.needs_backend:
            ph = self.physics
            backend.set_physics(ph.medium(self.params.dt), ph.source_points.cells, ph.receiver_points.cells)
        return backend

    @classmethod
    def build(
        cls,
        shape=(64, 64, 64),
        order: int = 2,
        *,
        size: int | str | None = None,
        nt: int | str | None = None,
        courant: float | None = None,
        dt: float | None = None,
        spacing: float = 1.0,
        velocity=1.0,
        backend: str = "auto",
        backend_options: dict | None = None,
        algorithm: str = "auto",
        sources=(),
        receivers=(),
        sponge: int | None = None,
        comm=None,
        window: int | None = None,
        window_dir=None,
        halo: str = "auto",
        stacklevel: int = 2,
    ) -> RunPlan:
        """Normalise and check a run (see the module contract); arguments as for ``Simulation``.

        ``stacklevel`` as for :func:`warnings.warn`, counted from here (2: the caller of this method).
        """
        if algorithm not in ALGORITHM_CHOICES:
            raise ValueError(f"algorithm must be one of {ALGORITHM_CHOICES}; got {algorithm!r}")
        shape = validate_shape(shape)
        _check_tiling_value("size (DTS)", size)
        _check_tiling_value("nt (Nt, torre height)", nt)
        if backend_options is not None and not isinstance(backend_options, dict):
            raise TypeError(f"backend_options must be a dict; got {type(backend_options).__name__}")
        physics = Physics(shape, spacing, velocity, sources, receivers, sponge)
        params = WaveParameters(order=order, spacing=spacing, velocity=physics.velocity_max, courant=courant,
                                dt=dt)  # fmt: skip
        ranks, window, window_dir = check_scale(shape, comm, window, window_dir, halo,
                                                8 * int(np.prod(shape, dtype=np.int64)))
        name = resolve_backend(backend)
        claim_ranks(get_backend(name), comm, halo)
        if backend == "auto" and name == "cpu" and backend_options:
            warnings.warn(f"backend 'auto' runs on the CPU here: backend_options {backend_options} "
                          "(GPU speed options) are ignored", stacklevel=stacklevel)
            backend_options = None
        args = (shape, params, algorithm, physics, size, nt)
        try:
            plan = cls._for_backend(name, *args, backend_options, window, comm, window_dir)
            if ranks > 1:
                plan = replace(plan, halo=halo)
                plan.check_slabs()
        except ValueError as err:
            if backend != "auto" or name == "cpu" or backend_options or ranks > 1:
                raise  # options given by hand are the caller's to fix, not a reason to leave the GPU
            # "auto" picked the GPU, which cannot run this problem (e.g. a column taller than a
            # block, no memory left for a velocity model): the CPU engine can
            warnings.warn(f"backend 'auto': the GPU cannot run this ({err}); using the CPU",
                          stacklevel=stacklevel)
            plan = cls._for_backend("cpu", *args, None, window, None, window_dir)
        if algorithm == "auto" and plan.algorithm == "stepwise":
            warnings.warn(f"algorithm 'auto' runs stepwise: {plan.algorithm_reason}", stacklevel=stacklevel)
        return plan

    @classmethod
    def _for_backend(cls, name, shape, params, algorithm, physics, size, nt, options, window=None,
                     comm=None, window_dir=None) -> RunPlan:
        backend_class = get_backend(name)
        if physics.needs_backend and not backend_class.RUNS_PHYSICS:
            raise ValueError(f"backend {name!r} does not run velocity models, sponges, sources or receivers "
                             "yet; use backend='cpu'")
        if window_dir is None:  # else the fields live in files (checked against the disk's free space)
            need = host_bytes(shape, params.order, name, velocity_model=physics.velocity_model is not None)
            check_host_memory(shape, need)
        ranks, rank = (1, 0) if comm is None else (comm.size, comm.rank)
        swap_xz = backend_class.swaps_xz(params.order, shape)
        if swap_xz and (ranks > 1 or window is not None):
            raise ValueError(f"backend {name!r} runs a z column of {shape[2]} cells with x and z swapped, "
                             "which MPI ranks and a calculation window do not do yet: put the longest axis "
                             "along x")
        # what one device holds before Nt is known (MPI: the widest rank's own rows, on every rank alike)
        held = device_shape_of(shape, params.order, 0, ranks, 0, window, swap_xz, backend_class.PARTS)
        if size == "auto" or nt == "auto":
            tuned = autotune(params, held, name)
            size = tuned.size if size == "auto" else size
            nt = tuned.nt if nt == "auto" else nt
            if options is None and (size, nt) == (tuned.size, tuned.nt):
                options = tuned.options
        medium = physics.medium_variant
        if swap_xz and medium == "layered":  # K per depth varies along the device's x: K per cell there
            medium = "model"
        if ranks > 1:  # the default tile fits a rank's own y rows (the narrowest rank's)
            held = (shape[0], shape[1] // ranks, shape[2])
        default_size, default_nt = default_tiling(backend_class, params.order, held, medium)
        size = default_size if size is None else int(size)
        if ranks > 1 and nt is None:
            # the default Nt keeps a slab's ghost rows (Nt NO / 2 a side) within a quarter of its own
            nt = min(default_nt, max(1, (shape[1] // ranks) // (2 * params.order)))
        nt = default_nt if nt is None else int(nt)
        device_shape = device_shape_of(shape, params.order, nt, ranks, rank, window, swap_xz,
                                       backend_class.PARTS)
        reason = "asked for"
        if algorithm == "auto":
            algorithm, reason = backend_class.choose_algorithm(params.order, device_shape, medium)
        streamed = (None if window is None or algorithm != "diamondtorre" else
                    streamed_backend(backend_class, physics))
        options = dict(options or {})
        if streamed is not None:  # a streamed sweep runs stage by stage
            options.setdefault("band", 0)
        if ranks > 1:
            options = _check_slab(backend_class, params, shape, device_shape, size, nt, options, rank, ranks)
        else:
            options = backend_class.check(params, device_shape, size, nt, options)
        if streamed is not None:
            streamed.check_window(params, shape, size, nt, window, options)
        elif window is not None:
            check_window(backend_class, params, shape, nt, window)  # holds its ghost rows
        return cls(shape, params, algorithm, name, size, nt, MappingProxyType(options), physics, reason,
                   comm=comm, window=window, swap_xz=swap_xz, window_dir=window_dir)
