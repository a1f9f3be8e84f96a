"""Velocity models and the absorbing (sponge) layer.

Contract
--------
A velocity model is a positive float array of the grid's shape, in (x, y, z)
order; the stability check uses its maximum and the resolution check its
minimum.  Two example models work for any shape: :func:`layered_model`
(flat layers stacked along z, the seismic convention that z points down) and
:func:`anomaly_model` (a homogeneous background with a spherical inclusion).

The sponge damps ``u_tt + eta u_t = c^2 lap u`` in a layer of ``width``
cells along every face; ``eta`` rises as ``(d / width)^2`` from 0 at the
inner edge to ``eta_max = 3 c_max ln(1 / R) / (2 width h)`` at the face
(``R`` the target reflection, 1e-2 by default: a gentler ramp reflects less
off the sponge itself; 16 cells cut the echo of a zero boundary by 25 dB in
``tests/engine/test_physics.py``).  The kernels take ``s = eta dt / 2``.
Because ``eta`` grows with the depth into the layer and the depth of a cell
is the largest of its three per-axis depths, the sponge is the maximum of
three 1D profiles (:func:`damping_profiles`), which is what the GPU engine
keeps instead of a third field.  NumPy only.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "Medium",
    "anomaly_model",
    "check_sponge_width",
    "check_velocity",
    "damped_counts",
    "damping_factors",
    "damping_profiles",
    "example_model",
    "layered_model",
    "profiles_to_array",
    "sponge_damping",
    "sponge_profiles",
]


def check_velocity(velocity, shape) -> np.ndarray:
    """Return ``velocity`` as float32 of ``shape`` or raise an error that says what is wrong.

    >>> check_velocity(np.full((2, 2, 2), 1500.0), (2, 2, 2)).dtype
    dtype('float32')
    """
    v = np.asarray(velocity)
    if v.shape != tuple(shape):
        raise ValueError(f"velocity model must have the grid's shape {tuple(shape)}; got {v.shape}")
    if not np.issubdtype(v.dtype, np.floating) and not np.issubdtype(v.dtype, np.integer):
        raise TypeError(f"velocity model must be a real array; got dtype {v.dtype}")
    if not np.all(np.isfinite(v)) or not (v > 0).all():
        bad = int((~(np.isfinite(v) & (v > 0))).sum())
        raise ValueError(f"velocity model must be finite and > 0 everywhere; {bad} cells are not")
    return v.astype(np.float32)


def layered_model(shape, velocities=(1500.0, 2000.0, 2500.0), depths=None) -> np.ndarray:
    """Flat layers along z: ``velocities[i]`` below ``depths[i-1]`` (cells); equal thickness by default.

    >>> m = layered_model((4, 4, 6), (1.0, 2.0, 3.0))
    >>> m[0, 0].tolist()
    [1.0, 1.0, 2.0, 2.0, 3.0, 3.0]
    """
    nx, ny, nz = (int(n) for n in shape)
    velocities = [float(v) for v in velocities]
    if depths is None:
        depths = [round(nz * i / len(velocities)) for i in range(1, len(velocities))]
    if len(depths) != len(velocities) - 1:
        raise ValueError("depths must give one interface fewer than there are velocities")
    profile = np.empty(nz, dtype=np.float32)
    bounds = [0, *[int(d) for d in depths], nz]
    for v, top, bottom in zip(velocities, bounds[:-1], bounds[1:], strict=True):
        profile[top:bottom] = v
    return check_velocity(np.broadcast_to(profile, (nx, ny, nz)).copy(), shape)


def anomaly_model(
    shape, background: float = 2000.0, anomaly: float = 1500.0, center=None, radius=None
) -> np.ndarray:
    """A homogeneous ``background`` with a sphere of velocity ``anomaly`` (grid units).

    >>> m = anomaly_model((9, 9, 9), 2.0, 1.0, radius=2)
    >>> float(m[4, 4, 4]), float(m[0, 0, 0])
    (1.0, 2.0)
    """
    shape = tuple(int(n) for n in shape)
    center = tuple((n - 1) / 2 for n in shape) if center is None else center
    radius = min(shape) / 6 if radius is None else radius
    axes = [np.arange(n) - c for n, c in zip(shape, center, strict=True)]
    r2 = axes[0][:, None, None] ** 2 + axes[1][None, :, None] ** 2 + axes[2][None, None, :] ** 2
    return check_velocity(np.where(r2 <= radius**2, anomaly, background), shape)


def example_model(name: str, shape) -> np.ndarray:
    """One of the shipped example models by name: ``"layered"`` or ``"anomaly"``."""
    if name == "layered":
        return layered_model(shape)
    if name == "anomaly":
        return anomaly_model(shape)
    raise ValueError(f"example model must be 'layered' or 'anomaly'; got {name!r}")


def check_sponge_width(width: int, shape) -> None:
    """Raise ``ValueError`` unless a sponge ``width`` cells thick leaves an interior in ``shape``.

    >>> check_sponge_width(8, (16, 40, 40))
    Traceback (most recent call last):
    ...
    ValueError: sponge width 8 leaves no interior in a grid of shape (16, 40, 40); use width <= 7
    """
    if isinstance(width, bool) or not isinstance(width, (int, np.integer)) or width < 1:
        raise ValueError(f"sponge width must be an int >= 1 cells; got {width!r}")
    if 2 * width >= min(shape):
        raise ValueError(
            f"sponge width {width} leaves no interior in a grid of shape {tuple(shape)}; "
            f"use width <= {(min(shape) - 1) // 2}"
        )


def sponge_profiles(
    shape, width: int, velocity_max: float, spacing: float, dt: float, reflection: float = 1e-2
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-axis float32 profiles ``(sx, sy, sz)`` of ``s = eta dt / 2`` of a sponge ``width`` cells thick.

    A cell's depth into the layer is the largest of its per-axis depths and
    ``s`` grows with depth, so the sponge's ``s`` at ``(x, y, z)`` is
    ``max(sx[x], sy[y], sz[z])`` (:func:`sponge_damping` builds that array).

    >>> sx, sy, sz = sponge_profiles((20, 12, 20), 5, 1.0, 1.0, 0.5)
    >>> sy.shape, float(sx[10]), bool(sx[0] > sx[3] > 0)
    ((12,), 0.0, True)
    """
    shape = tuple(int(n) for n in shape)
    check_sponge_width(width, shape)
    eta_max = 3.0 * velocity_max * np.log(1.0 / reflection) / (2.0 * width * spacing)
    profiles = []
    for n in shape:
        i = np.arange(n)
        depth = np.maximum(width - i, 0) + np.maximum(i - (n - 1 - width), 0)  # cells into the layer
        profiles.append((eta_max * (depth / width) ** 2 * dt / 2.0).astype(np.float32))
    return tuple(profiles)


def sponge_damping(
    shape, width: int, velocity_max: float, spacing: float, dt: float, reflection: float = 1e-2
) -> np.ndarray:
    """``s = eta dt / 2`` of a sponge ``width`` cells thick on every face (float32, 0 inside).

    The maximum of the :func:`sponge_profiles` as a 3D array (for records
    and checks; the engines keep the profiles).

    >>> s = sponge_damping((20, 20, 20), 5, 1.0, 1.0, 0.5)
    >>> float(s[10, 10, 10]), bool(s[0, 10, 10] > s[3, 10, 10] > 0)
    (0.0, True)
    """
    return profiles_to_array(sponge_profiles(shape, width, velocity_max, spacing, dt, reflection))


def profiles_to_array(profiles) -> np.ndarray:
    """The 3D ``max(sx[x], sy[y], sz[z])`` of three 1D profiles (float32).

    >>> profiles_to_array((np.float32([0, 1]), np.float32([2, 0]), np.float32([0]))).tolist()
    [[[2.0], [0.0]], [[2.0], [1.0]]]
    """
    sx, sy, sz = (np.asarray(p, dtype=np.float32) for p in profiles)
    out = np.empty((len(sx), len(sy), len(sz)), dtype=np.float32)
    np.maximum(sx[:, None, None], sy[None, :, None], out=out)
    np.maximum(out, sz[None, None, :], out=out)
    return out


def damping_profiles(damp: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-axis profiles ``(sx, sy, sz)`` with ``damp[x, y, z] == max(sx[x], sy[y], sz[z])``.

    Exact for every :func:`sponge_damping` layer; any other array raises
    ``ValueError`` (the GPU engine runs only such separable damping).

    >>> sx, sy, sz = damping_profiles(sponge_damping((12, 10, 14), 3, 1.0, 1.0, 0.5))
    >>> sx.shape, sy.shape, sz.shape, float(sx[6]), bool(sz[0] > 0)
    ((12,), (10,), (14,), 0.0, True)
    """
    damp = np.asarray(damp, dtype=np.float32)
    if damp.ndim != 3:
        raise ValueError(f"damp must be a 3D array; got shape {damp.shape}")
    sx, sy, sz = (damp.min(axis=axes) for axes in ((1, 2), (0, 2), (0, 1)))
    syz = np.maximum(sy[:, None], sz[None, :])
    for x in range(damp.shape[0]):  # one plane at a time: no second full-size array
        if not np.array_equal(np.maximum(sx[x], syz), damp[x]):
            raise ValueError(
                "damp is not the maximum of per-axis profiles (a sponge_damping layer); the CUDA "
                "engine runs only such sponges: use backend='cpu' for other damping"
            )
    return sx, sy, sz


def damping_factors(damp) -> tuple[np.ndarray, ...]:
    """``(ax, ay, az, rx, ry, rz)``: per-axis float32 profiles of ``1 - s`` and ``1 / (1 + s)``.

    ``damp`` is a 3D separable array (see :func:`damping_profiles`) or the
    three profiles ``(sx, sy, sz)`` themselves.  Both factors are monotone in
    ``s``, so a cell's ``1 - s`` is ``min(ax[x], ay[y], az[z])`` and its
    ``1 / (1 + s)`` the minimum of the ``r`` profiles, exactly (what the
    kernels use in the damped update ``((2u - a u-) + K lap) r``).

    >>> ax, ay, az, rx, ry, rz = damping_factors(sponge_profiles((8, 9, 10), 2, 1.0, 1.0, 0.5))
    >>> float(ax[4]), float(rx[4]), bool(az[0] < 1 and rz[0] < 1)
    (1.0, 1.0, True)
    """
    one = np.float32(1.0)
    if isinstance(damp, tuple):
        profiles = tuple(np.asarray(p, dtype=np.float32) for p in damp)
    else:
        profiles = damping_profiles(damp)
    return tuple(one - p for p in profiles) + tuple(one / (one + p) for p in profiles)


def damped_counts(a, r) -> np.ndarray:
    """``D[i]``: how many of the cells ``0 .. i-1`` have a damping factor (``a`` or ``r``) other than 1.

    Prefix counts of one axis's :func:`damping_factors`: a range ``i .. j`` has no damped cell when
    ``D[j + 1] == D[i]`` (the CUDA sweep's calm torres ask this in O(1)).

    >>> damped_counts(np.float32([0.5, 1, 1, 0.9]), np.ones(4, np.float32)).tolist()
    [0, 1, 1, 1, 2]
    """
    damped = (np.asarray(a) != 1) | (np.asarray(r) != 1)
    return np.concatenate([[0], np.cumsum(damped)]).astype(np.int64)


class Medium:
    """What the kernels need of the medium for one time step: ``K`` and the sponge's damping profiles.

    Parameters
    ----------
    kappa : float or array
        ``K = (c dt / h)^2``: one number for a constant velocity, a float32
        profile of length ``nz`` for a layered model (``K`` per depth, the same
        in every column), or a float32 array of the grid's shape for any other
        velocity model (the only 3D array).
    damping : (sx, sy, sz) or None
        Per-axis profiles of ``s = eta dt / 2`` (:func:`sponge_profiles`),
        the sponge being their maximum; None without a sponge.
    shape : (nx, ny, nz)
        The grid's shape.

    Notes
    -----
    ``variant`` names the kernels that run it: ``"constant"`` (a number and
    no sponge: the bare scheme), ``"sponge"`` (a number and a sponge),
    ``"layered"`` (K per depth: a GPU thread, which owns one z, keeps its K in
    a register) or ``"model"`` (K per cell).  Arrays are materialised only when
    asked (:meth:`kappa_array`, :meth:`damping_array`, for run records).

    Examples
    --------
    >>> m = Medium(0.25, sponge_profiles((16, 16, 16), 4, 1.0, 1.0, 0.5), (16, 16, 16))
    >>> m.variant, m.kappa, m.damping_array().shape
    ('sponge', 0.25, (16, 16, 16))
    >>> Medium(0.25, None, (16, 16, 16)).variant
    'constant'
    >>> Medium(np.linspace(0.1, 0.2, 16), None, (8, 8, 16)).variant
    'layered'
    """

    __slots__ = ("damping", "kappa", "shape")

    def __init__(self, kappa, damping, shape):
        self.shape = tuple(int(n) for n in shape)
        if np.ndim(kappa) == 0:
            kappa = float(kappa)
        else:
            kappa = np.asarray(kappa, dtype=np.float32)
            if kappa.shape not in (self.shape, self.shape[2:]):
                raise ValueError(
                    f"kappa must be a number, a depth profile of length {self.shape[2]} or have shape "
                    f"{self.shape}; got {kappa.shape}"
                )
        if damping is not None:
            damping = tuple(np.asarray(p, dtype=np.float32) for p in damping)
            if tuple(len(p) for p in damping) != self.shape or any(p.ndim != 1 for p in damping):
                raise ValueError(f"damping must be three 1D profiles of lengths {self.shape}")
        self.kappa = kappa
        self.damping = damping

    def cut(self, axis: int, start: int, stop: int) -> Medium:
        """The medium of the cells ``start <= index < stop`` along ``axis`` (a window, an MPI rank's slab).

        >>> m = Medium(0.25, sponge_profiles((16, 16, 16), 4, 1.0, 1.0, 0.5), (16, 16, 16))
        >>> s = m.cut(1, 4, 12)
        >>> s.shape, bool(np.array_equal(s.damping[1], m.damping[1][4:12]))
        ((16, 8, 16), True)
        """
        part = [slice(None)] * 3
        part[axis] = slice(start, stop)
        kappa = self.kappa
        if np.ndim(kappa) == 3 or (np.ndim(kappa) == 1 and axis == 2):
            kappa = kappa[tuple(part[-np.ndim(kappa):])]
        damping = None
        if self.damping is not None:
            damping = tuple(p[start:stop] if a == axis else p for a, p in enumerate(self.damping))
        shape = tuple(stop - start if a == axis else n for a, n in enumerate(self.shape))
        return Medium(kappa, damping, shape)

    def swap_xz(self) -> Medium:
        """The same medium on the grid with x and z swapped (shape ``(nz, ny, nx)``; K transposed, copied:
        a layered model's K varies along x there, so it becomes K per cell).

        >>> m = Medium(np.arange(24, dtype=np.float32).reshape(2, 3, 4), None, (2, 3, 4))
        >>> s = m.swap_xz()
        >>> s.shape, float(s.kappa[3, 2, 1]) == float(m.kappa[1, 2, 3])
        ((4, 3, 2), True)
        """
        kappa = self.kappa
        if np.ndim(kappa):
            kappa = np.ascontiguousarray(self.kappa_array().transpose(2, 1, 0))
        damping = None if self.damping is None else self.damping[::-1]
        return Medium(kappa, damping, self.shape[::-1])

    @property
    def variant(self) -> str:
        if np.ndim(self.kappa):
            return "model" if np.ndim(self.kappa) == 3 else "layered"
        return "constant" if self.damping is None else "sponge"

    def factors(self) -> tuple[np.ndarray, ...]:
        """``(ax, ay, az, rx, ry, rz)`` of :func:`damping_factors` (all ones without a sponge)."""
        profiles = self.damping or tuple(np.zeros(n, np.float32) for n in self.shape)
        return damping_factors(profiles)

    def kappa_array(self) -> np.ndarray:
        """``K`` per cell as a float32 array (materialised; for run records).

        >>> Medium(np.float32([0.1, 0.2]), None, (3, 1, 2)).kappa_array()[2, 0].tolist() == [
        ...     np.float32(0.1), np.float32(0.2)]
        True
        """
        if np.ndim(self.kappa) == 3:
            return self.kappa
        return np.ascontiguousarray(np.broadcast_to(np.float32(self.kappa), self.shape))

    def damping_array(self) -> np.ndarray:
        """``s`` per cell as a float32 array (materialised; zeros without a sponge)."""
        if self.damping is None:
            return np.zeros(self.shape, dtype=np.float32)
        return profiles_to_array(self.damping)
