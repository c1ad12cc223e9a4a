"""Operations endpoints of the API process: ``/livez``, ``/readyz`` and Prometheus ``/metrics``.

Probes. ``/livez`` answers 200 as long as the process can serve a request at all and checks
nothing else, so a database or Redis outage never gets pods restarted; ``/readyz`` checks the
database and, in a farm, Redis (the queue), and answers 503 in the error envelope when one is
down, so the pod is taken out of the load balancer until it is back. ``/healthz`` (both checks,
documented in the OpenAPI contract) stays for existing clients.

Metrics. HTTP requests are counted and timed per route template (``/api/v1/videos/<video_id>``,
never the concrete path), method and status, in each gunicorn worker. Under gunicorn the
metrics live in prometheus-client's multiprocess mode: ``reelfarm serve`` points
``PROMETHEUS_MULTIPROC_DIR`` at a fresh directory before the workers fork, and ``/metrics``
merges every process's files, whichever worker answers. With ``REELFARM_METRICS_TOKEN`` set it
answers only a scraper that sends that token. Farm-wide state is read when scraped
(``FarmCollector``, cached for ``FARM_CACHE_SEC``): renders by status, credits charged, queue depth
and the age of the oldest waiting job per queue, webhook deliveries by outcome and the lag of
undelivered events. Every API replica reports the same farm-wide values; dashboards take
``max`` over instances. No label carries an id: label values come from small fixed sets.
"""
from __future__ import annotations

import hmac
import os
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from flask import Blueprint, Flask, Response, current_app, g, jsonify, request
from sqlalchemy import func, select, text

from reelfarm.api.errors import Unauthorized, Unavailable
from reelfarm.farm.errors import QueueUnavailable
from reelfarm.farm.routing import ALL_QUEUES
from reelfarm.shared import logs
from reelfarm.shared.tables import (
    RENDER_CHARGE,
    RENDER_REFUND,
    RENDER_STATUSES,
    credit_ledger,
    event_outbox,
    queued_tasks,
    renders,
    webhook_deliveries,
)

FARM_CACHE_SEC = 10.0
QUEUES = ALL_QUEUES  # render-gpu, render, jobs
ENDPOINTS = {"ops.live", "ops.ready", "ops.metrics"}
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

_http: tuple[Any, Any] | None = None


def _http_metrics() -> tuple[Any, Any]:
    """The HTTP request counter and histogram, made on first use: prometheus-client decides on
    multiprocess mode when it is first imported, so nothing imports it before ``serve`` has
    set ``PROMETHEUS_MULTIPROC_DIR``."""
    global _http
    if _http is None:
        from prometheus_client import Counter, Histogram

        _http = (Counter("reelfarm_http_requests_total", "HTTP requests answered, by route template, method and status",
                         ["route", "method", "status"]),
                 Histogram("reelfarm_http_request_duration_seconds", "Time to answer an HTTP request",
                           ["route", "method"], buckets=LATENCY_BUCKETS))
    return _http

blp = Blueprint("ops", __name__)


@blp.get("/livez")
def live() -> Response:
    return jsonify(status="ok")


@blp.get("/readyz")
def ready() -> Response:
    services = current_app.extensions["reelfarm"]
    try:
        with services.engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    except Exception as exc:  # any database failure means not ready
        raise Unavailable(f"database unavailable: {type(exc).__name__}") from exc
    try:
        services.farm.queue.ping()
    except QueueUnavailable as exc:
        raise Unavailable(f"queue unavailable: {exc}") from exc
    return jsonify(status="ok", checks={"database": "ok", "queue": "ok"})


@blp.get("/metrics")
def metrics() -> Response:
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

    _check_scraper(current_app.extensions["reelfarm"].settings.metrics_token)
    registry = _registry()
    registry.register(_farm_collector(current_app))
    return Response(generate_latest(registry), mimetype=CONTENT_TYPE_LATEST)


def _check_scraper(token: str | None) -> None:
    """With ``REELFARM_METRICS_TOKEN`` set, only a scraper sending it (``Authorization: Bearer``)
    reads the farm-wide figures; API keys and console sessions do not open ``/metrics``."""
    if token is None:
        return
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), token.encode()):
        raise Unauthorized("/metrics needs the metrics token (Authorization: Bearer ...)",
                           headers={"WWW-Authenticate": 'Bearer realm="metrics"'})


def install(app: Flask) -> None:
    """Register the endpoints and time every request (call before the app's other hooks)."""
    app.register_blueprint(blp)
    requests_total, duration = _http_metrics()

    @app.before_request
    def start_timer() -> None:
        g.metrics_started = time.perf_counter()

    @app.after_request
    def observe(response: Response) -> Response:
        started = g.get("metrics_started")
        if started is not None and request.endpoint != "ops.metrics":
            route = request.url_rule.rule if request.url_rule is not None else "unmatched"
            requests_total.labels(route, request.method, str(response.status_code)).inc()
            duration.labels(route, request.method).observe(time.perf_counter() - started)
        return response

    @app.teardown_request
    def forget_context(_error: BaseException | None) -> None:
        logs.clear_context()  # the thread serves other requests next


def _registry() -> Any:
    from prometheus_client import CollectorRegistry
    from prometheus_client.multiprocess import MultiProcessCollector

    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):  # prometheus-client's own switch, set by `serve`
        registry = CollectorRegistry()
        MultiProcessCollector(registry)
        return registry
    registry = CollectorRegistry()
    registry.register(_ProcessMetrics())
    return registry


class _ProcessMetrics:
    """This process's own metrics (no gunicorn: tests, the Flask development server)."""

    def collect(self) -> Iterator[Any]:
        from prometheus_client import REGISTRY

        yield from REGISTRY.collect()


_farm_lock = threading.Lock()


def _farm_collector(app: Flask) -> FarmCollector:
    with _farm_lock:
        collector = app.extensions.get("reelfarm.farm_collector")
        if collector is None:
            collector = app.extensions["reelfarm.farm_collector"] = FarmCollector(app.extensions["reelfarm"])
        return collector


class FarmCollector:
    """Farm-wide state read from the database and the queue when scraped, cached briefly."""

    def __init__(self, services: Any) -> None:
        self.services = services
        self._cached: tuple[float, list[Any]] | None = None
        self._lock = threading.Lock()

    def collect(self) -> Iterator[Any]:
        with self._lock:
            now = time.monotonic()
            if self._cached is None or now - self._cached[0] > FARM_CACHE_SEC:
                self._cached = (now, self._read())
            yield from self._cached[1]

    def _read(self) -> list[Any]:
        families: list[Any] = []
        try:
            families += self._database()
        except Exception:  # noqa: BLE001 - an unreachable database shows in /readyz, not as a failed scrape
            pass
        try:
            families += self._queues()
        except Exception:  # noqa: BLE001 - likewise for Redis
            pass
        return families

    def _database(self) -> list[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        now = datetime.now(UTC)
        with self.services.engine.connect() as conn:
            by_status = dict(conn.execute(select(renders.c.status, func.count()).group_by(renders.c.status)).all())
            charged = conn.execute(select(func.coalesce(func.sum(credit_ledger.c.delta), 0))
                                   .where(credit_ledger.c.reason == RENDER_CHARGE)).scalar_one()
            refunded = conn.execute(select(func.coalesce(func.sum(credit_ledger.c.delta), 0))
                                    .where(credit_ledger.c.reason == RENDER_REFUND)).scalar_one()
            outcomes = dict(conn.execute(select(webhook_deliveries.c.state, func.count())
                                         .group_by(webhook_deliveries.c.state)).all())
            oldest_event = conn.execute(select(func.min(event_outbox.c.created_at))
                                        .where(event_outbox.c.dispatched_at.is_(None))).scalar_one()
            oldest_due = conn.execute(select(func.min(webhook_deliveries.c.next_attempt_at))
                                      .where(webhook_deliveries.c.state == "pending")).scalar_one()
        statuses = GaugeMetricFamily("reelfarm_renders", "Renders by status (all time)", labels=["status"])
        for status in RENDER_STATUSES:
            statuses.add_metric([status], float(by_status.get(status, 0)))
        credits = CounterMetricFamily("reelfarm_credits_charged", "Credits charged for renders, all time",
                                      labels=["kind"])
        credits.add_metric(["charge"], float(abs(charged)))
        credits.add_metric(["refund"], float(abs(refunded)))
        deliveries = GaugeMetricFamily("reelfarm_webhook_deliveries",
                                       "Webhook delivery attempts kept (retention window), by outcome",
                                       labels=["outcome"])
        for outcome in ("pending", "succeeded", "failed", "gave_up"):
            deliveries.add_metric([outcome], float(outcomes.get(outcome, 0)))
        lag = GaugeMetricFamily("reelfarm_webhook_lag_seconds",
                                "Age of the oldest event not yet dispatched, or of the most overdue pending retry")
        lag.add_metric([], max(_age(now, oldest_event), _age(now, oldest_due)))
        return [statuses, credits, deliveries, lag]

    def _queues(self) -> list[Any]:
        from prometheus_client.core import GaugeMetricFamily

        depth = GaugeMetricFamily("reelfarm_queue_depth", "Jobs waiting in the queue", labels=["queue"])
        oldest = GaugeMetricFamily("reelfarm_queue_oldest_job_age_seconds",
                                   "How long the oldest waiting job has waited", labels=["queue"])
        redis = getattr(self.services.farm.queue, "redis", None)
        for name, (count, age) in (_rq_queues(redis, self.services.farm.queue) if redis is not None
                                   else _embedded_queues(self.services.engine)).items():
            depth.add_metric([name], float(count))
            oldest.add_metric([name], age)
        return [depth, oldest]


def _age(now: datetime, moment: datetime | None) -> float:
    if moment is None:
        return 0.0
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return max(0.0, (now - moment).total_seconds())


def _rq_queues(redis: Any, queue: Any) -> dict[str, tuple[int, float]]:
    from rq import Queue

    now = datetime.now(UTC)
    found = {}
    for name in QUEUES:
        rq_queue = Queue(queue.queue_name(name), connection=redis)
        first = rq_queue.get_job_ids(0, 1)
        job = rq_queue.fetch_job(first[0]) if first else None
        found[name] = (rq_queue.count, _age(now, job.enqueued_at) if job is not None else 0.0)
    return found


def _embedded_queues(engine: Any) -> dict[str, tuple[int, float]]:
    now = datetime.now(UTC)
    with engine.connect() as conn:
        rows = conn.execute(select(queued_tasks.c.queue, func.count(), func.min(queued_tasks.c.run_after))
                            .where(queued_tasks.c.status == "queued").group_by(queued_tasks.c.queue)).all()
    found = {name: (0, 0.0) for name in QUEUES}
    for name, count, first in rows:
        found[name] = (int(count), _age(now, first))
    return found
