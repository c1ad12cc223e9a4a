"""Brand kits: colours as swatches, fonts as samples, the logo; extract from a site; set default.

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

from reelfarm.console import web
from reelfarm.console.blueprint import blp
from reelfarm.shared.ids import is_uuid

FONT_CACHE_SEC = 86400
REFRESH_SEC = 2


@blp.route("/brand-kits", endpoint="brand_kits")
@web.signed_in
def brand_kits_page() -> Any:
    svc = web.services()
    kits = svc.brand_kits.list(g.workspace.id)
    job = None
    asked = request.args.get("job", "")
    if is_uuid(asked):
        job = svc.jobs.get(g.workspace.id, asked)
    if job is not None and job["kind"] != "brand_extract":
        job = None
    busy = job is not None and job["status"] in ("queued", "running")
    made = (job or {}).get("result") or {}
    new_kit = next((k for k in kits if job and job["status"] == "succeeded" and k["id"] == made.get("brand_kit_id")),
                   None)
    families = sorted({family for k in kits for f in (k["tokens"].get("fonts") or {}).values()
                       if isinstance(f, dict) and (family := f.get("family"))})
    return render_template("console/brand_kits.html", kits=kits, job=job, new_kit=new_kit, families=families,
                           refresh=REFRESH_SEC if busy else None, refresh_anchor="#extract")


@blp.route("/brand-kits/extract", methods=["POST"])
@web.signed_in
def brand_extract() -> Any:
    url = request.form.get("url", "").strip()
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
    from reelfarm.renderer.fonts import FAMILY_MODULES, font_files

    if family not in FAMILY_MODULES:
        return None
    try:
        files = font_files(family)
    except Exception:  # a family whose package is missing is shown in the page's own font
        return None
    return files[0] if files else None


def _css_name(family: str) -> str:
    return "".join(ch for ch in family if ch.isalnum() or ch in " -")


def _slug(family: str) -> str:
    return "".join(ch.lower() if ch.isalnum() else "-" for ch in family)
