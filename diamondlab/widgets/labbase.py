"""What every lab does the same way: its buttons from Python, its display, its status and its lifetime.

Contract
--------
:class:`LabBase` is the part that the acoustic lab
(:class:`~diamondlab.widgets.lab.Lab`) and the Maxwell lab
(:class:`~diamondlab.widgets.maxwell_lab.MaxwellLab`) share, so that both
answer the same buttons the same way.  A lab built on it has ``runner`` (a
:class:`~diamondlab.widgets.runner.BackgroundRun`), ``live`` (its view:
``refresh()``, ``close()`` and ``ended``, True when the view has ended the
run because its wave has left), ``controls`` (``run_button``,
``pause_button``, ``step_button``, ``reset_button``, ``steps``, ``status``,
``lock()``, ``show_message()``, ``widget``), ``widget`` and
``_prepare()`` (make the simulation match the controllers; False, the
reason shown in the widget, when it cannot).  Its ``__init__`` calls
:meth:`LabBase._open` first and :meth:`LabBase._opened` last.

Buttons do what they say from Python too (:meth:`LabBase.run`,
:meth:`~LabBase.pause`, :meth:`~LabBase.step`, :meth:`~LabBase.reset`), so
tests and notebooks drive a lab exactly as a user does.  Building a lab
closes the labs, of either equation, built before by the same notebook cell
(outside a notebook, or where the front end does not say which cell runs,
every lab built before): re-running the cell that builds a lab does not
keep the old lab, its figures and its fields alive (ipywidgets keeps every
widget until it is closed).  ``replace=False`` keeps them.

:func:`check_options` refuses, before a lab builds anything, an option its
equation's lab does not take: one of the other equation's lab (``panels``
naming a tab it lacks, ``courant`` or ``sponge`` for Maxwell, ``pml`` or
``scene`` for the acoustic lab) or an unknown name, with a ``ValueError``
naming the option, the equation and what its lab takes instead.
"""

from __future__ import annotations

import weakref

from diamondlab.widgets.live import close_widgets

__all__ = ["LAB_TABS", "LabBase", "check_lab_options", "check_options", "check_panels", "cited_note",
           "lab_options"]


def _cell_id() -> str | None:
    """The id of the notebook cell that is running (JupyterLab and VS Code send it), else None."""
    try:
        from IPython import get_ipython

        kernel = getattr(get_ipython(), "kernel", None)
        parent = kernel.get_parent("shell") if kernel is not None else None
        return (parent or {}).get("metadata", {}).get("cellId")
    except Exception:  # noqa: BLE001 - no kernel, or one that does not say: no cell
        return None


#: Each equation's lab's tabs.
LAB_TABS = {"acoustic": ("Run", "Shapes", "Stages", "Tuning", "Snapshot"),
            "maxwell": ("Run", "Shapes", "Stages", "Yee", "Tuning")}


def lab_options(equation: str) -> tuple:
    """The keyword arguments of ``Lab(equation=equation)``: the lab's own and the fields of its configuration
    (:class:`~diamondlab.widgets.controls.RunConfig`,
    :class:`~diamondlab.widgets.maxwell_controls.MaxwellConfig`).

    >>> acoustic, maxwell = lab_options("acoustic"), lab_options("maxwell")
    >>> "courant" in acoustic, "courant" in maxwell, "pml" in maxwell
    (True, False, True)
    """
    from dataclasses import fields

    if equation == "maxwell":
        from diamondlab.widgets.maxwell_controls import MaxwellConfig as config

        own = ("panels", "max_points", "view", "replace")
    else:
        from diamondlab.widgets.controls import RunConfig as config

        own = ("panels", "max_points", "paced", "replace", "equation")
    return own + tuple(f.name for f in fields(config))


def check_lab_options(equation: str, panels, config) -> tuple:
    """Refuse what ``Lab(equation=equation)`` does not take (:func:`check_options` on ``config``,
    :func:`check_panels` on ``panels``) before anything is built; return ``panels`` as a tuple."""
    other = "acoustic" if equation == "maxwell" else "maxwell"
    check_options(equation, config, lab_options(equation), other, lab_options(other))
    return check_panels(equation, panels, LAB_TABS[equation], other, LAB_TABS[other])


def cited_note(url: str, citation: str, paper: str, what: str):
    """The line that opens a lab's tab: ``paper`` (its ``citation``, linked to ``url``), then ``what`` the tab
    shows of it (an ``ipywidgets.HTML``)."""
    import ipywidgets as widgets

    return widgets.HTML(f"<div style='color:#555'>{paper} (<a href='{url}' target='_blank' "
                        f"style='color:#2471a3'>{citation}</a>), {what}</div>")


def check_options(equation: str, given, takes, other: str, other_takes) -> None:
    """Refuse the first name of ``given`` that the ``equation`` lab does not ``take`` (a ``ValueError``).

    ``other`` is the other equation, ``other_takes`` its lab's options: a name of those is said to be that
    lab's only; any other is unknown.  Both messages list what the ``equation`` lab takes.

    >>> check_options("maxwell", {"shape": (8, 8, 8)}, ("shape", "pml"), "acoustic", ("shape", "courant"))
    >>> check_options("maxwell", {"courant": 0.2}, ("pml",), "acoustic", ("courant",))
    Traceback (most recent call last):
    ...
    ValueError: courant is the acoustic lab's option only: Lab(equation='maxwell') takes ('pml',)
    >>> check_options("acoustic", {"colour": 1}, ("shape",), "maxwell", ("pml",))
    Traceback (most recent call last):
    ...
    ValueError: unknown option colour for Lab(equation='acoustic'), which takes ('shape',)
    """
    for name in given:
        if name in takes:
            continue
        options = tuple(sorted(takes))
        if name in other_takes:
            raise ValueError(f"{name} is the {other} lab's option only: Lab(equation={equation!r}) takes "
                             f"{options}")
        raise ValueError(f"unknown option {name} for Lab(equation={equation!r}), which takes {options}")


def check_panels(equation: str, panels, tabs, other: str, other_tabs) -> tuple:
    """``panels`` as a tuple if every name is one of ``tabs`` (the ``equation`` lab's), else a ``ValueError``
    naming ``panels``, the equation and its lab's tabs (a tab of the ``other`` lab's only is said to be so).

    >>> check_panels("maxwell", ["Run", "Yee"], ("Run", "Yee"), "acoustic", ("Run", "Snapshot"))
    ('Run', 'Yee')
    >>> check_panels("maxwell", ("Snapshot",), ("Run", "Yee"), "acoustic", ("Run", "Snapshot"))
    Traceback (most recent call last):
    ...
    ValueError: panels: 'Snapshot' is the acoustic lab's tab only: Lab(equation='maxwell') has ('Run', 'Yee')
    """
    if isinstance(panels, str) or not hasattr(panels, "__iter__"):
        raise ValueError(f"panels must be a tuple of tab names of Lab(equation={equation!r}), some of "
                         f"{tuple(tabs)}; got {panels!r}")
    panels = tuple(panels)
    for name in panels:
        if name in tabs:
            continue
        if name in other_tabs:
            raise ValueError(f"panels: {name!r} is the {other} lab's tab only: "
                             f"Lab(equation={equation!r}) has {tuple(tabs)}")
        raise ValueError(f"panels must name tabs of Lab(equation={equation!r}), some of {tuple(tabs)}; got "
                         f"{name!r}")
    return panels


class LabBase:
    """The buttons, display, status and lifetime every lab shares; see the module contract."""

    #: the labs not closed yet, of either equation (weakly: a lab nobody holds may go)
    _live: weakref.WeakSet = weakref.WeakSet()

    def _open(self, replace: bool) -> None:
        """Start building: not closed; with ``replace``, the labs built by the same cell closed."""
        self.closed = False
        self._cell = _cell_id()
        if replace:
            for old in list(LabBase._live):
                if old._cell == self._cell:
                    old.close()

    def _opened(self) -> None:
        """End building: the buttons wired to their actions, the status to the run; the lab is live."""
        c = self.controls
        for button, press in ((c.run_button, self.run), (c.pause_button, self.pause),
                              (c.step_button, self.step), (c.reset_button, self.reset)):
            button.on_click(lambda _, press=press: press())
        self.runner.on_state(self._on_state)
        LabBase._live.add(self)

    def _ipython_display_(self):
        from IPython.display import display

        display(self.widget)

    @property
    def sim(self):
        """The simulation the lab drives now."""
        return self.runner.sim

    # ------------------------------------------------------------ actions
    def _prepare(self) -> bool:  # pragma: no cover - each lab has its own
        raise NotImplementedError

    def run(self, steps: int | None = None) -> bool:
        """Press Run: advance ``steps`` (default: the controller; 0 = until paused) in the background,
        from ``n = 0`` again where the view has ended the run (its wave has left the grid)."""
        if self.closed or self.runner.running or not self._prepare():
            return False
        if self.live.ended:
            self.reset()
        steps = self.controls.steps.value if steps is None else steps
        return self.runner.run(steps or None)

    def step(self) -> bool:
        """Press Step: one sweep (Nt steps) in the background."""
        if self.closed or self.runner.running or not self._prepare():
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

    #: The attributes that hold the lab's other panels (each with a ``widget``; None where not built): closed
    #: and let go with the lab, a tuning sweep (``tuning``) stopped first.
    PANELS: tuple = ()

    def _panels(self) -> tuple:
        """The widgets of the lab's other panels (closed with it)."""
        return tuple(panel.widget for panel in (getattr(self, name, None) for name in self.PANELS)
                     if panel is not None)

    def close(self) -> None:
        """Stop the run, a tuning sweep and the worker thread, close every widget and let the simulation go
        (idempotent).

        A closed lab refuses to run; build a new one.
        """
        if self.closed:
            return
        tuning = getattr(self, "tuning", None)
        if tuning is not None:
            tuning.stop_button.click()  # a tuning sweep in the worker stops after its measurement
        self.closed = True
        LabBase._live.discard(self)
        self.runner.close()
        self.live.close()
        close_widgets(self.widget, self.controls.widget, *self._panels())
        for name in self.PANELS:  # what a closed lab still holds is small: the figures go with the panels
            setattr(self, name, None)

    def _on_state(self, state: str, message: str) -> None:
        """The run's state in the status line; the structural controllers locked while it runs."""
        self.controls.lock(state in ("running", "compiling"))
        text = {"compiling": "⏳ ", "paused": "⏸ ", "done": "✓ ", "error": "✗ "}.get(state, "") + message
        self.controls.status.value = f"<b>{state}</b> {text if state != 'running' else ''}"
        again = state in ("done", "paused") and self.live.ended
        self.controls.run_button.description = "Run again" if again else "Run"
        self.controls.run_button.tooltip = "the wave has left the grid: start again from n = 0" if again \
            else ""
        if state == "error":
            self.controls.show_message(message)
