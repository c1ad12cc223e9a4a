"""Repositories: small functions over a SQLAlchemy ``Connection``, returning frozen records.

Callers own the transaction (``reelfarm.shared.db.transaction(engine)`` for writes) so that a change, its
ledger row and its outbox event commit together. Everything workspace-owned is looked up by
``(workspace_id, id)``: an id from another workspace is ``NotFound``, like one that never existed.

Modules: ``workspaces`` (workspaces and the credit ledger), ``api_keys``, ``brand_kits``,
``outbox`` (the one writer of events), ``renders``, ``jobs``, ``comments``, ``webhooks``,
``videos`` (videos and their immutable versions).

Lock order, to keep PostgreSQL free of deadlocks when one transaction takes several:
the workspace row first, then the video row.
"""
