#!/usr/bin/env python3
"""Runs the README's first command as written, as a new user would, and uses what it starts.

In a copy of this checkout (tracked files and files git does not ignore; no `.venv`, no `.reelfarm`),
the first ``sh`` block of the README's "Set-up" section runs as written: the system packages script,
a fresh virtual environment, the package without extras, ``reelfarm serve``. Then, as the person
trying it would:

- ``/healthz`` answers;
- the API key the first start printed is read from its output, and with it a video is made from a
  story and a short MP4 rendered (1:1, 720p, 24 fps, 6 s);
- the MP4 is downloaded from the render's signed ``url`` and decoded to the end with PyAV, from the
  new virtual environment (frames counted against the render's own numbers).

The server is stopped with SIGTERM and the copy removed. Standard library only: it runs before
anything is installed. ``REELFARM_PORT`` is set to a free port so that a server already on 8000 does
not matter; the command itself is not changed. CI runs it (``.ci/run``) before the test command.

    python3 scripts/check-first-command.py [--keep]
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KEY = re.compile(r"\brf_live_[A-Za-z0-9_\-]+")
# Ceilings that only stop a hung check; none is a claim about speed. The install downloads and
# builds everything the package needs.
START_CEILING_SEC = 30 * 60
RENDER_CEILING_SEC = 15 * 60


def first_command() -> str:
    section = (ROOT / "README.md").read_text().split("## Set-up", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.*?)```", section, re.DOTALL)[0].strip()


def copy_checkout(target: Path) -> None:
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            check=True, capture_output=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if not source.exists() and not source.is_symlink():
            continue  # deleted in the working tree
        dest = target / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            dest.symlink_to(os.readlink(source))
        else:
            shutil.copy2(source, dest)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Printed:
    """What the command prints, read as it comes (and echoed, so CI's log shows the install)."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.text = ""
        self._lock = threading.Lock()
        threading.Thread(target=self._read, args=(process,), daemon=True).start()

    def _read(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdout is not None
        for raw in iter(process.stdout.readline, b""):
            line = raw.decode(errors="replace")
            sys.stdout.write("  | " + line)
            sys.stdout.flush()
            with self._lock:
                self.text += line


def call(method: str, url: str, key: str | None = None, body: dict | None = None) -> tuple[int, dict]:
    headers = {"Accept": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def fail(message: str, printed: Printed | None = None) -> None:
    if printed is not None:
        sys.stderr.write("what the command printed, last 60 lines:\n" + "\n".join(printed.text.splitlines()[-60:]) + "\n")
    raise SystemExit(f"check-first-command: {message}")


def check(base: str, process: subprocess.Popen[bytes], printed: Printed, venv_python: Path) -> None:
    deadline = time.monotonic() + START_CEILING_SEC
    while True:
        if process.poll() is not None:
            fail(f"the command ended (exit {process.returncode}) before the server answered /healthz", printed)
        try:
            with urllib.request.urlopen(base + "/healthz", timeout=5) as response:
                if response.status == 200:
                    break
        except (urllib.error.URLError, OSError):
            pass
        if time.monotonic() > deadline:
            fail("no answer on /healthz", printed)
        time.sleep(1)
    print(f"check-first-command: {base}/healthz answers")

    keys = KEY.findall(printed.text)
    if not keys:
        fail("the first start printed no API key", printed)
    key, api = keys[0], base + "/api/v1"

    status, video = call("POST", api + "/videos", key, {"storyId": "flash_sale", "format": "1:1", "durationSec": 6,
                                                        "fields": {"discount": "30% off"}})
    if status != 201:
        fail(f"creating a video answered {status}: {video}", printed)
    status, render = call("POST", f"{api}/videos/{video['id']}/renders", key,
                          {"format": "1:1", "resolution": 720, "fps": 24})
    if status != 202:
        fail(f"asking for a render answered {status}: {render}", printed)
    deadline = time.monotonic() + RENDER_CEILING_SEC
    while render["status"] not in ("succeeded", "failed", "canceled"):
        if time.monotonic() > deadline:
            fail(f"the render is still {render['status']}", printed)
        time.sleep(1)
        status, render = call("GET", f"{api}/renders/{render['id']}", key)
    if render["status"] != "succeeded":
        fail(f"the render {render['status']}: {render.get('error')}", printed)

    with urllib.request.urlopen(render["url"], timeout=60) as response:
        mp4 = response.read()
    if mp4[4:8] != b"ftyp":
        fail(f"the download is not an MP4 ({len(mp4)} bytes)")
    decode = ("import av, io, sys, json; c = av.open(io.BytesIO(sys.stdin.buffer.read())); s = c.streams.video[0]; "
              "n = sum(1 for _ in c.decode(s)); print(json.dumps([n, s.codec_context.name, s.width, s.height]))")
    decoded = subprocess.run([str(venv_python), "-c", decode], input=mp4, capture_output=True, check=False)
    if decoded.returncode != 0:
        fail(f"PyAV could not decode the download: {decoded.stderr.decode()[-2000:]}")
    frames, codec, width, height = json.loads(decoded.stdout)
    if (codec, width, height) != ("h264", 720, 720) or frames != 6 * 24:
        fail(f"the MP4 holds {frames} frames of {codec} {width}x{height}; 144 frames of h264 720x720 expected")
    print(f"check-first-command: rendered and downloaded {len(mp4)} bytes, decoded {frames} frames of "
          f"{codec} {width}x{height}")


def main() -> None:
    keep = "--keep" in sys.argv[1:]
    command = first_command()
    place = Path(tempfile.mkdtemp(prefix="reelfarm-first-command-"))
    copy_checkout(place)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REELFARM_", "VIRTUAL_ENV", "PYTHONPATH"))}
    env.update(REELFARM_PORT=str(port), PYTHONUNBUFFERED="1")
    print(f"check-first-command: in {place}, on port {port}: {command}")
    process = subprocess.Popen(["bash", "-c", command], cwd=place, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, start_new_session=True)
    printed = Printed(process)
    try:
        check(f"http://127.0.0.1:{port}", process, printed, place / ".venv" / "bin" / "python")
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        if not keep:
            shutil.rmtree(place, ignore_errors=True)
    print("check-first-command: the README's first command works as written")


if __name__ == "__main__":
    main()
