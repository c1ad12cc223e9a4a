"""The views reach the domain one way: ``reelfarm.api.services.services()``.

A view module validates with a schema, makes one call on a service and answers with a schema;
it never opens a connection or a transaction, nor reads a repository, nor finds the services by
another road (``current_app.extensions``).
"""
from __future__ import annotations

import ast
from pathlib import Path

from reelfarm.api import resources

FORBIDDEN = ("reelfarm.shared.repos", "reelfarm.shared.db", "sqlalchemy")


def _modules() -> list[Path]:
    return sorted(Path(resources.__file__).parent.glob("*.py"))


def _imported(tree: ast.AST) -> list[str]:
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names += [node.module] + [f"{node.module}.{a.name}" for a in node.names]
    return names


def test_views_import_no_repository_nor_database_code() -> None:
    offenders = [f"{path.name}: {name}" for path in _modules() for name in _imported(ast.parse(path.read_text("utf-8")))
                 if any(name == f or name.startswith(f + ".") for f in FORBIDDEN)]
    assert offenders == []


def test_views_find_the_services_only_through_services() -> None:
    offenders = []
    for path in _modules():
        tree = ast.parse(path.read_text("utf-8"))
        offenders += [f"{path.name}:{n.lineno}" for n in ast.walk(tree)
                      if isinstance(n, ast.Attribute) and n.attr == "extensions"]
        offenders += [f"{path.name}: current_app" for name in _imported(tree) if name == "flask.current_app"]
    assert offenders == []
