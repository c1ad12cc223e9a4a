"""Retries provoked for real: a tiny rate limit (429 and ``Retry-After``), a serve stopped and started
again on the same port and data dir (refused connections), a PostgreSQL stopped under a serve (503
``unavailable``). The SDK and the ``reelfarm`` command both ride them out, and a POST retried
across them creates one object."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from reelfarm.client import Client, Retry
from tests.e2e.test_client_sdk import ROOT, Served
from tests.e2e.test_farm_outages import Farm
from tests.e2e.test_serve import start_server, stop, wait_for_health

PATIENT = Retry(max_retries=12, backoff=0.25, max_backoff=2.0)


def cli(served_env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REELFARM_")}
    env.update(served_env)
    return subprocess.Popen([sys.executable, "-m", "reelfarm", *args, "--json"], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def recording_client(base: str, key: str, seen: list[httpx.Response]) -> Client:
    http = httpx.Client(base_url=base, timeout=30, headers={"Authorization": f"Bearer {key}"},
                        event_hooks={"response": [seen.append]})
    return Client(api_key=key, base_url=base, http=http, retry=PATIENT)


def in_thread(work: Any) -> tuple[threading.Thread, dict[str, Any]]:
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["value"] = work()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            out["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    return thread, out


def test_429_is_waited_out_by_the_sdk_and_the_cli(tmp_path: Path) -> None:
    served = Served(tmp_path, REELFARM_RATE_LIMIT_PRO="3")
    try:
        with httpx.Client(base_url=served.base, headers={"Authorization": f"Bearer {served.key}"}) as raw:
            answers = [raw.get("/api/v1/me") for _ in range(4)]
        assert [a.status_code for a in answers] == [200, 200, 200, 429]
        retry_after = int(answers[-1].headers["Retry-After"])
        started = time.monotonic()
        command = cli({"REELFARM_API_URL": served.base, "REELFARM_API_KEY": served.key}, "whoami")
        seen: list[httpx.Response] = []
        with recording_client(served.base, served.key, seen) as rf:
            me = rf.me()
        out, err = command.communicate(timeout=120)
        assert me.workspace["name"] == "dev" and me.rate_limit["limit"] == 3
        assert seen[0].status_code == 429 and seen[-1].status_code == 200
        assert time.monotonic() - started >= retry_after - 1
        assert command.returncode == 0, err
        assert json.loads(out)["workspace"]["name"] == "dev"
    finally:
        served.close()


def test_a_restarted_server_is_retried_through_and_the_post_lands_once(tmp_path: Path) -> None:
    served = Served(tmp_path)
    env = {"REELFARM_API_URL": served.base, "REELFARM_API_KEY": served.key, "REELFARM_CONNECT_TIMEOUT": "60"}
    try:
        stop(served.process)
        with Client(api_key=served.key, base_url=served.base, retry=PATIENT) as rf:
            thread, out = in_thread(lambda: rf.videos.create(story_id="quote", title="through a restart",
                                                             duration_sec=6))
            command = cli(env, "videos", "create", "--story", "quote", "--title", "cli through a restart")
            time.sleep(1.5)
            served.process, served.lines = start_server(tmp_path / "data", served.port)
            wait_for_health(served.base)
            thread.join(60)
            cli_out, cli_err = command.communicate(timeout=60)
            assert "error" not in out, out.get("error")
            assert command.returncode == 0, cli_err
            titles = sorted(v.title for v in rf.videos.list())
        assert out["value"].status == "ready" and json.loads(cli_out)["status"] == "ready"
        assert titles == ["cli through a restart", "through a restart"]
    finally:
        served.close()


def test_503_from_a_stopped_database_is_retried_and_the_post_lands_once(tmp_path: Path) -> None:
    farm = Farm(tmp_path)
    try:
        seen: list[httpx.Response] = []
        with recording_client(farm.base, farm.key, seen) as rf:
            farm.postgres.shut_down()
            thread, out = in_thread(lambda: rf.videos.create(story_id="quote", title="through an outage",
                                                             duration_sec=6))
            time.sleep(2)
            farm.postgres.launch()
            thread.join(60)
            assert "error" not in out, out.get("error")
            outage = [r for r in seen if r.status_code == 503]
            assert outage and outage[0].headers["Retry-After"] == "5"
            assert outage[0].json()["error"]["code"] == "unavailable"
            keys = {r.request.headers["Idempotency-Key"] for r in seen if r.request.method == "POST"}
            assert len(keys) == 1
            assert [v.title for v in rf.videos.list()] == ["through an outage"]
    finally:
        farm.close()
