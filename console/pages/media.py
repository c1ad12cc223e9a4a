"""The media library: a workspace's uploaded images and sounds, the same ``AssetService`` as ``/api/v1/assets``.

Uploads work without JavaScript: the form's ``<input type=file multiple>`` posts every file at
once to ``/app/media``, each stored or refused on its own (a refused one stores nothing; the
reasons are named beside the upload). With JavaScript, ``static/console/media.js`` sends each
picked or dropped file alone to ``/app/media/upload.json`` with its progress shown, then reloads
the list. A file is judged by its bytes (``reelfarm.farm.services.media``), never its name.

Each asset shows its thumbnail (an image) or a sound's duration, its kind and size, and where it
is used (the videos and brand kits that name it); deleting one in use is refused with the reason.
"""

from __future__ import annotations

from typing import Any

from flask import abort, flash, g, jsonify, redirect, render_template, request, url_for
from werkzeug.datastructures import FileStorage

from reelfarm.console import library, web
from reelfarm.console.blueprint import blp
from reelfarm.farm.services.errors import InvalidRequest, QuotaExceeded
from reelfarm.farm.services.media import MAX_UPLOAD_BYTES
from reelfarm.shared.errors import NotFound
from reelfarm.shared.ids import is_uuid

PAGE_SIZE = 24
KINDS = {"image": "Images", "audio": "Sounds", "video": "Videos"}
MAX_FILES = 20  # files in one post without JavaScript
UPLOAD_BODY_BYTES = MAX_FILES * MAX_UPLOAD_BYTES  # read whole, so a file over its limit is named, not a 413 page


def _kind() -> str | None:
    kind = request.args.get("kind") or None
    return kind if kind in KINDS else None


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.0f} KB"
    if n < 1024 ** 3:
        return f"{n / (1024 * 1024):.1f} MB".replace(".0 MB", " MB")
    return f"{n / 1024 ** 3:.1f} GB".replace(".0 GB", " GB")


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
    kind = _kind()
    cursor = request.args.get("cursor") or None
    try:
        listed = svc.assets.list(g.workspace.id, PAGE_SIZE, cursor, kind)
    except InvalidRequest:  # a cursor from elsewhere: the first page
        cursor = None
        listed = svc.assets.list(g.workspace.id, PAGE_SIZE, None, kind)
    assets = listed["data"]
    usage = svc.assets.usage(g.workspace.id)
    return render_template("console/media.html", assets=assets, uses=_uses(assets), kind=kind, kinds=KINDS,
                           cursor=cursor, next_cursor=listed["next_cursor"], usage=usage, size=_size,
                           duration=_duration, max_upload=MAX_UPLOAD_BYTES, max_files=MAX_FILES, **extra), status


def _refusal(exc: Exception) -> str:
    if isinstance(exc, InvalidRequest):
        return "; ".join(d.get("message", "") for d in exc.details) or str(exc)
    return str(exc)


def _store(file: FileStorage) -> tuple[dict[str, Any] | None, str | None, int]:
    """Store one uploaded file: (the asset, None, 201) or (None, why not, status)."""
    data = file.stream.read(MAX_UPLOAD_BYTES + 1)
    try:
        return web.services().assets.upload(g.workspace.id, data), None, 201
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
        asset, why, status = library.store(web.services(), g.workspace.id, library.read(file), kind)
    else:
        asset, why, status = _store(file)
    if asset is None:
        return jsonify({"error": {"status": status, "message": why}}), status
    return jsonify({k: asset[k] for k in ("id", "kind", "bytes", "key", "width", "height", "duration_sec",
                                          "thumbnail_url")}), 201


@blp.route("/media/<asset_id>/delete", methods=["POST"])
@web.signed_in
def media_delete(asset_id: str) -> Any:
    """Delete; refused (the reason flashed) while a version or a brand kit names it."""
    if not is_uuid(asset_id):
        abort(404)
    web.services().assets.delete(g.workspace.id, asset_id)
    flash("The file is deleted.", "ok")
    return redirect(request.form.get("back", "") if request.form.get("back", "").startswith("/app/media")
                    else url_for("console.media"), code=303)
