"""A story's field schema as HTML form controls, and a submitted form back into field values.

Pure: no Flask, no database. ``controls(schema, values)`` turns the JSON Schema a story publishes
(``Story.fields``: object properties with ``type``, ``title``, ``default``, ``maxLength``,
``format`` ``uri``/``color``, ``enum``, ``items``) into a list of ``Control``s that the template
``console/_fields.html`` draws; ``parse(schema, form)`` reads the posted form back into the
values the story validates. The two are inverses: ``parse(schema, submitted(controls(s, v)))``
gives ``v`` back.

Form names are ``f.<field>`` for scalars, ``f.<field>.<i>`` for list items and
``f.<field>.<i>.<key>`` for the keys of list-of-object items, so the page works as a plain HTML
form without JavaScript. A list offers ``maxItems`` slots (the values first, then empty ones;
without ``maxItems``, two spare); empty slots are dropped when read back.

A field whose default is a sample (``reelfarm.studio.stories.samples``: "Aurora Lamp", not a
setting) carries it (``Control.sample``) and whether the value still equals it (``unchanged``): the
template marks such a field "sample, change it" and the story form lists them all above its button.

The soundtrack's ``fit`` (``soundtrack.fit``: loop, the default, or once) is read by ``read_fit``
beside the rest of the soundtrack (``reelfarm.console.library``).

Kinds of control:
    text, textarea (``maxLength`` over 80)    strings
    url                                       ``format: uri`` (images by URL); empty -> null
    video                                     a video field (``upload_kind``: a library clip's id); empty -> null
    color                                     ``format: color``; empty -> null (the brand's colour)
    number, integer                           numbers, with minimum/maximum
    select                                    ``enum`` (strings or integers)
    checkbox                                  booleans
    list                                      arrays of strings (``items`` are text controls)
    rows                                      arrays of objects (each item a group of controls)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

from reelfarm.studio.stories.fields import SOUNDTRACK, SOUNDTRACK_SCHEMA, upload_kind
from reelfarm.studio.stories.samples import sample_of

PREFIX = "f."
FIT = "soundtrack.fit"
FITS: tuple[str, ...] = tuple(SOUNDTRACK_SCHEMA["properties"]["fit"]["enum"])
DEFAULT_FIT: str = SOUNDTRACK_SCHEMA["properties"]["fit"]["default"]
TEXTAREA_OVER = 80
SPARE_SLOTS = 2


@dataclass(frozen=True)
class Control:
    """One form control (or a group of them, for lists)."""

    name: str
    label: str
    kind: str
    value: Any = None
    help: str | None = None
    required: bool = False
    nullable: bool = False
    attrs: Mapping[str, Any] = field(default_factory=dict)
    options: tuple[tuple[str, str], ...] = ()
    items: tuple[tuple[Control, ...], ...] = ()  # list slots; each slot one control, or a row of them
    sample: Any = None  # the story's sample for this field, where its default is one
    unchanged: bool = False  # the value still equals the sample

    @property
    def sample_texts(self) -> list[str]:
        """A list field's sample as its slots' texts in order (row by row), as a page compares them."""
        items = self.sample if isinstance(self.sample, list) else []
        return [str(v) for item in items for v in (item.values() if isinstance(item, Mapping) else [item])]

    @property
    def id(self) -> str:
        return "fld-" + self.name[len(PREFIX):].replace(".", "-") if self.name.startswith(PREFIX) else self.name


class _Common(TypedDict):
    """The ``Control`` fields that every kind of control sets the same way."""

    name: str
    label: str
    kind: str
    help: str | None
    required: bool
    nullable: bool


class FormProblem(ValueError):
    """Submitted values that cannot be read as their field's type; ``problems`` maps form name -> message."""

    def __init__(self, problems: dict[str, str]) -> None:
        super().__init__(f"{len(problems)} field(s) could not be read")
        self.problems = problems


def controls(schema: Mapping[str, Any], values: Mapping[str, Any] | None = None) -> list[Control]:
    """The controls for every property of ``schema``, filled with ``values`` or the defaults."""
    values = values or {}
    required = set(schema.get("required", ()))
    made = []
    for name, prop in schema.get("properties", {}).items():
        value = values.get(name, prop.get("default"))
        control = _control(PREFIX + name, prop, value, name in required)
        sample = sample_of(prop)
        if sample is not None:
            control = dataclasses.replace(control, sample=sample, unchanged=_same(value, sample))
        made.append(control)
    return made


def _same(value: Any, sample: Any) -> bool:
    """Whether a value (as typed: text for a scalar) still equals its sample."""
    return value == sample if isinstance(sample, list) else str(value if value is not None else "") == sample


def unchanged(fields: Sequence[Control]) -> list[Control]:
    """The controls still holding their story's sample, in the form's order."""
    return [c for c in fields if c.unchanged]


def read_fit(form: Mapping[str, Any], values: dict[str, Any], typed: dict[str, str]) -> dict[str, str]:
    """Put the fit chosen in ``soundtrack.fit`` into ``values``' soundtrack (when there is one) and
    into ``typed`` (the soundtrack as the form shows it again); a message by form name for a fit
    that is no choice. Nothing posted leaves the soundtrack to its default (``DEFAULT_FIT``)."""
    raw = str(form.get(FIT, "") or "").strip()
    typed["fit"] = raw[:20]
    if not raw:
        return {}
    if raw not in FITS:
        return {FIT: f"When the sound is shorter: choose {' or '.join(FITS)}"}
    track = values.get(SOUNDTRACK)
    if isinstance(track, Mapping):
        values[SOUNDTRACK] = {**track, "fit": raw}
    return {}


def _control(name: str, prop: Mapping[str, Any], value: Any, required: bool, label: str | None = None) -> Control:
    kind, nullable = kind_of(prop)
    common: _Common = {"name": name, "label": label or prop.get("title") or name.rsplit(".", 1)[-1], "kind": kind,
              "help": prop.get("description"), "required": required and not nullable, "nullable": nullable}
    if kind == "select":
        options = tuple((str(v), str(v)) for v in prop["enum"] if v is not None)
        return Control(value="" if value is None else str(value), options=options, **common)
    if kind in ("list", "rows"):
        return Control(value=None, attrs=_list_attrs(prop), items=_slots(name, prop, value), **common)
    if kind == "checkbox":
        return Control(value=bool(value), **common)
    return Control(value="" if value is None else value, attrs=_attrs(prop, kind), **common)


def kind_of(prop: Mapping[str, Any]) -> tuple[str, bool]:
    """(control kind, whether null is allowed) for a property schema."""
    types = prop.get("type", "string")
    types = list(types) if isinstance(types, list) else [types]
    nullable = "null" in types
    main = next((t for t in types if t != "null"), "string")
    if "enum" in prop:
        return "select", nullable
    if main == "array":
        item = prop.get("items", {})
        return ("rows" if item.get("type") == "object" else "list"), nullable
    if main in ("integer", "number"):
        return main, nullable
    if main == "boolean":
        return "checkbox", nullable
    if prop.get("format") == "uri":
        return "url", nullable
    if upload_kind(dict(prop)) == "video":
        return "video", nullable
    if prop.get("format") == "color":
        return "color", nullable
    return ("textarea" if prop.get("maxLength", 0) > TEXTAREA_OVER else "text"), nullable


def _attrs(prop: Mapping[str, Any], kind: str) -> dict[str, Any]:
    attrs: dict[str, Any] = {}
    if kind in ("text", "textarea", "url", "color"):
        # not ``maxlength``: a browser cuts longer text silently; the server names the limit instead
        for key, html in (("maxLength", "data-maxlength"), ("minLength", "minlength")):
            if key in prop:
                attrs[html] = prop[key]
    if kind == "color":
        attrs["pattern"] = "#[0-9A-Fa-f]{6}"
        attrs["placeholder"] = "#RRGGBB"
    if kind in ("integer", "number"):
        for key, html in (("minimum", "min"), ("maximum", "max")):
            if key in prop:
                attrs[html] = prop[key]
        attrs["step"] = 1 if kind == "integer" else "any"
    return attrs


def _list_attrs(prop: Mapping[str, Any]) -> dict[str, Any]:
    return {k: prop[k] for k in ("minItems", "maxItems") if k in prop}


def _slots(name: str, prop: Mapping[str, Any], value: Any) -> tuple[tuple[Control, ...], ...]:
    present = list(value) if isinstance(value, list) else []
    count = prop.get("maxItems", len(present) + SPARE_SLOTS)
    count = max(count, len(present))
    item = prop.get("items", {})
    slots = []
    for i in range(count):
        current = present[i] if i < len(present) else None
        slot_name = f"{name}.{i}"
        if item.get("type") == "object":
            current = current if isinstance(current, Mapping) else {}
            row = tuple(_control(f"{slot_name}.{key}", sub, current.get(key), False,
                                 label=f"{sub.get('title') or key} {i + 1}")
                        for key, sub in item.get("properties", {}).items())
            slots.append(row)
        else:
            title = prop.get("title") or name.rsplit(".", 1)[-1]
            slots.append((_control(slot_name, item, current, False, label=f"{_singular(title)} {i + 1}"),))
    return tuple(slots)


def _singular(title: str) -> str:
    return title[:-1] if title.endswith("s") and not title.endswith("ss") else title


# -- reading a submitted form ------------------------------------------------------------------

def parse(schema: Mapping[str, Any], form: Mapping[str, Any]) -> dict[str, Any]:
    """Field values from a submitted form (a dict of str, or a MultiDict); raises FormProblem.

    Every property of the schema gets a value: what the form holds, read as the property's type.
    Range and length checks are the story's own (``reelfarm.studio.stories.validate_fields``).
    """
    values, problems = read(schema, form)
    if problems:
        raise FormProblem(problems)
    return values


def read(schema: Mapping[str, Any], form: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """The values of the fields that could be read, and a message (by form name) for each that
    could not: every problem at once, so the story's own checks can run on the rest."""
    values: dict[str, Any] = {}
    problems: dict[str, str] = {}
    for name, prop in schema.get("properties", {}).items():
        try:
            values[name] = _read(PREFIX + name, prop, form, _title(prop, name))
        except _Unreadable as exc:
            problems.update(exc.problems)
    return values, problems


def typed(schema: Mapping[str, Any], form: Mapping[str, Any]) -> dict[str, Any]:
    """What was typed, to show again beside the problems: lists as they read back, others as text."""
    values: dict[str, Any] = {}
    for name, prop in schema.get("properties", {}).items():
        kind, _ = kind_of(prop)
        if kind in ("list", "rows"):
            found, _ = read({"properties": {name: prop}}, form)
            values[name] = found.get(name, prop.get("default"))
        elif kind == "checkbox":
            values[name] = form.get(PREFIX + name) not in (None, "", "0", "false", "off")
        else:
            values[name] = form.get(PREFIX + name, "")
    return values


def label_at(schema: Mapping[str, Any], parts: Sequence[str]) -> str:
    """The label of the control at a path of field names and list indexes (``stats``, ``1``,
    ``value`` -> ``Value 2``), as ``controls`` labels it; the field's name where the schema has none."""
    props = schema.get("properties", {})
    if not parts or parts[0] not in props:
        return parts[0] if parts else "Form"
    prop = props[parts[0]]
    label = _title(prop, parts[0])
    if len(parts) >= 2 and str(parts[1]).isdigit():
        number = int(parts[1]) + 1
        item = prop.get("items", {})
        if len(parts) >= 3 and parts[2] in item.get("properties", {}):
            sub = item["properties"][parts[2]]
            return f"{_title(sub, parts[2])} {number}"
        return f"{_singular(label)} {number}"
    return label


def _title(prop: Mapping[str, Any], name: str) -> str:
    return str(prop.get("title") or name.rsplit(".", 1)[-1])


class _Unreadable(Exception):
    def __init__(self, problems: dict[str, str]) -> None:
        super().__init__(problems)
        self.problems = problems


def _read(name: str, prop: Mapping[str, Any], form: Mapping[str, Any], label: str) -> Any:
    kind, nullable = kind_of(prop)
    if kind == "checkbox":
        return form.get(name) not in (None, "", "0", "false", "off")
    if kind in ("list", "rows"):
        return _read_list(name, prop, form)
    raw = form.get(name)
    text = "" if raw is None else str(raw)
    if kind == "select":
        return _read_choice(name, prop, text, nullable, label)
    if kind in ("integer", "number"):
        return _read_number(name, kind, text.strip(), nullable, label)
    if kind in ("url", "color", "video"):
        text = text.strip()
    return None if (text == "" and nullable) else text


def _read_choice(name: str, prop: Mapping[str, Any], text: str, nullable: bool, label: str) -> Any:
    if text == "" and nullable:
        return None
    for option in prop["enum"]:
        if option is not None and str(option) == text:
            return option
    listed = ", ".join(str(o) for o in prop["enum"] if o is not None)
    raise _Unreadable({name: f"{label}: choose one of {listed}"})


def _read_number(name: str, kind: str, text: str, nullable: bool, label: str) -> Any:
    if text == "":
        if nullable:
            return None
        raise _Unreadable({name: f"{label}: enter a number"})
    try:
        number = float(text)
    except ValueError:
        raise _Unreadable({name: f"{label}: {_quoted(text)} is not a number"}) from None
    if kind == "integer":
        if not number.is_integer():
            raise _Unreadable({name: f"{label}: {_quoted(text)} is not a whole number"})
        return int(number)
    return number


def _quoted(text: str, limit: int = 40) -> str:
    return "'" + (text if len(text) <= limit else text[:limit - 1] + "…") + "'"


def _read_list(name: str, prop: Mapping[str, Any], form: Mapping[str, Any]) -> list[Any]:
    item = prop.get("items", {})
    indexes = sorted({int(key[len(name) + 1:].split(".", 1)[0]) for key in form
                      if key.startswith(name + ".") and key[len(name) + 1:].split(".", 1)[0].isdigit()})
    found: list[Any] = []
    problems: dict[str, str] = {}
    title = _title(prop, name)
    for i in indexes:
        slot = f"{name}.{i}"
        if item.get("type") == "object":
            keys = item.get("properties", {})
            raw = {key: form.get(f"{slot}.{key}") for key in keys}
            if all(v is None or str(v).strip() == "" for v in raw.values()):
                continue
            try:
                found.append({key: _read(f"{slot}.{key}", sub, form, f"{_title(sub, key)} {i + 1}")
                              for key, sub in keys.items()})
            except _Unreadable as exc:
                problems.update(exc.problems)
        else:
            raw_item = form.get(slot)
            if raw_item is None or str(raw_item).strip() == "":
                continue
            try:
                found.append(_read(slot, item, form, f"{_singular(title)} {i + 1}"))
            except _Unreadable as exc:
                problems.update(exc.problems)
    if problems:
        raise _Unreadable(problems)
    return found


def problem_names(details: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """The story's validation details (JSON pointers ``/fields/stats/0/value``) by form name."""
    out: dict[str, str] = {}
    for d in details:
        pointer = str(d.get("field", ""))
        parts = [p for p in pointer.split("/") if p]
        if parts and parts[0] == "fields":
            parts = parts[1:]
        name = PREFIX + ".".join(parts) if parts else "form"
        out.setdefault(name, str(d.get("message", "invalid")))
    return out


def submitted(fields: list[Control]) -> dict[str, str]:
    """What a browser would post for these controls unchanged (for tests and round trips)."""
    out: dict[str, str] = {}
    for c in fields:
        if c.kind in ("list", "rows"):
            for slot in c.items:
                out.update(submitted(list(slot)))
        elif c.kind == "checkbox":
            if c.value:
                out[c.name] = "on"
        else:
            out[c.name] = "" if c.value is None else str(c.value)
    return out


def too_long(label: str, text: str, limit: int) -> str | None:
    """The message beside a field whose text is over ``limit`` (said, never cut), or None."""
    return f"{label}: at most {limit} characters (this has {len(text)})" if len(text) > limit else None
