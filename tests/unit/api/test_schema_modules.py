"""The schemas stay split by resource (issue #21): a package of small modules, one per resource,
not one ``api/schemas.py`` that grows with every route; the package itself re-exports nothing, so
each name is imported from the module that defines it, and its docstring lists every module."""
from __future__ import annotations

import ast
from pathlib import Path

from reelfarm.api import schemas

PACKAGE = Path(schemas.__file__).parent
MAX_LINES = 250


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.glob("*.py") if p.name != "__init__.py")


def test_no_single_schemas_module_beside_the_package() -> None:
    assert not (PACKAGE.parent / "schemas.py").exists()
    assert len(_modules()) >= 8


def test_each_schema_module_stays_small() -> None:
    long = {p.name: n for p in _modules() if (n := len(p.read_text("utf-8").splitlines())) > MAX_LINES}
    assert long == {}, f"split these by resource (at most {MAX_LINES} lines each): {long}"


def test_the_package_is_a_table_of_its_modules_not_a_facade() -> None:
    tree = ast.parse((PACKAGE / "__init__.py").read_text("utf-8"))
    assert [type(node) for node in tree.body] == [ast.Expr], "import from the defining module instead"
    table = ast.get_docstring(tree) or ""
    assert [p.stem for p in _modules() if f"``{p.stem}``" not in table] == []
