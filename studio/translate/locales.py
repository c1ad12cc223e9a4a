"""BCP 47 locale tags as reelfarm uses them: normal form, names, writing direction and script.

Engines speak their own codes (Apertium ``eng``, DeepL ``PT-BR``); each engine maps them to BCP 47
tags here, and everything above the engines compares tags in the normal form of `normalize_tag`.
"""
from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["LANGUAGE_NAMES", "RTL_LANGUAGES", "SCRIPT_OF_LANGUAGE", "direction_of", "language_of", "locale_name",
           "match_tag", "normalize_tag", "script_of"]

_TAG = re.compile(r"^[A-Za-z]{2,3}([-_][A-Za-z0-9]{1,8})*$")

LANGUAGE_NAMES: dict[str, str] = {
    "af": "Afrikaans", "an": "Aragonese", "ar": "Arabic", "ast": "Asturian", "az": "Azerbaijani",
    "be": "Belarusian", "bg": "Bulgarian", "bn": "Bengali", "br": "Breton", "ca": "Catalan", "cs": "Czech",
    "cy": "Welsh", "da": "Danish", "de": "German", "el": "Greek", "en": "English", "eo": "Esperanto",
    "es": "Spanish", "et": "Estonian", "eu": "Basque", "fa": "Persian", "fi": "Finnish", "fr": "French",
    "ga": "Irish", "gl": "Galician", "he": "Hebrew", "hi": "Hindi", "hr": "Croatian", "hu": "Hungarian",
    "id": "Indonesian", "is": "Icelandic", "it": "Italian", "ja": "Japanese", "kk": "Kazakh", "ko": "Korean",
    "lt": "Lithuanian", "lv": "Latvian", "mk": "Macedonian", "mr": "Marathi", "ms": "Malay", "mt": "Maltese",
    "nb": "Norwegian Bokmål", "ne": "Nepali", "nl": "Dutch", "nn": "Norwegian Nynorsk", "no": "Norwegian",
    "oc": "Occitan", "pl": "Polish", "pt": "Portuguese", "ro": "Romanian", "ru": "Russian", "sk": "Slovak",
    "sl": "Slovenian", "sq": "Albanian", "sr": "Serbian", "sv": "Swedish", "th": "Thai", "tl": "Tagalog",
    "tr": "Turkish", "tt": "Tatar", "uk": "Ukrainian", "ur": "Urdu", "vi": "Vietnamese", "zh": "Chinese",
}
_SUBTAG_NAMES = {
    "US": "United States", "GB": "United Kingdom", "BR": "Brazil", "PT": "Portugal", "MX": "Mexico",
    "ES": "Spain", "CA": "Canada", "AU": "Australia", "419": "Latin America", "Hans": "Simplified",
    "Hant": "Traditional", "TW": "Taiwan", "CN": "China", "valencia": "Valencian",
}
RTL_LANGUAGES = frozenset({"ar", "he", "fa", "ur"})
# Scripts whose letters the Latin families the renderer ships lack.
SCRIPT_OF_LANGUAGE: dict[str, str] = {
    "ar": "arabic", "fa": "arabic", "ur": "arabic", "he": "hebrew", "hi": "devanagari", "mr": "devanagari",
    "ne": "devanagari", "ja": "cjk", "ko": "cjk", "zh": "cjk",
}


def normalize_tag(tag: str) -> str:
    """``pt-br`` -> ``pt-BR``, ``ZH_hant`` -> ``zh-Hant``, ``EN`` -> ``en``.

    Raises:
        ValueError: ``tag`` is not shaped like a BCP 47 language tag.
    """
    tag = tag.strip()
    if not _TAG.match(tag):
        raise ValueError(f"{tag!r} is not a language tag such as 'de' or 'pt-BR'")
    first, *rest = re.split(r"[-_]", tag)
    parts = [first.lower()]
    for sub in rest:
        if len(sub) == 4 and sub.isalpha():
            parts.append(sub.title())
        elif len(sub) == 2 and sub.isalpha() or len(sub) == 3 and sub.isdigit():
            parts.append(sub.upper())
        else:
            parts.append(sub.lower())
    return "-".join(parts)


def language_of(tag: str) -> str:
    """The primary language subtag: ``pt-BR`` -> ``pt``."""
    return normalize_tag(tag).split("-")[0]


def direction_of(tag: str) -> str:
    """``rtl`` for languages written right to left, else ``ltr``."""
    return "rtl" if language_of(tag) in RTL_LANGUAGES else "ltr"


def script_of(tag: str) -> str | None:
    """``arabic``, ``hebrew``, ``devanagari`` or ``cjk``; None for scripts the Latin families cover."""
    return SCRIPT_OF_LANGUAGE.get(language_of(tag))


def locale_name(tag: str) -> str:
    """An English name: ``de`` -> German, ``pt-BR`` -> Portuguese (Brazil); the tag when unknown."""
    first, *rest = normalize_tag(tag).split("-")
    name = LANGUAGE_NAMES.get(first)
    if name is None:
        return tag
    if rest:
        name += " (" + ", ".join(_SUBTAG_NAMES.get(r, r) for r in rest) + ")"
    return name


# A bare language asked of an engine that only has regional variants gets this one.
_PREFERRED_VARIANT = {"en": "en-US", "pt": "pt-PT", "zh": "zh-Hans", "es": "es-ES"}


def match_tag(available: Iterable[str], wanted: str) -> str | None:
    """The tag of `available` that serves `wanted`, or None.

    An exact match wins; a regional tag falls back to its bare language (``de-AT`` -> ``de``);
    a bare language takes its preferred variant, else the first in order (``pt`` -> ``pt-PT``).
    """
    tags = sorted({normalize_tag(t) for t in available})
    wanted = normalize_tag(wanted)
    if wanted in tags:
        return wanted
    language = wanted.split("-")[0]
    if language != wanted:
        return language if language in tags else None
    variants = [t for t in tags if t.split("-")[0] == language]
    if not variants:
        return None
    preferred = _PREFERRED_VARIANT.get(language)
    return preferred if preferred in variants else variants[0]
