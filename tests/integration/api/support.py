"""Assertions and set-ups shared by the API tests (imported as ``tests.integration.api.support``)."""
from __future__ import annotations

import secrets
from typing import Any

from reelfarm.shared.db import transaction
from reelfarm.shared.repos import renders as renders_repo

REQUEST_ID = r"^req_[0-9a-f]{24}$"


def assert_error(response: Any, status: int, code: str, details: Any = ...) -> dict[str, Any]:
    """The one error envelope, exactly: status, JSON content type, four keys, matching request id."""
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.headers["Content-Type"] == "application/json"
    body = response.get_json()
    assert list(body) == ["error"]
    error = body["error"]
    assert set(error) == {"code", "message", "details", "request_id"}
    assert error["code"] == code
    assert isinstance(error["message"], str) and error["message"]
    assert error["request_id"] == response.headers["X-Request-Id"]
    if details is not ...:
        assert error["details"] == details
    return error


def fields_of(error: dict[str, Any]) -> list[tuple[str, str]]:
    """``(field, code)`` of each detail, in order."""
    return [(d["field"], d["code"]) for d in error["details"]]


def failed_render(services: Any, clock: Any, tenant: Any, create_video: Any) -> str:
    """A new video of ``tenant`` with one render that failed ("encoder crashed"); its id."""
    video = create_video(tenant)
    version_id = services.videos.get(tenant.workspace_id, video["id"])["current_version"]["id"]
    with transaction(services.engine) as conn:
        render = renders_repo.insert_render(conn, clock, renders_repo.NewRender(
            workspace_id=tenant.workspace_id, video_id=video["id"], version_id=version_id, format="1:1",
            resolution=720, fps=30, dedup_hash=secrets.token_hex(32), frames=1, chunks=1))
        renders_repo.fail_render(conn, clock, render.id, "encoder crashed")
    return render.id
