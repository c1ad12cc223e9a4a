"""The SDK's calling options against a scripted loopback stand-in for the API: a translated copy
waited for until its translation job ends, 402 and 422 as typed errors, each retry logged at INFO
with its reason and delay, ``with_options`` (timeout, retries) for some calls only, in the blocking
and the awaited client alike; and the API's value sets as ``Literal`` types a type checker holds."""
from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, get_args

import anyio
import pytest
from mypy import api as mypy

from reelfarm.client import (
    APITimeoutError,
    AsyncClient,
    Client,
    IdempotencyMismatchError,
    InsufficientCreditsError,
    InternalServerError,
    Retry,
    TaskFailed,
)
from reelfarm.client.literals import Fps, PriorityName, Resolution, TaskStatusName, VideoFormat, VideoStatusName

KEY = "rf_live_" + "x" * 38
ROOT = Path(__file__).resolve().parents[3]
STAMP = "2026-11-25T10:00:00Z"
JOB = {"id": "j1", "kind": "generate", "status": "running", "stage": "translate", "progress": 0.1, "error": None,
       "result": None, "created_at": STAMP, "finished_at": None}
VERSION = {"id": "x2", "number": 1, "source": "translate", "note": None, "lint": [], "created_at": STAMP,
           "doc": {"version": 1}}
COPY = {"id": "c1", "title": "t (es)", "status": "draft", "story_id": "quote", "brand_kit_id": None,
        "default_format": "1:1", "duration_sec": 6.0, "locale": "es", "source_video_id": "v1",
        "current_version": None, "job": JOB, "created_at": STAMP, "updated_at": STAMP}
TRANSLATING = [COPY, {**COPY, "job": {**JOB, "stage": "fit", "progress": 0.6}},
               {**COPY, "status": "ready", "job": None, "current_version": VERSION}]
FAILED = [COPY, {**COPY, "status": "failed", "job": {**JOB, "status": "failed", "error": "no engine"}}]


def envelope(status: int, code: str) -> tuple[int, dict[str, Any], dict[str, str]]:
    return status, {"error": {"code": code, "message": code.replace("_", " "), "details": None,
                              "request_id": "req_1"}}, {}


class ScriptedAPI:
    """Answers from a script: path -> the answers given in turn (the last one kept); each answer is
    (status, JSON, headers) or a number of seconds to stall before a 200. Every request is recorded."""

    def __init__(self, script: dict[str, list[Any]]) -> None:
        self.script, self.seen = script, []
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self.reply()

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.reply()

            def reply(self) -> None:
                path = self.path.removeprefix("/api/v1")
                api.seen.append((self.command, path))
                answers = api.script.get(path) or [envelope(404, "not_found")]
                answer = answers[min(sum(1 for _, p in api.seen if p == path) - 1, len(answers) - 1)]
                if isinstance(answer, (int, float)):
                    time.sleep(answer)
                    answer = (200, {"data": []}, {})
                status, body, headers = answer if isinstance(answer, tuple) else (200, answer, {})
                raw = json.dumps(body).encode()
                self.send_response(status)
                for name, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def count(self, path: str) -> int:
        return sum(1 for _, p in self.seen if p == path)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def scripted() -> Iterator[Any]:
    made: list[ScriptedAPI] = []

    def start(script: dict[str, list[Any]]) -> ScriptedAPI:
        made.append(ScriptedAPI(script))
        return made[-1]

    yield start
    for api in made:
        api.close()


def test_a_translated_copy_is_waited_for_until_its_translation_ends(scripted: Any) -> None:
    api = scripted({"/videos/c1": TRANSLATING, "/videos/c2": FAILED})
    stages: list[str] = []
    with Client(api_key=KEY, base_url=api.base) as rf:
        ready = rf.videos.wait("c1", timeout=30, on_progress=lambda v: stages.append(v.job.stage if v.job else "-"))
        assert ready.status == "ready" and ready.current_version is not None
        assert ready.current_version.source == "translate" and ready.current_version.number == 1
        assert stages == ["translate", "fit", "-"] and api.count("/videos/c1") == 3
        with pytest.raises(TaskFailed, match="no engine"):
            rf.videos.wait("c2", timeout=30)

    async def awaited() -> Any:
        async with AsyncClient(api_key=KEY, base_url=api.base) as rf:
            return await rf.videos.wait("c1", timeout=30)

    assert anyio.run(awaited).status == "ready"


def test_402_and_422_are_typed_errors(scripted: Any) -> None:
    api = scripted({"/videos/v1/renders": [envelope(402, "insufficient_credits")],
                    "/videos": [envelope(422, "idempotency_key_mismatch")]})
    with Client(api_key=KEY, base_url=api.base) as rf:
        with pytest.raises(InsufficientCreditsError) as poor:
            rf.videos.render("v1", format="1:1")
        assert (poor.value.status, poor.value.code) == (402, "insufficient_credits")
        with pytest.raises(IdempotencyMismatchError) as reused:
            rf.videos.create(story_id="quote", fields={"quote": "x"}, idempotency_key="k-1")
        assert (reused.value.status, reused.value.code, reused.value.request_id) == (422, "idempotency_key_mismatch",
                                                                                      "req_1")
    assert api.count("/videos") == 1  # a mismatch is not retried


def test_each_retry_is_logged_at_info_with_its_reason_and_delay(scripted: Any,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    limited = (429, {"error": {"code": "rate_limited", "message": "slow down", "details": None,
                               "request_id": "req_2"}}, {"Retry-After": "0"})
    api = scripted({"/me": [limited, envelope(503, "unavailable"), (200, {"workspace": {}, "rate_limit": {},
                                                                           "api_key": {}}, {})]})
    caplog.set_level(logging.INFO, logger="reelfarm.client")
    with Client(api_key=KEY, base_url=api.base, retry=Retry(backoff=0.05)) as rf:
        rf.me()
    records = [r for r in caplog.records if r.name == "reelfarm.client"]
    assert [r.levelno for r in records] == [logging.INFO, logging.INFO]
    first, second = (r.getMessage() for r in records)
    assert first.startswith("retrying GET /me in 0.") and first.endswith("(retry 1): 429 rate_limited"), first
    assert second.startswith("retrying GET /me in 0.") and second.endswith("(retry 2): 503 unavailable"), second
    assert records[0].retry_reason == "429 rate_limited" and 0 <= records[0].retry_delay <= 0.25  # type: ignore[attr-defined]


def test_options_for_some_calls_only_share_the_pool_and_leave_the_client_as_it_was(scripted: Any) -> None:
    api = scripted({"/me": [envelope(503, "unavailable"), (200, {"workspace": {}, "rate_limit": {}, "api_key": {}},
                                                           {})],
                    "/stories": [1.0]})
    with Client(api_key=KEY, base_url=api.base, retry=Retry(backoff=0.05)) as rf:
        hasty = rf.with_options(max_retries=0)
        with pytest.raises(InternalServerError):
            hasty.me()
        assert api.count("/me") == 1
        rf.me()  # the client itself still retries (the 503 is behind it now: one more answer)
        assert api.count("/me") == 2
        started = time.monotonic()
        with pytest.raises(APITimeoutError):
            rf.with_options(timeout=0.2, max_retries=0).stories.list()
        assert time.monotonic() - started < 0.9
        with rf.with_options(timeout=5) as patient:
            assert patient.stories.list() == []
        assert rf.stories.list() == []  # closing the copy left the pool open
        assert rf._t.http is hasty._t.http and rf._t.retry.max_retries == 5

    async def awaited() -> None:
        async with AsyncClient(api_key=KEY, base_url=api.base) as rf:
            with pytest.raises(APITimeoutError):
                await rf.with_options(timeout=0.2, max_retries=0).stories.list()
            assert await rf.with_options(timeout=5).stories.list() == []

    anyio.run(awaited)


def test_the_literal_types_hold_the_apis_values() -> None:
    from reelfarm.client.models import TaskStatus, VideoStatus
    from reelfarm.renderer.spec import FORMATS, FPS_CHOICES, RESOLUTIONS

    assert set(get_args(VideoFormat)) == set(FORMATS)
    assert set(get_args(Resolution)) == set(RESOLUTIONS) and set(get_args(Fps)) == set(FPS_CHOICES)
    assert set(get_args(PriorityName)) == {"normal", "low"}
    assert set(get_args(TaskStatusName)) == {s.value for s in TaskStatus}
    assert set(get_args(VideoStatusName)) == {s.value for s in VideoStatus}


BAD_VALUES = '''\
from reelfarm.client import AsyncClient, Client


def fine(rf: Client) -> None:
    rf.videos.render("v1", format="9:16", resolution=1080, fps=30, priority="low")
    rf.with_options(timeout=5, max_retries=0).videos.variants("v1", ["1:1", "4:5"], resolution=720)


def wrong(rf: Client) -> None:
    rf.videos.render("v1", format="9:17")
    rf.videos.render("v1", format="1:1", resolution=1000)
    rf.videos.render("v1", format="1:1", fps=25)
    rf.videos.create(story_id="quote", format="3:2")


async def wrong_too(rf: AsyncClient) -> None:
    await rf.render_video("v1", priority="urgent")
'''


def test_a_type_checker_refuses_a_value_the_api_does_not_take(tmp_path: Path, monkeypatch) -> None:
    script = tmp_path / "user_values.py"
    script.write_text(BAD_VALUES)
    monkeypatch.chdir(ROOT)
    stdout, stderr, _status = mypy.run(["--strict", "--follow-imports=silent", "--no-incremental",
                                        "--python-version", "3.11", str(script)])
    lines = sorted(int(line.split(":")[1]) for line in stdout.splitlines() if ": error:" in line)
    assert lines == [10, 11, 12, 13, 17], stdout + stderr
    assert "incompatible type \"Literal['9:17']\"; expected \"Literal['16:9', '9:16', '1:1', '4:5']\"" in stdout
