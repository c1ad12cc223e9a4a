"""Comments on videos. Deleting one is soft (``deleted_at``): the row stays for the event that
announced it, and a deleted comment is ``NotFound`` like one that never existed."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime

from sqlalchemy import Connection, select

from reelfarm.shared.clock import Clock
from reelfarm.shared.errors import NotFound
from reelfarm.shared.ids import is_uuid, new_id
from reelfarm.shared.tables import comments


@dataclass(frozen=True)
class Comment:
    id: str
    workspace_id: str
    video_id: str
    body: str
    time_sec: float | None
    author: str | None
    created_at: datetime
    deleted_at: datetime | None


def create_comment(conn: Connection, clock: Clock, *, workspace_id: str, video_id: str, body: str,
                   time_sec: float | None = None, author: str | None = None) -> Comment:
    """Insert a comment; the caller has checked that the video is in ``workspace_id``."""
    comment = Comment(id=new_id(), workspace_id=workspace_id, video_id=video_id, body=body, time_sec=time_sec,
                      author=author, created_at=clock.now(), deleted_at=None)
    conn.execute(comments.insert().values(**asdict(comment)))
    return comment


def list_comments(conn: Connection, workspace_id: str, video_id: str) -> list[Comment]:
    """The video's live comments, oldest first (ties broken by id, so the order is stable)."""
    rows = conn.execute(select(comments).where(
        comments.c.workspace_id == workspace_id, comments.c.video_id == video_id, comments.c.deleted_at.is_(None),
    ).order_by(comments.c.created_at, comments.c.id))
    return [Comment(**row._mapping) for row in rows]


def get_comment(conn: Connection, workspace_id: str, comment_id: str) -> Comment:
    """A live comment of the workspace. Raises NotFound for a deleted, foreign or unknown one."""
    row = conn.execute(select(comments).where(
        comments.c.id == comment_id, comments.c.workspace_id == workspace_id, comments.c.deleted_at.is_(None),
    )).first() if is_uuid(comment_id) else None
    if row is None:
        raise NotFound("comment", comment_id)
    return Comment(**row._mapping)


def delete_comment(conn: Connection, clock: Clock, workspace_id: str, comment_id: str) -> Comment:
    """Soft-delete a live comment and return it as deleted.

    The conditional UPDATE is the check: of two concurrent deletes exactly one changes the row,
    and the other gets NotFound (so only one ``comment.deleted`` event is ever written).
    """
    if not is_uuid(comment_id):
        raise NotFound("comment", comment_id)
    now = clock.now()
    changed = conn.execute(comments.update().where(
        comments.c.id == comment_id, comments.c.workspace_id == workspace_id, comments.c.deleted_at.is_(None),
    ).values(deleted_at=now)).rowcount
    if changed != 1:
        raise NotFound("comment", comment_id)
    row = conn.execute(select(comments).where(comments.c.id == comment_id)).one()
    return Comment(**row._mapping)
