"""Stored brand-kit logos that nothing names any more, and their deletion.

A logo is stored under ``brand-kits/<kit id>/`` at a key named by its content (an upload) or as
``logo.png`` (an extraction), and never overwritten while anything names it: the kit's
``tokens.logo.key``, and the document of every version made with the kit (``brand.logo.key``),
so a video keeps the logo it was made with after its kit's logo is replaced or the kit deleted.
Replaced and removed logos that no kit and no version names are deleted by the retention round
(``reelfarm.farm.runtime.retention``), ``sweep_unused_logos``.

An object is left alone until ``GRACE`` after it was written and after its kit last changed: an
upload is stored before the kit's row names it, and a video being made may have read the kit's
tokens just before its logo was replaced.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from sqlalchemy import Text, cast, select
from sqlalchemy.engine import Connection, Engine

from reelfarm.shared.clock import Clock
from reelfarm.shared.errors import ObjectNotFound
from reelfarm.shared.storage import Storage
from reelfarm.shared.tables import brand_kits, versions

LOGO_FOLDER = "brand-kits"
GRACE = timedelta(hours=1)


def sweep_unused_logos(engine: Engine, storage: Storage, clock: Clock, limit: int,
                       grace: timedelta = GRACE) -> int:
    """Delete up to ``limit`` stored logos that no brand kit and no version names, older than
    ``grace`` (and their kit unchanged for as long); returns how many went."""
    cutoff = clock.now() - grace
    with engine.connect() as conn:
        unused = unused_logo_keys(conn, storage.list_keys(LOGO_FOLDER), cutoff)
    gone = 0
    for key in unused:
        if gone >= limit:
            break
        try:
            if storage.modified(key) > cutoff:
                continue
        except ObjectNotFound:
            continue
        storage.delete(key)
        gone += 1
    return gone


def unused_logo_keys(conn: Connection, keys: Iterable[str], changed_before: Any) -> list[str]:
    """The keys of ``keys`` that no brand kit's tokens and no version's document name, of kits
    unchanged since ``changed_before`` (or gone)."""
    by_kit: dict[str, list[str]] = {}
    for key in keys:
        parts = key.split("/")
        if len(parts) == 3 and parts[0] == LOGO_FOLDER:
            by_kit.setdefault(parts[1], []).append(key)
    kits = {row.id: row for row in _kits(conn, list(by_kit), changed_before)}
    unused = []
    for kit_id, kit_keys in by_kit.items():
        kit = kits.get(kit_id)
        if kit is not None and kit.recent:
            continue
        named = _logo_key(kit.tokens) if kit is not None else None
        unused += [key for key in kit_keys if key != named and not _in_a_version(conn, key)]
    return unused


def _kits(conn: Connection, ids: list[str], changed_before: Any) -> list[Any]:
    rows: list[Any] = []
    recent = (brand_kits.c.updated_at > changed_before).label("recent")
    for start in range(0, len(ids), 500):
        rows += conn.execute(select(brand_kits.c.id, brand_kits.c.tokens, recent)
                             .where(brand_kits.c.id.in_(ids[start:start + 500]))).all()
    return rows


def _logo_key(tokens: Any) -> str | None:
    logo = tokens.get("logo") if isinstance(tokens, dict) else None
    return str(logo["key"]) if isinstance(logo, dict) and logo.get("key") else None


def _in_a_version(conn: Connection, key: str) -> bool:
    # A text search over the documents: only keys no kit names get here, a few per round.
    found = conn.execute(select(versions.c.id).where(cast(versions.c.doc, Text).contains(key)).limit(1)).first()
    return found is not None
