"""Wavefield snapshots every k steps: in memory, or on disk as ``.npz`` and VTK image data.

Contract
--------
A :class:`Snapshots` collector is handed the current field whenever the
simulation's clock reaches a multiple of ``every`` steps (the simulation
shortens DiamondTorre sweeps so that it stops exactly there: with ``every``
smaller than ``Nt`` every sweep is ``every`` steps tall, which costs
locality).  Without a ``directory`` the snapshots stay in memory as
``(step, array)`` pairs; with one, each is written atomically, named
``snapshot_{step:07d}.npz`` (arrays ``field``, ``step``, ``time``,
``spacing``) and/or ``.vti`` (VTK ImageData with point data ``u``, origin 0
and the grid spacing; read by ParaView and PyVista).  With a ``component``
(a Maxwell run's view, e.g. ``"Ez"``) the ``.vti`` point data takes its
name and the ``.npz`` holds it as ``component``.  A run interrupted by
the user keeps every snapshot already written.  Each file is verified
before it is renamed into place (the ``.npz`` reopened, the ``.vti`` read
back to its closing tag: VTK's writer does not raise on a full disk); one
that fails raises an ``OSError`` naming it, notes it in ``failed`` and
leaves no file.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from diamondlab.engine.outputs.io import atomic_path, write_atomically
from diamondlab.files import npz_verifier, vti_verifier

__all__ = ["FORMATS", "Snapshots", "write_vti"]

FORMATS = ("npz", "vti")


def _stop_first() -> None:
    """An import failed: where a stop signal waits, it is the stop (never a missing package)."""
    from diamondlab.engine.run.interrupts import raise_if_stopped

    raise_if_stopped()


def write_vti(path, field: np.ndarray, spacing: float, name: str = "u") -> Path:
    """Write ``field`` (x, y, z) as VTK ImageData ``.vti`` atomically (needs pyvista)."""
    try:
        import pyvista as pv
    except ImportError as err:
        _stop_first()
        raise RuntimeError(
            "VTK output (.vti) needs pyvista: pip install 'diamondlab[viz]', or use format 'npz'"
        ) from err
    grid = pv.ImageData(dimensions=field.shape, spacing=(spacing,) * 3, origin=(0.0, 0.0, 0.0))
    grid.point_data[name] = np.asarray(field, dtype=np.float32).ravel(order="F")
    with atomic_path(path, suffix=".vti", verify=vti_verifier()) as tmp:
        grid.save(tmp)
    return Path(path)


class Snapshots:
    """Collect a snapshot every ``every`` steps, to memory or to ``directory``.

    Parameters
    ----------
    every : int
        Cadence in steps (>= 1).
    directory : path, optional
        Where to write files; in memory when omitted.
    formats : sequence of {"npz", "vti"}
        File formats when writing to disk.
    component : str, optional
        The field component the snapshots show (Maxwell's view); none for the acoustic ``u``.
    """

    def __init__(self, every: int, directory=None, formats=("npz",), component: str | None = None):
        if isinstance(every, bool) or not isinstance(every, (int, np.integer)) or every < 1:
            raise ValueError(f"snapshot_every must be an int >= 1 steps; got {every!r}")
        formats = (formats,) if isinstance(formats, str) else tuple(formats)
        unknown = [f for f in formats if f not in FORMATS]
        if unknown or not formats:
            raise ValueError(f"snapshot formats must be among {FORMATS}; got {formats}")
        self.every = int(every)
        self.directory = None if directory is None else Path(directory)
        self.formats = formats
        self.component = component
        self.frames: list[tuple[int, np.ndarray]] = []
        self.files: list[Path] = []
        self.failed: tuple[Path, OSError] | None = None
        self.last_step: int | None = None
        if self.directory is not None and "vti" in formats:  # the folder is made at the first snapshot
            try:
                import pyvista  # noqa: F401
            except ImportError as err:
                _stop_first()
                raise RuntimeError(
                    "VTK snapshots (.vti) need pyvista: pip install 'diamondlab[viz]', or use 'npz'"
                ) from err

    def due(self, step: int) -> bool:
        return step % self.every == 0

    def steps_to_next(self, step: int) -> int:
        """Steps from ``step`` to the next snapshot time (``every`` when ``step`` is one)."""
        return self.every - step % self.every

    def take(self, step: int, time: float, field: np.ndarray, spacing: float) -> None:
        """Record the field at ``step``."""
        self.last_step = step
        if self.directory is None:
            self.frames.append((step, field))
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        stem = self.directory / f"snapshot_{step:07d}"
        record = {"field": field, "step": np.int64(step), "time": np.float64(time),
                  "spacing": np.float64(spacing)}  # fmt: skip
        if self.component is not None:
            record["component"] = np.str_(self.component)
        writers = {
            "npz": lambda path: write_atomically(path, lambda fh: np.savez(fh, **record),
                                                 verify=npz_verifier(record)),
            "vti": lambda path: write_vti(path, field, spacing, self.component or "u"),
        }  # fmt: skip
        for fmt in self.formats:
            path = Path(f"{stem}.{fmt}")
            try:
                self.files.append(writers[fmt](path))
            except OSError as err:
                self.failed = (path, err)
                raise
