"""The LLM writer against a real HTTP server on 127.0.0.1 that speaks the chat-completions shape.

``FakeChatServer`` stands in for the paid model only: it answers what each test tells it to,
and records every request as it arrived.
"""
from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

import httpx
import pytest

from reelfarm.studio.llm import LLMWriter
from reelfarm.studio.stories import list_stories
from reelfarm.studio.writer import Brief, BuiltinWriter

BRIEF = Brief(text="Our spring sale is on: 40% off everything in store. Use code SPRING40 at checkout. "
                   "The sale ends Sunday at midnight. Shop now at shop.example.com/sale", brand_name="Acme")
GOOD_FIELDS = {
    "kicker": "Spring sale", "discount": "40% OFF", "headline": "Everything in store is 40% off",
    "code": "SPRING40", "ends": "Ends Sunday at midnight", "cta": "Shop now", "url": "shop.example.com/sale",
    "badge_color": None, "theme": "dark",
}


class FakeChatServer:
    """A loopback ``/v1/chat/completions`` endpoint with a programmable answer."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.status = 200
        self.content: str = "{}"
        self.delay = 0.0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_: object) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                server.requests.append({"path": self.path, "headers": dict(self.headers), "body": json.loads(body)})
                time.sleep(server.delay)
                answer = {"id": "chatcmpl-1", "object": "chat.completion", "model": "test-model",
                          "choices": [{"index": 0, "finish_reason": "stop",
                                       "message": {"role": "assistant", "content": server.content}}]}
                data = json.dumps(answer).encode() if server.status == 200 else b'{"error": {"message": "boom"}}'
                try:
                    self.send_response(server.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up waiting: what the timeout test wants

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def answer(self, payload: Any) -> None:
        self.content = payload if isinstance(payload, str) else json.dumps(payload)

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def chat() -> Iterator[FakeChatServer]:
    with FakeChatServer() as server:
        yield server


def make(chat: FakeChatServer, timeout: float = 10) -> LLMWriter:
    return LLMWriter(chat.base_url, "test-model", "sk-test", fallback=BuiltinWriter(), timeout=timeout)


def test_a_good_answer_is_used(chat: FakeChatServer) -> None:
    chat.answer({"story_id": "flash_sale", "title": "Spring sale", "fields": GOOD_FIELDS})
    script = make(chat).write(BRIEF)
    assert script.writer == "llm"
    assert script.story_id == "flash_sale"
    assert script.title == "Spring sale"
    assert script.fields == GOOD_FIELDS


def test_the_request_carries_model_key_and_json_mode(chat: FakeChatServer) -> None:
    chat.answer({"story_id": "flash_sale", "title": "Spring sale", "fields": GOOD_FIELDS})
    make(chat).write(BRIEF)
    [request] = chat.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["Authorization"] == "Bearer sk-test"
    body = request["body"]
    assert body["model"] == "test-model"
    assert body["response_format"] == {"type": "json_object"}
    system, user = body["messages"]
    assert system["role"] == "system" and user["role"] == "user"
    for story in list_stories():
        assert f'"id":"{story.id}"' in system["content"]
        assert story.description in system["content"]
    assert json.loads(user["content"])["brief"] == BRIEF.text


@pytest.mark.parametrize("answer", [
    "this is not JSON",
    '["a", "list"]',
    {"story_id": "no_such_story", "title": "x", "fields": {}},
    {"story_id": "flash_sale", "title": "x", "fields": {**GOOD_FIELDS, "discount": "an offer far too long"}},
    {"story_id": "flash_sale", "title": "x", "fields": {**GOOD_FIELDS, "colour": "red"}},
    {"story_id": "flash_sale", "title": "x", "fields": {k: v for k, v in GOOD_FIELDS.items() if k != "discount"}},
    {"story_id": "flash_sale", "title": "x", "fields": {**GOOD_FIELDS, "discount": "50% OFF"}},
], ids=["not-json", "not-an-object", "unknown-story", "too-long", "unknown-field", "missing-required",
        "invented-figure"])
def test_an_unusable_answer_falls_back_to_the_builtin_writer(chat: FakeChatServer, answer: Any) -> None:
    chat.answer(answer)
    script = make(chat).write(BRIEF)
    assert script.writer == "builtin"
    assert script == BuiltinWriter().write(BRIEF)
    assert len(chat.requests) == 1


def test_a_server_error_falls_back(chat: FakeChatServer) -> None:
    chat.status = 500
    script = make(chat).write(BRIEF)
    assert script.writer == "builtin"
    assert script.story_id == "flash_sale"
    assert len(chat.requests) == 1


def test_a_slow_answer_falls_back_after_the_timeout(chat: FakeChatServer) -> None:
    chat.answer({"story_id": "flash_sale", "title": "Spring sale", "fields": GOOD_FIELDS})
    chat.delay = 2.0
    script = make(chat, timeout=0.3).write(BRIEF)
    assert script.writer == "builtin"


def test_an_unreachable_server_falls_back() -> None:
    with FakeChatServer() as server:
        base_url = server.base_url
    writer = LLMWriter(base_url, "test-model", None, fallback=BuiltinWriter(), timeout=2)
    assert writer.write(BRIEF).writer == "builtin"


def test_a_given_client_is_used_and_no_key_sends_no_authorization(chat: FakeChatServer) -> None:
    chat.answer({"story_id": "flash_sale", "title": "Spring sale", "fields": GOOD_FIELDS})
    with httpx.Client() as client:
        writer = LLMWriter(chat.base_url, "test-model", None, fallback=BuiltinWriter(), client=client)
        assert writer.write(BRIEF).writer == "llm"
    assert "Authorization" not in chat.requests[0]["headers"]
