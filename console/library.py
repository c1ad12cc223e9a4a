"""The media library in the story form and the brand-kit form: upload an image, or choose one.

Every image field of a story form (``format: uri``) offers, beside its address, a file input
``upload.<field>`` and a list of the workspace's images ``pick.<field>`` (radio buttons with
thumbnails and file names, ``asset_label``, the first, "keep what is above", checked). Without JavaScript the form posts all of
them (``multipart/form-data``) and ``chosen`` reads them, in this order: an uploaded file is stored
in the library and its asset's id becomes the field's value; else a picked image's id does; else
the address (or id) typed. With JavaScript (``static/console/library.js``) a picked file is
uploaded at once (``/app/media/upload.json``) and added to the list, checked, and a picked image
puts its id in the field, so the live preview draws it at once.

The soundtrack (``soundtrack.asset_id``: a ``<select>`` of the workspace's sounds; volume in
percent; fades in seconds) becomes the ``soundtrack`` field every story accepts
(``reelfarm.studio.stories.fields.SOUNDTRACK_SCHEMA``: volume 0 to 1). The captions (a captions
file of the library, its style, position and size: ``reelfarm.console.captions``) become the
``captions`` field every story accepts; the form shows both as typed (``Posted.track``, the captions
under its ``captions``).

Every video field (a clip: ``reelfarm.studio.stories.fields.video``, never an address) offers
the workspace's videos as radio buttons named as the field (``f.<field>``), each with its poster,
length and size, and "no clip" first; a video's id the form holds that is not among the newest
listed is offered too when it is the workspace's own.

Only the workspace's own assets are listed, and ``unknown`` refuses any other id beside its field
(another workspace's id reads as no asset at all), before a preview is drawn or a video made.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from werkzeug.datastructures import FileStorage, MultiDict

from reelfarm.console import forms
from reelfarm.console.captions import CAPS, CHOICE_WORDS, DEFAULTS, captions_problem, read_captions, typed_captions
from reelfarm.console.forms import PREFIX, label_at
from reelfarm.farm.services.errors import InvalidRequest, QuotaExceeded
from reelfarm.farm.services.media import MAX_UPLOAD_BYTES, MediaRefused, probe
from reelfarm.shared.errors import NotFound
from reelfarm.studio.stories.fields import CAPTIONS, SOUNDTRACK, SOUNDTRACK_SCHEMA, is_asset_id

PICK = "pick."
UPLOAD = "upload."
TRACK = "soundtrack."
LISTED = 48  # the newest images (and sounds) a form lists; the Media page has them all
IMAGE_TYPES = "image/png,image/jpeg,image/webp,image/svg+xml"
_TRACK = SOUNDTRACK_SCHEMA["properties"]
MAX_FADE_SEC = float(_TRACK["fade_in_sec"]["maximum"])
# the form's names of the soundtrack's parts, and the field's own keys
TRACK_KEYS = {"asset_id": "asset_id", "volume": "volume", "fade_in": "fade_in_sec", "fade_out": "fade_out_sec"}
TRACK_LABELS = {"asset_id": "Soundtrack", "volume": "Volume", "fade_in": "Fade in", "fade_out": "Fade out"}


def image_fields(schema: Mapping[str, Any]) -> list[str]:
    """The names of a story's image fields (its ``format: uri`` properties)."""
    return [name for name, prop in (schema.get("properties") or {}).items() if prop.get("format") == "uri"]


def video_fields(schema: Mapping[str, Any]) -> list[str]:
    """The names of a story's video fields (``forms.kind_of`` reads them as ``video``)."""
    return [name for name, prop in (schema.get("properties") or {}).items() if forms.kind_of(prop)[0] == "video"]


def listed(services: Any, workspace_id: str, kind: str) -> dict[str, Any]:
    """The newest ``LISTED`` assets of ``kind``: ``{"assets": [...], "more": whether there are others}``."""
    found = services.assets.list(workspace_id, LISTED, None, kind)
    return {"assets": found["data"], "more": bool(found["next_cursor"])}


def known(services: Any, workspace_id: str, ids: list[str], assets: list[dict[str, Any]]) -> dict[str, Any]:
    """The workspace's assets by id: those listed, and those of ``ids`` (values a form holds) that are its own."""
    found = {a["id"]: a for a in assets}
    for asset_id in ids:
        if is_asset_id(asset_id) and asset_id not in found:
            try:
                found[asset_id] = services.assets.get(workspace_id, asset_id)
            except NotFound:
                continue
    return found


KIND_WORDS = {"image": "Image", "audio": "Sound", "video": "Video"}


def asset_label(asset: Mapping[str, Any]) -> str:
    """What a person calls a library file: its name, or for one kept without a name its kind and
    the day and minute it came (``Image uploaded 2026-03-01 10:00``)."""
    if asset.get("name"):
        return str(asset["name"])
    created = asset.get("created_at")
    when = f" uploaded {created.strftime('%Y-%m-%d %H:%M')}" if isinstance(created, datetime) else ""
    return f"{KIND_WORDS.get(str(asset.get('kind')), 'File')}{when}"


def read(file: FileStorage) -> bytes:
    """An uploaded file's bytes, up to one more than an upload may have (so that it is refused)."""
    return file.stream.read(MAX_UPLOAD_BYTES + 1)


def store(services: Any, workspace_id: str, data: bytes, kind: str,
          filename: str | None = None) -> tuple[dict[str, Any] | None, str, int]:
    """Store an uploaded file of ``kind`` in the library, named ``filename``: (the asset, "", 201)
    or (None, why not, 400 or 413 over the quota). A file of another kind is refused before
    anything is stored."""
    try:
        media = probe(data)
    except MediaRefused as exc:
        return None, exc.reason, 400
    if media.kind != kind:
        return None, f"this file is {_a(media.kind)}, not {_a(kind)}", 400
    try:
        return services.assets.upload(workspace_id, data, filename), "", 201
    except QuotaExceeded as exc:
        return None, str(exc), 413
    except InvalidRequest as exc:
        return None, "; ".join(d.get("message", "") for d in exc.details) or str(exc), 400


def _a(kind: str) -> str:
    return {"audio": "a sound", "video": "a video"}.get(kind, "an image")


def chosen(services: Any, workspace_id: str, schema: Mapping[str, Any], form: MultiDict[str, str],
           files: Mapping[str, FileStorage] | None) -> tuple[MultiDict[str, str], dict[str, str]]:
    """The form with each image field's value as chosen (an upload, else a picked image, else what
    was typed), and a message, by form name, for each upload refused (nothing of it stored).
    ``files``: the request's files, stored in the library; None (the live preview) stores nothing."""
    out = form.copy()
    problems: dict[str, str] = {}
    for name in image_fields(schema):
        key = PREFIX + name
        file = (files or {}).get(UPLOAD + name)
        if file is not None and file.filename:
            asset, why, _ = store(services, workspace_id, read(file), "image", file.filename)
            if asset is None:
                problems[key] = f"{label_at(schema, [name])}: the file {file.filename!r} is not stored: {why}"
            else:
                out[key] = asset["id"]
            continue
        pick = form.get(PICK + name, "").strip()
        if pick:
            out[key] = pick
    return out, problems


def read_soundtrack(form: Mapping[str, Any]) -> tuple[dict[str, Any] | None, dict[str, str], dict[str, str]]:
    """(the ``soundtrack`` field or None, a message by form name for each part that cannot be
    used, what was typed by part) from the form's ``soundtrack.*`` controls."""
    typed = {part: str(form.get(TRACK + part, "") or "").strip()[:80] for part in TRACK_KEYS}
    if not typed["asset_id"]:
        return None, {}, typed
    problems: dict[str, str] = {}
    value: dict[str, Any] = {"asset_id": typed["asset_id"]}
    for part, top, default in (("volume", 100.0, 100.0), ("fade_in", MAX_FADE_SEC, 0.0), ("fade_out", MAX_FADE_SEC, 0.0)):
        text = typed[part].rstrip("%").strip()
        try:
            number = float(text) if text else default
        except ValueError:
            problems[TRACK + part] = f"{TRACK_LABELS[part]}: '{typed[part]}' is not a number"
            continue
        if not 0 <= number <= top:
            unit = "%" if part == "volume" else " seconds"
            problems[TRACK + part] = f"{TRACK_LABELS[part]}: use 0 to {top:g}{unit}"
            continue
        value[TRACK_KEYS[part]] = round(number / 100, 4) if part == "volume" else number
    return (None if problems else value), problems, typed


def typed_common(fields: Mapping[str, Any] | None) -> dict[str, Any]:
    """The saved soundtrack and captions of ``fields`` as the form shows them (``Posted.track``)."""
    return {**typed_soundtrack((fields or {}).get(SOUNDTRACK)), CAPTIONS: typed_captions((fields or {}).get(CAPTIONS))}


def typed_soundtrack(value: Any) -> dict[str, str]:
    """A saved ``soundtrack`` field as the form shows it."""
    if not isinstance(value, Mapping):
        return {**{part: "" for part in TRACK_KEYS}, "fit": ""}
    return {"asset_id": str(value.get("asset_id", "")), "volume": f"{float(value.get('volume', 1)) * 100:g}",
            "fade_in": f"{float(value.get('fade_in_sec', 0)):g}", "fade_out": f"{float(value.get('fade_out_sec', 0)):g}",
            "fit": str(value.get("fit", ""))}


def own_image(services: Any, workspace_id: str, asset_id: str) -> dict[str, Any] | None:
    """The workspace's image of that id, or None (another workspace's reads as none)."""
    if not is_asset_id(asset_id):
        return None
    try:
        asset: dict[str, Any] = services.assets.get(workspace_id, asset_id)
    except NotFound:
        return None
    return asset if asset["kind"] == "image" else None


def unknown(services: Any, workspace_id: str, schema: Mapping[str, Any], values: Mapping[str, Any]) -> dict[str, str]:
    """A message, by form name, for each image field, soundtrack or captions naming an asset id that
    is no image (or sound, or captions file) of this workspace's library."""
    found: dict[str, str] = {}
    wanted = [(PREFIX + name, values.get(name), "image", label_at(schema, [name])) for name in image_fields(schema)]
    wanted += [(PREFIX + name, values.get(name), "video", label_at(schema, [name])) for name in video_fields(schema)]
    track = values.get(SOUNDTRACK)
    if isinstance(track, Mapping):
        wanted.append((TRACK + "asset_id", track.get("asset_id"), "audio", "Soundtrack"))
    shown = values.get(CAPTIONS)
    if isinstance(shown, Mapping):
        wanted.append((CAPS + "asset_id", shown.get("asset_id"), "captions", "Captions"))
    for form_name, asset_id, kind, label in wanted:
        if not is_asset_id(asset_id):
            continue
        try:
            asset = services.assets.get(workspace_id, asset_id)
        except NotFound:
            asset = None
        if asset is None or asset["kind"] != kind:
            what = {"audio": "sound", "video": "video", "captions": "captions file"}.get(kind, "image")
            found[form_name] = (f"{label}: no {what} of this workspace's media library has the id {asset_id}; "
                                f"upload the {what} or choose one from the library")
    return found


def track_problems(found: Mapping[str, str]) -> dict[str, str]:
    """The studio's problems with the soundtrack (``f.soundtrack...``) and the captions
    (``f.captions...``) under the form's names."""
    out: dict[str, str] = {}
    back = {v: k for k, v in TRACK_KEYS.items()}
    for name, message in found.items():
        if (shown := captions_problem(name, message)) is not None:
            out.setdefault(*shown)
        elif name == PREFIX + SOUNDTRACK or name.startswith(PREFIX + SOUNDTRACK + "."):
            part = back.get(name[len(PREFIX + SOUNDTRACK) + 1:], "asset_id")
            out[TRACK + part] = f"{TRACK_LABELS[part]}: {message.split(': ', 1)[-1]}"
        else:
            out[name] = message
    return out


@dataclass
class Posted:
    """A story form as posted: the form as chosen (``chosen``), the values read from it (the
    soundtrack among them), the messages of values that could not be read as their type
    (``forms.read``), and the library's own problems (refused uploads, ids that are no asset of
    the workspace, soundtrack and captions parts), each by form name; ``track``: the soundtrack as
    typed, and under ``captions`` the captions as chosen (``typed_common``'s shape)."""

    form: MultiDict[str, str]
    values: dict[str, Any]
    unreadable: dict[str, str]
    problems: dict[str, str] = field(default_factory=dict)
    track: dict[str, Any] = field(default_factory=dict)


def posted(services: Any, workspace_id: str, schema: Mapping[str, Any], form: MultiDict[str, str],
           files: Mapping[str, FileStorage] | None, *, clear_track: bool = False) -> Posted:
    """Read a story form with its library controls. ``files``: stored in the library (None: none
    are); ``clear_track``: "(none)" chosen as the sound (or the captions) sets the soundtrack (or
    the captions) to null (a saved video's form removes it), rather than leaving it out (a new video
    has none)."""
    chosen_form, refused = chosen(services, workspace_id, schema, form, files)
    values, unreadable = forms.read(schema, chosen_form)
    track, track_found, typed = read_soundtrack(chosen_form)
    if track is not None or (clear_track and TRACK + "asset_id" in chosen_form and not typed["asset_id"]):
        values[SOUNDTRACK] = track
    shown, shown_found, shown_typed = read_captions(chosen_form)
    if shown is not None or (clear_track and CAPS + "asset_id" in chosen_form and not shown_typed["asset_id"]):
        values[CAPTIONS] = shown
    found = {**unknown(services, workspace_id, schema, values), **track_found, **shown_found, **refused,
             **forms.read_fit(chosen_form, values, typed)}
    return Posted(chosen_form, values, unreadable, found, {**typed, CAPTIONS: shown_typed})


def offered(services: Any, workspace_id: str, controls: list[forms.Control]) -> dict[str, Any]:
    """What a story form's image fields, video fields, soundtrack and captions offer: the workspace's
    newest images, videos, sounds and captions files, and its own assets among the values the form
    holds (each shown by its thumbnail or poster)."""
    images = listed(services, workspace_id, "image")
    sounds = listed(services, workspace_id, "audio")
    shown = listed(services, workspace_id, "captions")
    held = [str(c.value) for c in controls if c.kind == "url" and c.value]
    offer: dict[str, Any] = {"images": images["assets"], "more_images": images["more"], "sounds": sounds["assets"],
                             "more_sounds": sounds["more"], "known": known(services, workspace_id, held, images["assets"]),
                             "accept": IMAGE_TYPES, "max_fade": MAX_FADE_SEC, "videos": [], "more_videos": False,
                             "captions": shown["assets"], "more_captions": shown["more"],
                             "caption_choices": CHOICE_WORDS, "caption_defaults": DEFAULTS}
    clips = [str(c.value) for c in controls if c.kind == "video" and c.value]
    if any(c.kind == "video" for c in controls):  # only a story with a clip field asks for the videos
        videos = listed(services, workspace_id, "video")
        own = known(services, workspace_id, clips, videos["assets"])
        offer["videos"] = videos["assets"] + [own[i] for i in dict.fromkeys(clips)
                                              if i in own and own[i]["kind"] == "video" and own[i] not in videos["assets"]]
        offer["more_videos"] = videos["more"]
    return offer
