"""An unreachable database is an outage, not a bug: a real ``reelfarm serve`` answers 503
``unavailable`` with ``Retry-After`` while its PostgreSQL is stopped, logs one warning line per
request and no traceback, and serves again as soon as the database is back."""
from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e.test_farm_outages import Farm, make_video


@pytest.fixture
def farm(tmp_path: Path) -> Iterator[Farm]:
    made = Farm(tmp_path)
    yield made
    made.close()


def test_a_stopped_database_answers_503_unavailable_and_recovers(farm: Farm) -> None:
    video = make_video(farm)
    assert farm.http.get("/me").status_code == 200

    farm.postgres.shut_down()
    requests = [("GET", "/me", None), ("GET", "/videos", None), ("GET", f"/videos/{video}", None),
                ("POST", f"/videos/{video}/renders", {"format": "1:1", "resolution": 720}),
                ("POST", "/videos", {"storyId": "flash_sale", "format": "9:16", "durationSec": 12})]
    answered = 0
    for _ in range(3):
        for method, path, body in requests:
            response = farm.http.request(method, path, json=body, headers={"X-Request-Id": f"outage-{answered}"})
            assert response.status_code == 503, (method, path, response.text)
            assert response.headers["Retry-After"] == "5"
            assert response.headers["Content-Type"] == "application/json"
            error = response.json()["error"]
            assert error["code"] == "unavailable"
            assert error["message"] == "The database is unavailable; try again shortly."
            assert error["request_id"] == response.headers["X-Request-Id"] == f"outage-{answered}"
            answered += 1
    keyed = farm.http.post(f"/videos/{video}/renders", json={"format": "1:1", "resolution": 720},
                           headers={"Idempotency-Key": "during-the-outage"})
    assert keyed.status_code == 503
    health = httpx.get(f"{farm.base}/healthz", timeout=10)
    assert health.status_code == 503 and health.json()["error"]["code"] == "unavailable"

    farm.postgres.launch()
    deadline = time.monotonic() + 20
    while farm.http.get("/me").status_code != 200:
        assert time.monotonic() < deadline, "the API did not recover after the database came back"
        time.sleep(0.2)
    assert httpx.get(f"{farm.base}/healthz", timeout=10).status_code == 200
    again = farm.http.post(f"/videos/{video}/renders", json={"format": "1:1", "resolution": 720},
                           headers={"Idempotency-Key": "during-the-outage"})
    assert again.status_code == 202, again.text  # the 503 was not stored: the key could be retried

    log = farm.server_log()
    assert "Traceback" not in log
    assert "internal_error" not in log
    assert log.count("database unavailable, answered 503") == answered + 1
