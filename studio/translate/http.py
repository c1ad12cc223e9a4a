"""Translation engines behind HTTP APIs: LibreTranslate-compatible servers and DeepL.

Both take an optional ``httpx.Client`` (the one I/O seam; tests hand in none and talk to
loopback servers). Language lists are fetched once per instance and kept; a failed fetch is not
kept, so the next call asks again.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import httpx

from reelfarm.studio.errors import TranslationError, UnsupportedLocale
from reelfarm.studio.translate.locales import language_of, match_tag, normalize_tag

__all__ = ["DEEPL_FREE_URL", "DEEPL_PRO_URL", "DeepLTranslator", "LibreTranslateTranslator"]

DEFAULT_TIMEOUT = httpx.Timeout(30.0, connect=5.0)
DEEPL_FREE_URL = "https://api-free.deepl.com"
DEEPL_PRO_URL = "https://api.deepl.com"
DEEPL_BATCH = 50  # DeepL takes at most 50 texts per request
LIBRE_BATCH = 50
# Older LibreTranslate servers call Traditional Chinese "zt".
_LIBRE_ALIASES = {"zt": "zh-Hant"}


class _HttpEngine:
    """What the HTTP engines share: the client, error mapping and the cached language table."""

    name = "http"

    def __init__(self, base_url: str, client: httpx.Client | None) -> None:
        self.base_url = base_url.rstrip("/")
        self._client = client or httpx.Client(timeout=DEFAULT_TIMEOUT)
        self._languages: Any = None
        self._lock = threading.Lock()

    def _request(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = self._client.request(method, self.base_url + path, **kwargs)
        except httpx.HTTPError as exc:
            raise TranslationError(f"{self.name} is unreachable: {type(exc).__name__}: {exc}") from None
        if response.status_code >= 400:
            raise TranslationError(f"{self.name} answered {response.status_code}: {_reason(response)}")
        try:
            return response.json()
        except ValueError:
            raise TranslationError(f"{self.name} answered with something that is not JSON") from None

    def _cached_languages(self, fetch: Callable[[], Any]) -> Any:
        with self._lock:
            if self._languages is None:
                self._languages = fetch()
            return self._languages


class LibreTranslateTranslator(_HttpEngine):
    """A LibreTranslate-compatible server (``POST /translate``, ``GET /languages``)."""

    name = "libretranslate"

    def __init__(self, base_url: str, api_key: str | None = None, client: httpx.Client | None = None) -> None:
        super().__init__(base_url, client)
        self.api_key = api_key
        self._source_codes: dict[str, str] = {}

    def targets(self, source: str) -> set[str]:
        return set(self._table().get(language_of(source), {}))

    def translate(self, texts: list[str], source: str, target: str) -> list[str]:
        table = self._table()
        src = language_of(source)
        codes = table.get(src, {})
        tag = match_tag(codes, target)
        if tag is None:
            raise UnsupportedLocale(normalize_tag(source), normalize_tag(target))
        out: list[str] = []
        for start in range(0, len(texts), LIBRE_BATCH):
            out += self._translate_batch(texts[start:start + LIBRE_BATCH], self._source_codes[src], codes[tag])
        return out

    def _translate_batch(self, texts: list[str], source: str, target: str) -> list[str]:
        body: dict[str, Any] = {"q": texts, "source": source, "target": target, "format": "text"}
        if self.api_key:
            body["api_key"] = self.api_key
        data = self._request("POST", "/translate", json=body)
        translated = data.get("translatedText") if isinstance(data, dict) else None
        return _checked(self.name, translated, texts)

    def _table(self) -> dict[str, dict[str, str]]:
        """``{source language: {target tag: server code}}``."""
        return self._cached_languages(self._fetch_table)

    def _fetch_table(self) -> dict[str, dict[str, str]]:
        params = {"api_key": self.api_key} if self.api_key else None
        data = self._request("GET", "/languages", params=params)
        if not isinstance(data, list):
            raise TranslationError(f"{self.name} /languages is not a list")
        table: dict[str, dict[str, str]] = {}
        for entry in data:
            try:
                code = str(entry["code"])
                tag = _libre_tag(code)
                targets = {_libre_tag(str(t)): str(t) for t in entry.get("targets", [])}
            except (KeyError, TypeError, ValueError):
                continue
            targets.pop(tag, None)
            table[language_of(tag)] = targets
            self._source_codes[language_of(tag)] = code
        return table


class DeepLTranslator(_HttpEngine):
    """DeepL's API v2 (``POST /v2/translate``, ``GET /v2/languages?type=target``)."""

    name = "deepl"

    def __init__(self, api_key: str, base_url: str | None = None, client: httpx.Client | None = None) -> None:
        super().__init__(base_url or default_deepl_url(api_key), client)
        self._headers = {"Authorization": f"DeepL-Auth-Key {api_key}"}

    def targets(self, source: str) -> set[str]:
        table = self._table()
        language = language_of(source)
        if language not in {language_of(t) for t in table}:
            return set()  # DeepL reads the languages it writes
        return {t for t in table if language_of(t) != language}

    def translate(self, texts: list[str], source: str, target: str) -> list[str]:
        tag = match_tag(self.targets(source), target)
        if tag is None:
            raise UnsupportedLocale(normalize_tag(source), normalize_tag(target))
        code = self._table()[tag]
        out: list[str] = []
        for start in range(0, len(texts), DEEPL_BATCH):
            out += self._translate_batch(texts[start:start + DEEPL_BATCH], language_of(source).upper(), code)
        return out

    def _translate_batch(self, texts: list[str], source: str, target: str) -> list[str]:
        body = {"text": texts, "source_lang": source, "target_lang": target}
        data = self._request("POST", "/v2/translate", json=body, headers=self._headers)
        items = data.get("translations") if isinstance(data, dict) else None
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            raise TranslationError(f"{self.name} answered without a translations list")
        return _checked(self.name, [i.get("text") for i in items], texts)

    def _table(self) -> dict[str, str]:
        """``{target tag: DeepL code}``, e.g. ``{"pt-BR": "PT-BR"}``."""
        return self._cached_languages(self._fetch_table)

    def _fetch_table(self) -> dict[str, str]:
        data = self._request("GET", "/v2/languages", params={"type": "target"}, headers=self._headers)
        if not isinstance(data, list):
            raise TranslationError(f"{self.name} /v2/languages is not a list")
        table: dict[str, str] = {}
        for entry in data:
            try:
                table[normalize_tag(str(entry["language"]))] = str(entry["language"])
            except (KeyError, TypeError, ValueError):
                continue
        return table


def default_deepl_url(api_key: str) -> str:
    """DeepL's free-plan host for keys ending in ``:fx``, else the paid one."""
    return DEEPL_FREE_URL if api_key.endswith(":fx") else DEEPL_PRO_URL


def _libre_tag(code: str) -> str:
    return _LIBRE_ALIASES.get(code, normalize_tag(code))


def _checked(engine: str, translated: Any, texts: list[str]) -> list[str]:
    if not isinstance(translated, list) or not all(isinstance(t, str) for t in translated):
        raise TranslationError(f"{engine} answered without a list of texts")
    if len(translated) != len(texts):
        raise TranslationError(f"{engine} returned {len(translated)} texts for {len(texts)}")
    return translated


def _reason(response: httpx.Response) -> str:
    try:
        data = response.json()
    except ValueError:
        return response.text[:200] or response.reason_phrase
    if isinstance(data, dict):
        for key in ("error", "message", "detail"):
            if isinstance(data.get(key), str):
                return str(data[key])[:200]
    return response.reason_phrase
