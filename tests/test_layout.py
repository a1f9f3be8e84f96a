"""The package's layout: no import circle, the floors hold, the engine's modules live in rooms by concern.

The import graph is read from the source with :mod:`ast` (nothing is
imported): an edge ``a -> b`` for every ``import`` of ``b`` in module ``a``,
at module level or inside a function (a late import runs too, so it counts),
``from p import name`` counting as an import of ``p.name`` where that is a
module.  Modules registered by name (``"package.module:Class"`` strings: the
backends, the equations' simulations, the streamed window) are loaded on
demand by the registry that names them; they are checked to exist, not
counted as imports.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "diamondlab"

#: The floors, bottom up: a module imports only its own part of the package and parts on lower floors.
FLOORS = {
    "diamondlab.files": 0, "diamondlab.devices": 0,
    "diamondlab.caches": 1, "diamondlab.numerics": 1, "diamondlab.sources": 1, "diamondlab.media": 1,
    "diamondlab.maxwell": 1,
    "diamondlab.geometry": 2,
    "diamondlab.kernels": 3,
    "diamondlab.engine": 4,
    "diamondlab.viz": 5, "diamondlab.cli": 5,
    "diamondlab.widgets": 6,
    "diamondlab._entry": 7,
    "diamondlab.__main__": 8,
}  # fmt: skip

#: The engine's rooms: every engine module lives in one.
ROOMS = ("equations", "run", "backends", "scale", "measure", "outputs")

#: What only the pictures and the lab need: never imported below viz (pyvista is not here: the engine's
#: snapshots write ``.vti`` files with it).
VIEW_PACKAGES = ("plotly", "ipywidgets", "matplotlib", "anywidget")


def module_files(package: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` under ``package`` (a package is its ``__init__``)."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _type_checking(test: ast.expr) -> bool:
    return "TYPE_CHECKING" in ast.unparse(test)


def _imports(tree: ast.AST, base: str):
    """``(kind, dotted)`` for every import in ``tree`` (``base``: the package relative imports start from)."""
    work = [(tree, "top")]
    while work:
        node, kind = work.pop()
        for child in ast.iter_child_nodes(node):
            inner = kind
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and kind == "top":
                inner = "late"
            if isinstance(child, ast.If) and _type_checking(child.test):
                inner = "typing"
            if isinstance(child, ast.Import):
                yield from ((inner, a.name) for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                source = child.module or ""
                if child.level:
                    parts = base.split(".")[: len(base.split(".")) - (child.level - 1)]
                    source = ".".join(parts + ([source] if source else []))
                yield inner, source
                yield from ((inner, f"{source}.{a.name}") for a in child.names)
            work.append((child, inner))


def import_graph(package: Path) -> dict[str, dict[str, set[str]]]:
    """``{"top": edges, "late": edges, "typing": edges, "external": roots}``: module -> imported modules.

    ``top``: imports run when the module is imported; ``late``: inside functions; ``typing``: under
    ``if TYPE_CHECKING``; ``external``: the top-level names of what it imports from outside the package.
    """
    files = module_files(package)
    name = package.name
    graph: dict[str, dict[str, set[str]]] = {k: {m: set() for m in files} for k in ("top", "late", "typing",
                                                                                     "external")}

    def resolve(dotted: str) -> str | None:
        while dotted and dotted not in files:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    for module, path in files.items():
        base = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for kind, target in _imports(ast.parse(path.read_text(), str(path)), base):
            if target == name or target.startswith(name + "."):
                found = resolve(target)
                if found and found != module:
                    graph[kind][module].add(found)
            elif target and kind != "typing":
                graph["external"][module].add(target.split(".")[0])
    return graph


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in edges:
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for nxt in successors:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(edges.get(nxt, ())))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def part_of(module: str) -> str:
    """The part of the package a module belongs to (the key of :data:`FLOORS`)."""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else module


@pytest.fixture(scope="module")
def graph():
    return import_graph(PACKAGE)


def _runtime(graph) -> dict[str, set[str]]:
    return {m: graph["top"][m] | graph["late"][m] for m in graph["top"]}


def test_no_import_circle(graph):
    """No two modules import each other, directly or around a circle, at import time or in a function."""
    assert circles(graph["top"]) == [], "import circles among module-level imports"
    assert circles(_runtime(graph)) == [], "import circles (module-level and function-level imports)"


def test_the_circle_finder_finds_a_circle(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "room").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "room" / "__init__.py").write_text("")
    (pkg / "room" / "a.py").write_text("from pkg.room.b import f\n")
    (pkg / "room" / "b.py").write_text("def f():\n    from pkg.room import c\n")
    (pkg / "room" / "c.py").write_text("import pkg.room.a\n")
    (pkg / "d.py").write_text("from pkg.room import a\nfrom .room.b import f\n")
    g = import_graph(pkg)
    assert g["top"]["pkg.d"] == {"pkg.room", "pkg.room.a", "pkg.room.b"}
    assert circles(g["top"]) == []  # the circle closes only through a function's import
    assert circles({m: g["top"][m] | g["late"][m] for m in g["top"]}) == [["pkg.room.a", "pkg.room.b",
                                                                           "pkg.room.c"]]


def test_every_module_has_a_floor():
    parts = {part_of(m) for m in module_files(PACKAGE)} - {"diamondlab"}
    assert parts <= set(FLOORS), f"modules with no floor in FLOORS: {sorted(parts - set(FLOORS))}"


def test_the_floors_hold(graph):
    """Each part imports only itself and the floors below (engine no viz, cli or widgets; kernels no
    engine; geometry only numerics); the package's front door imports only the bottom floor."""
    wrong = []
    for kind in ("top", "late", "typing"):
        for module, targets in graph[kind].items():
            for target in targets:
                mine, theirs = part_of(module), part_of(target)
                if theirs == "diamondlab":  # anyone may import the front door (lazy exports only)
                    continue
                if mine == "diamondlab":
                    ok = FLOORS[theirs] == 0
                else:
                    ok = mine == theirs or FLOORS[theirs] < FLOORS[mine]
                if not ok:
                    wrong.append(f"{module} -> {target} ({kind})")
    assert not wrong, "imports against the floors:\n" + "\n".join(sorted(wrong))


def test_geometry_imports_only_numpy_and_the_standard_library(graph):
    for module, roots in graph["external"].items():
        if part_of(module) == "diamondlab.geometry":
            foreign = roots - set(sys.stdlib_module_names) - {"numpy", "__future__"}
            assert not foreign, f"{module} imports {sorted(foreign)}"


def test_no_picture_package_below_viz(graph):
    for module, roots in graph["external"].items():
        if FLOORS.get(part_of(module), 0) < FLOORS["diamondlab.viz"]:
            assert not roots & set(VIEW_PACKAGES), f"{module} imports {sorted(roots & set(VIEW_PACKAGES))}"


def test_every_engine_module_lives_in_a_room():
    engine = PACKAGE / "engine"
    loose = sorted(p.name for p in engine.glob("*.py") if p.name != "__init__.py")
    assert not loose, f"engine modules outside a room {ROOMS}: {loose}"
    rooms = sorted(p.name for p in engine.iterdir() if p.is_dir() and (p / "__init__.py").is_file())
    assert rooms == sorted(ROOMS)


def _registered() -> list[str]:
    """Every ``"package.module:Class"`` string in the package's source."""
    found = []
    for path in module_files(PACKAGE).values():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                text = node.value
                if text.startswith("diamondlab.") and text.count(":") == 1 and " " not in text:
                    found.append(text)
    return sorted(set(found))


@pytest.mark.parametrize("target", _registered())
def test_every_registered_class_is_where_its_registry_says(target):
    """Registries name their modules (the backends, the equations, the streamed window): each exists."""
    module, cls = target.split(":")
    files = module_files(PACKAGE)
    assert module in files and importlib.util.find_spec(module) is not None, f"{target}: no module {module}"
    classes = {n.name for n in ast.walk(ast.parse(files[module].read_text())) if isinstance(n, ast.ClassDef)}
    assert cls in classes, f"{target}: {module} defines no class {cls}"
