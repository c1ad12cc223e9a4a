"""The views reach the domain one way: ``reelfarm.api.services.services()``.

The API's resources, the console (every module under ``console/``) and ``/metrics``
(``api/metrics.py``) validate what came in, make calls on services and render what came back.
None of them opens a connection or a transaction, reads a repository or a table, reaches the
engine (``.engine``), or finds the services by another road than ``services()`` (no
``.extensions`` read: ``api/services.py`` holds the one that reads them from the app).

The API's key check (``api/auth.py``) and the operator commands (``api/cli.py``: ``reelfarm
admin``) use those services too: no repository, transaction, table or SQLAlchemy, no ``.engine``
(``reelfarm migrate`` alone opens the database itself, to bring its schema up to date).
"""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from reelfarm import console
from reelfarm.api import resources, services

FORBIDDEN = ("reelfarm.shared.repos", "reelfarm.shared.db", "reelfarm.shared.tables", "sqlalchemy")
FORBIDDEN_TO_OPERATORS = ("reelfarm.shared.repos", "reelfarm.shared.db.transaction", "reelfarm.shared.tables",
                          "sqlalchemy")
API = Path(resources.__file__).parent.parent
CONSOLE = Path(console.__file__).parent


def _modules() -> list[Path]:
    return sorted([*(API / "resources").glob("*.py"), API / "metrics.py", *CONSOLE.rglob("*.py")])


def _name(path: Path) -> str:
    """``console/pages/settings.py``: the path from the part's folder on."""
    start = max(i for i, part in enumerate(path.parts) if part in ("api", "console"))
    return "/".join(path.parts[start:])


def _imported(tree: ast.AST) -> list[str]:
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names += [node.module] + [f"{node.module}.{a.name}" for a in node.names]
    return names


def _operators() -> list[Path]:
    return [API / "auth.py", API / "cli.py"]


def forbidden_imports(paths: list[Path], forbidden: tuple[str, ...] = FORBIDDEN) -> list[str]:
    """``module: name`` for each import of a repository, the database, the tables or SQLAlchemy."""
    return [f"{_name(path)}: {name}" for path in paths for name in _imported(ast.parse(path.read_text("utf-8")))
            if any(name == f or name.startswith(f + ".") for f in forbidden)]


def reached_around(paths: list[Path]) -> list[str]:
    """``module:line .attr`` for each use of ``.engine`` or ``.extensions``."""
    found = []
    for path in paths:
        found += [f"{_name(path)}:{n.lineno} .{n.attr}" for n in ast.walk(ast.parse(path.read_text("utf-8")))
                  if isinstance(n, ast.Attribute) and n.attr in ("engine", "extensions")]
    return found


def test_views_import_no_repository_nor_database_code() -> None:
    assert forbidden_imports(_modules()) == []


def test_views_reach_neither_the_engine_nor_the_apps_extensions() -> None:
    assert reached_around(_modules()) == []


def test_the_key_check_and_the_admin_commands_reach_the_domain_through_the_services() -> None:
    assert forbidden_imports(_operators(), FORBIDDEN_TO_OPERATORS) == []
    assert [f for f in reached_around(_operators()) if f.endswith(".engine")] == []


def test_the_operator_rule_sees_a_repository_or_a_transaction_in_a_function(tmp_path: Path) -> None:
    (tmp_path / "api").mkdir()
    cli = tmp_path / "api" / "cli.py"
    cli.write_text("from reelfarm.shared.db import make_engine, migrate\n"
                   "def create_key(services):\n"
                   "    from reelfarm.shared.db import transaction\n"
                   "    from reelfarm.shared.repos import api_keys\n"
                   "    with transaction(services.engine) as conn:\n"
                   "        return api_keys.create_api_key(conn)\n")
    assert forbidden_imports([cli], FORBIDDEN_TO_OPERATORS) == [
        "api/cli.py: reelfarm.shared.db.transaction", "api/cli.py: reelfarm.shared.repos",
        "api/cli.py: reelfarm.shared.repos.api_keys"]
    assert reached_around([cli]) == ["api/cli.py:5 .engine"]


def test_resources_do_not_use_current_app() -> None:
    offenders = [f"{path.name}: current_app" for path in sorted((API / "resources").glob("*.py"))
                 for name in _imported(ast.parse(path.read_text("utf-8"))) if name == "flask.current_app"]
    assert offenders == []


def test_the_services_are_read_from_the_app_in_services_alone() -> None:
    tree = ast.parse(Path(services.__file__).read_text("utf-8"))
    inside = {id(n) for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) and f.name == "services"
              for n in ast.walk(f)}
    reads = [n for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "extensions"]
    assert len(reads) == 1 and id(reads[0]) in inside


def test_the_seam_covers_the_console_and_metrics() -> None:
    names = {_name(p) for p in _modules()}
    assert {"api/metrics.py", "console/web.py", "console/blueprint.py", "console/pages/settings.py",
            "console/pages/farm.py", "api/resources/videos.py"} <= names


def test_the_rules_catch_each_way_around_the_seam(tmp_path: Path) -> None:
    pages = tmp_path / "console" / "pages"
    pages.mkdir(parents=True)
    (pages / "keys.py").write_text(
        "from reelfarm.shared.db import transaction\n"
        "from reelfarm.shared.repos import api_keys\n"
        "import reelfarm.shared.tables\n"
        "from sqlalchemy import select\n"
        "def view(svc):\n"
        "    with svc.engine.connect() as conn:\n"
        "        return api_keys.list_api_keys(conn, 'w')\n")
    (tmp_path / "console" / "web.py").write_text(
        "from flask import current_app\n"
        "def services():\n"
        "    return current_app.extensions['reelfarm']\n")
    planted = sorted([pages / "keys.py", tmp_path / "console" / "web.py"])
    assert forbidden_imports(planted) == [
        "console/pages/keys.py: reelfarm.shared.db", "console/pages/keys.py: reelfarm.shared.db.transaction",
        "console/pages/keys.py: reelfarm.shared.repos", "console/pages/keys.py: reelfarm.shared.repos.api_keys",
        "console/pages/keys.py: reelfarm.shared.tables", "console/pages/keys.py: sqlalchemy",
        "console/pages/keys.py: sqlalchemy.select"]
    assert reached_around(planted) == ["console/pages/keys.py:6 .engine", "console/web.py:3 .extensions"]


def test_the_console_imports_before_the_api() -> None:
    """The console finds ``services()`` in ``reelfarm.api`` while ``reelfarm.api`` registers the
    console: either package may be imported first."""
    found = subprocess.run([sys.executable, "-c", "import reelfarm.console, reelfarm.api.metrics"],
                           check=False, capture_output=True, text=True, timeout=120)
    assert found.returncode == 0, found.stderr
