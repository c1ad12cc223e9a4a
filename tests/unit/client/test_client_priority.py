"""Render priority and queue position in every client surface, against a loopback stand-in for the
API: the SDK (blocking and awaited) sends ``priority`` only when asked and reads ``Render.queue``;
the command line takes ``--priority``, says where a waiting render stands and passes the JSON on as
it came; the MCP tools word ``priority`` for agents and report the queue in their progress."""
from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anyio
import pytest
from click.testing import CliRunner

from reelfarm.client import AsyncClient, Client, Priority, Render, RenderQueue, TaskStatus
from reelfarm.client.cli.main import main
from reelfarm.client.cli.progress import queue_position, render_state

KEY = "rf_live_" + "x" * 38
START = (datetime.now(UTC) + timedelta(minutes=2)).replace(microsecond=0)
VIDEO = {"id": "v1", "title": "t", "status": "ready", "story_id": "quote", "brand_kit_id": None,
         "default_format": "1:1", "duration_sec": 6.0, "current_version": None, "job": None,
         "created_at": "2026-11-25T10:00:00Z", "updated_at": "2026-11-25T10:00:00Z"}
RENDER = {"id": "r1", "video_id": "v1", "version_id": "x1", "format": "1:1", "resolution": 720, "fps": 30,
          "status": "queued", "progress": 0.0, "url": None, "poster_url": None, "duration_sec": None, "bytes": None,
          "error": None, "created_at": "2026-11-25T10:00:00Z", "finished_at": None, "reused_frames": 0}
WAITING: dict[str, Any] = {"frames_ahead": 1234, "chunks_waiting": 4, "estimated_start_at": START.isoformat()}
QUEUED = {**RENDER, "queue": WAITING}
RUNNING = {**RENDER, "status": "running", "progress": 0.5,
           "queue": {"frames_ahead": 0, "chunks_waiting": 1, "estimated_start_at": None}}
DONE = {**RENDER, "status": "succeeded", "progress": 1.0, "url": "http://files.invalid/r1.mp4",
        "finished_at": "2026-11-25T10:01:00Z", "queue": None}


class FakeAPI:
    """The API's render endpoints on 127.0.0.1: a render's states answered in turn (the last one
    kept), each request recorded as (method, path, JSON body or None)."""

    def __init__(self, states: list[dict[str, Any]], *, old: bool = False) -> None:
        self.states, self.old = states, old  # old: a server from before priorities
        self.seen: list[tuple[str, str, Any]] = []
        self.polls = 0
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                api.seen.append(("GET", self.path, None))
                if self.path == "/api/v1/videos/v1":
                    return self.answer(200, VIDEO)
                if self.path == "/api/v1/renders/r1":
                    api.polls += 1
                    return self.answer(200, api.render(api.states[min(api.polls, len(api.states) - 1)]))
                return self.answer(404, {"error": {"code": "not_found", "message": self.path}})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                api.seen.append(("POST", self.path, body))
                api.priority = body.get("priority", "normal")
                if self.path == "/api/v1/videos/v1/renders":
                    return self.answer(201, api.render(api.states[0]))
                if self.path == "/api/v1/videos/v1/variants":
                    renders = [api.render({**api.states[0], "id": f"r{i}", "format": f})
                               for i, f in enumerate(body["formats"], 1)]
                    return self.answer(201, {"renders": renders, "translations": []})
                return self.answer(404, {"error": {"code": "not_found", "message": self.path}})

            def answer(self, status: int, data: Any) -> None:
                raw = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.priority = "normal"  # of the last render asked for
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def render(self, state: dict[str, Any]) -> dict[str, Any]:
        """``state`` as the server sends it: with the priority of the last request made."""
        if self.old:
            return {k: v for k, v in state.items() if k != "queue"}
        return {**state, "priority": self.priority}

    def bodies(self) -> list[Any]:
        return [body for method, _, body in self.seen if method == "POST"]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def api() -> Iterator[FakeAPI]:
    made = FakeAPI([QUEUED, RUNNING, DONE])
    yield made
    made.close()


def clock(at: datetime) -> str:
    """How the command line shows a time: local, the date added when it is not today."""
    local = at.astimezone()
    return f"{local:%H:%M:%S}" if local.date() == datetime.now().astimezone().date() else f"{local:%Y-%m-%d %H:%M:%S}"


def test_a_render_reads_its_priority_and_queue_and_an_older_servers_answer_still_reads() -> None:
    render = Render.from_dict({**QUEUED, "priority": "low"})
    assert render.priority == "low" and render.priority is Priority.LOW
    assert render.queue == RenderQueue(1234, 4, START, raw=WAITING)
    assert render.queue.estimated_start_at is not None and render.queue.estimated_start_at.tzinfo is not None
    running = Render.from_dict({**RUNNING, "priority": "normal"})
    assert running.queue is not None and running.queue.estimated_start_at is None
    finished = Render.from_dict({**DONE, "priority": "normal"})
    assert finished.queue is None and finished.priority is Priority.NORMAL
    older = Render.from_dict(RENDER)  # no priority, no queue
    assert older.priority == "normal" and older.queue is None and "queue" not in older.raw
    newer = Render.from_dict({**RENDER, "priority": "background", "queue": None})
    assert newer.priority == "background" and not isinstance(newer.priority, Priority)


def test_the_sdk_sends_priority_only_when_asked_and_follows_the_queue_to_the_end(api: FakeAPI) -> None:
    seen: list[Render] = []
    with Client(api_key=KEY, base_url=api.base) as rf:
        rf.videos.render("v1", format="1:1")
        started = rf.videos.render("v1", format="1:1", resolution=720, priority="low")
        done = rf.render_video("v1", priority=Priority.LOW, on_progress=seen.append)
        variants = rf.videos.variants("v1", ["16:9", "9:16"], priority="low")
        rf.videos.variants("v1", ["1:1"])
    assert api.bodies() == [{"format": "1:1"}, {"format": "1:1", "resolution": 720, "priority": "low"},
                            {"format": "1:1", "priority": "low"}, {"formats": ["16:9", "9:16"], "priority": "low"},
                            {"formats": ["1:1"]}]
    assert started.priority == "low" and started.queue is not None and started.queue.frames_ahead == 1234
    assert [(s.status, s.queue and s.queue.chunks_waiting) for s in seen] == [(TaskStatus.RUNNING, 1),
                                                                               (TaskStatus.SUCCEEDED, None)]
    assert done.status == "succeeded" and done.queue is None and done.priority == "low"
    assert [(r.format, r.priority, r.queue is not None) for r in variants.renders] == [("16:9", "low", True),
                                                                                       ("9:16", "low", True)]


def test_the_awaited_sdk_does_the_same(api: FakeAPI) -> None:
    seen: list[Render] = []

    async def go() -> tuple[Render, Render]:
        async with AsyncClient(api_key=KEY, base_url=api.base) as rf:
            started = await rf.videos.render("v1", format="9:16", priority="low")
            done = await rf.renders.wait(started.id, on_progress=seen.append)
            await rf.videos.variants("v1", ["1:1"], resolution=720, priority="normal")
            return started, done

    started, done = anyio.run(go)
    assert api.bodies() == [{"format": "9:16", "priority": "low"},
                            {"formats": ["1:1"], "resolution": 720, "priority": "normal"}]
    assert started.queue is not None and started.queue.estimated_start_at == START
    assert any(s.status == "running" and s.queue is not None for s in seen) and done.queue is None


def test_the_queue_is_said_in_local_time_with_the_date_when_not_today() -> None:
    at = datetime(2026, 11, 25, 10, 0, 5, tzinfo=UTC)
    local = at.astimezone()
    queue = RenderQueue(1234567, 3, at)
    assert queue_position(queue, now=at) == f"1,234,567 frames ahead, starts ~{local:%H:%M:%S}"
    assert queue_position(queue, now=at + timedelta(days=2)) == \
        f"1,234,567 frames ahead, starts ~{local:%Y-%m-%d %H:%M:%S}"
    assert queue_position(RenderQueue(0, 1, None)) == "0 frames ahead"
    running = Render.from_dict({**RUNNING, "queue": {"frames_ahead": 80, "chunks_waiting": 2,
                                                     "estimated_start_at": None}})
    assert render_state(running) == "running, 2 chunks waiting: 80 frames ahead"
    assert render_state(Render.from_dict(QUEUED)) == f"waiting: 1,234 frames ahead, starts ~{clock(START)}"
    assert render_state(Render.from_dict(DONE)) == "succeeded"


def cli(api: FakeAPI, *args: str) -> Any:
    return CliRunner().invoke(main, [*args, "--api-url", api.base, "--api-key", KEY],
                              env={"COLUMNS": "200", "REELFARM_API_KEY": None, "REELFARM_API_URL": None})


def test_the_command_line_takes_a_priority_and_says_where_a_waiting_render_stands(api: FakeAPI) -> None:
    started = cli(api, "videos", "render", "v1", "--priority", "low", "--no-wait")
    assert started.exit_code == 0, started.output
    assert started.stdout == (f"render r1 queued (low priority)\n"
                              f"waiting: 1,234 frames ahead, starts ~{clock(START)}\n")
    shown = cli(api, "renders", "show", "r1")  # the next state: running, one chunk still waiting
    assert shown.exit_code == 0, shown.output
    assert "running (low priority) 50%\nrunning, 1 chunk waiting: 0 frames ahead\nno MP4 yet" in shown.stdout
    as_json = cli(api, "videos", "render", "v1", "--no-wait", "--json")
    assert json.loads(as_json.stdout) == {**QUEUED, "priority": "normal"}  # the fields as they came
    followed = cli(api, "videos", "render", "v1", "--format", "1:1", "--priority", "low")
    assert followed.exit_code == 0, followed.output
    assert followed.stdout == "render r1 succeeded (low priority): http://files.invalid/r1.mp4\n"
    assert api.bodies() == [{"format": "1:1", "priority": "low"}, {"format": "1:1"},
                            {"format": "1:1", "priority": "low"}]
    refused = cli(api, "videos", "render", "v1", "--priority", "urgent")
    assert refused.exit_code == 2 and "'urgent' is not one of 'normal', 'low'" in refused.output


def test_a_render_timed_out_in_the_queue_leaves_its_place_on_the_bar() -> None:
    api = FakeAPI([QUEUED])
    try:
        done = cli(api, "videos", "render", "v1", "--format", "1:1", "--timeout", "0.3")
    finally:
        api.close()
    assert done.exit_code == 4, done.output
    assert f"waiting: 1,234 frames ahead, starts ~{clock(START)}" in done.stderr
    assert "timed out: render r1 not finished after 0.3 s (status queued)" in done.stderr


def test_variants_take_a_priority_and_show_each_renders_place(api: FakeAPI) -> None:
    done = cli(api, "videos", "variants", "v1", "--format", "16:9", "--format", "9:16", "--priority", "low")
    assert done.exit_code == 0, done.output
    assert api.bodies() == [{"formats": ["16:9", "9:16"], "priority": "low"}]
    header, *rows = done.stdout.splitlines()
    assert re.split(r"\s{2,}", header.strip()) == ["render", "format", "priority", "status", "waiting", "url"]
    assert [re.split(r"\s{2,}", row.strip()) for row in rows] == [
        ["r1", "16:9", "low", "queued", f"1,234 frames ahead, starts ~{clock(START)}"],
        ["r2", "9:16", "low", "queued", f"1,234 frames ahead, starts ~{clock(START)}"]]
    as_json = cli(api, "videos", "variants", "v1", "--format", "1:1", "--json")
    assert json.loads(as_json.stdout)["renders"][0]["queue"] == QUEUED["queue"]
    assert api.bodies()[-1] == {"formats": ["1:1"]}


def test_an_older_servers_render_reads_as_normal_with_no_queue() -> None:
    api = FakeAPI([RENDER], old=True)
    try:
        with Client(api_key=KEY, base_url=api.base) as rf:
            render = rf.videos.render("v1", format="1:1")
        shown = cli(api, "renders", "show", "r1")
    finally:
        api.close()
    assert render.priority == "normal" and render.queue is None
    assert shown.exit_code == 0 and "waiting" not in shown.stdout and "priority" not in shown.stdout


# The MCP tools (the `mcp` extra).
RENDER_BODY = {"type": "object", "additionalProperties": False, "required": ["format"],
               "properties": {"format": {"type": "string"}, "priority": {"$ref": "#/components/schemas/Priority"}}}
VARIANTS_BODY = {"type": "object", "additionalProperties": False, "required": ["formats"],
                 "properties": {"formats": {"type": "array", "items": {"type": "string"}},
                                "priority": {"$ref": "#/components/schemas/Priority"}}}


def document(*, with_priority: bool = True) -> dict[str, Any]:
    """The operations the tools name (the API's document, cut down), the render bodies with or
    without ``priority``."""
    def body(schema: dict[str, Any]) -> dict[str, Any]:
        if not with_priority:
            schema = {**schema, "properties": {k: v for k, v in schema["properties"].items() if k != "priority"}}
        return {"requestBody": {"content": {"application/json": {"schema": schema}}}}

    video_id = [{"in": "path", "name": "video_id", "required": True, "schema": {"type": "string"}}]
    paths: dict[str, Any] = {}
    from reelfarm.client.mcp_server.tools import TOOLS

    for tool in TOOLS:
        params = [{"in": "path", "name": n, "required": True, "schema": {"type": "string"}}
                  for n in re.findall(r"{(\w+)}", tool.path)]
        paths.setdefault(tool.path, {})[tool.method.lower()] = {"parameters": params}
    paths["/api/v1/videos/{video_id}/renders"]["post"] = {"parameters": video_id, **body(RENDER_BODY)}
    paths["/api/v1/videos/{video_id}/variants"]["post"] = {"parameters": video_id, **body(VARIANTS_BODY)}
    priority = {"type": "string", "enum": ["normal", "low"], "description": "The API's own words."}
    return {"paths": paths, "components": {"schemas": {"Priority": priority}}}


def test_the_render_tools_word_priority_for_agents_and_offer_it_only_where_the_api_takes_it() -> None:
    pytest.importorskip("mcp_types")
    from reelfarm.client.mcp_server.tools import Toolbox

    tools = {t.name: t for t in Toolbox.from_openapi(document()).listing()}
    for name in ("render_video", "render_variants"):
        offered = tools[name].input_schema["properties"]["priority"]
        assert offered["$ref"] == "#/$defs/Priority", "the type and values stay the API's"
        assert 'Use "low" for large batches' in offered["description"]
        assert tools[name].input_schema["$defs"]["Priority"]["enum"] == ["normal", "low"]
        assert "priority" not in tools[name].input_schema["required"]
    older = {t.name: t for t in Toolbox.from_openapi(document(with_priority=False)).listing()}
    assert "priority" not in older["render_video"].input_schema["properties"]
    assert "priority" not in older["render_variants"].input_schema["properties"]


def test_the_render_tool_sends_priority_and_reports_the_queue_while_it_waits(api: FakeAPI) -> None:
    pytest.importorskip("mcp_types")
    from reelfarm.client.mcp_server.tools import Toolbox

    toolbox = Toolbox.from_openapi(document())
    reports: list[tuple[float, float | None, str | None]] = []

    async def report(progress: float, total: float | None, message: str | None) -> None:
        reports.append((progress, total, message))

    async def go() -> Any:
        async with AsyncClient(api_key=KEY, base_url=api.base) as rf:
            rendered = await toolbox.call("render_video", {"video_id": "v1", "format": "1:1", "priority": "low",
                                                           "wait": True, "timeout": 30}, rf, report)
            wrong = await toolbox.call("render_video", {"video_id": "v1", "format": "1:1", "priority": "soon"},
                                       rf, report)
            return rendered, wrong

    rendered, wrong = anyio.run(go)
    assert not rendered.is_error and rendered.structured_content["status"] == "succeeded"
    assert api.bodies() == [{"format": "1:1", "priority": "low"}]
    messages = [m for _, _, m in reports]
    assert "render running: 1 chunk waiting, 0 frames ahead" in messages
    assert messages[-1] == "render succeeded"
    assert wrong.is_error and wrong.structured_content["error"]["code"] == "invalid_arguments"
