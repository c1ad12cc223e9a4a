"""What the client commands print when their output is piped, against a scripted loopback stand-in
for the API: a wait prints a line per change of state (or JSON lines with ``--progress json``),
``renders download`` saves a finished render's MP4, ``renders show`` prints only the URLs a render
has, ``assets list`` keeps a key whole past 80 columns, and ``videos --help`` names
``reelfarm render`` only in the install that has it."""
from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from reelfarm.client._sync import client as sync_client
from reelfarm.client.cli.main import main as client_main

KEY = "rf_live_" + "x" * 38
STAMP = "2026-11-28T10:00:00Z"
RENDER = {"id": "r1", "video_id": "v1", "version_id": "x1", "format": "1:1", "resolution": 720, "fps": 30,
          "status": "queued", "progress": 0.0, "url": None, "poster_url": None, "duration_sec": None, "bytes": None,
          "error": None, "created_at": STAMP, "finished_at": None}
MP4 = b"\x00\x00\x00\x18ftypmp42" + b"\x00" * 500


class Stand:
    """Answers GET paths from a script (each path's answers in turn, the last one kept)."""

    def __init__(self, script: dict[str, list[Any]]) -> None:
        self.script, self.seen = script, []
        stand = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                path = self.path.split("?")[0]
                stand.seen.append(path)
                answers = stand.script.get(path.removeprefix("/api/v1")) or [b""]
                answer = answers[min(stand.seen.count(path), len(answers)) - 1]
                raw = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
                self.send_response(200 if answer != b"" else 404)
                self.send_header("Content-Type", "video/mp4" if isinstance(answer, bytes) else "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def run(self, *args: str) -> Any:
        return CliRunner().invoke(client_main, [*args, "--api-url", self.base, "--api-key", KEY])


@pytest.fixture
def stand() -> Iterator[Any]:
    made: list[Stand] = []

    def make(script: dict[str, list[Any]]) -> Stand:
        made.append(Stand(script))
        return made[-1]
    yield make
    for one in made:
        one.server.shutdown()
        one.server.server_close()


@pytest.fixture(autouse=True)
def quick_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sync_client, "intervals", lambda: iter([0.0] * 1000))


def _states(base: str) -> list[dict[str, Any]]:
    running = {**RENDER, "status": "running", "progress": 0.4}
    return [RENDER, RENDER, {**RENDER, "status": "running", "progress": 0.2}, running, running,
            {**running, "status": "succeeded", "progress": 1.0, "url": f"{base}/files/r1.mp4"}]


def test_a_piped_wait_prints_a_line_per_change_of_state(stand: Any) -> None:
    api = stand({})
    api.script["/renders/r1"] = _states(api.base)
    done = api.run("renders", "wait", "r1")
    assert done.exit_code == 0, done.output
    lines = done.stderr.splitlines()
    assert lines == ["render 1:1 720p r1: queued 0%", "render 1:1 720p r1: running 20%",
                     "render 1:1 720p r1: succeeded 100%"], done.stderr


def test_progress_json_prints_json_lines(stand: Any, tmp_path: Path) -> None:
    api = stand({"/files/r1.mp4": [MP4]})
    api.script["/renders/r1"] = _states(api.base)
    done = api.run("renders", "wait", "r1", "--progress", "json", "--download", str(tmp_path / "out.mp4"))
    assert done.exit_code == 0, done.output
    events = [json.loads(line) for line in done.stderr.splitlines()]
    assert [(e["event"], e["status"]) for e in events] == [
        ("state", "queued"), ("state", "running"), ("state", "succeeded"), ("transfer", "started"),
        ("transfer", "done")]
    assert events[2]["progress"] == 1.0 and events[-1]["bytes"] == len(MP4)


def test_renders_download_saves_a_finished_render(stand: Any, tmp_path: Path, monkeypatch) -> None:
    api = stand({"/files/r1.mp4": [MP4]})
    api.script["/renders/r1"] = [{**RENDER, "status": "succeeded", "progress": 1.0, "url": f"{api.base}/files/r1.mp4"}]
    monkeypatch.chdir(tmp_path)
    done = api.run("renders", "download", "r1")
    assert done.exit_code == 0, done.output
    assert (tmp_path / "r1.mp4").read_bytes() == MP4 and "saved to r1.mp4" in done.stdout
    done = api.run("renders", "download", "r1", "-o", str(tmp_path / "named.mp4"), "--json")
    assert done.exit_code == 0 and json.loads(done.stdout)["path"] == str(tmp_path / "named.mp4")

    api.script["/renders/r2"] = [{**RENDER, "id": "r2", "status": "running"}]
    early = api.run("renders", "download", "r2")
    assert early.exit_code == 2 and "reelfarm renders wait r2 --download" in early.stderr
    api.script["/renders/r3"] = [{**RENDER, "id": "r3", "status": "failed", "error": "no engine"}]
    failed = api.run("renders", "download", "r3")
    assert failed.exit_code == 5 and "no engine" in failed.stderr


def test_renders_show_prints_only_the_urls_a_render_has(stand: Any) -> None:
    api = stand({"/renders/r1": [{**RENDER, "status": "running", "progress": 0.5}]})
    done = api.run("renders", "show", "r1")
    assert done.exit_code == 0 and "None" not in done.stdout, done.stdout
    assert "url:" not in done.stdout and "reelfarm renders wait r1 --download" in done.stdout


def test_assets_list_keeps_the_key_whole_when_piped(stand: Any) -> None:
    key = "assets/0c6f6b9e-3e39-4a53-9a4b-3d2c1e0f9a8b/" + "f" * 64 + ".png"
    asset = {"id": "a1b2c3d4-0000-4000-8000-000000000001", "kind": "image", "content_type": "image/png",
             "bytes": 5000, "key": key, "width": 10, "height": 20, "url": "http://f/a", "created_at": STAMP}
    api = stand({"/assets": [{"data": [asset], "next_cursor": None}]})
    done = api.run("assets", "list")
    assert done.exit_code == 0, done.output
    assert key in done.stdout and "image/png" in done.stdout and "10x20" in done.stdout


def test_videos_help_names_reelfarm_render_only_where_it_is_installed() -> None:
    from reelfarm.cli import main as server_main

    for group in (client_main, server_main):
        for args in (["videos", "--help"], ["videos", "render", "--help"]):
            shown = CliRunner().invoke(group, args)
            assert shown.exit_code == 0, shown.output
            assert ("reelfarm render DOC.json" in shown.output) == (group is server_main), (group, args)
