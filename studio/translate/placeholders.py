"""Keep what must not be translated (URLs, e-mail addresses, numbers, promo codes) out of an engine's reach.

`protect` swaps each such run for a mask an engine passes through untouched, `restore` swaps the
originals back. Masks are digit runs (``90417000``, ``90417001``, ...): rule-based engines carry
numbers through verbatim and keep their place in the sentence, where a made-up word would change
capitalisation around it. Every digit of the text is inside some protected run, so a mask never
collides with the text's own numbers.
"""
from __future__ import annotations

import re

__all__ = ["protect", "restore"]

MASK_BASE = 90417000
_DIGITS = re.compile(r"\d+")
_LEADING = "([{\"'«“‘¿¡"
_TRAILING = ".,;:!?)]}\"'»”’"
_PROTECTED = re.compile(
    r"""
      (?:https?://|www\.)\S+                                  # URLs
    | [\w.+-]+@[\w-]+(?:\.[\w-]+)+                             # e-mail addresses
    | \b[\w-]+(?:\.[\w-]+)*\.[a-z]{2,24}(?:/\S*)?(?![\w])      # bare domains, with a path
    | \{\{?[^{}\s]+\}?\}                                      # {name} / {{name}} template fields
    | (?<=\b[Cc]ode\s)[A-Z][A-Z0-9_-]{2,}\b                   # "code SAVE", a promo code in capitals
    | \S*\d\S*                                               # anything carrying a digit: 40%, $129, SPRING40
    """,
    re.VERBOSE,
)


def protect(text: str) -> tuple[str, list[str]]:
    """`text` with each protected run replaced by a mask, and the runs in mask order."""
    kept: list[str] = []

    def swap(match: re.Match[str]) -> str:
        run = match.group(0)
        if run.startswith("{"):
            head, core, tail = "", run, ""
        else:
            core = run.lstrip(_LEADING).rstrip(_TRAILING)
            if not core:
                return run
            head = run[:run.index(core)]
            tail = run[len(head) + len(core):]
        kept.append(core)
        return f"{head}{MASK_BASE + len(kept) - 1}{tail}"

    return _PROTECTED.sub(swap, text), kept


def restore(text: str, kept: list[str]) -> str | None:
    """`text` with every mask swapped back; None when the engine lost or repeated a mask."""
    masks = {str(MASK_BASE + i): original for i, original in enumerate(kept)}
    found = [m for m in _DIGITS.findall(text) if m in masks]
    if sorted(found) != sorted(masks):
        return None
    return _DIGITS.sub(lambda m: masks.get(m.group(0), m.group(0)), text)
