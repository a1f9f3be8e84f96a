"""API coverage: every module states its public names, every name exists, every callable is documented."""

import importlib
import inspect
import pkgutil

import pytest

import diamondlab

MODULES = sorted(m.name for m in pkgutil.walk_packages(diamondlab.__path__, "diamondlab.")
                 if not m.name.split(".")[-1].startswith("_"))


@pytest.mark.parametrize("name", MODULES)
def test_public_names_exist_and_are_documented(name):
    module = importlib.import_module(name)
    assert module.__doc__ and module.__doc__.strip(), f"{name} has no module docstring"
    public = getattr(module, "__all__", None)
    assert public is not None, f"{name} has no __all__"
    missing = [n for n in public if not hasattr(module, n)]
    assert not missing, f"{name}.__all__ names what it lacks: {missing}"
    undocumented = [
        n for n in public
        if (inspect.isfunction(obj := getattr(module, n)) or inspect.isclass(obj)) and not inspect.getdoc(obj)
    ]  # fmt: skip
    assert not undocumented, f"{name}: no docstring for {undocumented}"
