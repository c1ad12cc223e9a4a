"""`reelfarm admin backup` of a real embedded server while it serves and writes, restored into a
fresh data folder and served again: every video, version, render and asset it held reads back,
each in its own workspace."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import av
import httpx
from PIL import Image

from tests.e2e.test_serve import START_TIMEOUT, free_port, start_server, stop, wait_for_health, wait_for_key
from tests.helpers import wait_until

ROOT = Path(__file__).resolve().parents[2]


def reelfarm(data_dir: Path, *args: str) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REELFARM_")}
    env["REELFARM_DATA_DIR"] = str(data_dir)
    done = subprocess.run([sys.executable, "-m", "reelfarm", *args, "--json"], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=START_TIMEOUT, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def png(color: tuple[int, int, int]) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (64, 48), color).save(out, format="PNG")
    return out.getvalue()


def client(base: str, key: str) -> httpx.Client:
    return httpx.Client(base_url=f"{base}/api/v1", headers={"Authorization": f"Bearer {key}"}, timeout=60)


def make_video(http: httpx.Client, text: str) -> dict[str, Any]:
    story = http.get("/stories").json()["data"][0]
    field = next(name for name, prop in story["fields"]["properties"].items()
                 if prop["type"] == "string" and "format" not in prop and "enum" not in prop
                 and prop.get("maxLength", 100) >= 12)
    created = http.post("/videos", json={"storyId": story["id"], "fields": {field: text}, "format": "1:1",
                                         "durationSec": 6})
    assert created.status_code == 201, created.text
    return dict(created.json(), edit_field=field)


def all_videos(http: httpx.Client) -> list[dict[str, Any]]:
    videos, cursor = [], None
    while True:
        page = http.get("/videos", params={"limit": 100, **({"cursor": cursor} if cursor else {})}).json()
        videos += page["data"]
        cursor = page.get("next_cursor")
        if not cursor:
            return videos


def decoded_frames(content: bytes, path: Path) -> int:
    path.write_bytes(content)
    with av.open(str(path)) as container:
        return sum(1 for _ in container.decode(video=0))


def test_a_backup_taken_while_serving_restores_every_video_render_and_asset(tmp_path: Path) -> None:
    source, restored, archive = tmp_path / "source", tmp_path / "restored", tmp_path / "backup.tar.gz"
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    process, lines = start_server(source, port)
    try:
        key_a, _ = wait_for_key(lines)
        wait_for_health(base)
        other = reelfarm(source, "admin", "create-workspace", "other", "--plan", "pro", "--credits", "50")
        key_b = reelfarm(source, "admin", "create-key", other["id"], "--name", "backup-test")["key"]
        with client(base, key_a) as http_a, client(base, key_b) as http_b:
            video = make_video(http_a, "first take")
            edited = http_a.patch(f"/videos/{video['id']}", json={"fields": {video["edit_field"]: "second take"}})
            assert edited.status_code == 200, edited.text
            assert edited.json()["current_version"]["number"] == 2
            render = http_a.post(f"/videos/{video['id']}/renders", json={"format": "1:1", "resolution": 720})
            assert render.status_code == 202, render.text
            done = wait_until(lambda: (s := http_a.get(f"/renders/{render.json()['id']}").json())["status"]
                              in ("succeeded", "failed", "canceled") and s, "the render ending")
            assert done["status"] == "succeeded", done
            before_mp4 = httpx.get(done["url"], timeout=60).content
            asset_a = http_a.post("/assets", files={"file": ("red.png", png((220, 30, 30)), "image/png")})
            asset_b = http_b.post("/assets", files={"file": ("blue.png", png((30, 30, 220)), "image/png")})
            assert asset_a.status_code == asset_b.status_code == 201, asset_a.text + asset_b.text
            video_b = make_video(http_b, "other place")

            # The server keeps writing while the backup is taken.
            stop_writing, written = threading.Event(), []

            def write() -> None:
                with client(base, key_a) as writer:
                    while not stop_writing.is_set():
                        written.append(make_video(writer, f"during {len(written)}")["id"])

            writer = threading.Thread(target=write)
            writer.start()
            try:
                wait_until(lambda: len(written) >= 2, "videos written before the backup")
                backup = reelfarm(source, "admin", "backup", str(archive))
                seen = len(written)
                wait_until(lambda: len(written) >= seen + 2, "videos written after the backup")
            finally:
                stop_writing.set()
                writer.join(timeout=120)
            before = {v["id"] for v in all_videos(http_a)}
    finally:
        stop(process)

    assert archive.stat().st_mode & 0o777 == 0o600
    assert backup["files"] >= 3  # the render's MP4 and poster, and the two pictures at least
    done_restore = reelfarm(tmp_path, "admin", "restore", str(archive), "--data-dir", str(restored))
    assert done_restore["revision"] == done_restore["backup_revision"] == backup["revision"]

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    process, _ = start_server(restored, port)
    try:
        wait_for_health(base)
        with client(base, key_a) as http_a, client(base, key_b) as http_b:
            videos_a = {v["id"]: v for v in all_videos(http_a)}
            assert {video["id"], *written[:2]} <= set(videos_a) <= before
            for each in videos_a.values():  # every row the snapshot holds reads back whole
                versions = http_a.get(f"/videos/{each['id']}/versions").json()["data"]
                assert [v["number"] for v in sorted(versions, key=lambda v: v["number"])] == list(
                    range(1, each["current_version"]["number"] + 1))
                for number in range(1, each["current_version"]["number"] + 1):
                    assert http_a.get(f"/videos/{each['id']}/versions/{number}").status_code == 200

            renders = http_a.get(f"/videos/{video['id']}/renders").json()["data"]
            assert [r["id"] for r in renders] == [done["id"]]
            again = http_a.get(f"/renders/{done['id']}").json()
            assert again["status"] == "succeeded"
            mp4 = httpx.get(again["url"], timeout=60)
            assert mp4.status_code == 200 and mp4.content == before_mp4
            assert decoded_frames(mp4.content, tmp_path / "restored.mp4") == 6 * 30

            for http, asset, color in ((http_a, asset_a.json(), (220, 30, 30)), (http_b, asset_b.json(), (30, 30, 220))):
                fetched = http.get(f"/assets/{asset['id']}")
                assert fetched.status_code == 200
                picture = httpx.get(fetched.json()["url"], timeout=60)
                assert picture.status_code == 200 and picture.content == png(color)

            # Each workspace's objects are its own, as before.
            assert [v["id"] for v in all_videos(http_b)] == [video_b["id"]]
            assert http_b.get(f"/videos/{video['id']}").status_code == 404
            assert http_a.get(f"/videos/{video_b['id']}").status_code == 404
            assert http_b.get(f"/assets/{asset_a.json()['id']}").status_code == 404
            assert http_a.get(f"/assets/{asset_b.json()['id']}").status_code == 404
            assert http_b.get("/me").json()["workspace"]["name"] == "other"
    finally:
        stop(process)
