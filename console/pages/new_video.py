"""Making a video: the gallery of stories, a story's form beside its live preview, and a brief.

The gallery shows every story with a thumbnail, grouped by category, in the format chosen above
it. A thumbnail is its own URL (``/app/stories/<id>/thumbnail.png``), loaded lazily by the
browser: the page itself draws nothing, and ``StoryPreviews.thumbnail`` draws one on its first
request for the workspace's default brand kit, then keeps it in storage. The URL carries the
kit's tag, so the browser may keep the image for a day and asks again when the kit changes.

The story form is ``reelfarm.console.forms.controls`` over the story's field schema, beside a
preview: a still of the values as they stand, at a chosen time, in the chosen format, before
anything is saved. With JavaScript the page posts the form to ``.../preview`` about 400 ms after
the last change and shows the PNG it answers, or puts the problems it answers beside their
fields; without it, the form's Preview button posts the form here and the page comes back with
the still (a ``data:`` image) or the problems. Either way every problem is reported at once, in
words (``reelfarm.console.problems``): values that cannot be read as their type, the story's own
checks of the rest, the duration and the brand kit. Its Play preview button plays an animated
draft of the same values (``reelfarm.console.pages.drafts``).

Fields still holding the story's sample values are marked one by one and listed above the Create
button (``forms.Control.unchanged``; the page's script keeps both up to date as they are typed),
and a video made with them left so carries a ``sample_value`` warning per field on its version.

Each image field offers an upload into the media library and the workspace's images to choose
from, and the form ends with the soundtrack (``reelfarm.console.library``; its fit, loop or once,
``forms.read_fit``): the form is
``multipart/form-data``, so without JavaScript a file posted with it is stored and its id fills
its field; another workspace's asset id is refused beside its field.

The story form and the brief form make one video however often they are sent: each carries a
one-use token (``reelfarm.console.sendings``), and the same form sent again (Back, then Create
again; a second click) goes to the video its first sending made. Their pages are kept by the
browser for Back, so Back brings the same form, token and all.
"""

from __future__ import annotations

import base64
from itertools import groupby
from typing import Any

from flask import Response, abort, g, jsonify, redirect, render_template, request, url_for
from werkzeug.datastructures import MultiDict

from reelfarm.console import forms, images, library, problems, sendings, web
from reelfarm.console.blueprint import blp
from reelfarm.renderer.spec import FORMATS
from reelfarm.studio.errors import InvalidFieldsError, UnknownStoryError
from reelfarm.studio.previews import StoryDraft
from reelfarm.studio.stories import get_story, list_stories
from reelfarm.studio.stories.base import MAX_DURATION_SEC, MIN_DURATION_SEC, Story
from reelfarm.studio.videos import MAX_BRIEF, MAX_TITLE  # over a limit is named beside the field, not cut

DEFAULT_FORMAT = "9:16"
THUMBNAIL_MAX_AGE = 86400
MAX_SITE_URL = 2048


def _format(raw: str | None) -> str:
    return raw if raw in FORMATS else DEFAULT_FORMAT


def _story(story_id: str) -> Story:
    try:
        return get_story(story_id)
    except UnknownStoryError:
        abort(404)


# -- the gallery ----------------------------------------------------------------------------

@blp.route("/videos/new")
@web.signed_in
def video_new() -> Any:
    return sendings.kept(_gallery(_format(request.args.get("format"))))


def _gallery(fmt: str, brief_error: str | None = None, status: int = 200, typed: dict[str, Any] | None = None,
             found: dict[str, str] | None = None) -> Any:
    """The gallery and the brief form; ``typed``: what the brief form had when it was refused
    (``brief``, ``url`` and its video settings), ``found``: the problem beside each field."""
    tag = web.services().previews.thumbnail_tag(g.workspace.id)
    groups = [(category.replace("_", " ").capitalize(), list(stories))
              for category, stories in groupby(list_stories(), key=lambda s: s.category)]
    return render_template("console/video_new.html", groups=groups, gallery_format=fmt, tag=tag,
                           brief_error=brief_error, brief_typed=typed or {}, brief_problems=found or {},
                           **_choices()), status


def _choices() -> dict[str, Any]:
    kits = web.services().brand_kits.list(g.workspace.id)
    return {"formats": FORMATS, "kits": kits, "min_duration": MIN_DURATION_SEC, "max_duration": MAX_DURATION_SEC}


@blp.route("/stories/<story_id>/thumbnail.png")
@web.signed_in
def story_thumbnail(story_id: str) -> Any:
    """The workspace's thumbnail of a story (drawn on the first request, then kept)."""
    _story(story_id)
    fmt = request.args.get("format", DEFAULT_FORMAT)
    if fmt not in FORMATS:
        abort(404)
    thumb = web.services().previews.thumbnail(g.workspace.id, story_id, fmt)
    response = Response(thumb.png, mimetype="image/png")
    response.set_etag(thumb.tag)
    fresh = request.args.get("v") == thumb.tag
    response.headers["Cache-Control"] = f"private, max-age={THUMBNAIL_MAX_AGE}" if fresh else "private, no-cache"
    return response.make_conditional(request)


# -- a story's form and its preview ---------------------------------------------------------

@blp.route("/videos/new/<story_id>", methods=["GET", "POST"])
@web.signed_in
def video_from_story(story_id: str) -> Any:
    story = _story(story_id)
    if request.method == "GET":
        settings = {"format": _format(request.args.get("format")), "duration": None, "title": "", "kit": "",
                    "duration_typed": "", "soundtrack": library.typed_common(None)}
        return sendings.kept(_story_form(story, forms.controls(story.fields), settings))
    if "preview" in request.form:  # drawn, not made: the form keeps its token
        return _previewed(story)
    with sendings.sending() as sent:
        if sent.before is not None:
            return sendings.made_before(sent)
        return _made_from_story(story, sent)


def _previewed(story: Story) -> Any:
    """The form again with a still of its values (the Preview button without JavaScript)."""
    draft, settings, found, form = _checked(story, request.form, request.files)
    if found:
        return _story_form(story, forms.controls(story.fields, forms.typed(story.fields, form)), settings,
                           found, status=400)
    png = web.services().previews.draw(g.workspace.id, draft, _time(form))
    return _story_form(story, forms.controls(story.fields, draft.fields), settings, preview=png)


def _made_from_story(story: Story, sent: sendings.Sending) -> Any:
    """The video the form makes, or the form again (400) with every problem beside its field."""
    draft, settings, found, form = _checked(story, request.form, request.files)
    if found:
        return _story_form(story, forms.controls(story.fields, forms.typed(story.fields, form)), settings,
                           found, status=400)
    if found := images.image_problems(web.services().settings, story.fields, draft.fields):
        return _story_form(story, forms.controls(story.fields, draft.fields), settings, found, status=400)
    made = web.services().videos.create(
        g.workspace.id, story_id=story.id, fields=draft.fields, brand_kit_id=draft.brand_kit_id,
        fmt=draft.format, duration_sec=draft.duration_sec, title=str(settings["title"] or "") or None)
    return redirect(sent.made(url_for("console.video", video_id=made["id"])), code=303)


@blp.route("/videos/new/<story_id>/preview", methods=["POST"])
@web.signed_in
def story_preview(story_id: str) -> Any:
    """The form's live preview: a PNG of the values as posted, or 400 with every problem (JSON).
    A file posted here is not stored: the page's script uploads each file on its own."""
    story = _story(story_id)
    draft, _, found, _ = _checked(story, request.form)
    if found:
        return jsonify({"problems": found}), 400
    try:
        png = web.services().previews.draw(g.workspace.id, draft, _time(request.form))
    except InvalidFieldsError as exc:  # what the form was checked for already; kept for a race with a kit
        return jsonify({"problems": library.track_problems(
            problems.explain(story.fields, draft.fields, exc.details))}), 400
    return Response(png, mimetype="image/png")


def _checked(story: Story, form: MultiDict[str, str], files: Any = None) \
        -> tuple[StoryDraft, dict[str, Any], dict[str, str], MultiDict[str, str]]:
    """The draft the form holds, its video settings, every problem with it (by form name), and the
    form as chosen (``library.chosen``: each image field's upload or library pick in its place).
    ``files``: the request's files, stored in the library (None: nothing is stored)."""
    svc = web.services()
    read = library.posted(svc, g.workspace.id, story.fields, form, files)
    form = read.form
    settings = _settings_of(form)
    settings["soundtrack"] = read.track
    draft = StoryDraft(story.id, read.values, settings["format"], settings["duration"], settings["kit"] or None)
    details = svc.previews.problems(g.workspace.id, draft)
    found = library.track_problems(problems.explain(story.fields, read.values, details, settings, read.unreadable))
    for name, message in read.problems.items():
        found.setdefault(name, message)
    if len(settings["title"]) > MAX_TITLE:  # said, not cut
        found["video.title"] = f"Title: at most {MAX_TITLE} characters (this has {len(settings['title'])})"
    return draft, settings, found, form


def _time(form: MultiDict[str, str]) -> float | None:
    try:
        return float(form.get("preview_time", ""))
    except ValueError:
        return None


def _settings_of(form: MultiDict[str, str]) -> dict[str, Any]:
    raw = form.get("duration", "").strip()
    try:
        duration = float(raw) if raw else None
    except ValueError:
        duration = -1.0  # reported with what was typed (``problems.explain``)
    return {"format": _format(form.get("format")), "duration": duration, "title": form.get("title", "").strip()[:10_000],
            "kit": form.get("brand_kit_id", ""), "duration_typed": raw[:40]}


def _story_form(story: Story, controls: list[forms.Control], settings: dict[str, Any],
                found: dict[str, str] | None = None, status: int = 200, preview: bytes | None = None,
                played: dict[str, Any] | None = None) -> Any:
    svc = web.services()
    previews = svc.previews
    draft = StoryDraft(story.id, {}, settings["format"], None, None)
    time = _time(request.form) if request.method == "POST" else None
    if time is None:
        time = previews.settled_time(g.workspace.id, draft)
    duration = settings["duration"] if settings["duration"] and settings["duration"] > 0 else story.default_duration_sec
    image = "data:image/png;base64," + base64.b64encode(preview).decode("ascii") if preview else None
    return render_template(
        "console/video_story.html", story=story, controls=controls, settings=settings, problems=found or {},
        samples=forms.unchanged(controls),
        preview_image=image, preview_time=min(time, duration), preview_duration=duration, draft=played,
        tag=previews.thumbnail_tag(g.workspace.id), library=library.offered(svc, g.workspace.id, controls),
        **_choices()), status


# -- a brief --------------------------------------------------------------------------------

@blp.route("/videos/brief", methods=["POST"])
@web.signed_in
def video_from_brief() -> Any:
    with sendings.sending() as sent:
        if sent.before is not None:
            return sendings.made_before(sent)
        return _made_from_brief(sent)


def _made_from_brief(sent: sendings.Sending) -> Any:
    """The video the brief makes, or the gallery again (400) with the problem."""
    settings = _settings_of(request.form)
    brief = request.form.get("brief", "").strip()
    url = request.form.get("url", "").strip() or None
    found = {name: message for name, label, text, limit in (
        ("brief", "Brief", brief, MAX_BRIEF), ("url", "Website", url or "", MAX_SITE_URL),
        ("video.title", "Title", settings["title"], MAX_TITLE)) if (message := forms.too_long(label, text, limit))}
    typed = {**settings, "brief": brief, "url": url or ""}
    if found:
        return _gallery(DEFAULT_FORMAT, "Some values need a change; see the messages beside them.", 400, typed, found)
    if not brief and not url:
        return _gallery(DEFAULT_FORMAT, "Write a brief, or give a website to start from.", 400, typed)
    duration = settings["duration"] if settings["duration"] and settings["duration"] > 0 else None
    made = web.services().videos.create(
        g.workspace.id, brief=brief or None, url=url, title=settings["title"] or None,
        brand_kit_id=settings["kit"] or None, fmt=settings["format"], duration_sec=duration)
    return redirect(sent.made(url_for("console.video", video_id=made["id"])), code=303)
