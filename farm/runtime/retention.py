"""Retention: rows that only matter for a while are deleted once their while is over.

- Idempotency records, ``KEY_TTL`` (24 h) after they were created: a key is not replayed after that.
- Webhook delivery attempts, the retention period after they were made (``REELFARM_RETENTION_DAYS``,
  30 days by default), once finished: a ``pending`` attempt stays, and so does a failed one until
  the retry it scheduled is due.
- Outbox events dispatched more than the retention period ago, once no attempt of theirs is left
  (attempts go first): never an undispatched event, nor one with an attempt pending, scheduled or
  still shown in ``GET /webhooks/{id}/deliveries``.
- Segments kept for reuse (``reelfarm.farm.services.segments``) that no render has used for the
  retention period: the row first (only if still unused), then the file.
- Drafts (animated previews of unsaved values, ``reelfarm.farm.services.drafts``) past their
  expiry, minutes after they were asked for: the row, then its segments.
- Stored brand-kit logos that no kit and no version names any more (replaced, removed, or their
  kit deleted), an hour after they were written and their kit last changed
  (``reelfarm.studio.brand_logos``).
- Media library assets (``reelfarm.farm.services.library``) uploaded more than the retention period
  ago that no version of a video (any version, old ones too: a version keeps what it was made
  with) and no brand kit of their workspace names, by key or id: the row first (only if still
  unnamed, checked again in its transaction), then the file, its thumbnail and a clip's draft proxy
  (``reelfarm.farm.services.proxies``). Each workspace's
  copy is its own row and file, so another workspace's identical upload stays.
- Presigned uploads to the media library an hour past their URL's expiry, completed or not: the
  staged object (never completed, or refused), then the row (``library.sweep_expired_uploads``).

Each kind is deleted in batches of ``BATCH`` rows, one short transaction each, so a purge never
holds locks for long. A round takes at most ``MAX_BATCHES`` per kind, and starts no further batch
after ``ROUND_SEC`` (a worker purges in its heartbeat thread, which must write within
``reelfarm.farm.runtime.nodes.ALIVE_SEC``); a larger backlog is worked off over the next rounds.

``purge`` is idempotent and safe to run from several processes at once. It is a chore of the
farm's maintenance round (``reelfarm.farm.runtime.maintenance``): in embedded mode at most every
``PURGE_EVERY_SEC`` in each process (``SCHEDULE``), in a farm once per ``PURGE_EVERY_SEC`` across
the farm (under a Redis lock).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from reelfarm.farm.runtime.context import current
from reelfarm.farm.services import drafts
from reelfarm.farm.services.library import sweep_expired_uploads
from reelfarm.farm.services.proxies import delete_proxy
from reelfarm.shared.config import DEFAULT_RETENTION_DAYS, Settings
from reelfarm.shared.db import transaction
from reelfarm.shared.repos import assets as assets_repo
from reelfarm.shared.repos import idempotency as idempotency_repo
from reelfarm.shared.repos import segments as segments_repo
from reelfarm.shared.repos import webhooks as webhooks_repo
from reelfarm.studio.brand_logos import sweep_unused_logos

log = logging.getLogger("reelfarm.farm")

BATCH = 500
MAX_BATCHES = 20  # per kind and round: 10,000 rows, then the round goes on to other work
ROUND_SEC = 5.0  # well inside a heartbeat's ALIVE_SEC, with a beat's 5 s
PURGE_EVERY_SEC = 300.0


@dataclass
class Purged:
    """How many rows of each kind one ``purge`` deleted."""

    idempotency_records: int = 0
    deliveries: int = 0
    events: int = 0
    segments: int = 0
    drafts: int = 0
    logos: int = 0
    assets: int = 0
    uploads: int = 0


def retention_period(settings: Settings | None) -> timedelta:
    """How long dispatched events and delivery attempts are kept (the default without settings)."""
    return timedelta(days=settings.retention_days if settings else DEFAULT_RETENTION_DAYS)


def purge(*, batch: int = BATCH, max_batches: int = MAX_BATCHES, round_sec: float = ROUND_SEC) -> Purged:
    """Delete expired idempotency records, old delivery attempts and old dispatched events; uses the
    task context. Returns how many of each went.

    Each kind gets at least one batch; further ones while fewer than ``max_batches`` were run and
    ``round_sec`` has not passed since the purge began.
    """
    ctx = current()
    deadline = time.monotonic() + round_sec
    now = ctx.clock.now()
    cutoff = now - retention_period(ctx.settings)

    def records(limit: int) -> int:
        return idempotency_repo.purge_expired(ctx.engine, now - idempotency_repo.KEY_TTL, limit)

    def deliveries(limit: int) -> int:
        with transaction(ctx.engine) as conn:
            return webhooks_repo.purge_deliveries(conn, before=cutoff, now=now, limit=limit)

    def events(limit: int) -> int:
        with transaction(ctx.engine) as conn:
            return webhooks_repo.purge_events(conn, dispatched_before=cutoff, limit=limit)

    def kept_segments(limit: int) -> int:
        with ctx.engine.connect() as conn:
            stale = segments_repo.unused_since(conn, cutoff, limit)
        gone = 0
        for workspace_id, fingerprint, key in stale:
            with transaction(ctx.engine) as conn:
                forgotten = segments_repo.forget(conn, workspace_id, fingerprint, cutoff)
            if forgotten:
                ctx.storage.delete(key)
                gone += 1
        return gone

    def expired_drafts(limit: int) -> int:
        return drafts.delete_expired(ctx.engine, ctx.storage, ctx.clock, limit)

    def unused_logos(limit: int) -> int:
        return sweep_unused_logos(ctx.engine, ctx.storage, ctx.clock, limit)

    def unused_assets(limit: int) -> int:
        with ctx.engine.connect() as conn:
            stale = assets_repo.unused_before(conn, cutoff, limit)
        gone = 0
        for asset in stale:
            with transaction(ctx.engine) as conn:
                forgotten = assets_repo.forget_unused(conn, asset)
            if forgotten:
                ctx.storage.delete(asset.key)
                ctx.storage.delete(asset.thumbnail_key)
                delete_proxy(ctx.storage, asset.key)
                gone += 1
        return gone

    def expired_uploads(limit: int) -> int:
        return sweep_expired_uploads(ctx.engine, ctx.storage, ctx.clock, limit)

    # Attempts before events: an event goes only once none of its attempts is left.
    purged = Purged(idempotency_records=_in_batches(records, batch, max_batches, deadline),
                    deliveries=_in_batches(deliveries, batch, max_batches, deadline),
                    events=_in_batches(events, batch, max_batches, deadline),
                    segments=_in_batches(kept_segments, batch, max_batches, deadline),
                    drafts=_in_batches(expired_drafts, batch, max_batches, deadline),
                    logos=_in_batches(unused_logos, batch, max_batches, deadline),
                    assets=_in_batches(unused_assets, batch, max_batches, deadline),
                    uploads=_in_batches(expired_uploads, batch, max_batches, deadline))
    if purged != Purged():
        log.info("retention: deleted %d idempotency records, %d webhook delivery attempts, %d events, %d "
                 "kept segments, %d drafts, %d unused logos, %d unused assets and %d expired uploads",
                 purged.idempotency_records, purged.deliveries, purged.events, purged.segments, purged.drafts,
                 purged.logos, purged.assets, purged.uploads)
    return purged


class PurgeSchedule:
    """When this process last purged: ``due()`` is true at first, then once every ``every_sec``."""

    def __init__(self, every_sec: float = PURGE_EVERY_SEC, monotonic: Callable[[], float] = time.monotonic) -> None:
        self.every_sec = every_sec
        self._monotonic = monotonic
        self._last: float | None = None

    def due(self) -> bool:
        """Whether a purge may run now; if so, it counts as run (a failed one waits its turn too)."""
        now = self._monotonic()
        if self._last is not None and now - self._last < self.every_sec:
            return False
        self._last = now
        return True


SCHEDULE = PurgeSchedule()


def _in_batches(delete_batch: Callable[[int], int], batch: int, max_batches: int, deadline: float) -> int:
    total = 0
    for done in range(max_batches):
        if done and time.monotonic() >= deadline:
            break
        deleted = delete_batch(batch)
        total += deleted
        if deleted < batch:
            break
    return total
