"""The media library: a workspace's uploaded images, sounds, videos and captions files, the same ``AssetService`` as ``/api/v1/assets``.

Uploads work without JavaScript: the form's ``<input type=file multiple>`` posts every file at
once to ``/app/media``, each stored or refused on its own (a refused one stores nothing; the
reasons are named beside the upload). With JavaScript, ``static/console/media.js`` sends each
picked or dropped file alone to ``/app/media/upload.json`` with its progress shown (a bar, and the
megabytes sent of a large file such as a clip), then reloads the list. A file is judged by its bytes (``reelfarm.farm.services.media``), never its name.

Each asset shows its name (the file's, which a small form beside it changes; a file kept without
one is called by its kind and the day it came), its thumbnail (an image's keeps its transparency,
shown over a checkerboard) or a sound's player and duration, a captions file's cue count and length
(its last cue's end; a file refused names the line that is wrong), its kind and size, and where it is used
(the videos, by title, and brand kits, by name, that name it, each linked). A search box (``?q=``)
lists those whose name holds what is typed. Deleting asks first: without JavaScript on a page of its
own (``GET /media/<id>/delete``), with it in a dialog; one in use is not deleted, and that page
says which videos and brand kits use it.
"""

from __future__ import annotations

from typing import Any

from flask import abort, flash, g, jsonify, redirect, render_template, request, url_for
from werkzeug.datastructures import FileStorage

from reelfarm.console import library, web
from reelfarm.console.blueprint import blp
from reelfarm.farm.services.errors import InvalidRequest, QuotaExceeded, StateConflict
from reelfarm.farm.services.media import MAX_CAPTIONS_BYTES, MAX_UPLOAD_BYTES, MAX_VIDEO_SIDE
from reelfarm.farm.services.media_names import MAX_NAME_CHARS
from reelfarm.farm.services.media_sizes import file_size
from reelfarm.shared.errors import NotFound
from reelfarm.shared.ids import is_uuid

PAGE_SIZE = 24
KINDS = {"image": "Images", "audio": "Sounds", "video": "Videos", "captions": "Captions"}
MAX_FILES = 20  # files in one post without JavaScript
UPLOAD_BODY_BYTES = MAX_FILES * MAX_UPLOAD_BYTES  # read whole, so a file over its limit is named, not a 413 page


def _kind() -> str | None:
    kind = request.args.get("kind") or None
    return kind if kind in KINDS else None


def _query() -> str:
    """What the search box holds, as searched: white space made one space, at most a name long."""
    return " ".join(request.args.get("q", "").split())[:MAX_NAME_CHARS]


def _back(asset_id: str = "") -> str:
    """Where a form of the page goes back to: the page it was sent from (its ``back``), at the file."""
    back = request.form.get("back", "") or request.args.get("back", "")
    target = back if back.startswith("/app/media") and not back.startswith("/app/media/") else url_for("console.media")
    return f"{target}#asset-{asset_id}" if asset_id else target


blp.add_app_template_filter(library.asset_label, "asset_label")


def _duration(sec: float | None) -> str:
    if sec is None:
        return ""
    whole = round(sec)
    return f"{whole // 60}:{whole % 60:02d}"


def _uses(assets: list[dict[str, Any]]) -> dict[str, list[dict[str, str]]]:
    """Per asset id, what names it: each a label and a link (videos by title, kits by name)."""
    svc = web.services()
    users = svc.assets.used_by(g.workspace.id, [a["id"] for a in assets])
    kits: dict[str, str] | None = None
    titles: dict[str, str] = {}
    uses: dict[str, list[dict[str, str]]] = {}
    for asset_id, found in users.items():
        listed: list[dict[str, str]] = []
        for video_id in found["videos"]:
            if video_id not in titles:
                try:
                    titles[video_id] = svc.videos.get(g.workspace.id, video_id).get("title") or "Untitled video"
                except NotFound:
                    titles[video_id] = "a deleted video"
            listed.append({"label": f"Video: {titles[video_id]}", "href": url_for("console.video", video_id=video_id)})
        if found["brand_kits"] and kits is None:
            kits = {k["id"]: k["name"] for k in svc.brand_kits.list(g.workspace.id)}
        for kit_id in found["brand_kits"]:
            listed.append({"label": f"Brand kit: {(kits or {}).get(kit_id, kit_id)}",
                           "href": url_for("console.brand_kits", _anchor=f"kit-{kit_id}")})
        uses[asset_id] = listed
    return uses


def _page(status: int = 200, **extra: Any) -> Any:
    svc = web.services()
    kind, q = _kind(), _query()
    cursor = request.args.get("cursor") or None
    try:
        listed = svc.assets.list(g.workspace.id, PAGE_SIZE, cursor, kind, q)
    except InvalidRequest:  # a cursor from elsewhere: the first page
        cursor = None
        listed = svc.assets.list(g.workspace.id, PAGE_SIZE, None, kind, q)
    assets = listed["data"]
    usage = svc.assets.usage(g.workspace.id)
    return render_template("console/media.html", assets=assets, uses=_uses(assets), kind=kind, kinds=KINDS, q=q,
                           cursor=cursor, next_cursor=listed["next_cursor"], usage=usage, size=file_size,
                           duration=_duration, max_upload=MAX_UPLOAD_BYTES, max_files=MAX_FILES,
                           max_video_side=MAX_VIDEO_SIDE, max_captions=MAX_CAPTIONS_BYTES, **extra), status


def _refusal(exc: Exception) -> str:
    if isinstance(exc, InvalidRequest):
        return "; ".join(d.get("message", "") for d in exc.details) or str(exc)
    return str(exc)


def _store(file: FileStorage) -> tuple[dict[str, Any] | None, str | None, int]:
    """Store one uploaded file: (the asset, None, 201) or (None, why not, status)."""
    data = file.stream.read(MAX_UPLOAD_BYTES + 1)
    try:
        return web.services().assets.upload(g.workspace.id, data, file.filename), None, 201
    except QuotaExceeded as exc:
        return None, _refusal(exc), 413
    except InvalidRequest as exc:
        return None, _refusal(exc), 400


@blp.route("/media")
@web.signed_in
def media() -> Any:
    return _page()


@blp.route("/media", methods=["POST"])
@web.signed_in
def media_upload() -> Any:
    """Every file of the form, each stored or refused on its own; refusals named beside the upload."""
    files = [f for f in request.files.getlist("files") if f.filename]
    if not files:
        return _page(400, upload_errors=[{"name": "", "message": "Choose at least one file to upload."}])
    if len(files) > MAX_FILES:
        return _page(400, upload_errors=[{"name": "", "message": f"At most {MAX_FILES} files at once "
                                                                f"(this had {len(files)})."}])
    errors: list[dict[str, str]] = []
    stored = 0
    for file in files:
        asset, why, _status = _store(file)
        if asset is None:
            errors.append({"name": file.filename or "", "message": why or ""})
        else:
            stored += 1
    if errors:
        return _page(400 if not stored else 200, upload_errors=errors, uploaded=stored)
    flash(f"{stored} file{'' if stored == 1 else 's'} uploaded.", "ok")
    return redirect(url_for("console.media"), code=303)


@blp.route("/media/upload.json", methods=["POST"])
@web.signed_in
def media_upload_json() -> Any:
    """One file (the part ``file``), sent by a page's script (the Media page, an image field of the
    story or brand-kit form, with ``?kind=image``: a file of another kind refused): the asset (its id, kind, size, pixels or duration, thumbnail), or
    ``{"error": ...}``."""
    file = request.files.get("file")
    if file is None or not file.filename:
        return jsonify({"error": {"status": 400, "message": "No file was sent."}}), 400
    kind = request.args.get("kind", "")
    asset: dict[str, Any] | None
    why: str | None
    if kind in KINDS:  # an image field's upload: a file of another kind is refused, not stored
        asset, why, status = library.store(web.services(), g.workspace.id, library.read(file), kind, file.filename)
    else:
        asset, why, status = _store(file)
    if asset is None:
        return jsonify({"error": {"status": status, "message": why}}), status
    return jsonify({k: asset[k] for k in ("id", "name", "kind", "bytes", "key", "width", "height", "duration_sec",
                                          "cues", "thumbnail_url")}), 201


def _own(asset_id: str) -> dict[str, Any]:
    """The workspace's asset (404 for another's, or an id that is none)."""
    if not is_uuid(asset_id):
        abort(404)
    return web.services().assets.get(g.workspace.id, asset_id)


@blp.route("/media/<asset_id>/rename", methods=["POST"])
@web.signed_in
def media_rename(asset_id: str) -> Any:
    """A new name for a file; a name that cannot be one is flashed, the old one kept."""
    _own(asset_id)
    try:
        asset = web.services().assets.rename(g.workspace.id, asset_id, request.form.get("name", ""))
    except InvalidRequest as exc:
        flash(f"The name is not changed: {_refusal(exc)}.", "error")
    else:
        flash(f"Renamed to “{asset['name']}”.", "ok")
    return redirect(_back(asset_id), code=303)


def _confirm_page(asset: dict[str, Any], status: int = 200) -> Any:
    return render_template("console/media_delete.html", asset=asset, uses=_uses([asset]).get(asset["id"], []),
                           back=_back(), size=file_size, duration=_duration), status


@blp.route("/media/<asset_id>/delete")
@web.signed_in
def media_delete_confirm(asset_id: str) -> Any:
    """Whether to delete the file: asked before it is done (or, for a file in use, why it cannot be)."""
    return _confirm_page(_own(asset_id))


@blp.route("/media/<asset_id>/delete", methods=["POST"])
@web.signed_in
def media_delete(asset_id: str) -> Any:
    """Delete, as confirmed; refused while a version or a brand kit names it (409: the confirmation
    page, naming them)."""
    asset = _own(asset_id)
    try:
        web.services().assets.delete(g.workspace.id, asset_id)
    except StateConflict:
        return _confirm_page(asset, 409)
    flash(f"“{library.asset_label(asset)}” is deleted.", "ok")
    return redirect(_back(), code=303)
