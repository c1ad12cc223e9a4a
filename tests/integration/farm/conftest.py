"""Fixtures for the farm: real databases (``db_url``), real Redis, real storage, real rendering.

Redis is the session's server (``redis_url`` in ``tests/conftest.py``: a throwaway process, or
``REELFARM_TEST_REDIS_URL``). Each test gets its own namespace (queue names, job ids, node and
progress keys all carry it) and deletes only the keys that carry it. When Redis is down, the
tests that need it fail, never skip: they exist to run against the real server.
"""

from __future__ import annotations

import copy
import json
import secrets
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, func, select

from reelfarm.farm.runtime.context import TaskContext, configure
from reelfarm.farm.runtime.dispatch import Dispatcher, Shares
from reelfarm.farm.runtime.embedded import EmbeddedQueue
from reelfarm.farm.runtime.queue import RQQueue
from reelfarm.farm.runtime.wiring import make_redis
from reelfarm.farm.services.jobs import JobService
from reelfarm.farm.services.progress import DatabaseProgress, ProgressStore, RedisProgress
from reelfarm.farm.services.queues import JobQueue
from reelfarm.farm.services.renders import RenderService
from reelfarm.renderer.tokens import NEUTRAL_BRAND
from reelfarm.shared.clock import Clock, SystemClock
from reelfarm.shared.config import Settings
from reelfarm.shared.db import make_engine, transaction
from reelfarm.shared.repos import brand_kits as kits_repo
from reelfarm.shared.repos import videos as videos_repo
from reelfarm.shared.repos import workspaces as ws_repo
from reelfarm.shared.storage import LocalStorage
from reelfarm.shared.tables import credit_ledger, queued_tasks, renders
from tests.conftest import BASE_DOC
from tests.helpers import write_png, write_tone

PUBLIC_URL = "http://127.0.0.1:8000"
SECRET = "s" * 48


@pytest.fixture(autouse=True)
def _signal_handlers_kept() -> Iterator[None]:
    """RQ's ``Worker.work`` installs SIGINT and SIGTERM handlers of its own in the process that
    runs it and leaves them there: the in-process workers of these tests would leave them in the
    pytest worker, where a later signal raised RQ's StopRequested in whatever ran (seen inside a
    garbage collector's callback). Each test's are put back as they were."""
    saved = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    yield
    for signum, handler in saved.items():
        signal.signal(signum, handler)


@pytest.fixture
def namespace(redis_url: str) -> Iterator[str]:
    """A prefix unique to the test; its keys (and set members) are removed afterwards."""
    token = f"t{secrets.token_hex(5)}-"
    yield token
    redis = make_redis(redis_url)
    for key in redis.scan_iter(match=f"*{token}*", count=1000):
        redis.delete(key)
    for key in redis.scan_iter(match="rq:*", count=1000):
        if redis.type(key) == b"set":
            members = [m for m in redis.smembers(key) if token.encode() in m]
            if members:
                redis.srem(key, *members)


@pytest.fixture
def redis(redis_url: str) -> Any:
    return make_redis(redis_url)


@pytest.fixture
def storage(tmp_path: Path) -> LocalStorage:
    return LocalStorage(tmp_path / "files", PUBLIC_URL, SECRET)


@pytest.fixture
def clock() -> Clock:
    return SystemClock()


@dataclass
class Farm:
    """Everything a farm test touches, built from real parts."""

    engine: Engine
    storage: LocalStorage
    clock: Clock
    progress: ProgressStore
    queue: JobQueue
    renders: RenderService
    jobs: JobService

    def workspace(self, credits: int = 10) -> str:
        with transaction(self.engine) as conn:
            return ws_repo.create_workspace(conn, self.clock, name="acme", plan="pro", credits=credits,
                                            brand_tokens=NEUTRAL_BRAND).id

    def video(self, workspace_id: str, doc: dict[str, Any], status: str = "ready") -> str:
        with transaction(self.engine) as conn:
            video, _ = videos_repo.create_video(
                conn, self.clock, workspace_id=workspace_id, title="t", status=status,
                default_format=doc.get("format", "16:9"),
                first_version=videos_repo.NewVersion(source="doc", doc=doc, duration_sec=float(doc["duration"])))
        return video.id

    def new_version(self, workspace_id: str, video_id: str, doc: dict[str, Any]) -> None:
        with transaction(self.engine) as conn:
            videos_repo.append_version(conn, self.clock, workspace_id=workspace_id, video_id=video_id,
                                       version=videos_repo.NewVersion(source="doc", doc=doc,
                                                                      duration_sec=float(doc["duration"])))

    def balance(self, workspace_id: str) -> int:
        with self.engine.connect() as conn:
            balance = ws_repo.get_workspace(conn, workspace_id).credits
            assert ws_repo.ledger_total(conn, workspace_id) == balance  # the audit invariant, always
            return balance

    def ledger(self, workspace_id: str) -> list[tuple[str, int]]:
        with self.engine.connect() as conn:
            rows = conn.execute(select(credit_ledger.c.reason, credit_ledger.c.delta)
                                .where(credit_ledger.c.workspace_id == workspace_id)
                                .order_by(credit_ledger.c.created_at, credit_ledger.c.reason)).all()
        return [(r.reason, r.delta) for r in rows]

    def render_count(self, workspace_id: str) -> int:
        with self.engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(renders)
                                    .where(renders.c.workspace_id == workspace_id)).scalar_one())


def build_farm(engine: Engine, storage: LocalStorage, clock: Clock, progress: ProgressStore,
               queue: JobQueue, retries: int = 2, studio: Any = None) -> Farm:
    """``studio`` (a ``reelfarm.farm.services.collaborators.Collaborators``) defaults to one built from a test environment: the
    built-in writer and a fetcher allowed to reach loopback."""
    studio = studio or studio_for_tests()
    configure(TaskContext(engine=engine, storage=storage, clock=clock, progress=progress, studio=studio))
    return Farm(engine, storage, clock, progress, queue,
                RenderService(engine, queue, storage, clock, progress, retries=retries),
                JobService(engine, queue, storage, clock, studio=lambda: studio, retries=retries))


def studio_for_tests(**env: str) -> Any:
    """Collaborators (``reelfarm.farm.services.collaborators``) from settings with ``env`` (loopback fetches allowed unless given)."""
    from reelfarm.farm.services.collaborators import make_collaborators

    env = {"REELFARM_FETCH_ALLOW_PRIVATE": "1", "REELFARM_SECRET_KEY": "x" * 40, **env}
    return make_collaborators(Settings.from_env(env))


@pytest.fixture
def make_embedded(db_url: str, storage: LocalStorage, clock: Clock) -> Iterator[Callable[..., Farm]]:
    """``make_embedded(**queue_options)``: a farm on an EmbeddedQueue (not started)."""
    engines: list[Engine] = []
    queues: list[EmbeddedQueue] = []

    def make(retries: int = 2, **options: Any) -> Farm:
        engine = make_engine(db_url)
        engines.append(engine)
        clear_tasks(engine)
        options.setdefault("poll_sec", 0.1)
        options.setdefault("retry_intervals", (0,))
        queue = EmbeddedQueue(engine, clock=clock, **options)
        queues.append(queue)
        return build_farm(engine, storage, clock, DatabaseProgress(engine, clock), queue, retries)

    yield make
    for queue in queues:
        queue.stop()
    for engine in engines:
        clear_tasks(engine)
        engine.dispose()


def clear_tasks(engine: Engine) -> None:
    """The PostgreSQL database is shared by the session, and a started queue runs whatever it
    finds: each test starts and ends with an empty queue."""
    with transaction(engine) as conn:
        conn.execute(queued_tasks.delete())


@pytest.fixture
def embedded(make_embedded: Callable[..., Farm]) -> Farm:
    return make_embedded()


@pytest.fixture
def rq_farm(db_url: str, storage: LocalStorage, clock: Clock, redis: Any, namespace: str) -> Iterator[Farm]:
    """A farm on RQ over real Redis (retries without waiting, so burst workers see them)."""
    engine = make_engine(db_url)
    queue = RQQueue(redis, namespace=namespace, retry_intervals=(0,))
    yield build_farm(engine, storage, clock, RedisProgress(redis, prefix=f"reelfarm:{namespace}progress:"), queue)
    engine.dispose()


def work_burst(redis: Any, namespace: str, queues: tuple[str, ...] = ("render", "jobs"),
               worker: Callable[[], Any] | None = None) -> None:
    """Run every queued job in this process with RQ's SimpleWorker, until the queues are empty and
    no chunk waits for its turn (each pass first dispatches every waiting chunk it may, as a node's
    rounds would: ``reelfarm.farm.runtime.dispatch``). ``worker`` makes the RQ worker of each pass
    (default: RQ's SimpleWorker on ``queues``)."""
    from rq import Queue, SimpleWorker

    def simple() -> Any:
        return SimpleWorker([Queue(f"{namespace}{q}", connection=redis) for q in queues], connection=redis,
                            name=f"{namespace}simple-{secrets.token_hex(3)}")

    while True:
        moved = dispatch_all(redis, namespace)
        ran = (worker or simple)().work(burst=True, logging_level="WARNING")  # whether it ran any job
        # Done when nothing waits for its turn; and when a pass moved and ran nothing, no later pass
        # can (a chunk held in a pool no worker here serves: reconciliation re-enqueues every
        # unfinished render of the shared database, other tests' pooled ones included).
        if not Dispatcher(redis, namespace, shares=Shares(None)).held() or (not moved and not ran):
            return


def dispatch_all(redis: Any, namespace: str) -> list[str]:
    """One round of fair dispatch with room for every waiting chunk (caps still hold)."""
    return Dispatcher(redis, namespace, shares=Shares(None)).round(slots=10_000)


# -- documents ------------------------------------------------------------------------------

def make_doc(duration: float = 6, **changes: Any) -> dict[str, Any]:
    """The shared 6 s test document, stretched to ``duration`` (its two scenes share it)."""
    doc = copy.deepcopy(BASE_DOC)
    doc["duration"] = duration
    doc["scenes"][0]["duration"] = duration / 2
    doc["scenes"][1]["duration"] = duration / 2
    doc.update(changes)
    return doc


def owned_prefix(farm: Farm, workspace_id: str) -> str:
    """A storage prefix the workspace owns (its default brand kit's), for assets a document names by key."""
    with farm.engine.connect() as conn:
        return f"brand-kits/{kits_repo.get_default_brand_kit(conn, workspace_id).id}"


def with_audio(doc: dict[str, Any], farm: Farm, workspace_id: str, tmp_path: Path) -> dict[str, Any]:
    tone = write_tone(tmp_path / "tone.wav", 3.0)
    key = f"{owned_prefix(farm, workspace_id)}/tone.wav"
    farm.storage.put_file(key, tone, "audio/wav")
    doc["assets"] = {**doc.get("assets", {}), "music": {"type": "audio", "key": key}}
    doc["audio"] = [{"asset": "music", "start": 1.0, "volume": 0.8}]
    return doc


def with_image(doc: dict[str, Any], farm: Farm, workspace_id: str, tmp_path: Path,
               corrupt: bool = False) -> dict[str, Any]:
    key = f"{owned_prefix(farm, workspace_id)}/photo.png"
    if corrupt:
        farm.storage.put_bytes(key, b"this is not an image", "image/png")
    else:
        farm.storage.put_file(key, write_png(tmp_path / "photo.png"), "image/png")
    doc["assets"] = {**doc.get("assets", {}), "photo": {"type": "image", "key": key}}
    doc["scenes"][0]["layers"].append({"id": "pic", "type": "image", "asset": "photo", "x": 0.8, "y": 0.3,
                                       "w": 0.2, "h": 0.2, "fit": "cover"})
    return doc


def destination(redis: Any, namespace: str, job: Any) -> str:
    """RQ's name of the ready queue a chunk is in, or will go to when its turn comes
    (``reelfarm.farm.runtime.dispatch``). Read from Redis now, not from ``job`` (a round may have
    moved it since it was fetched); a chunk taken from its line but not yet in its ready queue (a
    round drops the turn first) is waited for up to half a second."""
    turns = Dispatcher(redis, namespace, shares=Shares(None)).key("turns")
    waiting = f"{namespace}waiting:"
    for _ in range(50):
        origin = redis.hget(job.key, "origin")
        origin = origin.decode() if isinstance(origin, bytes) else str(origin or job.origin)
        if not origin.startswith(waiting):
            return origin
        raw = redis.hget(turns, job.id)
        if raw:
            return f"{namespace}{json.loads(raw)['target']}"
        time.sleep(0.01)
    return f"{namespace}render"
