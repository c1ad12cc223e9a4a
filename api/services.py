"""The collaborators a running API needs, built once from settings."""
from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.engine import Engine

from shared.clock import Clock, SystemClock
from shared.config import Settings
from shared.db import make_engine, migrate
from shared.storage import Storage, make_storage
from studio.videos import VideoService


@dataclass
class Services:
    settings: Settings
    engine: Engine
    storage: Storage
    clock: Clock
    videos: VideoService

    @classmethod
    def from_settings(cls, settings: Settings, clock: Clock | None = None, run_migrations: bool = True) -> "Services":
        clock = clock or SystemClock()
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        engine = make_engine(settings.database_url)
        if run_migrations:
            migrate(engine)
        return cls(settings=settings, engine=engine, storage=make_storage(settings, clock), clock=clock,
                   videos=VideoService(engine, clock))
