"""The videos grid, and making a video from a story (a generated form) or from a brief.

Each tile shows a picture in the video's own format (a poster or a still, the current version's
first; a box of that shape when there is none) and says how the video was made.

The story form is ``reelfarm.console.forms.controls`` over the story's own field schema; a post is read
back with ``reelfarm.console.forms.parse`` and handed to the same ``VideoService.create_from_story`` the
API calls, whose validation problems come back as messages beside the fields they concern.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from flask import abort, g, redirect, render_template, request, url_for

from reelfarm.console import forms, web
from reelfarm.console.blueprint import blp
from reelfarm.renderer.spec import FORMATS
from reelfarm.farm.services.errors import InvalidRequest
from reelfarm.studio.errors import InvalidBuildRequestError, InvalidFieldsError, UnknownStoryError
from reelfarm.studio.stories import get_story, list_stories
from reelfarm.studio.stories.base import MAX_DURATION_SEC, MIN_DURATION_SEC
from reelfarm.studio.translate.locales import locale_name

STATUSES = ("draft", "generating", "ready", "failed", "archived")
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


@blp.route("/videos/new")
@web.signed_in
def video_new() -> Any:
    return render_template("console/video_new.html", stories=list_stories(), **_choices())


def _choices() -> dict[str, Any]:
    kits = web.services().brand_kits.list(g.workspace.id)
    return {"formats": FORMATS, "kits": kits, "min_duration": MIN_DURATION_SEC, "max_duration": MAX_DURATION_SEC}


@blp.route("/videos/new/<story_id>", methods=["GET", "POST"])
@web.signed_in
def video_from_story(story_id: str) -> Any:
    try:
        story = get_story(story_id)
    except UnknownStoryError:
        abort(404)
    if request.method == "GET":
        return _story_form(story, forms.controls(story.fields), {"format": "9:16"})
    settings = _settings_of(request.form)
    try:
        values = forms.parse(story.fields, request.form)
    except forms.FormProblem as exc:
        return _story_form(story, forms.controls(story.fields, _raw_values(story, request.form)), settings,
                           exc.problems, 400)
    try:
        made = web.services().videos.create(
            g.workspace.id, story_id=story.id, fields=values, brand_kit_id=settings["kit"] or None,
            fmt=settings["format"], duration_sec=settings["duration"], title=settings["title"] or None)
    except InvalidFieldsError as exc:
        return _story_form(story, forms.controls(story.fields, values), settings,
                           forms.problem_names(exc.details), 400)
    except InvalidBuildRequestError as exc:
        return _story_form(story, forms.controls(story.fields, values), settings,
                           {f"video.{exc.field}": str(exc)}, 400)
    return redirect(url_for("console.video", video_id=made["id"]), code=303)


def _raw_values(story: Any, form: Any) -> dict[str, Any]:
    """What was typed, to show again beside the problems (lists as posted, others as text)."""
    values: dict[str, Any] = {}
    for name, prop in story.fields["properties"].items():
        kind, _ = forms.kind_of(prop)
        if kind in ("list", "rows"):
            try:
                values[name] = forms.parse({"properties": {name: prop}}, form)[name]
            except forms.FormProblem:
                values[name] = prop.get("default")
        else:
            values[name] = form.get(forms.PREFIX + name, "")
    return values


def _settings_of(form: Any) -> dict[str, Any]:
    fmt = form.get("format", "9:16")
    raw = form.get("duration", "").strip()
    try:
        duration = float(raw) if raw else None
    except ValueError:
        duration = -1.0  # the builder refuses it with its own message
    return {"format": fmt if fmt in FORMATS else "9:16", "duration": duration, "title": form.get("title", "").strip()[:500],
            "kit": form.get("brand_kit_id", "")}


def _story_form(story: Any, controls: list[forms.Control], settings: dict[str, Any],
                problems: dict[str, str] | None = None, status: int = 200) -> Any:
    return render_template("console/video_story.html", story=story, controls=controls, settings=settings,
                           problems=problems or {}, **_choices()), status


@blp.route("/videos/brief", methods=["POST"])
@web.signed_in
def video_from_brief() -> Any:
    settings = _settings_of(request.form)
    brief = request.form.get("brief", "").strip()
    url = request.form.get("url", "").strip() or None
    if not brief and not url:
        return render_template("console/video_new.html", stories=list_stories(), brief_error="Write a brief, or give "
                               "a website to start from.", **_choices()), 400
    duration = settings["duration"] if settings["duration"] and settings["duration"] > 0 else None
    made = web.services().videos.create(
        g.workspace.id, brief=brief or None, url=url, title=settings["title"] or None,
        brand_kit_id=settings["kit"] or None, fmt=settings["format"], duration_sec=duration)
    return redirect(url_for("console.video", video_id=made["id"]), code=303)
