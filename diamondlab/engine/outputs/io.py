"""Atomic files: run records as ``.npz`` that another code can rerun.

Contract
--------
:func:`write_atomically` and :func:`atomic_path` (from :mod:`diamondlab.files`)
write through a temporary file in the target's folder and rename it into
place, so a reader never sees a half-written file and an interrupted write
leaves the old file (or none).
:func:`save_run` stores the two initial layers, the two final layers and
the parameters (order, Courant number, steps, shape, spacing, velocity,
dt, stencil weights and the float32 update coefficients); with a velocity
model or a sponge also the per-cell ``kappa`` (K) and ``damp`` (s) arrays
and the model, and with sources or receivers what every source cell adds at
every step, the receiver cells with their weights, and the traces: enough
to rerun the problem in another code.  :func:`load_run` reads a record's
parameters and small arrays at once and each large array only when it is
used (:class:`RunRecord`).

Before a run, :func:`check_output_file` and :func:`check_output_dir` check
that each output can be made (its folder writable, every name within the
file system's ``NAME_MAX``) and :func:`check_free_space` that the outputs
planned fit the free space of their file systems.  Every file is verified
before it is renamed into place (:func:`diamondlab.files.npz_verifier`).
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
import zipfile
import zlib
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from diamondlab.files import atomic_path, npz_verifier, write_atomically
from diamondlab.numerics import stencil_weights

__all__ = [
    "LAZY_BYTES",
    "RECORD_KEYS",
    "RunRecord",
    "atomic_path",
    "check_free_space",
    "check_output_dir",
    "check_output_file",
    "load_run",
    "save_run",
    "write_atomically",
]

#: Arrays every run record holds (what ``--initial`` needs to continue it).
RECORD_KEYS = ("final_prev", "final_curr", "order", "courant", "steps", "shape", "spacing", "velocity", "dt")


def _probe(folder: Path, what: str) -> None:
    """Create and remove a temporary file in ``folder`` (which must exist) or raise a ValueError."""
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".diamondlab-probe.", suffix=".tmp")
        os.close(fd)
        os.unlink(tmp)
    except OSError as err:
        raise ValueError(f"{what}: cannot write in {folder} ({err.strerror or err})") from None


def _existing_ancestor(path: Path, what: str) -> Path:
    """The nearest existing ancestor of ``path``; a ValueError if it is not a folder."""
    for parent in path.absolute().parents:
        if parent.exists():
            if not parent.is_dir():
                raise ValueError(f"{what}: {parent} is a file, not a folder")
            return parent
    raise ValueError(f"{what}: no folder of {path} exists")  # pragma: no cover - "/" always exists


def _check_names(path: Path, ancestor: Path, what: str) -> None:
    """Every component of ``path`` below ``ancestor`` (which exists) must fit its file system's NAME_MAX."""
    try:
        limit = os.pathconf(ancestor, "PC_NAME_MAX")
    except (OSError, ValueError):
        limit = 255
    for part in path.absolute().relative_to(ancestor).parts:
        size = len(os.fsencode(part))
        if size > limit:
            short = part if len(part) <= 40 else f"{part[:20]}...{part[-12:]}"
            raise ValueError(
                f"{what}: the name {short!r} is {size} bytes, longer than the {limit} the file system of "
                f"{ancestor} allows ({errno.errorcode[errno.ENAMETOOLONG]}): give a shorter name"
            )


def check_output_file(path, what: str) -> Path:
    """Check, before any work, that the file ``path`` can be written (its folder made); return it.

    Nothing is created: the nearest existing folder must take a new file.
    ``what`` names the option in the messages (e.g. ``"--save run.npz"``).

    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> check_output_file(folder / "a" / "run.npz", "--save").name
    'run.npz'
    >>> check_output_file(folder, "--save")
    Traceback (most recent call last):
    ...
    ValueError: --save: ... is a folder; give a file name
    """
    path = Path(path)
    try:
        if path.is_dir():
            raise ValueError(f"{what}: {path} is a folder; give a file name")
    except OSError:  # e.g. a name too long to look up: said below
        pass
    ancestor = _existing_ancestor(path, what)
    _check_names(path, ancestor, what)
    _probe(ancestor, what)
    return path


def check_output_dir(path, what: str) -> Path:
    """Check, before any work, that files can be written in the folder ``path`` (made if missing)."""
    path = Path(path)
    try:
        if path.exists() and not path.is_dir():
            raise ValueError(f"{what}: {path} is a file, not a folder")
        exists = path.is_dir()
    except OSError:
        exists = False
    ancestor = path if exists else _existing_ancestor(path, what)
    if not exists:
        _check_names(path, ancestor, what)
    _probe(ancestor, what)
    return path


def _gib(n: int) -> str:
    return f"{n / 2**30:.2f} GiB" if n >= 2**28 else f"{n / 2**20:.1f} MiB"


def check_free_space(planned, usage=None) -> None:
    """Raise a ``ValueError`` when the outputs ``planned`` do not fit the free space of their file systems.

    ``planned``: ``(label, path, bytes)`` per output (e.g. ``("--save run.npz", "run.npz", 2**30)``);
    outputs on one file system are added up.  ``usage`` is :func:`shutil.disk_usage` (tests replace it).

    >>> check_free_space([("--save a.npz", "a.npz", 10**18)])
    Traceback (most recent call last):
    ...
    ValueError: the outputs need about 931322574.62 GiB on the file system of ... (--save a.npz ...) but ...
    """
    groups: dict[int, list] = {}
    for label, path, size in planned:
        folder = Path(path).absolute()
        while not folder.exists():
            folder = folder.parent
        groups.setdefault(folder.stat().st_dev, []).append((label, folder, int(size)))
    for items in groups.values():
        need = sum(size for _, _, size in items)
        free = (usage or shutil.disk_usage)(items[0][1]).free
        if need > free:
            parts = ", ".join(f"{label} {_gib(size)}" for label, _, size in items)
            raise ValueError(
                f"the outputs need about {_gib(need)} on the file system of {items[0][1]} ({parts}) but "
                f"{_gib(free)} are free: free some space, write elsewhere (--out, --save), or write less "
                "(a larger --snapshot-every, fewer --steps)"
            )


def _device_name(backend: str) -> str:
    """The device a record was made on: the GPU's name from the driver, else the CPU's model."""
    if backend == "cuda":
        from diamondlab.devices import current_gpu

        gpu = current_gpu()
        if gpu is not None:
            return gpu.name
        return "CUDA simulator"
    from diamondlab.caches import cpu_description

    return cpu_description()["model"]


def save_run(path, sim, initial: tuple[np.ndarray, np.ndarray], first_step: int = 0) -> Path:
    """Write ``path`` (``.npz``) with the layers at ``first_step`` (``initial``) and now, and the parameters.

    ``steps`` in the record is the number of steps between the two pairs of
    layers; ``first_step`` the time level of ``initial_curr``.
    """
    prev, curr = sim.fields
    p = sim.params
    record = {
        "initial_prev": initial[0],
        "initial_curr": initial[1],
        "final_prev": prev,
        "final_curr": curr,
        "order": np.int64(p.order),
        "courant": np.float64(p.courant),
        "steps": np.int64(sim.time_step - first_step),
        "first_step": np.int64(first_step),
        "shape": np.array(sim.shape, dtype=np.int64),
        "spacing": np.float64(p.spacing),
        "velocity": np.float64(p.velocity),
        "dt": np.float64(p.dt),
        "stencil_weights": stencil_weights(p.order),
        "update_coefficients": p.coefficients,
        "algorithm": np.str_(sim.algorithm),
        "backend": np.str_(sim.backend_name),
        "device": np.str_(_device_name(sim.backend_name)),
        "size": np.int64(sim.size),
        "nt": np.int64(sim.nt),
        "layout": np.str_(
            "arrays are (x, y, z); levels n-1 and n; u^{n+1} = 2u^n - u^{n-1} + courant^2 * "
            "lap_NO(u^n) with zero values outside the grid"
        ),
    }
    physics = sim.physics
    record.update(physics.record())
    if physics.velocity_model is not None:
        record["velocity_model"] = physics.velocity_model
    if physics.velocity_model is not None or physics.sponge:
        # the per-cell update: ((2u - a u-) + K lap u) * r with a = 1 - s and r = 1 / (1 + s) in
        # float32, lap with bare weights (materialised here only: the engines keep numbers and profiles)
        medium = physics.medium(p.dt)
        record["kappa"] = medium.kappa_array()
        record["damp"] = medium.damping_array()
    if physics.has_points:  # what each source cell adds at every step, and where receivers sample
        record["source_cells"] = physics.source_points.cells
        samples = physics.source_samples(first_step, sim.time_step - first_step, p.dt)
        record["source_samples"] = samples[: len(physics.source_points)]
        record["receiver_cells"] = physics.receiver_points.cells
        record["receiver_weights"] = physics.receiver_points.weights
        record["receiver_owner"] = physics.receiver_points.owner
        record["traces"] = sim.traces
    return write_atomically(path, lambda fh: np.savez(fh, **record), verify=npz_verifier(record))


#: Arrays of a record from this size on (bytes, uncompressed) are read when first used, not at once.
LAZY_BYTES = 1 << 20

_READ_ERRORS = (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error)


class RunRecord(Mapping):
    """A run record read by :func:`load_run`: a read-only mapping of its arrays and scalars.

    The parameters and the small arrays are read at once; an array of
    :data:`LAZY_BYTES` or more (a field, a velocity model, K per cell) is read
    from the file when it is first asked for, then kept.  Continuing a run
    thus reads the two layers it continues from, not the two it started from.
    An array that cannot be read raises a ``ValueError`` that names it.
    """

    def __init__(self, path, values: dict, keys: list[str]):
        self.path = Path(path)
        self._values = values
        self._keys = list(keys)

    def __getitem__(self, key):
        if key in self._values:
            return self._values[key]
        if key not in self._keys:
            raise KeyError(key)
        try:
            with np.load(self.path, allow_pickle=False) as data:
                value = data[key]
        except _READ_ERRORS as err:
            raise ValueError(f"{self.path}: cannot read {key!r} of the run record ({err})") from None
        self._values[key] = value
        return value

    def __iter__(self):
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def loaded(self) -> list[str]:
        """The keys read from the file so far."""
        return [k for k in self._keys if k in self._values]


def load_run(path) -> RunRecord:
    """Read a record written by :func:`save_run`: a mapping of its arrays and scalars (:class:`RunRecord`).

    Anything that is not such a record (a missing, truncated or corrupt
    file, another ``.npz``) raises a ``ValueError`` that says so; its large
    arrays are read only when used.
    """
    try:
        data = np.load(path, allow_pickle=False)
        if not hasattr(data, "files"):
            raise ValueError(f"a single array of shape {np.shape(data)}, not an .npz record")
        with data:
            sizes = {info.filename.removesuffix(".npy"): info.file_size for info in data.zip.infolist()}
            keys = list(data.files)
            out = {k: data[k] for k in keys if sizes.get(k, 0) < LAZY_BYTES}
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file") from None
    except _READ_ERRORS as err:
        raise ValueError(f"{path}: not a run record written by --save / save_run ({err})") from None
    if missing := [k for k in RECORD_KEYS if k not in keys]:
        raise ValueError(f"{path}: not a run record written by --save / save_run (missing {missing})")
    for key, default in (("first_step", 0), ("sponge", 0)):
        if key not in keys:
            out[key] = default
            keys.append(key)
    for key, kinds, convert, what in (
        *((k, "iu", int, "one integer") for k in ("order", "steps", "first_step", "size", "nt", "sponge")),
        *((k, "iuf", float, "one number") for k in ("courant", "spacing", "velocity", "dt")),
    ):
        if key in out:
            value = np.asarray(out[key])
            if value.ndim or value.dtype.kind not in kinds:
                raise ValueError(f"{path}: not a consistent run record: {key!r} must be {what}; got "
                                 f"shape {value.shape}, dtype {value.dtype}")
            out[key] = convert(value)
    shape = np.asarray(out["shape"])
    if shape.shape != (3,) or shape.dtype.kind not in "iu":
        raise ValueError(f"{path}: not a consistent run record: 'shape' must be three integers; got shape "
                         f"{shape.shape}, dtype {shape.dtype}")
    out["shape"] = tuple(int(n) for n in shape)
    record = RunRecord(path, out, keys)
    _check_points(record)
    return record


#: The arrays of a record's sources and receivers: key -> (columns or None for one value a point, kind)
_POINT_ARRAYS = {
    "source": {"source_position": (3, "number"), "source_units": (None, "text"),
               "source_frequency": (None, "number"), "source_amplitude": (None, "number"),
               "source_delay": (None, "number"), "source_wavelet": (None, "text")},
    "receiver": {"receiver_position": (3, "number"), "receiver_units": (None, "text")},
}  # fmt: skip


def _check_points(record: RunRecord) -> None:
    """Raise a ``ValueError`` naming the key unless the sources' and the receivers' arrays agree.

    Each of them holds one row per point (``*_position``: ``(n, 3)`` numbers;
    the others ``(n,)``, numbers or text), all or none of a kind are there,
    and a source whose wavelet is ``"samples"`` has its ``source_{i}_wavelet``
    (a 1-D array of numbers).
    """
    where = f"{record.path}: not a consistent run record:"
    for kind, arrays in _POINT_ARRAYS.items():
        present = [k for k in arrays if k in record]
        if not present:
            continue
        if missing := [k for k in arrays if k not in record]:
            raise ValueError(f"{where} {kind}s are incomplete: {present} without {missing}")
        position = np.asarray(record[f"{kind}_position"])
        if position.ndim != 2 or position.shape[1] != 3:
            raise ValueError(f"{where} '{kind}_position' must have shape (n, 3) (x, y, z of each {kind}); "
                             f"got {position.shape}")
        for key, (columns, what) in arrays.items():
            value = np.asarray(record[key])
            if value.dtype.kind not in ("iuf" if what == "number" else "US"):
                words = "numbers" if what == "number" else "text"
                raise ValueError(f"{where} {key!r} must hold {words}; got dtype {value.dtype}")
            expected = (len(position), columns) if columns else (len(position),)
            if value.shape != expected:
                raise ValueError(f"{where} {key!r} must have shape {expected} (one row per {kind} of "
                                 f"'{kind}_position'); got {value.shape}")
        for i, name in enumerate(record["source_wavelet"] if kind == "source" else ()):
            if str(name) != "samples":
                continue
            key = f"source_{i}_wavelet"
            samples = np.asarray(record[key]) if key in record else None
            if samples is None or samples.ndim != 1 or samples.dtype.kind not in "iuf":
                got = "nothing" if samples is None else f"shape {samples.shape}, dtype {samples.dtype}"
                raise ValueError(f"{where} source {i} plays a sampled wavelet, so {key!r} must be a 1-D "
                                 f"array of numbers; got {got}")
