"""How far along a render is: frames done over frames total, counted outside the render row.

Chunk tasks report frames as they draw them (in batches, see ``ProgressBatcher``); the render
service reads the count when it shows a render. Three stores, one contract
(``tests/integration/farm/test_progress_contract.py``):

- ``RedisProgress``: a farm. ``HINCRBY`` on one hash per render, with a TTL so that counters of
  renders nobody asks about again disappear on their own.
- ``DatabaseProgress``: the embedded mode. Chunks run in forked pool processes and the API may
  run in several gunicorn processes, so a process-local counter would be invisible to the
  process answering ``GET /renders/{id}``; a row per render in ``render_progress`` is visible to
  all of them, costs nothing to install, and writes are batched (about two a second per chunk).
- ``MemoryProgress``: one process only (tests, a single-process tool). The honest small sibling.

Counts only go up, so the fraction shown is monotonic. A retried chunk counts its frames again;
``fraction`` caps the value below 1 until the render has succeeded, so a retry can make progress
look a little early, never finished early or going backwards.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Protocol

from sqlalchemy import Engine, select

from reelfarm.shared.clock import Clock, SystemClock
from reelfarm.shared.db import transaction
from reelfarm.shared.tables import render_progress

log = logging.getLogger("reelfarm.farm")

DEFAULT_TTL_SEC = 7 * 24 * 3600
MAX_UNFINISHED = 0.99  # the last 1% is the stitch


class ProgressStore(Protocol):
    """Frames done per render."""

    def add_frames(self, render_id: str, n: int) -> None:
        """Count ``n`` more frames done (n >= 0)."""
        ...

    def frames(self, render_id: str) -> int:
        """Frames counted so far; 0 for an unknown render."""
        ...

    def set_total(self, render_id: str, total: int) -> None:
        """Record how many frames the render has."""
        ...

    def total(self, render_id: str) -> int | None:
        """The recorded total, or None."""
        ...

    def clear(self, render_id: str) -> None:
        """Forget the render's counters."""
        ...


def fraction(store: ProgressStore, render_id: str, total: int | None) -> float:
    """Frames done over ``total`` (or the stored total), between 0 and ``MAX_UNFINISHED``."""
    total = total or store.total(render_id)
    if not total:
        return 0.0
    return min(store.frames(render_id) / total, MAX_UNFINISHED)


class MemoryProgress:
    """Counters in this process's memory."""

    def __init__(self) -> None:
        self._frames: dict[str, int] = {}
        self._totals: dict[str, int] = {}
        self._lock = threading.Lock()

    def add_frames(self, render_id: str, n: int) -> None:
        with self._lock:
            self._frames[render_id] = self._frames.get(render_id, 0) + max(0, n)

    def frames(self, render_id: str) -> int:
        with self._lock:
            return self._frames.get(render_id, 0)

    def set_total(self, render_id: str, total: int) -> None:
        with self._lock:
            self._totals[render_id] = total

    def total(self, render_id: str) -> int | None:
        with self._lock:
            return self._totals.get(render_id)

    def clear(self, render_id: str) -> None:
        with self._lock:
            self._frames.pop(render_id, None)
            self._totals.pop(render_id, None)


class RedisProgress:
    """Counters in Redis: one hash per render (``frames``, ``total``) that expires after ``ttl``.

    Progress is advisory: when Redis cannot be reached, writes are logged and dropped and reads
    answer 0 / None, so a blip never fails a render or a ``GET``.
    """

    def __init__(self, redis: Any, prefix: str = "reelfarm:progress:", ttl: int = DEFAULT_TTL_SEC) -> None:
        self.redis = redis
        self.prefix = prefix
        self.ttl = ttl

    def _key(self, render_id: str) -> str:
        return f"{self.prefix}{render_id}"

    def add_frames(self, render_id: str, n: int) -> None:
        if n > 0:
            self._write(render_id, lambda pipe, key: pipe.hincrby(key, "frames", n))

    def frames(self, render_id: str) -> int:
        value = self._read(lambda: self.redis.hget(self._key(render_id), "frames"))
        return int(value) if value is not None else 0

    def set_total(self, render_id: str, total: int) -> None:
        self._write(render_id, lambda pipe, key: pipe.hset(key, "total", total))

    def total(self, render_id: str) -> int | None:
        value = self._read(lambda: self.redis.hget(self._key(render_id), "total"))
        return int(value) if value is not None else None

    def clear(self, render_id: str) -> None:
        self._write(render_id, lambda pipe, key: pipe.delete(key), expire=False)

    def _write(self, render_id: str, command: Any, expire: bool = True) -> None:
        from redis.exceptions import RedisError

        key = self._key(render_id)
        try:
            with self.redis.pipeline(transaction=True) as pipe:
                command(pipe, key)
                if expire:
                    pipe.expire(key, self.ttl)
                pipe.execute()
        except RedisError as exc:
            log.warning("progress not recorded: %s", exc)

    def _read(self, command: Any) -> Any:
        from redis.exceptions import RedisError

        try:
            return command()
        except RedisError as exc:
            log.warning("progress not read: %s", exc)
            return None


class DatabaseProgress:
    """Counters in the ``render_progress`` table (embedded mode; see the module docstring)."""

    def __init__(self, engine: Engine, clock: Clock | None = None) -> None:
        self.engine = engine
        self.clock = clock or SystemClock()

    def add_frames(self, render_id: str, n: int) -> None:
        if n > 0:
            self._upsert(render_id, frames=n)

    def frames(self, render_id: str) -> int:
        row = self._row(render_id)
        return int(row.frames) if row is not None else 0

    def set_total(self, render_id: str, total: int) -> None:
        self._upsert(render_id, total=total)

    def total(self, render_id: str) -> int | None:
        row = self._row(render_id)
        return int(row.total) if row is not None and row.total is not None else None

    def clear(self, render_id: str) -> None:
        with transaction(self.engine) as conn:
            conn.execute(render_progress.delete().where(render_progress.c.render_id == render_id))

    def _row(self, render_id: str) -> Any:
        with self.engine.connect() as conn:
            return conn.execute(select(render_progress).where(render_progress.c.render_id == render_id)).first()

    def _upsert(self, render_id: str, frames: int = 0, total: int | None = None) -> None:
        with transaction(self.engine) as conn:
            if conn.dialect.name == "postgresql":
                from sqlalchemy.dialects.postgresql import insert
            else:
                from sqlalchemy.dialects.sqlite import insert  # type: ignore[assignment]
            now = self.clock.now()
            stmt = insert(render_progress).values(render_id=render_id, frames=frames, total=total, updated_at=now)
            changes: dict[str, Any] = {"updated_at": now}
            if frames:
                changes["frames"] = render_progress.c.frames + stmt.excluded.frames
            if total is not None:
                changes["total"] = stmt.excluded.total
            conn.execute(stmt.on_conflict_do_update(index_elements=[render_progress.c.render_id], set_=changes))


class ProgressBatcher:
    """Collects per-frame reports and hands them to a store at most every ``interval`` seconds.

    Call it with frame counts as they come; ``flush()`` at the end sends what is left.
    """

    def __init__(self, store: ProgressStore, render_id: str, interval: float = 0.5) -> None:
        self.store = store
        self.render_id = render_id
        self.interval = interval
        self._pending = 0
        self._last = time.monotonic()

    def __call__(self, n: int) -> None:
        self._pending += n
        if time.monotonic() - self._last >= self.interval:
            self.flush()

    def flush(self) -> None:
        if self._pending:
            self.store.add_frames(self.render_id, self._pending)
            self._pending = 0
        self._last = time.monotonic()
