"""Brand kits: read, make and change a workspace's kits, and save the kit a brand extraction made.

Every kit is shown as ``reelfarm.studio.resources.brand_kit_resource`` (a stored logo as a freshly signed
URL). An extracted kit is written with its ``brand_kit.extracted`` event in one transaction
(``save_extracted_kit``; the farm's ``extract_brand`` job calls it); a workspace's first
extracted kit becomes its default while the neutral kit is its only one.

A kit made or edited by hand (``BrandKitService.create``, ``update``) is checked whole first
(``check_kit``: every problem at once, ``InvalidBrandKit``), then written in one transaction. It
sends no event: ``brand_kit.extracted`` tells that a job ended, and a person who saved a form
already has the answer. An uploaded logo (``LogoFile``: PNG, JPEG or SVG by its content, at most
``MAX_LOGO_BYTES``) is stored as extraction stores one, as PNG under the kit's own prefix
(``brand-kits/<kit id>/...``, which ``reelfarm.shared.repos.objects`` gives to the kit's
workspace), at a key named by its content: a logo is never overwritten, since a video made
earlier names its key in its document and may be rendered again. A refused upload stores nothing.
"""
from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import Connection, Engine

from reelfarm.renderer.tokens import COLOR_KEYS
from reelfarm.shared.clock import Clock
from reelfarm.shared.db import transaction
from reelfarm.shared.errors import NotFound
from reelfarm.shared.ids import new_id
from reelfarm.shared.repos import assets as assets_repo
from reelfarm.shared.repos import brand_kits as kits_repo
from reelfarm.shared.repos._locks import lock_workspace
from reelfarm.shared.repos.outbox import add_event
from reelfarm.shared.storage import Storage
from reelfarm.shared.storage_keys import logo_key, uploaded_logo_key
from reelfarm.studio.brand.logo import DecodedLogo, decode_logo, looks_like_svg
from reelfarm.studio.errors import DefaultBrandKitDeletion, InvalidBrandKit
from reelfarm.studio.resources import BrandKitResource, brand_kit_resource, jsonable
from reelfarm.studio.stories.brand import is_number

MAX_NAME = 200
MAX_TAGLINE = 300
MAX_RADIUS = 0.5
MAX_PALETTE = 32
MAX_LOGO_BYTES = 1024 * 1024
WEIGHTS = tuple(range(100, 1000, 100))
"""The font weights a kit may name (a variable font is drawn at any of them)."""
COLOR_ROLES: dict[str, str] = {
    "primary": "The main brand colour: the surface of dark scenes, highlights and buttons.",
    "secondary": "A second colour for panels, tints and quieter highlights.",
    "accent": "Highlights and buttons where the primary colour would not stand out.",
    "background": "The surface of light scenes.",
    "text": "Text on light scenes, and the surface of dark ones when the primary colour is too light.",
}
"""What each of a kit's colours (``renderer.tokens.COLOR_KEYS``) is used for, in a person's words."""
FONT_ROLES: dict[str, str] = {"heading": "Headlines and big numbers.",
                              "body": "Everything else: lines, captions, buttons."}
_HEX = re.compile(r"^#[0-9A-Fa-f]{6}$")
_PNG = b"\x89PNG\r\n\x1a\n"
_JPEG = b"\xff\xd8\xff"


@dataclass(frozen=True)
class LogoFile:
    """A logo a person uploaded: its bytes and the name their computer gave the file."""

    data: bytes
    filename: str = "logo"


def shipped_families() -> list[str]:
    """The font families a kit may name: the ones the renderer ships."""
    from reelfarm.renderer.fonts import available_families

    return available_families()


class BrandKitService:
    """List, read and update brand kits, answering resources."""

    def __init__(self, engine: Engine, clock: Clock, storage: Storage) -> None:
        self.engine = engine
        self.clock = clock
        self.storage = storage

    def list(self, workspace_id: str) -> list[BrandKitResource]:
        """Every kit of the workspace, the default kit first."""
        with self.engine.connect() as conn:
            kits = kits_repo.list_brand_kits(conn, workspace_id)
        return [brand_kit_resource(k, self.storage) for k in kits]

    def get(self, workspace_id: str, kit_id: str) -> BrandKitResource:
        """Raises NotFound."""
        with self.engine.connect() as conn:
            return brand_kit_resource(kits_repo.get_brand_kit(conn, workspace_id, kit_id), self.storage)

    def delete(self, workspace_id: str, kit_id: str) -> None:
        """Remove a kit that is not the workspace's default; videos made with it keep its look (their
        versions name its logo; the retention round deletes the logo once nothing names it).

        Raises:
            NotFound: no such kit in the workspace.
            DefaultBrandKitDeletion: it is the default kit: another must be made the default first.
        """
        with transaction(self.engine) as conn:
            if kits_repo.get_brand_kit(conn, workspace_id, kit_id).is_default:
                raise DefaultBrandKitDeletion()
            kits_repo.delete_brand_kit(conn, workspace_id, kit_id)

    def create(self, workspace_id: str, name: str, tokens: Mapping[str, Any], *, is_default: bool = False,
               logo: LogoFile | None = None) -> BrandKitResource:
        """A kit made by hand, in one transaction; with ``is_default`` it becomes the workspace's default.

        ``tokens`` has the shape of ``BrandKit.tokens``; its ``logo`` is ignored (``logo`` uploads one).

        Raises:
            InvalidBrandKit: every problem with the name, the tokens and the logo file; nothing is stored.
        """
        decoded = _checked(name, tokens, logo)
        kit_id = new_id()
        stored, fresh = self._store_logo(kit_id, decoded)
        try:
            with transaction(self.engine) as conn:
                kit = kits_repo.create_brand_kit(
                    conn, self.clock, workspace_id=workspace_id, name=name.strip(),
                    tokens={**_plain_tokens(tokens), "logo": stored}, is_default=is_default, kit_id=kit_id)
        except BaseException:
            if fresh:
                self.storage.delete(fresh)
            raise
        return brand_kit_resource(kit, self.storage)

    def update(self, workspace_id: str, kit_id: str, changes: Mapping[str, Any], *,
               logo: LogoFile | None = None, drop_logo: bool = False, any_family: bool = False) -> BrandKitResource:
        """Rename, replace the tokens, or make it the default (``is_default``), in one transaction.

        Tokens without a ``logo`` key keep the kit's logo, and so does a ``logo`` whose URL is the one
        this kit's stored logo is shown at (a client sending back what it read); ``logo`` uploads a new
        one, ``drop_logo`` removes it. ``any_family`` (the API's PATCH, as published): a font family
        the renderer does not ship is stored as sent and drawn with the closest shipped family; the
        console offers only the shipped ones.

        Raises:
            NotFound: the kit does not exist or belongs to another workspace (nothing is stored).
            InvalidBrandKit: every problem with the changes and the logo file; nothing is stored.
        """
        self.get(workspace_id, kit_id)  # another workspace's kit stores nothing, not even a logo
        if changes.get("logo_asset_id") is not None:
            logo = self._library_logo(workspace_id, str(changes["logo_asset_id"]))
        tokens = changes.get("tokens")
        decoded = _checked(changes.get("name"), tokens, logo, partial=True, any_family=any_family)
        stored, fresh = self._store_logo(kit_id, decoded)
        try:
            kit = self._write(workspace_id, kit_id, changes, stored, drop_logo)
        except BaseException:
            if fresh:
                self.storage.delete(fresh)
            raise
        return brand_kit_resource(kit, self.storage)

    def _library_logo(self, workspace_id: str, asset_id: str) -> LogoFile:
        """An image of the workspace's media library as an uploaded logo (checked and stored as one).

        Raises:
            InvalidBrandKit: (``/logo_asset_id``) no image of this workspace has that id.
        """
        with self.engine.connect() as conn:
            try:
                asset = assets_repo.get_asset(conn, workspace_id, asset_id)
            except NotFound:
                asset = None
        if asset is None or asset.kind != "image":
            raise InvalidBrandKit([{"field": "/logo_asset_id", "code": "unknown_asset", "message":
                                    f"no image of this workspace's media library has the id {asset_id!r}; "
                                    "upload it first (POST /api/v1/assets)"}])
        return LogoFile(self.storage.get_bytes(asset.key), filename=asset.key.rsplit("/", 1)[-1])

    def _write(self, workspace_id: str, kit_id: str, changes: Mapping[str, Any], stored: dict[str, Any] | None,
               drop_logo: bool) -> kits_repo.BrandKit:
        tokens = changes.get("tokens")
        with transaction(self.engine) as conn:
            current = kits_repo.get_brand_kit(conn, workspace_id, kit_id)
            values: dict[str, Any] = {k: changes[k] for k in ("name", "is_default") if changes.get(k) is not None}
            if "name" in values:
                values["name"] = str(values["name"]).strip()
            if tokens is not None or stored is not None or drop_logo:
                new_tokens = _plain_tokens(tokens) if tokens is not None else dict(current.tokens)
                old_logo = current.tokens.get("logo")
                given = tokens.get("logo", old_logo) if tokens is not None else old_logo
                new_tokens["logo"] = stored if stored is not None else None if drop_logo else \
                    self._kept_logo(old_logo, given)
                values["tokens"] = new_tokens
            return kits_repo.update_brand_kit(conn, self.clock, workspace_id, kit_id, **values)

    def _store_logo(self, kit_id: str, decoded: DecodedLogo | None) -> tuple[dict[str, Any] | None, str | None]:
        """The ``tokens.logo`` of a decoded upload, stored, and its key when this call wrote it (to
        delete should the transaction fail; the same picture uploaded again is the kit's already)."""
        if decoded is None:
            return None, None
        key = uploaded_logo_key(kit_id, hashlib.sha256(decoded.png).hexdigest())
        fresh = not self.storage.exists(key)
        if fresh:
            self.storage.put_bytes(key, decoded.png, "image/png")
        dominant = decoded.colors[0][0] if decoded.colors else (0, 0, 0)
        logo = {"url": key, "key": key, "width": decoded.width, "height": decoded.height,
                "dominant_color": "#{:02X}{:02X}{:02X}".format(*dominant)}
        return logo, key if fresh else None

    def _kept_logo(self, old: Any, given: Any) -> Any:
        """``given``, unless it is the kit's stored logo as a client was shown it (a signed URL)."""
        if not (isinstance(old, Mapping) and old.get("key") and isinstance(given, Mapping)):
            return given
        url = str(given.get("url") or "")
        shown = self.storage.url(str(old["key"]), 60)
        return old if url in (old.get("url"), old.get("key")) or urlsplit(url).path == urlsplit(shown).path else given


def check_kit(name: Any, tokens: Any, *, partial: bool = False, any_family: bool = False) -> list[dict[str, str]]:
    """Every problem with a kit's name and tokens, as ``{"field", "code", "message"}`` details.

    ``partial`` (an update): a name or tokens left out (None) is not checked. Messages say what is
    wrong and what to do, without naming the field (a form puts its label in front).
    ``any_family``: a font family need not be one the renderer ships (it draws the closest).
    """
    problems: list[dict[str, str]] = []
    named = isinstance(name, str) and 1 <= len(name.strip()) <= MAX_NAME
    if not named and not (partial and name is None):
        problems.append(_problem("/name", "invalid_length", f"give the kit a name of 1 to {MAX_NAME} characters"))
    if partial and tokens is None:
        return problems
    if not isinstance(tokens, Mapping):
        return [*problems, _problem("/tokens", "invalid", "the tokens must be an object")]
    colors = _mapping(tokens.get("colors"))
    for role in COLOR_KEYS:
        value = colors.get(role)
        if not isinstance(value, str) or not value.strip():
            problems.append(_problem(f"/tokens/colors/{role}", "required", "choose a colour; use #RRGGBB"))
        elif not _HEX.match(value):
            problems.append(_problem(f"/tokens/colors/{role}", "invalid", f"{value!r} is not a colour; use #RRGGBB"))
    fonts = _mapping(tokens.get("fonts"))
    for role in FONT_ROLES:
        problems += _font_problems(role, fonts.get(role), any_family)
    palette = tokens.get("palette", [])
    if not (isinstance(palette, list) and len(palette) <= MAX_PALETTE
            and all(isinstance(c, str) and _HEX.match(c) for c in palette)):
        problems.append(_problem("/tokens/palette", "invalid",
                                 f"a palette is a list of up to {MAX_PALETTE} #RRGGBB colours"))
    radius: Any = tokens.get("radius")
    if not (is_number(radius) and 0 <= radius <= MAX_RADIUS):
        problems.append(_problem("/tokens/radius", "out_of_range",
                                 f"{_shown(radius)} is not a number from 0 to {MAX_RADIUS}"))
    tagline = tokens.get("tagline")
    if tagline is not None and (not isinstance(tagline, str) or len(tagline) > MAX_TAGLINE):
        problems.append(_problem("/tokens/tagline", "invalid_length",
                                 f"a tagline is at most {MAX_TAGLINE} characters"))
    return problems


def read_logo(logo: LogoFile) -> tuple[DecodedLogo | None, list[dict[str, str]]]:
    """The uploaded logo decoded (as extraction decodes one), or the problems with it."""
    name = logo.filename or "the file"
    if not logo.data:
        return None, [_problem("/logo", "invalid", f"{name!r} is empty; choose a PNG, JPEG or SVG image")]
    if len(logo.data) > MAX_LOGO_BYTES:
        size = math.ceil(len(logo.data) / (1024 * 1024) * 10) / 10  # rounded up: never "1.0 MB" over a 1 MB limit
        return None, [_problem("/logo", "too_large", f"{name!r} is {size:.1f} MB; "
                                                     f"a logo may be at most {_megabytes(MAX_LOGO_BYTES)}")]
    svg = looks_like_svg(logo.data)
    if not (svg or logo.data.startswith((_PNG, _JPEG))):
        return None, [_problem("/logo", "unsupported_type", f"{name!r} is not a PNG, JPEG or SVG image")]
    decoded = decode_logo(logo.data, "image/svg+xml" if svg else "")
    if decoded is None:
        return None, [_problem("/logo", "unreadable", f"{name!r} could not be drawn: it is damaged, too large in "
                                                      "pixels, or shows nothing")]
    return decoded, []


def _checked(name: Any, tokens: Any, logo: LogoFile | None, *, partial: bool = False,
             any_family: bool = False) -> DecodedLogo | None:
    problems = check_kit(name, tokens, partial=partial, any_family=any_family)
    decoded, logo_problems = read_logo(logo) if logo is not None else (None, [])
    if problems or logo_problems:
        raise InvalidBrandKit(problems + logo_problems)
    return decoded


def _font_problems(role: str, font: Any, any_family: bool = False) -> list[dict[str, str]]:
    where = f"/tokens/fonts/{role}"
    if not isinstance(font, Mapping):
        return [_problem(where, "required", "choose a font")]
    problems = []
    family = font.get("family")
    if family not in shipped_families() and not (any_family and isinstance(family, str) and family.strip()):
        problems.append(_problem(f"{where}/family", "invalid", f"{_shown(family)} is not a font the renderer "
                                 f"ships; choose one of {', '.join(shipped_families())}"))
    weight = font.get("weight", 400)
    if not (isinstance(weight, int) and not isinstance(weight, bool) and WEIGHTS[0] <= weight <= WEIGHTS[-1]):
        problems.append(_problem(f"{where}/weight", "out_of_range",
                                 f"{_shown(weight)} is not a weight from {WEIGHTS[0]} to {WEIGHTS[-1]}"))
    return problems


def _plain_tokens(tokens: Mapping[str, Any]) -> dict[str, Any]:
    """Checked tokens as stored (plain dicts and lists), less the logo, which the caller sets."""
    return {k: (dict(v) if isinstance(v, Mapping) else list(v) if isinstance(v, list) else v)
            for k, v in tokens.items() if k != "logo"}


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _problem(field: str, code: str, message: str) -> dict[str, str]:
    return {"field": field, "code": code, "message": message}


def _shown(value: Any) -> str:
    if value is None or value == "":
        return "nothing"
    return f"{value:g}" if is_number(value) else repr(value)


def _megabytes(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MB".replace(".0 MB", " MB")


def store_logo(storage: Storage, kit_id: str, logo: Any) -> dict[str, Any] | None:
    """Put an extracted ``reelfarm.studio.brand.Logo`` in storage; the ``tokens.logo`` that refers to it."""
    if logo is None:
        return None
    key = logo_key(kit_id)
    storage.put_bytes(key, logo.png, "image/png")
    return {"url": logo.source_url, "key": key, "width": logo.width, "height": logo.height,
            "dominant_color": logo.dominant_color}


def save_extracted_kit(conn: Connection, clock: Clock, storage: Storage, *, workspace_id: str, kit_id: str,
                       brand: Any, logo: dict[str, Any] | None) -> kits_repo.BrandKit:
    """Create the kit of an extracted ``reelfarm.studio.brand.ExtractedBrand`` and its ``brand_kit.extracted``
    event, in the caller's transaction. A workspace's first extracted kit becomes its default only
    while the neutral kit is its only one."""
    lock_workspace(conn, workspace_id)  # two extractions at once must not both see only the neutral kit
    existing = kits_repo.list_brand_kits(conn, workspace_id)
    if any(k.id == kit_id for k in existing):  # a retried task that had already saved it
        return next(k for k in existing if k.id == kit_id)
    only_neutral = len(existing) == 1 and existing[0].source_url is None
    kit = kits_repo.create_brand_kit(conn, clock, workspace_id=workspace_id, name=brand.name[:200],
                                     tokens={**brand.tokens, "logo": logo}, source_url=brand.source_url,
                                     is_default=only_neutral, kit_id=kit_id)
    add_event(conn, clock, workspace_id=workspace_id, type="brand_kit.extracted",
              payload={"brand_kit": jsonable(brand_kit_resource(kit, storage))})
    return kit
