"""Example requests and answers for the OpenAPI document, one per operation.

They are what the service really sends and accepts: the video's document is built by the
`quote` story with the neutral brand (its decorative layers and per-format overrides left out, to
keep the document short), the story and brand kit are the built-in ones, and ids, times and URLs
have the service's own shapes. tests/unit/api/test_document.py validates every
example against the schema of the body it illustrates, so an example cannot drift from the
contract. Views hand them to flask-smorest (``@blp.arguments(..., example=...)``,
``@blp.response(..., example=...)``); ``reelfarm.api.docs.errors`` gives each error status its own.
"""
from __future__ import annotations

from typing import Any

from reelfarm.shared import storage_keys
from reelfarm.studio.stories import NEUTRAL_BRAND, get_story, list_stories

WORKSPACE_ID = "6f1c2d3e-4a5b-4c6d-8e7f-9a0b1c2d3e4f"
VIDEO_ID = "0b9e8f62-3c1d-4e2a-9f7b-5a6c4d3e2f10"
VERSION_ID = "4d2c1b0a-9e8f-4a7b-8c6d-5e4f3a2b1c0d"
RENDER_ID = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"
JOB_ID = "2e4f6a8b-1c3d-4e5f-9a7b-0c2d4e6f8a1b"
KIT_ID = "7c6b5a49-3827-4165-9f4e-3d2c1b0a9f8e"
COMMENT_ID = "5f4e3d2c-1b0a-4f9e-8d7c-6b5a49382716"
WEBHOOK_ID = "3a2b1c0d-4e5f-4a6b-9c8d-7e6f5a4b3c2d"
DELIVERY_ID = "8e7d6c5b-4a39-4281-8f7e-6d5c4b3a2918"
CREATED = "2026-03-02T09:15:04.512000+00:00"
FINISHED = "2026-03-02T09:15:21.087000+00:00"
BASE = "https://reelfarm.example.com/files"

QUOTE_FIELDS = {"quote": "Design is a plan for arranging elements to accomplish a particular purpose.",
                "author": "Charles Eames"}


def _video_doc() -> dict[str, Any]:
    doc = get_story("quote").build(QUOTE_FIELDS, NEUTRAL_BRAND, "1:1", 6.0)
    for scene in doc["scenes"]:
        scene["layers"] = [{k: v for k, v in layer.items() if k != "formats"} for layer in scene["layers"]
                           if ".orb_" not in layer["id"]]
    return doc


VIDEO_DOC = _video_doc()

JOB = {"id": JOB_ID, "kind": "generate", "status": "running", "stage": "script", "progress": 0.4, "error": None,
       "result": None, "created_at": CREATED, "finished_at": None}
JOB_DONE = {**JOB, "kind": "brand_extract", "status": "succeeded", "stage": "save", "progress": 1.0,
            "result": {"brand_kit_id": KIT_ID}, "finished_at": FINISHED}
STILLS_JOB = {**JOB, "kind": "stills", "status": "queued", "stage": None, "progress": 0.0}
VERSION = {"id": VERSION_ID, "number": 1, "source": "story", "note": None, "lint": [], "created_at": CREATED,
           "doc": VIDEO_DOC}
VIDEO = {"id": VIDEO_ID, "title": "Charles Eames", "status": "ready", "story_id": "quote", "brand_kit_id": KIT_ID,
         "default_format": "1:1", "duration_sec": 6.0, "locale": "en", "source_video_id": None,
         "current_version": VERSION, "job": None, "created_at": CREATED, "updated_at": CREATED}
GENERATING = {**VIDEO, "title": "Spring collection", "status": "generating", "story_id": None,
              "default_format": "9:16", "duration_sec": None, "current_version": None, "job": JOB}
TRANSLATION = {**GENERATING, "id": "1d3f5b7a-9c2e-4a6b-8d0f-2a4c6e8b0d1f", "title": "Charles Eames (es)",
               "status": "draft", "story_id": "quote", "default_format": "1:1", "locale": "es",
               "source_video_id": VIDEO_ID, "job": {**JOB, "stage": "translate", "progress": 0.1}}
RENDER = {"id": RENDER_ID, "video_id": VIDEO_ID, "version_id": VERSION_ID, "format": "1:1", "resolution": 1080,
          "fps": 30, "status": "succeeded", "progress": 1.0, "progress_stale": False,
          "url": f"{BASE}/renders/{RENDER_ID}.mp4?expires=1773047721&sig=Jd3kq0cV9Xo2mZbN4Lp7",
          "poster_url": f"{BASE}/renders/{RENDER_ID}.jpg?expires=1773047721&sig=Qw8eR2tY6uI0oP4aS1dF",
          "stream_url": f"{BASE.removesuffix('/files')}/streams/{RENDER_ID}.m3u8?expires=1773047721&sig=Zp4xV7nB1mK9cR3tY6uE",
          "captions_url": None, "container": "mp4", "transparent": False, "clamped": [],
          "duration_sec": 6.0, "bytes": 1843207, "error": None, "priority": "normal", "queue": None,
          "held_up": None, "reused_frames": 72, "pool": "",
          "cost": {"cpu_sec": 41.27, "gpu_sec": None, "wall_sec": 44.9, "frames_rendered": 108, "frames_reused": 72,
                   "storage_bytes": 3710522, "peak_memory_bytes": 287309824},
          "created_at": CREATED, "finished_at": FINISHED}
RENDER_QUEUED = {**RENDER, "status": "queued", "progress": 0.0, "url": None, "poster_url": None, "stream_url": None,
                 "duration_sec": None, "bytes": None, "reused_frames": 0, "finished_at": None,
                 "cost": {"cpu_sec": 0.0, "gpu_sec": None, "wall_sec": 0.0, "frames_rendered": 0, "frames_reused": 0,
                          "storage_bytes": 0, "peak_memory_bytes": 0},
                 "queue": {"frames_ahead": 1350, "chunks_waiting": 3, "estimated_start_at": "2026-03-02T09:15:41.000000+00:00"}}
BRAND_KIT = {"id": KIT_ID, "name": "Neutral", "source_url": None, "is_default": True, "tokens": NEUTRAL_BRAND,
             "created_at": CREATED, "updated_at": CREATED}
COMMENT = {"id": COMMENT_ID, "video_id": VIDEO_ID, "body": "Hold the quote a second longer.", "time_sec": 2.5,
           "author": "Dana", "created_at": CREATED}
WEBHOOK = {"id": WEBHOOK_ID, "url": "https://hooks.example.com/reelfarm", "description": "render notifications",
           "events": ["render.completed", "render.failed"], "enabled": True, "disabled_reason": None,
           "created_at": CREATED, "updated_at": CREATED}
DELIVERY = {"id": DELIVERY_ID, "event_id": "evt_0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0", "event_type": "render.completed",
            "attempt": 1, "state": "succeeded", "status_code": 200, "latency_ms": 84, "error": None,
            "created_at": CREATED, "next_attempt_at": None}


def story() -> dict[str, Any]:
    """A built-in story as ``GET /stories`` lists it."""
    return list_stories()[0].to_dict()


_PNG_SHA = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
_MP3_SHA = "2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"
ASSET = {"id": "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d", "name": "team-photo.png", "kind": "image", "content_type": "image/png", "bytes": 48213,
         "key": storage_keys.asset_key(WORKSPACE_ID, _PNG_SHA, "png"),
         "width": 1200, "height": 800, "duration_sec": None, "fps": None, "has_audio": None, "cues": None,
         "url": f"{BASE}/assets/{WORKSPACE_ID}/9f86d0.png?expires=1741000000&sig=Yp3n",
         "thumbnail_url": f"{BASE}/assets/{WORKSPACE_ID}/9f86d0.thumb.jpg?expires=1741000000&sig=Q2xv",
         "created_at": CREATED}
SOUND = {**ASSET, "id": "6e5d4c3b-2a19-4087-b6f5-e4d3c2b1a098", "name": "launch-jingle.mp3", "kind": "audio", "content_type": "audio/mpeg",
         "bytes": 961024, "key": storage_keys.asset_key(WORKSPACE_ID, _MP3_SHA, "mp3"),
         "width": None, "height": None, "duration_sec": 30.04, "thumbnail_url": None,
         "url": f"{BASE}/assets/{WORKSPACE_ID}/2c26b4.mp3?expires=1741000000&sig=K9vw"}
_MP4_SHA = "fcde2b2edba56bf408601fb721fe9b5c338d10ee429ea04fae5511b68fbf8fb9"
FOOTAGE = {**ASSET, "id": "0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0", "name": "factory-floor.mp4", "kind": "video", "content_type": "video/mp4",
           "bytes": 18874368, "key": storage_keys.asset_key(WORKSPACE_ID, _MP4_SHA, "mp4"),
           "width": 1080, "height": 1920, "duration_sec": 12.5, "fps": 29.97, "has_audio": True,
           "url": f"{BASE}/assets/{WORKSPACE_ID}/fcde2b.mp4?expires=1741000000&sig=T4pq",
           "thumbnail_url": f"{BASE}/assets/{WORKSPACE_ID}/fcde2b.thumb.jpg?expires=1741000000&sig=Zm9v"}

RESPONSES: dict[str, Any] = {
    "RenderEstimate": {"format": "9:16", "existing_render_id": None, "frames_to_render": 135, "frames_reused": 135,
                       "cpu_sec": 9.6, "wall_sec": 8.1, "credits": 1, "node_kind": "cpu", "basis": "measured",
                       "sampled_frames": 4320},
    "VariantsEstimate": {"frames_to_render": 405, "frames_reused": 135, "cpu_sec": 31.2, "wall_sec": 26.4, "credits": 1,
                         "renders": [{"format": "9:16", "existing_render_id": None, "frames_to_render": 135,
                                      "frames_reused": 135, "cpu_sec": 9.6, "wall_sec": 8.1, "credits": 1,
                                      "node_kind": "cpu", "basis": "measured", "sampled_frames": 4320},
                                     {"format": "1:1", "existing_render_id": None, "frames_to_render": 270,
                                      "frames_reused": 0, "cpu_sec": 21.6, "wall_sec": 18.3, "credits": 0,
                                      "node_kind": "cpu", "basis": "measured", "sampled_frames": 4320}]},
    "Usage": {"from": "2026-03-01", "to": "2026-03-02", "group_by": "day", "renders": 3, "frames_rendered": 450,
              "frames_reused": 180, "cpu_sec": 212.4, "gpu_sec": 0.0, "storage_bytes": 9421770, "credits": 2,
              "groups": [{"day": "2026-03-01", "renders": 2, "frames_rendered": 270, "frames_reused": 180,
                          "cpu_sec": 131.9, "gpu_sec": 0.0, "storage_bytes": 5710394, "credits": 1},
                         {"day": "2026-03-02", "renders": 1, "frames_rendered": 180, "frames_reused": 0,
                          "cpu_sec": 80.5, "gpu_sec": 0.0, "storage_bytes": 3711376, "credits": 1}]},
    "Asset": ASSET, "AssetList": {"data": [FOOTAGE, ASSET, SOUND], "next_cursor": None},
    "Health": {"status": "ok", "checks": {"database": "ok", "queue": "ok"}},
    "Me": {"workspace": {"id": WORKSPACE_ID, "name": "Acme", "plan": "pro", "credits": 98},
           "rate_limit": {"limit": 600, "window_sec": 60, "policy": "600;w=60"},
           "api_key": {"id": "c0ffee00-1234-4abc-9def-0123456789ab", "prefix": "rf_live_7Hq2"},
           "library": {"used_bytes": 52_428_800, "limit_bytes": 10 * 1024 ** 3}},
    "Job": JOB, "JobDone": JOB_DONE, "StillsJob": STILLS_JOB,
    "BrandKit": BRAND_KIT, "BrandKitList": {"data": [BRAND_KIT]},
    "StoryList": {"data": [story()]},
    "LocaleList": {"source": "en", "data": [{"code": "es", "name": "Spanish", "direction": "ltr",
                                             "engines": ["apertium"]}]},
    "Video": VIDEO, "Generating": GENERATING, "VideoList": {"data": [VIDEO], "next_cursor": None},
    "Version": VERSION, "VersionList": {"data": [VERSION]},
    "Render": RENDER, "RenderQueued": RENDER_QUEUED, "RenderList": {"data": [RENDER]},
    "Variants": {"renders": [RENDER_QUEUED, {**RENDER_QUEUED, "id": "6b5a4938-2716-4f5e-8d4c-3b2a19087f6e",
                                             "format": "9:16"}], "translations": [TRANSLATION]},
    "Comment": COMMENT, "CommentList": {"data": [COMMENT]},
    "Webhook": WEBHOOK, "WebhookCreated": {**WEBHOOK, "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"},
    "WebhookList": {"data": [WEBHOOK]},
    "Delivery": DELIVERY, "DeliveryList": {"data": [DELIVERY]},
    "Redelivery": {**DELIVERY, "id": "2b3c4d5e-6f70-4812-9a3b-4c5d6e7f8091", "attempt": 2, "state": "pending",
                   "status_code": None, "latency_ms": None, "next_attempt_at": CREATED},
}

REQUESTS: dict[str, Any] = {
    "BrandExtract": {"url": "https://example.com"},
    "BrandKitPatch": {"name": "Acme spring", "is_default": True},
    "VideoPatch": {"fields": {"author": "Ray Eames"}, "note": "credit Ray too"},
    "Restore": {"note": "back to the cut the client approved"},
    "RenderCreate": {"format": "1:1", "resolution": 1080, "fps": 30},
    "StillsCreate": {"times": [0.5, 3.0], "format": "1:1"},
    "VariantsCreate": {"formats": ["1:1", "9:16"], "locales": ["es"], "resolution": 1080, "priority": "low"},
    "CommentCreate": {"body": "Hold the quote a second longer.", "time_sec": 2.5, "author": "Dana"},
    "WebhookCreate": {"url": "https://hooks.example.com/reelfarm", "events": ["render.completed", "render.failed"],
                      "description": "render notifications"},
    "WebhookPatch": {"enabled": True},
    "AssetUpload": {"file": "(the file's bytes)"},
    "AssetFromUrl": {"url": "https://example.com/images/team.png"},
}

VIDEO_CREATE = {
    "story": {"summary": "From a story: ready at once",
              "value": {"storyId": "quote", "fields": QUOTE_FIELDS, "format": "1:1", "durationSec": 6}},
    "brief": {"summary": "From a brief: generated, branded from a site",
              "value": {"brief": "Announce our spring collection: linen shirts, three colours, free returns.",
                        "url": "https://example.com", "format": "9:16", "locale": "en"}},
    "url": {"summary": "From a website alone", "value": {"url": "example.com", "title": "About us"}},
}
"""``POST /videos``: one example per kind of body."""

ERROR_CODES = {400: "validation_failed", 401: "unauthorized", 402: "insufficient_credits", 403: "plan_without_api",
               404: "not_found", 405: "method_not_allowed", 409: "conflict", 412: "version_conflict",
               413: "payload_too_large",
               415: "unsupported_media_type", 422: "idempotency_key_mismatch", 429: "rate_limited",
               500: "internal_error", 503: "unavailable"}
ERROR_MESSAGES = {
    400: "The request is invalid; see details.", 401: "Missing or invalid API key.",
    402: "This render needs 1 credit; the workspace has 0.", 403: "The starter plan does not include API access.",
    404: "No such video in this workspace.", 405: "Method not allowed.",
    409: "The video is generating; try again when it is ready.",
    412: "The video's current version is 6, not the one If-Match names, so nothing was saved: someone changed it "
         'since it was read. Read it again, make the change on version 6 and send it with If-Match: "v6".',
    413: "Request body larger than 1048576 bytes.",
    415: "Send JSON with Content-Type: application/json.",
    422: "This Idempotency-Key was used with a different request.",
    429: "Rate limit of 600 requests per 60 s exceeded for this API key; retry in 12 s.",
    500: "Unexpected error; it was logged with this request id.",
    503: "The render queue is unavailable; nothing was created. Try again shortly."}
ERROR_DETAILS = {400: [{"field": "/format", "code": "invalid_choice", "message": "Must be one of: 16:9, 9:16, 1:1, 4:5."}],
                 412: [{"field": "If-Match", "code": "version_conflict", "message": 'the current version is 6 (ETag "v6")',
                        "current_version": 6}]}


DOWNLOAD_ERRORS = {
    403: ("forbidden", "This download link is invalid or has expired; fetch the resource again for a fresh one."),
    404: ("not_found", "No such resource in this workspace.")}
"""``GET /files/{key}``: its refusals, which are not about a workspace's objects."""


def error(status: int, code: str | None = None, message: str | None = None) -> dict[str, Any]:
    """The error envelope a ``status`` answer carries (``code`` and ``message`` where the route has its own)."""
    return {"error": {"code": code or ERROR_CODES[status], "message": message or ERROR_MESSAGES[status],
                      "details": ERROR_DETAILS.get(status), "request_id": "req_3f2a9c1e0b7d4e55a1b2c3d4"}}
