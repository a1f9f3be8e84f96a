"""The interactive lab: controllers, live wavefield, LRnLA views, tuning and 3D snapshots in one widget.

Contract
--------
``Lab(...)`` (keyword arguments: the fields of
:class:`~diamondlab.widgets.controls.RunConfig`) builds the controllers, a
:class:`~diamondlab.widgets.runner.BackgroundRun` of the configured
simulation, and the panels; ``lab.widget`` (or displaying ``lab``) shows
them as tabs: *Run* (controllers and live view), *Shapes*, *Stages*,
*Tuning*, *Snapshot*.

Buttons do what they say from Python too (:meth:`Lab.run`, :meth:`Lab.pause`,
:meth:`Lab.step`, :meth:`Lab.reset`), so tests and notebooks drive the lab
exactly as a user does.  Run and Step rebuild the simulation when the
controllers changed since the last one (a configuration that cannot run
is refused with a message); while a run is in progress the structural
controllers are disabled.  Every error becomes a message in the widget.
"""

from __future__ import annotations

from dataclasses import replace

import ipywidgets as widgets

from diamondlab.widgets.controls import Controls, RunConfig, build_simulation, check_config
from diamondlab.widgets.live import LiveView
from diamondlab.widgets.lrnla import ShapesPanel, StageExplorer
from diamondlab.widgets.runner import BackgroundRun
from diamondlab.widgets.snapshot import SnapshotPanel
from diamondlab.widgets.tuning import TuningPanel

__all__ = ["Lab"]

TABS = ("Run", "Shapes", "Stages", "Tuning", "Snapshot")


class Lab:
    """The whole lab; see the module contract.

    Parameters
    ----------
    panels : tuple of str
        Which tabs to build (default all of :data:`TABS`).
    **config
        Initial controller values (``order``, ``size``, ``nt``, ``shape``,
        ``backend`` (default ``"auto"``: CUDA where there is a GPU and the
        engine runs the configuration, else the CPU), ``algorithm``, ``courant``, ``steps``; ``sources`` as
        ``(x, y, z, wavelet, frequency, amplitude)`` and ``receivers`` as
        ``(x, y, z)`` in grid cells, ``sponge``, ``initial``).
    """

    def __init__(self, panels=TABS, max_points: int = 96, **config):
        config = {"shape": (64, 64, 64), "backend": "auto", **config}
        if "size" not in config or "nt" not in config:
            from diamondlab.widgets.controls import default_tiling

            size, nt = default_tiling(config.get("backend", "cpu"), config.get("order", 2), config["shape"])
            config = {"size": size, "nt": nt, **config}
        cfg = RunConfig(**config)
        self.controls = Controls(cfg)
        self.measured: dict = {}
        message = check_config(cfg)
        if message and cfg.backend != "cpu" and not check_config(replace(cfg, backend="cpu")):
            # e.g. a configuration the GPU engine does not build (NO, DTS, nz): the CPU engine runs it
            cfg, note = replace(cfg, backend="cpu"), f"running on the CPU: {message}"
            self.controls.set(backend="cpu")
            self.controls.show_message(note, "info")
        elif message:
            raise ValueError(message)
        try:
            sim = build_simulation(cfg)
        except Exception as err:  # noqa: BLE001 - a backend that fails: fall back to the CPU, say why
            if cfg.backend == "cpu":
                raise
            cfg = replace(cfg, backend="cpu")
            self.controls.set(backend="cpu")
            sim = build_simulation(cfg)
            self.controls.show_message(f"backend {config.get('backend')!r} failed ({type(err).__name__}: "
                                       f"{err}); running on the CPU", "info")
        self.runner = BackgroundRun(sim)
        self._config = cfg
        self.live = LiveView(self.runner, max_points=max_points, measured=self.measured)
        self.runner.on_state(self._on_state)
        c = self.controls
        c.run_button.on_click(lambda _: self.run())
        c.pause_button.on_click(lambda _: self.pause())
        c.step_button.on_click(lambda _: self.step())
        c.reset_button.on_click(lambda _: self.reset())
        children, titles = [], []
        self.shapes = self.explorer = self.tuning = self.snapshot = None
        if "Run" in panels:
            children.append(widgets.VBox([c.widget, self.live.widget]))
            titles.append("Run")
        if "Shapes" in panels:
            self.shapes = ShapesPanel(cfg)
            c.on_change(self.shapes.update)
            children.append(self.shapes.widget)
            titles.append("Shapes")
        if "Stages" in panels:
            self.explorer = StageExplorer(cfg)
            c.on_change(self.explorer.update)
            children.append(self.explorer.widget)
            titles.append("Stages")
        if "Tuning" in panels:
            self.tuning = TuningPanel(c, runner=self.runner)
            children.append(self.tuning.widget)
            titles.append("Tuning")
        if "Snapshot" in panels:
            self.snapshot = SnapshotPanel(lambda: self.runner.sim, busy=lambda: self.runner.running)
            children.append(self.snapshot.widget)
            titles.append("Snapshot")
        self.tabs = widgets.Tab(children=children, titles=titles)
        self.widget = widgets.VBox([widgets.HTML("<h3 style='margin:4px 0'>diamondlab · the interactive "
                                                 "lab</h3>"), self.tabs])
        self.widget.add_class("diamondlab-lab")

    def _ipython_display_(self):
        from IPython.display import display

        display(self.widget)

    @property
    def sim(self):
        """The simulation the lab drives now."""
        return self.runner.sim

    # ------------------------------------------------------------ actions
    def _prepare(self) -> bool:
        """Make the simulation match the controllers; False (with a message) if it cannot."""
        cfg = self.controls.config()
        message = check_config(cfg)
        if message:
            self.controls.show_message(message)
            return False
        if cfg.sim_kwargs() != self._config.sim_kwargs():
            try:
                sim = build_simulation(cfg)
            except Exception as err:  # noqa: BLE001 - shown in the widget
                self.controls.show_message(f"{type(err).__name__}: {err}")
                return False
            self.runner.replace(sim)
            self.live.attach(self.runner)
        self._config = cfg
        return True

    def run(self, steps: int | None = None) -> bool:
        """Press Run: advance ``steps`` (default: the controller; 0 = until paused) in the background."""
        if self.runner.running or not self._prepare():
            return False
        steps = self.controls.steps.value if steps is None else steps
        return self.runner.run(steps or None)

    def step(self) -> bool:
        """Press Step: one sweep (Nt steps) in the background."""
        if self.runner.running or not self._prepare():
            return False
        return self.runner.step()

    def pause(self, wait: bool = False) -> None:
        """Press Pause: stop after the sweep in progress."""
        self.runner.pause(wait=wait, timeout=60 if wait else None)

    def reset(self) -> None:
        """Press Reset: pause, then back to n = 0."""
        self.runner.reset()
        self.live.refresh()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the run in progress ends; True if it has."""
        return self.runner.wait(timeout)

    def _on_state(self, state: str, message: str) -> None:
        running = state in ("running", "compiling")
        self.controls.lock(running)
        text = {"compiling": "⏳ ", "running": "▶ running", "paused": "⏸ ", "done": "✓ ",
                "idle": "", "error": "✗ "}.get(state, "") + message
        self.controls.status.value = f"<b>{state}</b> {text if state != 'running' else ''}"
        if state == "error":
            self.controls.show_message(message)
