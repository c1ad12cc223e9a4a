"""A story video's clips on its page: each played in the page, and the second it starts from.

The video page lists every clip of the media library that the video's story fields name and its
document plays (``on_page``): the clip itself in a ``<video>`` element (its file URL, a signed
``/files/`` address of this server or a presigned one of S3, both allowed by the console's
``media-src``), its poster, length and size, and a range control of its start in seconds, bounded
by its stored length. Saving the start (``saved_start``) saves the current document with that
``trim_start`` wherever it plays the clip (``reelfarm.console.clips``): a document edit, made from
the version the page showed, refused beside the control when the clip has no such second. With
``static/console/clips.js`` the clip in the page seeks to the second the control points at, so the
control scrubs through the clip; without it, the control and its button are a plain form. The
route is the video page's (``reelfarm.console.pages.video.clip_start``), which answers a refused
start with the page and the reason beside the control.

A fields save builds the document from the story again; ``keep_starts`` then writes the starts the
version before it had back into the new document, as a second version, so a start outlives an edit
of the headline.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from flask import flash, g

from reelfarm.console import clips, forms, library, web
from reelfarm.shared.errors import NotFound
from reelfarm.studio.errors import VersionConflict
from reelfarm.studio.resources import VideoResource
from reelfarm.studio.stories import get_story
from reelfarm.studio.stories.fields import is_asset_id
from reelfarm.studio.videos import DocLintError

STEP_SEC = 0.1  # the start control's step; its top is the last step before the clip's end


def latest_top(duration_sec: float | None) -> float:
    """The latest start the control offers: the last step before the clip's end (a start at its
    end would play nothing; the linter refuses it)."""
    if not duration_sec or duration_sec <= STEP_SEC:
        return 0.0
    return round((math.ceil(duration_sec / STEP_SEC) - 1) * STEP_SEC, 1)


def on_page(video: VideoResource, fields: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The clips the page shows: for each video field whose clip the current document plays, its
    label, the asset, where the document starts it and the control's top."""
    version = video["current_version"]
    if not video["story_id"] or version is None or not fields:
        return []
    schema = get_story(video["story_id"]).fields
    shown: list[dict[str, Any]] = []
    for name in library.video_fields(schema):
        asset = _own_clip(fields.get(name))
        if asset is None:
            continue
        begins = clips.start(version["doc"], asset["key"])
        if begins is None:
            continue
        shown.append({"field": name, "label": forms.label_at(schema, [name]), "asset": asset, "start": begins,
                      "top": latest_top(asset["duration_sec"]), "step": STEP_SEC})
    return shown


def _own_clip(asset_id: Any) -> dict[str, Any] | None:
    if not is_asset_id(asset_id):
        return None
    try:
        asset: dict[str, Any] = web.services().assets.get(g.workspace.id, asset_id)
    except NotFound:
        return None
    return asset if asset["kind"] == "video" else None


def _seconds(text: str, asset: Mapping[str, Any]) -> tuple[float | None, str | None]:
    """The start typed, or why it cannot be used."""
    length = float(asset["duration_sec"] or 0)
    try:
        seconds = float(text.strip().removesuffix("s").strip())
    except ValueError:
        return None, f"Start: '{text[:40]}' is not a number of seconds"
    if not math.isfinite(seconds) or not 0 <= seconds < length:
        return None, f"Start: use 0 to {latest_top(length):g} seconds (the clip is {length:g} s long)"
    return seconds, None


def saved_start(video: VideoResource, asset_id: str, typed: str, opened_at: int | None) \
        -> tuple[VideoResource | None, str | None]:
    """Start the clip ``asset_id`` at the second ``typed`` in the video's current document, as a
    version made from ``opened_at`` (None: whichever is current): (the video, None) once saved, or
    (None, why not, in words). Raises NotFound when the workspace has no such clip."""
    version = video["current_version"]
    asset = _own_clip(asset_id)
    if asset is None or version is None:
        raise NotFound("video asset", asset_id)
    seconds, why = _seconds(typed, asset)
    if seconds is None:
        return None, why
    doc = clips.with_start(version["doc"], asset["key"], seconds)
    if doc == version["doc"]:
        return video, None
    try:
        return web.services().videos.update(g.workspace.id, video["id"], doc=doc,
                                            note=f"clip starts at {seconds:g} s", based_on=None if opened_at is None
                                            else {opened_at}), None
    except DocLintError as exc:
        return None, "Start: " + "; ".join(str(d.get("message", "")) for d in exc.details)


def keep_starts(video_id: str, before: Mapping[str, Any], updated: VideoResource) -> VideoResource:
    """After a fields save that made a new version: the starts of ``before`` (the document it
    replaced) written into the new document for each clip it still plays, as a version of its own;
    ``updated`` as it was when there is nothing to keep or another edit landed meanwhile."""
    version = updated["current_version"]
    starts = clips.starts(before)
    if version is None or not starts:
        return updated
    doc = clips.kept(version["doc"], starts)
    if doc == version["doc"]:
        return updated
    said = ", ".join(f"{s:g} s" for s in starts.values())
    try:
        return web.services().videos.update(g.workspace.id, video_id, doc=doc, note=f"clip start kept ({said})",
                                            based_on={version["number"]})
    except (DocLintError, VersionConflict):
        flash("The clip plays from 0 s in this version: set its start again below.", "error")
        return updated
