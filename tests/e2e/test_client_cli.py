"""The ``reelfarm`` client commands as a user types them, against a real ``reelfarm serve``:
login (a 0600 file), whoami, a story video created with typed --field values, rendered with
progress and downloaded (decoded with PyAV), stills downloaded, a brief video waited for, the media
library (upload, from-url, list, delete), and exit codes for usage errors (2), API errors (3) and
timeouts (4)."""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from tests.e2e.test_client_sdk import ROOT, Served, frames_of, image_site, png_bytes

# A `reelfarm` process's own start (imports, click) on a busy two-core machine, beyond its 3 s connect timeout.
STARTUP_ALLOWANCE = 4.0


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    made = Served(tmp_path_factory.mktemp("cli"), REELFARM_FETCH_ALLOW_PRIVATE="1")
    yield made
    made.close()


class Shell:
    """Runs ``reelfarm`` with its own config dir and no key in the environment."""

    def __init__(self, home: Path) -> None:
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("REELFARM_")}
        self.env["XDG_CONFIG_HOME"] = str(home)

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "reelfarm", *args], cwd=ROOT, env=self.env, text=True,
                              capture_output=True, timeout=timeout, check=False)

    def json(self, *args: str) -> Any:
        done = self.run(*args, "--json")
        assert done.returncode == 0, done.stdout + done.stderr
        return json.loads(done.stdout)


@pytest.fixture(scope="module")
def shell(served: Served, tmp_path_factory: pytest.TempPathFactory) -> Shell:
    made = Shell(tmp_path_factory.mktemp("home"))
    done = made.run("login", "--api-url", served.base, "--api-key", served.key)
    assert done.returncode == 0, done.stderr
    assert "Logged in to workspace 'dev'" in done.stdout
    return made


def test_login_keeps_the_key_for_the_user_alone(shell: Shell) -> None:
    saved = Path(shell.env["XDG_CONFIG_HOME"]) / "reelfarm" / "credentials.json"
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    me = shell.json("whoami")
    assert (me["workspace"]["name"], me["workspace"]["plan"]) == ("dev", "pro")
    assert "credits" in shell.run("whoami").stdout


def test_a_story_video_is_created_rendered_and_downloaded(shell: Shell, tmp_path: Path) -> None:
    assert "quote" in [s["id"] for s in shell.json("stories", "list")]
    fields = shell.json("stories", "show", "stats_highlight")["fields"]["properties"]
    assert fields
    video = shell.json("videos", "create", "--story", "quote", "--field", "quote=42 is not a number here",
                       "--format", "1:1", "--duration", "6")
    assert video["status"] == "ready" and "42 is not a number here" in json.dumps(video["current_version"]["doc"])
    out = tmp_path / "out.mp4"
    done = shell.run("videos", "render", video["id"], "--resolution", "720", "--download", str(out))
    assert done.returncode == 0, done.stderr
    assert "render 1:1 720p" in done.stderr and "100%" in done.stderr and "download out.mp4" in done.stderr
    assert frames_of(out) == (720, 720, 6 * 30)

    patched = shell.json("videos", "patch", video["id"], "--field", "author=Someone", "--note", "byline")
    assert patched["current_version"]["number"] == 2
    versions = shell.json("videos", "versions", video["id"])
    assert [v["number"] for v in versions] == [1, 2] and versions[1]["note"] == "byline"
    assert shell.json("videos", "restore", video["id"], "1")["current_version"]["number"] == 3

    stills = shell.json("videos", "stills", video["id"], "--time", "1.5", "--time", "3", "--download",
                        str(tmp_path / "stills"))
    assert [s["time"] for s in stills] == [1.5, 3.0]
    assert Image.open(stills[0]["path"]).size == (1080, 1080)
    assert shell.json("videos", "archive", video["id"])["status"] == "archived"


def test_a_brief_video_is_waited_for(shell: Shell) -> None:
    video = shell.json("videos", "create", "--brief", "Three tips for better coffee at home", "--wait")
    assert video["status"] == "ready" and video["current_version"]["source"] == "generate"
    assert video["id"] in [v["id"] for v in shell.json("videos", "list", "--limit", "5")]
    assert video["id"] in shell.run("videos", "list", "--quiet").stdout.split()
    narrow = subprocess.run([sys.executable, "-m", "reelfarm", "videos", "list"], cwd=ROOT, text=True, timeout=60,
                            env={**shell.env, "COLUMNS": "80"}, capture_output=True, check=False)
    assert video["id"] in narrow.stdout.split(), narrow.stdout  # whole, even in a narrow terminal


def test_exit_codes_tell_usage_api_errors_and_timeouts_apart(shell: Shell) -> None:
    assert shell.run("videos", "create").returncode == 2
    assert shell.run("videos", "create", "--field", "a=b").returncode == 2
    missing = shell.run("videos", "show", "00000000-0000-0000-0000-000000000000", "--json")
    assert missing.returncode == 3
    assert json.loads(missing.stdout)["error"]["code"] == "not_found"
    invalid = shell.run("videos", "create", "--story", "quote", "--field", "nope=1")
    assert invalid.returncode == 3 and "/fields/nope" in invalid.stderr and "request id: req_" in invalid.stderr
    video = shell.json("videos", "create", "--brief", "A launch video for a new bicycle bell")
    timed_out = shell.run("jobs", "wait", video["job"]["id"], "--timeout", "0.01", "--json")
    assert timed_out.returncode == 4 and json.loads(timed_out.stdout)["error"]["code"] == "timeout"
    nokey = Shell(Path(shell.env["XDG_CONFIG_HOME"]) / "elsewhere").run("whoami")
    assert nokey.returncode == 2 and "reelfarm login" in nokey.stderr


def test_help_names_both_ways_to_render(shell: Shell) -> None:
    top = shell.run("--help").stdout
    assert "reelfarm render doc.json" in top and "reelfarm videos render VIDEO_ID" in top
    assert "reelfarm render DOC.json" in shell.run("videos", "render", "--help").stdout
    assert "reelfarm videos render VIDEO_ID" in shell.run("render", "--help").stdout
    assert "Examples:" in shell.run("videos", "create", "--help").stdout


def test_no_key_and_no_server_each_say_what_to_do(tmp_path: Path) -> None:
    from tests.e2e.test_serve import free_port

    fresh = Shell(tmp_path)
    no_key = fresh.run("whoami")
    assert no_key.returncode == 2, no_key.stderr
    for hint in ("--api-key", "REELFARM_API_KEY", "reelfarm login"):
        assert hint in no_key.stderr
    url = f"http://127.0.0.1:{free_port()}"
    started = time.monotonic()
    down = fresh.run("whoami", "--api-key", "rf_live_" + "x" * 38, "--api-url", url)
    assert time.monotonic() - started < 3 + STARTUP_ALLOWANCE, "refused connections retried for 3 s only"
    assert down.returncode == 3 and "Traceback" not in down.stderr
    assert f"cannot reach {url}/api/v1/me" in down.stderr, down.stderr
    as_json = json.loads(fresh.run("whoami", "--api-key", "rf_live_" + "x" * 38, "--api-url", url, "--json").stdout)
    assert as_json["error"]["code"] == "connection_failed" and as_json["error"]["url"] == f"{url}/api/v1/me"


def test_assets_are_uploaded_listed_fetched_and_deleted(shell: Shell, tmp_path: Path) -> None:
    path = tmp_path / "logo.png"
    path.write_bytes(png_bytes((120, 80), (10, 200, 10)))
    image = shell.json("assets", "upload", str(path))
    assert (image["kind"], image["width"], image["height"], image["bytes"]) == ("image", 120, 80, path.stat().st_size)
    again = shell.run("assets", "upload", str(path))
    assert again.returncode == 0 and f"asset {image['id']} image image/png" in again.stdout
    assert f"key {image['key']}" in again.stdout
    with image_site(png_bytes(colour=(1, 2, 3))) as site:
        fetched = shell.json("assets", "from-url", f"{site}/photo.png")
    assert fetched["kind"] == "image" and fetched["id"] != image["id"]
    listed = shell.json("assets", "list", "--kind", "image")
    assert [a["id"] for a in listed][:2] == [fetched["id"], image["id"]]
    assert shell.json("assets", "list", "--kind", "audio") == []
    table = shell.run("assets", "list", "--limit", "1")
    assert table.returncode == 0 and fetched["id"] in table.stdout and image["id"] not in table.stdout
    assert shell.json("assets", "delete", image["id"]) == {"deleted": image["id"]}
    gone = shell.run("assets", "delete", image["id"], "--json")
    assert gone.returncode == 3 and json.loads(gone.stdout)["error"]["code"] == "not_found"
    text = tmp_path / "notes.png"
    text.write_bytes(b"not a picture at all")
    refused = shell.run("assets", "upload", str(text))
    assert refused.returncode == 3 and "400 validation_failed" in refused.stderr and "/file:" in refused.stderr
    assert shell.run("assets", "upload", str(tmp_path / "missing.png")).returncode == 2
