"""renderer/ is a pure library: it imports nothing of the service."""
from __future__ import annotations

from pathlib import Path

from reelfarm import renderer
from tests.helpers import absolute_imports, part_of

FORBIDDEN = {"flask", "flask_smorest", "rq", "redis", "sqlalchemy", "psycopg2", "boto3", "api", "farm",
             "studio", "shared", "client", "console", "reelfarm"}


def test_renderer_imports_no_service_code():
    root = Path(renderer.__file__).parent
    offenders = [f"{file}: {module}" for file, module in absolute_imports(root) if part_of(module) in FORBIDDEN]
    assert offenders == []


def test_public_names_exist():
    for name in renderer.__all__:
        assert hasattr(renderer, name), name


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
    loaded = _modules_after("from reelfarm import renderer\nfrom reelfarm.renderer import render_video, render_still_png, lint")
    assert loaded & service == set()


def test_a_still_never_loads_the_encoder():
    assert "av" not in _modules_after("from reelfarm import renderer\nrenderer.render_still_png")


def test_the_local_commands_load_no_service_code():
    loaded = _modules_after("from reelfarm.cli import main\nmain.get_command(None, 'render')")
    assert loaded & {"flask", "sqlalchemy", "alembic", "rq", "boto3", "api", "farm", "shared"} == set()
