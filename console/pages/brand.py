"""Brand kits: colours as swatches, fonts as samples, the logo; extract from a site; make or edit
one by hand; set default.

A kit made or edited by hand is one multipart form (``console/brand_kit_form.html``, the same for
both): name, tagline, the five colours by role (hex text, with a colour picker where JavaScript
runs), heading and body fonts from the families the renderer ships, corner radius, a logo file (kept
in the media library too) or an image chosen from the library, and "make default". The service checks it whole (``reelfarm.studio.brand_kits.check_kit``); every
problem comes back beside its field, led by the field's label, and the form keeps what was typed.
A new kit's form carries a one-use token (``reelfarm.console.sendings``): sent again (Back, a
second click), it goes to the kit its first sending made.

Fonts are shown in their own typeface: ``/app/fonts/<family>.css`` declares the family from the
renderer's own font files (the same ones a render uses), served by ``/app/fonts/file/...``.
Extraction is a job named in the page's address (``?job=``), so its outcome survives a reload:
the page follows its stages by polling (as renders do) and loads itself again, the job still
named, once the job has ended, even if it ended before the first look; without JavaScript it
refreshes itself until the job is done. A failed job shows its error; a finished one, the new kit.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flask import Response, abort, flash, g, redirect, render_template, request, send_file, url_for

from reelfarm.console import forms, library, sendings, web
from reelfarm.console.blueprint import blp
from reelfarm.renderer.tokens import COLOR_KEYS, NEUTRAL_BRAND
from reelfarm.shared.ids import is_uuid
from reelfarm.shared.statuses import LIVE
from reelfarm.studio.brand_kits import (
    COLOR_ROLES,
    FONT_ROLES,
    MAX_LOGO_BYTES,
    MAX_NAME,
    MAX_RADIUS,
    MAX_TAGLINE,
    WEIGHTS,
    LogoFile,
    check_kit,
    read_logo,
    shipped_families,
)
from reelfarm.studio.errors import DefaultBrandKitDeletion, InvalidBrandKit
from reelfarm.studio.resources import BrandKitResource

FONT_CACHE_SEC = 86400
REFRESH_SEC = 2
MAX_SITE_URL = 2048  # the API's limit; over it is named beside the field, not cut


@blp.route("/brand-kits", endpoint="brand_kits")
@web.signed_in
def brand_kits_page() -> Any:
    return _kits_page()


def _kits_page(status: int = 200, extract_url: str | None = None, extract_error: str | None = None) -> Any:
    """The kits and the extraction form; ``extract_url``/``extract_error``: what was typed there and
    why it was refused."""
    svc = web.services()
    kits = svc.brand_kits.list(g.workspace.id)
    job = None
    asked = request.args.get("job", "")
    if is_uuid(asked):
        job = svc.jobs.get(g.workspace.id, asked)
    if job is not None and job["kind"] != "brand_extract":
        job = None
    busy = job is not None and job["status"] in LIVE
    made = (job["result"] if job is not None else None) or {}
    new_kit = next((k for k in kits if job and job["status"] == "succeeded" and k["id"] == made.get("brand_kit_id")),
                   None)
    families = sorted({family for k in kits for f in (k["tokens"].get("fonts") or {}).values()
                       if isinstance(f, dict) and (family := f.get("family"))})
    return render_template("console/brand_kits.html", kits=kits, job=job, new_kit=new_kit, families=families,
                           roles=COLOR_ROLES, extract_url=extract_url, extract_error=extract_error,
                           refresh=REFRESH_SEC if busy else None, refresh_anchor="#extract"), status


@blp.route("/brand-kits/extract", methods=["POST"])
@web.signed_in
def brand_extract() -> Any:
    url = request.form.get("url", "").strip()
    if too_long := forms.too_long("Website address", url, MAX_SITE_URL):
        return _kits_page(400, url, too_long)
    job = web.services().jobs.request_brand_extract(g.workspace.id, url)
    return redirect(url_for("console.brand_kits", job=job["id"]) + "#extract", code=303)


@blp.route("/brand-kits/<kit_id>/default", methods=["POST"])
@web.signed_in
def brand_default(kit_id: str) -> Any:
    if not is_uuid(kit_id):
        abort(404)
    kit = web.services().brand_kits.update(g.workspace.id, kit_id, {"is_default": True})
    flash(f"“{kit['name']}” is now the default brand kit.", "ok")
    return redirect(url_for("console.brand_kits"), code=303)


@blp.route("/brand-kits/<kit_id>/delete", methods=["POST"])
@web.signed_in
def brand_kit_delete(kit_id: str) -> Any:
    if not is_uuid(kit_id):
        abort(404)
    svc = web.services().brand_kits
    kit = svc.get(g.workspace.id, kit_id)
    try:
        svc.delete(g.workspace.id, kit_id)
    except DefaultBrandKitDeletion as exc:
        flash(f"“{kit['name']}” is not deleted: {exc}.", "error")
    else:
        flash(f"The brand kit “{kit['name']}” is deleted; videos made with it keep their look.", "ok")
    return redirect(url_for("console.brand_kits"), code=303)


@blp.route("/brand-kits/new", methods=["GET", "POST"], endpoint="brand_kit_new")
@web.signed_in
def brand_kit_new() -> Any:
    if request.method == "GET":
        return sendings.kept(_form_page(None, _typed(NEUTRAL_BRAND, name="")))
    with sendings.sending() as sent:
        if sent.before is not None:
            return sendings.made_before(sent)
        return _kit_made(sent)


def _kit_made(sent: sendings.Sending) -> Any:
    """The kit the form makes, or the form again (400) with every problem beside its field."""
    name = request.form.get("name", "")
    tokens = _tokens_from(request.form, NEUTRAL_BRAND)
    logo, _asset_id, found = _logo(name, tokens, editing=False)
    if found:
        return _form_page(None, request.form, found, 400)
    try:
        kit = web.services().brand_kits.create(g.workspace.id, name, tokens, is_default=_checked("default"), logo=logo)
    except InvalidBrandKit as exc:
        return _form_page(None, request.form, _problems(exc.details), 400)
    flash(f"The brand kit “{kit['name']}” is saved.", "ok")
    return redirect(sent.made(url_for("console.brand_kits") + f"#kit-{kit['id']}"), code=303)


@blp.route("/brand-kits/<kit_id>/edit", methods=["GET", "POST"], endpoint="brand_kit_edit")
@web.signed_in
def brand_kit_edit(kit_id: str) -> Any:
    if not is_uuid(kit_id):
        abort(404)
    svc = web.services().brand_kits
    kit = svc.get(g.workspace.id, kit_id)
    if request.method == "GET":
        return _form_page(kit, _typed(kit["tokens"], name=kit["name"]))
    changes: dict[str, Any] = {"name": request.form.get("name", ""),
                               "tokens": _tokens_from(request.form, kit["tokens"])}
    if _checked("default"):
        changes["is_default"] = True
    logo, asset_id, found = _logo(changes["name"], changes["tokens"], editing=True)
    if found:
        return _form_page(kit, request.form, found, 400)
    if asset_id is not None and logo is None:
        changes["logo_asset_id"] = asset_id  # the library's image, checked and stored as the kit's logo
    try:
        kit = svc.update(g.workspace.id, kit_id, changes, logo=logo, drop_logo=_checked("drop_logo"))
    except InvalidBrandKit as exc:
        return _form_page(kit, request.form, _problems(exc.details), 400)
    flash(f"The brand kit “{kit['name']}” is saved.", "ok")
    return redirect(url_for("console.brand_kits") + f"#kit-{kit['id']}", code=303)


def _logo(name: str, tokens: dict[str, Any], editing: bool) -> tuple[LogoFile | None, str | None, dict[str, str]]:
    """The logo the form asks for: (a file to store as the kit's logo, the id of the library image
    it is or comes from, problems by form name).

    A file posted (without JavaScript) is the kit's logo, checked by the kit's rules; once the
    whole kit would be saved it is stored in the media library too (a library that refuses it
    keeps the kit unsaved, the reason beside the logo). A kit refused for anything else stores
    nothing: the service names every problem. Else the library image picked (``logo_asset_id``),
    which must be an image of this workspace; a new kit reads its bytes as an uploaded logo.
    """
    svc = web.services()
    file = request.files.get("logo")
    if file is not None and file.filename:
        logo = LogoFile(file.read(), file.filename)  # the request's size is capped (blueprint.FILE_FORM_BYTES)
        if read_logo(logo)[1] or check_kit(name, tokens, partial=editing):
            return logo, None, {}
        asset, why, _ = library.store(svc, g.workspace.id, logo.data, "image", file.filename)
        if asset is None:
            return None, None, {"logo": f"Logo: the file {file.filename!r} is not stored in the media library: {why}"}
        return logo, asset["id"], {}
    picked = request.form.get("logo_asset_id", "").strip()
    if not picked:
        return None, None, {}
    asset = library.own_image(svc, g.workspace.id, picked)
    if asset is None:
        return None, None, {"logo": f"Logo: no image of this workspace's media library has the id {picked[:40]}; "
                                    "upload the logo or choose one from the library"}
    if editing:
        return None, picked, {}
    return LogoFile(svc.storage.get_bytes(asset["key"]), "the library image"), picked, {}


def _form_page(kit: BrandKitResource | None, typed: Any, problems: dict[str, str] | None = None,
               status: int = 200) -> Any:
    return render_template(
        "console/brand_kit_form.html", kit=kit, typed=typed, problems=problems or {}, roles=COLOR_ROLES,
        saved_colors=(kit["tokens"].get("colors") if kit else None) or NEUTRAL_BRAND["colors"],
        font_roles=FONT_ROLES, families=shipped_families(), weights=WEIGHTS, max_name=MAX_NAME,
        max_tagline=MAX_TAGLINE, max_radius=MAX_RADIUS * 100, max_logo_bytes=MAX_LOGO_BYTES, max_logo_mb=MAX_LOGO_BYTES // (1024 * 1024),
        resent=bool(problems) and bool(getattr(request.files.get("logo"), "filename", "")),
        library=library.listed(web.services(), g.workspace.id, "image"), image_types=library.IMAGE_TYPES), status


def _typed(tokens: dict[str, Any], name: str) -> dict[str, str]:
    """A kit's values as a form shows them (the same names the form posts)."""
    fonts = tokens.get("fonts") or {}
    typed = {"name": name, "tagline": tokens.get("tagline") or "", "radius": _percent(tokens.get("radius"))}
    typed.update({f"color.{role}": str((tokens.get("colors") or {}).get(role, "")) for role in COLOR_KEYS})
    for role in FONT_ROLES:
        font = fonts.get(role) or {}
        typed[f"font.{role}.family"] = str(font.get("family", ""))
        typed[f"font.{role}.weight"] = str(font.get("weight", 400))
    return typed


def _tokens_from(form: Any, base: dict[str, Any]) -> dict[str, Any]:
    """The tokens a posted form asks for; what it leaves out (the palette, a site's declared fonts)
    from ``base``. Values that cannot be read are passed on as typed, for the service to name."""
    fonts: dict[str, Any] = {}
    for role in FONT_ROLES:
        old = (base.get("fonts") or {}).get(role) or {}
        family = form.get(f"font.{role}.family", "").strip()
        fonts[role] = {"family": family, "weight": _number(form.get(f"font.{role}.weight", ""), int)}
        if old.get("original") and old.get("family") == family:
            fonts[role]["original"] = old["original"]
    colors = {role: _hex(form.get(f"color.{role}", "")) for role in COLOR_KEYS}
    palette = base.get("palette")
    if base is NEUTRAL_BRAND or palette == _palette_of(base.get("colors") or {}):  # a palette of its own colours
        palette = _palette_of(colors)  # follows them
    tagline = form.get("tagline", "").strip()
    return {"colors": colors, "palette": list(palette or []), "fonts": fonts,
            "radius": _fraction(form.get("radius", "")), "tagline": tagline or None}


def _percent(radius: Any) -> str:
    """A kit's radius (a fraction of the video's short side) as the form asks for it: a percentage."""
    return f"{round(float(radius) * 100, 2):g}" if isinstance(radius, (int, float)) else ""


def _fraction(typed: str) -> Any:
    """The percentage typed, as the fraction the kit keeps ("2" or "2%" -> 0.02); unreadable text as typed."""
    number = _number(typed.strip().rstrip("%"), float)
    return round(number / 100, 6) if isinstance(number, float) else typed.strip()


def _palette_of(colors: dict[str, str]) -> list[str]:
    return [c for c in dict.fromkeys(colors.get(role, "") for role in COLOR_KEYS) if _is_hex(c)]


def _hex(text: str) -> str:
    text = text.strip()
    if len(text) == 6 and _is_hex("#" + text.upper()):
        text = "#" + text
    return text.upper() if _is_hex(text.upper()) else text


def _is_hex(text: str) -> bool:
    return len(text) == 7 and text.startswith("#") and all(c in "0123456789ABCDEF" for c in text[1:])


def _number(text: str, kind: type) -> Any:
    try:
        return kind(text.strip())
    except ValueError:
        return text.strip()


def _checked(name: str) -> bool:
    return request.form.get(name) not in (None, "", "0", "off")


_LABELS = {"/name": ("name", "Name"), "/tokens/radius": ("radius", "Corner radius"),
           "/tokens/tagline": ("tagline", "Tagline"), "/logo": ("logo", "Logo"), "/logo_asset_id": ("logo", "Logo")}


def _problems(details: list[dict[str, Any]]) -> dict[str, str]:
    """The service's problems by form name, each led by its field's label."""
    out: dict[str, str] = {}
    for d in details:
        pointer = str(d.get("field", ""))
        parts = pointer.strip("/").split("/")
        if pointer in _LABELS:
            name, label = _LABELS[pointer]
        elif parts[:2] == ["tokens", "colors"] and len(parts) == 3:
            name, label = f"color.{parts[2]}", f"{parts[2].capitalize()} colour"
        elif parts[:2] == ["tokens", "fonts"] and len(parts) >= 3:
            what = parts[3] if len(parts) == 4 else "family"
            name, label = f"font.{parts[2]}.{what}", f"{parts[2].capitalize()} {'font' if what == 'family' else what}"
        else:
            name, label = "form", "Kit"
        message = d.get("message")
        if pointer == "/tokens/radius":  # the service speaks in fractions; the form asks for a percentage
            message = f"give a percentage from 0 to {MAX_RADIUS * 100:g} (0 is square, 2 slightly rounded)"
        out.setdefault(name, f"{label}: {message}")
    return out


@blp.route("/fonts/<family>.css")
def font_css(family: str) -> Any:
    path = _font_file(family)
    if path is None:
        return Response("", mimetype="text/css")
    src = url_for("console.font_file", family=family)
    css = (f"@font-face{{font-family:'{_css_name(family)} sample';src:url('{src}');font-display:swap}}\n"
           f".font-{_slug(family)}{{font-family:'{_css_name(family)} sample',system-ui,sans-serif}}\n")
    response = Response(css, mimetype="text/css")
    response.cache_control.max_age = FONT_CACHE_SEC
    return response


@blp.route("/fonts/file/<family>")
def font_file(family: str) -> Any:
    path = _font_file(family)
    if path is None:
        abort(404)
    response = send_file(path, mimetype="font/ttf" if path.suffix == ".ttf" else "font/otf", max_age=FONT_CACHE_SEC)
    return response


def _font_file(family: str) -> Path | None:
    """The renderer's regular face of ``family``, if it ships one."""
    if len(family) > 80:
        return None
    from reelfarm.renderer.errors import FontError
    from reelfarm.renderer.fonts import FAMILY_MODULES, font_files

    if family not in FAMILY_MODULES:
        return None
    try:
        files = font_files(family)
    except (FontError, OSError):  # a family whose package is missing is shown in the page's own font
        return None
    return files[0] if files else None


def _css_name(family: str) -> str:
    return "".join(ch for ch in family if ch.isalnum() or ch in " -")


def _slug(family: str) -> str:
    return "".join(ch.lower() if ch.isalnum() else "-" for ch in family)
