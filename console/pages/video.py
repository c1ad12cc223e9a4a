"""One video: its preview area, renders with live progress, playback, versions, fields, translations.

The page has one preview area, at the top (beside the rest on wide screens, kept in view): it opens
on the current version's poster (its render's, else the still last drawn of it; with none, the
page's script asks for a still at the moment the first scene has settled), shows a still at the
time its slider is moved to, the fields form's unsaved values (their live still, or Play preview's
animated draft) and a still of any version asked for from the Versions table (``?still=&of=``).
The Versions table says what each version changed against the one before it
(``reelfarm.console.history``).

Progress is polled, not pushed: the page's script asks ``/app/videos/<id>/status.json`` about once
a second while anything is queued or running, and stops when nothing is. Polling was chosen over
server-sent events because the serving processes are gunicorn threads (4 per worker) and an open
event stream would hold one for as long as a page stays open; the numbers already live in the
database or Redis (``ProgressStore``) with no push channel to relay; and a plain GET passes any
proxy and resumes by itself after a restart. Without JavaScript the page refreshes itself every few
seconds (``<noscript>`` meta refresh) while work is in flight, to an address with a changed
``refresh`` count and the anchor of the part that is working: a refresh to the page's own address
would only scroll when that address ends in an anchor, as it does after a form post.

Renders belong to versions: each is labelled with its version's number; the player shows the
current version's latest render, or the one whose Play or Watch link was followed (``?play=``):
any render running with a stream can be watched as it renders, and a render that comes into the
player plays by itself, muted; older versions' renders are listed as out of date, each with a
button that renders the current version in its format and resolution. Download MP4 saves a
render under the video's title with its version, format and resolution.

Every action is a form post answered with a redirect (303) back to the page, or, when the script
asks for JSON (``Accept: application/json``), with the render or job it started.

The fields form is the story form's (``reelfarm.console.library``): each image field offers an
upload into the media library and the workspace's images, each video field the workspace's clips,
and the soundtrack may be changed or, with "(none)", removed. After a document edit (a clip's
start, ``reelfarm.console.pages.clips``) the form shows the story values of the latest version
that has them, which a save builds from.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any

from flask import abort, flash, g, jsonify, redirect, render_template, request, url_for

from reelfarm.console import conflicts, forms, history, images, library, problems, web
from reelfarm.console.blueprint import CONTAINER_NAMES, TRANSPARENT_WEBM, blp
from reelfarm.console.pages import clips
from reelfarm.farm.services.errors import InvalidRequest, PlanFeatureUnavailable
from reelfarm.farm.services.renders import credits_for
from reelfarm.farm.services.resources import JobResource
from reelfarm.renderer.spec import FORMATS, RESOLUTIONS
from reelfarm.renderer.stills import as_doc, poster_time
from reelfarm.shared import plans
from reelfarm.shared.ids import is_uuid
from reelfarm.shared.statuses import ACTIVE_RENDER_STATUSES, LIVE, VIDEO_IN_THE_MAKING
from reelfarm.shared.storage import download_url
from reelfarm.studio.errors import InvalidFieldsError, VersionConflict
from reelfarm.studio.resources import VersionResource, VideoResource
from reelfarm.studio.stories import get_story, validate_fields
from reelfarm.studio.stories.base import Story
from reelfarm.studio.texts import doc_texts, text_problems
from reelfarm.studio.translate.locales import locale_label
from reelfarm.studio.videos import MAX_NOTE  # over it is named beside the field, not cut

REFRESH_SEC = 3


def _wants_json() -> bool:
    return request.accept_mimetypes.best == "application/json"


def _video_id(video_id: str) -> str:
    if not is_uuid(video_id):
        abort(404)
    return video_id


def _back(video_id: str, anchor: str = "") -> Any:
    return redirect(url_for("console.video", video_id=video_id) + anchor, code=303)


@blp.route("/videos/<video_id>")
@web.signed_in
def video(video_id: str) -> Any:
    return _page(_video_id(video_id))


def _page(video_id: str, found: dict[str, str] | None = None, typed: dict[str, Any] | None = None,
          status: int = 200, typed_texts: dict[int, str] | None = None, draft: dict[str, Any] | None = None,
          draft_still: bytes | None = None, typed_note: str | None = None,
          typed_track: dict[str, str] | None = None, clip_problems: dict[str, str] | None = None,
          clip_typed: dict[str, str] | None = None) -> Any:
    """The video's page; ``draft`` and ``draft_still``: the fields form's Play preview, answered
    without JavaScript (``reelfarm.console.pages.drafts``); ``typed_track``: the soundtrack as
    the fields form had it, with its captions (``library.Posted.track``); ``clip_problems`` and ``clip_typed``: a
    refused start, by clip id, and what was typed."""
    svc = web.services()
    ws = g.workspace.id
    video = svc.videos.get(ws, video_id)
    renders = svc.renders.list_for_video(ws, video_id)
    versions = svc.videos.versions(ws, video_id)
    copies = svc.read_models.translations(ws, video_id)
    still_job = _still_job(ws, video_id, video["current_version"]["id"] if video["current_version"] else None)
    fields = svc.read_models.current_fields(ws, video_id)
    if fields is None and video["story_id"]:  # a document edit: the story values it was made from
        fields = _story_values(ws, video_id, versions)
    controls = _controls(video, typed if typed is not None else fields)
    texts = _texts(video, typed_texts) if controls is None else None
    offered = library.offered(svc, ws, controls) if controls is not None else None
    track = typed_track if typed_track is not None else library.typed_common(fields)
    anchor = _busy_anchor(video, renders, still_job, copies)
    shown = _by_version(video, renders, versions, request.args.get("play"))
    return render_template(
        "console/video.html", v=video, version=video["current_version"], versions=versions, **shown,
        **_preview(video, shown["renders"], still_job), played_asked=bool(request.args.get("play")),
        history=_history(ws, video),
        copies=copies, job=video["job"], still=still_job, controls=controls, problems=found or {}, texts=texts,
        formats=FORMATS, resolutions=RESOLUTIONS, locales=[(tag, locale_label(tag)) for tag in _locales(video)],
        language=locale_label,
        locale_plan=plans.allows_locales(g.workspace.plan),
        cost=credits_for(video["duration_sec"] or 0), refresh=REFRESH_SEC if anchor is not None else None,
        draft=draft, draft_still=_data_png(draft_still), typed_note=typed_note, library=offered, track=track,
        refresh_anchor=anchor, title=video["title"], clips=clips.on_page(video, fields),
        clip_problems=clip_problems or {}, clip_typed=clip_typed or {}), status


def _history(ws: str, video: VideoResource) -> dict[int, list[history.Change]]:
    """What each version changed against the one before it (``reelfarm.console.history``)."""
    schema = get_story(video["story_id"]).fields if video["story_id"] else None
    return history.changes(schema, web.services().videos.videos.versions(ws, video["id"]))


def _preview(video: VideoResource, mine: Sequence[Mapping[str, Any]], still: JobResource | None) -> dict[str, Any]:
    """What the preview area opens on: the still asked for or last drawn of the current version,
    else the poster of the current version's render in the video's format (or in any), else none
    yet (``poster_time``: when the script asks for one, the moment the first scene has settled);
    ``still_time``: where the time slider stands; ``still_of``: the number of the version the
    still shows (an older one's, asked for from the Versions table)."""
    version = video["current_version"]
    posters = [r for r in mine if r["status"] == "succeeded" and r["poster_url"]]
    poster = next((r for r in posters if r["format"] == video["default_format"]), None) or next(iter(posters), None)
    settled = round(poster_time(as_doc(version["doc"])), 1) if version else 1.0
    shot = ((still["result"] if still else None) or {}).get("stills") or []
    of = request.args.get("of", "")
    return {"poster": {"url": poster["poster_url"], "format": poster["format"]} if poster else None,
            "poster_time": settled, "still_time": float(shot[0]["time"]) if shot else settled,
            "still_of": int(of) if of.isdigit() and len(of) < 10 else None}


def _story_values(ws: str, video_id: str, versions: Sequence[VersionResource]) -> dict[str, Any] | None:
    """The story values of the newest version that has them (None when none has)."""
    for version in sorted(versions, key=lambda v: v["number"], reverse=True):
        if version["source"] == "doc":  # none to read
            continue
        found = web.services().videos.version_fields(ws, video_id, version["number"])
        if found is not None:
            return found
    return None


def _data_png(png: bytes | None) -> str | None:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii") if png else None


def _by_version(video: VideoResource, renders: Sequence[Mapping[str, Any]], versions: Sequence[VersionResource],
                asked: str | None = None) -> dict[str, Any]:
    """The renders as the page shows them, each labelled with its version's number (``version``):
    the current version's (``renders``, newest first), the one the player shows (its newest that
    succeeded, or that is rendering with a stream to watch: the part rendered so far plays, and the
    MP4 takes over where it left off once it succeeds: the one ``asked`` for (``?play=``), else the
    newest in the video's format, else the newest in any), older versions' (``older``, out of date) and,
    for those, which format and
    resolution the current version has already started or made (``covered``)."""
    numbers = {v["id"]: v["number"] for v in versions}
    current = video["current_version"]["id"] if video["current_version"] else None
    labelled = [{**r, "version": numbers.get(r["version_id"]),
                 "file_name": _file_name(video["title"], r, numbers.get(r["version_id"]))} for r in renders]
    mine = [r for r in labelled if r["version_id"] == current]
    covered = {_kind(r) for r in mine if r["status"] in ACTIVE_RENDER_STATUSES}
    older, offered = [r for r in labelled if r["version_id"] != current], set(covered)
    for r in older:  # one "Render version N in 9:16 720p" button per format, resolution and container, on the newest
        r["offer"] = _kind(r) not in offered
        offered.add(_kind(r))
    return {"renders": mine, "older": older, "covered": covered,
            "player": _player(labelled, current, video["default_format"], asked)}


def _kind(render: Mapping[str, Any]) -> tuple[str, int, str]:
    """What makes two renders of a version the same file: format, resolution and container."""
    return render["format"], render["resolution"], render.get("container") or "mp4"


def _file_name(title: str, render: Mapping[str, Any], number: int | None) -> str:
    """What the Download link saves a render as: the video's title as it is written, then its
    version, format and resolution, with its container's extension (``Spring sale v2 9x16
    1080p.mp4``, ``... 720p.gif``), so two versions' files never share a name."""
    version = f" v{number}" if number else ""
    extension = render.get("container") or "mp4"
    return f"{title.replace('/', '-')}{version} {render['format'].replace(':', 'x')} {render['resolution']}p.{extension}"


def _player(renders: list[dict[str, Any]], current: str | None, fmt: str, asked: str | None) -> dict[str, Any] | None:
    """The render the player shows: the one asked for (any version's, finished or rendering: its
    Watch or Play link), else the current version's newest in the video's format, else in any."""
    playable = [r for r in renders if ((r["status"] == "succeeded" and r["url"])
                or (r["status"] in LIVE and r.get("stream_url"))) and r.get("container") != "gif"]  # no <video> of a GIF
    mine = [r for r in playable if r["version_id"] == current]
    return next((r for r in playable if r["id"] == asked), None) or \
        next((r for r in mine if r["format"] == fmt), None) or next(iter(mine), None)


def _busy_anchor(video: VideoResource, renders: Sequence[Mapping[str, Any]], still_job: Mapping[str, Any] | None,
                 copies: list[dict[str, Any]]) -> str | None:
    """Where a page that refreshes itself (no JavaScript) should stay: the part still working, or
    None when nothing is."""
    if any(r["status"] in LIVE for r in renders):
        return "#renders"
    if still_job is not None and still_job["status"] in LIVE:
        return "#preview"
    if any(c["status"] in VIDEO_IN_THE_MAKING for c in copies):
        return "#translations"
    return "" if video["status"] == "generating" else None


def _still_job(ws: str, video_id: str, version_id: str | None) -> JobResource | None:
    """The still the preview shows: the one asked for, else the latest of the current version (an
    older version's still would show what the video no longer is)."""
    asked = request.args.get("still", "")
    if not is_uuid(asked):
        latest = web.services().read_models.latest_job(ws, video_id, "stills")
        asked = latest["id"] if latest and latest["version_id"] in (None, version_id) else ""
    if not asked:
        return None
    job = web.services().jobs.get(ws, asked)
    return job if job.get("kind") == "stills" else None


def _controls(video: VideoResource, values: dict[str, Any] | None) -> list[forms.Control] | None:
    if not video["story_id"] or video["current_version"] is None:
        return None
    return forms.controls(get_story(video["story_id"]).fields, values)


def _texts(video: VideoResource, typed: dict[int, str] | None) -> list[dict[str, Any]] | None:
    """The texts of a video with no story fields (a translated copy, a document edit), to correct
    them: each distinct text once, with what was typed when a save was refused."""
    version = video["current_version"]
    if version is None or not version.get("doc"):
        return None
    return [{"index": t.index, "label": t.label, "places": t.places, "multiline": t.multiline, "max": t.max_length,
             "value": (typed or {}).get(t.index, t.text)} for t in doc_texts(version["doc"])]


def _number(video: VideoResource) -> int:
    """The number of the version an edit just made (an edited video always has one)."""
    version = video["current_version"]
    assert version is not None, "an edit answers the video with its new version"
    return version["number"]


def _locales(video: VideoResource) -> list[str]:
    """The languages this video can be translated into (not its own)."""
    from reelfarm.farm.services.jobs import published_locales

    version = video["current_version"]
    own = (video["locale"] or (version["doc"].get("locale") if version else None) or "en").split("-")[0]
    # an engine that cannot list its languages gives none: the page shows without the menu
    tags = published_locales(web.services().jobs.studio.translators)
    return [t for t in tags if t.split("-")[0].lower() != own.lower()]


@blp.route("/videos/<video_id>/status.json")
@web.signed_in
def video_status(video_id: str) -> Any:
    """What the page's script polls: the video's state, its renders and its jobs."""
    svc = web.services()
    ws = g.workspace.id
    video = svc.videos.get(ws, _video_id(video_id))
    copies = svc.read_models.translations(ws, video_id)
    version = video["current_version"]
    return jsonify({"status": video["status"], "version": version["number"] if version else None,
                    "job": video["job"], "renders": svc.renders.list_for_video(ws, video_id),
                    "copies": [{"id": c["id"], "status": c["status"], "locale": c["locale"]} for c in copies]})


@blp.route("/jobs/<job_id>.json")
@web.signed_in
def job_status(job_id: str) -> Any:
    """A job, as the page's script follows it; a still carries a ``download_url`` too, saving it as
    ``<name> <time> s.png`` (``name``: the page's title for it)."""
    if not is_uuid(job_id):
        abort(404)
    job = web.services().jobs.get(g.workspace.id, job_id)
    name = request.args.get("name", "")[:200] or "still"
    for still in ((job.get("result") or {}).get("stills") or []) if job["kind"] == "stills" else []:
        still["download_url"] = download_url(still["url"], f"{name} {still['time']:g} s.png")
    return jsonify(job)


@blp.route("/videos/<video_id>/renders", methods=["POST"])
@web.signed_in
def render_create(video_id: str) -> Any:
    fmt = request.form.get("format", "")
    try:
        resolution = int(request.form.get("resolution", "1080"))
    except ValueError:
        abort(400, description="Choose one of the listed resolutions.")
    container = request.form.get("container") or "mp4"
    transparent = container == TRANSPARENT_WEBM  # the choice "WebM, transparent": VP9 with alpha
    container = "webm" if transparent else container
    if container not in CONTAINER_NAMES:
        abort(400, description="Choose MP4, GIF, WebM or transparent WebM.")
    render = web.services().renders.request(g.workspace.id, _video_id(video_id), fmt, resolution, container=container,
                                            transparent=transparent)
    if _wants_json():
        return jsonify(render), 202
    lowered = f" (a GIF is made at {render['resolution']}p at most)" if render["resolution"] != resolution else ""
    alpha = ", transparent" if transparent else ""
    flash(f"Rendering {fmt} at {render['resolution']}p as {CONTAINER_NAMES[container]}{alpha}{lowered}.", "ok")
    return _back(video_id, "#renders")


@blp.route("/renders/<render_id>/cancel", methods=["POST"])
@web.signed_in
def render_cancel(render_id: str) -> Any:
    if not is_uuid(render_id):
        abort(404)
    render = web.services().renders.cancel(g.workspace.id, render_id)
    flash("The render is canceled; its credits are refunded.", "ok")
    return _back(render["video_id"], "#renders")


@blp.route("/videos/<video_id>/stills", methods=["POST"])
@web.signed_in
def still_create(video_id: str) -> Any:
    try:
        time = float(request.form.get("time", "0"))
    except ValueError:
        abort(400, description="The time must be a number of seconds.")
    fmt = request.form.get("format") or None
    number = _posted_version("version")  # a still of an older version (the Versions table's Show still)
    job = web.services().jobs.request_stills(g.workspace.id, _video_id(video_id), [time], fmt, number=number)
    if _wants_json():
        return jsonify(job), 202
    of: dict[str, Any] = {} if number is None else {"of": number}
    return redirect(url_for("console.video", video_id=video_id, still=job["id"], **of) + "#preview", code=303)


@blp.route("/videos/<video_id>/clips/<asset_id>/start", methods=["POST"])
@web.signed_in
def clip_start(video_id: str, asset_id: str) -> Any:
    """Start a clip of the video at the second posted (``start``), as a version made from the one
    posted (``version``); refused beside its control when the clip has no such second."""
    if not is_uuid(asset_id):
        abort(404)
    video = web.services().videos.get(g.workspace.id, _video_id(video_id))
    typed = request.form.get("start", "")
    before = _number(video)
    updated, why = clips.saved_start(video, asset_id, typed, _posted_version("version"))
    if updated is None:
        return _page(video_id, status=400, clip_problems={asset_id: why or ""}, clip_typed={asset_id: typed[:40]})
    version = updated["current_version"]
    if version is None or version["number"] == before:
        flash("The clip starts there already; nothing changed, so no version was made.", "ok")
    else:
        flash(f"Saved as version {version['number']}: {version['note']}.", "ok")
    return _back(video_id, "#clips")


@blp.route("/videos/<video_id>/fields", methods=["POST"])
@web.signed_in
def fields_update(video_id: str) -> Any:
    svc = web.services()
    video = svc.videos.get(g.workspace.id, _video_id(video_id))
    if not video["story_id"]:
        abort(404)
    story = get_story(video["story_id"])
    opened_at = _posted_version("version")
    read = library.posted(svc, g.workspace.id, story.fields, request.form, request.files, clear_track=True)
    values = read.values
    note = request.form.get("note", "").strip()
    note_error = forms.too_long("Note", note, MAX_NOTE)
    if read.unreadable or note_error or read.problems:  # every problem at once: the story's checks of the rest too
        found = library.track_problems(problems.explain(story.fields, values, validate_fields(story, values),
                                                        unreadable=read.unreadable))
        for name, message in read.problems.items():
            found.setdefault(name, message)
        if note_error:
            found["note"] = note_error
        return _page(video_id, found, forms.typed(story.fields, read.form), 400, typed_note=note,
                     typed_track=read.track)
    current = svc.read_models.current_fields(g.workspace.id, video_id) or {}
    changed = {name: value for name, value in values.items() if current.get(name) != value}
    if found := images.image_problems(svc.settings, story.fields, changed):  # addresses changed: checked
        return _page(video_id, found, values, 400, typed_note=note, typed_track=read.track)
    try:
        updated = svc.videos.update(g.workspace.id, video_id, fields=values, note=note or None,
                                    based_on=None if opened_at is None else {opened_at})
        updated = _kept(video, updated)
    except InvalidFieldsError as exc:
        return _page(video_id, library.track_problems(problems.explain(story.fields, values, exc.details)), values,
                     400, typed_note=note, typed_track=read.track)
    except VersionConflict:
        assert opened_at is not None  # only an edit that names its version is refused for it
        return _conflict(video_id, story, opened_at, values, note)
    _saved(updated, opened_at if opened_at is not None else _number(video))
    return _back(video_id, "#versions")


@blp.route("/videos/<video_id>/fields/resolve", methods=["POST"])
@web.signed_in
def fields_resolve(video_id: str) -> Any:
    """The choice on the page of a fields save that met a newer version (``_conflict``): ``merge``
    applies the fields this person changed onto the version shown, ``overwrite`` saves their values
    as they are; either is refused again, with a new comparison, if yet another version landed."""
    svc = web.services()
    ws = g.workspace.id
    video = svc.videos.get(ws, _video_id(video_id))
    if not video["story_id"]:
        abort(404)
    story = get_story(video["story_id"])
    yours = conflicts.decode(request.form.get("yours", ""))
    opened_at, now, how = _posted_version("opened"), _posted_version("version"), request.form.get("resolve")
    note = request.form.get("note", "").strip()
    if yours is None or opened_at is None or now is None or how not in ("merge", "overwrite") or \
            forms.too_long("Note", note, MAX_NOTE):
        abort(400, description="The form was incomplete; open the video again and make the change again.")
    values = conflicts.merged(svc.videos.version_fields(ws, video_id, opened_at) or {}, yours) \
        if how == "merge" else yours
    current = svc.read_models.current_fields(ws, video_id) or {}
    changed = {name: value for name, value in values.items() if current.get(name) != value}
    if found := images.image_problems(svc.settings, story.fields, changed):
        return _page(video_id, found, {**current, **values}, 400, typed_note=note)
    try:
        updated = svc.videos.update(ws, video_id, fields=values, note=note or None, based_on={now})
        updated = _kept(video, updated)
    except InvalidFieldsError as exc:
        return _page(video_id, library.track_problems(problems.explain(story.fields, values, exc.details)),
                     {**current, **values}, 400, typed_note=note)
    except VersionConflict:
        return _conflict(video_id, story, opened_at, yours, note)
    _saved(updated, now, "Merged your changes into" if how == "merge" else "Saved your values over")
    return _back(video_id, "#versions")


def _kept(before: VideoResource, updated: VideoResource) -> VideoResource:
    """After a fields save: the clips' starts of the version it replaced, kept (``clips.keep_starts``)."""
    if before["current_version"] is None or _number(updated) == before["current_version"]["number"]:
        return updated
    return clips.keep_starts(before["id"], before["current_version"]["doc"], updated)


def _posted_version(name: str) -> int | None:
    """The version number a form carries in ``name``; None when it has none (a page from before
    forms carried it), 400 when it is not a number."""
    text = request.form.get(name)
    if text is None:
        return None
    if not text.isdigit() or not 1 <= int(text) <= 2**31 - 1:
        abort(400, description="The form named no version; open the video again and make the change again.")
    return int(text)


def _saved(updated: VideoResource, based_on: int, how: str | None = None) -> None:
    number = _number(updated)
    if number == based_on:
        flash("Nothing changed, so no version was made.", "ok")
    elif how:
        flash(f"{how} version {based_on}: saved as version {number}.", "ok")
    else:
        flash(f"Saved as version {number}.", "ok")


def _conflict(video_id: str, story: Story, opened_at: int, yours: dict[str, Any], note: str) -> Any:
    """The page of a fields save made from version ``opened_at`` when a newer one is current: each
    field either save changed, and the choice to merge or overwrite (``fields_resolve``); when this
    person changed nothing, their save is dropped and the page says so."""
    svc = web.services()
    ws = g.workspace.id
    video = svc.videos.get(ws, video_id)
    now = _number(video)
    opened = svc.videos.version_fields(ws, video_id, opened_at) or {}
    changes = conflicts.compare(story.fields, opened, yours, svc.videos.version_fields(ws, video_id, now) or {})
    if not any(c.mine for c in changes):
        flash(f"Version {now} was saved while you had the page open; you had changed nothing, so it is kept as it "
              "is.", "ok")
        return _back(video_id, "#fields")
    saved_since = [v for v in svc.videos.versions(ws, video_id) if v["number"] > opened_at]
    return render_template(
        "console/video_conflict.html", v=video, opened_at=opened_at, now=now, changes=changes,
        saved_since=saved_since, yours=conflicts.encode(yours), note=note, shown=conflicts.shown,
        mine=sum(c.mine for c in changes), others=sum(c.other and c.yours != c.now for c in changes),
        title=video["title"]), 409


@blp.route("/videos/<video_id>/texts", methods=["POST"])
@web.signed_in
def texts_update(video_id: str) -> Any:
    """Correct the texts of a video that has no story fields (a translated copy): a new version."""
    typed = {int(key[2:]): value for key, value in request.form.items()
             if key.startswith("t.") and key[2:].isdigit() and len(key) < 10}
    try:
        based_on = int(request.form.get("version", ""))
    except ValueError:
        abort(400, description="The form had no version; reload the page and try again.")
    note = request.form.get("note", "").strip()
    if note_error := forms.too_long("Note", note, MAX_NOTE):  # with the texts' own problems, all at once
        current = web.services().videos.get(g.workspace.id, _video_id(video_id))["current_version"]
        doc = current["doc"] if current else None
        found = {f"t.{i}": message for i, message in text_problems(doc or {}, typed).items()}
        return _page(video_id, {**found, "note": note_error}, status=400, typed_texts=typed, typed_note=note)
    try:
        updated = web.services().videos.update_texts(g.workspace.id, _video_id(video_id), typed, based_on=based_on,
                                                     note=note or None)
    except InvalidRequest as exc:
        found = {"t." + str(d["field"]).rsplit("/", 1)[-1]: str(d["message"]) for d in exc.details}
        return _page(video_id, found, status=400, typed_texts=typed, typed_note=note)
    if _number(updated) == based_on:
        flash("Nothing changed, so no version was made.", "ok")
    else:
        flash(f"Saved as version {_number(updated)}.", "ok")
    return _back(video_id, "#versions")


@blp.route("/videos/<video_id>/versions/<int:number>/restore", methods=["POST"])
@web.signed_in
def version_restore(video_id: str, number: int) -> Any:
    if not 1 <= number <= 2**31 - 1:
        abort(404)
    opened_at = _posted_version("version")
    restored = web.services().videos.restore(g.workspace.id, _video_id(video_id), number,
                                             based_on=None if opened_at is None else {opened_at})
    flash(f"Version {number} restored as version {_number(restored)}.", "ok")
    return _back(video_id, "#versions")


@blp.route("/videos/<video_id>/translations", methods=["POST"])
@web.signed_in
def translation_create(video_id: str) -> Any:
    locale = request.form.get("locale", "")
    svc = web.services()
    if not plans.allows_locales(g.workspace.plan):
        raise PlanFeatureUnavailable("Translated copies need the Pro or Agency plan.")
    svc.jobs.check_translations(g.workspace.id, _video_id(video_id), [locale])
    svc.jobs.request_translations(g.workspace.id, video_id, [locale])
    flash(f"Translating into {locale_label(locale)}: the copy appears below.", "ok")
    return _back(video_id, "#translations")


@blp.route("/videos/<video_id>/archive", methods=["POST"])
@web.signed_in
def video_archive(video_id: str) -> Any:
    web.services().videos.archive(g.workspace.id, _video_id(video_id))
    flash("The video is archived: it can be watched but no longer changed or rendered.", "ok")
    return _back(video_id)
