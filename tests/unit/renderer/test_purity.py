"""renderer/ is a pure library: it imports nothing of the service."""
from __future__ import annotations

import ast
from pathlib import Path

import renderer

FORBIDDEN = {"flask", "flask_smorest", "rq", "redis", "sqlalchemy", "psycopg2", "boto3", "api", "farm",
             "studio", "shared", "client", "reelfarm"}


def test_renderer_imports_no_service_code():
    root = Path(renderer.__file__).parent
    offenders = []
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            offenders += [f"{path.name}: {n}" for n in names if n.split(".")[0] in FORBIDDEN]
    assert offenders == []


def test_public_names_exist():
    for name in renderer.__all__:
        assert hasattr(renderer, name), name
