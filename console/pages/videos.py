"""The videos grid (making a video is ``new_video.py``).

Each tile shows a picture in the video's own format (a poster or a still, the current version's
first; a box of that shape when there is none) and says how the video was made.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from flask import g, render_template, request

from reelfarm.console import web
from reelfarm.console.blueprint import blp
from reelfarm.farm.services.errors import InvalidRequest
from reelfarm.shared.statuses import VIDEO_STATUSES
from reelfarm.studio.stories import list_stories
from reelfarm.studio.translate.locales import locale_name

STATUSES = VIDEO_STATUSES
PAGE = 24
SCAN_PAGES = 5  # pages of 100 read to fill one filtered page of the grid
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@blp.route("/videos")
@web.signed_in
def videos() -> Any:
    status = request.args.get("status", "")
    if status not in STATUSES:
        status = ""
    shown, after = _page(status, request.args.get("after", "")[:200] or None)
    reads = web.services().read_models
    pictures = reads.pictures(g.workspace.id, [v["id"] for v in shown])
    labels = _labels(shown, reads.origins(g.workspace.id, [v["id"] for v in shown]))
    return render_template("console/videos.html", videos=shown, pictures=pictures, labels=labels, status=status,
                           statuses=STATUSES, after=after)


def _labels(shown: list[dict[str, Any]], origins: dict[str, dict[str, Any]]) -> dict[str, str]:
    """How each video was made, by its first version's source: its story, a brief, a document,
    or a translated copy (its language and original)."""
    stories = {s.id: s.name for s in list_stories()}
    labels = {}
    for video in shown:
        origin = origins.get(video["id"]) or {}
        source = origin.get("source")
        if source == "translate" or video["source_video_id"]:
            language = _language(video["locale"]) if video["locale"] else "Translated"
            original = origin.get("original_title")
            labels[video["id"]] = f"{language} copy of “{original}”" if original else f"{language} copy"
        elif source == "generate" or (source is None and not video["story_id"]):
            labels[video["id"]] = "From a brief"
        elif source == "doc":
            labels[video["id"]] = "From a document"
        else:
            labels[video["id"]] = stories.get(video["story_id"] or "", video["story_id"] or "From a story")
    return labels


def _language(tag: str) -> str:
    try:
        return locale_name(tag)
    except ValueError:
        return tag


def _page(status: str, cursor: str | None) -> tuple[list[dict[str, Any]], str | None]:
    """Up to ``PAGE`` videos (with ``status`` if given), and the cursor of the next page."""
    found: list[dict[str, Any]] = []
    for _ in range(SCAN_PAGES):
        try:
            page = web.services().videos.list(g.workspace.id, 100 if status else PAGE, cursor)
        except InvalidRequest:  # a cursor that was not ours: start from the newest
            page = web.services().videos.list(g.workspace.id, 100 if status else PAGE, None)
        for video in page["data"]:
            if status and video["status"] != status:
                continue
            found.append(video)
            if len(found) == PAGE and (video is not page["data"][-1] or page["next_cursor"]):
                return found, _cursor_after(video)
        cursor = page["next_cursor"]
        if cursor is None:
            return found, None
    return found, cursor


def _cursor_after(video: dict[str, Any]) -> str:
    """The API's cursor form, ``<microseconds since the epoch>.<id>``, positioned after ``video``."""
    micros = (video["created_at"] - EPOCH) // timedelta(microseconds=1)
    return f"{micros}.{video['id']}"
