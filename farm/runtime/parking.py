"""Where a round leaves the chunks of a suspended render (``reelfarm.farm.runtime.renderholds``):
in the render's parked list, out of its workspace's waiting queue, their turns kept. A leaf module,
so that the dispatcher and the holds share it without importing each other."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from reelfarm.farm.services.fairness import Chunk

# chunks out of a waiting queue into the parked list, each only if it was still waiting
PARK = ("local n = 0 for _, id in ipairs(ARGV) do "
        "if redis.call('lrem', KEYS[1], 1, id) == 1 then redis.call('rpush', KEYS[2], id) n = n + 1 end end "
        "return n")


def park_suspended(redis: Any, key: Callable[[str], str], waiting_list: Callable[[str], str],
                   chunks: Sequence[Chunk]) -> list[Chunk]:
    """The chunks a round may move: those of a suspended render (``fair:suspended``) are parked
    instead, their turn kept; one command when no render is suspended."""
    if not chunks:
        return []
    renders = sorted({c.render for c in chunks})
    held = {r for r, raw in zip(renders, redis.hmget(key("suspended"), renders)) if raw is not None}
    if not held:
        return list(chunks)
    for chunk in chunks:
        if chunk.render in held:
            redis.eval(PARK, 2, waiting_list(chunk.workspace), key(f"parked:{chunk.render}"), chunk.id)
    return [c for c in chunks if c.render not in held]
