"""Play preview: an animated draft of a story form's unsaved values, played as it is drawn.

The new video's story form and an existing video's fields form each have a Play preview button.
With JavaScript it posts the form here asking for JSON and gets the draft
(``reelfarm.farm.services.drafts``: 360p at 15 fps, nothing saved, no credit charged), or 400
with every problem; the script follows ``/app/drafts/<id>.json`` until its first segment is
stored, then plays its signed ``stream_url`` with hls.js (or the browser's own HLS). Without
JavaScript the button posts the form here and the page comes back with the still of the values
at the chosen time and the draft's player and link (browsers that play HLS themselves play it
there; any other opens the link in a player).

The existing video's fields form also has the story form's live still: the same script posts it
to ``/app/videos/<id>/fields/preview`` about 400 ms after the last change and shows the PNG, or
the problems beside their fields.

A draft has the sound its render would have (the soundtrack, looped or faded to fit as its form
says, and the clips' sound: ``reelfarm.farm.runtime.draft_tasks``); its player is not muted, and
the script plays it with sound where the browser lets a page do so after the click.

``/app/drafts/<id>.m3u8`` needs no session: its signature (over the draft, its workspace and its
expiry) is the key, as a render's ``stream_url`` is; a link made for another draft, tampered
with, or of a draft that is gone is refused.
"""

from __future__ import annotations

from typing import Any

from flask import Response, abort, g, jsonify, request

from reelfarm.console import forms, library, problems, web
from reelfarm.console.blueprint import blp
from reelfarm.console.pages import new_video, video
from reelfarm.renderer.hls import PLAYLIST_CONTENT_TYPE
from reelfarm.shared.ids import is_uuid
from reelfarm.studio.errors import InvalidFieldsError
from reelfarm.studio.previews import StoryDraft
from reelfarm.studio.resources import VideoResource
from reelfarm.studio.stories import get_story


def _uuid(value: str) -> str:
    if not is_uuid(value):
        abort(404)
    return value


# -- a new video's story form -----------------------------------------------------------------

@blp.route("/videos/new/<story_id>/draft", methods=["POST"])
@web.signed_in
def story_draft(story_id: str) -> Any:
    """Start a draft of the story form's values: JSON (202, or 400 with the problems), or the form
    again with the still and the draft's player."""
    story = new_video._story(story_id)
    draft, settings, found, form = new_video._checked(story, request.form,
                                                      None if video._wants_json() else request.files)
    if found:
        if video._wants_json():
            return jsonify({"problems": found}), 400
        return new_video._story_form(story, forms.controls(story.fields, forms.typed(story.fields, form)),
                                     settings, found, status=400)
    svc = web.services()
    made = svc.drafts.start(g.workspace.id, svc.previews.doc(g.workspace.id, draft), draft.format)
    if video._wants_json():
        return jsonify(_followed(made)), 202
    png = svc.previews.draw(g.workspace.id, draft, new_video._time(request.form))
    return new_video._story_form(story, forms.controls(story.fields, draft.fields), settings, preview=png,
                                 played=_followed(made))


# -- an existing video's fields form ----------------------------------------------------------

def _video_draft(video_id: str, files: Any = None) \
        -> tuple[StoryDraft, VideoResource, library.Posted, dict[str, str]]:
    """The draft an existing video's fields form holds, the video, the form as read, and every
    problem. ``files``: the form's uploads, stored in the library (None: none are)."""
    v = web.services().videos.get(g.workspace.id, _uuid(video_id))
    if not v["story_id"] or v["current_version"] is None:
        abort(404)
    story = get_story(v["story_id"])
    read = library.posted(web.services(), g.workspace.id, story.fields, request.form, files, clear_track=True)
    duration = float(v["current_version"]["doc"]["duration"])
    draft = StoryDraft(story.id, read.values, v["default_format"], duration, v["brand_kit_id"])
    details = web.services().previews.problems(g.workspace.id, draft)
    found = library.track_problems(problems.explain(story.fields, read.values, details, unreadable=read.unreadable))
    for name, message in read.problems.items():
        found.setdefault(name, message)
    return draft, v, read, found


@blp.route("/videos/<video_id>/fields/preview", methods=["POST"])
@web.signed_in
def fields_preview(video_id: str) -> Any:
    """The fields form's live still: a PNG of the values as posted, or 400 with every problem (JSON)."""
    draft, _, _, found = _video_draft(video_id)
    if found:
        return jsonify({"problems": found}), 400
    try:
        png = web.services().previews.draw(g.workspace.id, draft, new_video._time(request.form))
    except InvalidFieldsError as exc:
        return jsonify({"problems": library.track_problems(problems.explain(
            get_story(draft.story_id).fields, draft.fields, exc.details))}), 400
    return Response(png, mimetype="image/png")


@blp.route("/videos/<video_id>/draft", methods=["POST"])
@web.signed_in
def video_draft(video_id: str) -> Any:
    """Start a draft of the fields form's unsaved values (as ``story_draft`` answers)."""
    draft, v, read, found = _video_draft(video_id, None if video._wants_json() else request.files)
    story = get_story(draft.story_id)
    if found:
        if video._wants_json():
            return jsonify({"problems": found}), 400
        return video._page(v["id"], found, forms.typed(story.fields, read.form), 400, typed_track=read.track)
    svc = web.services()
    made = svc.drafts.start(g.workspace.id, svc.previews.doc(g.workspace.id, draft, v["locale"]), draft.format)
    if video._wants_json():
        return jsonify(_followed(made)), 202
    png = svc.previews.draw(g.workspace.id, draft, new_video._time(request.form))
    return video._page(v["id"], typed=read.values, draft=_followed(made), draft_still=png, typed_track=read.track)


# -- following and playing a draft -----------------------------------------------------------

def _followed(made: dict[str, Any]) -> dict[str, Any]:
    """The draft as the page's script follows it: with the address of its state."""
    return {**made, "status_url": f"/app/drafts/{made['id']}.json"}


@blp.route("/drafts/<draft_id>.json")
@web.signed_in
def draft_status(draft_id: str) -> Any:
    """The workspace's draft (404: another workspace's, or gone)."""
    return jsonify(_followed(web.services().drafts.get(g.workspace.id, _uuid(draft_id))))


@blp.route("/drafts/<draft_id>.m3u8")
def draft_playlist(draft_id: str) -> Any:
    """The draft's HLS playlist behind its signed link (no session: the signature is the key)."""
    made = web.services().drafts.playlist(_uuid(draft_id), request.args.get("expires", ""),
                                          request.args.get("sig", ""))
    if made is None:
        abort(403, description="This preview link is invalid; play the preview again for a fresh one.")
    shown_as = request.accept_mimetypes.best_match([PLAYLIST_CONTENT_TYPE, "text/plain"]) or PLAYLIST_CONTENT_TYPE
    return Response(made, mimetype=shown_as, headers={"Cache-Control": "no-cache"})
