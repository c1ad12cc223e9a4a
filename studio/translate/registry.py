"""The configured engines, in order of preference, and the locale list the service publishes."""
from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from reelfarm.shared.config import Settings
from reelfarm.studio.errors import TranslationError, UnsupportedLocale
from reelfarm.studio.translate.apertium import ApertiumTranslator
from reelfarm.studio.translate.base import Translator
from reelfarm.studio.translate.http import DeepLTranslator, LibreTranslateTranslator
from reelfarm.studio.translate.locales import direction_of, language_of, locale_name, match_tag, normalize_tag

__all__ = ["Translators", "make_translators"]

log = logging.getLogger(__name__)


class Translators:
    """Engines tried in order (offline first): the first that has a pair translates it."""

    def __init__(self, engines: Sequence[Translator]) -> None:
        self.engines = list(engines)

    def locales(self, source: str = "en") -> list[dict[str, Any]]:
        """Every tag some engine translates `source` into, as ``{code, name, direction, engines}``, by code."""
        found: dict[str, list[str]] = {}
        for engine in self.engines:
            for tag in sorted(self._targets(engine, source)):
                found.setdefault(tag, []).append(engine.name)
        return [{"code": tag, "name": locale_name(tag), "direction": direction_of(tag), "engines": names}
                for tag, names in sorted(found.items())]

    def supports(self, source: str, target: str) -> bool:
        """True when some engine translates `source` into `target` (regional fallbacks included)."""
        return bool(self._candidates(source, target))

    def translate(self, texts: list[str], source: str, target: str) -> list[str]:
        """`texts` in `target`, same length and order, from the first engine that has the pair.

        An engine that fails hands over to the next one with the pair; the last failure is raised.

        Raises:
            UnsupportedLocale: no engine has the pair.
            TranslationError: every engine with the pair failed.
        """
        candidates = self._candidates(source, target)
        if not candidates:
            raise UnsupportedLocale(normalize_tag(source), normalize_tag(target))
        if not texts:
            return []
        failure: TranslationError | None = None
        for engine in candidates:
            try:
                return engine.translate(list(texts), source, target)
            except UnsupportedLocale as exc:
                failure = exc
            except TranslationError as exc:
                log.warning("translation engine %s failed for %s -> %s: %s", engine.name, source, target, exc)
                failure = exc
        assert failure is not None
        raise failure

    def _candidates(self, source: str, target: str) -> list[Translator]:
        normalize_tag(source), normalize_tag(target)  # a malformed tag is a ValueError, not "unsupported"
        if language_of(source) == language_of(target):
            return []
        return [e for e in self.engines if match_tag(self._targets(e, source), target) is not None]

    @staticmethod
    def _targets(engine: Translator, source: str) -> set[str]:
        try:
            return {normalize_tag(t) for t in engine.targets(source)}
        except TranslationError as exc:  # an unreachable engine offers nothing for now
            log.warning("translation engine %s cannot list languages: %s", engine.name, exc)
            return set()


def make_translators(settings: Settings) -> Translators:
    """The engines `settings` enable: Apertium (when installed), LibreTranslate, DeepL, in that order."""
    engines: list[Translator] = []
    if settings.apertium and ApertiumTranslator.available():
        engines.append(ApertiumTranslator())
    if settings.libretranslate_url:
        engines.append(LibreTranslateTranslator(settings.libretranslate_url, settings.libretranslate_api_key))
    if settings.deepl_api_key:
        engines.append(DeepLTranslator(settings.deepl_api_key, settings.deepl_url))
    return Translators(engines)
