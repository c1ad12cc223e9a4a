"""A round's places for pools (``reelfarm.farm.services.pools``) on RQ: the chunks of a pool go to
the nodes that serve it, shared out fairly within the pool.

The dispatcher's copy keeps one fair queue per ready queue and pool (``Mirror.queue``). Nodes of
one tag set work that set's ready queues (``pools.class_queue``: ``render@region=eu`` for nodes
tagged ``region=eu`` alone) before the plain ones. Each round, before the plain queues' places,
every tag set among the live nodes (not set aside) gets its free places (its idle workers, as
the plain queues count theirs, less what waits in its ready queue), shared among the pools it
serves that have chunks waiting (``pools.allot``), each pool's share taken from that pool's fair
queue in the policy's order; the places used are no longer counted for the plain queues. A
pool's chunks bound for ``render-gpu`` go to its ``render`` queue when no live node of the pool
draws with GL. The work per round is the pools and tag sets (a handful) times the places filled,
not the backlog.

``no_node_in_pool``: a render whose chunks wait in a pool that no live node serves says so in
its ``held_up`` (``held_up``).

A tag set's ready queues are where its nodes run chunks, and a pooled render's stitch
(``stitch_queue``), so the repairs look there as in the plain queues (``tag_set_queues``): a
dead node's started chunk is handed back, and ``held_up`` says ``node_stopped`` for it until then.
When no node of the tag set is left, the chunks and stitches waiting there go to another live tag
set that serves their pool (``rescue_stranded``).
"""
from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from typing import Any

from reelfarm.farm.services.fairness import Chunk
from reelfarm.farm.services.pools import allot, class_queue, pool_name, serves, split_key, unserved
from reelfarm.farm.services.queues import GPU_QUEUE, NVENC_QUEUE, RENDER_QUEUE

log = logging.getLogger("reelfarm.farm")

ORDER = (NVENC_QUEUE, GPU_QUEUE, RENDER_QUEUE)


def tag_set_queues(nodes: Iterable[dict[str, Any]], targets: Iterable[str] = ORDER) -> list[str]:
    """The ready queues (``pools.class_queue``) of the tag sets of ``nodes`` (registry records, alive
    or not: a dead node's started chunks are in its set's), for each of ``targets``."""
    sets = sorted({str(n.get("tags") or "") for n in nodes} - {""})
    return [class_queue(target, tags.split(",")) for tags in sets for target in targets]


def node_sets(nodes: Iterable[dict[str, Any]]) -> dict[str, frozenset[str]]:
    """The tag sets (written as pools) of the live nodes not set aside that carry tags."""
    found: dict[str, frozenset[str]] = {}
    for node in nodes:
        tags = str(node.get("tags") or "")
        if tags and node.get("alive") and not node.get("set_aside"):
            found[tags] = frozenset(tags.split(","))
    return found


def fill_pools(dispatcher: Any, mirror: Any, nodes: list[dict[str, Any]], worker: Any, slots: int | None,
               free_names: set[str]) -> tuple[list[str], dict[str, int]]:
    """Give the free places of tagged nodes to the pools they serve (module docstring). Returns the
    RQ ids moved and, per plain ready queue, the places used."""
    pooled = [k for k, q in mirror.queues.items() if split_key(k)[1] and q.chunks_waiting()]
    if not pooled:
        return [], {}
    _fall_back(mirror, pooled, nodes)
    sets = node_sets(nodes)
    moved: list[str] = []
    used: dict[str, int] = {}
    for tags_name, tags in sorted(sets.items()):
        for target in ORDER:
            eligible = {k: mirror.queues[k].chunks_waiting() for k in pooled
                        if split_key(k)[0] == target and serves(tags, split_key(k)[1])
                        and mirror.queues[k].chunks_waiting()}
            if not eligible:
                continue
            ready = class_queue(target, tags)
            free = slots if slots is not None else _free(dispatcher, ready, worker, free_names, nodes)
            chosen: list[tuple[str, Chunk]] = []
            for key, places in allot(free, eligible).items():
                chosen += [(key, chunk) for chunk in mirror.queues[key].take(places)]
            if not chosen:
                continue
            done: set[str] = set()
            for key in dict.fromkeys(k for k, _ in chosen):  # one move a pool: each job carries its pool
                done |= dispatcher._move([c for k, c in chosen if k == key], ready, pool=split_key(key)[1])
            for key, chunk in chosen:
                if chunk.id in done:
                    moved.append(chunk.id)
                    mirror.took(key, chunk)
                else:
                    mirror.queues[key].finished(chunk.id)  # canceled meanwhile: it holds no place
            used[target] = used.get(target, 0) + sum(1 for _, c in chosen if c.id in done)
    return moved, used


def rescue_stranded(dispatcher: Any, nodes: list[dict[str, Any]]) -> list[str]:
    """Chunks and stitches waiting in the ready queue of a tag set no live node has (its nodes died
    with chunks started, which the repair handed back there, or were set aside; a stitch enqueued
    while no node served its pool waits in the pool's own) go to the front of the ready queue of a
    live tag set that serves their pool (the job's ``meta["pool"]``, written when a round gave a
    chunk out or with a pooled stitch), the first by name; with none, they wait (``held_up`` says
    ``no_node_in_pool``).
    A chunk is taken out by an atomic ``LREM`` first: one a node took meanwhile stays with it.
    Returns the RQ ids moved."""
    from rq import Queue
    from rq.exceptions import NoSuchJobError
    from rq.job import Job

    live = {pool_name(tags): tags for tags in node_sets(nodes).values()}
    redis, moved = dispatcher.redis, []
    for ready in sorted({*tag_set_queues(nodes), *listed_class_queues(dispatcher)}):
        target, tags = split_key(ready)
        if tags in live:
            continue
        listed = f"rq:queue:{dispatcher.namespace}{ready}"
        for raw in redis.lrange(listed, 0, -1):
            job_id = raw.decode() if isinstance(raw, bytes) else raw
            try:
                job = Job.fetch(job_id, connection=redis)
            except NoSuchJobError:
                continue
            pool = str(job.meta.get("pool") or "")
            to = taker(nodes, live, target, pool) if pool else None
            if to is None or not redis.lrem(listed, 1, job_id):
                continue
            Queue(f"{dispatcher.namespace}{to}", connection=redis).enqueue_job(job, at_front=True)
            moved.append(job_id)
    if moved:
        log.warning("moved %d chunk(s) from the ready queues of tag sets with no live node to others serving "
                    "their pools: %s", len(moved), ", ".join(moved))
    return moved


def stitch_queue(redis: Any, namespace: str, pool: str) -> str:
    """The queue for the stitch of a render in ``pool``: ``render`` for the pool of any node; else
    the CPU ready queue of the first live tag set serving it (``taker``), or, while none does or the
    registry cannot be read, the pool's own (``render@<pool>``), which ``rescue_stranded`` empties
    into a serving tag set's once one is live. Never ``render``: a node outside the pool would then
    read its segments and write its file."""
    from reelfarm.farm.runtime.nodes import NodeRegistry

    if not pool:
        return RENDER_QUEUE
    try:
        nodes = NodeRegistry(redis, namespace).live_nodes()
        live = {pool_name(tags): tags for tags in node_sets(nodes).values()}
        found = taker(nodes, live, RENDER_QUEUE, pool)
    except Exception:  # a registry read must never stop a render request
        log.warning("could not read the node registry; the stitch waits in its pool's queue", exc_info=True)
        found = None
    return found or class_queue(RENDER_QUEUE, pool.split(","))


def listed_class_queues(dispatcher: Any) -> list[str]:
    """The ready queues of tag sets (``render@<tags>``, ...) RQ has had a job on (its ``rq:queues``
    set), whether or not a node of the set ever registered: a pooled render's stitch waits in its
    pool's own while no live node serves the pool (``stitch_queue``)."""
    prefix = f"rq:queue:{dispatcher.namespace}"
    found = []
    for raw in dispatcher.redis.smembers("rq:queues"):
        key = raw.decode() if isinstance(raw, bytes) else raw
        name = key[len(prefix):] if key.startswith(prefix) else ""
        target, tags = split_key(name)
        if tags and target in ORDER:
            found.append(name)
    return found


def taker(nodes: list[dict[str, Any]], live: dict[str, frozenset[str]], target: str, pool: str) -> str | None:
    """The ready queue, for ``target``, of the first live tag set (by name) that serves ``pool`` and
    has a node working that queue; a chunk bound for the GPU with no such set goes to a set's CPU queue."""
    from reelfarm.farm.runtime.routing import works

    for each in ((target, RENDER_QUEUE) if target == GPU_QUEUE else (target,)):
        for _name, tags in sorted(live.items()):
            ready = class_queue(each, tags)
            if serves(tags, pool) and any(works(n, ready) for n in nodes):
                return ready
    return None


def _free(dispatcher: Any, ready: str, worker: Any, free_names: set[str], nodes: list[dict[str, Any]]) -> int:
    """Free places of a tag set's ready queue: its live workers (RQ's registrations, and the nodes'
    heartbeats, as ``Dispatcher._workers``) that are idle or said they are about to take a job, less
    what waits there (``Dispatcher._free``)."""
    from reelfarm.farm.runtime.routing import works

    keys = [k.decode() if isinstance(k, bytes) else k
            for k in dispatcher.redis.smembers(f"rq:workers:{dispatcher.namespace}{ready}")]
    with dispatcher.redis.pipeline() as pipe:
        for key in keys:
            pipe.hget(key, "state")
        states = pipe.execute() if keys else []
    found = [(k.removeprefix("rq:worker:"), (s.decode() if isinstance(s, bytes) else s) or "")
             for k, s in zip(keys, states) if s is not None]
    known = {name for name, _ in found}
    found += [(n["name"], str(n.get("state", ""))) for n in nodes if works(n, ready) and n["name"] not in known]
    return int(dispatcher._free(ready, {ready: found}, worker, free_names))


def _fall_back(mirror: Any, pooled: list[str], nodes: list[dict[str, Any]]) -> None:
    """A pool's chunks bound for the GPU queue go to its CPU queue while no live node of it draws with GL."""
    from reelfarm.farm.runtime.routing import works

    for key in pooled:
        target, pool = split_key(key)
        if target != GPU_QUEUE:
            continue
        if any(works(n, GPU_QUEUE) and serves(str(n.get("tags") or "").split(","), pool) for n in nodes):
            continue
        gpu, cpu = mirror.queues[key], mirror.queue(f"{RENDER_QUEUE}@{pool}")
        for workspace in gpu.backlogged():
            for rq_id in gpu.waiting_ids(workspace):
                chunk = gpu.remove(rq_id)
                if chunk is not None:
                    cpu.add(chunk)


def held_up(dispatcher: Any, render_id: str, nodes: list[dict[str, Any]]) -> dict[str, Any] | None:
    """``no_node_in_pool`` for a render whose chunks wait in a pool no live node serves, else None."""
    where = dispatcher.redis.hget(dispatcher.key("where"), render_id)
    if where is None:
        return None
    _target, pool = split_key((where.decode() if isinstance(where, bytes) else where).split(" ", 1)[0])
    disabled = set(dispatcher.redis.hkeys(f"reelfarm:{dispatcher.namespace}nodes:disabled"))
    live = [{**n, "disabled": n["name"].encode() in disabled} for n in nodes]
    if not unserved(pool, live):
        return None
    indexes = [int(json.loads(raw).get("index", 0)) for _, raw in dispatcher.redis.hscan_iter(
        dispatcher.key("turns"), match=f"*{render_id}*") if json.loads(raw).get("render") == render_id]
    return {"chunk": min(indexes, default=0), "reason": "no_node_in_pool",
            "message": f"its chunks run in the pool {pool!r} and no live node serves it (a node serves a pool when "
                       "it carries every tag of it: reelfarm worker --tags); they wait until one does"}
