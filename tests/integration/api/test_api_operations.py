"""Operating the API: probes, Prometheus metrics, JSON logs without secrets, `reelfarm migrate`."""
from __future__ import annotations

import io
import json
import logging
import uuid
from collections.abc import Iterator

import pytest
from click.testing import CliRunner
from sqlalchemy import inspect

from reelfarm.api.cli import migrate_command
from reelfarm.api.ratelimit import RedisRateLimiter, make_limiter_redis
from reelfarm.api.services import Services
from reelfarm.app import create_app
from reelfarm.shared import logs
from reelfarm.shared.config import Settings
from reelfarm.shared.db import make_engine

DOWN_REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens on port 1


@pytest.fixture
def json_lines() -> Iterator[io.StringIO]:
    """Everything logged during the test, as the JSON lines `serve` and `worker` write."""
    stream = io.StringIO()
    handler = logs.json_handler(stream)
    root = logging.getLogger()
    root.addHandler(handler)
    level = logging.getLogger("reelfarm").level
    logging.getLogger("reelfarm").setLevel(logging.DEBUG)
    yield stream
    root.removeHandler(handler)
    logging.getLogger("reelfarm").setLevel(level)


def test_livez_and_readyz_answer_without_a_key(client):
    assert client.get("/livez").json == {"status": "ok"}
    assert client.get("/readyz").json == {"status": "ok", "checks": {"database": "ok", "queue": "ok"}}


def test_a_redis_outage_makes_a_farm_api_unready_but_still_alive(tmp_path, db_url):
    settings = Settings.from_env({"REELFARM_DATA_DIR": str(tmp_path), "REELFARM_DATABASE_URL": db_url,
                                  "REELFARM_REDIS_URL": DOWN_REDIS_URL})
    services = Services.from_settings(settings)
    try:
        client = create_app(services=services).test_client()
        assert client.get("/livez").status_code == 200
        ready = client.get("/readyz")
        assert ready.status_code == 503 and ready.json["error"]["code"] == "unavailable"
        assert ready.headers["X-Request-Id"] == ready.json["error"]["request_id"]
    finally:
        services.engine.dispose()


def test_metrics_count_requests_by_route_template_with_no_ids(client, make_tenant):
    tenant = make_tenant()
    video_id = str(uuid.uuid4())
    client.get("/api/v1/me", headers=tenant.headers)
    client.get(f"/api/v1/videos/{video_id}", headers=tenant.headers)
    text = client.get("/metrics").get_data(as_text=True)
    assert 'reelfarm_http_requests_total{method="GET",route="/api/v1/me",status="200"}' in text
    assert 'route="/api/v1/videos/<string:video_id>",status="404"' in text
    assert "reelfarm_http_request_duration_seconds_bucket" in text
    assert 'reelfarm_queue_depth{queue="render"}' in text and 'reelfarm_renders{status="succeeded"}' in text
    assert video_id not in text and tenant.workspace_id not in text and tenant.key_id not in text


def test_json_logs_carry_request_and_workspace_and_never_a_secret(services, make_tenant, clock, json_lines):
    services.rate_limiter = RedisRateLimiter(make_limiter_redis(DOWN_REDIS_URL), clock)  # logs a warning per request
    client = create_app(services=services).test_client()
    tenant = make_tenant()
    response = client.get("/api/v1/me", headers={**tenant.headers, "X-Request-Id": "req-ops-1"})
    assert response.status_code == 200
    logging.getLogger("reelfarm.test").warning(
        "a library echoing what it saw: Authorization: Bearer %s, http://u:hunter2@db/x, "
        "https://files.example/a.mp4?expires=1&sig=abcdef0123, whsec_c2VjcmV0c2VjcmV0", tenant.key)
    lines = [json.loads(line) for line in json_lines.getvalue().splitlines()]
    warning = next(line for line in lines if "rate limiter unavailable" in line["message"])
    assert warning["request_id"] == "req-ops-1" and warning["workspace_id"] == tenant.workspace_id
    assert warning["level"] == "WARNING" and warning["logger"] == "reelfarm.api" and "time" in warning
    text = json_lines.getvalue()
    for secret in (tenant.key, tenant.key[8:40], "hunter2", "abcdef0123", "whsec_c2Vj"):
        assert secret not in text
    assert "[redacted]" in text


@pytest.fixture
def root_logging() -> Iterator[None]:
    """`reelfarm migrate` configures the process's logging, as a command does; put it back after."""
    root = logging.getLogger()
    handlers, level, ours = list(root.handlers), root.level, logging.getLogger("reelfarm").level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    logging.getLogger("reelfarm").setLevel(ours)


def test_migrate_command_brings_an_empty_database_up_to_date(tmp_path, empty_db_url, root_logging):
    result = CliRunner().invoke(migrate_command, env={"REELFARM_DATA_DIR": str(tmp_path),
                                                      "REELFARM_DATABASE_URL": empty_db_url})
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[-1].startswith("database schema at revision ")
    engine = make_engine(empty_db_url)
    try:
        assert {"workspaces", "renders", "alembic_version"} <= set(inspect(engine).get_table_names())
    finally:
        engine.dispose()


def test_with_a_metrics_token_only_a_scraper_sending_it_reads_the_metrics(tmp_path, db_url, make_tenant):
    token = "m" * 40
    settings = Settings.from_env({"REELFARM_DATA_DIR": str(tmp_path), "REELFARM_DATABASE_URL": db_url,
                                  "REELFARM_METRICS_TOKEN": token})
    services = Services.from_settings(settings)
    try:
        client = create_app(services=services).test_client()
        assert client.get("/livez").status_code == 200  # probes stay open
        for headers in ({}, {"Authorization": "Bearer " + "x" * 40}, {"Authorization": token}):
            refused = client.get("/metrics", headers=headers)
            assert refused.status_code == 401, headers
            assert refused.json["error"]["code"] == "unauthorized"
            assert refused.headers["WWW-Authenticate"].startswith("Bearer")
        answered = client.get("/metrics", headers={"Authorization": f"Bearer {token}"})
        assert answered.status_code == 200 and "reelfarm_" in answered.get_data(as_text=True)
    finally:
        services.engine.dispose()


def test_an_api_key_does_not_open_guarded_metrics(tmp_path, db_url):
    from reelfarm.renderer.tokens import NEUTRAL_BRAND
    from reelfarm.shared.clock import SystemClock
    from reelfarm.shared.db import transaction
    from reelfarm.shared.repos import api_keys as keys_repo
    from reelfarm.shared.repos import workspaces as ws_repo

    settings = Settings.from_env({"REELFARM_DATA_DIR": str(tmp_path), "REELFARM_DATABASE_URL": db_url,
                                  "REELFARM_METRICS_TOKEN": "m" * 40})
    services = Services.from_settings(settings)
    try:
        with transaction(services.engine) as conn:
            ws = ws_repo.create_workspace(conn, SystemClock(), name="acme", plan="pro", brand_tokens=NEUTRAL_BRAND)
            _, key = keys_repo.create_api_key(conn, SystemClock(), workspace_id=ws.id, name="k")
        client = create_app(services=services).test_client()
        assert client.get("/api/v1/me", headers={"Authorization": f"Bearer {key}"}).status_code == 200
        assert client.get("/metrics", headers={"Authorization": f"Bearer {key}"}).status_code == 401
    finally:
        services.engine.dispose()
