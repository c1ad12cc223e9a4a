"""renderer/ is a pure library: it imports nothing of the service."""
from __future__ import annotations

import ast
import types
from pathlib import Path

from reelfarm import renderer
from tests.helpers import absolute_imports, part_of

FORBIDDEN = {"flask", "flask_smorest", "rq", "redis", "sqlalchemy", "psycopg2", "boto3", "api", "farm",
             "studio", "shared", "client", "console", "reelfarm"}


def test_renderer_imports_no_service_code():
    root = Path(renderer.__file__).parent
    offenders = [f"{file}: {module}" for file, module in absolute_imports(root) if part_of(module) in FORBIDDEN]
    assert offenders == []


def test_names_are_imported_from_their_modules_not_through_the_package():
    """Readers and tools follow ``render_video`` to ``reelfarm.renderer.render``: the package re-exports
    nothing and loads nothing (no lazy ``__getattr__``); nothing imports a name through it."""
    assert not hasattr(renderer, "__getattr__")
    names = [n for n, v in vars(renderer).items() if not n.startswith("_") and not isinstance(v, types.ModuleType)]
    assert names == ["annotations", "RENDERER_VERSION"], "submodules only, once imported"
    repo = Path(renderer.__file__).resolve().parents[1]
    through = []
    for part in ("api", "farm", "studio", "console", "shared", "renderer", "benchmarks", "tests"):
        for path in (repo / part).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and node.module == "reelfarm.renderer":
                    through += [f"{path.name}: {a.name}" for a in node.names
                                if a.name != "RENDERER_VERSION" and not (repo / "renderer" / f"{a.name}.py").exists()]
    assert through == []


def _modules_after(statement: str) -> set[str]:
    import json
    import subprocess
    import sys

    code = f"import json, sys\n{statement}\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return {part_of(name) for name in json.loads(out)}


def test_importing_the_renderer_loads_no_service_library():
    """Render nodes and local commands start fast: no web, database, migration, queue or S3 code."""
    service = {"flask", "flask_smorest", "sqlalchemy", "alembic", "rq", "redis", "boto3", "botocore", "psycopg2"}
    loaded = _modules_after("from reelfarm.renderer.render import render_video\n"
                            "from reelfarm.renderer.stills import render_still_png\n"
                            "from reelfarm.renderer.linter import lint")
    assert loaded & service == set()


def test_a_still_never_loads_the_encoder():
    assert "av" not in _modules_after("from reelfarm.renderer.stills import render_still_png")
    assert _modules_after("from reelfarm import renderer") & {"av", "skia", "numpy"} == set()


def test_the_local_commands_load_no_service_code():
    loaded = _modules_after("from reelfarm.cli import main\nmain.get_command(None, 'render')")
    assert loaded & {"flask", "sqlalchemy", "alembic", "rq", "boto3", "api", "farm", "shared"} == set()
