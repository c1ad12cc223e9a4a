"""gunicorn's logs as JSON lines: its error log through ``reelfarm.shared.logs``, and one access line per
request with the request id and latency.

``JsonGunicornLogger`` is gunicorn's ``logger_class`` under ``reelfarm serve``. The access line
carries ``method``, ``path`` (without its query string, so a signed download URL's
signature never reaches a log), ``status``, ``duration_ms``, ``bytes``, ``request_id`` (the
``X-Request-Id`` the app answered with) and ``remote_addr``; every line passes through the same
redaction as the rest (``reelfarm.shared.logs.redact``).
"""
from __future__ import annotations

from typing import Any

from gunicorn.glogging import Logger

from reelfarm.shared.logs import ReelfarmJsonFormatter


class JsonGunicornLogger(Logger):
    def setup(self, cfg: Any) -> None:
        super().setup(cfg)
        for logger in (self.error_log, self.access_log):
            for handler in logger.handlers:
                handler.setFormatter(ReelfarmJsonFormatter())

    def access(self, resp: Any, req: Any, environ: dict[str, Any], request_time: Any) -> None:
        if not (self.cfg.accesslog or self.cfg.logconfig or self.cfg.logconfig_dict or self.cfg.syslog):
            return
        headers = {name.lower(): value for name, value in (resp.headers or [])}
        try:
            self.access_log.info("request", extra={
                "method": req.method, "path": req.path, "status": resp.status_code,
                "duration_ms": round(request_time.total_seconds() * 1000, 2), "bytes": getattr(resp, "sent", None),
                "request_id": headers.get("x-request-id"), "remote_addr": environ.get("REMOTE_ADDR"),
            })
        except Exception:  # noqa: BLE001 - as gunicorn's own access(): a log line never fails a request
            self.exception("failed to log the request")
