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
(``services().figures``, ``reelfarm.shared.readmodels.FarmFigures``, cached there for
``FIGURES_CACHE_SEC``): renders by status, credits charged, queue depth and the age of the oldest
waiting job per queue, webhook deliveries by outcome and the lag of undelivered events. Every API
replica reports the same farm-wide values; dashboards take ``max`` over instances. No label carries an id: label values come from small fixed sets.
"""
from __future__ import annotations

import hmac
import os
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

from flask import Blueprint, Flask, Response, g, jsonify, request

from reelfarm.api.errors import Unauthorized, Unavailable
from reelfarm.api.server import ENVIRON_DRAINING
from reelfarm.api.services import services
from reelfarm.farm.services.fairness import OTHER
from reelfarm.farm.services.farmgauges import FarmGauges
from reelfarm.farm.services.queues import ALL_QUEUES
from reelfarm.farm.services.usagemetrics import usage_families
from reelfarm.shared import logs
from reelfarm.shared.readmodels import FarmFigures, Totals
from reelfarm.shared.statuses import DELIVERY_STATES

QUEUES = ALL_QUEUES  # render-gpu, render, jobs
ENDPOINTS = {"ops.live", "ops.ready", "ops.metrics"}
BACKLOG_TOP = 10  # workspaces named in reelfarm_workspace_oldest_queued_seconds; the rest are (other)
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
    """503 (``Services.health``) while the database or the queue does not answer, and from the
    moment the server is told to stop (``reelfarm.api.server``: it drains)."""
    if request.environ.get(ENVIRON_DRAINING):
        raise Unavailable("this server is stopping: it answers the requests it has, and takes no new work")
    return jsonify(services().health())


@blp.get("/metrics")
def metrics() -> Response:
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

    svc = services()
    _check_scraper(svc.settings.metrics_token)
    registry = _registry()
    farm = getattr(svc.farm.queue, "redis", None) is not None
    registry.register(FarmCollector(svc.figures, svc.read_models.workspace_names, "redis" if farm else "queue"))
    registry.register(WorkspaceLoadCollector(svc.farm.queue, svc.read_models.workspace_names))
    if farm:
        registry.register(FarmGaugesCollector(svc.farm_gauges))
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


class FarmCollector:
    """The farm-wide figures (``services().figures``, cached there) as Prometheus families, and
    whether their sources answered: ``reelfarm_dependency_up{dependency}``, ``database``, and
    ``redis`` in a farm (``queue``: the embedded queue's table)."""

    def __init__(self, figures: FarmFigures, names: Callable[[list[str]], Mapping[str, str]],
                 queue: str = "queue") -> None:
        self.figures, self.names, self.queue = figures, names, queue

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily

        read = self.figures.read()
        up = GaugeMetricFamily("reelfarm_dependency_up", "1 while the API reaches the service, else 0",
                               labels=["dependency"])
        up.add_metric(["database"], 0.0 if read.totals is None else 1.0)
        up.add_metric([self.queue], 0.0 if read.waiting is None else 1.0)
        yield up
        if read.totals is not None:
            yield from _totals(read.totals, read.taken_at)
            yield _backlog_age(read.totals.oldest_queued, read.taken_at, self.names)
            yield from usage_families(read.totals.used, lambda ids: self.names(list(ids)))
        if read.waiting is not None:
            yield from _waiting(read.waiting, read.taken_at)


class FarmGaugesCollector:
    """A farm's live nodes by state and its dispatcher (``reelfarm.farm.runtime.farmgauges``)."""

    def __init__(self, gauges: Callable[[], FarmGauges | None]) -> None:
        self.gauges = gauges

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily

        try:
            read = self.gauges()
        except Exception:  # noqa: BLE001 - Redis unreachable: reelfarm_dependency_up says so
            return
        if read is None:
            return
        nodes = GaugeMetricFamily("reelfarm_nodes", "Live render nodes by state (working: taking work)",
                                  labels=["state"])
        for state, count in read.nodes.items():
            nodes.add_metric([state], float(count))
        yield nodes
        yield GaugeMetricFamily("reelfarm_dispatch_lease_held", "1 while a process holds the dispatch lease, else 0",
                                value=1.0 if read.dispatch_lease_held else 0.0)
        yield GaugeMetricFamily("reelfarm_dispatch_paused", "1 while an operator has paused dispatch, else 0",
                                value=1.0 if read.dispatch_paused else 0.0)


class WorkspaceLoadCollector:
    """Each busy workspace's chunks running and waiting (``reelfarm.farm.services.loadmetrics``)."""

    def __init__(self, queue: Any, names: Any) -> None:
        self.queue, self.names = queue, names

    def collect(self) -> Iterator[Any]:
        from reelfarm.farm.services.loadmetrics import load_families

        try:
            yield from load_families(self.queue.loads(), lambda ids: self.names(list(ids)))
        except Exception:  # noqa: BLE001 - an unreachable queue shows in /readyz, not as a failed scrape
            return


def _totals(totals: Totals, now: datetime) -> list[Any]:
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

    statuses = GaugeMetricFamily("reelfarm_renders", "Renders by status (all time)", labels=["status"])
    for status, count in totals.renders.items():
        statuses.add_metric([status], float(count))
    credits = CounterMetricFamily("reelfarm_credits_charged", "Credits charged for renders, all time",
                                  labels=["kind"])
    credits.add_metric(["charge"], float(totals.charged))
    credits.add_metric(["refund"], float(totals.refunded))
    deliveries = GaugeMetricFamily("reelfarm_webhook_deliveries",
                                   "Webhook delivery attempts kept (retention window), by outcome",
                                   labels=["outcome"])
    for outcome in DELIVERY_STATES:
        deliveries.add_metric([outcome], float(totals.deliveries.get(outcome, 0)))
    lag = GaugeMetricFamily("reelfarm_webhook_lag_seconds",
                            "Age of the oldest event not yet dispatched, or of the most overdue pending retry")
    lag.add_metric([], max(_age(now, totals.oldest_event), _age(now, totals.oldest_due)))
    return [statuses, credits, deliveries, lag]


def _backlog_age(oldest: Mapping[str, datetime], now: datetime,
                 names: Callable[[list[str]], Mapping[str, str]]) -> Any:
    """``reelfarm_workspace_oldest_queued_seconds{workspace}``: the age of each workspace's oldest
    render not started, by name for the ``BACKLOG_TOP`` oldest, the rest's oldest as ``(other)``."""
    from prometheus_client.core import GaugeMetricFamily

    family = GaugeMetricFamily("reelfarm_workspace_oldest_queued_seconds",
                               "Age of the workspace's oldest render that has not started", labels=["workspace"])
    ranked = sorted(oldest, key=lambda w: (oldest[w], w))
    shown = names(ranked[:BACKLOG_TOP]) if ranked else {}
    for workspace in ranked[:BACKLOG_TOP]:
        family.add_metric([shown.get(workspace, workspace)], _age(now, oldest[workspace]))
    if len(ranked) > BACKLOG_TOP:
        family.add_metric([OTHER], _age(now, oldest[ranked[BACKLOG_TOP]]))
    return family


def _waiting(waiting: dict[str, tuple[int, datetime | None]], now: datetime) -> list[Any]:
    from prometheus_client.core import GaugeMetricFamily

    depth = GaugeMetricFamily("reelfarm_queue_depth", "Jobs waiting in the queue", labels=["queue"])
    oldest = GaugeMetricFamily("reelfarm_queue_oldest_job_age_seconds",
                               "How long the oldest waiting job has waited", labels=["queue"])
    for name, (count, since) in ({name: (0, None) for name in QUEUES} | waiting).items():
        depth.add_metric([name], float(count))
        oldest.add_metric([name], _age(now, since))
    return [depth, oldest]


def _age(now: datetime, moment: datetime | None) -> float:
    if moment is None:
        return 0.0
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return max(0.0, (now - moment).total_seconds())
