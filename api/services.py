"""The collaborators a running API needs, built once from settings."""
from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy.engine import Engine

from api.idempotency import Idempotency
from api.ratelimit import RateLimiter, make_rate_limiter
from farm.webhooks import WebhookSender
from farm.wiring import Farm, make_farm
from shared.clock import Clock, SystemClock
from shared.config import Settings
from shared.db import make_engine, migrate
from shared.storage import Storage, make_storage
from studio.fetch import make_fetcher
from studio.videos import VideoService
from studio.webhooks import WebhookService


@dataclass
class Services:
    settings: Settings
    engine: Engine
    storage: Storage
    clock: Clock
    videos: VideoService
    farm: Farm
    # Built from the rest when not given (tests hand in a RedisRateLimiter on their own prefix).
    rate_limiter: RateLimiter = field(default=None)  # type: ignore[assignment]
    idempotency: Idempotency = field(default=None)  # type: ignore[assignment]
    webhooks: WebhookService = field(default=None)  # type: ignore[assignment]
    webhook_sender: WebhookSender = field(default=None)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if self.webhooks is None:
            self.webhooks = WebhookService(self.engine, self.clock, make_fetcher(self.settings))
        if self.webhook_sender is None:
            self.webhook_sender = WebhookSender(self.engine, self.farm.queue, self.clock)
        if self.rate_limiter is None:
            self.rate_limiter = make_rate_limiter(self.settings, self.clock)
        if self.idempotency is None:
            self.idempotency = Idempotency(self.engine, self.clock)

    @property
    def renders(self):
        return self.farm.renders

    @property
    def jobs(self):
        return self.farm.jobs

    @classmethod
    def from_settings(cls, settings: Settings, clock: Clock | None = None, run_migrations: bool = True) -> Services:
        clock = clock or SystemClock()
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        engine = make_engine(settings.database_url)
        if run_migrations:
            migrate(engine)
        storage = make_storage(settings, clock)
        return cls(settings=settings, engine=engine, storage=storage, clock=clock,
                   videos=VideoService(engine, clock), farm=make_farm(settings, engine, storage, clock))
