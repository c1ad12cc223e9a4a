"""Schemathesis hooks for the contract fuzz (loaded through ``SCHEMATHESIS_HOOKS``).

Every generated request that carries a well-formed ``Idempotency-Key`` gets a fresh one: the
fuzzer sends many different bodies, and reusing a key with another body is, by contract, a 422
(``idempotency_key_mismatch``), which is tested on its own. Malformed keys are left as generated,
so the negative cases still test their rejection.
"""
from __future__ import annotations

import ast
import builtins
import re
import threading
import uuid
from datetime import datetime

import schemathesis

_VALID_KEY = re.compile(r"[\x20-\x7e]{1,255}")

# Python 3.11 keeps one AST-building depth counter per interpreter, not per thread, and Hypothesis
# parses a lambda's source to describe it (repr of a strategy, as it validates one): two of the
# fuzzer's worker threads doing it at once failed a whole run with "SystemError: AST constructor
# recursion depth mismatch" (CPython gh-106905). One AST built at a time in this process: by
# `ast.parse` and by `compile(..., ast.PyCF_ONLY_AST)`, which anyio's lazy importer calls when a
# worker thread first imports it (a later run failed there), and anyio imported here, up front.
_AST_LOCK = threading.RLock()  # ast.parse calls compile
_ast_parse = ast.parse
_compile = builtins.compile


def _parse_one_at_a_time(*args, **kwargs):
    with _AST_LOCK:
        return _ast_parse(*args, **kwargs)


def _compile_one_ast_at_a_time(source, filename, mode, flags=0, *args, **kwargs):
    if not flags & ast.PyCF_ONLY_AST:
        return _compile(source, filename, mode, flags, *args, **kwargs)
    with _AST_LOCK:
        return _compile(source, filename, mode, flags, *args, **kwargs)


ast.parse = _parse_one_at_a_time
builtins.compile = _compile_one_ast_at_a_time
import anyio  # noqa: F401 - its lazy importer builds an AST: here, before any worker thread


@schemathesis.hook
def before_call(ctx, case, kwargs):
    headers = case.headers or {}
    for name in list(headers):
        if name.lower() == "idempotency-key" and isinstance(headers[name], str) and _VALID_KEY.fullmatch(headers[name]):
            headers[name] = f"fuzz-{uuid.uuid4()}"


# --- Archived videos -------------------------------------------------------------------------
# API.md: `DELETE /videos/{id}` archives the video; "an archived video can be read but not patched
# or rendered (409)". Schemathesis's own use-after-free check expects a 404 after any successful
# DELETE, which the contract rules out for videos, so schemathesis.toml turns that one check off
# for the reads under /videos/{video_id} only, and this check states the contract instead: after a
# successful DELETE the video reads back `archived`, and nothing may change or render it.

_ARCHIVED: dict[str, datetime] = {}  # video id -> when it was archived (its DELETE answer's updated_at)
_VIDEO = "/videos/{video_id}"
_WRITES_REFUSED = {("PATCH", _VIDEO), ("POST", f"{_VIDEO}/renders"), ("POST", f"{_VIDEO}/stills"),
                   ("POST", f"{_VIDEO}/variants")}


def _stamp(value: object) -> datetime | None:
    try:
        return datetime.fromisoformat(str(value))
    except ValueError:
        return None


def _written_at(body: object) -> datetime | None:
    """The latest time a write answer records (its object's `updated_at` or `created_at`, or those
    of the objects it lists): with two workers a request can be answered after a DELETE it ran
    before, and only the server's own clock tells the order."""
    items = body if isinstance(body, list) else [body]
    if isinstance(body, dict):
        items = [body] + [x for v in body.values() if isinstance(v, list) for x in v]
    stamps = [_stamp(x.get("updated_at") or x.get("created_at")) for x in items if isinstance(x, dict)]
    found = [t for t in stamps if t is not None]
    return max(found) if found else None


def _template(case) -> str:
    path = case.operation.path
    return path[path.index("/videos/"):] if "/videos/" in path else path


@schemathesis.check
def archived_video_contract(ctx, response, case):
    """After a 2xx DELETE /videos/{id}: GET shows `archived`; PATCH, renders, stills, variants are refused."""
    video_id = (case.path_parameters or {}).get("video_id")
    if not isinstance(video_id, str):
        return
    # the method really sent: the coverage phase also sends other methods (OPTIONS) to a path
    method, template = response.request.method.upper(), _template(case)
    ok = 200 <= response.status_code < 300
    if response.status_code in (401, 429):  # left unauthenticated (or throttled): says nothing of the video
        return
    if (method, template) == ("DELETE", _VIDEO) and ok:
        status = response.json().get("status")
        if status != "archived":
            raise AssertionError(f"DELETE {_VIDEO} answered a video with status {status!r}, not 'archived'")
        archived_at = _stamp(response.json().get("updated_at"))
        if archived_at is None:
            raise AssertionError(f"DELETE {_VIDEO} answered no updated_at")
        _ARCHIVED[video_id] = archived_at
    elif video_id in _ARCHIVED and (method, template) == ("GET", _VIDEO):
        if response.status_code != 200 or response.json().get("status") != "archived":
            raise AssertionError(f"an archived video read back as {response.status_code} {response.text[:200]}")
    elif video_id in _ARCHIVED and (method, template) in _WRITES_REFUSED and ok:
        written = _written_at(response.json())
        if written is None or written > _ARCHIVED[video_id]:
            raise AssertionError(f"{method} {template} succeeded on an archived video")
    return
