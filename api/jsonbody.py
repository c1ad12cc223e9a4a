"""Strict reading of request bodies: the JSON every view, idempotency and validation then see.

Every JSON body is read here once, before authentication's side effects end and before any view,
and refused with 400 ``validation_failed`` (every problem listed) when it

- is not JSON (``invalid_json``, with the line and column),
- nests arrays and objects deeper than ``MAX_DEPTH`` levels (``too_deep``): far beyond any real
  document (a VideoDoc with groups five deep uses about 12), and well inside what the parsers
  after this one handle without running out of stack,
- repeats a key inside one object (``duplicate_key``, at the pointer of the repeated key): JSON
  leaves the meaning open and parsers disagree on which value wins, so neither is taken.

Only what passes reaches ``webargs`` and the idempotency fingerprint, which parse it again.
"""

from __future__ import annotations

import json
from typing import Any

from reelfarm.api import errors as err

MAX_DEPTH = 64


class _Duplicates:
    """An ``object_pairs_hook`` that builds dicts and remembers the keys each one had twice."""

    def __init__(self) -> None:
        self.found: dict[int, list[str]] = {}

    def __call__(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj: dict[str, Any] = {}
        for key, value in pairs:
            if key in obj:
                self.found.setdefault(id(obj), []).append(key)
            obj[key] = value
        return obj


def check_body(raw: bytes) -> None:
    """Raise ``ValidationFailed`` listing every reason ``raw`` is not an acceptable JSON body."""
    duplicates = _Duplicates()
    try:
        value = json.loads(raw.decode("utf-8"), object_pairs_hook=duplicates)
    except UnicodeDecodeError as exc:
        raise err.invalid([err.detail("", "invalid_json", f"the body is not UTF-8 (byte {exc.start})")]) from None
    except json.JSONDecodeError as exc:
        raise err.invalid([err.detail("", "invalid_json", f"the body is not JSON: {exc.msg} at line "
                                                           f"{exc.lineno} column {exc.colno}")]) from None
    except RecursionError:
        raise err.invalid([_too_deep("")]) from None
    problems = _walk(value, duplicates.found)
    if problems:
        raise err.invalid(problems)


def _walk(value: Any, duplicates: dict[int, list[str]]) -> list[dict[str, str]]:
    """Problems found walking ``value`` without recursion: too deep, and repeated keys, by pointer."""
    problems: list[dict[str, str]] = []
    stack: list[tuple[Any, str, int]] = [(value, "", 1)]
    while stack:
        node, pointer, depth = stack.pop()
        if not isinstance(node, dict | list):
            continue
        if depth > MAX_DEPTH:
            problems.append(_too_deep(pointer))
            continue
        if isinstance(node, dict):
            for key in duplicates.get(id(node), ()):
                problems.append(err.detail(f"{pointer}/{_escape(key)}", "duplicate_key",
                                           f"the key {key!r} appears more than once in this object"))
            children = [(child, f"{pointer}/{_escape(key)}") for key, child in node.items()]
        else:
            children = [(child, f"{pointer}/{i}") for i, child in enumerate(node)]
        stack.extend((child, where, depth + 1) for child, where in reversed(children))
    return problems


def _too_deep(pointer: str) -> dict[str, str]:
    return err.detail(pointer, "too_deep", f"arrays and objects may nest at most {MAX_DEPTH} levels deep")


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")
