"""Comments on videos: create, list, soft-delete; each change writes its ``comment.*`` event to
the outbox in the same transaction, so a comment exists exactly when its event does."""
from __future__ import annotations

from typing import Any

from sqlalchemy import Engine

from reelfarm.shared.clock import Clock
from reelfarm.shared.db import transaction
from reelfarm.shared.repos import comments as comments_repo
from reelfarm.shared.repos import videos as videos_repo
from reelfarm.shared.repos.outbox import add_event
from reelfarm.studio.videos import VideoStateError


def comment_resource(comment: comments_repo.Comment) -> dict[str, Any]:
    """The API's Comment (``CommentSchema`` renders it; ``_payload`` makes it JSON for an event)."""
    return {"id": comment.id, "video_id": comment.video_id, "body": comment.body, "time_sec": comment.time_sec,
            "author": comment.author, "created_at": comment.created_at}


def _payload(resource: dict[str, Any]) -> dict[str, Any]:
    return {"comment": {**resource, "created_at": resource["created_at"].isoformat()}}


class CommentService:
    """Create, list and soft-delete comments; every change and its event commit together."""

    def __init__(self, engine: Engine, clock: Clock) -> None:
        self.engine = engine
        self.clock = clock

    def create(self, workspace_id: str, video_id: str, *, body: str, time_sec: float | None = None,
               author: str | None = None) -> dict[str, Any]:
        """Raises NotFound (no such video here) or VideoStateError (``time_sec`` past this video's end)."""
        with transaction(self.engine) as conn:
            video = videos_repo.get_video(conn, workspace_id, video_id)
            if time_sec is not None and video.duration_sec is not None and time_sec > video.duration_sec:
                raise VideoStateError("conflict", f"time_sec {time_sec:g} lies past the end of the video "
                                                  f"({video.duration_sec:g} s); give a time from 0 to "
                                                  f"{video.duration_sec:g}")
            comment = comments_repo.create_comment(conn, self.clock, workspace_id=workspace_id, video_id=video_id,
                                                   body=body, time_sec=time_sec, author=author)
            resource = comment_resource(comment)
            add_event(conn, self.clock, workspace_id=workspace_id, type="comment.created",
                      payload=_payload(resource))
        return resource

    def list(self, workspace_id: str, video_id: str) -> list[dict[str, Any]]:
        """Raises NotFound when the video is not in the workspace."""
        with self.engine.connect() as conn:
            videos_repo.get_video(conn, workspace_id, video_id)
            return [comment_resource(c) for c in comments_repo.list_comments(conn, workspace_id, video_id)]

    def delete(self, workspace_id: str, comment_id: str) -> None:
        """Raises NotFound for an unknown, foreign or already deleted comment."""
        with transaction(self.engine) as conn:
            comment = comments_repo.delete_comment(conn, self.clock, workspace_id, comment_id)
            add_event(conn, self.clock, workspace_id=workspace_id, type="comment.deleted",
                      payload=_payload(comment_resource(comment)))
