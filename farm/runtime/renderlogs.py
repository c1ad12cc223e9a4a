"""Each render's log lines, kept in the farm's Redis so an operator reads one render's story from
every node that worked on it (``reelfarm farm render logs``, the operator API) without reaching
the nodes' hosts or searching their JSON logs.

A node's ``RenderLogHandler`` copies every line written while a render's id is bound to the log
context (``reelfarm.shared.logs``: the node binds it around each job, the render's tasks around
their work) into the list ``{namespace}logs:render:<id>``, as the line its stderr gets (the same
JSON, redacted) plus the node's name: its last ``MAX_LINES`` lines, kept ``KEEP_SEC`` after the
last. The node's own stderr keeps every line as before; this is a copy.

A line is never worth a chunk: a copy that Redis does not take is dropped, and after a failure
the handler stops trying for ``BACKOFF_SEC`` so that a Redis outage does not slow the node's
logging down by a connection timeout a line. In the embedded mode every task's lines are the
server's own output, on one host, and nothing is copied.
"""
from __future__ import annotations

import json
import logging
import threading
import time
from typing import Any

from reelfarm.shared.logs import ReelfarmJsonFormatter, current_context

MAX_LINES = 2000
KEEP_SEC = 7 * 24 * 3600
BACKOFF_SEC = 10.0


def render_log_key(namespace: str, render_id: str) -> str:
    return f"{namespace}logs:render:{render_id}"


class RenderLogHandler(logging.Handler):
    """Copies the lines of a render's work into its list in Redis (module docstring)."""

    def __init__(self, redis: Any, namespace: str, node: str, level: int = logging.INFO) -> None:
        super().__init__(level)
        self.redis, self.namespace, self.node = redis, namespace, node
        self.setFormatter(ReelfarmJsonFormatter())
        self._inside = threading.local()  # Redis's own lines while a copy is sent are not copied
        self._quiet_until = 0.0

    def emit(self, record: logging.LogRecord) -> None:
        render_id = current_context().get("render_id")
        if not render_id or getattr(self._inside, "busy", False) or time.monotonic() < self._quiet_until:
            return
        self._inside.busy = True
        try:
            line = json.loads(self.format(record))
            line["node"] = self.node
            key = render_log_key(self.namespace, str(render_id))
            with self.redis.pipeline(transaction=False) as pipe:
                pipe.rpush(key, json.dumps(line, separators=(",", ":")))
                pipe.ltrim(key, -MAX_LINES, -1)
                pipe.expire(key, KEEP_SEC)
                pipe.execute()
        except Exception:  # noqa: BLE001 - a copy of a log line never fails the work it describes
            self._quiet_until = time.monotonic() + BACKOFF_SEC
        finally:
            self._inside.busy = False


def render_log_lines(redis: Any, namespace: str, render_id: str, limit: int | None = None) -> list[dict[str, Any]]:
    """The render's lines, oldest first (its last ``limit`` where given); [] for a render with none."""
    start = -limit if limit else 0
    lines = []
    for raw in redis.lrange(render_log_key(namespace, render_id), start, -1):
        try:
            lines.append(json.loads(raw))
        except ValueError:
            continue
    return lines


def shown(line: dict[str, Any]) -> str:
    """One line as a person reads it: time, level, node, message (and the chunk's job where known)."""
    job = str(line.get("job_id") or "")
    task = job.rsplit(f"{line.get('render_id', '')}-", 1)[-1] if line.get("render_id") and job else ""
    part = f" [{task}]" if task else ""  # chunk-3, stitch, assets
    return (f"{line.get('time', '')} {line.get('level', ''):7} {line.get('node', '?')}{part}  "
            f"{line.get('message', '')}")
