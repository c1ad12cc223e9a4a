"""The embedded queue's rows as fair dispatch sees them (``reelfarm.farm.services.fairness``):
a chunk's turn in its row, the chunks waiting and running, and the ledger in ``fair_ledger``."""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from sqlalchemy import Connection, String, delete, func, select, type_coerce

from reelfarm.farm.runtime.embeddedholds import SUSPENDED_UNTIL
from reelfarm.farm.services.fairness import Chunk, Ledger, Line, Share, line
from reelfarm.farm.services.queues import Turn
from reelfarm.shared.tables import fair_ledger
from reelfarm.shared.tables import queued_tasks as tasks


def turn_values(turn: Turn | None) -> dict[str, Any]:
    if turn is None:
        return {"workspace_id": None, "render_id": None, "priority": None, "cost": None, "chunk_index": None}
    return {"workspace_id": turn.workspace, "render_id": turn.render, "priority": turn.priority,
            "cost": turn.cost, "chunk_index": turn.index}


Shares = Callable[[Connection, Iterable[str]], dict[str, Share]]
Known = Mapping[str, tuple[Any, Chunk]]  # a waiting chunk by id, with the stamp it was read at (``_STAMP``)

# What tells a chunk read before from the same id written again since: a task's turn (workspace,
# render, cost, index) follows from its id; its arrival (``created_at``: the chunk's ``seq``)
# changes when a finished task is enqueued again, and its priority when its render is asked for
# again at a higher one (``EmbeddedQueue.raise_priority``). Read as stored, unparsed.
_STAMP = type_coerce(tasks.c.created_at, String) + " " + func.coalesce(tasks.c.priority, "")
# a suspended render's rows (``embeddedholds``) are out of the line until resumed
_QUEUED = (tasks.c.status == "queued", tasks.c.workspace_id.is_not(None), tasks.c.run_after < SUSPENDED_UNTIL)
READ_BATCH = 500  # ids a statement names at most (SQLite's bound on variables is 999 in old builds)


def in_batches(ids: list[str]) -> Iterator[list[str]]:
    """``ids`` in slices a statement can name (``READ_BATCH``)."""
    for start in range(0, len(ids), READ_BATCH):
        yield ids[start:start + READ_BATCH]


def kept_line(conn: Connection, policy: str, shares_of: Shares, known: Line | None, default_share: Share,
              render: str | None = None, chunks: Known | None = None) -> tuple[Line, Known]:
    """The fair line now (``fairness.Line``), and the waiting chunks by id to pass back next time.

    ``known`` is returned when nothing that decides it has changed (and it knows ``render``'s
    place); else the line is computed again, from the chunks waiting: those in ``chunks`` are not
    read again. Looking costs a read of the waiting chunks' ids and stamps and of the ledger;
    computing, reading the chunks new since and ordering (about 20 us a chunk), which every read of
    a queued render paid for every chunk before (``python -m benchmarks.line``). A line computed
    because it changed is ordered up to ``render``'s first chunk only (``Line.complete``): a render
    request's answer needs no more; one that knows the same chunks but not ``render`` is ordered whole.
    """
    stamps: dict[str, Any] = {id_: stamp for id_, stamp in conn.execute(select(tasks.c.id, _STAMP).where(*_QUEUED))}
    ledger = frozenset((scope, float(served)) for scope, served in
                       conn.execute(select(fair_ledger.c.scope, fair_ledger.c.served)).all())
    same = (known is not None and known.basis == (policy, frozenset(stamps.items()), ledger)
            and shares_of(conn, known.shares.keys()) == known.shares)
    if known is not None and same and (render is None or known.knows(render)):
        return known, chunks or {}
    waiting, have = _chunks_of(conn, stamps, chunks)
    shares = shares_of(conn, {c.workspace for c in waiting})
    basis = frozenset((c.id, have[c.id][0]) for c in waiting)
    computed = line((policy, basis, ledger), waiting, shares, Ledger.from_scopes(ledger),
                    policy, default_share, until=None if same else render)
    return computed, have


def waiting_chunks(conn: Connection, now: Any | None = None, chunks: Known | None = None) -> tuple[list[Chunk], Known]:
    """Render chunks queued (and due, when ``now`` is given), as fair dispatch sees them, and
    every one of them by id to pass back next time: those in ``chunks`` are not read again."""
    where = [] if now is None else [tasks.c.run_after <= now]
    stamps: dict[str, Any] = {id_: stamp for id_, stamp in conn.execute(select(tasks.c.id, _STAMP).where(*_QUEUED, *where))}
    return _chunks_of(conn, stamps, chunks)


def _chunks_of(conn: Connection, stamps: Mapping[str, Any], chunks: Known | None) -> tuple[list[Chunk], Known]:
    """The chunks of these ids (read at these stamps): from ``chunks`` where read at the same
    stamp, the others read now. A chunk gone between the two reads is left out."""
    have = {i: entry for i, entry in (chunks or {}).items() if stamps.get(i) == entry[0]}
    missing = [i for i in stamps if i not in have]
    for batch in in_batches(missing):
        for c in _read_chunks(conn, *_QUEUED, tasks.c.id.in_(batch)):
            have[c[1].id] = c
    return [have[i][1] for i in stamps if i in have], have


def _read_chunks(conn: Connection, *where: Any) -> list[tuple[Any, Chunk]]:
    query = select(tasks.c.id, tasks.c.workspace_id, tasks.c.render_id, tasks.c.cost, tasks.c.priority,
                   tasks.c.created_at, tasks.c.chunk_index, _STAMP.label("stamp")).where(*where)
    return [(r.stamp, Chunk(r.id, r.workspace_id, r.render_id or r.id, int(r.cost or 1), r.priority or "normal",
                            r.created_at.timestamp(), int(r.chunk_index or 0))) for r in conn.execute(query)]


def running_chunks(conn: Connection) -> dict[str, int]:
    """Render chunks running, per workspace."""
    rows = conn.execute(select(tasks.c.workspace_id, func.count()).where(
        tasks.c.status == "running", tasks.c.workspace_id.is_not(None)).group_by(tasks.c.workspace_id))
    return {w: int(n) for w, n in rows}


def load_ledger(conn: Connection) -> Ledger:
    return Ledger.from_scopes(conn.execute(select(fair_ledger.c.scope, fair_ledger.c.served)).all())


def save_ledger(conn: Connection, ledger: Ledger) -> None:
    conn.execute(delete(fair_ledger))
    rows = [{"scope": scope, "served": served} for scope, served in ledger.scopes().items()]
    if rows:
        conn.execute(fair_ledger.insert(), rows)
