"""The console's blueprint and what runs around each of its requests (a leaf: pages import it).

Before a request: the signed-in user and their workspace are loaded from the session, a POST's
CSRF token is checked, and a signed-in request is counted in the user's rate window. After it:
the console's security headers. Errors become HTML pages (``console/errors.py``).
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Flask, Response, g, request
from flask.blueprints import BlueprintSetupState

from reelfarm.console import sendings, web
from reelfarm.console.errors import install as _install_errors
from reelfarm.farm.services.media import MAX_IMAGE_BYTES
from reelfarm.shared import storage

blp = Blueprint("console", __name__, url_prefix="/app", template_folder="templates",
                static_folder="static", static_url_path="/static")


@blp.record_once
def _configure(state: BlueprintSetupState) -> None:
    app = state.app
    if not isinstance(app, Flask):  # Flask types the app here as its sans-I/O base class
        raise TypeError(f"the console must be registered on a Flask app, not {type(app).__name__}")
    web.configure(app)


# Forms with a file: a body up to this size is read, so that a logo over its own limit is named
# beside its field with everything typed kept, not answered with a full-page 413.
FILE_FORM_BYTES = 32 * 1024 * 1024
FILE_FORMS = frozenset({"console.brand_kit_new", "console.brand_kit_edit"})
# The media library's uploads: every file of a form without JavaScript (each refused over its own
# limit by the library, beside the upload), or one file at a time from the page's script.
MEDIA_FORM_BYTES = 20 * 50 * 1024 * 1024 + 1024 * 1024
MEDIA_FORMS = frozenset({"console.media_upload", "console.media_upload_json"})
# A story form (a new video's, or a video's fields) posted without JavaScript carries the files of its image fields (each stored in the
# library, or refused over its own limit beside its field); the script sends each file on its own.
STORY_FORM_BYTES = 2 * MAX_IMAGE_BYTES + 1024 * 1024
STORY_FORMS = frozenset({"console.video_from_story", "console.story_preview", "console.story_draft",
                         "console.fields_update", "console.fields_preview", "console.video_draft"})


@blp.before_request
def _begin() -> None:
    if request.endpoint in FILE_FORMS:
        request.max_content_length = max(FILE_FORM_BYTES, request.max_content_length or 0)
    elif request.endpoint in MEDIA_FORMS:
        request.max_content_length = max(MEDIA_FORM_BYTES, request.max_content_length or 0)
    elif request.endpoint in STORY_FORMS:
        request.max_content_length = max(STORY_FORM_BYTES, request.max_content_length or 0)
    g.user = web.load_user()
    g.workspace = None
    if g.user is not None:
        g.workspace = web.services().accounts.workspace(g.user.workspace_id)
    web.check_csrf()
    if g.user is not None:
        web.count_request(g.user)


@blp.after_request
def _finish(response: Response) -> Response:
    return web.secure_headers(response)


@blp.app_template_global()
def csrf_token() -> str:
    return web.csrf_token()


@blp.app_template_global()
def form_token() -> str:
    """A create form's one-use token (``reelfarm.console.sendings``)."""
    return sendings.form_token()


@blp.app_template_global()
def refresh_url(anchor: str = "") -> str:
    return web.refresh_url(anchor)


CONTAINER_NAMES = {"mp4": "MP4", "gif": "GIF", "webm": "WebM"}
TRANSPARENT_WEBM = "webm-transparent"
"""The render form's choice of a WebM with alpha (``container: webm, transparent: true``)."""
"""The containers a render is made in, as people say them (the render buttons, the render list)."""


@blp.app_context_processor
def _container_names() -> dict[str, Any]:
    return {"container_names": CONTAINER_NAMES, "transparent_webm": TRANSPARENT_WEBM}


@blp.app_template_global()
def download_url(url: str, name: str) -> str:
    """A signed file URL that downloads the file as ``name`` (``shared.storage.download_url``)."""
    return storage.download_url(url, name)


_install_errors(blp)
