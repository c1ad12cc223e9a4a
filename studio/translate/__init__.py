"""Machine translation for translated copies of videos.

Engines implement the `Translator` protocol: `ApertiumTranslator` (offline, rule-based, the
Debian ``apertium-*`` pairs), `LibreTranslateTranslator` and `DeepLTranslator` (HTTP).
`make_translators(settings)` wires the enabled ones into a `Translators` registry that picks the
first engine with a pair, offline first.
"""
from __future__ import annotations

from reelfarm.studio.errors import TranslationError, UnsupportedLocale
from reelfarm.studio.translate.apertium import ApertiumTranslator
from reelfarm.studio.translate.base import Translator
from reelfarm.studio.translate.http import DeepLTranslator, LibreTranslateTranslator
from reelfarm.studio.translate.locales import direction_of, language_of, locale_name, normalize_tag, script_of
from reelfarm.studio.translate.registry import Translators, make_translators

__all__ = [
    "ApertiumTranslator", "DeepLTranslator", "LibreTranslateTranslator", "TranslationError", "Translator",
    "Translators", "UnsupportedLocale", "direction_of", "language_of", "locale_name", "make_translators",
    "normalize_tag", "script_of",
]
