"""The Maxwell equation's simulation: :class:`~diamondlab.engine.run.simulation.Simulation` on the Yee grid.

Contract
--------
``Simulation(shape, order, equation="maxwell", ...)`` makes a
:class:`MaxwellSimulation`: the same object and run loop as the acoustic
equation (``run``, ``stop``, progress, callbacks, snapshots, the non-finite
check, Ctrl-C between sweeps), on the state of the Maxwell equation: ``E``
and ``H`` (``H`` half a step behind), the Drude currents and the CPML's
``psi``, all starting at zero, or at a saved state (``initial``: a record of
:func:`~diamondlab.engine.outputs.io.save_run` read by :func:`~diamondlab.engine.outputs.io.load_run`,
or :meth:`MaxwellSimulation.state`; checked against the run by
:func:`~diamondlab.engine.outputs.io.check_maxwell_state`).  What differs is the plan
(:class:`~diamondlab.engine.equations.maxwell_plan.MaxwellPlan`) and the backend
(:class:`~diamondlab.engine.backends.yee_cpu.YeeCPUBackend`).
:attr:`~MaxwellSimulation.traces` holds the probes' values, one row a step
(``E`` probes at ``t = (n + 1) dt``, ``H`` probes at ``(n + 1/2) dt``);
:attr:`~MaxwellSimulation.field` is the component :attr:`view` (``"Ez"``).
The monitors (:mod:`diamondlab.maxwell.monitors`: DFT planes, flux planes and
boxes) are transformed during the run, inside its sweeps; :meth:`~MaxwellSimulation.dft`
and :meth:`~MaxwellSimulation.flux` read their results.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

import numpy as np

from diamondlab.engine.equations.maxwell_plan import MaxwellPlan
from diamondlab.engine.outputs.io import check_maxwell_state
from diamondlab.engine.run.simulation import Simulation

__all__ = ["MaxwellSimulation"]


class MaxwellSimulation(Simulation):
    """Maxwell's equations on the Yee grid, run by DiamondTorre or stepwise time stepping.

    Parameters
    ----------
    shape : (nx, ny, nz)
        Grid size in cells (lengths in cells, ``c = 1``: Meep's units).
    order : {2, 4}
        Order of the Yee scheme in space.
    size, nt : int, optional
        DTS and Nt (Nt in steps: a sweep is ``2 Nt`` half steps).
    courant, dt : float, optional
        ``c dt / h`` (default 0.95 of the order's limit) or the time step.
    materials : sequence
        Objects of :mod:`diamondlab.maxwell.materials` (later ones on top).
    sources : sequence of :class:`~diamondlab.maxwell.sources.Dipole`
    probes : sequence of :class:`~diamondlab.maxwell.sources.Probe`
    pml : int or :class:`~diamondlab.maxwell.boundaries.CPML`
        CPML width in cells on every face of the axes that are not periodic (0: the perfect conductor
        beyond the grid); ``CPML(width, axes="x")`` on the faces of the named axes only.
    periodic : str or sequence of str
        The periodic axes: ``"y"``, ``"z"`` or ``("y", "z")`` (x cannot be: see
        :mod:`~diamondlab.engine.equations.maxwell_plan`); under DiamondTorre ``ny`` a multiple of ``2R``.
    monitors : sequence of :class:`~diamondlab.maxwell.monitors.DFTPlane`, ``FluxPlane``, ``FluxBox``
        The running DFTs and fluxes (:meth:`dft`, :meth:`flux`); ``dft_planes`` is another name for it
        (give one of the two).
    eps_averaging : bool
        Subpixel averaging of dielectric interfaces (Meep's ``eps_averaging``, on by default; see
        :mod:`diamondlab.maxwell.materials`); False: the staircase.
    backend, algorithm : str
        ``"auto"``/``"cpu"``; ``"auto"``/``"diamondtorre"``/``"stepwise"`` (bit for bit the same).
    initial : "zero", a pair ``(E, H)``, a state or a record, optional
        Where the run starts: at rest (default); ``(E, H)`` (currents and ``psi`` at zero); the
        mapping of :meth:`state` or a Maxwell record of :func:`~diamondlab.engine.outputs.io.load_run`
        (E, H, the Drude current, the CPML's ``psi``, the step), which must match this run's shape,
        order, ``dt``, CPML and materials.  ``run(a)``, save, resume, ``run(b)`` equals ``run(a + b)``
        bit for bit.
    step : int, optional
        The time level of ``initial`` (default: a state's or record's ``step``, else 0).
    comm, window, window_dir, halo
        MPI ranks (the grid split along x) and the calculation window, as for the acoustic equation
        (:class:`~diamondlab.engine.run.simulation.Simulation`; the equation's state streams and travels:
        :mod:`~diamondlab.engine.equations.maxwell_parts`); bit for bit the run of one process in memory.
        On the GPU a DiamondTorre run without periodic faces streams through a ring of ``window`` rows,
        the copies overlapped with the sweep, at Nt = 32 unless ``nt`` is given
        (:mod:`~diamondlab.engine.scale.yee_window`); other runs go window by window.

    Examples
    --------
    >>> from diamondlab import Simulation
    >>> from diamondlab.maxwell import Dipole, GaussianPulse, Probe
    >>> sim = Simulation((24, 24, 24), 2, equation="maxwell", pml=4,
    ...                  sources=[Dipole((12, 12, 12), "Ez", GaussianPulse(0.15, 0.1))],
    ...                  probes=[Probe((16, 12, 12), "Ez")])
    >>> _ = sim.run(40)
    >>> sim.traces.shape, bool(abs(sim.traces).max() > 0)
    ((40, 1), True)

    Continue it in another simulation of the same scene, from its state (or a record of ``save_run``):

    >>> again = Simulation((24, 24, 24), 2, equation="maxwell", pml=4, sources=sim.sources,
    ...                    probes=sim.probes, initial=sim.state())
    >>> again.time_step, np.array_equal(again.E, sim.E)
    (40, True)

    The flux of the dipole out of a box around it, from the DFT of the fields on its faces:

    >>> from diamondlab.maxwell import FluxBox
    >>> sim = Simulation((24, 24, 24), 2, equation="maxwell", pml=4,
    ...                  sources=[Dipole((12, 12, 12), "Ez", GaussianPulse(0.15, 0.1))],
    ...                  monitors=[FluxBox(((8, 8, 8), (16, 16, 16)), [0.1, 0.15])])
    >>> _ = sim.run(40)
    >>> sim.flux(0).shape, bool((sim.flux(0) > 0).all()), sim.dft(0)["+x"]["Ez"].shape
    ((2,), True, (2, 8, 8))
    """

    def __init__(self, shape=(64, 64, 64), order: int = 2, *, equation: str = "maxwell", size=None, nt=None,
                 courant=None, dt=None, spacing: float = 1.0, backend: str = "auto", algorithm: str = "auto",
                 materials=(), sources=(), probes=(), pml=0, periodic="", monitors=(), dft_planes=(),
                 eps_averaging: bool = True, initial="zero", step: int | None = None, comm=None,
                 window=None, window_dir=None, halo: str = "auto"):
        if equation != "maxwell":
            raise ValueError(f"MaxwellSimulation runs equation='maxwell'; got {equation!r}")
        if step is None:
            step = int(initial["step"]) if isinstance(initial, Mapping) and "step" in initial else 0
        self._check_start(None, None, step)
        if isinstance(initial, str) and initial != "zero":
            raise ValueError(f"initial must be 'zero', a pair (E, H), a state or a Maxwell run record; got "
                             f"{initial!r}")
        if monitors and dft_planes:
            raise ValueError("monitors and dft_planes are two names of one list: give one of them")
        plan = MaxwellPlan.build(shape, order, size=size, nt=nt, courant=courant, dt=dt, spacing=spacing,
                                 backend=backend, algorithm=algorithm, materials=materials, sources=sources,
                                 probes=probes, pml=pml, periodic=periodic, monitors=monitors or dft_planes,
                                 eps_averaging=eps_averaging, comm=comm, window=window,
                                 window_dir=window_dir, halo=halo)
        self._start(plan, initial, None, step)

    equation = "maxwell"
    probes = property(lambda self: self.plan.physics.receivers, doc="The probes (Probe objects).")
    monitors = property(lambda self: self.plan.physics.monitors,
                        doc="The monitors (DFTPlane, FluxPlane, FluxBox objects).")

    def _monitor(self, i) -> int:
        n = len(self.monitors)
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or not -n <= i < n:
            raise ValueError(f"monitor index must be an int in [0, {n - 1}] ({n} monitors); got {i!r}"
                             if n else f"monitor index {i!r}: this simulation has no monitors")
        return int(i) % n

    def _sums(self, i: int) -> np.ndarray:
        with self._exclusive("read its monitors", read=True):
            self.backend.synchronize()
            return self.backend.dft_sums((i,))[0]  # only monitor i's sums cross the bus

    def dft(self, i: int = 0) -> dict:
        """The DFT fields of monitor ``i`` since the start (or the reset), complex128 ``(nf, n1, n2)`` each.

        A :class:`~diamondlab.maxwell.monitors.DFTPlane`: ``{component: array}`` over its cells (each
        component at its Yee position); a ``FluxPlane``: the four tangential components at the face centres;
        a ``FluxBox``: ``{face: {component: array}}`` for the faces ``"-x"``, ``"+x"``, .. ``"+z"``.
        ``n1, n2`` run along the plane's other two axes in x, y, z order.
        """
        i = self._monitor(i)
        return self.physics.monitor_layout.dft(i, self._sums(i))

    def flux(self, i: int = 0, face: str | None = None) -> np.ndarray:
        """``P(f)`` (float64, one a frequency) of flux monitor ``i``: ``1/2 Re sum (E x conj H) . n dA``
        (a ``FluxBox``: the net outward flux, or that of one ``face``: ``"-x"`` .. ``"+z"``)."""
        i = self._monitor(i)
        on_device = getattr(self.backend, "plane_flux", None)  # the GPU sums the planes where the sums are
        if on_device is None:
            return self.physics.monitor_layout.flux(i, self._sums(i), face)
        with self._exclusive("read its monitors", read=True):
            self.backend.synchronize()
            return self.physics.monitor_layout.flux_from(i, functools.partial(on_device, i), face)

    def _restart_clock(self) -> None:
        super()._restart_clock()
        if self.physics.monitors:  # every backend (a window's, a rank's) sums its points from here
            self.backend.start_monitors(self.time_step)  # the DFT sums from zero, sample times from here

    @property
    def view(self) -> str:
        """The component that :attr:`field`, :meth:`current_view` and the planes show (``"Ez"``)."""
        return self.backend.view

    @view.setter
    def view(self, name: str) -> None:
        from diamondlab.maxwell.sources import COMPONENTS

        if name not in COMPONENTS:
            raise ValueError(f"view must be one of {COMPONENTS}; got {name!r}")
        self.backend.view = name

    def _check_initial(self, initial, plan):
        return check_maxwell_state(initial, plan)

    def _reset(self, initial) -> None:
        """:meth:`reset`: every field, Drude current and CPML ``psi`` to zero, or to ``initial`` (as in the
        constructor; default: the constructor's); the clock back to ``step``."""
        if initial is None:
            initial = self._initial
        elif not (isinstance(initial, str) and initial == "zero"):
            initial = check_maxwell_state(initial, self.plan)
        self.backend.reset()
        if not isinstance(initial, str):
            names = self._state_names()
            arrays = [initial.get(n, a) for n, a in zip(names, self.backend.state(), strict=True)]
            self.backend.set_state(arrays)  # (a J or psi not given stays zero)
        self._initial = initial
        self._restart_clock()

    def state(self) -> dict[str, np.ndarray]:
        """Host copies of the whole state and its ``step``: ``E``, ``H`` (``(3, nx, ny, nz)`` float32 each,
        ``H`` half a step behind), ``J`` with a Drude medium, ``psi_x/y/z`` with a CPML; ``initial=`` of a
        simulation of the same scene continues from it (:func:`~diamondlab.engine.outputs.io.save_run`
        writes it to a file)."""
        with self._exclusive("read its state", read=True):
            named = dict(zip(self._state_names(), self.backend.state(), strict=True))
            if not self.physics.pml.width:
                named = {n: a for n, a in named.items() if not n.startswith("psi")}
            return {**named, "step": np.int64(self.time_step)}

    def _state_names(self) -> tuple[str, ...]:
        """The names of the backend's state arrays, in the order of the equation's layout
        (:mod:`~diamondlab.engine.equations.maxwell_parts`): E, H, J with a Drude medium, psi_x/y/z."""
        from diamondlab.engine.backends.yee_cpu import PSI_NAMES

        return ("E", "H", *(("J",) if self.physics.drude else ()), *PSI_NAMES)

    @property
    def fields(self) -> tuple[np.ndarray, np.ndarray]:
        """Host copies ``(E, H)``, each ``(3, nx, ny, nz)`` float32 (``H`` half a step behind ``E``)."""
        with self._exclusive("read its fields", read=True):
            return self.backend.fields()

    @property
    def E(self) -> np.ndarray:  # noqa: N802 - the field's name
        """Host copy of ``E`` ``(3, nx, ny, nz)``."""
        return self.fields[0]

    @property
    def H(self) -> np.ndarray:  # noqa: N802 - the field's name
        """Host copy of ``H`` ``(3, nx, ny, nz)`` (at the half step before ``E``)."""
        return self.fields[1]

    @property
    def field(self) -> np.ndarray:
        """Host copy of the component :attr:`view`."""
        with self._exclusive("read its field", read=True):
            return self.backend.current_view().copy()

    def energy(self) -> float:
        """Electromagnetic energy ``(1/2) sum(eps |E|^2 + mu |H|^2)`` in cell units (float64).

        ``H`` is half a step behind ``E``, so this moves by ``O(dt)`` about the conserved value
        ``(1/2) sum(eps |E^n|^2 + mu H^{n-1/2} . H^{n+1/2})`` of the leapfrog.
        """
        table = self.plan.table
        e, h = self.fields
        eps = table.coefficients[table.index, 5]
        mu = table.coefficients[table.index, 6]
        return 0.5 * float((eps * e.astype(np.float64) ** 2).sum() + (mu * h.astype(np.float64) ** 2).sum())

    def __repr__(self) -> str:
        return (f"Simulation(equation='maxwell', shape={self.shape}, order={self.order}, size={self.size}, "
                f"nt={self.nt}, courant={self.params.courant:.4g}, backend={self.backend_name!r}, "
                f"algorithm={self.algorithm!r}, time_step={self.time_step}; {self.physics.summary()})")
