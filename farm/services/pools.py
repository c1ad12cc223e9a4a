"""Pools of render nodes: which nodes may run a render's chunks, as Deadline's pools and Flamenco's tags.

A node carries **tags**: words (``gpu``, ``nvenc``) or ``name=value`` pairs (``region=eu``,
``customer=acme``), declared with ``reelfarm worker --tags`` (``REELFARM_NODE_TAGS``); ``gpu`` is
added on a node that draws with GL and ``nvenc`` on one that encodes with NVENC. A **pool** is a
set of tags, written sorted and comma-separated (``customer=acme,region=eu``); a node serves a
pool when it carries every tag of it, and every node serves the empty pool ``""`` (any node).

A workspace may be limited to pools by an operator (its first is its default); a render is asked
for in a pool its workspace may use (``pool_problems``), else it runs in its workspace's default.
The dispatcher keeps one fair queue per ready queue and pool (``queue_key``), so the fair policy
shares out each pool's places among the workspaces waiting in it; nodes of one tag set take a
pool's chunks from their own ready queue (``class_queue``) before any other work.

Pure functions over plain values; the runtime (``reelfarm.farm.runtime.poolrounds``) calls them.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

_WORD = r"[a-z0-9][a-z0-9_.-]{0,39}"
TAG = re.compile(rf"^{_WORD}(={_WORD})?$")
MAX_TAGS = 8
MAX_POOLS = 8  # pools one workspace may be limited to
ANY = ""  # the pool every node serves
POOL_PATTERN = rf"{_WORD}(?:={_WORD})?(?:,{_WORD}(?:={_WORD})?){{0,{MAX_TAGS - 1}}}"
"""A pool as the API takes it (``re.fullmatch``): one to ``MAX_TAGS`` tags, comma-separated, in
lower case, in any order; whatever matches it, ``parse_pool`` takes."""


class PoolError(ValueError):
    """A pool or a list of tags that is not well formed; ``problems`` says each thing wrong."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def parse_tags(text: str | Iterable[str]) -> frozenset[str]:
    """The tags of ``"region=eu, gpu"`` (or of an iterable of tags), lower-cased.

    Raises:
        PoolError: a tag is not a word or ``name=value`` of letters, digits, ``_``, ``.`` and
            ``-`` (40 at most each), or there are more than ``MAX_TAGS``.
    """
    raw = text.split(",") if isinstance(text, str) else list(text)
    tags = [t.strip().lower() for t in raw if t.strip()]
    problems = [f"{t!r} is not a tag: a word or name=value, of letters, digits, '_', '.' and '-' "
                f"(up to 40 each)" for t in tags if not TAG.match(t)]
    if len(set(tags)) > MAX_TAGS:
        problems.append(f"{len(set(tags))} tags: at most {MAX_TAGS}")
    if problems:
        raise PoolError(problems)
    return frozenset(tags)


def parse_node_tags(text: str | Iterable[str]) -> frozenset[str]:
    """A node's declared tags (``reelfarm worker --tags``): as ``parse_tags``, and none of them a
    queue's name (a node's record lists its queues and tag sets' queues in one comma-separated
    field, ``split_queues``, where a tag ``render`` would read as the queue).

    Raises:
        PoolError: as ``parse_tags``, or a tag is a queue's name.
    """
    from reelfarm.farm.services.queues import ALL_QUEUES

    tags = parse_tags(text)
    reserved = sorted(tags & {*ALL_QUEUES, "render-cpu"})
    if reserved:
        raise PoolError([f"{t!r} is a queue's name, not a tag a node may carry" for t in reserved])
    return tags


def pool_name(tags: Iterable[str]) -> str:
    """A pool's written form: its tags sorted, comma-separated (``""``: any node)."""
    return ",".join(sorted(set(tags)))


def parse_pool(text: str) -> str:
    """The written form of the pool ``text`` names. Raises PoolError (``parse_tags``)."""
    return pool_name(parse_tags(text))


def serves(node_tags: Iterable[str], pool: str) -> bool:
    """Whether a node with ``node_tags`` may run chunks of ``pool``: it carries every tag of it."""
    return not pool or set(pool.split(",")) <= set(node_tags)


def node_tags(declared: Iterable[str], raster: str, encoder: str) -> frozenset[str]:
    """A node's tags: those declared, ``gpu`` on a GL node, ``nvenc`` on an NVENC node."""
    return frozenset(declared) | ({"gpu"} if raster == "gl" else set()) | ({"nvenc"} if encoder == "nvenc" else set())


def parse_pools(given: Iterable[str]) -> list[str]:
    """The written forms of the pools ``given`` (an operator's list, its default first), each once,
    in the order given.

    Raises:
        PoolError: a pool is not well formed (``parse_tags``), is empty (any node is not a pool a
            workspace is limited to: clear its pools instead), or there are more than ``MAX_POOLS``.
    """
    found: list[str] = []
    problems: list[str] = []
    for text in given:
        try:
            pool = parse_pool(text)
        except PoolError as exc:
            problems += [f"{text!r}: {p}" for p in exc.problems]
            continue
        if not pool:
            problems.append(f"{text!r} names no tag: a pool is one tag or more")
        elif pool not in found:
            found.append(pool)
    if len(found) > MAX_POOLS:
        problems.append(f"{len(found)} pools: at most {MAX_POOLS}")
    if problems:
        raise PoolError(problems)
    return found


def pool_problems(requested: str | None, allowed: Sequence[str] | None, field: str = "/pool") -> list[dict[str, str]]:
    """What is wrong with asking for a render in pool ``requested`` in a workspace limited to
    ``allowed`` (None or empty: any pool), in the error envelope's form; [] when nothing is."""
    if requested is None:
        return []
    try:
        pool = parse_pool(requested)
    except PoolError as exc:
        return [{"field": field, "code": "unknown_pool", "message": f"{requested!r} is not a pool: {p}"}
                for p in exc.problems]
    if allowed and pool not in allowed:
        return [{"field": field, "code": "forbidden_pool",
                 "message": f"this workspace's renders run in the pools {', '.join(repr(a) for a in allowed)}; "
                            f"{pool!r} is not one of them"}]
    return []


def render_pool(requested: str | None, allowed: Sequence[str] | None) -> str:
    """The pool a render runs in: the one asked for (checked by ``pool_problems``), else its
    workspace's default (the first it is limited to), else any node."""
    if requested is not None:
        return parse_pool(requested)
    return allowed[0] if allowed else ANY


def queue_key(target: str, pool: str) -> str:
    """The dispatcher's name of the fair queue of ``pool``'s chunks bound for ready queue ``target``."""
    return f"{target}@{pool}" if pool else target


def split_queues(text: str) -> list[str]:
    """The queues a node's record lists, comma-separated (``render@rack=b,region=eu,render,jobs``): a
    tag set's ready queue holds commas itself, so a part that is no queue of its own (no ``@`` and
    not a plain queue's name) belongs to the queue before it."""
    from reelfarm.farm.services.queues import ALL_QUEUES

    plain = {*ALL_QUEUES, "render-cpu"}
    found: list[str] = []
    for part in text.split(","):
        if not part:
            continue
        if found and "@" in found[-1] and "@" not in part and part not in plain:
            found[-1] += f",{part}"
        else:
            found.append(part)
    return found


def split_key(key: str) -> tuple[str, str]:
    """``(ready queue, pool)`` of a ``queue_key``."""
    target, _, pool = key.partition("@")
    return target, pool


def class_queue(target: str, tags: Iterable[str]) -> str:
    """The ready queue nodes with exactly ``tags`` take their pools' chunks bound for ``target`` from."""
    return queue_key(target, pool_name(tags))


def node_queues_with_pools(queues: Sequence[str], tags: Iterable[str], chunk_queues: Iterable[str]) -> list[str]:
    """A tagged node's queues: its tag set's ready queue of each chunk queue it works, first, then ``queues``."""
    if not pool_name(tags):
        return list(queues)
    chunked = set(chunk_queues)
    return [class_queue(q, tags) for q in queues if q in chunked] + list(queues)


def allot(free: int, waiting: Mapping[str, int]) -> dict[str, int]:
    """Share ``free`` places among the pools with chunks ``waiting`` (pool -> chunks), one at a time
    in turn, in the pools' order, none given more than it has waiting: each pool a node serves gets
    places while it has work, whatever the size of another's backlog."""
    given = dict.fromkeys(waiting, 0)
    left = free
    while left > 0:
        open_ = [p for p in waiting if given[p] < waiting[p]]
        if not open_:
            break
        for pool in open_:
            if left <= 0:
                break
            given[pool] += 1
            left -= 1
    return {p: n for p, n in given.items() if n}


def unserved(pool: str, nodes: Iterable[Mapping[str, object]]) -> bool:
    """Whether no live node (not set aside, not disabled) of ``nodes`` (registry records, ``tags``
    written as a pool) serves ``pool``."""
    return bool(pool) and not any(
        n.get("alive") and not n.get("set_aside") and not n.get("disabled")
        and serves(str(n.get("tags") or "").split(","), pool) for n in nodes)
