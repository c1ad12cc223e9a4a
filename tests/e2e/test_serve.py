"""`reelfarm serve` as a real process, from an empty data dir to a created video, over HTTP."""
from __future__ import annotations

import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import av
import httpx

from tests.helpers import WORK_CEILING_SEC, wait_until
from tests.integration.farm.test_webhook_delivery import receiver  # noqa: F401 - a fixture

KEY_LINE = re.compile(r"API key \(shown once, keep it\): (rf_live_[0-9A-Za-z]{38})")
START_TIMEOUT = WORK_CEILING_SEC  # a ceiling: the waits end sooner when the server prints or dies


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(data_dir: Path, port: int, *, command: tuple[str, ...] = (sys.executable, "-m", "reelfarm"),
                 cwd: Path | None = None, public_url: bool = True, workers: int = 1,
                 **extra_env: str) -> tuple[subprocess.Popen[str], queue.Queue[str | None]]:
    """``reelfarm serve`` on ``port`` (``command`` runs ``reelfarm``; ``public_url=False`` leaves
    REELFARM_PUBLIC_URL unset, so the server hands out URLs of its own address)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("REELFARM_")}
    env.update(REELFARM_DATA_DIR=str(data_dir), PYTHONUNBUFFERED="1", **extra_env)
    if public_url:
        env.setdefault("REELFARM_PUBLIC_URL", f"http://127.0.0.1:{port}")
    process = subprocess.Popen(
        [*command, "serve", "--host", "127.0.0.1", "--port", str(port), "--workers", str(workers)],
        cwd=cwd or Path(__file__).resolve().parents[2], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, start_new_session=True)
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:  # keeps the pipe drained so the server never blocks on its own logging
        assert process.stdout is not None
        for line in process.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    return process, lines


def wait_for_key(lines: queue.Queue[str | None]) -> tuple[str, list[str]]:
    seen: list[str] = []
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
        except queue.Empty:
            break
        if line is None:
            break
        seen.append(line)
        if match := KEY_LINE.search(line):
            return match.group(1), seen
    raise AssertionError("no API key printed:\n" + "".join(seen))


def first_workspace_key(data_dir: Path, **extra_env: str) -> str:
    """``reelfarm admin init --json`` on a farm's database (a farm's server makes no workspace):
    the API key of the first workspace, `dev`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("REELFARM_")}
    env.update(REELFARM_DATA_DIR=str(data_dir), **extra_env)
    done = subprocess.run([sys.executable, "-m", "reelfarm", "admin", "init", "--json"], env=env,
                          capture_output=True, text=True, timeout=START_TIMEOUT,
                          cwd=Path(__file__).resolve().parents[2], check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return str(json.loads(done.stdout)["key"])


def wait_for_health(base: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        try:
            response = httpx.get(f"{base}/healthz", timeout=2)
            if response.status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise AssertionError("the server never became healthy")


def stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=5)


def test_serve_from_empty_data_dir_to_a_created_video(tmp_path):
    data_dir = tmp_path / "data"
    assert not data_dir.exists()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    process, lines = start_server(data_dir, port)
    try:
        key, printed = wait_for_key(lines)
        assert any("Created workspace 'dev'" in line for line in printed)
        wait_for_health(base)
        assert (data_dir / "reelfarm.db").is_file()

        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=30) as http:
            health = httpx.get(f"{base}/healthz", timeout=5)
            assert health.json() == {"status": "ok", "checks": {"database": "ok", "queue": "ok"}}
            assert health.headers["X-Request-Id"].startswith("req_")
            assert not any(ch.isdigit() for ch in health.headers.get("Server", "")), "server version leaked"

            assert httpx.get(f"{base}/api/v1/stories", timeout=5).status_code == 401

            stories = http.get("/api/v1/stories")
            assert stories.status_code == 200
            story = stories.json()["data"][0]
            field = next(name for name, prop in story["fields"]["properties"].items()
                         if prop["type"] == "string" and "format" not in prop and "enum" not in prop
                         and prop.get("maxLength", 100) >= len("Hello e2e"))

            me = http.get("/api/v1/me").json()
            assert (me["workspace"]["name"], me["workspace"]["plan"], me["workspace"]["credits"]) == ("dev", "pro", 100)

            created = http.post("/api/v1/videos", json={"storyId": story["id"], "fields": {field: "Hello e2e"},
                                                        "format": "1:1", "durationSec": 8},
                                headers={"X-Request-Id": "e2e-create-1"})
            assert created.status_code == 201, created.text
            assert created.headers["X-Request-Id"] == "e2e-create-1"
            video = created.json()
            assert (video["status"], video["story_id"], video["default_format"], video["duration_sec"]) == (
                "ready", story["id"], "1:1", 8.0)
            assert video["current_version"]["number"] == 1 and video["job"] is None

            fetched = http.get(f"/api/v1/videos/{video['id']}")
            assert fetched.status_code == 200
            assert fetched.json() == video
            assert "Hello e2e" in fetched.text

            # The serving process's embedded farm renders it: no Redis, no separate worker.
            render = http.post(f"/api/v1/videos/{video['id']}/renders", json={"format": "1:1", "resolution": 720})
            assert render.status_code == 202, render.text
            state = wait_until(lambda: (s := http.get(f"/api/v1/renders/{render.json()['id']}").json())["status"]
                               in ("succeeded", "failed", "canceled") and s, "the render ending")
            assert state["status"] == "succeeded", state
            mp4 = httpx.get(state["url"], timeout=30)
            assert mp4.status_code == 200 and mp4.content[4:8] == b"ftyp"
            (tmp_path / "e2e.mp4").write_bytes(mp4.content)
            with av.open(str(tmp_path / "e2e.mp4")) as container:
                assert sum(1 for _ in container.decode(video=0)) == 8 * 30

            missing = http.get("/api/v1/videos/00000000-0000-0000-0000-000000000000")
            assert missing.status_code == 404
            assert missing.headers["Content-Type"] == "application/json"
            assert missing.json()["error"]["code"] == "not_found"
    finally:
        stop(process)
    # stopped with SIGTERM after a render (its task processes started): a clean exit, no traceback
    assert process.returncode == 0
    said = printed_after(lines)
    assert "Traceback" not in said and "Bad file descriptor" not in said, said[-4000:]


def printed_after(lines: queue.Queue[str | None]) -> str:
    """Whatever the server printed that is still in ``lines``, up to its end (the pipe closed)."""
    out: list[str] = []
    while (line := lines.get(timeout=START_TIMEOUT)) is not None:
        out.append(line)
    return "".join(out)


def test_webhooks_arrive_signed_from_a_real_server(tmp_path, receiver):  # noqa: F811
    """A comment made over HTTP reaches a real receiver once, signed, through the serving
    process's own embedded executor (outbox -> dispatcher -> delivery task)."""
    from standardwebhooks import Webhook

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    process, lines = start_server(tmp_path / "data", port, REELFARM_FETCH_ALLOW_PRIVATE="1")
    try:
        key, _ = wait_for_key(lines)
        wait_for_health(base)
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=30) as http:
            hook = http.post("/api/v1/webhooks", json={"url": receiver.url, "events": ["comment.created"]})
            assert hook.status_code == 201, hook.text
            secret = hook.json()["secret"]
            video = http.post("/api/v1/videos", json={"storyId": "quote", "durationSec": 6}).json()
            comment = http.post(f"/api/v1/videos/{video['id']}/comments", json={"body": "Looks great"})
            assert comment.status_code == 201, comment.text
            wait_until(lambda: receiver.requests, "the comment.created delivery")
            time.sleep(6)  # one more dispatch round: nothing is sent twice
        assert len(receiver.requests) == 1
        event = Webhook(secret).verify(receiver.requests[0].body, receiver.requests[0].headers)
        assert event["type"] == "comment.created" and event["data"]["comment"]["id"] == comment.json()["id"]
        assert receiver.requests[0].headers["webhook-id"] == event["id"]
    finally:
        stop(process)
