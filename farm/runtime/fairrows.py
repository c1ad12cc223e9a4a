"""The embedded queue's rows as fair dispatch sees them (``reelfarm.farm.services.fairness``):
a chunk's turn in its row, the chunks waiting and running, and the ledger in ``fair_ledger``."""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, delete, func, select

from reelfarm.farm.services.fairness import Chunk, Ledger, Share, order, places
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


@dataclass(frozen=True)
class Line:
    """Every waiting chunk's place as fair dispatch would serve them (``fairness.order``), with what
    it was computed from: the chunks waiting, the ledger, the policy and the workspaces' shares."""

    policy: str
    chunks: frozenset[str]
    ledger: frozenset[tuple[str, float]]
    shares: Mapping[str, Share]
    ahead: Mapping[str, int]  # render -> frames dispatched before its next chunk
    total: int  # frames of every chunk waiting


Shares = Callable[[Connection, Iterable[str]], dict[str, Share]]


def line(conn: Connection, policy: str, shares_of: Shares, known: Line | None = None,
         default_share: Share | None = None) -> Line:
    """The line now: ``known`` when nothing it was computed from has changed, else computed again.

    The order is a function of the waiting chunks (each chunk's fields never change while it
    waits), the ledger, the policy and the shares, so comparing those is exact. Looking costs a
    read of the waiting chunks' ids and of the ledger; computing it again costs reading every
    waiting chunk and ordering them all, about 30 us a chunk (65 ms with 2,000 waiting), which
    every read of a queued render paid.
    """
    ids = frozenset(conn.execute(select(tasks.c.id).where(tasks.c.status == "queued",
                                                          tasks.c.workspace_id.is_not(None))).scalars())
    ledger = frozenset((scope, float(served)) for scope, served in
                       conn.execute(select(fair_ledger.c.scope, fair_ledger.c.served)).all())
    if (known is not None and (known.policy, known.chunks, known.ledger) == (policy, ids, ledger)
            and shares_of(conn, known.shares.keys()) == known.shares):
        return known
    chunks = [c for c in waiting_chunks(conn) if c.id in ids]  # the set the ids read saw
    ids = frozenset(c.id for c in chunks)
    shares = shares_of(conn, {c.workspace for c in chunks})
    fallback = default_share or Share(1.0, 1 << 30)
    ordered = order(chunks, shares=lambda w: shares.get(w, fallback), ledger=Ledger.from_scopes(ledger),
                    policy=policy)
    ahead, total = places(ordered)
    return Line(policy, ids, ledger, shares, ahead, total)


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
