"""A writer that asks a chat model (any OpenAI-compatible ``/chat/completions`` endpoint).

The model picks a story and fills its fields as JSON. Its answer is used only when it checks
out: a known story, fields valid for it, no figure that the brief does not contain, and a video
that builds and lints without errors. Otherwise, and on any transport failure, the fallback
writer (the built-in one) writes the script and the reason is logged. ``make_writer`` picks the
writer from settings: this one, with the built-in one behind it, when an LLM is configured.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx

from reelfarm.studio.briefs import NUMBER
from reelfarm.studio.errors import StudioError, WriterError
from reelfarm.studio.stories import NEUTRAL_BRAND, get_story, list_stories, validate_fields
from reelfarm.studio.writer import Brief, BuiltinWriter, Script, Writer, clamp_duration, compose, fit_fields

__all__ = ["LLMWriter", "make_writer"]

log = logging.getLogger(__name__)

_RULES = """You turn a client's written brief into a short marketing video made from one story template.
Answer with one JSON object and nothing else: {"story_id": "...", "title": "...", "fields": {...}}.
- story_id: the id of the story below that fits the brief best.
- fields: a value for every field of that story, valid for its JSON Schema (respect maxLength, enums, types).
- Use only facts from the brief: no numbers, dates, names, prices or claims that it does not state.
  Where the brief says nothing for an optional text field, give "" (or null where null is allowed).
- A generic call to action ("Learn more") is fine when the brief has none.
- Write in the language of the brief.
Stories:
"""


def make_writer(settings: Any) -> Writer:
    """The LLM writer (with the built-in one behind it) when an LLM is configured, else the built-in one."""
    builtin = BuiltinWriter()
    if getattr(settings, "llm_base_url", None) and getattr(settings, "llm_model", None):
        return LLMWriter(settings.llm_base_url, settings.llm_model, settings.llm_api_key, fallback=builtin)
    return builtin


def _system_prompt() -> str:
    stories = [
        {"id": s.id, "description": s.description, "fields": s.fields} for s in list_stories()
    ]
    return _RULES + json.dumps(stories, ensure_ascii=False, separators=(",", ":"))


def _user_prompt(brief: Brief) -> str:
    parts = {"brief": brief.text, "title": brief.title, "url": brief.url, "brand_name": brief.brand_name,
             "locale": brief.locale}
    return json.dumps({k: v for k, v in parts.items() if v}, ensure_ascii=False)


class LLMWriter:
    """Writes with a chat model; falls back to ``fallback`` whenever the model's answer cannot be used.

    Args:
        base_url: the API root, e.g. ``https://api.openai.com/v1``; ``/chat/completions`` is added.
        model: the model name sent with each request.
        api_key: sent as a bearer token; ``None`` sends no Authorization header (local servers).
        fallback: the writer used when this one fails.
        timeout: seconds for the whole request.
        client: an ``httpx.Client`` to send with (tests, connection pooling); one is made per call otherwise.
    """

    name = "llm"

    def __init__(self, base_url: str, model: str, api_key: str | None, fallback: Writer, timeout: float = 30,
                 client: httpx.Client | None = None) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.api_key = api_key
        self.fallback = fallback
        self.timeout = timeout
        self.client = client

    def write(self, brief: Brief) -> Script:
        """The model's script for ``brief``, or the fallback's when the model's cannot be used."""
        try:
            return self._check(brief, self._ask(brief))
        except (httpx.HTTPError, ValueError, KeyError, TypeError, StudioError) as exc:
            log.warning("LLM writer fell back to %s: %s", self.fallback.name, exc)
            return self.fallback.write(brief)

    def _ask(self, brief: Brief) -> dict[str, Any]:
        body = {
            "model": self.model,
            "messages": [{"role": "system", "content": _system_prompt()},
                         {"role": "user", "content": _user_prompt(brief)}],
            "response_format": {"type": "json_object"},
            "temperature": 0,
        }
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        if self.client is not None:
            response = self.client.post(self.url, json=body, headers=headers, timeout=self.timeout)
        else:
            with httpx.Client(timeout=self.timeout) as client:
                response = client.post(self.url, json=body, headers=headers)
        response.raise_for_status()
        content = response.json()["choices"][0]["message"]["content"]
        answer = json.loads(content)
        if not isinstance(answer, dict):
            raise WriterError("the model's answer is not a JSON object")
        return answer

    def _check(self, brief: Brief, answer: dict[str, Any]) -> Script:
        story = get_story(str(answer.get("story_id")))
        fields = answer.get("fields")
        problems = validate_fields(story, fields)
        if problems:
            raise WriterError(f"the model's fields are invalid for {story.id}: {problems}")
        if not isinstance(fields, dict):  # validate_fields reports a non-object as a problem
            raise WriterError("the model's fields are not a JSON object")
        missing = [k for k, p in story.fields["properties"].items() if k not in fields and p.get("minLength")]
        if missing:  # their defaults would show facts the brief never stated
            raise WriterError(f"the model left out {', '.join(missing)}")
        fields = fit_fields(story, fields)
        invented = sorted(set(NUMBER.findall(" ".join(_texts(story.fields, fields)))) - _figures(brief))
        if invented:
            raise WriterError(f"the model wrote figures the brief does not contain: {', '.join(invented)}")
        title = answer.get("title") if isinstance(answer.get("title"), str) and answer.get("title") else None
        script = Script(story_id=story.id, fields=fields, title=title or brief.title or story.name,
                        duration_sec=clamp_duration(brief.duration_sec), writer=self.name)
        compose(script, NEUTRAL_BRAND, brief.format, script.duration_sec, brief.locale)
        return script


def _texts(schema: dict, value: Any) -> list[str]:
    """The free text in ``value``: strings, less those with a ``format`` (colours, image URIs)."""
    if isinstance(value, str):
        return [] if schema.get("format") else [value]
    if isinstance(value, list):
        return [t for item in value for t in _texts(schema.get("items", {}), item)]
    if isinstance(value, dict):
        props = schema.get("properties", {})
        return [t for k, v in value.items() for t in _texts(props.get(k, {}), v)]
    return []


def _figures(brief: Brief) -> set[str]:
    found: set[str] = set()
    for text in (brief.text, brief.title or "", brief.url or "", brief.brand_name or ""):
        found.update(NUMBER.findall(text))
    return found
