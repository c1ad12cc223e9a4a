"""Rules of the client package kept by tests: it imports nothing server-side, its retry policy,
its OpenAPI-derived tool schemas, its login file and its field parsing."""
from __future__ import annotations

import json
import stat
import subprocess
import sys
import time
from pathlib import Path

import click
import pytest

from reelfarm import client
from reelfarm.client import config
from reelfarm.client.cli.common import parse_pairs
from reelfarm.client.mcp_server.schemas import input_schema
from reelfarm.client.retry import Retry
from tests.helpers import absolute_imports, part_of

SERVER_SIDE = {"api", "farm", "studio", "shared", "renderer", "console", "flask", "flask_smorest", "sqlalchemy",
               "rq", "redis", "psycopg2", "boto3"}


def test_the_client_imports_nothing_server_side():
    root = Path(client.__file__).parent
    offenders = [f"{file}: {module}" for file, module in absolute_imports(root) if part_of(module) in SERVER_SIDE | {"reelfarm"}]
    assert offenders == []


def test_the_client_commands_load_no_service_code_nor_httpx():
    """``reelfarm videos ...`` starts like the local commands: no web, database or queue code."""
    code = ("import json, sys\nfrom reelfarm.cli import main\nmain.get_command(None, 'videos')\n"
            "print(json.dumps(sorted(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded = {part_of(name) for name in json.loads(out)}
    assert loaded & (SERVER_SIDE - {"studio", "renderer"} | {"httpx", "mcp"}) == set()


def test_retries_follow_the_method_and_the_status():
    retry = Retry(max_retries=3, backoff=1.0, max_backoff=4.0)
    assert 0.5 <= retry.after_status(0, "POST", 503, None, None) <= 1.0
    assert 2.0 <= retry.after_status(2, "GET", 502, None, None) <= 4.0
    assert retry.after_status(3, "GET", 503, None, None) is None
    assert 7.0 <= retry.after_status(0, "GET", 429, None, 7.0) <= 7.25
    assert retry.after_status(0, "PATCH", 429, None, 2.0) is not None
    assert retry.after_status(0, "PATCH", 503, None, None) is None
    assert retry.after_status(0, "POST", 409, "idempotency_key_in_use", None) is not None
    assert retry.after_status(0, "POST", 409, "conflict", None) is None
    assert retry.after_status(0, "GET", 500, None, None) is None
    assert retry.after_error(0, "PATCH", connect_failed=True) is not None
    assert retry.after_error(0, "PATCH", connect_failed=False) is None


def test_a_connect_window_bounds_the_time_spent_reaching_a_server_not_the_count() -> None:
    windowed = Retry(max_retries=2, backoff=0.5, max_backoff=1.0, connect_window=3.0)
    elapsed, attempt = 0.0, 0
    while (delay := windowed.after_error(attempt, "GET", True, elapsed)) is not None:
        elapsed, attempt = elapsed + delay, attempt + 1
    assert elapsed < 3.0 and attempt > 2, "more tries than max_retries, all inside the window"
    assert windowed.after_error(0, "GET", True, elapsed=2.99) is None
    assert windowed.after_error(0, "GET", False, elapsed=0.0) is not None, "a read error still counts tries"
    assert windowed.after_error(2, "GET", False, elapsed=0.0) is None


def test_the_command_line_gives_up_on_a_refusing_server_within_its_connect_timeout() -> None:
    from reelfarm.client.cli.common import Session
    from reelfarm.client.errors import APIConnectionError

    session = Session("rf_live_" + "x" * 38, "http://127.0.0.1:9", as_json=False, connect_timeout=1.0)
    slept: list[float] = []
    session.client._t.sleep = lambda seconds: (slept.append(seconds), time.sleep(seconds))
    started = time.monotonic()
    with pytest.raises(APIConnectionError, match="cannot reach http://127.0.0.1:9/api/v1/me"):
        session.client.me()
    assert time.monotonic() - started < 1.0 + 0.5 and slept, "refusals retried, within the window"


DOC = {
    "paths": {
        "/api/v1/videos/{video_id}/renders": {
            "parameters": [{"in": "path", "name": "video_id", "required": True, "schema": {"type": "string"}}],
            "post": {"requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/R"}}}}},
        },
        "/api/v1/videos": {"post": {"requestBody": {"content": {"application/json": {
            "schema": {"oneOf": [{"$ref": "#/components/schemas/A"}, {"$ref": "#/components/schemas/M"},
                                 {"$ref": "#/components/schemas/B"}]}}}}}},
        "/api/v1/notes": {"post": {"requestBody": {"content": {"application/json": {
            "schema": {"oneOf": [{"type": "string"}, {"$ref": "#/components/schemas/B"}]}}}}}},
    },
    "components": {"schemas": {
        "R": {"type": "object", "properties": {"format": {"$ref": "#/components/schemas/F"}}, "required": ["format"],
              "additionalProperties": False},
        "F": {"type": "string", "enum": ["16:9", "1:1"]},
        "A": {"type": "object", "properties": {"storyId": {"const": "quote"}}},
        "M": {"type": "object", "properties": {"storyId": {"const": "memo"}}},
        "B": {"type": "object", "properties": {"brief": {"type": "string"}}},
        "Unused": {"type": "object"},
    }},
}


def test_tool_schemas_are_the_api_body_schemas_with_path_and_options_beside():
    made = input_schema(DOC, "POST", "/api/v1/videos/{video_id}/renders", {"wait": {"type": "boolean"}})
    assert made.schema == {
        "type": "object", "additionalProperties": False, "required": ["video_id", "format"],
        "properties": {"video_id": {"type": "string"}, "wait": {"type": "boolean"}, "format": {"$ref": "#/$defs/F"}},
        "$defs": {"F": {"type": "string", "enum": ["16:9", "1:1"]}},
    }
    assert made.split({"video_id": "v", "wait": True, "format": "1:1"}) == ({"video_id": "v"}, {"format": "1:1"},
                                                                             {"wait": True})


def test_a_union_of_objects_is_offered_as_one_object_of_their_properties():
    made = input_schema(DOC, "POST", "/api/v1/videos", {"wait": {"type": "boolean"}})
    assert not made.nested
    assert made.schema == {"type": "object", "additionalProperties": False, "required": [],
                           "properties": {"wait": {"type": "boolean"}, "storyId": {"type": "string", "enum": ["quote", "memo"]},
                                          "brief": {"type": "string"}}}
    assert made.split({"brief": "x", "wait": False}) == ({}, {"brief": "x"}, {"wait": False})


def test_a_summed_up_property_keeps_its_type_and_drops_the_defs_only_it_used():
    from reelfarm.client.mcp_server.schemas import summarized

    doc = {"paths": {"/api/v1/v": {"patch": {"requestBody": {"content": {"application/json": {"schema": {
        "type": "object", "additionalProperties": False, "properties": {
            "doc": {"$ref": "#/components/schemas/Doc"}, "format": {"$ref": "#/components/schemas/F"}}}}}}}}},
        "components": {"schemas": {"Doc": {"type": "object", "properties": {"f": {"$ref": "#/components/schemas/F"},
                                                                            "s": {"$ref": "#/components/schemas/S"}}},
                                   "S": {"type": "object", "properties": {"x": {"type": "number"}}},
                                   "F": {"type": "string", "enum": ["16:9", "1:1"]}}}}
    made = summarized(input_schema(doc, "PATCH", "/api/v1/v"), {"doc": "A VideoDoc (see elsewhere).", "gone": "-"})
    assert made.schema["properties"] == {"doc": {"type": "object", "description": "A VideoDoc (see elsewhere)."},
                                         "format": {"$ref": "#/$defs/F"}}
    assert made.schema["$defs"] == {"F": {"type": "string", "enum": ["16:9", "1:1"]}}  # Doc and S went with doc
    assert made.problems({"doc": {"anything": 1}, "format": "1:1"}) == []  # the API judges the document
    alone = summarized(input_schema(doc, "PATCH", "/api/v1/v"), {"doc": "d", "format": "f"})
    assert "$defs" not in alone.schema and alone.schema["properties"]["format"] == {"type": "object",
                                                                                    "description": "f"}


def test_results_are_summed_up_without_the_document():
    from reelfarm.client.mcp_server.results import listed, render_summary, version_summary, video_summary

    video = {"id": "v1", "title": "T", "status": "draft", "default_format": "1:1", "duration_sec": 6.0,
             "locale": "es", "story_id": None, "source_video_id": "v0", "brand_kit_id": "k",
             "current_version": None, "created_at": "x", "updated_at": "x",
             "job": {"id": "j1", "kind": "generate", "status": "running", "stage": "fit", "progress": 0.5,
                     "error": None, "result": None, "created_at": "x", "finished_at": None}}
    assert video_summary(video) == {"id": "v1", "title": "T", "status": "draft", "default_format": "1:1",
                                    "duration_sec": 6.0, "locale": "es", "source_video_id": "v0", "version": None,
                                    "job": {"id": "j1", "kind": "generate", "status": "running", "stage": "fit",
                                            "progress": 0.5}}
    ready = {**video, "status": "ready", "job": None, "current_version": {"number": 3, "doc": {"scenes": []}}}
    assert video_summary(ready)["version"] == 3 and "job" not in video_summary(ready)
    assert listed(video_summary)({"data": [ready], "next_cursor": None}) == {"data": [video_summary(ready)],
                                                                            "next_cursor": None}
    assert version_summary({"id": "x", "number": 2, "source": "fields", "note": None, "created_at": "t",
                            "lint": [{"code": "w"}], "doc": {}}) == {"number": 2, "id": "x", "source": "fields",
                                                                   "created_at": "t", "lint_warnings": 1}
    assert render_summary({"id": "r", "status": "queued", "url": None, "bytes": None, "version_id": "x",
                           "queue": {"frames_ahead": 3}}) == {"id": "r", "status": "queued",
                                                              "queue": {"frames_ahead": 3}}


def test_a_body_without_properties_travels_under_body():
    made = input_schema(DOC, "POST", "/api/v1/notes", {"wait": {"type": "boolean"}})
    assert made.nested and made.schema["required"] == ["body"]
    assert made.schema["properties"]["body"] == {"oneOf": [{"type": "string"}, {"$ref": "#/$defs/B"}]}
    assert sorted(made.schema["$defs"]) == ["B"]
    assert made.split({"body": {"brief": "x"}, "wait": False}) == ({}, {"brief": "x"}, {"wait": False})


def test_login_file_is_private_and_read_back(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv("REELFARM_API_KEY", raising=False)
    monkeypatch.delenv("REELFARM_API_URL", raising=False)
    path = config.save("rf_live_x", "http://h:1/api/v1/")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert config.resolve() == config.Credentials("rf_live_x", "http://h:1")
    monkeypatch.setenv("REELFARM_API_URL", "http://env:2")
    assert config.resolve(api_key="k").base_url == "http://env:2"


def test_field_values_are_typed_by_the_story_schema():
    schema = {"properties": {"title": {"type": "string"}, "count": {"type": "integer"}, "tips": {"type": "array"},
                             "image": {"type": ["string", "null"]}}}
    values = parse_pairs(["title=42", "count=42", 'tips=["a","b"]', "image=https://x/y.png", "other=a=b"], schema)
    assert values == {"title": "42", "count": 42, "tips": ["a", "b"], "image": "https://x/y.png", "other": "a=b"}
    with pytest.raises(click.BadParameter):
        parse_pairs(["count=many"], schema)
    with pytest.raises(click.BadParameter):
        parse_pairs(["novalue"], schema)
