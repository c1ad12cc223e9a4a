"""No import circle among the project's modules.

The graph has one edge per import statement of a project module that names another project
module, wherever the statement stands: at the top, inside a function (such an import is still a
dependency; it only runs later) or in a ``try``. Imports under ``if TYPE_CHECKING:`` are left
out: they never run. ``from pkg import name`` points at ``pkg.name`` when that is a module, else
at ``pkg``. A circle is a strongly connected component of two or more modules (or a module that
imports itself).

Run as a script it prints the circles and counts the function-level project imports per
package, the figures the issue asks for::

    python tests/unit/test_import_graph.py
"""
from __future__ import annotations

import ast
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from reelfarm import PARTS  # the folders mapped into the one package (``reelfarm/<part>`` links to ``<part>/``)
from reelfarm.farm.runtime.queue import FORMER_TOP_LEVEL

ROOT = Path(__file__).resolve().parents[2]
OLD_TOP_LEVEL = FORMER_TOP_LEVEL  # the names work queued by an earlier release may still use

# DESIGN.md's table, "The parts and which way they depend": the other parts each part may import.
# The modules of ``reelfarm/`` itself (the composition roots: ``app``, ``serve``, ``cli``) stand
# above every part and may import any; no part imports them (the package ``reelfarm``, whose
# ``__init__`` holds ``PARTS`` and imports nothing, excepted).
MAY_IMPORT: dict[str, frozenset[str]] = {
    "renderer": frozenset(),
    "shared": frozenset(),
    "client": frozenset(),  # it talks to the server over HTTP only
    "studio": frozenset({"renderer", "shared"}),
    "farm": frozenset({"renderer", "studio", "shared"}),
    "api": frozenset({"farm", "studio", "renderer", "shared"}),
    "console": frozenset({"farm", "studio", "renderer", "shared"}),
}
# Within an allowed part, the rooms that some modules may not reach: prefixes of importers, and
# the prefixes of the modules they may not import. The console reaches the farm through its
# services alone, and so do the API's views (its resources, schemas and ``/metrics``).
FORBIDDEN_ROOMS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("reelfarm.console",), "reelfarm.farm.runtime"),
    (("reelfarm.api.resources", "reelfarm.api.schemas", "reelfarm.api.metrics"), "reelfarm.farm.runtime"),
)


@dataclass(frozen=True)
class Import:
    source: str       # the importing module
    target: str       # the imported project module
    line: int
    in_function: bool


def project_modules(root: Path = ROOT) -> dict[str, Path]:
    """Dotted name (``reelfarm.farm.runtime.tasks``) -> file of every module of the ``reelfarm`` package."""
    found = {}
    folders = [(root / "reelfarm", "reelfarm", False)] + [(root / part, f"reelfarm.{part}", True) for part in PARTS]
    for folder, prefix, recurse in folders:
        if not folder.is_dir() or folder.is_symlink():
            continue
        for path in sorted(folder.rglob("*.py") if recurse else folder.glob("*.py")):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([prefix, *parts])] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _walk(node: ast.AST, in_function: bool = False, type_checking: bool = False) -> Iterator[tuple[ast.AST, bool]]:
    """Every node below ``node`` that runs at some point, and whether it stands in a function
    (with ``type_checking``, the body of ``if TYPE_CHECKING:`` too)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child.test) and not type_checking:
            for other in child.orelse:
                yield other, in_function
                yield from _walk(other, in_function)
            continue
        inside = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        yield child, in_function
        yield from _walk(child, inside, type_checking)


def _base(module: str, path: Path, level: int, name: str | None) -> str:
    if level == 0:
        return name or ""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    package = package[: len(package) - (level - 1)]
    return ".".join(package + ([name] if name else []))


def imports(modules: dict[str, Path] | None = None, type_checking: bool = False) -> list[Import]:
    """Every import of a project module by a project module (``TYPE_CHECKING`` ones left out
    unless ``type_checking``)."""
    modules = modules if modules is not None else project_modules()
    found = []
    for module, path in modules.items():
        for node, in_function in _walk(ast.parse(path.read_text("utf-8")), type_checking=type_checking):
            targets = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _base(module, path, node.level, node.module)
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            for target in dict.fromkeys(targets):
                while target and target not in modules and "." in target:
                    target = target.rsplit(".", 1)[0]  # `import a.b.c` of a name inside a.b
                if target in modules and target != module or (target == module and isinstance(node, ast.Import)):
                    found.append(Import(module, target, node.lineno, in_function))
    return found


def circles(edges: list[Import]) -> list[list[str]]:
    """The strongly connected components of two or more modules, each sorted, largest first."""
    graph: dict[str, set[str]] = {}
    for edge in edges:
        graph.setdefault(edge.source, set()).add(edge.target)
        graph.setdefault(edge.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's algorithm
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1 or node in graph[node]:
                found.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found, key=lambda c: (-len(c), c))


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def upward_imports(edges: list[Import]) -> list[str]:
    """``importer:line -> imported`` for each import DESIGN.md's table does not allow."""
    found = []
    for edge in edges:
        source, target = edge.source.split("."), edge.target.split(".")
        if len(source) < 2 or source[1] not in MAY_IMPORT:
            continue  # a composition root in reelfarm/: it may import any part
        part = source[1]
        if len(target) < 2:
            continue  # the package ``reelfarm`` itself (PARTS)
        other = target[1]
        rooms = [room for importers, room in FORBIDDEN_ROOMS
                 if any(_within(edge.source, i) for i in importers) and _within(edge.target, room)]
        if (other != part and other not in MAY_IMPORT.get(part, frozenset())) or other not in MAY_IMPORT or rooms:
            found.append(f"{edge.source}:{edge.line} -> {edge.target}")
    return sorted(found)


def test_the_table_names_every_part() -> None:
    assert set(MAY_IMPORT) == set(PARTS)


def test_no_part_imports_a_part_above_it() -> None:
    """DESIGN.md's table holds: every import, at the top, in a function or under ``TYPE_CHECKING``."""
    assert upward_imports(imports(type_checking=True)) == []


def test_the_layer_rule_sees_upward_imports_wherever_they_stand(tmp_path: Path) -> None:
    for part, source in {"studio": "from reelfarm.farm import b\n",
                         "console": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import reelfarm.api.c\n"
                                    "def f():\n    from reelfarm.farm.runtime import d\n    from reelfarm import app\n"
                                    "    from reelfarm.farm.services import e\n    import reelfarm\n",
                         "api": "", "farm": "", "reelfarm": ""}.items():
        folder = tmp_path / part
        folder.mkdir()
        (folder / "__init__.py").write_text("")
        (folder / "a.py").write_text(source)
    (tmp_path / "api" / "c.py").write_text("")
    for name in ("b", "runtime/__init__", "runtime/d", "services/__init__", "services/e"):
        (tmp_path / "farm" / f"{name}.py").parent.mkdir(exist_ok=True)
        (tmp_path / "farm" / f"{name}.py").write_text("")
    (tmp_path / "reelfarm" / "app.py").write_text("import reelfarm.api.c\nfrom reelfarm.console import a\n")
    found = upward_imports(imports(project_modules(tmp_path), type_checking=True))
    assert found == ["reelfarm.console.a:3 -> reelfarm.api.c", "reelfarm.console.a:5 -> reelfarm.farm.runtime.d",
                     "reelfarm.console.a:6 -> reelfarm.app", "reelfarm.studio.a:1 -> reelfarm.farm.b"]
    assert upward_imports(imports(project_modules(tmp_path))) == [
        "reelfarm.console.a:5 -> reelfarm.farm.runtime.d", "reelfarm.console.a:6 -> reelfarm.app",
        "reelfarm.studio.a:1 -> reelfarm.farm.b"]


def test_the_former_top_level_names_are_the_parts() -> None:
    assert set(PARTS) == FORMER_TOP_LEVEL


def test_no_import_circle_among_the_projects_modules() -> None:
    found = circles(imports())
    assert found == [], "import circles: " + "; ".join(" <-> ".join(c) for c in found)


def test_the_graph_sees_function_level_imports_and_skips_type_checking(tmp_path: Path) -> None:
    pkg = tmp_path / "farm"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from reelfarm.farm import b\n")
    (pkg / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from reelfarm.farm.c import X\n"
                              "else:\n    import reelfarm.farm.a\n")
    (pkg / "c.py").write_text("from . import b\n")
    found = imports({name: path for name, path in project_modules(tmp_path).items()})
    a, b, c = "reelfarm.farm.a", "reelfarm.farm.b", "reelfarm.farm.c"
    assert {(i.source, i.target, i.in_function) for i in found} == {(a, b, True), (b, a, False), (c, b, False)}
    assert circles(found) == [[a, b]]


def old_name_imports(root: Path = ROOT) -> list[str]:
    """Every import, in the package, the tests and the benchmarks, of a part by its old top-level
    name (``farm.tasks`` rather than ``reelfarm.farm.runtime.tasks``)."""
    found = []
    folders = [root / "reelfarm", root / "tests", root / "benchmarks"] + [root / part for part in PARTS]
    for folder in folders:
        for path in sorted(folder.rglob("*.py")) if not folder.is_symlink() else []:
            for node in ast.walk(ast.parse(path.read_text("utf-8"))):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                    [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module else []
                found += [f"{path.relative_to(root)}:{node.lineno} {name}" for name in names
                          if name.split(".")[0] in OLD_TOP_LEVEL]
    return found


def test_every_part_is_imported_under_the_one_reelfarm_name() -> None:
    assert old_name_imports() == []


def test_the_old_name_rule_sees_an_import_by_the_old_name(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text("import farm.tasks\nfrom reelfarm.farm import tasks\n")
    assert old_name_imports(tmp_path) == ["tests/test_x.py:1 farm.tasks"]


def main() -> None:
    edges = imports()
    found = circles(edges)
    print(f"{len(found)} import circle(s)")
    for component in found:
        print(f"  {len(component)} modules: {', '.join(component)}")
    late = [e for e in edges if e.in_function]
    per_package = Counter(e.source.split(".")[1] for e in late)
    print(f"{len(late)} function-level project import(s) (one per imported module and statement): "
          + ", ".join(f"{p} {n}" for p, n in sorted(per_package.items())))


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
