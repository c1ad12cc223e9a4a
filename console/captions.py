"""The captions every story accepts, in the story form: a captions file of the media library and how it is drawn.

The form's controls are ``captions.asset_id`` (a ``<select>`` of the workspace's captions files,
each with its cue count and length, "(none)" first), ``captions.style``, ``captions.position`` and
``captions.size`` (each a ``<select>`` of the choices ``reelfarm.studio.stories.fields.CAPTIONS_SCHEMA``
names). ``read_captions`` turns them into the ``captions`` field; a choice that is none of the
listed ones is named beside its control, never guessed. Whether the id names a captions file of
this workspace is ``reelfarm.console.library.unknown``'s check, with the images and sounds: an id
of another workspace's file reads as no file at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reelfarm.console.forms import PREFIX
from reelfarm.studio.stories.fields import CAPTIONS, CAPTIONS_SCHEMA

CAPS = "captions."
_PROPS = CAPTIONS_SCHEMA["properties"]
CHOICES: dict[str, tuple[str, ...]] = {part: tuple(_PROPS[part]["enum"]) for part in ("style", "position", "size")}
DEFAULTS: dict[str, str] = {part: str(_PROPS[part]["default"]) for part in CHOICES}
LABELS = {"asset_id": "Captions", "style": "Caption style", "position": "Caption position", "size": "Caption size"}
PARTS = ("asset_id", *CHOICES)
CHOICE_WORDS = {
    "style": {"box": "Box in the text colour", "inverse": "Box in the background colour",
              "primary": "Box in the primary colour"},
    "position": {"bottom": "Bottom", "top": "Top"},
    "size": {"small": "Small", "medium": "Medium", "large": "Large"},
}


def read_captions(form: Mapping[str, Any]) -> tuple[dict[str, Any] | None, dict[str, str], dict[str, str]]:
    """(the ``captions`` field or None, a message by form name for each part that is no choice,
    what was chosen by part) from the form's ``captions.*`` controls; no file chosen is None."""
    typed = {part: str(form.get(CAPS + part, "") or "").strip()[:80] for part in PARTS}
    if not typed["asset_id"]:
        return None, {}, typed
    problems: dict[str, str] = {}
    value: dict[str, Any] = {"asset_id": typed["asset_id"]}
    for part, choices in CHOICES.items():
        chosen = typed[part]
        if not chosen:
            continue
        if chosen not in choices:
            problems[CAPS + part] = f"{LABELS[part]}: choose {', '.join(choices[:-1])} or {choices[-1]}"
            continue
        value[part] = chosen
    return (None if problems else value), problems, typed


def typed_captions(value: Any) -> dict[str, str]:
    """A saved ``captions`` field as the form shows it (no file: every part empty)."""
    if not isinstance(value, Mapping):
        return {part: "" for part in PARTS}
    return {"asset_id": str(value.get("asset_id", "")), **{part: str(value.get(part, "")) for part in CHOICES}}


def captions_problem(name: str, message: str) -> tuple[str, str] | None:
    """The studio's problem with the captions (``f.captions...``) under the form's name, or None
    for a problem of another field."""
    if name != PREFIX + CAPTIONS and not name.startswith(PREFIX + CAPTIONS + "."):
        return None
    part = name[len(PREFIX + CAPTIONS) + 1:]
    part = part if part in LABELS else "asset_id"
    return CAPS + part, f"{LABELS[part]}: {message.split(': ', 1)[-1]}"
