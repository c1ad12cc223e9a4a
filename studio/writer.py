"""Writers: a written brief in, a story with its field values (a ``Script``) out.

``BuiltinWriter`` works offline and deterministically: it picks the story whose keywords and
facts best match the brief (``reelfarm.studio.briefs.classify``) and fills that story's fields with the
brief's own facts. ``LLMWriter`` (``studio/llm.py``) asks a chat model and falls back to it;
``reelfarm.studio.llm.make_writer`` picks between them from settings. ``compose`` builds and lints the
video, shortening text until nothing overflows.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from reelfarm.renderer.linter import lint
from reelfarm.renderer.spec import DEFAULT_FORMAT
from reelfarm.studio.briefs import (
    Facts,
    classify,
    milestone_of,
    read_facts,
    shorten,
    split_items,
    stat_of,
)
from reelfarm.studio.errors import WriterError
from reelfarm.studio.stories import Story, get_story, validate_fields
from reelfarm.studio.stories.base import MAX_DURATION_SEC, MIN_DURATION_SEC

__all__ = ["Brief", "BuiltinWriter", "Script", "Writer", "clamp_duration", "compose", "fit_fields"]

log = logging.getLogger(__name__)

_MAX_SHORTEN_ROUNDS = 8


@dataclass(frozen=True)
class Brief:
    """What a client wrote, and the settings the video is made for."""

    text: str
    title: str | None = None
    locale: str | None = None
    format: str = DEFAULT_FORMAT
    duration_sec: float | None = None
    url: str | None = None
    brand_name: str | None = None


@dataclass(frozen=True)
class Script:
    """A story and its field values (valid for the story), as a writer chose them."""

    story_id: str
    fields: dict
    title: str
    duration_sec: float | None
    writer: str


class Writer(Protocol):
    """Turns a brief into a script."""

    name: str

    def write(self, brief: Brief) -> Script: ...


# --- the built-in writer ------------------------------------------------------------------------


class BuiltinWriter:
    """Classifies a brief to a story and fills its fields with the brief's facts; no network, no randomness."""

    name = "builtin"

    def write(self, brief: Brief) -> Script:
        """The script for ``brief``.

        Raises:
            WriterError: the brief holds no text to build from.
        """
        if not brief.text or not brief.text.strip():
            raise WriterError("the brief is empty")
        facts = read_facts(brief.text, title=brief.title, url=brief.url, brand_name=brief.brand_name)
        story_id = classify(facts)
        story = get_story(story_id)
        fields = fit_fields(story, _FILLERS[story_id](facts))
        problems = validate_fields(story, fields)
        if problems:  # a defect here, not in the brief: the fitters respect every schema
            raise WriterError(f"built-in writer made invalid {story_id} fields: {problems}")
        return Script(story_id=story_id, fields=fields, title=shorten(facts.headline, 120),
                      duration_sec=clamp_duration(brief.duration_sec), writer=self.name)


def clamp_duration(requested: float | None) -> float | None:
    """``requested`` brought within the length any story accepts; ``None`` keeps the story's own."""
    if requested is None:
        return None
    return float(min(MAX_DURATION_SEC, max(MIN_DURATION_SEC, requested)))


def fit_fields(story: Story, values: dict[str, Any]) -> dict[str, Any]:
    """``values`` for every field of ``story``, cut to its limits; a field left out gets a neutral value.

    Neutral means empty text or null where the schema allows it, else the schema default (an
    enum such as a theme): a default that states a fact (a date, a name) never slips in.
    """
    out: dict[str, Any] = {}
    for name, prop in story.fields["properties"].items():
        value = values.get(name, _neutral(prop))
        out[name] = _fit_value(prop, value)
    return out


def _neutral(prop: dict) -> Any:
    types = prop.get("type")
    if "enum" in prop:
        return prop.get("default")
    if isinstance(types, list) and "null" in types:
        return None
    if types == "string" and not prop.get("minLength"):
        return ""
    return prop.get("default")


def _fit_value(prop: dict, value: Any) -> Any:
    if isinstance(value, str) and prop.get("type") == "string" and prop.get("format") is None:
        return shorten(value, prop.get("maxLength", len(value)))
    if isinstance(value, list) and prop.get("type") == "array":
        items = [_fit_value(prop["items"], v) for v in value][: prop.get("maxItems", len(value))]
        return [v for v in items if v not in ("", {}, None)] or items
    if isinstance(value, dict) and prop.get("type") == "object":
        return {k: _fit_value(prop["properties"].get(k, {}), v) for k, v in value.items()}
    return value


def _cta(facts: Facts, neutral: str) -> str:
    return facts.cta or neutral


def _joined(*parts: str | None) -> str:
    return ", ".join(p for p in parts if p)


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def _heading(facts: Facts, limit: int) -> str:
    return shorten(facts.headline, limit)


def _announcement(f: Facts) -> dict:
    return {"kicker": "News", "headline": _heading(f, 60), "body": " ".join(f.points), "cta": _cta(f, "Learn more"),
            "url": f.url or ""}


def _flash_sale(f: Facts) -> dict:
    return {"kicker": "Sale", "discount": f.offer, "headline": _heading(f, 60), "code": f.code or "",
            "ends": f.ends or _joined(f.date, f.time), "cta": _cta(f, "Shop now"), "url": f.url or ""}


def _countdown(f: Facts) -> dict:
    return {"kicker": "Get ready", "count_from": 3, "headline": _heading(f, 50),
            "date": f.ends or _joined(f.date, f.time), "cta": _cta(f, "Learn more"),
            "url": f.url or ""}


def _hiring(f: Facts) -> dict:
    perks = split_items([p for p in f.points if not (f.role and f.role in p)], 48, 4)
    details = f.work or ""
    if f.location and f.location not in details:
        details = _joined(details, f.location)
    return {"kicker": "We're hiring", "role": f.role, "details": details, "perks_title": "About the role",
            "perks": perks or [shorten(details or f.headline, 48)], "cta": _cta(f, "Apply now"), "url": f.url or ""}


def _event_invite(f: Facts) -> dict:
    return {"kicker": "You're invited", "event": f.title or f.event or f.headline, "date": f.date,
            "time": f.time or "", "location": _capital(f.location or ""), "cta": _cta(f, "RSVP"), "url": f.url or ""}


def _webinar(f: Facts) -> dict:
    kicker = "Live webinar" if re.search(r"\bwebinar\b", f.text, re.IGNORECASE) else "Live session"
    topic = _WEBINAR_LABEL.sub("", f.headline, count=1)
    topic = _HOSTED_BY.sub("", topic).strip(" ,:-") or f.headline
    return {"kicker": kicker, "title": f.title or topic[:1].upper() + topic[1:], "host_label": "Your host",
            "speaker": f.speaker or f.brand_name, "speaker_role": f.speaker_role or "",
            "when": _joined(f.date, f.time), "cta": _cta(f, "Register"), "url": f.url or ""}


_WEBINAR_LABEL = re.compile(r"^(?:join (?:us|our)\s+)?(?:(?:free|live|new|online)\s+)*"
                            r"(?:webinar|live session|masterclass|session)\s*(?::|on|about)?\s*", re.IGNORECASE)
_HOSTED_BY = re.compile(r",?\s+(?:hosted by|presented by|led by|with)\b.*$", re.IGNORECASE)


def _product_launch(f: Facts) -> dict:
    product = f.product or f.title or ""
    pool = [s for s in f.sentences if s.rstrip("!.") not in (product, f"Introducing {product}")]
    pool = [s for s in pool if s in f.points and not (f.price and f.price in s and len(s.split()) <= 3)]
    lead = f.headline_sentence or ""
    rest = lead.split(product, 1)[1].strip(" ,:;-–—.!") if product and product in lead else ""
    tagline = shorten(_capital(rest), 80) if len(rest.split()) >= 3 else shorten(pool[0], 80) if pool else ""
    pool = pool if len(rest.split()) >= 3 else pool[1:]
    features = split_items(list(f.bullets) or pool, 48, 4)
    return {"kicker": "Introducing", "product": product, "tagline": tagline, "features_title": "Highlights",
            "features": features or [shorten(f.headline, 48)], "price": f.price or "", "cta": _cta(f, "Learn more"),
            "url": f.url or ""}


def _feature_spotlight(f: Facts) -> dict:
    return {"kicker": "New feature", "feature": f.product or f.title or f.headline, "description": " ".join(f.points),
            "benefit": "", "cta": _cta(f, "Learn more"), "url": f.url or ""}


def _before_after(f: Facts) -> dict:
    before, after = f.before_after or ("", "")
    plain = [s for s in f.sentences if before not in s and after not in s and not re.match(r"(?i)before|after", s)]
    return {"title": f.title or (plain[0] if plain else "Before and after"), "before_label": "Before", "before_text": _capital(before),
            "after_label": "After", "after_text": _capital(after), "cta": _cta(f, "Learn more"), "url": f.url or ""}


def _stats_highlight(f: Facts) -> dict:
    stats, plain = [], []
    for sentence in f.sentences:
        found = [s for s in (stat_of(c) for c in _CLAUSE.split(sentence)) if s]
        stats += found
        plain += [] if found else [sentence.rstrip(".")]
    headline = f.title or (plain[0] if plain else "By the numbers")
    return {"kicker": "By the numbers" if headline != "By the numbers" else "", "headline": headline,
            "stats": stats[:3], "source": "", "url": f.url or ""}


_CLAUSE = re.compile(r"[,;]\s+|\s+and\s+")


def _milestone(f: Facts) -> dict:
    number, label, sentence = milestone_of(f) or ("", "", "")
    message = " ".join(s for s in f.sentences if s != sentence and s != f.title)
    return {"kicker": "Milestone", "number": number, "label": label, "message": message,
            "cta": f.cta or "", "url": f.url or ""}


def _tips_list(f: Facts) -> dict:
    tips = list(f.bullets) if len(f.bullets) >= 2 else f.points
    return {"kicker": "Quick tips", "title": _heading(f, 50), "tips": split_items(tips, 90, 5), "outro": f.cta or "",
            "url": f.url or ""}


def _quote(f: Facts) -> dict:
    return {"quote": f.quote, "author": f.quote_author, "source": f.quote_role or ""}


def _testimonial(f: Facts) -> dict:
    return {"quote": f.quote, "name": f.quote_author, "role": f.quote_role or "", "rating": f.rating or 0,
            "cta": _cta(f, "Learn more"), "url": f.url or ""}


def _podcast_teaser(f: Facts) -> dict:
    return {"show": f.show or f.brand_name or f.title, "episode": f.episode or "",
            "episode_title": f.quote or f.headline, "guest": f.speaker or "", "guest_role": f.speaker_role or "",
            "pull_quote": "", "cta": _cta(f, "Listen now"), "platforms": f.platforms or f.url or ""}


_FILLERS: dict[str, Callable[[Facts], dict]] = {
    "announcement": _announcement, "flash_sale": _flash_sale, "countdown": _countdown, "hiring": _hiring,
    "event_invite": _event_invite, "webinar": _webinar, "product_launch": _product_launch,
    "feature_spotlight": _feature_spotlight, "before_after": _before_after, "stats_highlight": _stats_highlight,
    "milestone": _milestone, "tips_list": _tips_list, "quote": _quote, "testimonial": _testimonial,
    "podcast_teaser": _podcast_teaser,
}


# --- composing --------------------------------------------------------------------------------


def compose(script: Script, brand_tokens: dict, fmt: str, duration_sec: float | None,
            locale: str | None) -> tuple[dict, list[dict]]:
    """Build the script's VideoDoc and lint it in every format; shorten text until none overflows.

    Returns:
        ``(doc, warnings)``: the document and its remaining lint warnings as
        ``{"field", "code", "message"}`` dicts (no ``text_overflow`` among them unless a single
        word cannot fit).

    Raises:
        UnknownStoryError: the script names no story.
        InvalidFieldsError: the script's fields are not valid for its story.
        WriterError: the built document has lint errors (it could not be rendered).
    """
    story = get_story(script.story_id)
    fields = dict(script.fields)
    for _ in range(_MAX_SHORTEN_ROUNDS):
        doc = story.build(fields, brand_tokens, fmt, duration_sec)
        if locale:
            doc["locale"] = locale
        report = lint(doc)
        if report.errors:
            raise WriterError(f"the {story.id} video has lint errors: {[p.as_dict() for p in report.errors]}")
        overflowing = {w.pointer for w in report.warnings if w.code == "text_overflow"}
        shorter = _shorten_overflowing(story, fields, [_layer_text(doc, p) for p in sorted(overflowing)])
        if not overflowing or shorter == fields:
            break
        log.info("shortened %s fields to stop text overflow", story.id)
        fields = shorter
    return doc, [w.as_dict() for w in report.warnings]


def _layer_text(doc: dict, pointer: str) -> str:
    """The text a lint pointer (``/scenes/0/layers/2/text``, or deeper through groups' ``children``) names."""
    node: Any = doc
    for part in pointer.lstrip("/").split("/"):
        key = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        elif isinstance(node, dict) and key in node:
            node = node[key]
        else:
            return ""
    return node if isinstance(node, str) and pointer.endswith("/text") else ""


def _shorten_overflowing(story: Story, fields: dict, texts: list[str]) -> dict:
    """``fields`` with the longest value shown in each overflowing text cut by about a sixth."""
    out = {k: (list(v) if isinstance(v, list) else v) for k, v in fields.items()}
    for text in texts:
        best: tuple[int, Callable[[str], None], str] | None = None
        for setter, value in _string_slots(out):
            if value and (value in text or text in value) and (best is None or len(value) > best[0]):
                best = (len(value), setter, value)
        if best is not None:
            best[1](_cut(best[2]))
    return out


def _cut(value: str) -> str:
    if " " not in value.strip():
        return value
    shorter = shorten(value, max(1, len(value) * 5 // 6))
    return shorter if shorter != value else value.rsplit(" ", 1)[0]


def _string_slots(fields: dict):
    """(setter, value) for every string in ``fields``: top level, list items and list-of-object values."""
    for key, value in fields.items():
        if isinstance(value, str):
            yield (lambda v, k=key: fields.__setitem__(k, v)), value
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, str):
                    yield (lambda v, lst=value, i=i: lst.__setitem__(i, v)), item
                elif isinstance(item, dict):
                    value[i] = item = dict(item)
                    for sub, text in item.items():
                        if isinstance(text, str):
                            yield (lambda v, d=item, s=sub: d.__setitem__(s, v)), text
