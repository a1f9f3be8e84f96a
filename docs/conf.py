"""Sphinx configuration: the API reference from the docstrings, the command line, the notebooks unexecuted.

Build: ``python -m sphinx -W -b html docs docs/_build/html`` (``pip install -e ".[docs]"``).
The API pages (``docs/api/``, not committed) are written here, one per public module of
diamondlab, so that a new module is documented without editing anything; the notebooks are
copied from ``notebooks/`` without outputs (their source is ``assets/make_notebooks.py``,
which strips them) and rendered without running them.
"""

import importlib
import importlib.util
import inspect
import pkgutil
import shutil
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))  # document the tree these docs belong to

import diamondlab  # noqa: E402

project = "diamondlab"
author = "the diamondlab authors"
copyright = "2026, the diamondlab authors"
release = version = diamondlab.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
    "sphinxarg.ext",
    "myst_nb",
]
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = ["_build"]
myst_enable_extensions = ["dollarmath"]
myst_heading_anchors = 3
nb_execution_mode = "off"  # the notebooks are run by the tests (tests/test_notebooks.py), not here

napoleon_google_docstring = False
napoleon_numpy_docstring = True
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"undoc-members": True, "show-inheritance": True}
napoleon_use_ivar = True  # "Attributes" sections as fields: autodoc documents the attributes themselves
# sphinx-argparse's domain lacks resolve_any_xref, which MyST asks every domain for (a spurious warning)
suppress_warnings = ["myst.domains"]

html_theme = "alabaster"
html_title = f"diamondlab {release}"
html_static_path = []


def public_modules() -> list[str]:
    """Every public module of diamondlab (no part of its dotted name starts with ``_``)."""
    names = [m.name for m in pkgutil.walk_packages(diamondlab.__path__, "diamondlab.")
             if not any(part.startswith("_") for part in m.name.split("."))]
    return ["diamondlab", *sorted(names)]


def _defined_elsewhere(module, name: str) -> str | None:
    """The dotted name of ``module.name`` where it is documented when that is elsewhere, else None.

    Submodules have their own pages; classes and functions re-exported from
    another module are documented there.
    """
    obj = getattr(module, name)
    if inspect.ismodule(obj):
        return obj.__name__
    home = getattr(obj, "__module__", None)
    if (inspect.isclass(obj) or inspect.isfunction(obj)) and home and home != module.__name__:
        return f"{home}.{obj.__qualname__}"
    return None


def _directive(module, name: str) -> list[str]:
    obj = getattr(module, name)
    target = f"{module.__name__}.{name}"
    if inspect.isclass(obj):
        return [f".. autoclass:: {target}", "   :members:", ""]
    if inspect.isfunction(obj):
        return [f".. autofunction:: {target}", ""]
    return [f".. autodata:: {target}", ""]


def _api_page(name: str) -> str:
    """One module's page: its docstring, the names it defines, links to the names it re-exports."""
    module = importlib.import_module(name)
    public = list(getattr(module, "__all__", []))
    elsewhere = {n: _defined_elsewhere(module, n) for n in public}
    title = f"``{name}``"
    lines = [title, "=" * len(title), "", f".. automodule:: {name}", "   :no-members:", ""]
    for n in public:
        if elsewhere[n] is None:
            lines += _directive(module, n)
    if any(elsewhere.values()):
        lines += [".. rubric:: Also here (documented where they are defined)", ""]
        for n, target in elsewhere.items():
            if target is not None:
                role = "mod" if inspect.ismodule(getattr(module, n)) else "obj"
                lines.append(f"- ``{name}.{n}``: :py:{role}:`{target}`")
        lines.append("")
    return "\n".join(lines)


def _write_api_pages() -> None:
    folder = DOCS / "api"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    lines = ["API reference", "=============", "", ".. toctree::", "   :maxdepth: 1", ""]
    for name in public_modules():
        lines.append(f"   {name}")
        (folder / f"{name}.rst").write_text(_api_page(name))
    (folder / "index.rst").write_text("\n".join(lines) + "\n")


def _copy_notebooks() -> None:
    """The notebooks as committed, without the outputs a user's run may have saved into ``notebooks/``."""
    spec = importlib.util.spec_from_file_location("make_notebooks", ROOT / "assets" / "make_notebooks.py")
    make = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make)
    make.copy_stripped(ROOT / "notebooks", DOCS / "notebooks")


_write_api_pages()
_copy_notebooks()


def _no_type_docstring(app, what, name, obj, options, lines):
    """A constant without a doc comment: show its value, not its type's docstring (``str``'s, ``tuple``'s)."""
    doc = type(obj).__doc__
    own = doc.strip().splitlines() if isinstance(doc, str) else []
    if what in ("data", "attribute") and own and lines and lines[0].strip() == own[0].strip():
        lines.clear()


def setup(app):
    app.connect("autodoc-process-docstring", _no_type_docstring)
