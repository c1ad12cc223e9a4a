"""Comments on videos (``reelfarm.studio.comments``: each change writes its `comment.*` event in the same transaction)."""
from __future__ import annotations

from flask.views import MethodView
from flask_smorest import Blueprint

from reelfarm.api import examples as ex
from reelfarm.api.auth import current_workspace_id
from reelfarm.api.docs import WITH_BODY, errors
from reelfarm.api.schemas.comments import CommentCreateSchema, CommentListSchema, CommentSchema
from reelfarm.api.services import services

blp = Blueprint("comments", __name__, url_prefix="/api/v1", description="Comments on videos")


@blp.route("/videos/<string:video_id>/comments")
class VideoComments(MethodView):
    @blp.arguments(CommentCreateSchema, error_status_code=400, example=ex.REQUESTS["CommentCreate"])
    @blp.response(201, CommentSchema, example=ex.RESPONSES["Comment"])
    @blp.doc(operationId="createComment")
    @errors(blp, 404, 409, *WITH_BODY)
    def post(self, body, video_id):
        """Comment on a video

        `time_sec`, when given, is a moment in the video: `0 <= time_sec <=` its duration.
        Emits `comment.created`.
        """
        return services().comments.create(current_workspace_id(), video_id, body=body["body"],
                                  time_sec=body.get("time_sec"), author=body.get("author"))

    @blp.response(200, CommentListSchema, example=ex.RESPONSES["CommentList"])
    @blp.doc(operationId="listComments")
    @errors(blp, 404)
    def get(self, video_id):
        """List a video's comments

        Oldest first; deleted comments are not listed.
        """
        return {"data": services().comments.list(current_workspace_id(), video_id)}


@blp.route("/comments/<string:comment_id>")
class Comment(MethodView):
    @blp.response(204)
    @blp.doc(operationId="deleteComment")
    @errors(blp, 404)
    def delete(self, comment_id):
        """Delete a comment

        Emits `comment.deleted`; deleting it again gives 404.
        """
        services().comments.delete(current_workspace_id(), comment_id)
