"""A Maxwell scene from a file: ``diamondlab run --equation maxwell --scene FILE.json`` (or ``.toml``).

Contract
--------
:func:`read_scene` reads a JSON (or TOML) file and :func:`parse_scene`
turns its mapping into the objects of :mod:`diamondlab.maxwell`, checking
every value before any work: an error is a ``ValueError`` that names the
key path (``materials[1].medium.wp must be a number >= 0; got -1``).  The
keys, all optional::

    {"shape": [24, 24, 24], "order": 2, "steps": 200, "courant": 0.5, "pml": 4,
     "periodic": ["y", "z"], "view": "Ez",
     "waveform": {"kind": "gaussian", "frequency": 0.1, "fwidth": 0.05},
     "materials": [
       {"shape": "sphere", "center": [12, 12, 12], "radius": 4,
        "medium": {"kind": "drude", "eps_inf": 1.0, "wp": 0.6, "gamma": 0.02}},
       {"shape": "box", "lo": [0, 0, 0], "hi": [4, 4, 4], "medium": {"kind": "dielectric", "eps": 2.25}},
       {"shape": "slab", "axis": "z", "lo": 3, "hi": 5, "medium": "pec"},
       {"shape": "cylinder", "center": [8, 8, 8], "radius": 2, "axis": "z", "height": 6,
        "medium": {"kind": "dielectric", "eps": 4, "mu": 1, "sigma": 0.01}}],
     "sources": [{"type": "dipole", "position": [6, 12, 12], "component": "Ez", "amplitude": 1.0,
                  "waveform": {"kind": "ricker", "frequency": 0.08}}],
     "probes": [{"position": [16, 12, 12], "component": "Ez"}]}

Media: ``dielectric`` (``eps``, ``mu``, ``sigma``), ``drude`` (``eps_inf``,
``wp``, ``gamma``, ``sigma``) and ``pec`` (also the string ``"pec"``).
Waveforms: ``gaussian`` (``frequency``, ``fwidth``, ``cutoff``), ``ricker``
(``frequency``), ``cw`` (``frequency``, ``ramp``).  ``pml`` is a width in
cells or ``{"width", "grading", "alpha_max", "sigma_ratio", "axes"}`` (``axes``:
the axes whose faces carry it, e.g. ``"x"``; default every axis that is not
periodic).  ``periodic``: the periodic axes, ``["y", "z"]`` or ``"yz"``
(:mod:`diamondlab.engine.equations.maxwell_plan`).  The top-level
``waveform`` is the one of every dipole without its own (and of the command
line's ``--dipole``).  A source of ``"type": "planewave"`` is handed to
``diamondlab.maxwell.sources.PlaneWave`` where this version has one.
Unknown keys are errors (a misspelt key would be silently ignored).
NumPy only.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from diamondlab.maxwell import sources as _sources
from diamondlab.maxwell.boundaries import CPML
from diamondlab.maxwell.materials import PEC, Box, Cylinder, Dielectric, Drude, Slab, Sphere
from diamondlab.maxwell.sources import COMPONENTS, ContinuousWave, Dipole, GaussianPulse, Probe, Ricker

__all__ = ["SCENE_KEYS", "parse_scene", "read_scene"]

#: The top-level keys of a scene.
SCENE_KEYS = (
    "shape", "order", "steps", "courant", "pml", "periodic", "view", "waveform", "materials", "sources",
    "probes",
)  # fmt: skip

_AXES = ("x", "y", "z")


class _Keys:
    """One mapping of the scene at ``path``: its values read and checked, each error naming its key path."""

    def __init__(self, value, path: str, allowed):
        if not isinstance(value, dict):
            raise ValueError(f"{path or 'the scene'} must be a table of keys ({', '.join(allowed)}); got "
                             f"{_what(value)}")
        unknown = [k for k in value if k not in allowed]
        if unknown:
            raise ValueError(f"{self._at(path, unknown[0])} is not a key here (known: {', '.join(allowed)})")
        self.value, self.path = value, path

    @staticmethod
    def _at(path: str, key) -> str:
        return f"{path}.{key}" if path else str(key)

    def at(self, key: str) -> str:
        return self._at(self.path, key)

    def has(self, key: str) -> bool:
        return key in self.value

    def raw(self, key: str, default=None, required: bool = False):
        if key not in self.value:
            if required:
                raise ValueError(f"{self.at(key)} is missing (required)")
            return default
        return self.value[key]

    def number(self, key: str, default=None, low: float = -math.inf, required: bool = False):
        v = self.raw(key, default, required)
        if v is default and key not in self.value:
            return v
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < low:
            bound = "" if low == -math.inf else f" >= {low:g}"
            raise ValueError(f"{self.at(key)} must be a number{bound}; got {_what(v)}")
        return v

    def integer(self, key: str, default=None, low: int = 0, required: bool = False):
        v = self.raw(key, default, required)
        if v is default and key not in self.value:
            return v
        if isinstance(v, bool) or not isinstance(v, int) or v < low:
            raise ValueError(f"{self.at(key)} must be a whole number >= {low}; got {_what(v)}")
        return v

    def choice(self, key: str, choices, default=None, required: bool = False):
        v = self.raw(key, default, required)
        if key in self.value and v not in choices:
            raise ValueError(f"{self.at(key)} must be one of {', '.join(map(str, choices))}; got {_what(v)}")
        return v

    def triple(self, key: str, integers: bool = False, required: bool = True, low: float = -math.inf):
        v = self.raw(key, None, required)
        if v is None and key not in self.value:
            return None
        kind = int if integers else (int, float)
        if (not isinstance(v, list) or len(v) != 3
                or any(isinstance(c, bool) or not isinstance(c, kind) or not math.isfinite(c) or c < low
                       for c in v)):
            what = "whole numbers (cells)" if integers else "numbers (cells)"
            bound = "" if low == -math.inf else f" >= {low:g}"
            raise ValueError(f"{self.at(key)} must be a list of three {what}{bound}; got {_what(v)}")
        return tuple(v)

    def items(self, key: str) -> list:
        v = self.raw(key, [])
        if not isinstance(v, list):
            raise ValueError(f"{self.at(key)} must be a list; got {_what(v)}")
        return v


def _what(value) -> str:
    plain = isinstance(value, (dict, list, str, int, float, bool, type(None)))
    text = json.dumps(value) if plain else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _made(path: str, make):
    """``make()``, its ValueError or TypeError prefixed with ``path`` (a check the reader did not make)."""
    try:
        return make()
    except (ValueError, TypeError) as err:
        raise ValueError(f"{path}: {err}") from None


_MEDIUM_KEYS = {"dielectric": ("eps", "mu", "sigma"), "drude": ("eps_inf", "wp", "gamma", "sigma"), "pec": ()}
#: (key, lowest value) of each number of a medium
_MEDIUM_LOWS = {"eps": 1.0, "mu": 1.0, "sigma": 0.0, "eps_inf": 1.0, "wp": 0.0, "gamma": 0.0}


def _medium(value, path: str):
    if value == "pec":
        return PEC
    if isinstance(value, str):
        raise ValueError(f"{path} must be \"pec\" or a table with a kind ({', '.join(_MEDIUM_KEYS)}); got "
                         f"{_what(value)}")
    if not isinstance(value, dict):
        raise ValueError(f"{path} must be a table with a kind ({', '.join(_MEDIUM_KEYS)}); got "
                         f"{_what(value)}")
    kind = _Keys(value, path, ("kind", *{k for ks in _MEDIUM_KEYS.values() for k in ks})).choice(
        "kind", tuple(_MEDIUM_KEYS), required=True)
    keys = _Keys(value, path, ("kind", *_MEDIUM_KEYS[kind]))
    if kind == "pec":
        return PEC
    numbers = {k: keys.number(k, low=_MEDIUM_LOWS[k]) for k in _MEDIUM_KEYS[kind] if keys.has(k)}
    return _made(path, lambda: (Dielectric if kind == "dielectric" else Drude)(**numbers))


_OBJECT_KEYS = {
    "sphere": ("center", "radius"), "box": ("lo", "hi"), "slab": ("axis", "lo", "hi"),
    "cylinder": ("center", "radius", "axis", "height"),
}  # fmt: skip


def _object(value, path: str):
    kind = _Keys(value, path, ("shape", "medium", *{k for ks in _OBJECT_KEYS.values() for k in ks})).choice(
        "shape", tuple(_OBJECT_KEYS), required=True)
    keys = _Keys(value, path, ("shape", "medium", *_OBJECT_KEYS[kind]))
    medium = _medium(keys.raw("medium", required=True), keys.at("medium"))
    if kind == "sphere":
        args = {"center": keys.triple("center"), "radius": keys.number("radius", low=0, required=True)}
        return _made(path, lambda: Sphere(medium=medium, **args))
    if kind == "box":
        args = {"lo": keys.triple("lo"), "hi": keys.triple("hi")}
        return _made(path, lambda: Box(medium=medium, **args))
    if kind == "slab":
        args = {"axis": keys.choice("axis", _AXES, required=True), "lo": keys.number("lo", required=True),
                "hi": keys.number("hi", required=True)}
        return _made(path, lambda: Slab(medium=medium, **args))
    args = {"center": keys.triple("center"), "radius": keys.number("radius", low=0, required=True),
            "axis": keys.choice("axis", _AXES, default="z"), "height": keys.number("height", low=0)}
    return _made(path, lambda: Cylinder(medium=medium, **args))


_WAVEFORM_KEYS = {"gaussian": ("frequency", "fwidth", "cutoff"), "ricker": ("frequency",),
                  "cw": ("frequency", "ramp")}


def waveform(value, path: str):
    """A waveform from its table (``kind``: gaussian, ricker, cw)."""
    kind = _Keys(value, path, ("kind", "frequency", "fwidth", "cutoff", "ramp")).choice(
        "kind", tuple(_WAVEFORM_KEYS), required=True)
    keys = _Keys(value, path, ("kind", *_WAVEFORM_KEYS[kind]))
    frequency = keys.raw("frequency", required=True)
    if isinstance(frequency, bool) or not isinstance(frequency, (int, float)) or not 0 < frequency < math.inf:
        raise ValueError(f"{keys.at('frequency')} must be a number > 0; got {_what(frequency)}")
    if kind == "gaussian":
        fwidth = keys.number("fwidth", default=frequency / 2, low=0)
        cutoff = keys.number("cutoff", default=5.0, low=0)
        return _made(path, lambda: GaussianPulse(frequency, fwidth, cutoff))
    if kind == "ricker":
        return _made(path, lambda: Ricker(frequency))
    ramp = keys.number("ramp", default=5.0, low=0)
    return _made(path, lambda: ContinuousWave(frequency, ramp))


def _source(value, path: str, default_waveform):
    if isinstance(value, dict) and value.get("type") == "planewave":
        return _plane_wave(value, path, default_waveform)
    keys = _Keys(value, path, ("type", "position", "component", "amplitude", "waveform"))
    keys.choice("type", ("dipole", "planewave"), default="dipole")
    position = keys.triple("position", integers=True)
    component = keys.choice("component", COMPONENTS[:3], default="Ez")
    amplitude = keys.number("amplitude", default=1.0)
    wave = waveform(keys.raw("waveform"), keys.at("waveform")) if keys.has("waveform") else default_waveform
    if wave is None:
        raise ValueError(f"{keys.at('waveform')} is missing (required: no top-level waveform, --frequency or "
                         "--fwidth gives one)")
    return _made(path, lambda: Dipole(position, component, wave, amplitude))


def _plane_wave(value, path: str, default_waveform):
    """A TFSF plane wave, where this version of diamondlab has one (keys handed to ``PlaneWave``)."""
    plane_wave = getattr(_sources, "PlaneWave", None)
    if plane_wave is None:
        raise ValueError(f"{path}.type: 'planewave' sources are not in this version of diamondlab (dipoles "
                         "only)")
    args = {k: v for k, v in value.items() if k != "type"}
    if "waveform" in args:
        args["waveform"] = waveform(args["waveform"], f"{path}.waveform")
    elif default_waveform is not None:
        args["waveform"] = default_waveform
    return _made(path, lambda: plane_wave(**args))


def _probe(value, path: str):
    keys = _Keys(value, path, ("position", "component"))
    position = keys.triple("position", integers=True)
    component = keys.choice("component", COMPONENTS, default="Ez")
    return _made(path, lambda: Probe(position, component))


def _pml(value, path: str):
    if isinstance(value, dict):
        keys = _Keys(value, path, ("width", "grading", "alpha_max", "sigma_ratio", "axes"))
        width = keys.integer("width", required=True)
        numbers = {k: keys.number(k, low=0) for k in ("grading", "alpha_max", "sigma_ratio") if keys.has(k)}
        if keys.has("axes"):
            numbers["axes"] = _axes(keys.raw("axes"), keys.at("axes"))
        return _made(path, lambda: CPML(width, **numbers))
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{path} must be a width in cells >= 0 or a table (width, grading, alpha_max, "
                         f"sigma_ratio); got {_what(value)}")
    return CPML(value)


def _axes(value, path: str) -> str:
    """Axes as ``"yz"`` from ``"yz"`` or ``["y", "z"]`` (each of x, y, z at most once)."""
    items = list(value) if isinstance(value, str) else value
    bad = not isinstance(items, list) or any(not isinstance(a, str) or a not in _AXES for a in items)
    if bad or not items or len(set(items)) != len(items):
        raise ValueError(f"{path} must name axes among x, y, z once each (\"yz\" or [\"y\", \"z\"]); got "
                         f"{_what(value)}")
    return "".join(items)


def parse_scene(scene: dict, default_waveform=None) -> dict:
    """The scene's objects: a dict of the keys given (:data:`SCENE_KEYS`), ``materials``, ``sources``
    and ``probes`` as lists of diamondlab objects, ``pml`` a :class:`CPML`, ``waveform`` the default one.

    ``default_waveform``: the waveform of dipoles without one (the command line's ``--frequency``),
    before the scene's own top-level ``waveform``.

    >>> s = parse_scene({"materials": [{"shape": "sphere", "center": [8, 8, 8], "radius": 2,
    ...                                 "medium": {"kind": "drude", "wp": 0.5}}], "pml": 3})
    >>> type(s["materials"][0].medium).__name__, s["pml"].width
    ('Drude', 3)
    >>> parse_scene({"materials": [{"shape": "sphere", "center": [8, 8, 8], "radius": 2,
    ...                             "medium": {"kind": "drude", "wp": -1}}]})
    Traceback (most recent call last):
    ...
    ValueError: materials[0].medium.wp must be a number >= 0; got -1
    """
    keys = _Keys(scene, "", SCENE_KEYS)
    out = {}
    if keys.has("shape"):
        out["shape"] = keys.triple("shape", integers=True, low=1)
    for name in ("order", "steps"):
        if keys.has(name):
            out[name] = keys.integer(name, low=1 if name == "order" else 0)
    if keys.has("courant"):
        out["courant"] = keys.number("courant", low=0)
    if keys.has("view"):
        out["view"] = keys.choice("view", COMPONENTS)
    if keys.has("pml"):
        out["pml"] = _pml(keys.raw("pml"), "pml")
    if keys.has("periodic"):
        out["periodic"] = _axes(keys.raw("periodic"), "periodic")
    wave = waveform(keys.raw("waveform"), "waveform") if keys.has("waveform") else None
    out["waveform"] = default_waveform or wave
    if keys.has("materials"):
        out["materials"] = [_object(v, f"materials[{i}]") for i, v in enumerate(keys.items("materials"))]
    if keys.has("sources"):
        out["sources"] = [_source(v, f"sources[{i}]", out["waveform"])
                          for i, v in enumerate(keys.items("sources"))]
    if keys.has("probes"):
        out["probes"] = [_probe(v, f"probes[{i}]") for i, v in enumerate(keys.items("probes"))]
    return out


def read_scene(path) -> dict:
    """The mapping of a scene file: JSON, or TOML for a ``.toml`` name (a ValueError naming the file)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ValueError(f"cannot read it ({getattr(err, 'strerror', None) or err})") from None
    if path.suffix.lower() == ".toml":
        try:
            import tomllib
        except ImportError:  # Python 3.10
            raise ValueError("a TOML scene needs Python 3.11 or later: write it as JSON") from None
        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as err:
            raise ValueError(f"not valid TOML: {err}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"not valid JSON: {err.msg} at line {err.lineno}, column {err.colno}") from None
