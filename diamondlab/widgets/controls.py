"""Controllers of a run: NO, DTS, Nt, grid, backend, algorithm, Courant number, and the run buttons.

Contract
--------
:class:`Controls` holds ipywidgets 8 controls and turns them into a
:class:`RunConfig` (:meth:`Controls.config`).  :func:`check_config` asks the
engine's run plan (:class:`~diamondlab.engine.run.plan.RunPlan`, the checks a
simulation makes) whether a configuration can run, without allocating a
grid, and returns the message to show (an empty string when it can).  :meth:`Controls.validate`
shows that message in the widget's message area; nothing here raises into
the notebook.  :func:`build_simulation` makes the simulation of a config.

Changing NO or the backend puts DTS and Nt at that backend's defaults for
the order (clipped to the grid), so a scientist starts from a tuned point.
On the GPU a "sweep" controller picks the DiamondTorre sweep's speed
options (``backend_options``: whole-torre or pipelined waits, the launch
order); they never change the fields, only the throughput readout.
"""

from __future__ import annotations

import contextlib
import warnings
from dataclasses import asdict, dataclass, replace

import ipywidgets as widgets

from diamondlab.numerics import SUPPORTED_ORDERS, courant_limit
from diamondlab.widgets.points import PointsPanel, make_points

__all__ = ["Controls", "RunConfig", "build_simulation", "check_config", "plan_config"]


@dataclass(frozen=True)
class RunConfig:
    """Everything the controllers choose."""

    order: int = 2
    size: int = 2
    nt: int = 8
    shape: tuple[int, int, int] = (64, 64, 64)
    backend: str = "cpu"
    algorithm: str = "diamondtorre"
    courant: float = 0.25
    steps: int = 0
    sources: tuple = ()
    receivers: tuple = ()
    sponge: int = 16
    initial: str = "gaussian"
    sweep: tuple = ()  # the GPU sweep's options as (key, value) pairs (or a dict); () the backend's default

    def __post_init__(self):
        object.__setattr__(self, "sweep", tuple(dict(self.sweep).items()))

    @property
    def damped(self) -> bool:
        """Whether the run has a sponge: one applies only with sources or receivers."""
        return bool(self.sponge and (self.sources or self.receivers))

    @property
    def medium(self) -> str:
        """The run's :attr:`~diamondlab.media.Medium.variant` (the lab runs a constant velocity)."""
        return "sponge" if self.damped else "constant"

    def sim_kwargs(self) -> dict:
        """Keyword arguments of :class:`~diamondlab.Simulation`.

        Sources ``(x, y, z, wavelet, frequency, amplitude)`` and receivers
        ``(x, y, z)`` are in grid cells; the sponge applies only with sources
        or receivers (without them the zero boundary keeps the fast kernels).
        """
        d = asdict(self)
        d.pop("steps")
        d["shape"] = tuple(d["shape"])
        d["sources"], d["receivers"] = make_points(self.sources, self.receivers)
        d["sponge"] = self.sponge if self.damped else 0
        d.pop("sweep")
        if self.sweep and _resolves_to_cuda(self.backend):
            d["backend_options"] = dict(self.sweep)
        return d


def _resolves_to_cuda(backend: str) -> bool:
    """Whether ``backend`` means the GPU (``"cuda"``, or ``"auto"`` on a machine with one)."""
    from diamondlab.engine.backends import resolve_backend

    if backend == "cuda":
        return True
    try:
        return resolve_backend(backend) == "cuda"
    except (RuntimeError, ValueError):
        return False


def sweep_choices() -> list[tuple[str, tuple]]:
    """(label, options) of the GPU sweep controller: the backend's default, then the tuner's candidates."""
    from diamondlab.engine.backends.cuda import CUDABackend

    choices = [("backend default", ())]
    for options in CUDABackend.tuning_options(2, 1):
        if not options.get("pipelined"):
            label = "whole-torre waits"
        else:
            band = options.get("band") or 0
            order = f"bands of {band}" if band else "stage order"
            label = f"pipelined, {order}, wait every {options.get('chunk', 1)} tiers"
        choices.append((label, tuple(options.items())))
    return choices


def default_tiling(backend: str, order: int, shape, medium: str = "constant") -> tuple[int, int]:
    """The backend's default (DTS, Nt) for ``order`` on ``shape`` (see ``engine.plan.default_tiling``)."""
    from diamondlab.engine.run.plan import default_tiling as plan_default

    try:
        return plan_default(backend, order, shape, medium)
    except (RuntimeError, ValueError):  # a backend that cannot run here: its message shows on validation
        return 2, 8


def plan_config(cfg: RunConfig, notes: list | None = None):
    """The engine's :class:`~diamondlab.engine.run.plan.RunPlan` of ``cfg``, or the message saying why it
    cannot run (a ``str``); checked without allocating a grid.

    Warnings of the checks (a wavelet with few points per wavelength) are
    appended to ``notes`` when given.
    """
    from diamondlab.engine.run.plan import RunPlan

    kwargs = cfg.sim_kwargs()
    kwargs.pop("initial")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            plan = RunPlan.build(**kwargs)
    except (ValueError, TypeError, RuntimeError, MemoryError) as err:
        return str(err)
    if notes is not None:
        notes.extend(str(w.message) for w in caught)
    return plan


def check_config(cfg: RunConfig, notes: list | None = None) -> str:
    """Why ``cfg`` cannot run ('' when it can): :func:`plan_config`'s message."""
    plan = plan_config(cfg, notes)
    return plan if isinstance(plan, str) else ""


def build_simulation(cfg: RunConfig, plan=None):
    """The :class:`~diamondlab.Simulation` of ``cfg``; ``plan``: its plan from :func:`plan_config`
    (then not built and checked again)."""
    from diamondlab.engine.run.simulation import Simulation

    if plan is None:
        return Simulation(**cfg.sim_kwargs())
    return Simulation.from_plan(plan, initial=cfg.sim_kwargs()["initial"])


def _backend_options() -> list[str]:
    """Every registered backend, the usable ones first; choosing an unusable one explains why."""
    from diamondlab.engine.backends import BACKENDS, available_backends

    try:
        usable = available_backends()
    except Exception:  # noqa: BLE001 - a broken backend must not break the controls
        usable = ["cpu"]
    first = ["auto", *usable] if "cuda" in usable else [*usable, "auto"]
    return first + [name for name in BACKENDS if name not in first]


class Controls:
    """The controllers; ``widget`` is the panel to display.

    Parameters
    ----------
    config : RunConfig, optional
        Initial values.
    """

    def __init__(self, config: RunConfig | None = None):
        cfg = config or RunConfig()
        style = {"description_width": "110px"}
        lay = widgets.Layout(width="330px")
        self.order = widgets.Dropdown(options=list(SUPPORTED_ORDERS), value=cfg.order,
                                      description="NO (order)", style=style, layout=lay)
        self.size = widgets.BoundedIntText(value=cfg.size, min=1, max=64, description="DTS (tile)",
                                           style=style, layout=lay)
        self.nt = widgets.BoundedIntText(value=cfg.nt, min=1, max=1024, description="Nt (height)",
                                         style=style, layout=lay)
        self.nx, self.ny, self.nz = (
            widgets.BoundedIntText(value=int(n), min=1, max=4096, description=f"n{a}", style=style,
                                   layout=widgets.Layout(width="200px"))
            for a, n in zip("xyz", cfg.shape, strict=True)
        )
        self.backend = widgets.Dropdown(options=_backend_options(), value=cfg.backend,
                                        description="backend", style=style, layout=lay)
        choices, value = _with_choice(sweep_choices(), cfg.sweep)
        self.sweep = widgets.Dropdown(options=choices, value=value,
                                      description="GPU sweep", style=style, layout=lay,
                                      tooltip="speed options of the CUDA DiamondTorre sweep")
        self.algorithm = widgets.ToggleButtons(options=["diamondtorre", "stepwise"], value=cfg.algorithm,
                                               description="algorithm", style=style)
        self.courant = widgets.BoundedFloatText(value=cfg.courant, min=0.0, max=2.0, step=0.01,
                                                description="Courant c·dt/h", style=style, layout=lay)
        self.steps = widgets.BoundedIntText(value=cfg.steps, min=0, max=10**9, description="steps (0 = ∞)",
                                            style=style, layout=lay)
        self.run_button = widgets.Button(description="Run", icon="play", button_style="success")
        self.pause_button = widgets.Button(description="Pause", icon="pause", button_style="warning")
        self.step_button = widgets.Button(description="Step", icon="step-forward",
                                          tooltip="one sweep (Nt steps)")
        self.reset_button = widgets.Button(description="Reset", icon="undo", tooltip="back to n = 0")
        self.message = widgets.HTML(value="")
        self.message.add_class("diamondlab-message")
        self.status = widgets.HTML(value="idle")
        self.status.add_class("diamondlab-status")
        self.limit = widgets.HTML()
        self.points = PointsPanel(shape=lambda: self.config().shape, sources=cfg.sources,
                                  receivers=cfg.receivers, sponge=cfg.sponge)
        self.points.initial.value = cfg.initial
        self.points.on_change(lambda: self._changed(None))
        self._structural = [self.order, self.size, self.nt, self.nx, self.ny, self.nz, self.backend,
                            self.sweep, self.algorithm, self.courant]
        for w in self._structural:
            w.observe(self._changed, names="value")
        self.order.observe(self._defaults, names="value")
        self.backend.observe(self._defaults, names="value")
        self.nz.observe(self._fit_column, names="value")
        grid = widgets.VBox([widgets.HTML("<b>grid</b>"), self.nx, self.ny, self.nz])
        params = widgets.VBox([self.order, self.size, self.nt, self.courant, self.limit, self.steps])
        choose = widgets.VBox([self.backend, self.sweep, self.algorithm])
        buttons = widgets.HBox([self.run_button, self.pause_button, self.step_button, self.reset_button])
        points = widgets.Accordion(children=[self.points.widget], titles=("sources and receivers",))
        self.widget = widgets.VBox([widgets.HBox([params, grid, choose]), points, buttons, self.status,
                                    self.message])
        self.widget.add_class("diamondlab-controls")
        self._listeners = []
        self.sweep.disabled = not _resolves_to_cuda(cfg.backend)
        self.validate()

    # ------------------------------------------------------------- values
    def config(self) -> RunConfig:
        """The configuration the controllers show now."""
        return RunConfig(
            order=int(self.order.value), size=int(self.size.value), nt=int(self.nt.value),
            shape=(int(self.nx.value), int(self.ny.value), int(self.nz.value)), backend=self.backend.value,
            algorithm=self.algorithm.value, courant=float(self.courant.value), steps=int(self.steps.value),
            sweep=tuple(self.sweep.value), **self.points.values(),
        )

    def set(self, **values) -> None:
        """Set controllers by name (``order``, ``size``, ``nt``, ``shape``, ``backend``, ...)."""
        cfg = replace(self.config(), **values)
        with self.hold():
            for name in ("order", "backend", "size", "nt", "sweep", "algorithm", "courant", "steps"):
                if name in values:
                    value = getattr(cfg, name)
                    if name == "sweep":
                        choices, value = _with_choice(list(self.sweep.options), value)
                        if len(choices) != len(self.sweep.options):
                            self.sweep.options = choices
                    getattr(self, name).value = value
            if "shape" in values:
                self.nx.value, self.ny.value, self.nz.value = (int(n) for n in cfg.shape)
        self.validate()

    @contextlib.contextmanager
    def hold(self):
        """Context: change several controllers with one validation at the end."""
        self._held = True
        try:
            yield
        finally:
            self._held = False
            self._changed(None)

    _held = False

    def on_change(self, listener) -> None:
        """Call ``listener(config, message)`` after every change of a structural controller."""
        self._listeners.append(listener)

    def _defaults(self, change) -> None:
        if self._held:
            return
        cfg = self.config()
        size, nt = default_tiling(cfg.backend, cfg.order, cfg.shape, medium=cfg.medium)
        with self.hold():
            self.sweep.disabled = not _resolves_to_cuda(cfg.backend)
            self.size.value, self.nt.value = size, nt
            lim = courant_limit(cfg.order)
            if self.courant.value > lim:
                self.courant.value = round(0.5 * lim, 4)

    def _fit_column(self, change) -> None:
        """Lower DTS when the backend no longer runs it well on the grid (on the GPU: a block holds nz)."""
        if self._held:
            return
        from diamondlab.engine.run.plan import fitted_size

        cfg = self.config()
        try:
            size = fitted_size(cfg.backend, cfg.order, cfg.size, cfg.shape)
        except (RuntimeError, ValueError):
            return
        if size < self.size.value:
            self.size.value = size

    def _changed(self, change) -> None:
        if self._held:
            return
        message = self.validate()
        for listener in list(self._listeners):
            listener(self.config(), message)

    def validate(self) -> str:
        """Check the current configuration; show and return the message ('' when it can run)."""
        cfg = self.config()
        self.limit.value = (f"<small>stable for Courant ≤ {courant_limit(cfg.order):.4f} "
                            f"(NO={cfg.order})</small>")
        notes: list[str] = []
        message = check_config(cfg, notes)
        if message or not notes:
            self.show_message(message, "error" if message else "ok")
        else:
            self.show_message("\n".join(notes), "info")
        self.run_button.disabled = self.step_button.disabled = bool(message)
        return message

    def show_message(self, text: str, kind: str = "error") -> None:
        """Show ``text`` in the message area (``kind``: error, info, ok)."""
        colour = {"error": "#c0392b", "info": "#1f618d", "ok": "#1e8449"}[kind]
        if kind == "ok" and not text:
            text = "ready"
        self.message.value = (f"<div style='color:{colour};white-space:pre-wrap'>"
                              f"{'⚠ cannot run: ' if kind == 'error' else ''}{_escape(text)}</div>")

    def lock(self, running: bool) -> None:
        """Disable the structural controllers while a run is in progress."""
        for w in self._structural:
            w.disabled = running
        self.sweep.disabled = running or not _resolves_to_cuda(self.backend.value)
        self.points.set_disabled(running)
        self.run_button.disabled = self.step_button.disabled = running or bool(check_config(self.config()))
        self.reset_button.disabled = False


def _with_choice(choices: list, sweep: tuple) -> tuple[list, tuple]:
    """The dropdown's ``(label, value)`` choices with ``sweep`` among them, and its value there.

    Options equal as dicts are the same choice; options set by hand are added.
    """
    for _, value in choices:
        if dict(value) == dict(sweep):
            return choices, value
    return [*choices, (", ".join(f"{k}={v}" for k, v in sweep), sweep)], sweep


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
