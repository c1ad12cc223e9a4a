"""Videos and their versions."""
from __future__ import annotations

from flask import current_app
from flask.views import MethodView
from flask_smorest import Blueprint

from api import serialize
from api.auth import current_workspace_id
from api.docs import WITH_BODY, errors
from api.errors import detail, invalid
from api.schemas import (
    RestoreSchema,
    VersionListSchema,
    VersionSchema,
    VideoCreateSchema,
    VideoListQuerySchema,
    VideoListSchema,
    VideoPatchSchema,
    VideoSchema,
)
from studio.videos import VideoView

blp = Blueprint("videos", __name__, url_prefix="/api/v1/videos", description="Videos and versions")


def _services():
    return current_app.extensions["reelfarm"]


def _videos():
    return _services().videos


@blp.route("")
class Videos(MethodView):
    @blp.arguments(VideoCreateSchema, error_status_code=400)
    @blp.response(201, VideoSchema)
    @errors(blp, 404, 503, *WITH_BODY)
    def post(self, body):
        """Create a video

        With `storyId` (and optional `fields`, defaults filling the rest) the video is built
        instantly from the story and is `ready` with version 1. Otherwise a `brief` (or a site
        `url`, or both) starts a generation: the brief is moderated first (a refused brief gives
        400 and creates nothing), then the video is `generating` with a `generate` job (stages
        `moderate`, `brand`, `script`, `scenes`, `save`) in `job`. With `url` and no
        `brandKitId` the brand is extracted from the site first. When it is done the video is
        `ready` with version 1 (source `generate`) and `video.generated` is sent, or it is
        `failed` and `video.generation_failed` is sent.
        """
        story_id, fields = body.get("storyId"), body.get("fields_")
        kit_id = str(body["brandKitId"]) if body.get("brandKitId") else None
        if story_id is None:
            if fields is not None:
                raise invalid([detail("/storyId", "required", "fields need a storyId")])
            if not body.get("brief") and not body.get("url"):
                raise invalid([detail("/brief", "required", "send storyId (with fields), or a brief or url to "
                                                            "generate the video from")])
            video, job = _services().jobs.request_generation(
                current_workspace_id(), brief=body.get("brief"), url=body.get("url"), title=body.get("title"),
                brand_kit_id=kit_id, fmt=body["format"], duration_sec=body.get("durationSec"),
                locale=body.get("locale"))
            return serialize.video(VideoView(video, None, job))
        problems = []
        if body.get("brief") is not None:
            problems.append(detail("/brief", "conflict", "a brief is for generation; with storyId the video is "
                                                         "built from fields"))
        if body.get("url") is not None:
            problems.append(detail("/url", "conflict", "with storyId the video is built at once: extract the brand "
                                                       "first (POST /api/v1/brand/extract) and pass brandKitId"))
        if problems:
            raise invalid(problems)
        view = _videos().create_from_story(
            current_workspace_id(), story_id=story_id, fields=fields or {}, brand_kit_id=kit_id, fmt=body["format"],
            duration_sec=body.get("durationSec"), title=body.get("title"), locale=body.get("locale"))
        return serialize.video(view)

    @blp.arguments(VideoListQuerySchema, location="query", error_status_code=400)
    @blp.response(200, VideoListSchema)
    @errors(blp, 400)
    def get(self, query):
        """List videos

        Newest first, `limit` (1 to 100, default 20) at a time; pass `next_cursor` back as
        `cursor` for the next page (null on the last).
        """
        after = None
        if query.get("cursor"):
            try:
                after = serialize.decode_cursor(query["cursor"])
            except (ValueError, TypeError):
                raise invalid([detail("cursor", "invalid", "not a cursor from this API")]) from None
        views, next_after = _videos().list(current_workspace_id(), query["limit"], after)
        return {"data": [serialize.video(v) for v in views], "next_cursor": serialize.encode_cursor(next_after)}


@blp.route("/<string:video_id>")
class Video(MethodView):
    @blp.response(200, VideoSchema)
    @errors(blp, 404)
    def get(self, video_id):
        """Get a video

        The video with its full current version, document included.
        """
        return serialize.video(_videos().get(current_workspace_id(), video_id))

    @blp.arguments(VideoPatchSchema, error_status_code=400)
    @blp.response(200, VideoSchema)
    @errors(blp, 404, 409, *WITH_BODY)
    def patch(self, body, video_id):
        """Update a video

        A complete `doc` (linted: errors give 400, warnings are stored on the version) or a
        `fields` patch (merged with the current values and rebuilt through the story) becomes
        a new immutable version; `title` renames; `note` is kept in the history. Sending both
        `doc` and `fields` gives 400; a generating or archived video gives 409.
        """
        if "doc" in body and "fields_" in body:
            raise invalid([detail("/doc", "conflict", "send either doc or fields, not both"),
                           detail("/fields", "conflict", "send either doc or fields, not both")])
        if not ({"doc", "fields_", "title"} & body.keys()):
            raise invalid([detail("", "empty_update", "send doc, fields or title")])
        view = _videos().update(current_workspace_id(), video_id, doc=body.get("doc"), fields=body.get("fields_"),
                                title=body.get("title"), note=body.get("note"))
        return serialize.video(view)

    @blp.response(200, VideoSchema)
    @errors(blp, 404, 409)
    def delete(self, video_id):
        """Archive a video

        Archived videos can still be read, but not changed or rendered.
        """
        return serialize.video(_videos().archive(current_workspace_id(), video_id))


@blp.route("/<string:video_id>/versions")
class Versions(MethodView):
    @blp.response(200, VersionListSchema)
    @errors(blp, 404)
    def get(self, video_id):
        """List versions

        Every version of the video, oldest first.
        """
        return {"data": [serialize.version(v) for v in _videos().versions(current_workspace_id(), video_id)]}


@blp.route("/<string:video_id>/versions/<int:number>")
class Version(MethodView):
    @blp.response(200, VersionSchema)
    @errors(blp, 404)
    def get(self, video_id, number):
        """Get a version"""
        return serialize.version(_videos().version(current_workspace_id(), video_id, number))


@blp.route("/<string:video_id>/versions/<int:number>/restore")
class Restore(MethodView):
    @blp.arguments(RestoreSchema, error_status_code=400, required=False)
    @blp.response(200, VideoSchema)
    @errors(blp, 404, 409, *WITH_BODY)
    def post(self, _body, video_id, number):
        """Restore a version

        Saves a copy of version `number` as the newest version (source `restore`).
        """
        return serialize.video(_videos().restore(current_workspace_id(), video_id, number))
