"""Which error class an answer becomes: one class for a file too large, with or without the API's
envelope; the quota stays its own."""
from __future__ import annotations

import httpx

from reelfarm.client import APIStatusError, PayloadTooLargeError, QuotaExceededError
from reelfarm.client.http import error_from


def _answer(status: int, body: bytes, content_type: str = "application/json") -> httpx.Response:
    return httpx.Response(status, content=body, headers={"Content-Type": content_type, "X-Request-Id": "req_9"})


def test_a_file_too_large_is_one_error_class_with_or_without_the_envelope() -> None:
    enveloped = error_from(_answer(413, b'{"error": {"code": "payload_too_large", "message": "The file is too large",'
                                        b' "details": [{"field": "/file"}], "request_id": "req_1"}}'))
    bare = error_from(_answer(413, b"<html>413 Request Entity Too Large</html>", "text/html"))
    assert isinstance(enveloped, PayloadTooLargeError) and enveloped.code == "payload_too_large"
    assert isinstance(bare, PayloadTooLargeError) and bare.request_id == "req_9"
    quota = error_from(_answer(413, b'{"error": {"code": "quota_exceeded", "message": "m", "details": null}}'))
    assert isinstance(quota, QuotaExceededError) and not isinstance(quota, PayloadTooLargeError)
    assert isinstance(quota, APIStatusError)
