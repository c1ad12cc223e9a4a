"""The embedded queue's rows as fair dispatch sees them (``reelfarm.farm.services.fairness``):
a chunk's turn in its row, the chunks waiting and running, and the ledger in ``fair_ledger``."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from sqlalchemy import Connection, delete, func, select

from reelfarm.farm.services.fairness import Chunk, Ledger, Line, Share, line
from reelfarm.farm.services.queues import Turn
from reelfarm.shared.tables import fair_ledger
from reelfarm.shared.tables import queued_tasks as tasks


def turn_values(turn: Turn | None) -> dict[str, Any]:
    if turn is None:
        return {"workspace_id": None, "render_id": None, "priority": None, "cost": None, "chunk_index": None}
    return {"workspace_id": turn.workspace, "render_id": turn.render, "priority": turn.priority,
            "cost": turn.cost, "chunk_index": turn.index}


def waiting_chunks(conn: Connection, now: Any | None = None) -> list[Chunk]:
    """Render chunks queued (and due, when ``now`` is given), as fair dispatch sees them."""
    query = select(tasks.c.id, tasks.c.workspace_id, tasks.c.render_id, tasks.c.cost, tasks.c.priority,
                   tasks.c.created_at, tasks.c.chunk_index).where(tasks.c.status == "queued",
                                                                  tasks.c.workspace_id.is_not(None))
    if now is not None:
        query = query.where(tasks.c.run_after <= now)
    return [Chunk(r.id, r.workspace_id, r.render_id or r.id, int(r.cost or 1), r.priority or "normal",
                  r.created_at.timestamp(), int(r.chunk_index or 0)) for r in conn.execute(query)]


Shares = Callable[[Connection, Iterable[str]], dict[str, Share]]


def kept_line(conn: Connection, policy: str, shares_of: Shares, known: Line | None,
              default_share: Share) -> Line:
    """The fair line now (``fairness.Line``): ``known`` when nothing that decides it has changed,
    else computed again. Looking costs a read of the waiting chunks' ids and of the ledger;
    computing costs reading every waiting chunk and ordering them all (about 20 us a chunk), which
    every read of a queued render paid before (``python -m benchmarks.line``)."""
    ids = frozenset(conn.execute(select(tasks.c.id).where(tasks.c.status == "queued",
                                                          tasks.c.workspace_id.is_not(None))).scalars())
    ledger = frozenset((scope, float(served)) for scope, served in
                       conn.execute(select(fair_ledger.c.scope, fair_ledger.c.served)).all())
    if (known is not None and known.basis == (policy, ids, ledger)
            and shares_of(conn, known.shares.keys()) == known.shares):
        return known
    chunks = [c for c in waiting_chunks(conn) if c.id in ids]  # the set the ids read saw
    shares = shares_of(conn, {c.workspace for c in chunks})
    return line((policy, frozenset(c.id for c in chunks), ledger), chunks, shares, Ledger.from_scopes(ledger),
                policy, default_share)


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
