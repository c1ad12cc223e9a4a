"""An operator's hold on renders in the RQ farm: suspended chunks wait apart from the line.

``reelfarm farm render suspend`` (``reelfarm.farm.services.rendercontrols``) takes the render's
chunks still waiting for their turn out of their workspace's waiting queue into the list
``reelfarm:<ns>fair:parked:<render>``, under the round lock (``Dispatcher.round``'s), and pushes a
``g`` event for each (``dispatchmirror``): the dispatcher's copy drops them at its next round, as
it drops a canceled chunk. Their turns (``fair:turns``) stay as they were, arrival time and
priority included. The render is named in the hash ``reelfarm:<ns>fair:suspended`` (who, when,
why), which:

- parks a chunk of the render that reaches its waiting queue later (released by the asset import
  it waited on) when a round would move it (``parking.park_suspended``, called by ``Dispatcher._move``);
- says "suspended" in the render's ``held_up`` (``RQQueue.held_up``).

Chunks already moved to a ready queue (a node takes them within moments) or running finish; a
retry of one goes back to its ready queue, as every retry does. Resume puts the parked chunks back
in their waiting queue (those still live: one canceled meanwhile stays out) with an ``a`` event,
and wakes the dispatcher: they take the place their kept arrival time and priority give them.

A render's priority (``set_priority``) is rewritten in its chunks' turns, parked ones included,
and an ``r`` event has the dispatcher's copy take them in again at the new priority.
"""
from __future__ import annotations

import json
import secrets
import time
from collections.abc import Sequence
from typing import Any

from reelfarm.farm.runtime.dispatch import LOCK_MS, Dispatcher
from reelfarm.farm.runtime.parking import PARK as _PARK

_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"
# a turn rewritten only as it was read, and counted (as ``Dispatcher.raise_priority`` does)
_REWRITE = ("if redis.call('hget', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end "
            "redis.call('hset', KEYS[1], ARGV[1], ARGV[3]) redis.call('incr', KEYS[2]) return 1")


def _text(raw: Any) -> str:
    return raw.decode() if isinstance(raw, bytes) else str(raw)


class RedisHolds:
    """Suspend, resume and reprioritise renders' waiting chunks on one Redis and namespace."""

    def __init__(self, dispatcher: Dispatcher) -> None:
        self.dispatcher = dispatcher
        self.redis = dispatcher.redis

    def parked_list(self, render: str) -> str:
        return self.dispatcher.key(f"parked:{render}")

    def suspend(self, render: str, workspace: str, rq_ids: Sequence[str], record: dict[str, Any]) -> int:
        """Hold the render's chunks back (module docstring); returns how many were waiting and are
        parked now. A render suspended already keeps its first record."""
        d = self.dispatcher
        self.redis.hsetnx(d.key("suspended"), render, json.dumps({**record, "workspace": workspace}))
        with self._round_lock():
            parked = int(self.redis.eval(_PARK, 2, d.waiting_list(workspace), self.parked_list(render), *rq_ids)) \
                if rq_ids else 0
            if parked:
                ids = [_text(i) for i in self.redis.lrange(self.parked_list(render), -parked, -1)]
                self._event("g", *ids)
        return parked

    def resume(self, render: str) -> tuple[bool, int]:
        """Take the hold off: (whether it was suspended, chunks put back in line)."""
        d = self.dispatcher
        raw = self.redis.hget(d.key("suspended"), render)
        was = bool(self.redis.hdel(d.key("suspended"), render))
        parked = [_text(i) for i in self.redis.lrange(self.parked_list(render), 0, -1)]
        back = []
        if parked:
            turns = self.redis.hmget(d.key("turns"), parked)
            with self.redis.pipeline(transaction=False) as pipe:
                for rq_id in parked:
                    pipe.hget(f"rq:job:{rq_id}", "status")
                statuses = pipe.execute()
            back = [i for i, turn, status in zip(parked, turns, statuses)
                    if turn is not None and status is not None and _text(status) == "queued"]
        workspace: str = json.loads(raw)["workspace"] if raw is not None else ""
        if back and not workspace:
            workspace = json.loads(self.redis.hget(d.key("turns"), back[0]))["workspace"]
        with self.redis.pipeline() as pipe:
            if back:
                pipe.rpush(d.waiting_list(workspace), *back)
                pipe.sadd(d.key("workspaces"), workspace)
            pipe.delete(self.parked_list(render))
            pipe.execute()
        if back:
            d.arrived(*back)
        self._wake()
        return was, len(back)

    def drop(self, render: str) -> None:
        """Forget the hold on a render that ended (canceled): its parked chunks are canceled with it."""
        with self.redis.pipeline() as pipe:
            pipe.hdel(self.dispatcher.key("suspended"), render)
            pipe.delete(self.parked_list(render))
            pipe.execute()

    def suspended(self, render: str) -> dict[str, Any] | None:
        """The hold on the render (by, at, reason, workspace), or None."""
        raw = self.redis.hget(self.dispatcher.key("suspended"), render)
        return json.loads(raw) if raw is not None else None

    def parked(self, render: str) -> list[str]:
        """RQ ids of the render's chunks held back now."""
        return [_text(i) for i in self.redis.lrange(self.parked_list(render), 0, -1)]

    def set_priority(self, render: str, rq_ids: Sequence[str], priority: str) -> int:
        """Give the render's chunks still waiting (parked included) ``priority``; returns how many changed."""
        d = self.dispatcher
        changed = 0
        for rq_id, raw in zip(rq_ids, self.redis.hmget(d.key("turns"), list(rq_ids)) if rq_ids else []):
            if raw is None:
                continue
            entry = json.loads(raw)
            if entry.get("priority", "normal") == priority:
                continue
            entry["priority"] = priority
            changed += int(self.redis.eval(_REWRITE, 2, d.key("turns"), d.key("raised"), rq_id, raw,
                                           json.dumps(entry)))
        if changed:
            self._event("r", render, priority)
            self._wake()
        return changed

    def _event(self, kind: str, *args: str) -> None:
        if self.dispatcher.policy == "fair":
            self.redis.rpush(self.dispatcher.key("events"), "\t".join((kind, *args)))

    def _wake(self) -> None:
        from reelfarm.farm.runtime.dispatchlease import wake

        wake(self.redis, self.dispatcher.namespace)

    def _round_lock(self) -> Any:
        """The round lock, waited for (a round holds it ``LOCK_MS`` at most): no round decides on
        chunks this change takes out of its sight."""
        from contextlib import contextmanager

        @contextmanager
        def held() -> Any:
            token = secrets.token_hex(8)
            deadline = time.monotonic() + LOCK_MS / 1000 + 1
            key = self.dispatcher.key("lock")
            while not self.redis.set(key, token, nx=True, px=LOCK_MS):
                if time.monotonic() >= deadline:
                    raise TimeoutError("the dispatcher's round lock stays taken")
                time.sleep(0.05)
            try:
                yield
            finally:
                self.redis.eval(_RELEASE, 1, key, token)

        return held()
