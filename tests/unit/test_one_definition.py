"""Each term of the domain is defined once: the plans in ``reelfarm.shared.plans``, the formats,
resolutions and frame rates in ``reelfarm.renderer.spec``. A second literal list of plan names or
of formats anywhere in the package or the benchmarks fails here, and the copies that must exist
(the VideoDoc JSON Schema, the layout's design tables) are held equal to the definition."""
from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest

from reelfarm.renderer import spec
from reelfarm.shared import plans, statuses

ROOT = Path(__file__).resolve().parents[2]
PARTS = ("api", "client", "console", "farm", "renderer", "shared", "studio", "benchmarks")
PLAN_NAMES = set(plans.NAMES)
FORMAT_NAMES = set(spec.FORMATS)
HOMES = {"shared/plans.py", "renderer/spec.py"}
# The client cannot import the server: its lists are checked against the served document instead
# (tests/integration/api/test_api_document.py). Migrations are history: they keep what they said.
# client/literals.py is held to the server's sets by tests/unit/client/test_client_options.py.
ELSEWHERE = {"client/cli/videos.py", "client/literals.py"}
# Design tables keyed by format (how each is laid out), held to exactly the formats below.
KEYED_BY_FORMAT = {"studio/stories/layout.py": {"_KIND", "_MARGIN"}}


def _sources() -> list[tuple[str, ast.AST]]:
    found: list[tuple[str, ast.AST]] = []
    for part in PARTS:
        for path in sorted((ROOT / part).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel in HOMES or rel in ELSEWHERE or "/migrations/" in rel or "__pycache__" in rel:
                continue
            found.append((rel, ast.parse(path.read_text(encoding="utf-8"))))
    return found


def _literal_strings(node: ast.AST) -> list[str]:
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        items = node.elts
    elif isinstance(node, ast.Dict):
        items = [k for k in node.keys if k is not None]
    else:
        return []
    return [i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)]


def second_definitions(sources: list[tuple[str, ast.AST]]) -> list[str]:
    """Literal collections naming two or more plans, or three or more formats (an example body
    may name two formats; a definition names them all)."""
    found: list[str] = []
    for rel, tree in sources:
        tables = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Assign)
                  and any(isinstance(t, ast.Name) and t.id in KEYED_BY_FORMAT.get(rel, ()) for t in node.targets)}
        for node in ast.walk(tree):
            if id(node) in tables:
                continue
            values = set(_literal_strings(node))
            if len(values & PLAN_NAMES) >= 2:
                found.append(f"{rel}:{node.lineno}: plans {sorted(values & PLAN_NAMES)}")  # type: ignore[attr-defined]
            if len(values & FORMAT_NAMES) >= 3:
                found.append(f"{rel}:{node.lineno}: formats {sorted(values & FORMAT_NAMES)}")  # type: ignore[attr-defined]
    return found


def test_plans_and_formats_are_defined_once() -> None:
    assert second_definitions(_sources()) == []


def test_the_check_finds_a_second_definition() -> None:
    planted: list[tuple[str, ast.AST]] = [("planted.py", ast.parse('PAID = ("pro", "agency")\nSIZES = {"16:9": 1, "9:16": 2, "1:1": 3}\n'))]
    assert second_definitions(planted) == ["planted.py:1: plans ['agency', 'pro']",
                                           "planted.py:2: formats ['16:9', '1:1', '9:16']"]


def test_the_videodoc_schema_offers_the_specs_formats_and_frame_rates() -> None:
    schema = json.loads((ROOT / "renderer/videodoc.schema.json").read_text())
    assert schema["$defs"]["format"]["enum"] == list(spec.FORMATS)
    assert schema["properties"]["fps"]["enum"] == list(spec.FPS_CHOICES)


def test_the_layouts_design_tables_cover_exactly_the_formats() -> None:
    from reelfarm.studio.stories import layout

    for table in (layout._SIZE, layout._KIND, layout._MARGIN):
        assert list(table) == list(spec.FORMATS)
    for fmt, (w, h) in layout._SIZE.items():
        width, height = spec.frame_size(fmt, 1080)
        assert width / height == pytest.approx(w / h, rel=1e-3)


def test_what_a_plan_allows_is_read_from_its_definition() -> None:
    from reelfarm.shared.config import Settings

    assert plans.LOCALE_PLANS == ("pro", "agency")
    limits = Settings.from_env({"REELFARM_DATA_DIR": "/nonexistent"}).rate_limits
    assert {p: r.limit for p, r in limits.items()} == {p.name: p.rate_limit for p in plans.PLANS.values() if p.api}
    assert Settings.from_env({"REELFARM_DATA_DIR": "/nonexistent"}).rate_limit_for("starter") is None


# The status vocabularies and the subsets named in reelfarm.shared.statuses, checked over the
# server's parts (the client and the benchmarks speak to it over HTTP and keep their own words).
SERVER_PARTS = ("api", "console", "farm", "renderer", "shared", "studio")
HELD_STATUS_SETS = ("VIDEO_STATUSES", "JOB_STATUSES", "TASK_STATUSES", "DELIVERY_STATES", "ENDED")


def status_copies(sources: list[tuple[str, ast.AST]]) -> list[str]:
    """Literal collections that spell out one of the status vocabularies (or the ended subset)."""
    held = {name: frozenset(getattr(statuses, name)) for name in HELD_STATUS_SETS}
    found: list[str] = []
    for rel, tree in sources:
        for node in ast.walk(tree):
            values = frozenset(_literal_strings(node))
            named = [name for name, vocabulary in held.items() if values == vocabulary]
            if named:
                found.append(f"{rel}:{node.lineno}: {named[0]}")  # type: ignore[attr-defined]
    return found


def test_statuses_are_defined_once() -> None:
    sources = [(rel, tree) for rel, tree in _sources() if rel.split("/")[0] in SERVER_PARTS
               and rel != "shared/statuses.py"]
    assert status_copies(sources) == []


def test_the_check_finds_a_copy_of_a_status_vocabulary() -> None:
    planted: list[tuple[str, ast.AST]] = [("planted.py", ast.parse('S = ["draft", "generating", "ready", "failed", "archived"]\n'
                                        'if s in ("succeeded", "failed", "canceled"): pass\n'
                                        'BUSY = ("queued", "running", "succeeded", "failed")\n'))]
    assert status_copies(planted) == ["planted.py:1: VIDEO_STATUSES", "planted.py:2: ENDED"]


def test_the_tables_and_the_api_read_the_statuses_from_their_definition() -> None:
    from reelfarm.api.schemas.jobs import JobSchema
    from reelfarm.api.schemas.renders import RenderSchema
    from reelfarm.api.schemas.videos import VideoSchema
    from reelfarm.shared import tables

    def check_of(table: Any, column: str) -> str:
        return next(str(c.sqltext) for c in table.constraints
                    if getattr(c, "sqltext", None) is not None and str(c.sqltext).startswith(f"{column} IN"))

    for table, column, vocabulary in ((tables.videos, "status", statuses.VIDEO_STATUSES),
                                      (tables.jobs, "status", statuses.JOB_STATUSES),
                                      (tables.renders, "status", statuses.RENDER_STATUSES),
                                      (tables.queued_tasks, "status", statuses.TASK_STATUSES),
                                      (tables.webhook_deliveries, "state", statuses.DELIVERY_STATES)):
        assert all(f"'{s}'" in check_of(table, column) for s in vocabulary), table.name
    for schema, vocabulary in ((VideoSchema, statuses.VIDEO_STATUSES), (JobSchema, statuses.JOB_STATUSES),
                               (RenderSchema, statuses.RENDER_STATUSES)):
        assert list(schema().fields["status"].validate.choices) == list(vocabulary)  # type: ignore[union-attr]


def default_formats(sources: list[tuple[str, ast.AST]]) -> list[str]:
    """The default format spelled as a default (an argument's, a field's, ``default=``,
    ``.get(key, ...)``) instead of named as ``spec.DEFAULT_FORMAT``. (The console's story form
    starts from the phone's format: a choice of its own, named there.)"""
    found: list[str] = []
    for rel, tree in sources:
        defaults: list[ast.expr] = []
        for node in ast.walk(tree):
            if isinstance(node, ast.arguments):
                defaults += [*node.defaults, *(d for d in node.kw_defaults if d is not None)]
            elif (isinstance(node, ast.AnnAssign) and node.value is not None
                  or isinstance(node, ast.keyword) and node.arg in ("default", "load_default", "dump_default")):
                defaults.append(node.value)  # type: ignore[arg-type]
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
                  and len(node.args) == 2):
                defaults.append(node.args[1])
        found += [f"{rel}:{d.lineno}: {d.value}" for d in defaults
                  if isinstance(d, ast.Constant) and d.value == spec.DEFAULT_FORMAT]
    return found


def test_the_default_format_is_defined_once() -> None:
    assert default_formats([(rel, tree) for rel, tree in _sources() if rel.split("/")[0] in SERVER_PARTS]) == []
    planted: list[tuple[str, ast.AST]] = [("planted.py", ast.parse('def f(fmt="16:9"): pass\nx = d.get("format", "16:9")\n'))]
    assert default_formats(planted) == ["planted.py:1: 16:9", "planted.py:2: 16:9"]
