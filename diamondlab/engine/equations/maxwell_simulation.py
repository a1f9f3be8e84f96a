"""The Maxwell equation's simulation: :class:`~diamondlab.engine.run.simulation.Simulation` on the Yee grid.

Contract
--------
``Simulation(shape, order, equation="maxwell", ...)`` makes a
:class:`MaxwellSimulation`: the same object and run loop as the acoustic
equation (``run``, ``stop``, progress, callbacks, snapshots, the non-finite
check, Ctrl-C between sweeps), on the state of the Maxwell equation: ``E``
and ``H`` (``H`` half a step behind), the Drude currents and the CPML's
``psi``, all starting at zero.  What differs is the plan
(:class:`~diamondlab.engine.equations.maxwell_plan.MaxwellPlan`) and the backend
(:class:`~diamondlab.engine.backends.yee_cpu.YeeCPUBackend`).
:attr:`~MaxwellSimulation.traces` holds the probes' values, one row a step
(``E`` probes at ``t = (n + 1) dt``, ``H`` probes at ``(n + 1/2) dt``);
:attr:`~MaxwellSimulation.field` is the component :attr:`view` (``"Ez"``).
"""

from __future__ import annotations

import numpy as np

from diamondlab.engine.equations.maxwell_plan import MaxwellPlan
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
    backend, algorithm : str
        ``"auto"``/``"cpu"``; ``"auto"``/``"diamondtorre"``/``"stepwise"`` (bit for bit the same).
    comm, window, window_dir, halo
        MPI ranks (the grid split along x) and the calculation window, as for the acoustic equation
        (:class:`~diamondlab.engine.run.simulation.Simulation`; the equation's state streams and travels:
        :mod:`~diamondlab.engine.equations.maxwell_parts`); bit for bit the run of one process in memory.

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
    """

    def __init__(self, shape=(64, 64, 64), order: int = 2, *, equation: str = "maxwell", size=None, nt=None,
                 courant=None, dt=None, spacing: float = 1.0, backend: str = "auto", algorithm: str = "auto",
                 materials=(), sources=(), probes=(), pml=0, periodic="", step: int = 0, comm=None,
                 window=None, window_dir=None, halo: str = "auto"):
        if equation != "maxwell":
            raise ValueError(f"MaxwellSimulation runs equation='maxwell'; got {equation!r}")
        self._check_start(None, None, step)
        plan = MaxwellPlan.build(shape, order, size=size, nt=nt, courant=courant, dt=dt, spacing=spacing,
                                 backend=backend, algorithm=algorithm, materials=materials, sources=sources,
                                 probes=probes, pml=pml, periodic=periodic, comm=comm, window=window,
                                 window_dir=window_dir, halo=halo)
        self._start(plan, "zero", None, step)

    equation = "maxwell"
    probes = property(lambda self: self.plan.physics.receivers, doc="The probes (Probe objects).")

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

    def _reset(self, initial) -> None:
        """:meth:`reset`: every field, Drude current and CPML ``psi`` to zero, or ``initial = (E, H)``
        (each ``(3, nx, ny, nz)``, ``H`` at the half step before ``E``); the clock back to ``step``."""
        self.backend.reset()
        if initial is not None and not (isinstance(initial, str) and initial == "zero"):
            fields = []
            for name, a in zip(("E", "H"), initial, strict=True):
                a = np.asarray(a)
                if a.shape != (3, *self.shape) or not np.isfinite(a).all():
                    raise ValueError(f"initial {name} must be finite, of shape {(3, *self.shape)}; got "
                                     f"{a.shape}")
                fields.append(a.astype(np.float32, copy=False))
            self.backend.set_fields(*fields)
        self._restart_clock()

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
