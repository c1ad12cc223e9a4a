"""The media library: upload (directly, by a presigned URL, or by address), list (and search by
name), get, rename and delete a workspace's images, sounds, videos and captions files."""
from __future__ import annotations

from flask.views import MethodView
from flask_smorest import Blueprint

from reelfarm.api import examples as ex
from reelfarm.api.auth import current_workspace_id
from reelfarm.api.docs import errors
from reelfarm.api.schemas.assets import (
    AssetFromUrlSchema,
    AssetListQuerySchema,
    AssetListSchema,
    AssetRenameSchema,
    AssetSchema,
    AssetUploadSchema,
    PresignedUploadRequestSchema,
    PresignedUploadSchema,
)
from reelfarm.api.services import services
from reelfarm.farm.services.media import MAX_UPLOAD_BYTES

blp = Blueprint("assets", __name__, url_prefix="/api/v1/assets", description="Media library")
UPLOAD_ENDPOINT = "assets.Assets"


@blp.route("")
class Assets(MethodView):
    @blp.arguments(AssetUploadSchema, location="files", error_status_code=400, example=ex.REQUESTS["AssetUpload"])
    @blp.response(201, AssetSchema, example=ex.RESPONSES["Asset"])
    @blp.doc(operationId="uploadAsset")
    @errors(blp, 400, 413, 415)
    def post(self, body):
        """Upload an image, a sound, a video or a captions file

        `multipart/form-data` with the file in the part `file`. What it is comes from its bytes,
        not its name: a PNG, JPEG or WebP image (at most 20 MiB, 40 million pixels and 16384 on a
        side, complete), an SVG (no document type or entities; a width and height or a viewBox;
        elements nested at most 256 deep), an MP3, AAC/M4A, WAV or Ogg sound (at most 600 s,
        decoding to its end), or a video (`kind: "video"`): MP4 or MOV holding H.264, HEVC or AV1,
        or WebM holding VP8, VP9 or AV1, decoding to its end, at most 4096 pixels on a side, 600 s,
        120 frames a second on average, 72,000 frames and 50 billion pixels decoded in all, its
        sound (if any) no longer than its pictures by more than 0.5 s; or a captions file
        (`kind: "captions"`): SRT or WebVTT in UTF-8, at most 2 MiB, 5,000 cues of at most 500
        characters, each ending after it starts, with `duration_sec` its last cue's end and `cues`
        how many it has; a captions file with a line wrong is 400 `invalid_captions` on `/file`
        whose message names the line and what is wrong with it; at most 50 MiB in all.
        A video's `width` and `height` are as displayed (a phone's portrait clip is taller than
        wide), with `duration_sec`, `fps` (the average), `has_audio` and a poster as
        `thumbnail_url`. A file past any of these limits is 413 `payload_too_large` on `/file`
        (the message names the limit); anything else is 400 `unsupported_media` on `/file` (the
        message names the reason). Neither stores anything. An SVG is
        sanitised: it is stored rewritten without scripts, event handlers
        (`on*`), `<foreignObject>`, animations, links (their drawing kept), other namespaces'
        elements and references to anything outside it (an `href` names a `#fragment` of it, or
        on an `<image>` a PNG, JPEG, GIF or WebP `data:` URI; CSS `url()` only a `#fragment`; no
        `@import`), so its drawing stays and nothing in it runs or loads; `bytes` and `key` are
        the rewrite's, and `url` serves it. The same bytes uploaded again answer the asset
        already stored (one copy per workspace), keeping its `name` (or taking this file's name if it
        had none): the asset is named after the part's file name. Name it in a VideoDoc by its `key`. An upload that would take the library past its plan's quota (`GET /me`, `library`)
        is 413 `quota_exceeded` and stores nothing; the same bytes again cost nothing.
        """
        data = body["file"].stream.read(MAX_UPLOAD_BYTES + 1)
        return services().assets.upload(current_workspace_id(), data, body["file"].filename), 201

    @blp.arguments(AssetListQuerySchema, location="query", error_status_code=400)
    @blp.response(200, AssetListSchema, example=ex.RESPONSES["AssetList"])
    @blp.doc(operationId="listAssets")
    @errors(blp, 400)
    def get(self, query):
        """List assets

        Newest first, `limit` (1 to 100, default 20) at a time, of one `kind` if asked, and only
        those whose `name` holds `q` (in any case) if given; pass `next_cursor` back as `cursor`,
        with the same `kind` and `q`, for the next page (null on the last).
        """
        return services().assets.list(current_workspace_id(), query["limit"], query.get("cursor"), query.get("kind"),
                                      query.get("q"))


@blp.route("/from-url")
class AssetFromUrl(MethodView):
    @blp.arguments(AssetFromUrlSchema, error_status_code=400, example=ex.REQUESTS["AssetFromUrl"])
    @blp.response(201, AssetSchema, example=ex.RESPONSES["Asset"])
    @blp.doc(operationId="addAssetFromUrl")
    @errors(blp, 400, 413)
    def post(self, body):
        """Add an image, a sound or a video from an address

        The server fetches `url` (http or https; public addresses only, checked at every redirect,
        so no loopback, private or link-local address is reached; at most 50 MiB, within 30 s)
        and stores what it sent exactly as an upload to `POST /assets`: the same checks of the
        bytes (the address's name and declared type decide nothing), the same limits, an SVG
        sanitised the same way, one copy of the same bytes. Its `name` is the last part of the
        address's path, URL-decoded (none when the path ends in `/`). A refusal is 400 on `/url` whose `code` names the reason:
        `address_refused`, `unreachable` (no answer, or not 2xx) or `unsupported_media`; what it
        sent past a limit is 413 `payload_too_large` on `/url`, as an upload's file; nothing is
        stored. Past the plan's quota, 413 `quota_exceeded`, as an upload.
        """
        return services().assets.import_url(current_workspace_id(), body["url"]), 201


PRESIGNED_REQUEST = {"filename": "launch-film-soundtrack.wav", "content_type": "audio/wav", "bytes": 31_457_280}
PRESIGNED = {"id": "3c4d5e6f-7a8b-4c9d-8e0f-1a2b3c4d5e6f", "method": "PUT",
             "url": "https://reelfarm-media.s3.amazonaws.com/uploads/2f9a/3c4d5e6f?X-Amz-Expires=3600&X-Amz-Signature=9e1c",
             "headers": {"Content-Type": "audio/wav"}, "bytes": 31_457_280,
             "expires_at": "2026-03-01T10:00:00.000000+00:00"}


@blp.route("/uploads")
class PresignedUploads(MethodView):
    @blp.arguments(PresignedUploadRequestSchema, error_status_code=400, example=PRESIGNED_REQUEST)
    @blp.response(201, PresignedUploadSchema, example=PRESIGNED)
    @blp.doc(operationId="createAssetUpload")
    @errors(blp, 400, 409, 413)
    def post(self, body):
        """Start a presigned upload (S3 storage)

        For a large file, sent straight to the storage: declare its `bytes` and `content_type`,
        then PUT exactly those bytes to `url` with `headers`, before `expires_at` (an hour), and
        complete it with `POST /assets/uploads/{id}/complete`. The declared size is checked
        against the upload limit (50 MiB) and the plan's quota now: past the limit, 413
        `payload_too_large` on `/bytes`, as an upload's file; past the quota, 413 `quota_exceeded`. A server storing files locally answers 409
        `presigned_uploads_unavailable`: send the file to `POST /assets` instead.
        """
        return services().assets.create_upload(current_workspace_id(), body["bytes"], body["content_type"],
                                               body.get("filename")), 201


@blp.route("/uploads/<string(length=36):upload_id>/complete")
class PresignedUploadComplete(MethodView):
    @blp.response(201, AssetSchema, example=ex.RESPONSES["Asset"])
    @blp.doc(operationId="completeAssetUpload")
    @errors(blp, 400, 404, 409, 413)
    def post(self, upload_id: str):
        """Complete a presigned upload

        The bytes sent to the upload's URL are checked and stored exactly as an upload to
        `POST /assets` (what they are comes from them; an SVG is sanitised; one copy of the same
        bytes), named by the upload's `filename`, and the Asset is answered; completing it again answers the same asset. Refused bytes (400 on
        `/file`: not an image, sound or video, or `size_mismatch` when their size is not
        the one declared) are deleted and nothing is stored; they may be sent again while the URL
        lasts; bytes past a limit are 413 `payload_too_large` on `/file`, as an upload's. 409
        `upload_incomplete` while nothing has been sent; 413 `quota_exceeded` past the plan's quota.
        """
        return services().assets.complete_upload(current_workspace_id(), upload_id), 201


# An id is a UUID's 36 characters, so that `/from-url` is no asset's path (its OPTIONS names POST alone).
@blp.route("/<string(length=36):asset_id>")
class Asset(MethodView):
    @blp.response(200, AssetSchema, example=ex.RESPONSES["Asset"])
    @blp.doc(operationId="getAsset")
    @errors(blp, 404)
    def get(self, asset_id: str):
        """Get an asset, with fresh signed URLs"""
        return services().assets.get(current_workspace_id(), asset_id)

    @blp.arguments(AssetRenameSchema, error_status_code=400, example={"name": "Launch film soundtrack (final).wav"})
    @blp.response(200, AssetSchema, example=ex.RESPONSES["Asset"])
    @blp.doc(operationId="renameAsset")
    @errors(blp, 400, 404)
    def patch(self, body, asset_id: str):
        """Rename an asset

        Changes only its `name`, the label it is listed and searched by: not its `key`, its file or
        anything that names it. A name is 1 to 255 characters once trimmed, without control
        characters, `/` or `\\`; another is 400 on `/name`.
        """
        return services().assets.rename(current_workspace_id(), asset_id, body["name"])

    @blp.response(204)
    @blp.doc(operationId="deleteAsset")
    @errors(blp, 404, 409)
    def delete(self, asset_id: str) -> None:
        """Delete an asset

        Refused with 409 `asset_in_use` while a version of a video or a brand kit names it (by key
        or id); the message names them, each video by its title and each brand kit by its name,
        with their ids. Its files go with it.
        """
        services().assets.delete(current_workspace_id(), asset_id)
