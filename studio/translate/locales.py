"""BCP 47 locale tags as reelfarm uses them: normal form, names, writing direction and script.

Engines speak their own codes (Apertium ``eng``, DeepL ``PT-BR``); each engine maps them to BCP 47
tags here, and everything above the engines compares tags in the normal form of `normalize_tag`.
"""
from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["LANGUAGES", "LANGUAGE_NAMES", "RTL_LANGUAGES", "SCRIPT_OF_LANGUAGE", "direction_of", "language_of",
           "locale_label", "locale_name", "match_tag", "normalize_tag", "script_of"]

_TAG = re.compile(r"^[A-Za-z]{2,3}([-_][A-Za-z0-9]{1,8})*$")

# Each language once: its English name (the API's ``name``) and its own name (the console's menus).
LANGUAGES: dict[str, tuple[str, str]] = {
    "af": ("Afrikaans", "Afrikaans"), "an": ("Aragonese", "Aragonés"), "ar": ("Arabic", "العربية"),
    "ast": ("Asturian", "Asturianu"), "az": ("Azerbaijani", "Azərbaycan"), "be": ("Belarusian", "Беларуская"),
    "bg": ("Bulgarian", "Български"), "bn": ("Bengali", "বাংলা"), "br": ("Breton", "Brezhoneg"),
    "ca": ("Catalan", "Català"), "cs": ("Czech", "Čeština"), "cy": ("Welsh", "Cymraeg"), "da": ("Danish", "Dansk"),
    "de": ("German", "Deutsch"), "el": ("Greek", "Ελληνικά"), "en": ("English", "English"),
    "eo": ("Esperanto", "Esperanto"), "es": ("Spanish", "Español"), "et": ("Estonian", "Eesti"),
    "eu": ("Basque", "Euskara"), "fa": ("Persian", "فارسی"), "fi": ("Finnish", "Suomi"),
    "fr": ("French", "Français"), "ga": ("Irish", "Gaeilge"), "gl": ("Galician", "Galego"),
    "he": ("Hebrew", "עברית"), "hi": ("Hindi", "हिन्दी"), "hr": ("Croatian", "Hrvatski"),
    "hu": ("Hungarian", "Magyar"), "id": ("Indonesian", "Bahasa Indonesia"), "is": ("Icelandic", "Íslenska"),
    "it": ("Italian", "Italiano"), "ja": ("Japanese", "日本語"), "kk": ("Kazakh", "Қазақ тілі"),
    "ko": ("Korean", "한국어"), "lt": ("Lithuanian", "Lietuvių"), "lv": ("Latvian", "Latviešu"),
    "mk": ("Macedonian", "Македонски"), "mr": ("Marathi", "मराठी"), "ms": ("Malay", "Bahasa Melayu"),
    "mt": ("Maltese", "Malti"), "nb": ("Norwegian Bokmål", "Norsk bokmål"), "ne": ("Nepali", "नेपाली"),
    "nl": ("Dutch", "Nederlands"), "nn": ("Norwegian Nynorsk", "Norsk nynorsk"), "no": ("Norwegian", "Norsk"),
    "oc": ("Occitan", "Occitan"), "pl": ("Polish", "Polski"), "pt": ("Portuguese", "Português"),
    "ro": ("Romanian", "Română"), "ru": ("Russian", "Русский"), "sk": ("Slovak", "Slovenčina"),
    "sl": ("Slovenian", "Slovenščina"), "sq": ("Albanian", "Shqip"), "sr": ("Serbian", "Српски"),
    "sv": ("Swedish", "Svenska"), "th": ("Thai", "ไทย"), "tl": ("Tagalog", "Tagalog"), "tr": ("Turkish", "Türkçe"),
    "tt": ("Tatar", "Татарча"), "uk": ("Ukrainian", "Українська"), "ur": ("Urdu", "اردو"),
    "vi": ("Vietnamese", "Tiếng Việt"), "zh": ("Chinese", "中文"),
}
LANGUAGE_NAMES: dict[str, str] = {tag: english for tag, (english, _) in LANGUAGES.items()}
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


def locale_label(tag: str) -> str:
    """The language in its own words with its tag, for a menu: ``es`` -> ``Español (es)``,
    ``pt-BR`` -> ``Português (pt-BR)``; the bare tag when the language is unknown."""
    try:
        normal = normalize_tag(tag)
    except ValueError:
        return tag
    known = LANGUAGES.get(normal.split("-")[0])
    return f"{known[1]} ({normal})" if known else normal


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
