"""Unauthenticated routes: health, signed file downloads and render streams."""
from __future__ import annotations

from flask import Response, request, send_file
from flask.views import MethodView
from flask_smorest import Blueprint
from werkzeug.exceptions import NotFound as HttpNotFound

from reelfarm.api import examples as ex
from reelfarm.api.errors import Forbidden
from reelfarm.api.schemas.common import ErrorEnvelopeSchema
from reelfarm.api.schemas.system import HealthSchema
from reelfarm.api.services import served_type, services
from reelfarm.farm.services.captions import STREAM_PARTS, WEBVTT_TYPE
from reelfarm.renderer.hls import PLAYLIST_CONTENT_TYPE
from reelfarm.shared.ids import is_uuid
from reelfarm.shared.storage import DOWNLOAD_PARAM, NAME_PARAM, attachment_name, content_disposition

blp = Blueprint("system", __name__, description="Health and downloads")


@blp.route("/healthz")
class Health(MethodView):
    @blp.response(200, HealthSchema, example=ex.RESPONSES["Health"])
    @blp.alt_response(503, schema=ErrorEnvelopeSchema, description="A dependency is down.", example=ex.error(503))
    @blp.doc(security=[], operationId="getHealth")
    def get(self):
        """Health

        Checks the database (and, in a farm, the queue). No authentication.
        """
        return services().health()


FILE_CSP = "default-src 'none'; style-src 'unsafe-inline'; sandbox"
"""The Content-Security-Policy of every ``/files/`` answer, errors included: a stored file opened
in a browser is a document of the API's own origin (the console's, signed in), so nothing in it
may run (no script, in a sandbox of an origin of its own) or load anything. Uploaded SVGs are
sanitised as well, but a link outlives what was stored before the sanitiser and anything a bug
let through."""
FILE_MEDIA_CSP = "default-src 'none'; media-src 'self'; style-src 'unsafe-inline'; sandbox allow-same-origin"
"""The same for a video or a sound opened in a tab: the browser's player page loads the file again
as media, which ``default-src 'none'`` would block and an opaque sandboxed origin would refuse
(CORS); still no script may run there (no ``allow-scripts``), and with ``nosniff`` the file is
never read as anything but its type."""

FILE_TYPES = ("video/mp4", "image/jpeg", "image/png", "video/mp2t", "text/vtt", "application/octet-stream")
"""What a file is served as: a render's MP4, its JPEG poster, a still's or a logo's PNG, a stream's
MPEG-TS segment, a render's WebVTT captions; any other
stored file as bytes. OpenAPI 3.1 describes raw bytes by the media type alone (no schema)."""
_SIGNED = [{"in": "query", "name": "expires", "required": True, "schema": {"type": "string"},
            "description": "when the URL stops working, seconds since the epoch (as handed out)"},
           {"in": "query", "name": "sig", "required": True, "schema": {"type": "string"},
            "description": "the URL's signature (as handed out)"},
           {"in": "query", "name": DOWNLOAD_PARAM, "required": False, "schema": {"type": "string"},
            "description": "`1`: answer as an attachment (a download) rather than inline; not signed"},
           {"in": "query", "name": NAME_PARAM, "required": False, "schema": {"type": "string"},
            "description": "with `download=1`, the file name to save as (sanitised; the file's own extension "
                           "is kept); not signed. A render's and a still's URLs carry one already, from the "
                           "video's title, the number of the version they show, the format and the resolution "
                           "(`spring-sale-v2-9x16-1080p.mp4`)"}]


@blp.route("/streams/<render_id>.m3u8")
class Stream(MethodView):
    @blp.alt_response(403, schema=ErrorEnvelopeSchema, description="The URL was tampered with or has expired.",
                      example=ex.error(403, *ex.DOWNLOAD_ERRORS[403]))
    @blp.alt_response(404, schema=ErrorEnvelopeSchema, description="No such render, or it has no stream yet.",
                      example=ex.error(404, *ex.DOWNLOAD_ERRORS[404]))
    @blp.doc(security=[], operationId="getRenderStream", parameters=_SIGNED[:2], responses={"200": {
        "description": ("The render's HLS media playlist (RFC 8216), as its `stream_url` leads to it; as "
                        "`text/plain` to a client that asks for that before the playlist type."),
        "content": {PLAYLIST_CONTENT_TYPE: {}, "text/plain": {"schema": {"type": "string"}, "example": (
            "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:5\n#EXT-X-MEDIA-SEQUENCE:0\n#EXT-X-PLAYLIST-TYPE:EVENT\n"
            "#EXT-X-INDEPENDENT-SEGMENTS\n#EXT-X-START:TIME-OFFSET=0\n#EXTINF:4.500000,\n"
            "https://reelfarm.example.com/files/renders/3f9c/stream/seg0.ts?expires=1773047721&sig=Jd3k\n")}}}})
    def get(self, render_id):
        """A render's stream

        The HLS playlist of the part of a render already rendered, behind the Render's signed
        `stream_url`: segments are added as chunks finish, and it ends with `#EXT-X-ENDLIST` once
        the render succeeded (or where a failed or canceled render stopped). For a video with
        captions it is a multivariant playlist instead: the video rendition (that playlist, at
        `/streams/{render_id}/video.m3u8`) with a `SUBTITLES` rendition of its cues in WebVTT
        (`/streams/{render_id}/captions.m3u8`), both signed as this link is. A tampered or expired
        link, or one made for another render, gives 403.
        """
        if not is_uuid(render_id):
            raise HttpNotFound()
        made = services().renders.playlist(render_id, request.args.get("expires", ""), request.args.get("sig", ""))
        if made is None:
            raise Forbidden("This stream link is invalid or has expired; fetch the render again for a fresh one.",
                            code="forbidden")
        shown_as = request.accept_mimetypes.best_match([PLAYLIST_CONTENT_TYPE, "text/plain"]) or PLAYLIST_CONTENT_TYPE
        return Response(made, mimetype=shown_as, headers={"Cache-Control": "no-cache"})


@blp.route("/streams/<render_id>/<part>")
class StreamPart(MethodView):
    @blp.alt_response(403, schema=ErrorEnvelopeSchema, description="The URL was tampered with or has expired.",
                      example=ex.error(403, *ex.DOWNLOAD_ERRORS[403]))
    @blp.alt_response(404, schema=ErrorEnvelopeSchema, description="No such render or part (a captions part of a "
                      "render without captions), or no stream yet.", example=ex.error(404, *ex.DOWNLOAD_ERRORS[404]))
    @blp.doc(security=[], operationId="getRenderStreamPart", parameters=[
        {"in": "path", "name": "part", "required": True, "schema": {"enum": list(STREAM_PARTS)},
         "description": "`video.m3u8`: the video rendition's media playlist; `captions.m3u8`: the subtitles "
                        "rendition's; `captions.vtt`: its one WebVTT segment"}, *_SIGNED[:2]],
        responses={"200": {"description": "A playlist, or the captions as WebVTT on the stream's clock.",
                           "content": {PLAYLIST_CONTENT_TYPE: {}, WEBVTT_TYPE: {}}}})
    def get(self, render_id, part):
        """A part of a render's stream

        The renditions of the multivariant playlist a render of a video with captions answers at
        its `stream_url`, signed as that link is: the video's media playlist, the subtitles'
        media playlist (one WebVTT segment spanning the video, complete from the start), and that
        segment, whose `X-TIMESTAMP-MAP` puts its cues on the MPEG-TS segments' clock.
        """
        if not is_uuid(render_id) or part not in STREAM_PARTS:
            raise HttpNotFound()
        made = services().renders.playlist(render_id, request.args.get("expires", ""), request.args.get("sig", ""),
                                           part)
        if made is None:
            raise Forbidden("This stream link is invalid or has expired; fetch the render again for a fresh one.",
                            code="forbidden")
        mimetype = WEBVTT_TYPE if part.endswith(".vtt") else PLAYLIST_CONTENT_TYPE
        return Response(made, mimetype=mimetype, headers={"Cache-Control": "no-cache"})


@blp.route("/files/<path:key>")
class File(MethodView):
    @blp.alt_response(403, schema=ErrorEnvelopeSchema, description="The URL was tampered with or has expired.",
                      example=ex.error(403, *ex.DOWNLOAD_ERRORS[403]))
    @blp.alt_response(404, schema=ErrorEnvelopeSchema, description="No such file (or this storage serves none).",
                      example=ex.error(404, *ex.DOWNLOAD_ERRORS[404]))
    @blp.doc(security=[], operationId="downloadFile", parameters=_SIGNED, responses={"200": {
        "description": "The file's bytes, typed by its name.", "content": {t: {} for t in FILE_TYPES}}})
    def get(self, key):
        """Download a file

        URLs handed out by the API (a render's `url` and `poster_url`, a still's `url`, a logo's) are
        signed and expire; a tampered or expired one gives 403. Files are served inline; with
        `download=1` as an attachment named by `name`. Every answer, errors too, carries
        `X-Content-Type-Options: nosniff` and a `Content-Security-Policy` under which nothing in
        the file runs or loads (`default-src 'none'`, a `sandbox` without scripts): an SVG opened
        here draws, and its scripts, if any, do not run; a video or a sound may still be played
        in a tab of its own (`media-src 'self'`).
        """
        path, mimetype = services().signed_file(key, request.args.get("expires", ""), request.args.get("sig", ""))
        response = send_file(path, mimetype=mimetype, conditional=True, max_age=0)
        if request.args.get(DOWNLOAD_PARAM) == "1":
            name = attachment_name(request.args.get(NAME_PARAM, ""), key)
            response.headers["Content-Disposition"] = content_disposition(name)
        return response


@blp.after_app_request
def guard_files(response: Response) -> Response:
    """Every answer under ``/files/`` (errors too, and paths no route takes): ``nosniff`` and
    ``FILE_CSP``; ``FILE_MEDIA_CSP`` for a video or sound, whole, in ranges or not modified (a 304's
    headers replace those of the copy a browser keeps)."""
    if request.path.startswith("/files/"):
        media = response.status_code in (200, 206, 304) and served_type(request.path).startswith(("video/", "audio/"))
        response.headers["Content-Security-Policy"] = FILE_MEDIA_CSP if media else FILE_CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
    return response
