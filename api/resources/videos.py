"""Videos and their versions."""
from __future__ import annotations

from flask.views import MethodView
from flask_smorest import Blueprint

from reelfarm.api import examples as ex
from reelfarm.api.auth import current_workspace_id
from reelfarm.api.docs import WITH_BODY, errors
from reelfarm.api.preconditions import ETAG_HEADER, etag_headers, if_match
from reelfarm.api.schemas.videos import (
    RestoreSchema,
    VersionListSchema,
    VersionSchema,
    VideoCreateSchema,
    VideoListQuerySchema,
    VideoListSchema,
    VideoPatchSchema,
    VideoSchema,
)
from reelfarm.api.services import services

blp = Blueprint("videos", __name__, url_prefix="/api/v1/videos", description="Videos and versions")


@blp.route("")
class Videos(MethodView):
    @blp.arguments(VideoCreateSchema, error_status_code=400, examples=ex.VIDEO_CREATE)
    @blp.response(201, VideoSchema, examples={"story": {"summary": "Built from a story", "value": ex.RESPONSES["Video"]},
                                              "brief": {"summary": "Generating", "value": ex.RESPONSES["Generating"]}},
                  headers=ETAG_HEADER)
    @blp.doc(operationId="createVideo")
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
        `failed` and `video.generation_failed` is sent. A video with a version carries its `ETag`.
        """
        video = services().videos.create(
            current_workspace_id(), story_id=body.get("storyId"), fields=body.get("fields_"),
            brief=body.get("brief"), url=body.get("url"), title=body.get("title"),
            brand_kit_id=str(body["brandKitId"]) if body.get("brandKitId") else None, fmt=body["format"],
            duration_sec=body.get("durationSec"), locale=body.get("locale"))
        return video, etag_headers(video)

    @blp.arguments(VideoListQuerySchema, location="query", error_status_code=400)
    @blp.response(200, VideoListSchema, example=ex.RESPONSES["VideoList"])
    @blp.doc(operationId="listVideos")
    @errors(blp, 400)
    def get(self, query):
        """List videos

        Newest first, `limit` (1 to 100, default 20) at a time; pass `next_cursor` back as
        `cursor` for the next page (null on the last).
        """
        return services().videos.list(current_workspace_id(), query["limit"], query.get("cursor"))


@blp.route("/<string:video_id>")
class Video(MethodView):
    @blp.response(200, VideoSchema, example=ex.RESPONSES["Video"], headers=ETAG_HEADER)
    @blp.doc(operationId="getVideo")
    @errors(blp, 404)
    def get(self, video_id):
        """Get a video

        The video with its full current version, document included. Its `ETag` names the current
        version (`"v5"`): send it back as `If-Match` with a change made from this read.
        """
        video = services().videos.get(current_workspace_id(), video_id)
        return video, etag_headers(video)

    @blp.arguments(VideoPatchSchema, error_status_code=400, example=ex.REQUESTS["VideoPatch"])
    @blp.response(200, VideoSchema, example=ex.RESPONSES["Video"], headers=ETAG_HEADER)
    @blp.doc(operationId="updateVideo")
    @errors(blp, 404, 409, 412, *WITH_BODY)
    def patch(self, body, video_id):
        """Update a video

        A complete `doc` (linted: errors give 400, warnings are stored on the version; its clips of
        the media library are measured by the lengths stored at upload, so one shorter than the
        time it must fill, and not looping, is a `clip_too_short` warning, a trim past its end a
        400 `bad_trim`) or a
        `fields` patch (merged with the current values and rebuilt through the story) becomes
        a new immutable version; `title` renames; `note` is kept in the history. A `doc` equal
        to the current one, or `fields` that leave the current values as they are, make no
        version (nor is the `note` kept): the answer is the current version. Sending both `doc`
        and `fields` gives 400; a generating or archived video gives 409.

        With `If-Match` (the `ETag` of the read this change was made from) the change is made
        only if no other has landed since; otherwise 412 `version_conflict` names the current
        version and nothing is saved. Without it a `fields` patch merges into whatever is current.
        """
        video = services().videos.update(current_workspace_id(), video_id, doc=body.get("doc"),
                                         fields=body.get("fields_"), title=body.get("title"), note=body.get("note"),
                                         based_on=if_match())
        return video, etag_headers(video)

    @blp.response(200, VideoSchema, example={**ex.RESPONSES["Video"], "status": "archived"}, headers=ETAG_HEADER)
    @blp.doc(operationId="archiveVideo")
    @errors(blp, 404, 409)
    def delete(self, video_id):
        """Archive a video

        Archived videos can still be read, but not changed or rendered.
        """
        video = services().videos.archive(current_workspace_id(), video_id)
        return video, etag_headers(video)


@blp.route("/<string:video_id>/versions")
class Versions(MethodView):
    @blp.response(200, VersionListSchema, example=ex.RESPONSES["VersionList"])
    @blp.doc(operationId="listVersions")
    @errors(blp, 404)
    def get(self, video_id):
        """List versions

        Every version of the video, oldest first.
        """
        return {"data": services().videos.versions(current_workspace_id(), video_id)}


@blp.route("/<string:video_id>/versions/<int:number>")
class Version(MethodView):
    @blp.response(200, VersionSchema, example=ex.RESPONSES["Version"])
    @blp.doc(operationId="getVersion")
    @errors(blp, 404)
    def get(self, video_id, number):
        """Get a version"""
        return services().videos.version(current_workspace_id(), video_id, number)


@blp.route("/<string:video_id>/versions/<int:number>/restore")
class Restore(MethodView):
    @blp.arguments(RestoreSchema, error_status_code=400, required=False, example=ex.REQUESTS["Restore"])
    @blp.response(200, VideoSchema, example=ex.RESPONSES["Video"], headers=ETAG_HEADER)
    @blp.doc(operationId="restoreVersion")
    @errors(blp, 404, 409, 412, *WITH_BODY)
    def post(self, body, video_id, number):
        """Restore a version

        Saves a copy of version `number` as the newest version (source `restore`), with `note` as
        its note (`restored version N` without one). The body is optional. With `If-Match` (the
        video's `ETag` as read) it is saved only if the video's current version is still that one,
        else 412 `version_conflict` names the current version and nothing is saved.
        """
        video = services().videos.restore(current_workspace_id(), video_id, number, (body or {}).get("note"),
                                          based_on=if_match())
        return video, etag_headers(video)
