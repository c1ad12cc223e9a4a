"""What the SDK tells about each answer and each wait, against an httpx ``MockTransport`` stand-in:
results carry the request id and rate limit of the answer they came in (``last_response``), an
``on_response`` hook sees every answer; ``stories.get`` asks the one-story endpoint and its 404 has
the server's request id; a rate-limited call waits at most ``Retry.max_wait`` in all, warns when
the server asks for a wait and tells ``on_retry``; an empty ``api_key`` is refused; uploads take
bytes and ``(name, content, type)`` tuples; the package has a ``__version__``. The blocking and the
awaited client alike where they differ."""
from __future__ import annotations

import json
import logging
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

import reelfarm.client
from reelfarm.client import (
    AsyncClient,
    Client,
    NotFoundError,
    RateLimitError,
    ReelfarmError,
    ResponseInfo,
    Retry,
    RetryEvent,
)

KEY = "rf_live_" + "x" * 38
BASE = "http://api.test"
STORY = {"id": "quote", "name": "Quote", "category": "social", "description": "d", "default_duration_sec": 6.0,
         "fields": {"type": "object", "properties": {}}}
ASSET = {"id": "a1", "kind": "image", "content_type": "image/png", "bytes": 4, "key": "assets/w/a.png",
         "url": "http://files/a", "created_at": "2026-11-28T10:00:00Z"}
LIMITS = {"RateLimit-Limit": "600", "RateLimit-Remaining": "599", "RateLimit-Reset": "41",
          "RateLimit-Policy": "600;w=60"}
Handler = Callable[[httpx.Request], httpx.Response]


def answer(status: int, body: Any, request_id: str = "req_abc", **headers: str) -> httpx.Response:
    return httpx.Response(status, json=body, headers={"X-Request-Id": request_id, **LIMITS, **headers})


def not_found(request_id: str) -> httpx.Response:
    return answer(404, {"error": {"code": "not_found", "message": "No story 'nope'.", "details": None,
                                  "request_id": request_id}}, request_id)


def client(handler: Handler, **options: Any) -> Client:
    http = httpx.Client(base_url=BASE, transport=httpx.MockTransport(handler))
    made = Client(api_key=KEY, base_url=BASE, http=http, **options)
    made._t.sleep = lambda seconds: None
    return made


def test_results_carry_the_request_id_and_rate_limit_of_their_answer() -> None:
    seen: list[ResponseInfo] = []
    with client(lambda r: answer(200, {"data": [STORY]}, "req_list"), on_response=seen.append) as rf:
        stories = rf.stories.list()
    info = stories[0].last_response
    assert info is not None and stories[0].request_id == info.request_id == "req_list"
    assert (info.method, info.path, info.status, info.replayed) == ("GET", "/stories", 200, False)
    assert info.rate_limit is not None
    assert (info.rate_limit.limit, info.rate_limit.remaining, info.rate_limit.reset_sec,
            info.rate_limit.policy) == (600, 599, 41, "600;w=60")
    assert seen == [info] and "last_response" not in repr(stories[0])


def test_stories_get_asks_for_one_story_and_its_404_names_the_servers_request() -> None:
    asked: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        asked.append(request.url.path)
        return answer(200, STORY, "req_one") if request.url.path.endswith("/quote") else not_found("req_missing")
    with client(handler) as rf:
        assert rf.stories.get("quote").request_id == "req_one"
        with pytest.raises(NotFoundError) as caught:
            rf.stories.get("nope")
    assert asked == ["/api/v1/stories/quote", "/api/v1/stories/nope"]  # never the whole list
    assert caught.value.request_id == "req_missing"


def test_a_rate_limited_call_waits_at_most_max_wait_and_says_so(caplog: pytest.LogCaptureFixture) -> None:
    limited = answer(429, {"error": {"code": "rate_limited", "message": "slow down", "details": None,
                                     "request_id": "req_429"}}, "req_429", **{"Retry-After": "25"})
    tries: list[int] = []
    slept: list[float] = []
    events: list[RetryEvent] = []
    caplog.set_level(logging.INFO, logger="reelfarm.client")
    with client(lambda r: tries.append(1) or limited, on_retry=events.append) as rf:  # type: ignore[func-returns-value]
        rf._t.sleep = slept.append
        with pytest.raises(RateLimitError) as caught:
            rf.me()
    # 25 s, 25 s waited; a third wait would pass the default 60 s: raised at once, not after 10 minutes
    assert len(tries) == 3 and len(slept) == 2 and 50 <= sum(slept) <= 60
    assert caught.value.retry_after == 25 and caught.value.request_id == "req_429"
    assert [(e.attempt, e.status, e.retry_after, e.reason) for e in events] == [
        (1, 429, 25, "429 rate_limited"), (2, 429, 25, "429 rate_limited")]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings[0].startswith("retrying GET /me in 25.") and "not retrying GET /me" in warnings[-1]

    tries.clear()
    with client(lambda r: tries.append(1) or limited) as rf, pytest.raises(RateLimitError):  # type: ignore[func-returns-value]
        rf.with_options(max_wait=10).me()
    assert len(tries) == 1  # a wait of 25 s is past 10 s: none
    assert Retry().max_wait == 60.0 and Retry(max_wait=None).allows_wait(600, 120)


def test_the_awaited_client_says_the_same() -> None:
    events: list[RetryEvent] = []
    seen: list[ResponseInfo] = []
    answers = iter([answer(503, {"error": {"code": "unavailable", "message": "m", "details": None}}, "req_1"),
                    answer(200, STORY, "req_2", **{"Idempotent-Replayed": "true"})])

    async def main() -> str | None:
        http = httpx.AsyncClient(base_url=BASE, transport=httpx.MockTransport(lambda r: next(answers)))
        async with AsyncClient(api_key=KEY, base_url=BASE, http=http, on_retry=events.append,
                               on_response=seen.append, retry=Retry(backoff=0.01)) as rf:
            story = await rf.stories.get("quote")
            assert story.last_response is not None and story.last_response.replayed
            return story.request_id
    assert anyio.run(main) == "req_2"
    assert [(e.attempt, e.status) for e in events] == [(1, 503)] and [i.request_id for i in seen] == ["req_2"]


def test_an_empty_api_key_is_refused_not_replaced_by_the_saved_login(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("REELFARM_API_KEY", KEY)
    for empty in ("", "  "):
        with pytest.raises(ReelfarmError, match="api_key is empty"):
            Client(api_key=empty)
        with pytest.raises(ReelfarmError, match="api_key is empty"):
            AsyncClient(api_key=empty)
    with Client() as rf:
        assert rf.api_key == KEY  # left out, the environment's


def test_uploads_take_bytes_and_name_content_type_tuples() -> None:
    bodies: list[bytes] = []

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(request.read())
        return answer(201, ASSET)
    with client(handler) as rf:
        assert rf.assets.upload(b"\x89PNG").id == "a1"
        rf.assets.upload(("logo.png", b"\x89PNG", "image/png"))
        rf.assets.upload(("logo.png", bytearray(b"\x89PNG")))
    assert all(b"\r\n\r\n\x89PNG\r\n--" in body for body in bodies)
    assert b'filename="upload"' in bodies[0] and b"Content-Type: application/octet-stream" in bodies[0]
    assert b'filename="logo.png"\r\nContent-Type: image/png' in bodies[1]
    assert b'filename="logo.png"\r\nContent-Type: application/octet-stream' in bodies[2]


def test_the_package_has_its_distributions_version() -> None:
    project = tomllib.loads((Path(reelfarm.client.__file__).parent / "pyproject.toml").read_text())
    assert reelfarm.client.__version__ == project["project"]["version"]
    with Client(api_key=KEY, base_url=BASE) as rf:
        assert rf._t.http.headers["User-Agent"] == f"reelfarm-python/{reelfarm.client.__version__}"


def test_a_result_made_by_hand_has_no_answer() -> None:
    from reelfarm.client import Story
    story = Story.from_dict(json.loads(json.dumps(STORY)))
    assert story.last_response is None and story.request_id is None
