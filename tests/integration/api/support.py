"""Assertions shared by the API tests (imported as ``tests.integration.api.support``)."""
from __future__ import annotations

from typing import Any

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
