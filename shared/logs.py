"""Structured logs: one JSON object per line, with the context of the event, and no secrets.

``configure_logging(level)`` is called once by each process that logs (``reelfarm serve`` before
gunicorn starts, ``reelfarm worker``, ``reelfarm migrate``); it replaces the root logger's
handlers with one that writes JSON lines to stderr through python-json-logger. Every line has
``time``, ``level``, ``logger`` and ``message``, and whatever context is bound at that moment:

- ``bind_context(request_id=..., workspace_id=...)`` sets the fields of the work in hand for the
  current thread or task (``contextvars``); the API binds a request's id when it starts and the
  workspace once the caller is known; a farm node binds ``job_id``, ``queue`` and ``render_id``
  around each job it runs. ``clear_context()`` drops them.

Redaction is the last step before a line is written, so it covers our messages, third-party
libraries' and exception tracebacks alike: API keys (``rf_live_...``), webhook secrets
(``whsec_...``), the signature and expiry of signed download URLs, ``Authorization`` header
values and passwords inside URLs are replaced by ``[redacted]``. This is a net under the rule, not
the rule itself: code still must not log secrets.
"""
from __future__ import annotations

import contextvars
import logging
import re
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from types import MappingProxyType
from typing import IO, Any

from pythonjsonlogger.json import JsonFormatter

_NO_CONTEXT: Mapping[str, Any] = MappingProxyType({})  # read-only: the default is shared by every context
_CONTEXT: contextvars.ContextVar[Mapping[str, Any]] = contextvars.ContextVar("reelfarm_log_context",
                                                                             default=_NO_CONTEXT)

REDACTED = "[redacted]"
_SECRETS = (
    (re.compile(r"rf_live_[0-9A-Za-z]{4,}"), REDACTED),
    (re.compile(r"whsec_[0-9A-Za-z+/=]{4,}"), REDACTED),
    (re.compile(r"([?&](?:sig|signature|X-Amz-Signature|X-Amz-Credential|X-Amz-Security-Token)=)[^&\s\"']+",
                re.IGNORECASE), r"\1" + REDACTED),
    (re.compile(r"((?:Authorization|Proxy-Authorization)[\"']?\s*[:=]\s*[\"']?)(?:Bearer |Basic )?[^\s\"',}]+",
                re.IGNORECASE), r"\1" + REDACTED),
    (re.compile(r"(\b[a-z][a-z0-9+.-]*://[^:/@\s]*:)[^@/\s]+@", re.IGNORECASE), r"\1" + REDACTED + "@"),
)


def redact(text: str) -> str:
    """``text`` with every secret we know the shape of replaced by ``[redacted]``."""
    for pattern, replacement in _SECRETS:
        text = pattern.sub(replacement, text)
    return text


def bind_context(**fields: Any) -> None:
    """Add ``fields`` (None values are dropped) to every later log line of this thread or task."""
    merged = {**_CONTEXT.get(), **{k: v for k, v in fields.items() if v is not None}}
    _CONTEXT.set(merged)


def clear_context() -> None:
    _CONTEXT.set({})


def current_context() -> Mapping[str, Any]:
    return _CONTEXT.get()


@contextmanager
def log_context(**fields: Any) -> Iterator[None]:
    """``bind_context`` for the duration of a block, restoring what was bound before."""
    token = _CONTEXT.set({**_CONTEXT.get(), **{k: v for k, v in fields.items() if v is not None}})
    try:
        yield
    finally:
        _CONTEXT.reset(token)


class ReelfarmJsonFormatter(JsonFormatter):
    """python-json-logger's formatter with our field names, the bound context, and redaction."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s %(message)s",
                         rename_fields={"asctime": "time", "levelname": "level", "name": "logger"},
                         datefmt="%Y-%m-%dT%H:%M:%S%z")

    def add_fields(self, log_record: dict[str, Any], record: logging.LogRecord, message_dict: dict[str, Any]) -> None:
        super().add_fields(log_record, record, message_dict)
        for key, value in _CONTEXT.get().items():
            log_record.setdefault(key, value)

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


def json_handler(stream: IO[str] | None = None) -> logging.Handler:
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(ReelfarmJsonFormatter())
    return handler


def configure_logging(level: str | int = "INFO", stream: IO[str] | None = None) -> None:
    """Send every logger's records, at ``level`` and above for ours, as JSON lines to ``stream``."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    root.addHandler(json_handler(stream))
    root.setLevel(max(_numeric(level), logging.INFO))  # DEBUG is for our loggers, not every library's
    logging.getLogger("reelfarm").setLevel(level)
    for name in ("rq.worker", "rq.scheduler", "gunicorn.error"):
        logging.getLogger(name).setLevel(level)


def _numeric(level: str | int) -> int:
    return level if isinstance(level, int) else logging.getLevelNamesMapping()[level.upper()]
