"""The collaborators a running API needs, built once from settings, and the one way a view
reaches them: ``services()``.

Every view is the same three steps: its request schema (``api/schemas/``) validates the body,
one call on a service found here does the work, and its response schema renders the answer.
The services answer resources (plain dicts in the shapes the schemas document) and raise domain
errors, which ``api/app.py`` maps to the error envelope; no view touches a repository or a
transaction (``tests/unit/api/test_views_seam.py``).

    videos         farm.services.videos.Videos          videos, versions, variants (studio and farm behind one door)
    renders        farm.services.renders.RenderService  renders
    jobs           farm.services.jobs.JobService        jobs: stills, brand extraction, generation, translations
    brand_kits     studio.brand_kits.BrandKitService
    comments       studio.comments.CommentService
    webhooks       studio.webhooks.WebhookService       endpoints
    webhook_sender farm.runtime.webhooks.WebhookSender  deliveries
    accounts       shared.accounts.AccountService       the console's people: sign-in, links, passwords
    api_keys       shared.apikeys.ApiKeyService         a workspace's API keys: create, list, revoke; a request's key
    workspaces     shared.workspaces.WorkspaceService   the operator's: create workspaces, credits, farm shares
    read_models    shared.readmodels.ReadModels         the console's read-only lists (ledger, pictures, copies)
    previews       studio.previews.StoryPreviews        stills of unsaved story drafts, the gallery's thumbnails
    drafts         farm.services.drafts.DraftService    animated previews of unsaved values, played as streams
    figures        shared.readmodels.FarmFigures        the farm-wide figures behind /metrics
    assets         farm.services.library.AssetService   the media library: uploads, imports by URL, list, get, delete
    usage          farm.services.usage.UsageService     what renders used and cost, per workspace and period
    estimates      farm.services.estimates.EstimateService  what a render would cost, before asking

The console (``console/``) and ``/metrics`` (``api/metrics.py``) reach them the same way, through
``services()``; ``tests/unit/api/test_views_seam.py`` keeps all three behind it. ``api/auth.py`` and
the ``reelfarm admin`` commands (``api/cli.py``, on ``Services.from_settings``) use the same
services, never a repository or a transaction of their own.
"""
from __future__ import annotations

import mimetypes
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

from flask import current_app
from sqlalchemy import text
from sqlalchemy.engine import Engine
from werkzeug.exceptions import NotFound as HttpNotFound

from reelfarm.api.auth import Caller
from reelfarm.api.errors import Forbidden, Unavailable
from reelfarm.api.idempotency import Idempotency
from reelfarm.api.ratelimit import RateLimiter, make_rate_limiter
from reelfarm.api.server import THREADS
from reelfarm.farm.runtime.farmgauges import read_farm_gauges
from reelfarm.farm.runtime.nodes import detect_capabilities
from reelfarm.farm.runtime.status import collect_status
from reelfarm.farm.runtime.webhooks import WebhookSender
from reelfarm.farm.runtime.wiring import Farm, make_farm
from reelfarm.farm.services.audit import AuditLog
from reelfarm.farm.services.drafts import DraftService
from reelfarm.farm.services.errors import QueueUnavailable
from reelfarm.farm.services.estimates import EstimateService
from reelfarm.farm.services.farmgauges import FarmGauges
from reelfarm.farm.services.jobs import JobService
from reelfarm.farm.services.library import URL_FETCH_OPTIONS, AssetService
from reelfarm.farm.services.queues import ALL_QUEUES
from reelfarm.farm.services.renders import RenderService
from reelfarm.farm.services.usage import UsageService
from reelfarm.farm.services.videos import Videos
from reelfarm.farm.services.workspacecontrols import WorkspaceControls
from reelfarm.renderer.hls import TS_CONTENT_TYPE
from reelfarm.shared.accounts import AccountService
from reelfarm.shared.apikeys import ApiKeyService
from reelfarm.shared.clock import Clock, SystemClock
from reelfarm.shared.config import Settings
from reelfarm.shared.db import API, migrate, process_engine
from reelfarm.shared.formtokens import FormTokens
from reelfarm.shared.readmodels import FarmFigures, ReadModels
from reelfarm.shared.storage import LocalStorage, Storage, make_storage
from reelfarm.shared.workspaces import WorkspaceService
from reelfarm.studio.brand_kits import BrandKitService
from reelfarm.studio.comments import CommentService
from reelfarm.studio.fetch import make_fetcher
from reelfarm.studio.previews import StoryPreviews
from reelfarm.studio.videos import VideoService
from reelfarm.studio.webhooks import WebhookService


def services() -> Services:
    """The running app's services (``create_app`` puts them in ``app.extensions``): the one place
    that reads them from there, for the API's views, the console and ``/metrics`` alike."""
    return current_app.extensions["reelfarm"]



@lru_cache(maxsize=1)
def _this_machine() -> Any:
    return detect_capabilities()


def served_type(key: str) -> str:
    """The content type a stored file is served as, from its name: ``.ts`` is a stream's MPEG-TS
    segment here (the system's table may call it a Qt translation file)."""
    if key.endswith(".ts"):
        return TS_CONTENT_TYPE
    return mimetypes.guess_type(key)[0] or "application/octet-stream"

class Services:
    """The collaborators, each built from the rest unless handed in (tests hand in a
    RedisRateLimiter on their own prefix)."""

    def __init__(self, settings: Settings, engine: Engine, storage: Storage, clock: Clock, farm: Farm, *,
                 videos: Videos | None = None, brand_kits: BrandKitService | None = None,
                 comments: CommentService | None = None, rate_limiter: RateLimiter | None = None,
                 idempotency: Idempotency | None = None, webhooks: WebhookService | None = None,
                 webhook_sender: WebhookSender | None = None, accounts: AccountService | None = None,
                 api_keys: ApiKeyService | None = None, workspaces: WorkspaceService | None = None,
                 read_models: ReadModels | None = None, figures: FarmFigures | None = None,
                 previews: StoryPreviews | None = None, drafts: DraftService | None = None,
                 assets: AssetService | None = None) -> None:
        self.settings = settings
        self.engine = engine
        self.storage = storage
        self.clock = clock
        self.farm = farm
        self.videos = videos if videos is not None else Videos(VideoService(engine, clock), self.jobs, self.renders,
                                                               storage, clock)
        self.brand_kits = brand_kits if brand_kits is not None else BrandKitService(engine, clock, storage)
        self.comments = comments if comments is not None else CommentService(engine, clock)
        self.webhooks = webhooks if webhooks is not None else WebhookService(engine, clock, make_fetcher(settings))
        self.webhook_sender = webhook_sender if webhook_sender is not None else \
            WebhookSender(engine, farm.queue, clock)
        self.rate_limiter = rate_limiter if rate_limiter is not None else make_rate_limiter(settings, clock)
        self.idempotency = idempotency if idempotency is not None else Idempotency(engine, clock)
        self.form_tokens = FormTokens(engine, clock)  # the console's create forms, in the same records
        self.accounts = accounts if accounts is not None else AccountService(engine, clock, self.rate_limiter)
        self.api_keys = api_keys if api_keys is not None else ApiKeyService(engine, clock)
        self.workspaces = workspaces if workspaces is not None else WorkspaceService(engine, clock)
        self.workspace_controls = WorkspaceControls(engine, clock)  # an operator's: audited (admin set-plan, share)
        self.usage = UsageService(engine, clock)  # what renders used and cost, by workspace (GET /usage, admin usage)
        self.estimates = EstimateService(engine, storage)  # what a render would cost (POST .../renders/estimate)
        # what operators did (farm.services.audit); entries the database cannot take wait in the farm's Redis
        self.audit_log = AuditLog(engine, clock, getattr(farm.queue, "redis", None),
                                  getattr(farm.queue, "namespace", ""))
        self.read_models = read_models if read_models is not None else ReadModels(engine, storage)
        self.previews = previews if previews is not None else \
            StoryPreviews(engine, storage, settings.data_dir / "previews")
        self.drafts = drafts if drafts is not None else \
            DraftService(engine, farm.queue, storage, clock, settings.secret_key, settings.public_url)
        self.assets = assets if assets is not None else \
            AssetService(engine, clock, storage, make_fetcher(settings, **URL_FETCH_OPTIONS))
        if figures is None:
            queue = farm.queue
            redis = getattr(queue, "redis", None)
            figures = FarmFigures(engine, (lambda: _rq_waiting(redis, queue)) if redis is not None else None)
        self.figures = figures

    @property
    def renders(self) -> RenderService:
        return self.farm.renders

    @property
    def jobs(self) -> JobService:
        return self.farm.jobs

    # -- the calling key and the service itself ---------------------------------------------

    def me(self, caller: Caller) -> dict[str, Any]:
        """The key's workspace, plan, credits, rate-limit policy and library use (``GET /me``)."""
        ws = caller.workspace
        limit = self.settings.rate_limit_for(ws.plan)
        if limit is None:  # api.auth turns such keys away before they get here
            raise Forbidden("The workspace's plan does not include API access; upgrade to Pro, Crypto Pro or Agency.",
                            code="plan_without_api")
        return {"workspace": {"id": ws.id, "name": ws.name, "plan": ws.plan, "credits": ws.credits},
                "rate_limit": {"limit": limit.limit, "window_sec": limit.window_sec, "policy": limit.policy},
                "api_key": {"id": caller.key_id, "prefix": caller.key_prefix},
                "library": self.assets.usage(ws.id)}

    def health(self) -> dict[str, Any]:
        """``ok`` when the database and the queue answer; raises Unavailable (503) otherwise."""
        try:
            with self.engine.connect() as conn:
                conn.execute(text("SELECT 1"))
        except Exception as exc:  # any database failure means unhealthy
            raise Unavailable(f"database unavailable: {type(exc).__name__}") from exc
        try:
            self.farm.queue.ping()
        except QueueUnavailable as exc:
            raise Unavailable(f"queue unavailable: {exc}") from exc
        return {"status": "ok", "checks": {"database": "ok", "queue": "ok"}}

    def farm_gauges(self) -> FarmGauges | None:
        """The farm's live nodes by state and its dispatcher (``/metrics``); None in the embedded mode.
        Raises Redis's errors when it cannot be reached."""
        queue = self.farm.queue
        redis = getattr(queue, "redis", None)
        return None if redis is None else read_farm_gauges(redis, getattr(queue, "namespace", ""))

    def farm_status(self) -> dict[str, Any]:
        """What the farm is doing (``reelfarm farm status``): nodes, queue depths, renders in flight."""
        queue = self.farm.queue
        return collect_status(self.engine, self.farm.progress, self.clock, getattr(queue, "redis", None),
                              getattr(queue, "namespace", ""))

    def this_machine(self) -> Any:
        """What this server can do (hostname, cores, GPU, NVENC): the embedded mode's one node on
        the console's farm page, probed once per process."""
        return _this_machine()

    def release_connections(self) -> None:
        """Close the database connections this process's pool holds (a server's master before it
        forks its workers, which make their own)."""
        self.engine.dispose()

    def signed_file(self, key: str, expires: str, sig: str) -> tuple[Path, str]:
        """The local path and type of a file behind a signed download URL.

        404 when this storage serves no downloads (only ``LocalStorage`` does) or has no such
        file; 403 when the URL was tampered with or has expired.
        """
        if not isinstance(self.storage, LocalStorage):
            raise HttpNotFound()
        if not self.storage.verify(key, expires, sig):
            raise Forbidden("This download link is invalid or has expired; fetch the resource again for a fresh one.",
                            code="forbidden")
        if not self.storage.exists(key):
            raise HttpNotFound()
        return self.storage.path(key), served_type(key)

    @classmethod
    def from_settings(cls, settings: Settings, clock: Clock | None = None, run_migrations: bool = True,
                      kind: str = API, threads: int = THREADS) -> Services:
        """The services of a process of ``kind`` (``reelfarm.shared.db.pool_bound``; an API worker
        serving ``threads`` requests at a time unless told otherwise)."""
        clock = clock or SystemClock()
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        engine = process_engine(settings, kind, threads)
        if run_migrations:
            migrate(engine)
        storage = make_storage(settings, clock)
        return cls(settings=settings, engine=engine, storage=storage, clock=clock,
                   farm=make_farm(settings, engine, storage, clock))


def _rq_waiting(redis: Any, queue: Any) -> dict[str, tuple[int, datetime | None]]:
    """Per RQ queue of the farm: jobs waiting, and when the oldest of them was enqueued."""
    from rq import Queue

    found: dict[str, tuple[int, datetime | None]] = {}
    for name in ALL_QUEUES:
        rq_queue = Queue(queue.queue_name(name), connection=redis)
        first = rq_queue.get_job_ids(0, 1)
        job = rq_queue.fetch_job(first[0]) if first else None
        enqueued = job.enqueued_at if job is not None else None
        if enqueued is not None and enqueued.tzinfo is None:
            enqueued = enqueued.replace(tzinfo=UTC)
        # chunks bound for it that wait for their turn under fair dispatch count as waiting too
        found[name] = (rq_queue.count + int(redis.llen(queue.dispatcher.backlog_list(name))), enqueued)
    return found
