"""Watching a render while it renders: how soon its first second plays, against the whole render.

    sudo python -m benchmarks.watch [--seconds 60] [--resolution 1080] [--backends embedded,rq]

The video is ``benchmarks.reuse``'s six scenes with crossfades (60 s at 1080p30 by default), put
through the API (``PATCH /videos/{id}`` with its document), then rendered once per backend:

- ``embedded``: ``reelfarm serve`` on a fresh data dir (SQLite, the embedded executor);
- ``rq``: ``reelfarm serve`` and two ``reelfarm worker`` nodes on PostgreSQL and Redis, each on a
  host of its own (``tests/e2e/partitioned.py``, which is why it needs root).

From the render request it polls every 0.1 s: ``first_second``, when the render's stream playlist
(``stream_url``) first lists at least one second of video, and ``full``, when the render is
``succeeded``. The figure is their ratio, measured in the same run (target: at most 0.15). Prints a
table and writes ``benchmarks/results/watch-<UTC time>.json``.
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import m3u8

from benchmarks.reuse import six_scene_doc

RESULTS = Path(__file__).resolve().parent / "results"
TARGET = 0.15


def playable_sec(url: str | None) -> float:
    if not url:
        return 0.0
    answer = httpx.get(url, timeout=30)
    return sum(s.duration for s in m3u8.loads(answer.text).segments) if answer.status_code == 200 else 0.0


def api_doc(seconds: float) -> dict[str, Any]:
    """``six_scene_doc`` with its layer ids made unique across scenes, as the API asks."""
    doc = six_scene_doc(seconds, 6)
    for scene in doc["scenes"]:
        for layer in scene.get("layers", []):
            layer["id"] = f"{layer['id']}-{scene['id']}"
    return doc


def measure(api: httpx.Client, seconds: float, resolution: int) -> dict[str, Any]:
    video = api.post("/videos", json={"storyId": "flash_sale", "format": "16:9"}).json()
    patched = api.patch(f"/videos/{video['id']}", json={"doc": api_doc(seconds)})
    assert patched.status_code == 200, patched.text
    began = time.monotonic()
    render = api.post(f"/videos/{video['id']}/renders", json={"format": "16:9", "resolution": resolution, "fps": 30})
    assert render.status_code == 202, render.text
    render_id = render.json()["id"]
    first = None
    while True:
        shown = api.get(f"/renders/{render_id}").json()
        if first is None and playable_sec(shown.get("stream_url")) >= 1.0:
            first = time.monotonic() - began
        if shown["status"] in ("succeeded", "failed", "canceled"):
            break
        time.sleep(0.1)
    full = time.monotonic() - began
    return {"status": shown["status"], "first_second_sec": round(first, 2) if first else None,
            "full_sec": round(full, 2), "ratio": round(first / full, 3) if first else None,
            "chunks": len(m3u8.loads(httpx.get(shown["stream_url"], timeout=30).text).segments)
            if shown.get("stream_url") else 0}


def embedded(root: Path, seconds: float, resolution: int) -> dict[str, Any]:
    from tests.e2e.test_serve import free_port, start_server, stop, wait_for_health, wait_for_key

    port = free_port()
    process, lines = start_server(root / "embedded", port)
    try:
        key, _ = wait_for_key(lines)
        wait_for_health(f"http://127.0.0.1:{port}")
        with httpx.Client(base_url=f"http://127.0.0.1:{port}/api/v1", timeout=60,
                          headers={"Authorization": f"Bearer {key}"}) as api:
            return measure(api, seconds, resolution)
    finally:
        stop(process)


def rq(root: Path, seconds: float, resolution: int) -> dict[str, Any]:
    from tests.e2e.partitioned import PartitionedFarm

    farm = PartitionedFarm(root / "rq")
    try:
        farm.start_node("node-a", frame_sec="0")
        farm.start_node("node-b", frame_sec="0")
        time.sleep(5)  # both heartbeating before the render is asked for
        return measure(farm.http, seconds, resolution)
    finally:
        farm.close()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.watch", description=__doc__.split("\n")[0])
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--resolution", type=int, default=1080)
    p.add_argument("--backends", default="embedded,rq")
    p.add_argument("--out", type=Path, default=RESULTS)
    args = p.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="reelfarm-watch-"))
    runs = {"embedded": embedded, "rq": rq}
    result: dict[str, Any] = {"when": datetime.now(UTC).isoformat(), "seconds": args.seconds,
                              "resolution": args.resolution, "target_ratio": TARGET, "backends": {}}
    print(f"{'backend':<9} {'first 1 s':>10} {'full':>8} {'ratio':>7}  target <= {TARGET}")
    for name in [b.strip() for b in args.backends.split(",") if b.strip()]:
        got = runs[name](root, args.seconds, args.resolution)
        result["backends"][name] = got
        print(f"{name:<9} {got['first_second_sec']!s:>9}s {got['full_sec']:>7}s {got['ratio']!s:>7}  "
              f"{got['status']}, {got['chunks']} segments", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"watch-{datetime.now(UTC):%Y%m%dT%H%M%S}.json"
    path.write_text(json.dumps(result, indent=1))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
