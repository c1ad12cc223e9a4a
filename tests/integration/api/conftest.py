"""Fixtures for the HTTP API tests: an app on a real database (SQLite and PostgreSQL), a fixed
clock, and a factory for workspaces with their API keys.

Every test that takes ``client`` runs twice through ``db_url``. The PostgreSQL database is shared
by the session, so each test works inside workspaces it makes itself.
"""
from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest
from argon2 import PasswordHasher
from flask import Flask
from flask.testing import FlaskClient

from reelfarm.api.services import Services
from reelfarm.app import create_app
from reelfarm.renderer.tokens import NEUTRAL_BRAND
from reelfarm.shared.accounts import AccountService
from reelfarm.shared.clock import FixedClock
from reelfarm.shared.config import Settings
from reelfarm.shared.db import transaction
from reelfarm.shared.repos import api_keys as keys_repo
from reelfarm.shared.repos import brand_kits as kits_repo
from reelfarm.shared.repos import workspaces as ws_repo

START = datetime(2025, 3, 1, 9, 0, 0, tzinfo=UTC)


@dataclass
class Tenant:
    """A workspace with one API key, as a client of the API sees it."""

    workspace_id: str
    key_id: str
    key: str
    default_kit_id: str
    other_kit_id: str | None = None
    headers: dict[str, str] = field(default_factory=dict)


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock(START)


@pytest.fixture
def settings(tmp_path, db_url: str) -> Settings:
    return Settings.from_env({"REELFARM_DATA_DIR": str(tmp_path / "data"), "REELFARM_DATABASE_URL": db_url})


# Passwords are hashed with argon2 all the same, at a test's cost: the service's default costs
# about 0.1 s of a CPU a hash or check, and a console test signs in several people.
TEST_HASHER = PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1)


@pytest.fixture
def services(settings: Settings, clock: FixedClock) -> Iterator[Services]:
    services = Services.from_settings(settings, clock=clock)
    services.accounts = AccountService(services.engine, clock, services.rate_limiter, hasher=TEST_HASHER)
    yield services
    services.engine.dispose()


@pytest.fixture
def app(services: Services) -> Flask:
    return create_app(services=services)


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


@pytest.fixture
def make_tenant(services: Services, clock: FixedClock) -> Callable[..., Tenant]:
    """``make_tenant(plan="pro", credits=0, expires_at=None, second_kit=False)`` -> Tenant."""
    def make(plan: str = "pro", credits: int = 0, expires_at: datetime | None = None,
             second_kit: bool = False, name: str = "acme") -> Tenant:
        with transaction(services.engine) as conn:
            ws = ws_repo.create_workspace(conn, clock, name=name, plan=plan, brand_tokens=NEUTRAL_BRAND,
                                          credits=credits)
            default = kits_repo.get_default_brand_kit(conn, ws.id)
            other = None
            if second_kit:
                tokens = copy.deepcopy(NEUTRAL_BRAND)
                tokens["colors"]["primary"] = "#AA0000"
                other = kits_repo.create_brand_kit(conn, clock, workspace_id=ws.id, name="Second",
                                                   tokens=tokens, source_url="https://example.com")
            record, key = keys_repo.create_api_key(conn, clock, workspace_id=ws.id, name="test key",
                                                   expires_at=expires_at)
        assert default is not None
        return Tenant(workspace_id=ws.id, key_id=record.id, key=key, default_kit_id=default.id,
                      other_kit_id=other.id if other else None, headers={"Authorization": f"Bearer {key}"})
    return make


@pytest.fixture
def tenant(make_tenant: Callable[..., Tenant]) -> Tenant:
    return make_tenant()


@pytest.fixture
def create_video(client: FlaskClient, clock: FixedClock) -> Callable[..., dict[str, Any]]:
    """POST /videos from a story (announcement by default); returns the created Video."""
    def create(tenant: Tenant, **body: Any) -> dict[str, Any]:
        body.setdefault("storyId", "announcement")
        response = client.post("/api/v1/videos", json=body, headers=tenant.headers)
        assert response.status_code == 201, response.get_json()
        clock.advance(1)
        return response.get_json()
    return create

