"""Rate limits of a real `reelfarm serve` with two worker processes on the embedded default: one
count per key, whichever process answers."""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import httpx

from tests.e2e.test_serve import free_port, start_server, stop, wait_for_health, wait_for_key

LIMIT = 24


def _me(base: str, key: str) -> httpx.Response:
    # a connection of its own each time, so that either worker may take it
    return httpx.get(f"{base}/api/v1/me", headers={"Authorization": f"Bearer {key}", "Connection": "close"},
                     timeout=30)


def test_two_worker_processes_count_one_limit_per_key(tmp_path):
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    process, lines = start_server(tmp_path / "data", port, workers=2, REELFARM_RATE_LIMIT_PRO=str(LIMIT))
    try:
        key, _ = wait_for_key(lines)
        wait_for_health(base)
        if time.time() % 60 > 45:  # windows start on the minute: count within one
            time.sleep(60.5 - time.time() % 60)
        sequential = [_me(base, key) for _ in range(LIMIT // 2)]
        assert [r.status_code for r in sequential] == [200] * (LIMIT // 2)
        remaining = [int(r.headers["RateLimit-Remaining"]) for r in sequential]
        assert remaining == list(range(LIMIT - 1, LIMIT // 2 - 1, -1))  # one counter, going down by one

        # more at once than one worker's four threads take: both processes answer
        with ThreadPoolExecutor(16) as pool:
            burst = list(pool.map(lambda _: _me(base, key), range(LIMIT)))
        statuses = sorted(r.status_code for r in burst)
        assert statuses == [200] * (LIMIT - LIMIT // 2) + [429] * (LIMIT // 2)
        assert sorted(int(r.headers["RateLimit-Remaining"]) for r in burst if r.status_code == 200) == list(
            range(LIMIT // 2))
        last = _me(base, key)
        assert last.status_code == 429 and last.headers["RateLimit-Remaining"] == "0"
        assert int(last.headers["Retry-After"]) >= 1
    finally:
        stop(process)
