"""Comments on videos; each change writes its `comment.*` event to the outbox in the same transaction."""
from __future__ import annotations

from typing import Any

from flask import current_app
from flask.views import MethodView
from flask_smorest import Blueprint
from sqlalchemy import Engine

from api.auth import current_workspace_id
from api.docs import WITH_BODY, errors
from api.errors import ConflictError
from api.schemas import CommentCreateSchema, CommentListSchema, CommentSchema
from shared.clock import Clock
from shared.db import transaction
from shared.repos import comments as comments_repo
from shared.repos import videos as videos_repo
from shared.repos.renders import add_event

blp = Blueprint("comments", __name__, url_prefix="/api/v1", description="Comments on videos")


def comment_resource(comment: comments_repo.Comment) -> dict[str, Any]:
    """The API's Comment (`CommentSchema` renders it; `_payload` makes it JSON for an event)."""
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
        """Raises NotFound (no such video here) or ConflictError (`time_sec` past this video's end)."""
        with transaction(self.engine) as conn:
            video = videos_repo.get_video(conn, workspace_id, video_id)
            if time_sec is not None and video.duration_sec is not None and time_sec > video.duration_sec:
                raise ConflictError(f"time_sec {time_sec:g} lies past the end of the video "
                                    f"({video.duration_sec:g} s); give a time from 0 to {video.duration_sec:g}")
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


def _comments() -> CommentService:
    services = current_app.extensions["reelfarm"]
    found = getattr(services, "comments", None)  # once Services wires one; until then, a per-request one
    return found if found is not None else CommentService(services.engine, services.clock)


@blp.route("/videos/<string:video_id>/comments")
class VideoComments(MethodView):
    @blp.arguments(CommentCreateSchema, error_status_code=400)
    @blp.response(201, CommentSchema)
    @errors(blp, 404, 409, *WITH_BODY)
    def post(self, body, video_id):
        """Comment on a video

        `time_sec`, when given, is a moment in the video: `0 <= time_sec <=` its duration.
        Emits `comment.created`.
        """
        return _comments().create(current_workspace_id(), video_id, body=body["body"],
                                  time_sec=body.get("time_sec"), author=body.get("author"))

    @blp.response(200, CommentListSchema)
    @errors(blp, 404)
    def get(self, video_id):
        """List a video's comments

        Oldest first; deleted comments are not listed.
        """
        return {"data": _comments().list(current_workspace_id(), video_id)}


@blp.route("/comments/<string:comment_id>")
class Comment(MethodView):
    @blp.response(204)
    @errors(blp, 404)
    def delete(self, comment_id):
        """Delete a comment

        Emits `comment.deleted`; deleting it again gives 404.
        """
        _comments().delete(current_workspace_id(), comment_id)
